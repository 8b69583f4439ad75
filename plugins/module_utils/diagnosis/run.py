# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run: one place that reads a bundle's clients and servers into their figures (usable clients, servers,
achieved, capacity and per-op totals over the clients the diagnosis uses), once.
"""

from __future__ import annotations

import math

import dataclasses

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import paths as nfs_paths
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.client_evidence import kept_probe, sample as _sample
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import host_figures
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.client_row import client_row
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle import FIGURES_FILE
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle_values import BundleError
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import capture
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import kernels
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import rates
from ansible_collections.ckptio.nfs.plugins.module_utils.canary.plan import combine_hosts, context_throughput
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.nfsd_stats import parse_nfsd_stats, parse_pool_stats, parse_single_number
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.stats_delta import nfsd_delta, pool_stats_delta
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals


# 2x100GbE = 25 GB/s raw, ~20 GB/s practical (protocol headers, TCP, RPC framing).
PRACTICAL_LINK_EFFICIENCY = 0.8


# The network is the limit once achieved throughput reaches this share of practical capacity.
NETWORK_BUSY_SHARE = signals.NETWORK_BUSY_SHARE.threshold


WRITE_SIZE_FOR_LITTLE = 1048576


LITTLE_RTT_MS = 10.0


METADATA_OPS = ("OPEN", "OPEN_NOATTR", "CLOSE", "GETATTR", "LOOKUP", "ACCESS", "SETATTR", "CREATE", "REMOVE",
                "RENAME", "MKDIR", "READDIR", "READDIRPLUS", "FSSTAT", "FSINFO", "PATHCONF", "LINK", "SYMLINK")


# context.yml `saved.window` (module_utils/paste/saved_files.py): two snapshots saved by hand, or
# one snapshot against the zero counters of its mount.
SAVED_SNAPSHOTS = "snapshots"


SAVED_SINCE_MOUNT = "since_mount"


SINCE_MOUNT_NOTE = ("one mountstats snapshot: every client figure is an average over the mount's life (%s), not a checkpoint "
                    "window; idle time dilutes the throughput, and the per-op times mix every workload since the mount")


IDLE_RTT_OPS = ("NULL", "GETATTR", "ACCESS", "OPEN", "CLOSE", "LOOKUP", "FSINFO", "PATHCONF", "SEQUENCE", "RENEW", "SERVER_CAPS")

# Ours is the rule MLPerf Storage's rules text states; the figure it publishes is DLIO's (checkpoint size /
# rank 0's own duration, compare/throughput.py), which is higher when ranks finish unevenly (issue 28).
MLPERF_STATED = "the rule MLPerf Storage states, not the figure it publishes (size / rank 0's own time)"


def _number(value, name, positive=True):
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise BundleError("%s must be a number, got %r" % (name, value))
    if not math.isfinite(number):
        raise BundleError("%s must be a finite number, got %r" % (name, value))
    if positive and number <= 0:
        raise BundleError("%s must be greater than 0, got %r" % (name, value))
    return number


def checkpoint_capacity(checkpoint_bytes, window_seconds, server_link_gbps=None, client_link_gbps=None, clients=None,
                        observed_bytes_per_second=None, write_size_bytes=WRITE_SIZE_FOR_LITTLE, rtt_ms=LITTLE_RTT_MS):
    """Target throughput, link capacity, and whether the network can be the limit.

    Seed: 2.4e12 B in 300 s = 8 GB/s; 2x100GbE server = 25 GB/s raw, 20 GB/s practical; at
    1.1 GB/s observed the links run at 4.4 %: the network is not the limit.
    """
    if checkpoint_bytes is None or window_seconds is None:
        # No target given (CONTRACT 2): the links and the observation, nothing against a target.
        return _capacity_without_target(server_link_gbps, client_link_gbps, clients, observed_bytes_per_second)
    checkpoint_bytes = _number(checkpoint_bytes, "checkpoint_bytes")
    window_seconds = _number(window_seconds, "window_seconds")
    target = rates.target_rate(checkpoint_bytes, window_seconds)
    result = {
        "checkpoint_bytes": checkpoint_bytes,
        "window_seconds": window_seconds,
        "target_bytes_per_second": target,
        "target_gb_per_second": target / 1e9,
    }
    limits = {}
    if server_link_gbps:
        limits["server_links"] = _number(server_link_gbps, "server_link_gbps") * 1e9 / 8
    if client_link_gbps and clients:
        limits["client_links"] = _number(client_link_gbps, "client_link_gbps") * 1e9 / 8 * _number(clients, "clients")
    if clients:
        result["per_client_target_bytes_per_second"] = target / _number(clients, "clients")
    # Little's law: requests that must be in flight cluster-wide to reach the target.
    ops_per_second = target / _number(write_size_bytes, "write_size_bytes")
    result["write_ops_per_second_needed"] = ops_per_second
    result["requests_in_flight_needed"] = ops_per_second * _number(rtt_ms, "rtt_ms") / 1000.0
    result["little_assumptions"] = {"write_size_bytes": write_size_bytes, "rtt_ms": rtt_ms}
    if limits:
        bottleneck = min(limits, key=limits.get)
        raw = limits[bottleneck]
        practical = raw * PRACTICAL_LINK_EFFICIENCY
        result.update({
            "link_limits_bytes_per_second": limits,
            "narrowest_link": bottleneck,
            "raw_link_bytes_per_second": raw,
            "practical_link_bytes_per_second": practical,
            "network_can_carry_target": target <= practical,
            "network_headroom_factor": practical / target,
        })
    else:
        result.update({"raw_link_bytes_per_second": None, "practical_link_bytes_per_second": None,
                       "network_can_carry_target": None, "network_headroom_factor": None})
    if observed_bytes_per_second is not None:
        observed = _number(observed_bytes_per_second, "observed_bytes_per_second", positive=False)
        result["observed_bytes_per_second"] = observed
        result["gap_factor"] = target / observed if observed > 0 else None
        if limits:
            result["observed_link_utilisation"] = observed / result["raw_link_bytes_per_second"]
            result["network_is_limit"] = observed >= NETWORK_BUSY_SHARE * result["practical_link_bytes_per_second"]
        else:
            result["observed_link_utilisation"] = None
            result["network_is_limit"] = None
    return result


def _capacity_without_target(server_link_gbps, client_link_gbps, clients, observed):
    """checkpoint_capacity() of a bundle without a target: every target figure null, the links' share kept."""
    # 1 byte over 1 s is only a carrier for the link arithmetic; every figure that depends on it is nulled.
    result = checkpoint_capacity(1, 1, server_link_gbps, client_link_gbps, clients, observed)
    for key in ("checkpoint_bytes", "window_seconds", "target_bytes_per_second", "target_gb_per_second",
                "per_client_target_bytes_per_second", "write_ops_per_second_needed", "requests_in_flight_needed",
                "network_can_carry_target", "network_headroom_factor", "gap_factor"):
        if key in result:
            result[key] = None
    return result


def int_setting(settings, name):
    try:
        return int(settings.get(name))
    except (TypeError, ValueError):
        return None


def capture_problem_text(excluded):
    return "%s %s (%s): %s" % (excluded["host"], excluded["mount_point"], ", ".join(excluded["problems"]),
                               "; ".join(excluded["problem_details"]))


# Above this many clients the reading is shared among forked workers (one per core), each taking
# CLIENT_CHUNK hosts at a time; below it the clients are read here, as before (the same results).
PARALLEL_CLIENTS = 512
CLIENT_CHUNK = 128


def _read_chunk(shared, hosts):
    """(rows, taken, problems) of some clients: rows [(host, view, excluded, kept canary block, ClientEvidence)], a
    client whose row came from its figures.json held as (host, None, None, None, None) with its texts in taken
    ({index in rows: host_figures.with_shared_keys' texts}); problems: those reading them added to the bundle's
    list (a forked worker's additions are returned, not lost). A forked reader's chunk is pickled back to the
    module's process: a figures row goes as the text it was checked in, parsed once there (_chunk_rows)."""
    client_files, mount_point, problems, mount_points, checkpoint_seconds = shared
    already = len(problems)
    rows = []
    taken = {}
    for host in hosts:
        row, taken_from = _client_row_and_figures(client_files, host, mount_point, mount_points, checkpoint_seconds)
        if taken_from is not None:
            taken[len(rows)] = taken_from
            row = (None, None, None, None)
        rows.append((host,) + row)
    return rows, taken, problems[already:]


def _chunk_rows(chunk):
    """(rows, problems) of a _read_chunk result: its figures rows parsed together (host_figures.with_shared_keys)."""
    rows, taken, problems = chunk
    return host_figures.with_shared_keys(rows, taken), problems


def _client_row(client_files, host, mount_point, mount_points, checkpoint_seconds):
    """client_row of one client: from its figures.json when they are for its files and this run (a bundle
    read from disk, host_figures.read_row), else from its files."""
    return _client_row_and_figures(client_files, host, mount_point, mount_points, checkpoint_seconds)[0]


def _client_row_and_figures(client_files, host, mount_point, mount_points, checkpoint_seconds):
    """(_client_row, None when it comes from the files, else the texts it was taken from: (figures.json, probe.json
    when the evidence keeps its parsed value, else None, the evidence's probe then))."""
    if hasattr(client_files, "row"):
        # Rows made from another source than a host's files (prometheus/rows.ClientRows: series from Prometheus).
        return client_files.row(host), None
    if not hasattr(client_files, "texts"):
        return client_row(host, client_files[host], mount_point, mount_points, checkpoint_seconds), None
    texts = client_files.texts(host, {FIGURES_FILE: FIGURES_FILE})
    row = host_figures.read_row(host, texts, mount_point, mount_points) if FIGURES_FILE in texts else None
    if row is None:
        return client_row(host, client_files.parsed(host, texts), mount_point, mount_points, checkpoint_seconds), None
    view, excluded, canary, evidence = row
    probe_text = None
    if evidence is not None:
        # probe.json is no source of the figures (written after them): read here, as from the files.
        probe = client_files.parsed(host, texts, ("probe",)).get("probe")
        probe_text = texts.get("probe") if isinstance(probe, dict) else None
        evidence = dataclasses.replace(evidence, probe=kept_probe(probe))
    return (view, excluded, canary, evidence), (texts[FIGURES_FILE], probe_text, None if evidence is None or probe_text else evidence.probe)


def _in_this_process(shared, hosts):
    """[_chunk_rows(_read_chunk(shared, chunk)) for each chunk of hosts], here and in order: the reading without
    forked workers (a small bundle, or a caller that passes no parallel map)."""
    return [_chunk_rows(_read_chunk(shared, hosts[start:start + CLIENT_CHUNK])) for start in range(0, len(hosts), CLIENT_CHUNK)]


def _read_clients(client_files, mount_point, problems=None, mount_points=None, checkpoint_seconds=None, parallel=None):
    """(usable client views, excluded clients, each usable client's ClientEvidence, every client's canary
    block): each client's files are taken once, their figures kept and their texts dropped (a bundle of
    thousands of clients never sits whole in memory); BundleError when no client is usable. problems:
    the list the reader adds unparsed files to (bundle["problems"]), kept in host order;
    checkpoint_seconds: the run's, which the client's link rows are scaled to; parallel: what forks the
    readers (host/parallel_map, passed by the module or filter that reads the bundle: the diagnosis
    forks nothing itself), None to read every client here."""
    problems = [] if problems is None else problems
    hosts = sorted(client_files)
    many = parallel is not None and len(hosts) > PARALLEL_CLIENTS
    workers = parallel.workers_for(hosts, PARALLEL_CLIENTS // 2) if many else 1
    shared = (client_files, mount_point, problems, mount_points, checkpoint_seconds)
    if workers > 1:
        chunks = parallel.chunked_map(_read_chunk, shared, hosts, CLIENT_CHUNK, workers, then=_chunk_rows)
    else:
        chunks = _in_this_process(shared, hosts)
    clients = []
    excluded = []
    evidence = {}
    canaries = {}
    for rows, added in chunks:
        if workers > 1:
            problems.extend(added)
        for host, view, problem, canary, figures in rows:
            if canary is not None:
                canaries[host] = canary
            if problem is None:
                clients.append(view)
                evidence[host] = figures
            else:
                excluded.append(problem)
    if not clients:
        raise BundleError("no usable client capture, every client's mountstats is broken: %s"
                          % "; ".join(capture_problem_text(problem) for problem in excluded))
    return clients, excluded, evidence, canaries


def canary_ranks(run):
    """Every client's canary ranks on the controller's clock (canary.combine_hosts), as the run kept them."""
    canaries = run["canaries"]
    return combine_hosts(dict((host, block["ranks"]) for host, block in canaries.items()),
                         dict((host, block["clock"]) for host, block in canaries.items()))


def canary_harness(run):
    """{host: canary.json's `harness` block} as the run kept it; {} for old bundles."""
    return dict((host, block["harness"]) for host, block in run["canaries"].items() if isinstance(block["harness"], dict))


SERVER_CHECKPOINT_WINDOW = "the server's samples at the ranks' start and after the last rank ended"


def server_samples(server, checkpoint_seconds):
    """(before, after, seconds the traffic flowed or None, how): the checkpoint's own samples when taken."""
    start, end = server["host_start"], server["host_end"]
    if start and end and end["time"] > start["time"]:
        # Taken at start_at and once every client's canary had returned: the tail after the
        # last rank (Ansible's polling) is idle time, so the shares are still scaled.
        return start, end, checkpoint_seconds, SERVER_CHECKPOINT_WINDOW
    how = "the statistics window"
    if start and end:
        # The sample "at go" is asynchronous: on a starved server (the CI lab, 2026-12-03) it ran after the
        # ranks and after the end sample, a negative window that measures nothing.
        how += (" (the server's sample at the ranks' start was taken after the end sample, %.1f s late: "
                "not a checkpoint window)" % (start["time"] - end["time"]))
    return server["host_before"], server["host_after"], checkpoint_seconds, how


def _server_view(host, files):
    for name in ("nfsd_before", "nfsd_after"):
        if not files.get(name):
            raise BundleError("servers/%s/%s.txt is missing or empty" % (host, name))
    view = {"host": host, "nfsd": nfsd_delta(parse_nfsd_stats(files["nfsd_after"]), parse_nfsd_stats(files["nfsd_before"])),
            "pool": None, "threads": parse_single_number(files.get("threads")),
            "host_before": _sample(files.get("host_before")), "host_after": _sample(files.get("host_after")),
            "host_start": _sample(files.get("host_start")), "host_end": _sample(files.get("host_end"))}
    view["kernel_release"] = kernels.server_kernel([view])
    if files.get("pool_stats_after"):
        view["pool"] = pool_stats_delta(parse_pool_stats(files["pool_stats_after"]), parse_pool_stats(files.get("pool_stats_before") or ""))
    if view["threads"] is None:
        view["threads"] = view["nfsd"]["threads"]
    return view


def _new_total():
    return {"ops": 0, "rtt_ms": 0.0, "exe_ms": 0.0, "queue_ms": 0.0, "bytes_sent": 0, "retrans": 0, "timeouts": 0, "errors": 0}


def _add_op(total, op):
    """One client's per-op delta into a total: ops and summed ms (to re-average)."""
    total["ops"] += op["ops"]
    total["rtt_ms"] += op["avg_rtt_ms"] * op["ops"]
    total["exe_ms"] += op["avg_exe_ms"] * op["ops"]
    total["queue_ms"] += op["avg_queue_ms"] * op["ops"]
    total["retrans"] += op["retrans"]
    total["errors"] += op["errors"] or 0
    # A source without a figure (Prometheus's series: no per-op bytes or timeouts) leaves the total unmeasured.
    for key in ("bytes_sent", "timeouts"):
        total[key] = total[key] + op[key] if total[key] is not None and op[key] is not None else None


def _averaged(total):
    for key in ("rtt", "exe", "queue"):
        total["avg_%s_ms" % key] = total["%s_ms" % key] / total["ops"] if total["ops"] else 0.0
    return total


def sum_op(clients, names):
    """Totals of per-op deltas over clients: ops and summed ms (to re-average)."""
    total = _new_total()
    for client in clients:
        for name in names:
            op = client["delta"]["ops"].get(name)
            if op:
                _add_op(total, op)
    return _averaged(total)


def op_totals(clients):
    """{op: sum_op(clients, (op,))} for every op the clients sent, in one pass (the same sums, client by client)."""
    totals = {}
    for client in clients:
        for name, op in client["delta"]["ops"].items():
            if op:
                _add_op(totals.setdefault(name, _new_total()), op)
    return dict((name, _averaged(total)) for name, total in totals.items())


def _idle_rtt_ms(context, clients):
    """The path's RTT without load: context network.idle_rtt_ms, else the fastest small op."""
    network = context.get("network") or {}
    if network.get("idle_rtt_ms"):
        return float(network["idle_rtt_ms"]), "context network.idle_rtt_ms"
    best = None
    for client in clients:
        for name in IDLE_RTT_OPS:
            op = client["delta"]["ops"].get(name)
            if op and op["ops"] > 0 and op["avg_rtt_ms"] > 0 and (best is None or op["avg_rtt_ms"] < best[0]):
                best = (op["avg_rtt_ms"], "lowest avg RTT of a small op in the window (%s)" % name)
    return best if best else (None, "no small op in the window")


def probe_rate(probe):
    """A client's iperf3 probe in bytes/s, or None when it has no usable result."""
    summary = probe.get("summary") if isinstance(probe, dict) else None
    if not isinstance(summary, dict) or summary.get("error") or not summary.get("received_bits_per_second"):
        return None
    return float(summary["received_bits_per_second"]) / 8.0


def read_run(bundle, parallel=None):
    """The run's context, the usable client and server views, the achieved throughput and the
    target arithmetic; BundleError names what the bundle lacks. parallel: host/parallel_map (or
    anything with its workers_for and chunked_map) to read a large bundle's clients in forked
    workers; None reads them here."""
    context = bundle.get("context") or {}
    if not isinstance(context, dict):
        raise BundleError("context.yml must be a mapping")
    target = _given_target(context)
    mount_point = context.get("mount_point")
    if not mount_point:
        raise BundleError("context.yml: mount_point is required")
    client_files = bundle.get("clients") or {}
    if not client_files:
        raise BundleError("the bundle has no clients/<host>/ directory")
    # The reader adds the files it cannot parse to bundle["problems"] while the clients are read.
    problems = bundle.get("problems") if isinstance(bundle.get("problems"), list) else None
    canary = context.get("canary") or {}
    # The canary's several NFS paths (context.yml canary.mount_points): every one's mountstats, judged together.
    clients, excluded_clients, evidence, canaries = _read_clients(client_files, mount_point, problems, canary.get("mount_points"),
                                                                  _context_checkpoint_seconds(context, canary), parallel)
    server_files = bundle.get("servers") or {}
    # Views made from another source than nfsd's files (prometheus/rows.ServerViews) are taken as they are.
    servers = [server_files.view(host) if hasattr(server_files, "view") else _server_view(host, server_files[host])
               for host in sorted(server_files)]
    ops = op_totals(clients)
    capture_view = _capture_view(context, clients)
    if capture_view is None:
        achieved, achieved_source = _achieved(canary, clients)
    else:
        achieved, achieved_source = capture_view["bytes_per_second"], capture_view["source"]
    network = context.get("network") or {}
    capacity = checkpoint_capacity(target.get("checkpoint_bytes"), target.get("window_seconds"),
                                   server_link_gbps=network.get("server_link_gbps"),
                                   client_link_gbps=network.get("client_link_gbps"),
                                   clients=network.get("clients") or len(clients),
                                   observed_bytes_per_second=achieved)
    target_bps = capacity["target_bytes_per_second"]
    return {
        "context": context, "mount_point": mount_point, "canary": canary, "clients": clients, "excluded_clients": excluded_clients,
        "servers": servers, "window": _saved_window(context),
        # Host evidence only from the clients whose statistics are usable (the same set as every figure).
        "client_evidence": evidence, "canaries": canaries, "problems": list(bundle.get("problems") or []),
        # Per-op totals and transport ratios, once, over the usable clients: the diagnosis and the report read these.
        "ops": ops, "figures": client_figures(context, clients, ops),
        "checkpoint_seconds": _checkpoint_seconds(canary, capture_view),
        "capture": capture_view, "paths": nfs_paths.path_figures(clients),
        "achieved": achieved, "achieved_source": achieved_source, "capacity": capacity, "target_bps": target_bps,
        "target": target,
        # A since-mount average is no checkpoint window: no gap against the target (CONTRACT 2).
        "gap": target_bps / achieved if target_bps and achieved > 0 and not since_mount(context) else None,
    }


def _given_target(context):
    """context.yml's target when the operator gave one: {checkpoint_bytes, window_seconds} or {}.

    Not given (CONTRACT 2): checkpoint_bytes null, 0 or missing, or a capture's bytes taken from what
    it measured (checkpoint_bytes_from: measured, bundles from before the target was required): the
    written bytes against themselves decide nothing.
    """
    target = context.get("target") or {}
    if not isinstance(target, dict):
        raise BundleError("context.yml: target must be a mapping")
    if target.get("checkpoint_bytes") in (None, "", 0) or target.get("window_seconds") in (None, "", 0):
        return {}
    if target.get("checkpoint_bytes_from") == "measured":
        return {}
    return {"checkpoint_bytes": _number(target["checkpoint_bytes"], "context.yml target.checkpoint_bytes"),
            "window_seconds": _number(target["window_seconds"], "context.yml target.window_seconds")}


def since_mount(context):
    window = _saved_window(context)
    return bool(window and window["kind"] == SAVED_SINCE_MOUNT)


def _capture_view(context, clients):
    """A capture bundle's window and achieved figure (capture.achieved()), None for other bundles.

    A capture (roles/checkpoint_capture, `source: capture`) has no canary ranks: the figure is the
    written bytes of the usable clients' deltas over the window's seconds, with its flags. The
    operator's checkpoint size is compared with the written bytes; one taken from them is not.
    """
    if context.get("source") == "prometheus":
        return _prometheus_view(context, clients)
    block = context.get("capture")
    if context.get("source") != "capture" or not isinstance(block, dict):
        return None
    _number(block.get("seconds"), "capture.seconds")
    target = context.get("target") or {}
    stated = target.get("checkpoint_bytes") if target.get("checkpoint_bytes_from") != "measured" else 0
    view = capture.achieved(block, [client["delta"] for client in clients], _number(stated or 0, "target.checkpoint_bytes", False))
    view["window"] = block
    return view


def _prometheus_view(context, clients):
    """A bundle from Prometheus (source: prometheus): a capture's figure over the window its series were read on,
    with what the series do not hold said where the figure is (context.yml prometheus.not_in_series)."""
    block = context.get("prometheus")
    window = block.get("window") if isinstance(block, dict) else None
    if not isinstance(window, dict):
        raise BundleError("context.yml: prometheus.window is required for source: prometheus")
    _number(window.get("seconds"), "prometheus.window.seconds")
    # The bytes were counted between the samples at the window's edges: their mount ages' rise (each client's
    # interval_seconds) is that time, where the grid's edges may lie up to a scrape interval off.
    seconds = max([client["delta"]["interval_seconds"] for client in clients] or [0.0]) or window["seconds"]
    target = context.get("target") or {}
    stated = _number(target.get("checkpoint_bytes") or 0, "target.checkpoint_bytes", False)
    view = capture.achieved(dict(window, seconds=seconds), [client["delta"] for client in clients], stated)
    view.update(source=capture.PROMETHEUS_SOURCE, note=capture.prometheus_note(window, block.get("not_in_series")), window=window)
    view["flags"] += _edge_flags(window, clients)
    return view


DISTORTED_FLAGS = ("distorted_edges",)


def _edge_flags(window, clients):
    """capture.achieved()'s flags of the collector's runs around a window from Prometheus (each client's delta edges,
    prometheus/rows.py): distorted_edges when they widen it by more than signals.EDGE_WIDEN_SHARE (the writes of a
    wider span are counted: no verdict on it), no_run_after_end when a client's last run in the answers is before
    its end (its last writes may be missing)."""
    seconds = float(window.get("seconds") or 0.0)
    flags, widest, late = [], None, []
    for client in clients:
        edges = client["delta"].get("edges") or {}
        if edges.get("measured_by") != "collector runs":
            continue
        widen = max(0.0, edges["before_start_seconds"]) + max(0.0, edges["after_end_seconds"])
        if widest is None or widen > widest[1]:
            widest = (client["host"], widen, edges)
        if edges.get("end_missing"):
            late.append(client["host"])
    if widest is not None and seconds > 0 and signals.EDGE_WIDEN_SHARE.crossed(widest[1] / seconds):
        host, widen, edges = widest
        figures = (widen, host, edges["before_start_seconds"], edges["after_end_seconds"], 100 * signals.EDGE_WIDEN_SHARE.threshold, seconds)
        flags.append(capture.flag("distorted_edges", "the collector's runs around the window lie %.1f s outside it on %s (%.1f s before "
                                  "its start, %.1f s after its end; more than %g %% of its %.1f s): the writes of that wider span are "
                                  "counted, so the throughput carries no verdict" % figures))
    resolution = ((window.get("burst") or {}).get("resolution_seconds") or {}) if isinstance(window.get("burst"), dict) else {}
    unknown = sum(float(value or 0.0) for value in resolution.values())
    if not flags and seconds > 0 and signals.EDGE_WIDEN_SHARE.crossed(unknown / seconds):
        flags.append(capture.flag("distorted_edges", "the burst's edges are the collector's runs around its writes, which began up to "
                                  "%.1f s after its start and ended up to %.1f s before its end (more than %g %% of its %.1f s): the "
                                  "throughput is diluted over them, so it carries no verdict"
                                  % (resolution.get("start") or 0.0, resolution.get("end") or 0.0,
                                     100 * signals.EDGE_WIDEN_SHARE.threshold, seconds)))
    if late:
        flags.append(capture.flag("no_run_after_end", "no collector run at or after the window's end in the answers on %s: its "
                                  "last run before the end is taken, so writes after that run are missing" % ", ".join(sorted(late))))
    return flags


def distorted(capture_view):
    """Whether a capture's figure is flagged as distorted (no verdict is given on it)."""
    return bool(capture_view) and any(flag["kind"] in DISTORTED_FLAGS for flag in capture_view.get("flags") or ())


def _context_checkpoint_seconds(context, canary):
    """_checkpoint_seconds() before the clients are read (it needs only context.yml), None where it would fail:
    read_run fails there later, in its own order, and no client's figure is used."""
    block = context.get("capture") if context.get("source") == "capture" else (context.get("prometheus") or {}).get("window")
    window = {"seconds": block.get("seconds")} if context.get("source") in ("capture", "prometheus") and isinstance(block, dict) else None
    try:
        return _checkpoint_seconds(canary, _capture_view_seconds(window))
    except (TypeError, ValueError, AttributeError):
        return None


def _capture_view_seconds(window):
    return {"seconds": float(window["seconds"] or 0.0)} if window is not None else None


def _checkpoint_seconds(canary, capture_view):
    """The seconds the mount was written: a burst buffer's drain, else the canary's span, else the capture's window."""
    drain = canary.get("drain")
    if isinstance(drain, dict) and drain.get("seconds"):
        return float(drain["seconds"])
    return float(canary["seconds"]) if canary.get("seconds") else _capture_seconds(capture_view)


def _capture_seconds(capture_view):
    """The window on the controller's clock: the host samples bracket it, so CPU and link shares are not scaled."""
    return capture_view["seconds"] if capture_view else None


def _saved_window(context):
    """The statistics window of a bundle built from files saved by hand (context.yml `saved`, written by
    ckptio.nfs.saved_stats_bundle): {"kind": "snapshots" or "since_mount", "seconds"}; None for other bundles."""
    saved = context.get("saved")
    if not isinstance(saved, dict) or saved.get("window") not in (SAVED_SNAPSHOTS, SAVED_SINCE_MOUNT):
        return None
    return {"kind": saved["window"], "seconds": saved.get("window_seconds"), "source": "files saved by hand"}


def seconds_text(seconds):
    return "%.0f s" % float(seconds) if seconds is not None else "an unknown time"


def _achieved(canary, clients):
    """(achieved bytes per second, where it comes from): a burst buffer's drain to NFS (the ranks wrote to a
    local path: what the mount took is the drain), else the canary's MLPerf aggregate, else mountstats."""
    drain = canary.get("drain")
    if isinstance(drain, dict) and drain.get("bytes") and drain.get("seconds"):
        seconds = _number(drain["seconds"], "canary.drain.seconds")
        return (_number(drain["bytes"], "canary.drain.bytes") / seconds,
                "drain to NFS: bytes / (latest drain end - earliest drain start); the ranks wrote to a local path")
    if canary.get("bytes") and canary.get("seconds"):
        # MLPerf Storage rule: total bytes over the slowest rank's duration. context.yml is input:
        # a value that is no positive number fails naming its key.
        _number(canary["bytes"], "canary.bytes")
        _number(canary["seconds"], "canary.seconds")
        return context_throughput(canary), "canary: total bytes / (latest end - earliest start), " + MLPERF_STATED
    write_bytes = sum(client["delta"]["write_bytes"] for client in clients)
    interval = max(client["delta"]["interval_seconds"] for client in clients)
    return write_bytes / interval if interval else 0.0, "NFS WRITE bytes in mountstats / mount age delta"


def client_figures(context, clients, ops):
    """Per-op totals (ops: op_totals(clients)) and transport ratios over the usable clients, and the NFS versions in use."""
    sends = sum(client["delta"]["rpc"]["sends"] for client in clients)
    idle_rtt, idle_rtt_source = _idle_rtt_ms(context, clients)
    versions = sorted(set(client["delta"]["nfs_version"] for client in clients))
    return {
        "write": ops.get("WRITE") or sum_op((), ()), "commit": ops.get("COMMIT") or sum_op((), ()), "metadata": sum_op(clients, METADATA_OPS),
        "idle_rtt": idle_rtt, "idle_rtt_source": idle_rtt_source,
        "sends": sends,
        "backlog_per_send": sum(client["delta"]["rpc"]["bklog_u"] for client in clients) / float(sends) if sends else 0.0,
        "sending_per_send": sum(client["delta"]["rpc"]["sending_u"] for client in clients) / float(sends) if sends else 0.0,
        "versions": versions, "sessions": all(version not in ("3", "4.0", "4", "2") for version in versions),
    }
