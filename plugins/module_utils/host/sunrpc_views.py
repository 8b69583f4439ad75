# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One read of the kernel's live sunrpc views, as text in the capture bundle's formats (issue 47).

Shared by the canary's sampler (host/sunrpc_sampler.py, a pass on its own cadence in the write window) and the
metrics collector (host/metrics_collector.py, a read each timer tick); a file of its own, importing only file_read,
so the collector's zip (telemetry/install.py follows the imports) holds no process or tracing code.

- xprt_text: every transport's /sys/kernel/sunrpc/xprt-switches/*/xprt-*/xprt_info, xprt_state and dstaddr (sysfs,
  kernels 5.14 and later; docs/kernels.md), as `--- xprt-switches/switch-N/xprt-M-tcp/NAME ---` sections;
- tasks_text: every /sys/kernel/debug/sunrpc/rpc_clnt/*/tasks (and info where the kernel has one), where debugfs is
  mounted (root only), as `--- rpc_clnt/N/NAME ---` sections.
Reads are bounded and follow no link; the parsers are module_utils/kernel_text's (one per format).
"""

from __future__ import annotations

import os

from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read

# dstaddr: the server address, a file of its own on 6.1 (xprt_info has only dst_port): how a transport is tied to a mount.
XPRT_FILES = ("xprt_info", "xprt_state", "dstaddr")
CLIENT_FILES = ("tasks", "info")
# xprt_info is ~220 bytes (sysfs says 4096); a tasks file is one ~110-byte line per RPC: 4 MiB is
# ~38,000 RPCs of one client (the lab's 2-slot baseline held ~450).
XPRT_LIMIT = 64 * 1024
TASKS_LIMIT = 4 * 1024 * 1024
# Directories walked per read at most (a host with thousands of mounts stays bounded).
MAX_ENTRIES = 512


def entries(directory, prefix):
    """Names in directory starting with prefix, real directories only (no link followed), sorted, bounded."""
    try:
        with os.scandir(directory) as scan:
            names = [entry.name for entry in scan if entry.name.startswith(prefix) and entry.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    return sorted(names, key=lambda name: (len(name), name))[:MAX_ENTRIES]


def _ended(text):
    return text if text.endswith("\n") or not text else text + "\n"


def xprt_text(host):
    """One read of every transport's files (XPRT_FILES) as the sample container's sections, or None without sunrpc sysfs."""
    switches = os.path.join(host.sunrpc_sysfs, "xprt-switches")
    if not os.path.isdir(switches):
        return None
    parts = []
    for switch in entries(switches, "switch-"):
        for xprt in entries(os.path.join(switches, switch), "xprt-"):
            for name in XPRT_FILES:
                text = file_read.read(os.path.join(switches, switch, xprt, name), XPRT_LIMIT, kernel=True)
                if text is not None:
                    parts.append("--- xprt-switches/%s/%s/%s ---\n%s" % (switch, xprt, name, _ended(text)))
    return "".join(parts)


def tasks_text(host, notes):
    """One read of every RPC client's debugfs files (CLIENT_FILES) as sections, or None without debugfs; what could
    not be read is added to notes once."""
    clients = os.path.join(host.sunrpc_debugfs, "rpc_clnt")
    if not os.path.isdir(clients):
        return None
    parts = []
    for client in entries(clients, ""):
        for name in CLIENT_FILES:
            path = os.path.join(clients, client, name)
            text = file_read.read(path, TASKS_LIMIT, kernel=True)
            if text is not None:
                parts.append("--- rpc_clnt/%s/%s ---\n%s" % (client, name, _ended(text)))
            elif name == "tasks" and os.path.exists(path):
                note = "rpc_tasks: rpc_clnt/%s/tasks unreadable or over %d MiB in a sample: left out" % (client, TASKS_LIMIT // 1048576)
                if note not in notes:
                    notes.append(note)
    return "".join(parts)
