# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where this host's files are: one object built from a root path, and the one way kernel files are read.

Every module that reads /proc, /sys or the /etc, /usr and /run files the tools it tunes read
(nfs.conf, modprobe.d, systemd units) builds one HostRoot in main() (`host_root.at_root()`) and
passes it down, so each such path is written once, here, and a unit test points a whole module
at a fake host by giving it another root (tests/unit/conftest.py `fake_host`), not by patching
each module's constants. The shape is prometheus/procfs' FS (`NewFS(mountPoint)`): one root,
named paths under it, one bounded reader. A path a module takes as an option (conf_file,
modprobe_conf, fstab) is the user's and is used as given; the search paths around it are here.

Reads go through file_read.read(kernel=True): bounded (PROC_LIMIT), every byte kept, None on any
OSError, since a kernel file that is absent (nfsd not running, a module not loaded) is reported,
not fatal. Kernel parameters (a module's /sys/module/*/parameters, sunrpc's sysctls) are found
and read by parameter_dirs / read_parameters, the one reader of them. Files the kernel writes
for us (nfsd threads, sunrpc parameters) are written by file_edits.write_kernel_value at the
paths named here.
"""

from __future__ import annotations

import dataclasses
import os

from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import host_evidence

# The live host's root. Only tests change it (through the fake_host fixture), before main() runs.
ROOT = "/"
# Kernel modules whose parameters decide RPC slot counts; the sysctl files exist once sunrpc is loaded.
SUNRPC_PARAMETER_MODULES = ("nfs", "sunrpc")


def _kernel_path(host_path, doc):
    """A HostRoot attribute: host_path ("/proc/meminfo") under the object's root."""
    return property(lambda self: self.path(host_path), doc=doc)


def _search_path(host_paths, doc):
    """A HostRoot attribute: the directories or files host_paths, in their order, under the object's root."""
    return property(lambda self: tuple(self.path(host_path) for host_path in host_paths), doc=doc)


@dataclasses.dataclass(frozen=True)
class HostRoot:
    """The kernel's /proc and /sys, and the tools' /etc, /usr and /run files, of one host under root ("/" on a real host)."""

    root: str = "/"

    def path(self, host_path):
        """This host's file for an absolute host path ("/proc/meminfo" -> root/proc/meminfo)."""
        return os.path.join(self.root, host_path.lstrip("/"))

    proc = _kernel_path("/proc", "The process and kernel tables.")
    mountinfo = _kernel_path("/proc/self/mountinfo", "The mounts this process sees (proc(5)).")
    mountstats = _kernel_path("/proc/self/mountstats", "The NFS client's per-mount counters.")
    meminfo = _kernel_path("/proc/meminfo", "Memory figures (MemAvailable bounds the canary).")
    # Named where the pure floor cites it too (a link row's speed source), so it is written once.
    sys_class_net = _kernel_path(host_evidence.SYS_CLASS_NET, "One directory per network interface.")
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

    # The tools' files under /etc, /usr and /run (the same _kernel_path: any host path under the root).
    # nfs-utils (conffile.c conf_init_file): /etc/nfs.conf, else /usr/etc/nfs.conf and its .d; then /etc/nfs.conf.d.
    nfs_conf = _kernel_path("/etc/nfs.conf", "nfs-utils' main configuration file.")
    nfs_conf_d = _kernel_path("/etc/nfs.conf.d", "nfs-utils' drop-in directory (*.conf).")
    usr_nfs_conf = _kernel_path("/usr/etc/nfs.conf", "The vendor nfs.conf, read only when /etc/nfs.conf is not.")
    # nfs-utils has no max_connections setting: an nfs-server.service drop-in copies the value file
    # into /proc/fs/nfsd/max_connections before nfsd starts (docs/tuning-modules.md says why).
    nfs_server_dropin = _kernel_path("/etc/systemd/system/nfs-server.service.d/ckptio-max-connections.conf",
                                     "nfsd_threads' nfs-server.service drop-in (max_connections).")
    max_connections_value_file = _kernel_path("/etc/ckptio/nfsd-max-connections", "The value that drop-in copies.")
    # The RPCNFSDCOUNT line nfsd_threads replaced, so state=absent restores it (only with persist_command_line).
    rpcnfsdcount_record = _kernel_path("/etc/ckptio/nfsd-rpcnfsdcount.record", "The RPCNFSDCOUNT line replaced.")
    # systemd's unit search path, highest precedence first (systemd.unit(5)); /lib on unmerged-/usr
    # Debian 11 and Ubuntu 20.04, where nfs-server.service lives.
    systemd_unit_dirs = _search_path(("/etc/systemd/system", "/run/systemd/system", "/usr/lib/systemd/system",
                                      "/lib/systemd/system"), "systemd's unit directories, highest precedence first.")
    # Shipped by nfs-utils' systemd/ up to Debian 11 and Ubuntu 20.04 (nfs-config.service runs it).
    env_scripts = _search_path(("/usr/lib/systemd/scripts/nfs-utils_env.sh", "/lib/systemd/scripts/nfs-utils_env.sh"),
                               "nfs-utils_env.sh, where a distribution ships it.")
    # Files an nfs-utils_env.sh may source that nfsd_threads may edit, with the user's consent
    # (Debian/Ubuntu; RHEL 7's script reads /etc/sysconfig/nfs).
    editable_defaults = _search_path(("/etc/default/nfs-kernel-server", "/etc/sysconfig/nfs"),
                                     "The defaults files nfsd_threads may edit.")
    # kmod's search order (libkmod-config.c): a file name in an earlier directory hides later ones.
    modprobe_dirs = _search_path(("/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d", "/usr/lib/modprobe.d",
                                  "/lib/modprobe.d"), "modprobe.d directories in kmod's order.")
    modules_load_dirs = _search_path(("/etc/modules-load.d", "/run/modules-load.d", "/usr/local/lib/modules-load.d",
                                      "/usr/lib/modules-load.d", "/lib/modules-load.d"), "modules-load.d directories, same order.")
    # coreutils dd: /usr/bin on merged-/usr systems (Debian 12, RHEL), /bin on older Debian.
    DD_PATHS = ("/usr/bin/dd", "/bin/dd")

    def first_present(self, paths):
        """The first of paths (under root) that exists, else the first: where a tool ships in one of several places."""
        return next((path for path in paths if os.path.exists(path)), paths[0])

    def dd_path(self):
        """dd as a unit runs it: the host path (/usr/bin/dd or /bin/dd) of the first present under root."""
        return next((path for path in self.DD_PATHS if os.path.exists(self.path(path))), self.DD_PATHS[0])

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
        return file_read.read(path, kernel=True)

    def parameter_dirs(self, kmod):
        """Where kmod's live parameters are, the live values first: sunrpc's sysctls (/proc/sys/sunrpc, present
        once sunrpc is loaded), then /sys/module/<kmod>/parameters."""
        return ([self.sunrpc_sysctls] if kmod == "sunrpc" else []) + [self.module_parameters(kmod)]

    def kmod_loaded(self, kmod):
        """True when one of kmod's parameter directories exists."""
        return any(os.path.isdir(directory) for directory in self.parameter_dirs(kmod))

    def read_parameters(self, directory, names=None, read=None):
        """[(name, value)] of the kernel parameter files in directory, the one reader of them.

        names: these files, in this order (one that reads as None, a missing file, is left out);
        without names, every regular file in the directory by name, and None when the directory
        cannot be listed (the module is not loaded). value: the text with each whitespace run one
        space. read(path): self.read (None on any error); a module that must not take a directory
        or an unreadable file for an absent value passes file_read.read with module=.
        """
        read = read or self.read
        if names is None:
            listing = file_read.list_dirs([directory])
            if not listing:
                return None
            names = [name for name in listing[0][1] if os.path.isfile(os.path.join(directory, name))]
        rows = []
        for name in names:
            value = read(os.path.join(directory, name))
            if value is not None:
                rows.append((name, " ".join(value.split())))
        return rows

    def read_sunrpc_settings(self):
        """(dict, bundle text) of the live RPC slot settings: sysctls first (the live values), then module parameters."""
        settings = {}
        lines = []
        sources = [(self.sunrpc_sysctls, None)] + [(self.module_parameters(name), name) for name in SUNRPC_PARAMETER_MODULES]
        for directory, module_name in sources:
            rows = self.read_parameters(directory)
            if rows is None:
                continue
            if module_name:
                lines.append("# /sys/module/%s/parameters" % module_name)
            for name, value in rows:
                settings.setdefault(name, value)
                lines.append("%s %s" % (name, value))
        return settings, "\n".join(lines) + ("\n" if lines else "")


def at_root():
    """The HostRoot a module's main() uses: the live host ("/"), or the fake host a test set in ROOT."""
    return HostRoot(ROOT)
