# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Output of nfs-utils' `mountstats` command (tools/mountstats/mountstats.py): recognise it, read it. Pure.

What the command prints for one mount (display_nfs_options, display_rpc_generic_stats,
display_rpc_op_stats), each part optional in a paste (people paste from "RPC statistics:" on):

    Stats for SERVER:/export mounted on /mnt:
      NFS mount options: rw,vers=4.1,...,nconnect=1,...
    RPC statistics:
      544 RPC requests sent, 544 RPC replies received (0 XIDs not found)
      average backlog queue length: 0
    WRITE:
        514 ops (94%)   [3 retrans (0%)   1 major timeouts]   [2 errors (0%)]
        avg bytes sent per op: 65496   avg bytes received per op: 184
        backlog wait: 20566.408560   RTT: 143.791829   total execute time: 20711.472763 (milliseconds)

Every per-op figure is an average per op over the command's window (since the mount, or
between two files with -S); "backlog wait" is the kernel's queue time (rpc_task queued until
transmitted), so exe = backlog wait + RTT + the client's own work. The text of each op's block
is read as words, so columns or lines broken by a mail client change nothing.
"""

from __future__ import annotations

import re

from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import split_options

# Linear in the line (issue 45: a 60,000-digit run after the header took minutes): a count is a whole number of
# at most 20 digits (an unsigned 64-bit counter, the widest the kernel keeps) not preceded by another digit, so
# `\d+` is not retried from every digit of a long run; an average is digits, a point and digits.
# tests/unit/plugins/module_utils/paste/test_regex_linear.py times each pattern on strings of its own characters.
_OP_TITLE = re.compile(r"^([A-Z][A-Z0-9_]{0,63}):[ \t]*$")
_STATS_FOR = re.compile(r"^Stats for[ \t]{1,64}(?P<export>\S{1,4096})[ \t]{1,64}mounted on[ \t]{1,64}(?P<mount_point>\S{1,4096}?):?[ \t]*$")
_COUNT = r"(?<![\d.])(\d{1,20})"
_AVERAGE = r"(\d{1,20}(?:\.\d{1,20})?)"
_FIGURES = (
    ("ops", re.compile(_COUNT + r"[ \t]{1,64}ops\b")),
    ("retrans", re.compile(_COUNT + r"[ \t]{1,64}retrans\b")),
    ("major_timeouts", re.compile(_COUNT + r"[ \t]{1,64}major timeouts")),
    ("errors", re.compile(_COUNT + r"[ \t]{1,64}errors\b")),
    ("avg_queue_ms", re.compile(r"backlog wait:[ \t]{0,64}" + _AVERAGE)),
    ("avg_rtt_ms", re.compile(r"\bRTT:[ \t]{0,64}" + _AVERAGE)),
    ("avg_exe_ms", re.compile(r"total execute time:[ \t]{0,64}" + _AVERAGE)),
)
_REQUESTS = re.compile(_COUNT + r"[ \t]{1,64}RPC requests sent,[ \t]{0,64}(\d{1,20})[ \t]{1,64}RPC replies received")
_BACKLOG = re.compile(r"average backlog queue length:[ \t]{0,64}" + _AVERAGE)


def recognise(text):
    """True for the command's per-op blocks (`backlog wait:` with `total execute time:`), its
    RPC section (`RPC statistics:` with `RPC requests sent`) or its `Stats for ... mounted on` title."""
    return (("backlog wait:" in text and "total execute time:" in text)
            or ("RPC statistics:" in text and "RPC requests sent" in text)
            or any(_STATS_FOR.match(line.strip()) for line in text.split("\n")))


def parse(text):
    """[{"export", "mount_point", "options": {...}, "requests_sent", "average_backlog", "ops": {NAME: {...}}}], one per mount."""
    mounts = []
    current = None
    op_name, op_lines = None, []
    for line in text.split("\n"):
        stripped = line.strip()
        title = _STATS_FOR.match(stripped)
        op_title = _OP_TITLE.match(stripped)
        if title or op_title:
            _finish_op(current, op_name, op_lines)
            op_name, op_lines = None, []
        if title or current is None:
            current = {"export": None, "mount_point": None, "options": {}, "requests_sent": None, "average_backlog": None, "ops": {}}
            mounts.append(current)
        if title:
            current["export"], current["mount_point"] = title.group("export"), title.group("mount_point")
        elif op_title:
            op_name = op_title.group(1)
        elif op_name is not None:
            op_lines.append(stripped)
        else:
            _read_mount_line(current, stripped)
    _finish_op(current, op_name, op_lines)
    return [mount for mount in mounts if mount["ops"] or mount["options"] or mount["average_backlog"] is not None]


def _read_mount_line(mount, stripped):
    if stripped.startswith("NFS mount options:"):
        mount["options"] = split_options("".join(stripped[len("NFS mount options:"):].split()))
    requests = _REQUESTS.search(stripped)
    if requests:
        mount["requests_sent"] = int(requests.group(1))
    backlog = _BACKLOG.search(stripped)
    if backlog:
        mount["average_backlog"] = float(backlog.group(1))


def _finish_op(mount, name, lines):
    """The op's figures from its block's words; an op without its ops count is left out."""
    if mount is None or name is None:
        return
    block = " ".join(" ".join(lines).split())
    figures = {}
    for key, pattern in _FIGURES:
        found = pattern.search(block)
        figures[key] = (float(found.group(1)) if "." in found.group(1) else int(found.group(1))) if found else None
    if figures["ops"] is None:
        return
    # The command prints retrans and major timeouts only when some op was retransmitted.
    for key in ("retrans", "major_timeouts", "errors"):
        figures[key] = figures[key] or 0
    mount["ops"][name] = figures
