# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slot table as people paste it (issue 47): sysfs xprt_info (`cat /sys/kernel/sunrpc/xprt-switches/*/*/xprt_info`)
or `rpcctl xprt show`, the debugfs task list (`cat /sys/kernel/debug/sunrpc/rpc_clnt/*/tasks`, or the rpcdebug
dump in a kernel log), and `trace-cmd report` / `perf script` / tracefs lines of sunrpc:rpc_stats_latency and
nfs4:nfs4_sequence_done. Recognise them and read what they show. Pure.

The formats are module_utils/kernel_text's (one parser each); this module only reads them against
diagnosis/signals.py. A paste is one moment (or a few), not a window: a table full when it was pasted is a
figure consistent with the slots (weight 1), RPCs waiting for a session slot a crossed signal (weight 2, the
kernel queues them only when every slot is taken) unless the slots' holders wait for the socket or the reply.
"""

from __future__ import annotations

import re

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import rpc_latency, rpc_tasks, sunrpc_xprt
from ansible_collections.ckptio.nfs.plugins.module_utils.paste import text_figures as tf
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human, rates

KIND = "sunrpc_slots"
TAKEN_FOR = ("the RPC slot table (sysfs xprt_info or rpcctl, debugfs rpc_clnt tasks, sunrpc:rpc_stats_latency trace "
             "lines)")
CAN_SHOW = ("how full the transport's slot table was and its backlog, how many RPCs waited for a session slot, to send "
            "or for the reply, and per-op percentiles of backlog, RTT and execute time")

_XPRT_INFO_MARK = re.compile(r"^[ \t]*max_num_slots=\d{1,9}[ \t]*$", re.M)
_RPCCTL_MARK = re.compile(r"^[ \t]+Congestion: cur \d{1,12}, win \d{1,12}, Slots: min \d{1,9}, max \d{1,9}", re.M)
_TASK_MARK = re.compile(r" a:\S{1,128}(?: \[\w{1,64}\])? q:[A-Za-z_ ]{1,64}$", re.M)
_TRACE_MARK = re.compile(r"(?:rpc_stats_latency|nfs4_sequence_done): ")
QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))


def recognise(text):
    """True when an xprt_info, an rpcctl transport, a task line or a latency trace line is anywhere in the text."""
    return bool(_XPRT_INFO_MARK.search(text) or _RPCCTL_MARK.search(text) or _TASK_MARK.search(text)
                or _TRACE_MARK.search(text))


def read(text):
    """Findings: each transport's table, the tasks by queue, the latencies per op."""
    findings = []
    _transports(findings, text)
    _tasks(findings, text)
    _latencies(findings, text)
    return findings


def _xprt_blocks(text):
    """[(XprtInfo, first line number)] of xprt_info texts: a block is the lines from one last_used= (or the first
    field) to the next."""
    blocks, current, start = [], [], None
    for number, line in tf.lines(text):
        if line.strip().startswith("last_used=") and current:
            blocks.append(("\n".join(current), start))
            current, start = [], None
        if "=" in line and line.strip().split("=", 1)[0] in sunrpc_xprt.NUMBER_FIELDS + ("dst_port",):
            current.append(line.strip())
            start = start or number
    if current:
        blocks.append(("\n".join(current), start))
    found = [(sunrpc_xprt.parse_xprt_info(block), line) for block, line in blocks]
    return [(info, line) for info, line in found if info is not None and info.max_num_slots is not None]


def _transports(findings, text):
    infos = _xprt_blocks(text) + [(info, None) for info, _address in sunrpc_xprt.parse_rpcctl(text)]
    if not infos:
        return
    full = [info for info, _line in infos if info.full]
    share = len(full) / len(infos)
    many = signals.SLOT_SAMPLES_MIN.crossed(len(infos))
    crossed = signals.SLOT_TABLE_FULL_SHARE.crossed(share)
    worst = max(infos, key=lambda item: ((item[0].backlog_q_len or 0), item[0].num_reqs or 0))
    info, line = worst
    findings.append(tf.finding(
        "client_rpc_slots", "transport slot table full (sysfs xprt_info num_reqs vs max_num_slots, backlog_q_len)", share,
        "%d of %d transport read(s) full; the busiest: %s of %s slots in use, %s waiting for a slot (backlog), %s to send, "
        "%s for the reply%s" % (len(full), len(infos), human.number(info.num_reqs), human.number(info.max_num_slots),
                                human.number(info.backlog_q_len), human.number(info.sending_q_len),
                                human.number(info.pending_q_len),
                                "" if many else "; one moment, not a window: read it again during the checkpoint"),
        line, tf.threshold_text(signals.SLOT_TABLE_FULL_SHARE), crossed, (2 if many else 1) if crossed else 0))


def _tasks(findings, text):
    tasks = [(number, task) for number, task in ((number, rpc_tasks.parse_task_line(line)) for number, line in tf.lines(text))
             if task is not None]
    if not tasks:
        return
    counts = {}
    for _number, task in tasks:
        counts[task.queue] = counts.get(task.queue, 0) + 1
    waiters = counts.get(rpc_tasks.SESSION_SLOT_QUEUE, 0) + counts.get(rpc_tasks.TRANSPORT_SLOT_QUEUE, 0)
    holding = [task for _number, task in tasks if task.xid and task.queue not in (rpc_tasks.SESSION_SLOT_QUEUE,
                                                                                  rpc_tasks.TRANSPORT_SLOT_QUEUE)]
    sending = sum(1 for task in holding if task.queue == rpc_tasks.SENDING_QUEUE)
    pending = sum(1 for task in holding if task.queue == rpc_tasks.PENDING_QUEUE)
    send_share = sending / len(holding) if holding else None
    reply_share = pending / len(holding) if holding else None
    held_elsewhere = signals.SEND_WAIT_SHARE.crossed(send_share) or signals.REPLY_WAIT_SHARE.crossed(reply_share)
    crossed = signals.SESSION_SLOT_WAITERS.crossed(waiters)
    first = tasks[0][0]
    queues = ", ".join("%d running" % count if queue == rpc_tasks.NOT_QUEUED else "%d for %s" % (
        count, rpc_tasks.WAITS_FOR.get(queue, "the queue " + queue)) for queue, count in sorted(counts.items(), key=lambda item: -item[1]))
    findings.append(tf.finding(
        "client_rpc_slots", "RPCs waiting for a slot (debugfs tasks on 'ForeChannel Slot table' or xprt_backlog)", waiters,
        "%d task(s): %s; %d hold a slot (an xid)" % (len(tasks), queues, len(holding)), first,
        tf.threshold_text(signals.SESSION_SLOT_WAITERS), crossed, (1 if held_elsewhere else 2) if crossed else 0))
    if holding and signals.SEND_WAIT_SHARE.crossed(send_share):
        stuck = sum(1 for task in holding if task.queue == rpc_tasks.SENDING_QUEUE and task.status < 0)
        findings.append(tf.finding(
            "network", "RPCs holding a slot that wait to be sent (xprt_sending)", send_share,
            "%d of the %d RPCs holding a slot wait for the socket%s: the transport holds the slots, not the table's size" % (
                sending, len(holding), ", %d with an error status (a reconnect)" % stuck if stuck else ""),
            first, tf.threshold_text(signals.SEND_WAIT_SHARE), True, 2))
    if holding and signals.REPLY_WAIT_SHARE.crossed(reply_share):
        findings.append(tf.finding(
            "server_storage", "RPCs holding a slot that wait for the reply (xprt_pending)", reply_share,
            "%d of the %d RPCs holding a slot wait for the server's reply: a larger table would queue at the server" % (
                pending, len(holding)), first, tf.threshold_text(signals.REPLY_WAIT_SHARE), True, 1))


def _latencies(findings, text):
    trace = rpc_latency.parse_trace(text)
    if trace.sequences:
        slots = max(sequence.highest_slotid for sequence in trace.sequences) + 1
        findings.append(tf.finding(
            None, "NFSv4.1 session slots the server grants (nfs4_sequence_done highest_slotid + 1)", slots,
            "%d SEQUENCE replies; the server's highest slot id %d" % (len(trace.sequences), slots - 1), None))
    by_op = {}
    for event in trace.latencies:
        by_op.setdefault(event.procedure, []).append(event)
    for op, events in sorted(by_op.items(), key=lambda item: -len(item[1]))[:4]:
        findings.append(_op_finding(op, events))


def _op_finding(op, events):
    parts = []
    for name in ("backlog", "rtt", "execute"):
        values = sorted(getattr(event, name + "_us") for event in events)
        parts.append("%s %s" % (name, "/".join(human.seconds(rates.nearest_rank(values, share) / 1e6) for _label, share in QUANTILES)))
    backlog_ms = sum(event.backlog_us for event in events) / 1000.0 / len(events)
    rtt_ms = sum(event.rtt_us for event in events) / 1000.0 / len(events)
    queued = signals.queue_dominates(backlog_ms, rtt_ms)
    return tf.finding(
        "client_rpc_slots", "%s backlog against RTT (rpc_stats_latency, mean)" % op, backlog_ms / rtt_ms if rtt_ms else None,
        "%d %s RPCs, p50/p90/p99: %s; mean backlog %s vs RTT %s (backlog: waiting for a slot and the socket)" % (
            len(events), op, ", ".join(parts), human.seconds(backlog_ms / 1000.0), human.seconds(rtt_ms / 1000.0)),
        None, ">= %s and >= %s ms (queue_to_rtt, queue_ms_floor)" % (
            human.number(signals.QUEUE_TO_RTT.threshold), human.number(signals.QUEUE_MS_FLOOR.threshold)),
        queued, 2 if queued and op == "WRITE" else (1 if queued else 0))
