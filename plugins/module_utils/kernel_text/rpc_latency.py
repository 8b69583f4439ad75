# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-RPC latencies from the sunrpc:rpc_stats_latency tracepoint, and the NFSv4.1 session's size from
nfs4:nfs4_sequence_done, as tracefs (trace, trace_pipe), `trace-cmd report` and `perf script` print them. Pure.

rpc_stats_latency (include/trace/events/sunrpc.h, fired by net/sunrpc/stats.c rpc_count_iostats_metrics once a
task ends, the same three times mountstats sums per op):
- 5.10:       "task:%u@%d xid=0x%08x %sv%d %s backlog=%lu rtt=%lu execute=%lu"
- 5.16-6.8:   SUNRPC_TRACE_TASK_SPECIFIER " xid=0x%08x %sv%d %s backlog=%lu rtt=%lu execute=%lu", the task
              specifier "task:%08x@%08x" (include/trace/misc/sunrpc.h: pid and client id in hex)
- 6.9+ (so 6.12): the same, then " xprt_id=%d" (the transport, "SUNRPC: add xrpt id to rpc_stats_latency
              tracepoint", 2024), which names sysfs' xprt-ID-PROTO directory
backlog is the time from the task's start to its transmission (waiting for a slot, a session slot and the socket),
rtt from transmission to the reply, execute the whole task; all in microseconds (ktime_to_us).

nfs4_sequence_done (fs/nfs/nfs4trace.h): "error=%ld (%s) session=0x%08x slot_nr=%u seq_nr=%u highest_slotid=%u
target_highest_slotid=%u status_flags=..." - highest_slotid + 1 is the session's slot count the server grants.

A line's prefix differs by tool (tracefs: "comm-pid [cpu] flags ts: event: ", trace-cmd: "comm-pid [cpu] ts:
event: ", perf script: "comm pid [cpu] ts: sunrpc:event: "); the event name and the text after it do not.
"""

from __future__ import annotations

import dataclasses
import re

# The time stamp ends the prefix before the event name: "   123.456789: ".
_TIMESTAMP = re.compile(r"\s(\d{1,12}\.\d{1,9}):\s+$")
_LATENCY = re.compile(
    r"\s(?:sunrpc:)?rpc_stats_latency:\s+task:([0-9a-f]{1,10})@(-?[0-9a-f]{1,10})\s+"
    r"xid=0x([0-9a-f]{1,8})\s+([a-z0-9_]{1,32}?)v(\d{1,3})\s+(\S{1,32})\s+backlog=(\d{1,20})\s+rtt=(\d{1,20})\s+"
    r"execute=(\d{1,20})(?:\s+xprt_id=(\d{1,10}))?")
_SEQUENCE = re.compile(
    r"\s(?:nfs4:)?nfs4_sequence_done:\s+error=(-?\d{1,10})\s+\(\w{0,40}\)\s+session=0x([0-9a-f]{1,8})\s+"
    r"slot_nr=(\d{1,10})\s+seq_nr=(\d{1,10})\s+highest_slotid=(\d{1,10})\s+target_highest_slotid=(\d{1,10})")
# The hex task specifier prints 8 digits (%08x); 5.10's decimal one is shorter (a decimal id of 8 digits or more
# would be read as hex: 10 million RPC clients).
_HEX_WIDTH = 8
# A capture this long is cut (a bounded buffer on the host; a paste of a whole day's trace here).
MAX_EVENTS = 2000000


@dataclasses.dataclass(frozen=True)
class Latency:
    """One RPC's latency: its time stamp (s, the trace clock), task and client id, xid, program and version ("nfs",
    4), procedure ("WRITE"), backlog, rtt and execute (us), and the transport id (6.9+, else None)."""
    timestamp: object
    task_id: int
    client_id: int
    xid: int
    program: str
    version: int
    procedure: str
    backlog_us: int
    rtt_us: int
    execute_us: int
    xprt_id: object


@dataclasses.dataclass(frozen=True)
class SequenceDone:
    """One NFSv4.1 SEQUENCE reply: its session hash, the slot it used, the server's highest and target slot ids."""
    timestamp: object
    error: int
    session: str
    slot_nr: int
    highest_slotid: int
    target_highest_slotid: int


@dataclasses.dataclass(frozen=True)
class Trace:
    """What a trace text holds: the latencies, the sequence replies, whether it was cut at MAX_EVENTS."""
    latencies: tuple
    sequences: tuple
    truncated: bool = False


def _task_number(word):
    """A task or client id: hex when printed %08x (5.16+), decimal otherwise (5.10 %u/%d)."""
    if word.startswith("-"):
        return int(word)
    return int(word, 16) if len(word) == _HEX_WIDTH else int(word)


def _stamp(line, match):
    """The time stamp just before the event's name, or None (a paste without it)."""
    found = _TIMESTAMP.search(line[max(0, match.start() - 40):match.start() + 1])
    return float(found.group(1)) if found else None


def parse_trace(text):
    """Trace of a tracefs / trace-cmd report / perf script text (other events and lines are skipped)."""
    latencies, sequences = [], []
    truncated = False
    for line in (text or "").split("\n"):
        if len(latencies) + len(sequences) >= MAX_EVENTS:
            truncated = True
            break
        if "rpc_stats_latency" in line:
            line = " " + line
            match = _LATENCY.search(line)
            if match:
                task, client, xid, program, version, procedure, backlog, rtt, execute, xprt = match.groups()
                latencies.append(Latency(_stamp(line, match), _task_number(task), _task_number(client), int(xid, 16), program,
                                         int(version), procedure, int(backlog), int(rtt), int(execute),
                                         int(xprt) if xprt is not None else None))
        elif "nfs4_sequence_done" in line:
            line = " " + line
            match = _SEQUENCE.search(line)
            if match:
                error, session, slot, _seq, highest, target = match.groups()
                sequences.append(SequenceDone(_stamp(line, match), int(error), session, int(slot), int(highest), int(target)))
    return Trace(tuple(latencies), tuple(sequences), truncated)
