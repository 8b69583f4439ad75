# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel log pastes (dmesg, dmesg -T, journalctl -k, a serial console): the NFS client's messages. Pure.

What is read, and where the kernel prints it:
- hung-task reports (kernel/hung_task.c check_hung_task): "INFO: task NAME:PID blocked for more
  than N seconds." then sched_show_task()'s "task:NAME state:D ..." line and the stack, one frame
  a line ("nfs_wait_on_request+0x2c/0x60 [nfs]", "? schedule+0x..", or "[<ffff...>] frame+0x../0x.."
  on old kernels). N is the hung_task_timeout_secs the task exceeded (default 120): a lower bound.
- "nfs: server X not responding, still trying" / "..., timed out" and "nfs: server X OK"
  (fs/nfs/... via rpc_task's major timeout, net/sunrpc/clnt.c call_timeout / call_decode): the time
  between a "not responding" and the next "OK" of that server is how long it was away.
- "RPC: ... timed out" lines (net/sunrpc), NFSv4 state manager and lease messages
  (fs/nfs/nfs4state.c: "state manager", "lease", "reclaim"), and stale file handles (ESTALE).
The line prefixes (dmesg's "[ 1234.567890]", dmesg -T's "[Wed Dec  2 10:00:00 2026]", journalctl's
"Dec 02 10:00:00 host kernel:" or ISO time) are read for the time where there is one.
"""

from __future__ import annotations

import calendar
import re
import time

# Every pattern here runs in time linear in the line (issue 45: a paste of one 80 kB line of "RPC: " or "task " ran
# for minutes): quantifiers are bounded ({0,N}) or stop at a character the next part cannot match, and no pattern
# holds two unbounded runs over overlapping classes; tests/unit/plugins/module_utils/paste/test_regex_linear.py
# times each one on strings made of its own characters. The bounds are the kernel's: a task's comm is at most 15
# characters (TASK_COMM_LEN 16, include/linux/sched.h; 64 leaves room for what a console wraps in), a pid at most
# 7 digits (PID_MAX_LIMIT 4194304), a symbol name at most 511 characters (KSYM_NAME_LEN 512 since Linux 6.1), an
# offset or size at most 16 hex digits, a host name at most 255 characters.
_HUNG = re.compile(r"\btask\s{1,8}(?P<task>[^\n]{1,64}?):(?P<pid>\d{1,10})\s{1,8}blocked for more than\s{1,8}(?P<seconds>\d{1,10})"
                   r"\s{1,8}seconds")
# A frame the unwinder is not sure of is printed with "? " (arch/x86/kernel/dumpstack.c): kept apart, never what a task waits on.
# 32-bit ARM prints "[<pc>] (function) from [<lr>] (caller+0x3c/0xa0)" (arch/arm/kernel/traps.c dump_backtrace_entry): the
# caller with its offset is read, so each line gives the frame above the one it names.
_FRAME = re.compile(r"(?:^|[\s>\](])(?P<unsure>\?\s{1,8})?(?P<name>[A-Za-z_][\w.]{0,510})\+0x[0-9a-fA-F]{1,16}/0x[0-9a-fA-F]{1,16}")
_NOT_RESPONDING = re.compile(r"\bnfs: server (?P<server>\S{1,255}) not responding, (?P<how>still trying|timed out)")
_SERVER_OK = re.compile(r"\bnfs: server (?P<server>\S{1,255}) OK\b")
# "RPC: ... timed out" and "rpc... timed out" (case-insensitive) are two searches, not `rpc.*timed out`: that shape
# scans to the line's end from every "rpc" and took minutes on a line of 16,384 "RPC: ".
_RPC_WORD = re.compile(r"\brpc", re.I)
_TIMED_OUT = re.compile(r"\btimed out\b", re.I)
_STATE = re.compile(r"state manager|lease (?:expired|renewal)|check lease|reclaim|NFS4ERR_(?:EXPIRED|STALE_CLIENTID|BADSESSION)",
                    re.I)
_STALE = re.compile(r"stale (?:file|nfs file) handle|\bESTALE\b", re.I)
# The end of one stack: another report starts, or the trace's closing line.
_TRACE_END = re.compile(r"</TASK>|\bINFO:|\bWARNING:|\bBUG:|cut here|Showing all locks")
# Time prefixes: monotonic seconds, dmesg -T, journalctl short (no year), ISO 8601; only at a line's start, blanks
# within the line ([ \t], never a newline: under a search of a whole paste `^\s*` ran over every blank line after it).
_MONOTONIC = re.compile(r"^[ \t]{0,16}\[[ \t]{0,16}(\d{1,12}\.\d{1,9})\]")
_CTIME = re.compile(r"^[ \t]{0,16}\[(?:\w{3}[ \t]{1,8})?(\w{3}[ \t]{1,8}\d{1,2}[ \t]{1,8}\d{1,2}:\d{1,2}:\d{1,2}[ \t]{1,8}\d{4})\]")
_SYSLOG = re.compile(r"^[ \t]{0,16}(\w{3}[ \t]{1,8}\d{1,2}[ \t]{1,8}\d{1,2}:\d{1,2}:\d{1,2})(?:\.\d{1,9})?[ \t]{1,8}\S{1,255}[ \t]{1,8}kernel:")
_ISO = re.compile(r"^[ \t]{0,16}(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)")
_CALL_TRACE = re.compile(r"\bCall Trace:")
_NFS_WORDS = re.compile(r"\bNFS: |\bnfs: |\bnfs4|\bsunrpc|\bRPC: ")
# Lines that say this is the kernel's log, for the recogniser.
_KERNEL_MARKS = (_HUNG, _NOT_RESPONDING, _SERVER_OK, _STALE, _CALL_TRACE)

# Where a stack says a task waits, innermost match first: (frame names, what it waits on, layer it points at).
WAITS = (
    (("xprt_reserve", "xprt_alloc_slot", "xprt_do_reserve", "xprt_lock_connect", "call_reserve"),
     "a transport slot (the RPC slot table is full)", "client_rpc_slots"),
    (("nfs41_sequence_process", "nfs4_setup_sequence", "nfs41_setup_sequence", "nfs41_wait_on_slot", "nfs4_alloc_slot",
      "nfs41_sequence_done", "nfs4_slot_tbl_drain_complete", "nfs4_drain_slot_tbl"),
     "an NFSv4.1 session slot", "client_rpc_slots"),
    (("nfs_start_io_write", "nfs_start_io_direct"),
     "another writer's hold on the same file (nfs_start_io_write: buffered and O_DIRECT writers of one inode exclude "
     "each other)", "access_pattern"),
    (("nfs_wait_on_request", "nfs_page_group_lock", "nfs_lock_and_join_requests", "nfs_page_group_lock_head"),
     "a page request still in flight to the server (nfs_wait_on_request: the WRITE it belongs to has not been answered)",
     "client_rpc_slots"),
    (("rpc_wait_bit_killable", "__rpc_wait_for_completion_task", "rpc_wait_for_completion_task", "__rpc_execute"),
     "an RPC's reply from the server", None),
    (("nfs4_run_state_manager", "nfs4_wait_clnt_recover", "nfs4_begin_drain_session", "nfs4_state_manager"),
     "NFSv4 state recovery (lease or session being re-established)", "network"),
    (("folio_wait_writeback", "wait_on_page_writeback", "__filemap_fdatawait_range", "filemap_fdatawait_range",
      "filemap_write_and_wait_range", "wb_wait_for_completion", "balance_dirty_pages", "folio_wait_bit_common",
      "wait_on_page_bit_common"),
     "writeback of its dirty pages", None),
    (("nfs_file_fsync", "vfs_fsync_range", "do_fsync", "nfs_wb_all"), "fsync (all its dirty pages written and committed)", None),
)


# The waits of WAITS that are a wait for the server's replies (no capacity layer of their own).
SERVER_REPLY_WAITS = frozenset(what for _names, what, layer in WAITS if layer is None)


def recognise(text):
    """True when at least one line is a kernel message of the kinds read here (or a call trace)."""
    return any(mark.search(text) for mark in _KERNEL_MARKS) or any(rpc_timed_out(line) for line in text.split("\n")) or bool(
        _NFS_WORDS.search(text) and (_MONOTONIC.search(text) or "kernel:" in text))


def parse(text):
    """{"hung_tasks": [...], "outages": [...], "not_responding": [...], "rpc_timeouts": [...],
    "state_messages": [...], "stale_handles": [...], "still_trying": {server: None}} (lines kept as text, times in
    seconds where printed; still_trying: the servers a hard mount kept retrying)."""
    result = {"hung_tasks": [], "outages": [], "not_responding": [], "rpc_timeouts": [], "state_messages": [], "stale_handles": [],
              "still_trying": {}}
    task = None
    away = {}
    for line in text.split("\n"):
        hung = _HUNG.search(line)
        if hung:
            task = {"task": hung.group("task").strip(), "pid": int(hung.group("pid")), "seconds": int(hung.group("seconds")),
                    "time": line_time(line), "frames": [], "guessed": []}
            result["hung_tasks"].append(task)
            continue
        if task is not None:
            frame = _FRAME.search(line)
            if frame:
                task["guessed" if frame.group("unsure") else "frames"].append(frame.group("name"))
                continue
            if _TRACE_END.search(line):
                task = None
        _read_event(result, away, line)
    for server, since in sorted(away.items()):
        result["outages"].append({"server": server, "from": since, "to": None, "seconds": None, "ended": False})
    for task in result["hung_tasks"]:
        task["waits_on"], task["layer"] = waits_on(task["frames"])
    result["hung_tasks"] = _longest_report(result["hung_tasks"])
    return result


def last_line_time(text):
    """Seconds of the last line that has a time prefix, or None (read only when an outage has no end: a scan of the
    text from its end)."""
    for line in reversed(text.split("\n")):
        found = line_time(line)
        if found is not None:
            return found
    return None


def _longest_report(tasks):
    """One report per task: khungtaskd reports a task again every hung_task_timeout_secs while it stays
    blocked (10, 20, 30 s ...), so its last report says for how long; the order of first reports is kept."""
    last = {}
    for task in tasks:
        key = (task["task"], task["pid"])
        if key not in last or task["seconds"] >= last[key]["seconds"]:
            last[key] = dict(task, reports=(last[key]["reports"] + 1) if key in last else 1)
    # dict keys keep the order of first reports (a list's `in` made 30,000 distinct tasks take minutes).
    order = dict.fromkeys((task["task"], task["pid"]) for task in tasks)
    return [last[key] for key in order]


def _read_event(result, away, line):
    down = _NOT_RESPONDING.search(line)
    if down:
        result["not_responding"].append(line.strip())
        if down.group("how") == "still trying":
            # a hard mount's server (a soft mount prints "timed out"): {server: None}, in the order first seen
            result["still_trying"].setdefault(down.group("server"))
        away.setdefault(down.group("server"), line_time(line))
        return
    up = _SERVER_OK.search(line)
    if up and up.group("server") in away:
        since, until = away.pop(up.group("server")), line_time(line)
        seconds = until - since if since is not None and until is not None and until >= since else None
        result["outages"].append({"server": up.group("server"), "from": since, "to": until, "seconds": seconds, "ended": True})
        return
    if "not responding" not in line and rpc_timed_out(line):
        result["rpc_timeouts"].append(line.strip())
    elif _STALE.search(line):
        result["stale_handles"].append(line.strip())
    elif _STATE.search(line) and ("NFS" in line or "nfs" in line):
        result["state_messages"].append(line.strip())


def rpc_timed_out(text):
    """True when a word starting with "rpc" (any case: "RPC:", "rpc_task") comes before a "timed out" in one line."""
    rpc = _RPC_WORD.search(text)
    return bool(rpc and _TIMED_OUT.search(text, rpc.end()))


def waits_on(frames):
    """(what the stack waits on, the layer that points at) from its frames, innermost first; (None, None) when unknown."""
    for frame in frames:
        for names, what, layer in WAITS:
            if frame in names:
                return what, layer
    return None, None


def line_time(line):
    """Seconds of the line's time prefix (monotonic, or epoch-like for wall clocks), or None."""
    found = _MONOTONIC.match(line)
    if found:
        return float(found.group(1))
    for pattern, layout in ((_CTIME, "%b %d %H:%M:%S %Y"), (_ISO, "%Y-%m-%dT%H:%M:%S"), (_SYSLOG, "%b %d %H:%M:%S")):
        found = pattern.match(line)
        if found:
            try:
                return float(calendar.timegm(time.strptime(" ".join(found.group(1).split()), layout)))
            except (ValueError, OverflowError):
                return None
    return None
