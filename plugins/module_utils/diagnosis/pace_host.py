# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host that sets the pace: MLPerf's aggregate is every byte over (latest end - earliest
start), so the host whose ranks end last sets it for all. Pure logic on the canary's ranks
(on the controller's clock, bundle.canary_ranks) and per-host figures the diagnosis measured.

Scales to any host count: the slowest few are named with what differs about them, the rest are
counted.
"""

from __future__ import annotations

import statistics
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals

# A host whose ranks took this much longer than the median host's sets the pace (lab, one client
# shaped to 16 Mbit/s: 19.4 s against 10.6 s; an even run's hosts differ by a few per cent).
PACE_LAG_SHARE = signals.PACE_LAG_SHARE.threshold
PACE_LAG_FLOOR_SECONDS = signals.PACE_LAG_FLOOR_SECONDS.threshold
NAMED = 3
# What makes a figure "differ" from the other hosts' median.
CPU_DIFFERENCE = signals.PACE_CPU_DIFFERENCE.threshold
RATE_RATIO = signals.PACE_RATE_RATIO.threshold
SLOTS_RATIO = signals.PACE_SLOTS_RATIO.threshold
QUEUE_RATIO = signals.PACE_QUEUE_RATIO.threshold
LOSS_SHARE = signals.PACE_LOSS_SHARE.threshold


def host_seconds(ranks):
    """{host: seconds from the earliest start of any rank to the host's last rank end}; finished ranks only."""
    finished = [rank for rank in ranks if rank.get("error") is None and rank.get("start") is not None and rank.get("end") is not None]
    if not finished:
        return {}
    first = min(rank["start"] for rank in finished)
    ends = {}
    for rank in finished:
        ends[rank["host"]] = max(ends.get(rank["host"], rank["end"]), rank["end"])
    return dict((host, end - first) for host, end in ends.items())


def _median(values):
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else None


def _differences(host, others, facts):
    """Phrases for what differs on host against the median of the other hosts."""
    mine = facts.get(host) or {}
    rest = [facts.get(other) or {} for other in others]
    found = []

    def median_of(key):
        return _median([item.get(key) for item in rest])

    for key, label in (("nconnect", "nconnect"), ("wsize", "wsize")):
        theirs = median_of(key)
        if mine.get(key) is not None and theirs is not None and mine[key] != theirs:
            found.append("%s %s vs %s" % (label, _size(mine[key]) if key == "wsize" else mine[key],
                                          _size(theirs) if key == "wsize" else "%g" % theirs))
    loss, theirs = mine.get("retrans_share"), median_of("retrans_share")
    if loss is not None and loss >= LOSS_SHARE and loss > 2 * (theirs or 0):
        found.append("%.2f %% of segments retransmitted vs %.2f %%" % (100 * loss, 100 * (theirs or 0)))
    cpu, theirs = mine.get("cpu_busy"), median_of("cpu_busy")
    if cpu is not None and theirs is not None and abs(cpu - theirs) >= CPU_DIFFERENCE:
        found.append("CPU %.0f %% vs %.0f %%" % (100 * cpu, 100 * theirs))
    flight, theirs = mine.get("requests_in_flight"), median_of("requests_in_flight")
    if flight and theirs and theirs / flight >= SLOTS_RATIO:
        found.append("%.1f requests in flight vs %.1f" % (flight, theirs))
    queue, theirs = mine.get("write_queue_ms"), median_of("write_queue_ms")
    if queue and theirs and queue / theirs >= QUEUE_RATIO:
        found.append("WRITEs queued %.1f s vs %.1f s" % (queue / 1000.0, theirs / 1000.0))
    for path in _slow_paths(mine, rest):
        found.append(path["text"])
    site, theirs_sites = mine.get("dstate_site"), set(item.get("dstate_site") for item in rest)
    if site and site not in theirs_sites:
        found.append("ranks waited in %s" % site)
    return found


# What a host's path is measured by, against the other hosts': (fact, phrase, label in an action).
PATH_FIGURES = (("probe_bytes_per_second", "its path's TCP capacity (probe) %.2f MB/s vs %.2f", "TCP capacity (probe)"),
                ("link_bytes_per_second", "its link carried %.2f MB/s vs %.2f", "link traffic during its ranks"))


def _slow_paths(mine, rest):
    """Each figure of the host's own path RATE_RATIO or more below the other hosts' median: [{"fact", "label",
    "bytes_per_second", "others_bytes_per_second", "text"}], the probe first."""
    found = []
    for key, phrase, label in PATH_FIGURES:
        rate, theirs = mine.get(key), _median([item.get(key) for item in rest])
        if rate and theirs and theirs / rate >= RATE_RATIO:
            found.append({"fact": key, "label": label, "bytes_per_second": rate, "others_bytes_per_second": theirs,
                          "text": phrase % (rate / 1e6, theirs / 1e6)})
    return found


def slow_path(host, pace, facts):
    """The pace-setting host's own path when it is measured slower than the other hosts' (the first of
    _slow_paths), else None. pace: assess()'s result; facts: the per-host facts assess() was given."""
    if host not in facts:
        return None
    lagging = set(item["host"] for item in pace["pace"])
    rest = [item for other, item in facts.items() if other not in lagging]
    found = _slow_paths(facts[host], rest)
    return found[0] if found else None


def _size(value):
    return "%d KiB" % (int(value) // 1024)


def assess(ranks, facts):
    """{"measured", "hosts", "median_seconds", "pace": [{"host", "seconds", "lag_seconds", "differences"}], "lagging", "text"}.

    facts: {host: {"nconnect", "wsize", "retrans_share", "cpu_busy", "requests_in_flight", "write_queue_ms",
    "link_bytes_per_second", "probe_bytes_per_second", "dstate_site"}} (any may be missing: it is not compared).
    """
    seconds = host_seconds(ranks)
    if len(seconds) < 2:
        return {"measured": False, "hosts": len(seconds), "pace": [], "lagging": 0, "median_seconds": None,
                "text": None}
    # The median of every host but the slowest: with two hosts, the other one (a median with the
    # laggard in it would hide half its lag); with thousands, the median.
    median = statistics.median(sorted(seconds.values())[:-1])
    bound = max(median * (1 + PACE_LAG_SHARE), median + PACE_LAG_FLOOR_SECONDS)
    lagging = sorted((host for host, value in seconds.items() if value >= bound), key=lambda host: (-seconds[host], host))
    others = [host for host in seconds if host not in lagging]
    pace = [{"host": host, "seconds": round(seconds[host], 3), "lag_seconds": round(seconds[host] - median, 3),
             "differences": _differences(host, others, facts)} for host in lagging[:NAMED]]
    return {"measured": True, "hosts": len(seconds), "median_seconds": round(median, 3), "pace": pace, "lagging": len(lagging),
            "text": _text(pace, len(lagging), len(seconds), median)}


def screen_text(pace):
    """The pace sentence of an assess() result whose hosts' differences were shortened (headline.first_screen)."""
    return _text(pace["pace"], pace["lagging"], pace["hosts"], pace["median_seconds"])


def _text(pace, lagging, hosts, median):
    if not pace:
        return "pace: the %d hosts' ranks ended together (none %d %% after the median host's %.1f s)" % (
            hosts, 100 * PACE_LAG_SHARE, median)
    named = "; ".join("%s ended %.1f s after the median host (%.1f s vs %.1f s)%s" % (
        item["host"], item["lag_seconds"], item["seconds"], median,
        ": " + ", ".join(item["differences"]) if item["differences"] else ": nothing measured differs") for item in pace)
    if lagging == 1:
        return "pace set by " + named
    slowest = ", the slowest %d" % len(pace) if lagging > len(pace) else ""
    return "pace set by %d of %d hosts%s: %s" % (lagging, hosts, slowest, named)
