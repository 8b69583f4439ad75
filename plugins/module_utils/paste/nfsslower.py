# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bcc's nfsslower output as people paste it: the table (TIME COMM PID T BYTES OFF_KB LAT(ms) FILENAME) or its -j CSV
(ENDTIME_us,TASK,PID,TYPE,BYTES,OFFSET_b,LATENCY_us,FILE). Recognise it and read what it shows (issue 44). Pure.

nfsslower (iovisor/bcc tools/nfsslower.py) times the NFS client's file operations from the VFS call to its return:
R read, W write, O open, G getattr, and since bcc#4368 C commit (nfs_initiate_commit to nfs_commit_done, issued by
writeback's kworker threads). A COMMIT returns when the server has the written data on stable storage (RFC 1813
3.3.21, RFC 8881 18.3), so a slow COMMIT is the server's storage; a read's or write's time spans the RPC, the wire,
the server and, for a buffered write, waiting for writeback - a figure, consistent with either. ext4slower, xfsslower
and zfsslower print the same header: the text is nfsslower's only with its "Tracing NFS" line or an op only NFS has
(C, G).
"""

from __future__ import annotations

import re

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals
from ansible_collections.ckptio.nfs.plugins.module_utils.paste import text_figures as tf

KIND = "nfsslower"
TAKEN_FOR = "bcc nfsslower output (NFS reads, writes, opens, getattrs and commits slower than a threshold)"
CAN_SHOW = "the slowest NFS read, write, open, getattr and commit each process saw, and how many were slow"

OPS = {"R": "READ", "W": "WRITE", "O": "OPEN", "G": "GETATTR", "C": "COMMIT"}
_NFS_ONLY = ("C", "G")
_HEADER = ("T", "BYTES", "LAT(ms)", "FILENAME")
_CSV_HEADER = "ENDTIME_us,TASK,PID,TYPE,BYTES,OFFSET_b,LATENCY_us,FILE"
# TIME COMM PID T BYTES OFF_KB LAT(ms) FILENAME; a task's comm is at most 15 characters (TASK_COMM_LEN) and may hold a blank.
_ROW = re.compile(r"^\s{0,8}(\d{1,2}:\d{2}:\d{2})\s{1,8}(\S.{0,15}?)\s{1,16}(\d{1,10})\s{1,8}([RWOGC])\s{1,8}(\d{1,20})"
                  r"\s{1,16}(\d{1,20})\s{1,16}(\d{1,12}(?:\.\d{1,6})?)\s{1,16}(.{0,4096})$")


def recognise(text):
    """True when an nfsslower table or CSV header is in the text and the text is NFS's (see the module docstring)."""
    if _CSV_HEADER in text:
        return True
    if "LAT(ms)" not in text:
        return False
    rows = _rows(text)
    return bool(rows) and ("Tracing NFS" in text or any(row["op"] in _NFS_ONLY for row in rows))


def read(text):
    """Findings: per op, the slowest call and how many were listed; a slow COMMIT points at the server's storage."""
    rows = _rows(text)
    findings = []
    for letter, op in OPS.items():
        mine = [row for row in rows if row["op"] == letter]
        if not mine:
            continue
        slowest = max(mine, key=lambda row: row["ms"])
        what = "%d %s(s) listed, the slowest %.2f ms by %s (pid %s) on %s" % (
            len(mine), op, slowest["ms"], slowest["task"], slowest["pid"], slowest["file"] or "-")
        if letter == "C":
            crossed = signals.RTT_HIGH_MS.crossed(slowest["ms"])
            findings.append(tf.finding(
                "server_storage", "slowest COMMIT (nfsslower)", slowest["ms"],
                what + ": a COMMIT returns when the server has the written data on stable storage (RFC 1813 3.3.21, "
                "RFC 8881 18.3), so its time is the server's storage", slowest["line"],
                tf.threshold_text(signals.RTT_HIGH_MS), crossed, signals.PASTE_WEIGHT_CROSSED.threshold if crossed else 1))
            continue
        findings.append(tf.finding(None, "slowest %s (nfsslower)" % op, slowest["ms"], what + (
            ": from the VFS call to its return - the RPC, the wire, the server and (a buffered write) waiting for "
            "writeback" if letter in "RW" else ": a round trip to the server (or a delegation or lease wait)"),
            slowest["line"]))
    return findings


def _rows(text):
    """[{"op", "ms", "task", "pid", "file", "line"}] of the table's rows and the CSV's (microseconds made ms)."""
    rows = []
    csv = False
    for number, line in tf.lines(text):
        if line.strip() == _CSV_HEADER:
            csv = True
            continue
        if csv:
            row = _csv_row(line, number)
            if row:
                rows.append(row)
                continue
            csv = False
        found = _ROW.match(line)
        if found:
            rows.append({"op": found.group(4), "ms": float(found.group(7)), "task": found.group(2).strip(),
                         "pid": found.group(3), "file": found.group(8).strip(), "line": number})
    return rows


def _csv_row(line, number):
    words = line.strip().split(",", 7)
    if len(words) != 8 or words[3] not in OPS or not words[6].isdigit() or len(words[6]) > tf.MAX_NUMBER:
        return None
    return {"op": words[3], "ms": int(words[6]) / 1000.0, "task": words[1], "pid": words[2], "file": words[7], "line": number}
