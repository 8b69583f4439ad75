# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a saved or pasted file is, from its content only: the one recogniser of every kind. Pure.

Each format's own test lives beside its parser (nfsiostat.py, mountstats_report.py,
kernel_log.py; the kernel files' parsers in module_utils/kernel_text); this file orders them, from the
most specific mark to the loosest, on text layout.clean() has repaired. saved_files.classify
(ckptio.nfs.saved_stats_bundle) asks here too, so a file is the same kind on every path.
"""

from __future__ import annotations

import re

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import kernel_log, mountstats_report, nfsiostat, nfsstat_mounts
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import parse_mount_lines

# What each kind is, as the results and diagnosis.md name it.
KINDS = {
    "mountstats": "/proc/self/mountstats snapshot",
    "mountstats_lines": "lines cut out of /proc/self/mountstats (opts:, xprt:, op lines)",
    "nfsd": "/proc/net/rpc/nfsd snapshot",
    "nfsstat_server": "nfsstat -s output",
    "pool_stats": "/proc/fs/nfsd/pool_stats snapshot",
    "nfsstat_client": "nfsstat -c output",
    "nfsstat_mounts": "nfsstat -m output (the NFS mounts and their options)",
    "rpc_nfs": "/proc/net/rpc/nfs snapshot (the client's RPC counters)",
    "nfsiostat": "nfsiostat output",
    "mountstats_report": "output of the mountstats command",
    "kernel_log": "kernel log (dmesg, journalctl -k or a console)",
    "empty": "empty file",
    "unknown": "unrecognised file",
}

# Linear in the text (issue 45): blanks are [ \t] bounded, never \s, which under re.M ran `^\s*` from every one of
# 60,000 blank lines to the next text (minutes); test_regex_linear.py times each pattern.
_DEVICE = re.compile(r"^[ \t]{0,64}device \S{1,4096} mounted on \S{1,4096} with fstype \S{1,64}")
_NFSD_LABELS = frozenset(("rc", "fh", "io", "th", "ra", "net", "rpc", "proc2", "proc3", "proc4", "proc4ops"))
_NUMBER = re.compile(r"^\d{1,20}(?:\.\d{1,20})?$")
_POOL_HEADER = re.compile(r"^#[ \t]{0,64}pool[ \t]{1,64}packets-arrived\b")
_MOUNT_LINE_LABELS = re.compile(r"^[ \t]{0,64}(?:opts|xprt|age|events|bytes|RPC iostats version):", re.M)


def kind_of(text):
    """The KINDS key of a cleaned text (layout.clean)."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if not lines:
        return "empty"
    if any(_DEVICE.match(line) for line in lines):
        return "mountstats"
    if mountstats_report.recognise(text):
        return "mountstats_report"
    if nfsiostat.recognise(text):
        return "nfsiostat"
    if nfsstat_mounts.recognise(text):
        return "nfsstat_mounts"
    side = _nfsstat_side(lines)
    if side:
        return side
    if any(_POOL_HEADER.match(line) for line in lines):
        return "pool_stats"
    if _is_nfsd(lines):
        return "nfsd"
    if _is_rpc_nfs(lines):
        return "rpc_nfs"
    if _MOUNT_LINE_LABELS.search(text) and parse_mount_lines(text) is not None:
        return "mountstats_lines"
    if kernel_log.recognise(text):
        return "kernel_log"
    return "unknown"


def _nfsstat_side(lines):
    """nfsstat_server, nfsstat_client or None. `nfsstat -v` (and -c -v) prints the server's tables too, all zero on a
    client: a file with both sides is the side whose rpc calls are not zero (the server when both count)."""
    server = any(line == "Server rpc stats:" or line.startswith("Server nfs v") for line in lines)
    client = any(line == "Client rpc stats:" or line.startswith("Client nfs v") for line in lines)
    if server and client:
        return "nfsstat_client" if _calls_after(lines, "Server rpc stats:") == 0 else "nfsstat_server"
    return "nfsstat_server" if server else "nfsstat_client" if client else None


def _calls_after(lines, title):
    """The first number of the values line of a table (its calls), or None."""
    if title not in lines:
        return None
    for line in lines[lines.index(title) + 1:lines.index(title) + 4]:
        words = line.split()
        if words and words[0].isdigit():
            return int(words[0])
    return None


def _is_rpc_nfs(lines):
    """/proc/net/rpc/nfs (the client's counters nfsstat -c reads): `rpc` with calls, retrans, authrefrsh and `proc` lines."""
    labels = set(line.split()[0] for line in lines if line.split()[0] in ("net", "rpc", "proc2", "proc3", "proc4")
                 and all(_NUMBER.match(word) for word in line.split()[1:]))
    return "rpc" in labels and bool(labels & {"proc2", "proc3", "proc4"})


def _is_nfsd(lines):
    """/proc/net/rpc/nfsd lines: `rc` with `rpc` or a `proc` line, two such lines, or a whole `th` line alone."""
    labels = set()
    for line in lines:
        words = line.split()
        if words[0] in _NFSD_LABELS and len(words) > 1 and all(_NUMBER.match(word) for word in words[1:]):
            labels.add(words[0])
            if words[0] == "th" and len(words) >= 13:
                return True
    # rc, fh, io, th and proc4ops are the server's alone: /proc/net/rpc/nfs (the client's) has net, rpc and procN.
    return len(labels) >= 2 and bool(labels & {"rc", "fh", "io", "th", "proc4ops"})
