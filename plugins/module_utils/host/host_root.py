# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where this host's kernel files are: one object built from a root path, and the one way they are read.

Every module that reads /proc or /sys builds one HostRoot in main() (`host_root.at_root()`) and
passes it down, so each kernel path is written once, here, and a unit test points a whole module
at a fake host by giving it another root (tests/unit/conftest.py `fake_host`), not by patching
each module's constants. The shape is prometheus/procfs' FS (`NewFS(mountPoint)`): one root,
named paths under it, one bounded reader.

Reads go through atomic_file.read_optional: bounded (PROC_LIMIT), every byte kept, None on any
OSError, since a kernel file that is absent (nfsd not running, a module not loaded) is reported,
not fatal. Files the kernel writes for us (nfsd threads, sunrpc parameters) are written by
file_edits.write_kernel_value at the paths named here.
"""

from __future__ import annotations

import dataclasses
import os

from ansible_collections.ckptio.nfs.plugins.module_utils.host import atomic_file

# The live host's root. Only tests change it (through the fake_host fixture), before main() runs.
ROOT = "/"
# Kernel modules whose parameters decide RPC slot counts; the sysctl files exist once sunrpc is loaded.
SUNRPC_PARAMETER_MODULES = ("nfs", "sunrpc")


def _kernel_path(host_path, doc):
    """A HostRoot attribute: host_path ("/proc/meminfo") under the object's root."""
    return property(lambda self: self.path(host_path), doc=doc)


@dataclasses.dataclass(frozen=True)
class HostRoot:
    """The kernel's /proc and /sys of one host, under root ("/" on a real host)."""

    root: str = "/"

    def path(self, host_path):
        """This host's file for an absolute host path ("/proc/meminfo" -> root/proc/meminfo)."""
        return os.path.join(self.root, host_path.lstrip("/"))

    proc = _kernel_path("/proc", "The process and kernel tables.")
    mountinfo = _kernel_path("/proc/self/mountinfo", "The mounts this process sees (proc(5)).")
    mountstats = _kernel_path("/proc/self/mountstats", "The NFS client's per-mount counters.")
    meminfo = _kernel_path("/proc/meminfo", "Memory figures (MemAvailable bounds the canary).")
    sys_class_net = _kernel_path("/sys/class/net", "One directory per network interface.")
    nfsd_stats = _kernel_path("/proc/net/rpc/nfsd", "The NFS server's RPC and NFS counters.")
    nfsd_control = _kernel_path("/proc/fs/nfsd", "knfsd's control files: threads, pool_stats, max_connections...")
    sunrpc_sysctls = _kernel_path("/proc/sys/sunrpc", "The sunrpc sysctls (slot tables), present once sunrpc is loaded.")
    sys_module = _kernel_path("/sys/module", "Loaded kernel modules and their parameters.")
    net_tcp4 = _kernel_path("/proc/net/tcp", "IPv4 TCP sockets (proc(5)).")
    net_tcp6 = _kernel_path("/proc/net/tcp6", "IPv6 TCP sockets.")
    sunrpc_sysfs = _kernel_path("/sys/kernel/sunrpc", "sunrpc's sysfs (5.14+): xprt-switches/*/xprt-*/xprt_info.")
    sunrpc_debugfs = _kernel_path("/sys/kernel/debug/sunrpc", "sunrpc's debugfs: rpc_clnt/*/tasks (root, debugfs mounted).")
    tracefs = _kernel_path("/sys/kernel/tracing", "tracefs (instances/, events/), also at debugfs' tracing/ on old setups.")
    debugfs_tracing = _kernel_path("/sys/kernel/debug/tracing", "tracefs where debugfs mounts it.")

    def nfsd_file(self, name):
        return os.path.join(self.nfsd_control, name)

    def module_parameters(self, kmod):
        return os.path.join(self.sys_module, kmod, "parameters")

    @property
    def net_tcp(self):
        """The TCP socket tables, IPv4 then IPv6."""
        return (self.net_tcp4, self.net_tcp6)

    def read(self, path):
        """A kernel file's text (bounded, every byte kept), or None when it cannot be read."""
        return atomic_file.read_optional(path)

    def read_sunrpc_settings(self):
        """(dict, bundle text) of the live RPC slot settings: sysctls first (the live values), then module parameters."""
        settings = {}
        lines = []
        sources = [(self.sunrpc_sysctls, None)] + [(self.module_parameters(name), name) for name in SUNRPC_PARAMETER_MODULES]
        for directory, module_name in sources:
            try:
                names = sorted(os.listdir(directory))
            except OSError:
                continue
            if module_name:
                lines.append("# /sys/module/%s/parameters" % module_name)
            for name in names:
                path = os.path.join(directory, name)
                if not os.path.isfile(path):
                    continue
                value = self.read(path)
                if value is None:
                    continue
                value = " ".join(value.split())
                settings.setdefault(name, value)
                lines.append("%s %s" % (name, value))
        return settings, "\n".join(lines) + ("\n" if lines else "")


def at_root():
    """The HostRoot a module's main() uses: the live host ("/"), or the fake host a test set in ROOT."""
    return HostRoot(ROOT)
