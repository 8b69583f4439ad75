# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checkpoint mounts' and the NFS server's figures as Prometheus text (node_exporter's textfile collector).

Pure: it takes what the collection's own parsers made of the kernel's files (kernel_text's
mountstats and nfsd_stats, the sunrpc sysfs slot figures) and returns the text of one .prom
file. The collector (host/metrics_collector.py) reads the files and writes the text atomically.

Why our own series and not node_exporter's mountstats collector (read from its code and issues):
it is off by default and exports 36 + 10 x nconnect + 9 x ops series per mount (160 transport
series alone at nconnect=16), its nconnect > 1 output broke scrapes for years (duplicate series,
prometheus/node_exporter#1804), and it has no slot cap, no current queue length and no session-slot
wait. Here every figure of a mount is summed over its transports, so a mount is at most
CLIENT_SERIES_PER_MOUNT series whatever nconnect is, and each series' HELP says what a bad value
points at (the layer the diagnosis would name).

The text follows the exposition format 0.0.4 (prometheus.io/docs/instrumenting/exposition_formats):
one HELP and one TYPE line per family, label values escaped (backslash, double quote, newline),
counters named *_total, seconds and bytes as base units.
"""

from __future__ import annotations

import math

PREFIX = "ckptio_nfs_"
# The ops whose requests a checkpoint is made of (a save writes and commits; a restore reads).
CHECKPOINT_OPS = ("WRITE", "COMMIT", "READ")
# The ceiling this file promises per mount (issue 48); test_exposition pins that the families
# below never exceed it, at any nconnect.
CLIENT_SERIES_PER_MOUNT = 30


class Family:
    """One metric family: name, type, HELP text, and the label names of its series."""

    __slots__ = ("name", "kind", "help", "labels")

    def __init__(self, name, kind, help_text, labels=()):
        self.name = PREFIX + name
        self.kind = kind
        self.help = help_text
        self.labels = labels


# ---------------------------------------------------------------- client families (per mount)
MOUNT_LABELS = ("mountpoint", "export")
CLIENT = {
    "info": Family(
        "client_mount_info", "gauge",
        "Always 1: the mount's NFS version, nconnect, transport protocol, rsize and wsize as labels (mountstats opts), "
        "to join on. A v4.1+ mount's slots are its session's (the server grants them); v3/v4.0's the sunrpc slot table.",
        MOUNT_LABELS + ("vers", "nconnect", "proto", "rsize", "wsize")),
    "bytes": Family(
        "client_bytes_total", "counter",
        "Bytes this mount sent in WRITEs (direction=write) or received in READs (direction=read) "
        "(mountstats serverwritebytes/serverreadbytes). rate() is the checkpoint throughput; far below "
        "the target while the link is idle is the bandwidth paradox: look at queue vs RTT.",
        MOUNT_LABELS + ("direction",)),
    "requests": Family(
        "client_requests_total", "counter",
        "RPC requests of this op completed (mountstats per-op ops). WRITE and COMMIT make a save, READ a restore.",
        MOUNT_LABELS + ("op",)),
    "queue": Family(
        "client_queue_seconds_total", "counter",
        "Seconds requests of this op waited in the client before being sent (mountstats queue). "
        "rate(queue)/rate(requests) above the RTT per request means the client's RPC slots limit: "
        "more slots (sunrpc slot table, v4.1 session slots, nconnect) - not the server.",
        MOUNT_LABELS + ("op",)),
    "rtt": Family(
        "client_rtt_seconds_total", "counter",
        "Seconds from sending a request of this op to its reply (mountstats rtt): the network and the server. "
        "Rising with retransmits points at the network; with idle links, at the server's threads or storage.",
        MOUNT_LABELS + ("op",)),
    "execute": Family(
        "client_execute_seconds_total", "counter",
        "Seconds from a request's creation to its completion (mountstats execute): queue + rtt + the client's own work.",
        MOUNT_LABELS + ("op",)),
    "retransmits": Family(
        "client_retransmits_total", "counter",
        "Requests sent again after a timeout or a lost connection, all ops (mountstats transmissions - ops). "
        "Any rise during a checkpoint points at the network path (loss, MTU) or a server that stopped answering.",
        MOUNT_LABELS),
    "sends": Family(
        "client_rpc_sends_total", "counter",
        "RPC requests sent on this mount's transports, all nconnect connections summed (mountstats xprt sends).",
        MOUNT_LABELS),
    "slots_used": Family(
        "client_rpc_slots_used_total", "counter",
        "Sum, over sends, of the requests in flight at each send (mountstats xprt req_u). "
        "rate(this)/rate(sends) is the average number of requests in flight; near the slot table's size "
        "the client's RPC slots limit.",
        MOUNT_LABELS),
    "backlog_used": Family(
        "client_rpc_backlog_used_total", "counter",
        "Sum, over sends, of the requests waiting for a slot at each send (mountstats xprt bklog_u). "
        "Rising means requests found the slot table full.",
        MOUNT_LABELS),
    "slots_high_water": Family(
        "client_rpc_slots_high_water", "gauge",
        "Most slots ever in use at once on one of this mount's transports since it connected (mountstats xprt "
        "max_slots): a high-water mark, not the cap. At 2 on NFSv4.1 the session's 2 slots were never exceeded.",
        MOUNT_LABELS),
    "transports": Family(
        "client_transports", "gauge",
        "Transports (TCP connections, nconnect) this mount's figures are summed over.",
        MOUNT_LABELS),
    "age": Family(
        "client_mount_age_seconds", "gauge",
        "Seconds since the mount was made (mountstats age): a smaller value than at the last scrape is a remount, "
        "and every counter of the mount started again.",
        MOUNT_LABELS),
    "slots_allocated": Family(
        "client_rpc_slots_allocated", "gauge",
        "Slots the transports of this mount's server have allocated now, summed (sunrpc sysfs xprt_info num_reqs; absent "
        "on kernels without /sys/kernel/sunrpc, such as 5.10). Not requests in flight: it grows with demand and never falls "
        "below min_num_slots (tcp_slot_table_entries), measured on 6.1 and 6.12 (docs/kernels.md). At slot_table_size "
        "with a backlog: the transport's table is full. On NFSv4.1+ the session's slots limit first: see session_slot_waiters.",
        MOUNT_LABELS),
    "slot_table_size": Family(
        "client_rpc_slot_table_size", "gauge",
        "Slots the transports of this mount's server may use now (sunrpc sysfs xprt_info max_num_slots, summed).",
        MOUNT_LABELS),
    "backlog_queue": Family(
        "client_rpc_backlog_queue_length", "gauge",
        "Requests waiting for a transport slot now (sunrpc sysfs xprt_info backlog_q_len, summed). Above 0 "
        "during a checkpoint: the client's slot table is the limit.",
        MOUNT_LABELS),
    "pending_queue": Family(
        "client_rpc_pending_queue_length", "gauge",
        "Requests sent and waiting for the server's reply now (sunrpc sysfs xprt_info pending_q_len, summed). "
        "Large while the backlog is empty: the server (threads or storage) is the limit.",
        MOUNT_LABELS),
    "session_waiters": Family(
        "client_session_slot_waiters", "gauge",
        "RPC tasks waiting for an NFSv4.1+ session slot now (debugfs sunrpc rpc_clnt tasks on the "
        "'ForeChannel Slot table' queue). Above 0 during a checkpoint: the session's slot count limits - "
        "raise the server's session slots (nfsd max_session_slots) or nconnect does not help.",
        MOUNT_LABELS),
}

# ---------------------------------------------------------------- server families
SERVER = {
    "threads": Family(
        "server_threads", "gauge",
        "nfsd threads running (/proc/fs/nfsd/threads). Few threads while sockets are enqueued: the server's threads limit."),
    "packets": Family(
        "server_packets_arrived_total", "counter",
        "Network packets that arrived for nfsd, all pools (/proc/fs/nfsd/pool_stats packets-arrived)."),
    "enqueued": Family(
        "server_sockets_enqueued_total", "counter",
        "Times a socket with work found no idle nfsd thread and was queued (pool_stats sockets-enqueued). "
        "rate(this)/rate(packets_arrived) is the share of arrivals that waited for a thread: high means more threads."),
    "woken": Family(
        "server_threads_woken_total", "counter",
        "Times an idle nfsd thread was woken for work (pool_stats threads-woken)."),
    "timedout": Family(
        "server_threads_timedout_total", "counter",
        "Times an nfsd thread timed out waiting for work (pool_stats threads-timedout; absent on 6.x kernels): "
        "rising means idle threads, so threads are not the limit."),
    "io": Family(
        "server_io_bytes_total", "counter",
        "Bytes nfsd wrote to (direction=write) or read from (direction=read) its filesystems (/proc/net/rpc/nfsd io).",
        ("direction",)),
    "calls": Family(
        "server_rpc_calls_total", "counter",
        "RPC calls nfsd received (/proc/net/rpc/nfsd rpc calls)."),
}

# ---------------------------------------------------------------- the collector's own
COLLECTOR = {
    "up": Family(
        "collector_source_up", "gauge",
        "1 when the collector read this source (mountstats, sunrpc_sysfs, debugfs_tasks, nfsd) at its last run, "
        "0 when it could not (its figures are then absent, not zero).",
        ("source",)),
    "last_run": Family(
        "collector_last_run_timestamp_seconds", "gauge",
        "When the collector last wrote this file (Unix seconds). Older than two intervals: the timer stopped."),
}


def escape_label(value):
    """A label value as the exposition format wants it: backslash, double quote and newline escaped.

    A mount point's bytes that are not UTF-8 (read with surrogateescape) become \\xNN: label
    values must be UTF-8, and one bad byte would fail the whole scrape.
    """
    text = str(value).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if value is None or math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _series(family, labels, value):
    if labels:
        inside = ",".join('%s="%s"' % (name, escape_label(labels[name])) for name in family.labels)
        return "%s{%s} %s" % (family.name, inside, _number(value))
    return "%s %s" % (family.name, _number(value))


def select_mounts(mounts, mount_points=None):
    """The NFS mounts to export, one per mount point: the last block of a mount point (the mount on
    top, which a path resolves to) - two series with the same labels would fail the whole scrape.

    mount_points: the checkpoint mounts asked for; None or empty: every NFS mount.
    """
    wanted = set(mount_points or ())
    chosen = {}
    for mount in mounts:
        if mount.is_nfs and (not wanted or mount.mount_point in wanted):
            chosen[mount.mount_point] = mount
    return [chosen[point] for point in sorted(chosen)]


def mount_samples(mount, slot_figures=None, session_waiters=None):
    """[(family key, labels dict, value)] for one parsed mountstats block (kernel_text.mountstats.MountStats).

    slot_figures: the live sunrpc sysfs figures of the mount's server's transports, summed
    ({"slots_allocated", "slot_table_size", "backlog_queue", "pending_queue"}), or None where the
    kernel has no /sys/kernel/sunrpc: those series are then left out, never written as 0.
    session_waiters: tasks on the session slot queue (debugfs), or None when not seen.
    """
    base = {"mountpoint": mount.mount_point, "export": mount.device}
    opts = mount.opts
    samples = [("info", dict(base, vers=mount.nfs_version, nconnect=mount.nconnect, proto=opts.get("proto") or "",
                             rsize=opts.get("rsize") or "", wsize=opts.get("wsize") or ""), 1)]
    byte_counts = mount.bytes
    for direction, name in (("write", "serverwritebytes"), ("read", "serverreadbytes")):
        if byte_counts.get(name) is not None:
            samples.append(("bytes", dict(base, direction=direction), byte_counts[name]))
    retransmits = 0
    for op_name, values in mount.ops.items():
        op = dict(zip(("ops", "transmissions"), values[:2]))
        if len(op) == 2:
            retransmits += max(0, op["transmissions"] - op["ops"])
    for op_name in CHECKPOINT_OPS:
        op = mount.op(op_name)
        if not op or op.get("ops") is None:
            continue
        labels = dict(base, op=op_name)
        samples.append(("requests", labels, op["ops"]))
        for key, field in (("queue", "queue_ms"), ("rtt", "rtt_ms"), ("execute", "execute_ms")):
            if op.get(field) is not None:
                samples.append((key, labels, op[field] / 1000.0))
    samples.append(("retransmits", base, retransmits))
    totals = mount.xprt_totals()
    if totals["transports"]:
        samples.append(("sends", base, totals["sends"]))
        samples.append(("slots_used", base, totals["req_u"]))
        samples.append(("backlog_used", base, totals["bklog_u"]))
        # An RDMA transport prints no max_slots (xprtrdma's xprt_rdma_print_stats): absent, not zero.
        if totals["max_slots"]:
            samples.append(("slots_high_water", base, max(totals["max_slots"])))
        samples.append(("transports", base, totals["transports"]))
    if mount.age is not None:
        samples.append(("age", base, mount.age))
    for key in ("slots_allocated", "slot_table_size", "backlog_queue", "pending_queue"):
        if slot_figures and slot_figures.get(key) is not None:
            samples.append((key, base, slot_figures[key]))
    if session_waiters is not None:
        samples.append(("session_waiters", base, session_waiters))
    return samples


def server_samples(nfsd_stats=None, pool_stats=None, threads=None):
    """[(family key, labels, value)] of one NFS server: parsed /proc/net/rpc/nfsd, pool_stats and threads.

    A source that is None (nfsd not running, an older kernel without a column) leaves its series out.
    """
    samples = []
    if threads is not None:
        samples.append(("threads", {}, threads))
    if pool_stats and pool_stats.get("pools"):
        for key, column in (("packets", "packets-arrived"), ("enqueued", "sockets-enqueued"),
                            ("woken", "threads-woken"), ("timedout", "threads-timedout")):
            if column in pool_stats.get("columns", ()):
                samples.append((key, {}, sum(pool.get(column, 0) for pool in pool_stats["pools"])))
    if nfsd_stats:
        io = nfsd_stats.get("io") or {}
        for direction, name in (("write", "bytes_written"), ("read", "bytes_read")):
            if io.get(name) is not None:
                samples.append(("io", {"direction": direction}, io[name]))
        rpc = nfsd_stats.get("rpc") or {}
        if rpc.get("calls") is not None:
            samples.append(("calls", {}, rpc["calls"]))
    return samples


def render(client=(), server=(), sources=None, now=None):
    """The .prom text: families in a fixed order, each with HELP and TYPE once, then its series.

    client, server: lists of (family key, labels, value) from mount_samples / server_samples.
    sources: {"mountstats": True, "sunrpc_sysfs": False, ...} for collector_source_up.
    now: Unix seconds of this run, for collector_last_run_timestamp_seconds.
    """
    collector = [("up", {"source": name}, bool(ok)) for name, ok in sorted((sources or {}).items())]
    if now is not None:
        collector.append(("last_run", {}, float(now)))
    lines = []
    for families, samples in ((CLIENT, client), (SERVER, server), (COLLECTOR, collector)):
        by_key = {}
        for key, labels, value in samples:
            by_key.setdefault(key, []).append((labels, value))
        for key, family in families.items():
            if key not in by_key:
                continue
            lines.append("# HELP %s %s" % (family.name, family.help.replace("\\", "\\\\").replace("\n", "\\n")))
            lines.append("# TYPE %s %s" % (family.name, family.kind))
            lines.extend(_series(family, labels, value) for labels, value in by_key[key])
    return "\n".join(lines) + ("\n" if lines else "")
