# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validation report: headline metrics of a capture bundle, before/after rows, Markdown.

Pure: the module (plugins/modules/checkpoint_report.py) loads the bundle, runs the diagnosis
(module_utils/diagnosis/) and passes the run and the diagnosis in: the per-op totals are the run's (over the
clients the diagnosis used), never summed again here. Nothing here parses /proc text.

Latency split: nfs-utils' "exe" is the time from the request's creation to its completion, so
it contains the queue wait and the RTT; the figure stacks queue, RTT and the remainder
(exe - queue - RTT: client-side work such as encoding and waking the caller).
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human, markdown_text, rates
from ansible_collections.ckptio.nfs.plugins.module_utils.report import report_headline

REPORT_OPS = ("WRITE", "COMMIT")
# Ops worth a bar in the latency figure beyond WRITE/COMMIT: the metadata ops of a checkpoint.
FIGURE_OPS = ("WRITE", "COMMIT", "OPEN", "CLOSE", "GETATTR", "LOOKUP", "SETATTR", "CREATE")
MB = 1e6


def _op_rows(run):
    """The run's per-op totals (diagnosis/run.py op_totals, over the clients the diagnosis used), rounded for the report."""
    rows = {}
    for name, total in ((run or {}).get("ops") or {}).items():
        if total["ops"] <= 0:
            continue
        rows[name] = {"ops": total["ops"], "avg_rtt_ms": round(total["avg_rtt_ms"], 3), "avg_exe_ms": round(total["avg_exe_ms"], 3),
                      "avg_queue_ms": round(total["avg_queue_ms"], 3)}
    return rows


def _backlog_per_send(run):
    figures = (run or {}).get("figures") or {}
    return round(figures["backlog_per_send"], 3) if figures.get("sends") else None


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _slot_cap(client_summary):
    """The cap that bounds requests in flight: session slots on v4.1+, the transport table before.

    NFSv4.1+ ignores tcp_max_slot_table_entries (NFS_CS_INFINITE_SLOTS, fs/nfs/nfs4client.c).
    """
    sunrpc = client_summary.get("sunrpc") or {}
    version = str(client_summary.get("nfs_version") or "")
    if version.startswith("4.") and version != "4.0":
        name = "max_session_slots"
    elif client_summary.get("proto") == "udp":
        name = "udp_slot_table_entries"
    else:
        name = "tcp_max_slot_table_entries"
    return _int(sunrpc.get(name)), name


def bundle_metrics(context, diagnosis=None, run=None, canary_ranks=None, label=None, harness=None):
    """Headline numbers of one bundle.

    context: context.yml; diagnosis: diagnosis.diagnose() result or None; run: the run the diagnosis
    read (diagnosis/run.py read_run: per-op totals over the clients it used) or None; canary_ranks: every rank result of
    every host on the controller's clock (canary.combine_hosts: dicts with host, rank, start, end,
    bytes, error, clock_offset_seconds) or None; harness: {host: the canary's `harness` block (its
    own CPU and the host's other CPU during the ranks)} or None.
    """
    context = context or {}
    diagnosis = diagnosis or {}
    target = context.get("target") or {}
    canary_context = context.get("canary") or {}
    window = target.get("window_seconds")
    # The diagnosis's figures (its run's); only a bundle it could not read (no usable statistics)
    # shows what context.yml says.
    if diagnosis:
        target_bps, achieved = diagnosis.get("target_bytes_per_second"), diagnosis.get("achieved_bytes_per_second")
    elif run:
        target_bps, achieved = run["target_bps"], run["achieved"]
    else:
        target_bps = rates.target_rate(target.get("checkpoint_bytes"), window)
        achieved = canary.context_throughput(canary_context)
    metrics = {"label": label or context.get("label")}
    metrics.update(_link_and_cpu_metrics(diagnosis))
    metrics.update({
        "unmeasured": diagnosis.get("unmeasured") or [],
        "mount_point": context.get("mount_point"),
        "target_bytes_per_second": target_bps,
        "target_checkpoint_bytes": target.get("checkpoint_bytes"),
        "achieved_bytes_per_second": achieved,
        "gap_factor": diagnosis.get("gap_factor"),
        "canary_seconds": canary_context.get("seconds"),
        "canary_bytes": canary_context.get("bytes"),
        "canary_layout": canary_context.get("shape") or canary_context.get("layout"),
        "canary_start_at": canary_context.get("start_at"),
        "canary_ranks": canary_context.get("ranks"),
        "window_seconds": window,
        "duration_vs_window": (float(canary_context["seconds"]) / float(window)
                               if canary_context.get("seconds") and window else None),
        "limiting_layer": diagnosis.get("limiting_layer"),
        "contributing": diagnosis.get("contributing") or [],
        "verdict": diagnosis.get("verdict"),
        "summary": diagnosis.get("summary"),
        "ops": _op_rows(run),
        "backlog_per_send": _backlog_per_send(run),
    })
    metrics.update(_host_metrics(diagnosis))
    metrics.update(restore_metrics(context, canary_ranks))
    if metrics.get("restore") is not None:
        # Measured by the diagnosis (serverreadbytes against the bytes read back), not the method's promise.
        metrics["restore"]["cold_cache"] = (diagnosis.get("restore") or {}).get("cold_cache")
    metrics.update(_capture_metrics(context, diagnosis))
    if canary_ranks is not None:
        metrics["canary_aggregate"] = canary.cluster_aggregate(canary_ranks, canary_context.get("start_at"))
        metrics["canary_hosts"] = host_rows(canary_ranks, harness)
        metrics["canary_host_summary"] = host_distribution(metrics["canary_hosts"],
                                                           metrics["canary_aggregate"].get("spread_bound_seconds"))
    # The first screen is the diagnosis's (CONTRACT 3); an older diagnosis.json gets one built from its fields.
    metrics["headline"] = report_headline.headline(diagnosis, metrics)
    metrics["first_screen"] = report_headline.first_screen(diagnosis, metrics["headline"])
    return metrics


def restore_metrics(context, canary_ranks=None):
    """{restore, restore_bytes_per_second} of a bundle: the read phase by the write's rule.

    restore is None without a `restore` block in context.yml (no client read back). With the
    ranks (on the controller's clock, canary.combine_hosts) the aggregate is canary.cluster_aggregate
    over READ_FIELDS from the read go, exactly as the write's; without them context.yml's bytes and
    seconds. The restore target (checkpoint bytes / the restore's own window) is None when no
    restore window was given: never the write's window.
    """
    block = (context or {}).get("restore")
    if not block:
        return {"restore": None, "restore_bytes_per_second": None}
    if canary_ranks is not None:
        aggregate = canary.cluster_aggregate(canary_ranks, block.get("read_go_at"), canary.READ_FIELDS)
        throughput = aggregate["throughput_bytes_per_second"]
    else:
        aggregate = {"total_bytes": block.get("bytes"), "seconds": block.get("seconds"),
                     "start_spread_seconds": block.get("start_spread_seconds"), "synchronized": block.get("synchronized"),
                     "spread_message": block.get("spread_message"), "finished_ranks": block.get("finished_ranks"),
                     "ranks": block.get("ranks")}
        throughput = canary.context_throughput(block)
    window = block.get("target_window_seconds")
    checkpoint = ((context.get("target") or {}).get("checkpoint_bytes")) or block.get("bytes")
    target = rates.target_rate(checkpoint, window)
    spans = {}
    for rank in canary_ranks or []:
        if rank.get(canary.READ_FIELDS.start) is None or rank.get(canary.READ_FIELDS.end) is None:
            continue
        first, last = spans.get(rank.get("host", "-"), (None, None))
        spans[rank.get("host", "-")] = (min(x for x in (first, rank["read_start"]) if x is not None),
                                        max(x for x in (last, rank["read_end"]) if x is not None))
    return {"restore_bytes_per_second": throughput, "restore": {
        "aggregate": aggregate, "restore_cache": block.get("restore_cache"), "guarantee": block.get("guarantee"),
        "verify_error_count": block.get("verify_error_count"), "skipped": block.get("skipped") or {},
        "target_window_seconds": window, "target_bytes_per_second": target,
        "meets_target": rates.meets(throughput, target),
        "read_spans": dict((host, {"first_start": first, "last_end": last}) for host, (first, last) in spans.items())}}


def _restore_lines(metrics):
    """report.md's restore section: throughput by the write's rule, the target (or that none was
    given), the cold-cache method and its guarantee, the verification, the read start spread."""
    restore = metrics.get("restore")
    if not restore:
        return []
    aggregate = restore["aggregate"]
    lines = ["", "## Restore (read-back)", "",
             "Aggregate (MLPerf Storage rule, total bytes / (latest end - earliest start) over the reads): %s in %s"
             " = %s; read start spread %s." % (
                 human.size(aggregate.get("total_bytes")), human.seconds(aggregate.get("seconds")),
                 human.rate(metrics.get("restore_bytes_per_second")), human.seconds(aggregate.get("start_spread_seconds"))), ""]
    if restore["target_bytes_per_second"] is None:
        lines += ["Restore target: no restore target was given (canary_validation_restore_window_seconds): the figure"
                  " is reported, not judged.", ""]
    else:
        lines += ["Restore target: %s (the checkpoint in %s): %s." % (
            human.rate(restore["target_bytes_per_second"]), human.seconds(restore["target_window_seconds"]),
            {True: "met", False: "not met", None: "not measured (no rank finished reading)"}[restore["meets_target"]]), ""]
    if aggregate.get("synchronized") is False:
        lines += ["**Not a synchronized restore: %s.**" % aggregate.get("spread_message"), ""]
    lines += ["Cold cache: %s (%s)." % (restore.get("restore_cache") or "-", restore.get("guarantee") or "-"), ""]
    return lines + _cold_cache_lines(restore.get("cold_cache") or {}) + _verify_lines(restore)


def _cold_cache_lines(cold):
    if cold.get("cold") is None:
        return ["Measured: unmeasured (no client statistics bracket the reads, or nothing was read back).", ""]
    return ["Measured: %s - the server sent %s of the %s read back (%s; %s)." % (
        "a cold cache" if cold["cold"] else "**not a cold cache**, part of the restore came from the client's page cache",
        human.size(cold["server_read_bytes"]), human.size(cold["restore_bytes"]), human.share(cold["server_share"]),
        cold["rests_on"]), ""]


def _verify_lines(restore):
    bad = restore.get("verify_error_count")
    lines = ["Verification: %s." % ("every block verified: no bad block" if bad == 0 and not restore["skipped"]
                                    else "%s bad blocks" % _fmt(bad))]
    return lines + ["- %s did not read: %s" % (host, reason) for host, reason in sorted(restore["skipped"].items())]


def console_lines(metrics, rows, bundle_path, message):
    """What the validation play prints at the end, one line each: the headline (verdict, achieved
    vs target, links, confidence, the first actions), the canary or the capture, the restore when
    there was one, the bundle, what was written, then the comparison rows. Decided here so the
    task only prints it."""
    lines = report_headline.console_head(metrics.get("headline") or {})
    lines.append(_capture_console(metrics) if metrics.get("source") == "capture" else _canary_console(metrics))
    if metrics.get("restore"):
        lines.append(_restore_console(metrics))
    lines += ["bundle: %s" % bundle_path, message]
    return lines + [_comparison_console(row) for row in rows]


def _comparison_console(row):
    unit = row.get("unit")
    return "%s%s: %s -> %s (%s)" % (row["metric"], " (%s)" % unit if unit else "", _cell(row.get("before"), unit),
                                    _cell(row.get("after"), unit), _ratio(row.get("ratio")))


def _capture_console(metrics):
    return "capture (no canary ranks): %s window, %s, %s written%s; achieved from %s" % (
        metrics.get("capture_kind") or "-", human.seconds(metrics.get("capture_seconds")),
        human.size(metrics.get("capture_bytes")), " (hit the maximum)" if metrics.get("capture_hit_max") else "",
        metrics.get("capture_basis") or human.UNMEASURED)


def _canary_console(metrics):
    aggregate = metrics.get("canary_aggregate")
    if not aggregate:
        # No per-rank results: context.yml's figures.
        return "canary: %s ranks, %s in %s (no per-rank results)" % (
            _fmt(metrics.get("canary_ranks")), human.size(metrics.get("canary_bytes")), human.seconds(metrics.get("canary_seconds")))
    return "canary: %s ranks on %s clients, %s in %s, start spread %s (%s)" % (
        _fmt(metrics.get("canary_ranks")), len(metrics.get("canary_hosts") or []), human.size(aggregate.get("total_bytes")),
        human.seconds(aggregate.get("seconds")), human.seconds(aggregate.get("start_spread_seconds")),
        aggregate.get("spread_message") or "-")


def _restore_console(metrics):
    restore = metrics["restore"]
    read = restore.get("aggregate") or {}
    return "restore: %s read back in %s = %s (%s), start spread %s, %s bad blocks" % (
        human.size(read.get("total_bytes")), human.seconds(read.get("seconds")),
        human.rate(metrics.get("restore_bytes_per_second")), restore.get("restore_cache") or "-",
        human.seconds(read.get("start_spread_seconds")), _fmt(restore.get("verify_error_count")))


def _restore_comparison_row(before, after):
    """The restore throughput row, or None when neither bundle read back; a side without a restore
    is named (missing) instead of being compared."""
    old, new = before.get("restore_bytes_per_second"), after.get("restore_bytes_per_second")
    if old is None and new is None:
        return None
    warning = None
    if old is None or new is None:
        side, run = ("before", before) if old is None else ("after", after)
        warning = "no restore in the %s bundle (%s)" % (side, run.get("label") or "-")
    old = None if old is None else old / MB
    new = None if new is None else new / MB
    ratio = round(new / old, 3) if old and new is not None else None
    return {"metric": "restore throughput", "unit": "MB/s", "before": old, "after": new, "ratio": ratio,
            "better": "higher", "improved": None if warning or new == old else new > old, "warning": warning,
            "missing": warning is not None}


def _capture_metrics(context, diagnosis):
    """source (canary or capture) and, for a capture of a real checkpoint, its window, written bytes and flags
    (diagnosis.json `capture`, else context.yml's `capture` block)."""
    if context.get("source") != "capture":
        return {"source": "canary"}
    found = diagnosis.get("capture") or {}
    block = context.get("capture") or {}
    return {"source": "capture",
            "capture_kind": found.get("kind", block.get("kind")),
            "capture_seconds": found.get("seconds", block.get("seconds")),
            "capture_bytes": (found.get("written") or {}).get("server_write_bytes", block.get("server_write_bytes")),
            "capture_hit_max": found.get("hit_max", block.get("hit_max")),
            "capture_flags": found.get("flags") or [],
            "capture_basis": found.get("source")}


def _link_and_cpu_metrics(diagnosis):
    """The network verdict's figures and the busiest CPU of each side, from the diagnosis."""
    network = diagnosis.get("network") or {}
    utilisation = [row.get("utilisation_during") for row in network.get("links") or [] if row.get("utilisation_during") is not None]
    cpu = diagnosis.get("cpu") or {}

    def busiest(side):
        values = [row["busy"] for row in cpu.values() if row.get("side") == side and row.get("busy") is not None]
        return max(values) if values else None

    loss = network.get("loss") or {}
    shares = [row["retrans_share"] for row in loss.get("hosts") or [] if row.get("measured") and row.get("retrans_share") is not None]
    pace = diagnosis.get("pace") or {}
    return {
        # Loss beside the links' share (issue 26): a lossy path looks half empty; None = unmeasured.
        "retrans_share_max": max(shares) if shares else None,
        "loss_state": loss.get("state") or "unmeasured",
        "pace_text": pace.get("text") if pace.get("pace") else None,
        "network_state": network.get("state"),
        "network_summary": network.get("summary") or "links: unmeasured (no link evidence in this bundle)",
        "network_headline": network.get("headline") or "network unmeasured: no link evidence in this bundle",
        "link_utilisation_max": max(utilisation) if utilisation else None,
        "probe_share": network.get("probe_share"),
        "server_cpu_busy": busiest("server"),
        "client_cpu_busy": busiest("client"),
    }


def _host_metrics(diagnosis):
    """Slots, D state and nfsd figures over the diagnosis's per-host summaries."""
    clients = diagnosis.get("clients") or {}
    servers = diagnosis.get("servers") or {}
    max_slots = [slot for summary in clients.values() for slot in (summary.get("max_slots") or [])]
    caps = [_slot_cap(summary) for summary in clients.values()]
    caps = [cap for cap in caps if cap[0] is not None]
    dstate_peaks = [(summary.get("dstate") or {}).get("max_count") for summary in clients.values()]
    dstate_peaks = [peak for peak in dstate_peaks if peak is not None]
    threads = [summary.get("threads") for summary in servers.values() if summary.get("threads") is not None]
    enqueued = [(summary.get("pool_stats") or {}).get("sockets-enqueued") for summary in servers.values()]
    enqueued = [value for value in enqueued if value is not None]
    no_idle = [summary.get("packets_without_idle_thread") for summary in servers.values()
               if summary.get("packets_without_idle_thread") is not None]
    return {
        "max_slots_reached": max(max_slots) if max_slots else None,
        "slot_cap": min(cap[0] for cap in caps) if caps else None,
        "slot_cap_setting": caps[0][1] if caps else None,
        "dstate_peak": max(dstate_peaks) if dstate_peaks else None,
        "server_threads": sum(threads) if threads else None,
        "sockets_enqueued": sum(enqueued) if enqueued else None,
        "packets_without_idle_thread": max(no_idle) if no_idle else None,
        "clients": len(clients),
        "servers": len(servers),
    }


def host_rows(canary_ranks, harness=None):
    """Per-host canary lines: ranks, bytes, slowest rank, errors, first start (controller clock),
    the clock offset used and the harness's CPU during the ranks."""
    harness = harness or {}
    by_host = {}
    for rank in canary_ranks:
        by_host.setdefault(rank.get("host", "-"), []).append(rank)
    rows = []
    for host in sorted(by_host):
        summary = canary.aggregate(by_host[host])
        cost = harness.get(host) or {}
        finished = [rank for rank in by_host[host] if rank.get("start") is not None and rank.get("end") is not None
                    and not rank.get("error")]
        rows.append({"host": host, "ranks": summary["ranks"], "bytes": summary["total_bytes"],
                     "last_start": max(rank["start"] for rank in finished) if finished else None,
                     "first_end": min(rank["end"] for rank in finished) if finished else None,
                     "latest_end": summary["latest_end"],
                     "seconds": summary["seconds"], "throughput_bytes_per_second": summary["throughput_bytes_per_second"],
                     "incomplete_ranks": summary["incomplete_ranks"], "earliest_start": summary["earliest_start"],
                     "clock_offset_seconds": by_host[host][0].get("clock_offset_seconds"),
                     "harness_cpu_seconds": cost.get("canary_cpu_seconds"),
                     "other_cpu_seconds": cost.get("other_cpu_seconds")})
    return rows


# From this many hosts on, report.md summarises the hosts (a line per host stops being read);
# report.json keeps every host's row (metrics.canary_hosts).
SCALE_HOSTS = 64
SLOWEST_SHOWN = 5
# A host is an outlier below this share of the median host's throughput (a host that slow holds
# the whole checkpoint back: MLPerf's aggregate ends at the latest end).
OUTLIER_SHARE = 0.75


def host_distribution(rows, bound_seconds=None):
    """What a person reads of many hosts: the per-host throughput distribution (MB/s), the slowest
    hosts, and the outliers with why (slow against the median, a late first start beyond the spread
    bound, or ranks that did not finish)."""
    host_rates = sorted(row["throughput_bytes_per_second"] / MB for row in rows if row.get("throughput_bytes_per_second"))
    starts = [row["earliest_start"] for row in rows if row.get("earliest_start") is not None]
    first = min(starts) if starts else None
    median = rates.nearest_rank(host_rates, 0.5) if host_rates else None
    outliers = []
    for row in rows:
        reasons = []
        rate = (row.get("throughput_bytes_per_second") or 0.0) / MB
        if median and rate < OUTLIER_SHARE * median:
            reasons.append("%s, %s of the median host" % (human.rate(rate * MB), human.share(rate / median)))
        if bound_seconds is not None and first is not None and row.get("earliest_start") is not None \
                and row["earliest_start"] - first > bound_seconds:
            reasons.append("first start %s after the earliest host" % human.seconds(row["earliest_start"] - first))
        if row.get("incomplete_ranks"):
            reasons.append("%d rank(s) did not finish" % len(row["incomplete_ranks"]))
        if reasons:
            outliers.append({"host": row["host"], "reasons": reasons})
    slowest = sorted(rows, key=lambda row: (row.get("throughput_bytes_per_second") or 0.0, row["host"]))[:SLOWEST_SHOWN]
    return {"hosts": len(rows),
            "mb_per_second": dict((name, round(rates.nearest_rank(host_rates, share), 3) if host_rates else None) for name, share in
                                  (("min", 0.0), ("p10", 0.1), ("median", 0.5), ("p90", 0.9), ("max", 1.0))),
            "slowest": [row["host"] for row in slowest], "outliers": outliers}


def _names(hosts, shown=5):
    return ", ".join(hosts[:shown]) + (" and %d more" % (len(hosts) - shown) if len(hosts) > shown else "")


def _host_table(rows):
    # The first start stays a timestamp (seconds on the controller's clock, 3 decimals), not a figure.
    return _table(["host", "ranks", "bytes", "time", "throughput", "incomplete ranks", "first start (controller clock)",
                   "clock offset", "harness CPU / other CPU"],
                  [[row["host"], row["ranks"], human.size(row["bytes"]), human.seconds(row["seconds"]),
                    human.rate(row["throughput_bytes_per_second"]),
                    row["incomplete_ranks"], "%.3f" % row["earliest_start"] if row.get("earliest_start") else None,
                    human.seconds(row.get("clock_offset_seconds")),
                    "%s / %s" % (human.seconds(row.get("harness_cpu_seconds")), human.seconds(row.get("other_cpu_seconds")))]
                   for row in rows])


def _host_summary_lines(rows, aggregate):
    """The canary's hosts at scale: distribution, slowest hosts, outliers; the rest is in report.json."""
    summary = host_distribution(rows, aggregate.get("spread_bound_seconds"))
    rates = summary["mb_per_second"]
    quantiles = tuple(human.rate(None if rates[name] is None else rates[name] * MB)
                      for name in ("min", "p10", "median", "p90", "max"))
    lines = ["%d hosts; per-host throughput: min %s, p10 %s, median %s, p90 %s, max %s. Every host's row is in "
             "report.json (metrics.canary_hosts)." % ((summary["hosts"],) + quantiles), "",
             "Slowest %d hosts:" % len(summary["slowest"]), ""]
    by_name = dict((row["host"], row) for row in rows)
    lines += _host_table([by_name[host] for host in summary["slowest"]])
    lines += ["", "Outliers (below %s of the median host's throughput, a first start beyond the %s bound, or "
              "unfinished ranks): %s." % (human.share(OUTLIER_SHARE), human.seconds(aggregate.get("spread_bound_seconds")),
                                          len(summary["outliers"]) or "none")]
    if summary["outliers"]:
        lines += [""] + _table(["host", "why"], [[item["host"], "; ".join(item["reasons"])]
                                                 for item in summary["outliers"][:20]])
        if len(summary["outliers"]) > 20:
            lines += ["", "... and %d more outliers (report.json)." % (len(summary["outliers"]) - 20)]
    return lines


def _canary_lines(metrics):
    """The report's canary section: the aggregate, the spread verdict, the clocks, one row per host."""
    aggregate = metrics["canary_aggregate"]
    lines = ["", "## Canary ranks", "",
             "Aggregate (MLPerf Storage rule, total bytes / (latest end - earliest start)): %s in %s = %s; "
             "start spread %s; largest distance from start_at %s." % (
                 human.size(aggregate["total_bytes"]), human.seconds(aggregate["seconds"]),
                 human.rate(aggregate["throughput_bytes_per_second"]), human.seconds(aggregate["start_spread_seconds"]),
                 human.seconds(aggregate["max_start_delay_seconds"])), ""]
    if aggregate.get("synchronized") is False:
        lines += ["**Not a synchronized checkpoint: %s.**" % aggregate["spread_message"], ""]
    elif aggregate.get("synchronized") is None and aggregate.get("start_spread_seconds") is not None \
            and aggregate.get("start_spread_uncertainty_seconds"):
        lines += ["**Synchronized start not confirmed: %s.**" % aggregate["spread_message"], ""]
    elif aggregate.get("spread_message"):
        lines += ["Start: %s (times on the controller's clock)." % aggregate["spread_message"], ""]
    if aggregate.get("unmeasured_clocks"):
        lines += ["Clocks were not measured on %s (a bundle from before clock offsets): the spread and the aggregate "
                  "mix each host's own clock." % _names(aggregate["unmeasured_clocks"]), ""]
    rows = metrics.get("canary_hosts", [])
    if len(rows) >= SCALE_HOSTS:
        return lines + _host_summary_lines(rows, aggregate)
    return lines + _host_table(rows)


def _op_field(metrics, op, field):
    return ((metrics.get("ops") or {}).get(op) or {}).get(field)


# (key, label, unit, better): better says which direction is an improvement.
COMPARISON = (
    ("achieved_bytes_per_second", "throughput", "MB/s", "higher"),
    ("canary_seconds", "duration", "s", "lower"),
    ("duration_vs_window", "duration / window", "x", "lower"),
    ("WRITE.avg_rtt_ms", "WRITE avg RTT", "ms", "lower"),
    ("WRITE.avg_exe_ms", "WRITE avg exe", "ms", "lower"),
    ("WRITE.avg_queue_ms", "WRITE avg queue", "ms", "lower"),
    ("COMMIT.avg_rtt_ms", "COMMIT avg RTT", "ms", "lower"),
    ("COMMIT.avg_exe_ms", "COMMIT avg exe", "ms", "lower"),
    ("COMMIT.avg_queue_ms", "COMMIT avg queue", "ms", "lower"),
    ("backlog_per_send", "backlog per send", "", "lower"),
    ("max_slots_reached", "max_slots reached", "", None),
    ("slot_cap", "slot cap", "", None),
    ("dstate_peak", "D-state peak", "tasks", "lower"),
    ("server_threads", "server threads", "", None),
    ("sockets_enqueued", "sockets-enqueued", "", None),
    ("packets_without_idle_thread", "packets without idle thread", "share", "lower"),
    ("link_utilisation_max", "busiest NFS link, share of nominal", "share", None),
    ("retrans_share_max", "TCP segments retransmitted, worst host", "share", "lower"),
    ("probe_share", "NFS / TCP capacity of the path (probe)", "share", None),
    ("server_cpu_busy", "server CPU busy during the checkpoint", "share", None),
    ("client_cpu_busy", "client CPU busy during the checkpoint", "share", None),
)


def metric_value(metrics, key):
    if "." in key:
        op, field = key.split(".", 1)
        return _op_field(metrics, op, field)
    value = metrics.get(key)
    if key == "achieved_bytes_per_second" and value is not None:
        return value / MB
    return value


# A time is only better or worse between runs that wrote the same bytes; a rate stays comparable.
SAME_BYTES_ONLY = ("canary_seconds", "duration_vs_window")


def slot_cap_scope(setting):
    """What the slot cap bounds: max_session_slots one NFSv4.1+ session (shared by its nconnect
    connections, fs/nfs/nfs4session.c); the slot table entries one transport. mountstats'
    max_slots is always per transport (xprt)."""
    return "per session" if setting == "max_session_slots" else "per connection"


def _bytes_warning(before, after):
    old, new = before.get("canary_bytes"), after.get("canary_bytes")
    if old is not None and new is not None and old != new:
        return "the bundles wrote different bytes (%s vs %s)" % (human.size(old), human.size(new))
    return None


def comparison_rows(before, after):
    """Rows {metric, unit, before, after, ratio, better, improved, warning} for the comparison table.

    warning (None or a sentence) says why improved is None although both values exist: a duration
    of bundles that wrote different bytes is neither better nor worse.
    """
    rows = []
    bytes_warning = _bytes_warning(before, after)
    for key, name, unit, better in COMPARISON:
        old = metric_value(before, key)
        new = metric_value(after, key)
        ratio = round(float(new) / old, 3) if old not in (None, 0) and new is not None else None
        improved = None
        warning = bytes_warning if key in SAME_BYTES_ONLY else None
        if better and old is not None and new is not None and new != old and warning is None:
            improved = (new > old) if better == "higher" else (new < old)
        if key == "max_slots_reached":
            unit = "per connection"
        elif key == "slot_cap":
            unit = slot_cap_scope(after.get("slot_cap_setting") or before.get("slot_cap_setting"))
        rows.append({"metric": name, "unit": unit, "before": old, "after": new, "ratio": ratio,
                     "better": better, "improved": improved, "warning": warning})
        if key == "achieved_bytes_per_second":
            rows.extend(row for row in [_restore_comparison_row(before, after)] if row)
    return rows


def _better_cell(row):
    if row.get("missing"):
        return row["warning"]
    if row.get("warning"):
        return "not comparable: different bytes"
    return {True: "improved", False: "worse", None: "-"}[row["improved"]]


def _fmt(value, digits=4):
    """A table cell or a figure in a sentence: numbers by human.number (thousands separated, at most
    4 significant digits, no exponent), None as '-'."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return human.number(value, digits)
    if isinstance(value, list):
        return ", ".join(_fmt(item) for item in value) or "-"
    return str(value)


def _cell(value, unit):
    """A comparison value in its unit: a share as a percentage, the rest by _fmt."""
    if value is None:
        return "-"
    return human.share(value) if unit == "share" else _fmt(value)


def _ratio(value):
    return "-" if value is None else human.factor(value)


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    lines.extend("| " + " | ".join(_fmt(cell) for cell in row) + " |" for row in rows)
    return lines


def _run_rows(metrics):
    """The headline rows of what ran: the canary's shape and duration, or the capture's window and bytes."""
    window = human.seconds(metrics.get("window_seconds")) if metrics.get("window_seconds") else "no window given"
    if metrics.get("source") == "capture":
        written = "%s window, %s written (no canary)" % (metrics.get("capture_kind") or "-", human.size(metrics.get("capture_bytes")))
        return [["capture", written],
                ["capture window (target window)", "%s (%s)" % (human.seconds(metrics.get("capture_seconds")), window)]]
    return [["canary", "%s x %s ranks, %s" % (metrics.get("canary_layout") or "-", _fmt(metrics.get("canary_ranks")),
                                              human.size(metrics.get("canary_bytes")))],
            ["duration (window)", "%s (%s)" % (human.seconds(metrics.get("canary_seconds")), window)]]


def _capture_lines(metrics):
    """The report's capture section: no canary ranks, what the achieved figure rests on, every flag."""
    lines = ["", "## Capture (no canary)", "",
             "A real checkpoint observed: no canary ranks ran, so there is no per-rank start, end or spread. "
             "Achieved = %s." % (metrics.get("capture_basis") or "written bytes / window seconds")]
    if metrics.get("capture_hit_max"):
        lines += ["", "**The window reached its maximum before the marker existed on every client.**"]
    flags = ["- %s" % flag["message"] for flag in metrics.get("capture_flags") or []]
    return lines + ([""] + flags if flags else [])


def _first_screen_lines(metrics):
    """The diagnosis's first screen (verdict, achieved vs target, links, confidence, actions) as it
    reads in an 80-column terminal: a fenced block keeps its lines and columns in a Markdown viewer."""
    screen = metrics.get("first_screen") or report_headline.first_screen({}, metrics.get("headline") or {})
    return markdown_text.fence(screen, "text") + [""]


def _figure_rows(metrics):
    """The headline table's rows, each figure in its unit (human.py)."""
    target = metrics.get("target_bytes_per_second")
    return [
        ["verdict", metrics.get("verdict")],
        ["limiting layer", metrics.get("limiting_layer")],
        ["contributing", metrics.get("contributing")],
        ["target", human.rate(target) if target else "no target given"],
        ["achieved", human.rate(metrics.get("achieved_bytes_per_second"))],
        ["gap factor", human.factor(metrics.get("gap_factor")) if metrics.get("gap_factor") is not None else "-"],
    ] + _run_rows(metrics) + [
        ["backlog per send", metrics.get("backlog_per_send")],
        ["max_slots reached / slot cap", _slots_cell(metrics)],
        ["D-state peak (tasks)", metrics.get("dstate_peak")],
        ["server threads", metrics.get("server_threads")],
        ["sockets-enqueued", metrics.get("sockets_enqueued")],
        ["packets without idle thread (busiest server)", _cell(metrics.get("packets_without_idle_thread"), "share")],
        ["busiest NFS link (share of nominal)", _cell(metrics.get("link_utilisation_max"), "share")],
        ["TCP segments retransmitted, worst host (loss)", _loss_cell(metrics)],
        ["pace-setting host", metrics.get("pace_text") or "-"],
        ["NFS / TCP capacity of the path (probe, summed over clients)", _cell(metrics.get("probe_share"), "share")],
        ["CPU busy during the checkpoint, server / client", "%s / %s" % (
            _cell(metrics.get("server_cpu_busy"), "share"), _cell(metrics.get("client_cpu_busy"), "share"))],
        ["unmeasured", metrics.get("unmeasured")],
    ]


def _loss_cell(metrics):
    if metrics.get("retrans_share_max") is None:
        return "unmeasured (no TCP counters in the host samples)"
    return "%s (%s)" % (_cell(metrics["retrans_share_max"], "share"), metrics.get("loss_state"))


def _slots_cell(metrics):
    if metrics.get("max_slots_reached") is None and metrics.get("slot_cap") is None:
        return "-"
    return "%s per connection / %s %s (%s)" % (
        _fmt(metrics.get("max_slots_reached")), _fmt(metrics.get("slot_cap")),
        slot_cap_scope(metrics.get("slot_cap_setting")), metrics.get("slot_cap_setting") or "-")


def _comparison_lines(metrics, before, rows):
    lines = ["## Compared with %s" % (before.get("label") or "the earlier bundle"), "",
             "Limiting layer before: %s (%s); after: %s (%s)." % (
                 _fmt(before.get("limiting_layer")), _fmt(before.get("verdict")),
                 _fmt(metrics.get("limiting_layer")), _fmt(metrics.get("verdict"))), ""]
    warning = _bytes_warning(before, metrics)
    if warning:
        lines += ["**Warning: %s: compare throughput, not duration.**" % warning, ""]
    lines += _table(["metric", "unit", "before", "after", "after/before", "better"],
                    [[row["metric"], row["unit"] or "-", _cell(row["before"], row["unit"]), _cell(row["after"], row["unit"]),
                      _ratio(row["ratio"]), _better_cell(row)] for row in rows])
    return lines + [""]


def _ops_lines(ops):
    if not ops:
        return []
    return ["", "## Per-op latency (ms per op, all clients)", ""] + _table(
        ["op", "ops", "avg queue", "avg RTT", "avg exe"],
        [[name, ops[name]["ops"], ops[name]["avg_queue_ms"], ops[name]["avg_rtt_ms"], ops[name]["avg_exe_ms"]]
         for name in sorted(ops, key=lambda n: (n not in REPORT_OPS, n))])


def render_markdown(metrics, before=None, rows=None, figure_note=None):
    """report.md: first screen, before/after, figures, latency, hosts, restore, capture; titled with the shape written.
    Every string it is given comes from a bundle: escaped once here (markdown_text), the first screen fenced as it is."""
    screen, (metrics, before, rows) = _first_screen_lines(metrics), markdown_text.escaped([metrics, before, rows])
    shape = " (%s)" % metrics["canary_layout"] if metrics.get("canary_layout") not in (None, metrics.get("label")) else ""
    lines = ["# Checkpoint validation: %s%s" % (metrics.get("label") or "run", shape), ""] + screen
    if before is not None and rows:
        lines += _comparison_lines(metrics, before, rows)
    summary = metrics.get("network_summary")
    lines += ["## Figures", ""] + (["%s%s." % (summary[0].upper(), summary[1:]), ""] if summary else [])
    lines += _table(["metric", "value"], _figure_rows(metrics))
    lines += _ops_lines(metrics.get("ops") or {})
    if metrics.get("canary_aggregate"):
        lines += _canary_lines(metrics)
    lines += _restore_lines(metrics)
    if metrics.get("source") == "capture":
        lines += _capture_lines(metrics)
    if figure_note:
        lines += ["", figure_note]
    return "\n".join(lines) + "\n"


def figure_series(metrics, before=None):
    """What report.png draws, as plain data: throughput bars and stacked latency bars."""
    runs = ([before] if before is not None else []) + [metrics]
    throughput = [{"label": run.get("label") or "run", "limiting_layer": run.get("limiting_layer"), "run_index": index,
                   "mb_per_second": (run.get("achieved_bytes_per_second") or 0.0) / MB} for index, run in enumerate(runs)]
    throughput += _restore_bars(runs)
    names = [name for name in FIGURE_OPS if any(_op_field(run, name, "ops") for run in runs)]
    latency = []
    for name in names:
        for run in runs:
            queue = _op_field(run, name, "avg_queue_ms") or 0.0
            rtt = _op_field(run, name, "avg_rtt_ms") or 0.0
            exe = _op_field(run, name, "avg_exe_ms") or 0.0
            latency.append({"op": name, "label": run.get("label") or "run", "queue_ms": queue, "rtt_ms": rtt,
                            "other_ms": max(0.0, exe - queue - rtt)})
    metadata = [{"op": name, "label": run.get("label") or "run", "ops": _op_field(run, name, "ops") or 0,
                 "exe_ms": _op_field(run, name, "avg_exe_ms") or 0.0}
                for name in names if name not in REPORT_OPS for run in runs]
    target = metrics.get("target_bytes_per_second")
    head = metrics.get("headline") or {}
    capacity = head.get("link_capacity_bytes_per_second")
    return {"throughput": throughput, "target_mb_per_second": target / MB if target else None, "latency": latency,
            "metadata": metadata, "timeline": [line for line in (timeline(run) for run in runs) if line["hosts"]],
            "title": "%s: %s" % (metrics.get("label") or "run", head.get("verdict_text") or "no diagnosis"),
            "link_capacity_mb_per_second": capacity / MB if capacity else None,
            "links": [_links_line(run) for run in runs], "sources": [run.get("source") or "canary" for run in runs]}


def _links_line(run):
    """One run's links in one line: the headline's links_text, else the network's headline."""
    text = (run.get("headline") or {}).get("links_text") or run.get("network_headline") or "network unmeasured"
    loss = "TCP retransmitted %s (worst host, %s)" % (human.share(run["retrans_share_max"]), run.get("loss_state")) \
        if run.get("retrans_share_max") is not None else "TCP loss unmeasured"
    pace = "; %s" % run["pace_text"] if run.get("pace_text") else ""
    return "%s: %s; %s%s" % (run.get("label") or "run", text, loss, pace)


def _restore_bars(runs):
    """The throughput panel's restore bars (phase "restore"), one per run that read back, each
    against its own restore target (None: no restore target was given)."""
    bars = []
    for index, run in enumerate(runs):
        if run.get("restore_bytes_per_second") is None:
            continue
        target = (run.get("restore") or {}).get("target_bytes_per_second")
        bars.append({"label": "%s restore" % (run.get("label") or "run"), "limiting_layer": None, "run_index": index,
                     "phase": "restore", "mb_per_second": run["restore_bytes_per_second"] / MB,
                     "target_mb_per_second": target / MB if target else None})
    return bars


def _read_span(metrics, host, since):
    """A host's read span in the timeline (first read start, last read end); {} without a read phase."""
    if not metrics.get("restore"):
        return {}
    span = ((metrics.get("restore") or {}).get("read_spans") or {}).get(host) or {}
    return {"read_first_start": since(span.get("first_start")), "read_last_end": since(span.get("last_end"))}


def timeline(metrics):
    """One run's ranks per host on the controller's clock, in seconds after the go time (after the
    earliest start when the bundle has no go time): each host's first and last start, first and
    last end, sorted by first start so a late host stands out at the bottom."""
    aggregate = metrics.get("canary_aggregate") or {}
    rows = [row for row in metrics.get("canary_hosts") or [] if row.get("earliest_start") is not None]
    go_at = metrics.get("canary_start_at")
    unmeasured = aggregate.get("unmeasured_clocks") or []
    if unmeasured:
        # Host times on unmeasured clocks are not on the go time's clock (the lab's were seconds apart).
        go_at = None
    zero = go_at if go_at is not None else aggregate.get("earliest_start")

    def since(value):
        return None if value is None or zero is None else round(value - zero, 6)

    hosts = [{"host": row["host"], "first_start": since(row["earliest_start"]), "last_start": since(row.get("last_start")),
              "first_end": since(row.get("first_end")), "last_end": since(row.get("latest_end")),
              "incomplete_ranks": len(row.get("incomplete_ranks") or []), **_read_span(metrics, row["host"], since)}
             for row in sorted(rows, key=lambda row: (row["earliest_start"], row["host"]))]
    return {"label": metrics.get("label") or "run", "zero": "go" if go_at is not None else "earliest start",
            "hosts": hosts, "start_spread_seconds": aggregate.get("start_spread_seconds"),
            "spread_bound_seconds": aggregate.get("spread_bound_seconds"),
            "synchronized": aggregate.get("synchronized"),
            "start_spread_uncertainty_seconds": aggregate.get("start_spread_uncertainty_seconds"),
            "unmeasured_clocks": unmeasured}
