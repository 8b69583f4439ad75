# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Series from Prometheus as the rows the one engine reads (issue 48), pure: each client's (view, excluded, canary,
ClientEvidence) as diagnosis/client_row makes them from mountstats, each server's view as diagnosis/run._server_view
makes it from nfsd's files - so diagnosis.diagnose_run runs unchanged on them.

Hosts: the instance label without its port. A host with our per-mount series on the mount is a client, one with
the server families whose nfsd runs (threads, or calls in the window) a server. Every increase is the last point minus the first of the window (series.change);
a counter that went down, or a mount age that fell (a remount), excludes the client as mountstats_delta would
(problems reset / new_mount), never averaged over. What the series do not hold is left out of the row (no D-state
samples, no sunrpc settings, no probe) or, where the engine adds figures, 0 with the gap named in context.yml's
prometheus.not_in_series, which the diagnosis's capture-window row quotes.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.client_evidence import ClientEvidence
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import host_evidence
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.stats_delta import nfsd_delta, pool_stats_delta
from ansible_collections.ckptio.nfs.plugins.module_utils.prometheus import series as prom_series
from ansible_collections.ckptio.nfs.plugins.module_utils.prometheus.queries import host_of
from ansible_collections.ckptio.nfs.plugins.module_utils.telemetry import exposition

MEASURED_OVER = "node_exporter's series from Prometheus over the window"
# The collector's own run time, per host (telemetry/exposition.py's name): what a scrape's collector values are of.
RUN_SERIES = "collector_last_run"
GRID_ROUNDING = 0.001
POOL_COLUMNS = (("packets", "packets-arrived"), ("enqueued", "sockets-enqueued"), ("woken", "threads-woken"))


def by_host(answer):
    """{host: [Series]} of one answer."""
    hosts = {}
    for one in answer or ():
        instance = one.labels.get("instance")
        if instance:
            hosts.setdefault(host_of(instance), []).append(one)
    return hosts


def grouped(answers):
    """{host: {name: [Series]}} of every answer ({name: [Series]}), grouped in one pass."""
    hosts = {}
    for name, found in answers.items():
        for host, series in by_host(found).items():
            hosts.setdefault(host, {})[name] = series
    return hosts


class _Host:
    """One host's series of every answer, and what they did over the window [start, end].

    The collector's families (client_*, server_*) are read on its runs: each grid point's value is the one the
    collector wrote at the run its collector_last_run value names (one node_exporter scrape gives both), so the
    value at the window's start is that of the newest run at or before it, the value at its end that of the oldest
    run at or after it (none in the answers: the newest run, said in edges()["end_missing"]). Without a
    collector_last_run series (an older collector), and for node_exporter's own families (read at the scrape),
    the grid points inside the window are taken, as before the answers had margins."""

    def __init__(self, host, answers, window=None, series=None):
        self.host = host
        # series: this host's {name: [Series]} of grouped(answers), when the caller grouped them once for every host.
        self.series = series if series is not None else grouped(answers).get(host, {})
        self.resets = []
        self.window = window
        found = self.series.get(RUN_SERIES) or []
        runs = dict(found[0].points) if found and found[0].points and window is not None else {}
        self.run_at = runs
        self._edges = _run_edges(sorted(set(runs.values())), window) if runs else None

    def edges(self):
        """{measured_by, start_run_at, end_run_at, before_start_seconds, after_end_seconds, start_missing, end_missing}
        of the collector's runs around the window; measured_by "grid" (the grid points inside) without runs."""
        if self._edges is not None:
            return dict(self._edges)
        points = [point[0] for one in self.series.get("client_bytes", ()) for point in self.inside(one.points)]
        return {"measured_by": "grid", "start_run_at": min(points) if points else None, "end_run_at": max(points) if points else None,
                "before_start_seconds": None, "after_end_seconds": None, "start_missing": False, "end_missing": False}

    def inside(self, points):
        if self.window is None:
            return points
        # Prometheus answers with times in whole milliseconds: a grid point at the window's edge may lie below it.
        return prom_series.within(points, self.window[0] - GRID_ROUNDING, self.window[1] + GRID_ROUNDING)

    def span(self, one):
        """The points a series is read on over the window: (run time, value) from the start run to the end run for
        the collector's families with runs, else the grid points inside the window."""
        if self._edges is None or one.query.startswith("node_") or one.query == RUN_SERIES:
            return self.inside(one.points)
        first, last = self._edges["start_run_at"], self._edges["end_run_at"]
        points, seen = [], set()
        for at, value in one.points:
            run = self.run_at.get(at)
            if run is not None and first <= run <= last and run not in seen:
                seen.add(run)
                points.append((run, value))
        return tuple(points)

    def pick(self, name, **labels):
        return [one for one in self.series.get(name, ()) if all(one.labels.get(key) == value for key, value in labels.items())]

    def increase(self, name, **labels):
        """Summed increase of the matching counters, None without a series; a reset is noted and counts None."""
        total = None
        for one in self.pick(name, **labels):
            moved = prom_series.change(self.span(one))
            if moved is None:
                continue
            if moved.reset:
                self.resets.append("%s%s went down inside the window" % (name, _labels_text(one.labels)))
                return None
            total = (total or 0.0) + moved.increase
        return total

    def last(self, name, **labels):
        values = [points[-1][1] for points in (self.span(one) for one in self.pick(name, **labels)) if points]
        return max(values) if values else None

    def first(self, name, **labels):
        values = [points[0][1] for points in (self.span(one) for one in self.pick(name, **labels)) if points]
        return max(values) if values else None

    def seconds(self):
        """The seconds node_exporter's counters were read over: the grid points inside the window."""
        times = [point[0] for found in self.series.values() for one in found for point in self.inside(one.points)]
        return max(times) - min(times) if times else 0.0


def _run_edges(runs, window):
    """The collector's runs bracketing window (start, end): the newest at or before start, the oldest at or after end."""
    start, end = window
    before = [run for run in runs if run <= start]
    after = [run for run in runs if run >= end]
    first = before[-1] if before else runs[0]
    last = after[0] if after else runs[-1]
    return {"measured_by": "collector runs", "start_run_at": first, "end_run_at": last,
            "before_start_seconds": start - first, "after_end_seconds": last - end,
            "start_missing": not before, "end_missing": not after}


def _labels_text(labels):
    shown = dict((key, value) for key, value in labels.items() if key not in ("__name__", "job"))
    return "{%s}" % ",".join("%s=%s" % item for item in sorted(shown.items()))


def _int(value):
    return int(round(value)) if value is not None else 0


def _op(one, name):
    ops = one.increase("client_requests", op=name)
    if not ops:
        return None
    times = dict((key, one.increase("client_%s" % key, op=name)) for key in ("queue", "rtt", "execute"))
    per_op = dict((key, 1000.0 * value / ops if value is not None else 0.0) for key, value in times.items())
    # The series hold no per-op timeouts, errors or bytes on the wire: unmeasured (None), never 0 - the totals
    # (diagnosis/run._add_op) stay None and diagnosis.json says null.
    return {"ops": _int(ops), "retrans": 0, "timeouts": None, "errors": None, "bytes_sent": None,
            "avg_rtt_ms": per_op["rtt"], "avg_exe_ms": per_op["execute"], "avg_queue_ms": per_op["queue"]}


def _info(one):
    found = one.series.get("client_info") or []
    return found[-1].labels if found else {}


def _excluded(host, info, mount_point, problem, details):
    return {"host": host, "mount_point": mount_point, "device": info.get("export"), "problems": [problem], "problem_details": details}


def client_view(one, mount_point):
    """(view, excluded) of one client's series on the mount: excluded on a remount (age fell), a reset or no write counter."""
    info = _info(one)
    ages = one.pick("client_age")
    if any(prom_series.fell(one.span(age)) for age in ages):
        return None, _excluded(one.host, info, mount_point, "new_mount",
                               ["%s fell inside the window: the mount was made again, its counters restarted" % "mount age"])
    written = one.increase("client_bytes", direction="write")
    read = one.increase("client_bytes", direction="read")
    ops = dict((name, _op(one, name)) for name in exposition.CHECKPOINT_OPS)
    rpc_counts = dict((key, one.increase("client_%s" % key)) for key in ("sends", "slots_used", "backlog_used", "retransmits"))
    if one.resets:
        return None, _excluded(one.host, info, mount_point, "reset", one.resets)
    if written is None:
        return None, _excluded(one.host, info, mount_point, "truncated", ["no write bytes series with two points on the mount in the window"])
    interval = _interval(one, ages[0] if ages else None)
    ops = dict((name, op) for name, op in ops.items() if op)
    if "WRITE" in ops:
        # The series count retransmits per mount, not per op: during a checkpoint they are the WRITEs'.
        ops["WRITE"]["retrans"] = _int(rpc_counts["retransmits"])
    return {"host": one.host, "delta": _delta(one, info, mount_point, interval, written, read, ops, rpc_counts),
            "sunrpc": {}, "dstate": None}, None


def _interval(one, age):
    """The seconds a client's bytes are divided by: the window itself when the collector's runs bracket it (its edge
    runs are said in the delta's edges), else the mount age's rise between the grid points inside (an older collector)."""
    if one.edges()["measured_by"] == "collector runs":
        return one.window[1] - one.window[0]
    points = one.span(age) if age is not None else ()
    return (points[-1][1] - points[0][1]) if len(points) > 1 else one.seconds()


def _delta(one, info, mount_point, interval, written, read, ops, counts):
    sends = _int(counts["sends"])
    high = one.last("client_slots_high_water")
    transports = _int(one.last("client_transports")) or 1
    version = info.get("vers") or "unknown"
    rpc = {"sends": sends, "recvs": sends, "req_u": _int(counts["slots_used"]), "bklog_u": _int(counts["backlog_used"]),
           "sending_u": 0, "pending_u": 0, "connect_count": None, "bind_count": 0, "bad_xids": 0, "transports": transports,
           "protocols": [info.get("proto") or "tcp"], "max_slots": [_int(high)] if high is not None else [],
           "max_slots_before": [_int(one.first("client_slots_high_water"))] if high is not None else [],
           "max_slots_reached": _int(high) if high is not None else None, "reopen_connects": 0,
           "backlog_per_send": counts["backlog_used"] / sends if sends and counts["backlog_used"] is not None else 0.0,
           "slots_in_use_per_send": counts["slots_used"] / sends if sends and counts["slots_used"] is not None else 0.0,
           "sending_per_send": 0.0, "pending_per_send": 0.0}
    rpc["backlog_per_send_per_transport"] = [rpc["backlog_per_send"] / transports]
    seconds = interval if interval > 0 else None
    return {"device": info.get("export"), "mount_point": mount_point, "fstype": "nfs4" if version.startswith("4") else "nfs",
            "nfs_version": version, "nconnect": _int(float(info["nconnect"])) if info.get("nconnect") else None,
            "wsize": _int(float(info["wsize"])) if info.get("wsize") else None, "rsize": _int(float(info["rsize"])) if info.get("rsize") else None,
            "proto": info.get("proto"), "opts": {}, "interval_seconds": interval,
            "bytes": {"serverwritebytes": _int(written), "serverreadbytes": _int(read)},
            "write_bytes": _int(written), "read_bytes": _int(read),
            "write_mb_per_second": written / 1e6 / seconds if seconds else 0.0,
            "read_mb_per_second": (read or 0.0) / 1e6 / seconds if seconds else 0.0,
            # The ops the series count (exposition.CHECKPOINT_OPS): no other op was measured, so none is 0 (metadata_storm).
            "ops_counted": list(exposition.CHECKPOINT_OPS),
            "rpc": rpc, "ops": ops, "truncated": False, "reset": False, "new_mount": False, "negative_time": False,
            "usable": True, "problems": [], "problem_details": [], "edges": one.edges()}


def _cpu_counts(one, at):
    """parse_proc_stat()'s shape of node_cpu_seconds_total at the window's first (at 0) or last (-1) point, in seconds."""
    cpus = {}
    for found in one.pick("node_cpu"):
        mode, cpu = found.labels.get("mode"), found.labels.get("cpu")
        points = one.span(found)
        if mode in host_evidence.CPU_STATES and cpu is not None and points:
            cpus.setdefault("cpu%s" % cpu, dict((state, 0.0) for state in host_evidence.CPU_STATES))[mode] = points[at][1]
    total = dict((state, sum(counts[state] for counts in cpus.values())) for state in host_evidence.CPU_STATES) if cpus else None
    return {"cpu": total, "cpus": cpus}


def _cpu(one):
    if not one.pick("node_cpu"):
        return None
    window = host_evidence.cpu_window_counts(_cpu_counts(one, 0), _cpu_counts(one, -1))
    return (window, one.seconds(), MEASURED_OVER) if window is not None else None


def _busiest_link(one):
    """The link row of the interface that moved the most bytes in the window (the NFS path during a checkpoint), or ()."""
    best = None
    for found in one.pick("node_tx") + one.pick("node_rx"):
        device = found.labels.get("device")
        if device and device != "lo":
            moved = prom_series.change(one.span(found))
            if moved is not None and not moved.reset and (best is None or moved.increase > best[1]):
                best = (device, moved.increase)
    if best is None:
        return ()
    device = best[0]
    tx, rx = one.increase("node_tx", device=device), one.increase("node_rx", device=device)
    speed = one.last("node_speed", device=device)
    seconds = one.seconds()
    speed_mbps = speed * 8 / 1e6 if speed and speed > 0 else None
    row = {"interface": device, "kind": None, "members": [], "operstate": None, "mtu": None, "speed_mbps": speed_mbps,
           "speed_source": "node_network_speed_bytes" if speed_mbps else "no node_network_speed_bytes for %s" % device,
           "window_seconds": seconds, "reset": tx is None or rx is None, "tx_bytes": tx, "rx_bytes": rx,
           "dropped": None, "errors": None, "loss_counters": None, "utilisation": None, "utilisation_during": None,
           "busy_seconds": None, "host": one.host, "side": "client",
           "measured_over": MEASURED_OVER + " (the interface that moved the most bytes)"}
    if not row["reset"] and seconds > 0:
        moved = max(tx, rx)
        row["bytes_per_second"] = moved / seconds
        if speed_mbps:
            row["utilisation"] = row["utilisation_during"] = moved / (speed_mbps * 1e6 / 8 * seconds)
            row["busy_seconds"] = seconds
    return (row,)


def _tcp(one):
    counters, missing = {}, []
    for key, name in (("node_retrans", "RetransSegs"), ("node_outsegs", "OutSegs"), ("node_timeouts", "TCPTimeouts")):
        moved = [prom_series.change(one.span(found)) for found in one.pick(key)]
        moved = [change for change in moved if change is not None]
        if moved:
            counters[name] = None if any(change.reset for change in moved) else sum(change.increase for change in moved)
        else:
            missing.append(name)
    if not counters:
        return {"measured": False, "why": "no node_netstat_Tcp series for this host in Prometheus"}
    reset = any(value is None for value in counters.values())
    seconds = one.seconds()
    window = {"measured": True, "reset": reset, "seconds": seconds, "counters": counters, "missing": missing,
              "segments": counters.get("OutSegs"), "retrans_share": None, "timeouts_per_second": None}
    if not reset and counters.get("OutSegs") and "RetransSegs" in counters:
        window["retrans_share"] = counters["RetransSegs"] / float(counters["OutSegs"])
    if not reset and seconds > 0 and "TCPTimeouts" in counters:
        window["timeouts_per_second"] = counters["TCPTimeouts"] / float(seconds)
    return window


def write_span(one):
    """(start, end) of the steps in which this client's write bytes rose, None without: the collector's run times around
    them when its runs are in the answers (a run's value is of its own time, not the scrape's), else grid points.

    The pace-setting host's rule (diagnosis/pace_host.py: the host whose writing ends last sets the pace) is read on
    these spans in place of a canary's ranks: one span a client, its edges on the step grid. A counter that rose in
    one step only was not seen writing (its samples bracket the writes, they do not place their end): None, and
    the pace is then not measured rather than read off the samples' own times. Nor is a span whose first or last
    rising step (the resolution of its start or end: the runs around it) is wider than signals.EDGE_WIDEN_SHARE of
    it (lab healthy: a client's collector did not run for 51 s around its last writes)."""
    steps = []
    for found in one.pick("client_bytes", direction="write"):
        points = one.span(found)
        steps += [(t0, t1) for (t0, v0), (t1, v1) in zip(points, points[1:]) if v1 > v0]
    if len(set(value for step in steps for value in step)) < 3:
        return None
    first, last = min(steps), max(steps, key=lambda step: step[1])
    span = last[1] - first[0]
    if signals.EDGE_WIDEN_SHARE.crossed(max(first[1] - first[0], last[1] - last[0]) / span):
        return None
    return first[0], last[1]


def _span_block(one):
    """The canary block the run keeps (client_row._kept_canary's shape) holding the client's write span as its one rank."""
    span = write_span(one)
    if span is None:
        return None
    measured_as = "write span between the collector's runs" if one.edges()["measured_by"] == "collector runs" else "write span on the step grid"
    return {"ranks": [{"rank": 0, "start": span[0], "end": span[1], "error": None, "measured_as": measured_as}],
            "clock": None, "harness": None}


def client_row(one, mount_point):
    """client_row.client_row's (view, excluded, canary, ClientEvidence) of one client's series."""
    view, excluded = client_view(one, mount_point)
    if excluded is not None:
        return None, excluded, None, None
    evidence = ClientEvidence(_cpu(one), _busiest_link(one), (), _tcp(one), MEASURED_OVER, None)
    return view, None, _span_block(one), evidence


def _nfsd_parsed(one, at):
    """parse_nfsd_stats()'s shape of the server series at the window's first (0) or last (-1) point."""
    def value(name, **labels):
        found = [points[at][1] for points in (one.span(series) for series in one.pick(name, **labels)) if points]
        return _int(found[0]) if found else None
    io = dict((key, value("server_io", direction=direction)) for key, direction in (("bytes_read", "read"), ("bytes_written", "write")))
    parsed = {"io": dict((key, number) for key, number in io.items() if number is not None)}
    if value("server_calls") is not None:
        parsed["rpc"] = {"calls": value("server_calls")}
    parsed["threads"] = value("server_threads")
    columns = [(column, value("server_%s" % key)) for key, column in POOL_COLUMNS]
    columns = [(column, number) for column, number in columns if number is not None]
    pool = {"columns": ["pool"] + [column for column, _number in columns], "pools": [dict(columns, pool=0)]} if columns else None
    return parsed, pool


# parse_diskstats()'s fields of node_exporter's node_disk_* counters: (query, field, scale to the kernel's unit).
DISK_FIELDS = (("node_disk_reads", "reads", 1), ("node_disk_read", "sectors_read", 1 / 512.0), ("node_disk_writes", "writes", 1),
               ("node_disk_written", "sectors_written", 1 / 512.0), ("node_disk_write_time", "write_ms", 1000),
               ("node_disk_io", "io_ticks_ms", 1000))


def _disk_counts(one, at):
    """parse_diskstats()'s shape of the node_disk_* series at the window's first (0) or last (-1) point."""
    disks = {}
    for key, field, scale in DISK_FIELDS:
        for found in one.pick(key):
            device = found.labels.get("device")
            points = one.span(found)
            if device and points:
                disks.setdefault(device, {})[field] = _int(points[at][1] * scale)
    return dict((device, fields) for device, fields in disks.items() if len(fields) == len(DISK_FIELDS))


def _disks(one):
    if not one.pick("node_disk_io"):
        return None
    seconds = one.seconds()
    return seconds, host_evidence.disk_window_counts(_disk_counts(one, 0), _disk_counts(one, -1), seconds)


def server_view(one):
    """run._server_view's view of one server's series: nfsd and pool deltas by the one arithmetic (stats_delta), no host samples."""
    after, pool_after = _nfsd_parsed(one, -1)
    before, pool_before = _nfsd_parsed(one, 0)
    view = {"host": one.host, "nfsd": nfsd_delta(after, before), "pool": None, "threads": after.get("threads"),
            "host_before": None, "host_after": None, "host_start": None, "host_end": None, "kernel_release": None,
            # CPU and disks by the one arithmetic of host samples (host_evidence), read by diagnosis/cpu.py and server.py.
            "figures": {"cpu": _cpu(one), "disks": _disks(one)}}
    if pool_after is not None:
        view["pool"] = pool_stats_delta(pool_after, pool_before)
    return view


class _Hosts(Mapping):
    """{host: value} over the hosts some of whose answers' names start with prefix, the answers grouped by host once
    (a _Host of each host reads its own series, not every answer again); iterated as the hosts, like
    host/bundle_reader's HostFiles."""

    def __init__(self, answers, prefix, window=None):
        self._window = window
        self._series = grouped(answers)
        self._hosts = sorted(host for host, series in self._series.items() if any(name.startswith(prefix) for name in series))

    def _host(self, host):
        return _Host(host, None, self._window, self._series[host])

    def __getitem__(self, host):
        if host not in self._hosts:
            raise KeyError(host)
        return self._value(host)

    def __iter__(self):
        return iter(self._hosts)

    def __len__(self):
        return len(self._hosts)


class ClientRows(_Hosts):
    """{host: client_row} for diagnosis/run.py (row(host))."""

    def __init__(self, answers, mount_point, window=None):
        super().__init__(answers, "client_", window)
        self._mount_point = mount_point

    def row(self, host):
        return client_row(self._host(host), self._mount_point)

    _value = row


def serving(one):
    """Whether a host with the server families is an NFS server in the window: nfsd threads running or calls received.
    The collector exports them wherever /proc/fs/nfsd is (a client with the nfsd module loaded: 0 threads, no calls,
    measured on the lab's clients): such a host is no server, and its CPU is no server's."""
    return bool(one.last("server_threads")) or bool(one.increase("server_calls"))


class ServerViews(_Hosts):
    """{host: server_view} of every host with the server families whose nfsd serves, for diagnosis/run.py (view(host))."""

    def __init__(self, answers, window=None):
        super().__init__(answers, "server_", window)
        self._hosts = [host for host in self._hosts if serving(self._host(host))]

    def view(self, host):
        return server_view(self._host(host))

    _value = view


def window_of(context):
    """(start, end) of context.yml's prometheus.window, None when it does not say both."""
    window = (context.get("prometheus") or {}).get("window") if isinstance(context.get("prometheus"), dict) else None
    if not isinstance(window, dict):
        return None
    try:
        return float(window["start_at"]), float(window["end_at"])
    except (KeyError, TypeError, ValueError):
        return None
