# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a verdict from Prometheus asks for (issue 48), pure: the selectors, the window, the checkpoints found as
write bursts, and the `prometheus` block of the bundle's context.yml.

Raw selectors only (no rate(), no increase()): Prometheus returns the samples on the step grid and Python takes
the increases (series.change), so a counter reset or a remount is seen and flagged, never extrapolated over.
Our families are exposition.py's names; node_exporter's are its standard ones (CPU, links, TCP loss, disks).
"""

from __future__ import annotations

import math
import re

from ansible_collections.ckptio.nfs.plugins.module_utils.telemetry import exposition
from ansible_collections.ckptio.nfs.plugins.module_utils.prometheus import series as prom_series

SOURCE = "prometheus"
RESPONSES_DIR = "prometheus"
DEFAULT_STEP = 15.0
DEFAULT_RANGE = 6 * 3600.0
# At most this many points a series in one answer: Prometheus itself refuses more than 11,000 per series.
MAX_STEPS = 11000
# A step is part of a write burst when the cluster wrote at least this share of its busiest step's bytes: a
# job's logs and metadata between checkpoints are far below it (a checkpoint smaller than this share of the
# biggest in the range is not found; give its window instead).
BURST_SHARE = 0.05
# Idle steps inside one burst: the textfile collector runs on its own timer, so a scrape may find the file it saw
# before while the writes go on (measured on the lab, 5 s collector and 5 s scrapes: single and double idle steps
# inside one 128 s checkpoint, and its last 10 MB published 12-30 s late by collectors starved of their one vCPU).
MERGE_GAP_STEPS = 3
MAX_LAST = 100
# Each window is asked with this margin on both sides (at least EDGE_MARGIN_STEPS steps): the collector's runs that
# bracket the window's edges lie outside it when the collector ran late (lab, 1-vCPU VMs: none on a client from 97 s
# before a checkpoint to 50 s into it).
EDGE_MARGIN_SECONDS = 60.0
EDGE_MARGIN_STEPS = 4

# node_exporter's own families (its default collectors cpu, netdev, netstat, diskstats), per host.
NODE = {
    "node_cpu": "node_cpu_seconds_total",
    "node_rx": "node_network_receive_bytes_total",
    "node_tx": "node_network_transmit_bytes_total",
    "node_speed": "node_network_speed_bytes",
    "node_retrans": "node_netstat_Tcp_RetransSegs",
    "node_outsegs": "node_netstat_Tcp_OutSegs",
    "node_timeouts": "node_netstat_TcpExt_TCPTimeouts",
    "node_disk_io": "node_disk_io_time_seconds_total",
    "node_disk_reads": "node_disk_reads_completed_total",
    "node_disk_read": "node_disk_read_bytes_total",
    "node_disk_writes": "node_disk_writes_completed_total",
    "node_disk_written": "node_disk_written_bytes_total",
    "node_disk_write_time": "node_disk_write_time_seconds_total",
}
CLIENT_KEYS = ("info", "bytes", "requests", "queue", "rtt", "execute", "retransmits", "sends", "slots_used", "backlog_used",
               "slots_high_water", "transports", "age", "slots_allocated", "slot_table_size", "backlog_queue")
SERVER_KEYS = ("threads", "packets", "enqueued", "woken", "io", "calls")
# What the series never hold, said in every diagnosis made from them (never assumed).
NOT_IN_SERIES = (
    "D-state samples of the writers", "the TCP probe (iperf3)", "per-op bytes, timeouts and errors",
    "ops other than WRITE, COMMIT and READ (no idle RTT)", "requests waiting to transmit (xprt sending_u)",
    "transport connects (xprt connect_count)", "the sunrpc slot table settings (sunrpc.txt)",
    "the clients' route to the server (the interface that moved the most bytes is taken)", "the server's links and TCP counters",
)


class QueryError(ValueError):
    """An option is wrong; the message names it."""


def quoted(value):
    """A PromQL string literal."""
    return '"%s"' % str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def client_selectors(mount_point):
    """[(name, selector)] of our per-mount families on mount_point."""
    return [("client_%s" % key, "%s{mountpoint=%s}" % (exposition.CLIENT[key].name, quoted(mount_point))) for key in CLIENT_KEYS]


def server_selectors():
    return [("server_%s" % key, exposition.SERVER[key].name) for key in SERVER_KEYS]


def node_selectors(instances):
    """[(name, selector)] of node_exporter's families on these instances only (a cluster's other hosts are not asked)."""
    match = "|".join(re.escape(instance) for instance in sorted(instances))
    return [(name, "%s{instance=~%s}" % (metric, quoted(match))) for name, metric in NODE.items()]


def run_selectors(instances):
    """[(name, selector)] of the collector's own run time on these instances: what a scrape's collector values are of."""
    match = "|".join(re.escape(instance) for instance in sorted(instances))
    return [("collector_last_run", "%s{instance=~%s}" % (exposition.COLLECTOR["last_run"].name, quoted(match)))]


def edge_margin(step):
    """Seconds asked before and after a window: max(EDGE_MARGIN_STEPS steps, EDGE_MARGIN_SECONDS), whole steps."""
    return step * math.ceil(max(EDGE_MARGIN_STEPS * step, EDGE_MARGIN_SECONDS) / step)


def burst_selector(mount_point):
    return "%s{mountpoint=%s,direction=\"write\"}" % (exposition.CLIENT["bytes"].name, quoted(mount_point))


def host_of(instance):
    """The host of an instance label: "nfs2:9100" -> "nfs2" ("[::1]:9100" -> "::1")."""
    if instance.startswith("["):
        return instance[1:].split("]", 1)[0]
    return instance.rsplit(":", 1)[0] if instance.count(":") == 1 else instance


def _number(value, option):
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise QueryError("%s must be a number, got %r" % (option, value))
    if not math.isfinite(number):
        raise QueryError("%s must be a finite number, got %r" % (option, value))
    return number


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def duration(value, option):
    """Seconds of "90", 90, "15s", "5m", "6h" or "2d"; QueryError naming option."""
    text = str(value).strip()
    if text[-1:] in _UNITS:
        seconds = _number(text[:-1], option) * _UNITS[text[-1]]
    else:
        seconds = _number(text, option)
    if seconds <= 0:
        raise QueryError("%s must be more than 0 seconds, got %r" % (option, value))
    return seconds


def grid(start, end, step):
    """The step grid's (start, end): start as given, end the last step at or before it; QueryError past MAX_STEPS."""
    steps = int((end - start) // step)
    if steps < 1:
        raise QueryError("the window (%g s) is shorter than one step (%g s): give a longer window or a smaller step"
                         % (end - start, step))
    if steps + 1 > MAX_STEPS:
        raise QueryError("the window holds %d steps of %g s, more than the %d Prometheus answers: give a larger step"
                         % (steps + 1, step, MAX_STEPS))
    return start, start + steps * step


def cluster_increases(answer):
    """[(t0, t1, bytes)] of the write-bytes series summed over hosts, step by step; a step in which a series went down
    (a remount or reset) counts that series' later value (what was written since it restarted)."""
    steps = {}
    for one in answer:
        for (t0, v0), (t1, v1) in zip(one.points, one.points[1:]):
            steps[(t0, t1)] = steps.get((t0, t1), 0.0) + (v1 - v0 if v1 >= v0 else v1)
    return sorted((t0, t1, moved) for (t0, t1), moved in steps.items())


def bursts(answer, share=BURST_SHARE, gap_steps=MERGE_GAP_STEPS):
    """[{start_at, end_at, bytes, steps, complete}] write bursts of the write-bytes answer: runs of steps that wrote at
    least share of the busiest step's bytes, with at most gap_steps idle steps inside; each burst's edges are grid
    points (the last point before it wrote and the first after). complete False: it began at the range's first point
    or still wrote at its last."""
    steps = cluster_increases(answer)
    peak = max([moved for _t0, _t1, moved in steps] or [0.0])
    if peak <= 0:
        return []
    found, current = [], None
    first, last = (steps[0][0], steps[-1][1])
    step = min(t1 - t0 for t0, t1, _moved in steps)
    for t0, t1, moved in steps:
        if moved >= share * peak:
            if current is not None and t0 - current["end_at"] <= gap_steps * step + step / 2:
                current.update(end_at=t1, bytes=current["bytes"] + moved, steps=current["steps"] + 1)
                continue
            current = {"start_at": t0, "end_at": t1, "bytes": moved, "steps": 1}
            found.append(current)
    for burst in found:
        burst["complete"] = burst["start_at"] > first and burst["end_at"] < last
    return found


def run_edged(burst, runs_answer):
    """The burst with its edges moved from grid points to the collector's runs (its run series' answer over the range):
    start_at the earliest host's run that the burst's first grid point holds (the newest before it wrote), end_at the
    latest host's run that its last grid point holds (the first holding its last bytes); the grid's edges kept as
    grid_start_at / grid_end_at, and resolution_seconds the widest gap between a start run and that host's next run
    (start) and between an end run and its previous one (end): the writes began and ended somewhere in those.
    Without run series (an older collector): the grid's edges, edges "grid"."""
    starts, ends, after, before = [], [], [], []
    for one in runs_answer:
        held = dict(one.points)
        runs = sorted(set(held.values()))
        first, last = held.get(burst["start_at"]), held.get(burst["end_at"])
        if first is None or last is None:
            continue
        starts.append(first)
        ends.append(last)
        later = [run for run in runs if run > first]
        earlier = [run for run in runs if run < last]
        after.append(later[0] - first if later else 0.0)
        before.append(last - earlier[-1] if earlier else 0.0)
    edged = dict(burst, grid_start_at=burst["start_at"], grid_end_at=burst["end_at"], edges="grid")
    if starts:
        edged.update(start_at=min(starts), end_at=max(ends), edges="collector runs",
                     resolution_seconds={"start": max(after), "end": max(before)})
    return edged


def last_bursts(answer, count):
    """The last `count` complete bursts, oldest first; QueryError when there are none."""
    complete = [burst for burst in bursts(answer) if burst["complete"]]
    if not complete:
        raise QueryError("no complete write burst of %s in the range: give ckptio_prometheus_start and _end instead"
                         % exposition.CLIENT["bytes"].name)
    return complete[-count:]


def window_block(start, end, step, kind, burst=None, rests_on=None):
    """context.yml prometheus.window: what the figures rest on, said once."""
    block = {"kind": kind, "start_at": start, "end_at": end, "seconds": end - start, "step": step,
             "rests_on": rests_on or ("points on a %g s grid around %s to %s, each the series' last sample at or before its time "
                                      "(Prometheus' lookback): the collector's values at the window's edges are those of its runs "
                                      "around them (edges), node_exporter's those of the grid points inside" % (step, start, end)),
             "margin_seconds": edge_margin(step),
             "edges": ("each host's collector values are of its collector's runs (%s, asked with the series %g s "
                       "before and after the window): the value at the start is the newest run's at or before it, the "
                       "one at the end the oldest run's at or after it, and the increase is divided by the window's "
                       "seconds; each client's edge runs are in diagnosis.json's clients (edges). node_exporter's own "
                       "counters (CPU, links, disks) are read on the grid points inside the window. Without the run "
                       "series (an older collector) the edges are the grid's" % (exposition.COLLECTOR["last_run"].name, edge_margin(step)))}
    if burst is not None and burst.get("edges") == "collector runs":
        block["burst"] = dict(burst)
        block["rests_on"] = ("a write burst of %s found on a %g s grid, its edges then moved to the collector's runs: the "
                             "newest run before the cluster wrote and the first run holding its last bytes (the writes began "
                             "up to %g s after the start and ended up to %g s before the end: the runs' gaps there)"
                             % (exposition.CLIENT["bytes"].name, step, burst["resolution_seconds"]["start"],
                                burst["resolution_seconds"]["end"]))
    elif burst is not None:
        block["burst"] = dict(burst)
        block["rests_on"] = ("a write burst of %s found on a %g s grid: its edges are the last point before the cluster "
                             "wrote and the first point after it stopped, so the window is up to %g s longer than the writes "
                             "(each point the series' last sample at or before its time)"
                             % (exposition.CLIENT["bytes"].name, step, 2 * step))
    return block


def context_document(url, mount_point, label, window, queries, target_bytes=None, target_seconds=None):
    """context.yml of a bundle from Prometheus: source prometheus, the window and every query with its file."""
    return {
        "source": SOURCE, "mount_point": mount_point, "label": label,
        "target": {"checkpoint_bytes": int(target_bytes) if target_bytes else None,
                   "window_seconds": float(target_seconds) if target_seconds else None},
        SOURCE: {"url": url, "window": window, "not_in_series": list(NOT_IN_SERIES),
                 "queries": [{"name": name, "selector": selector, "file": "%s/%s.json" % (RESPONSES_DIR, name)}
                             for name, selector in queries]},
    }


def instances(answers):
    """Every instance label in the answers ({name: [Series]})."""
    return sorted(set(one.labels.get("instance") for found in answers.values() for one in found if one.labels.get("instance")))


def parse_answers(texts):
    """{name: [Series]} of {name: answer text}."""
    return dict((name, prom_series.parse(text, name)) for name, text in texts.items())
