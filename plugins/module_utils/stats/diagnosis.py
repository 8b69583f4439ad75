# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which layer limits a checkpoint, and is tuning enough? Pure logic on a capture bundle.

A bundle (docs/capture-bundle.md) is passed in memory as
    {"context": {...context.yml...},
     "clients": {HOST: {"mountstats_before": TEXT, "mountstats_after": TEXT,
                        "dstate": TEXT?, "sunrpc": TEXT?}},
     "servers": {HOST: {"nfsd_before": TEXT, "nfsd_after": TEXT, "pool_stats_before": TEXT?,
                        "pool_stats_after": TEXT?, "threads": TEXT?}}}
Facts behind every threshold are in the comment next to it (kernel source, lab measurement
on kernel 6.1, or vendor note), see also docs/nfs-facts.md.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.stats.bundle import BundleError  # noqa: F401 (re-exported)
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import host_evidence
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import diagnosis_headline
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import diagnosis_markdown
from ansible_collections.ckptio.nfs.plugins.module_utils.config import profiles
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import barrier
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import clock
# diagnosis.md (per-host lines, or a summary at scale) is rendered in its own file; re-exported.
from ansible_collections.ckptio.nfs.plugins.module_utils.stats.diagnosis_markdown import render_markdown  # noqa: F401 pylint: disable=unused-import
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import capture
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import kernels
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import network_loss
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import mount_state
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import metadata_storm
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import pace_host
from ansible_collections.ckptio.nfs.plugins.module_utils.stats.bundle import canary_ranks
from ansible_collections.ckptio.nfs.plugins.module_utils.canary.plan import context_throughput
from ansible_collections.ckptio.nfs.plugins.module_utils.stats.dstate import parse_dstate, summarize_dstate
from ansible_collections.ckptio.nfs.plugins.module_utils.stats.nfsd_stats import parse_nfsd_stats, parse_pool_stats, parse_single_number
from ansible_collections.ckptio.nfs.plugins.module_utils.stats.stats_delta import mountstats_delta, nfsd_delta, pool_stats_delta

LAYERS = ("network", "server_cpu", "client_rpc_slots", "server_threads", "server_storage", "access_pattern", "client_cpu", "none")
VERDICTS = ("meets_target", "tune", "rearchitect", "no_target", "no_window")
# What a bundle without a target (context.yml target.checkpoint_bytes null, CONTRACT 2) says to set.
NO_TARGET_TEXT = diagnosis_headline.NO_TARGET_TEXT
NO_TARGET_SAVED = diagnosis_headline.NO_TARGET_SAVED

# 2x100GbE = 25 GB/s raw, ~20 GB/s practical (protocol headers, TCP, RPC framing).
PRACTICAL_LINK_EFFICIENCY = 0.8
# The network is the limit once achieved throughput reaches this share of practical capacity.
NETWORK_BUSY_SHARE = 0.8
# Measured link utilisation (bytes on the NFS interfaces / (nominal speed x time)). At 70 % of
# nominal averaged over a checkpoint a link is full: TCP goodput over Ethernet tops out at
# ~94 % of line rate and a checkpoint's bursts queue well before the average gets there. Below
# 30 % the link has room for 3x more: it cannot be what limits (the seed's links ran at 4.4 %).
LINK_FULL_SHARE = 0.7
LINK_CLEAR_SHARE = 0.3
# The probe (iperf3, same path, streams = nconnect): NFS moving 80 % of what raw TCP carried is
# at the path's ceiling (the same 80 % protocol allowance as PRACTICAL_LINK_EFFICIENCY); below
# 50 % the path had room.
PROBE_FULL_SHARE = 0.8
PROBE_CLEAR_SHARE = 0.5
# The probe's clients must send at once for their sum to be the server's capacity: 2 s, or a
# quarter of the run, is the most the starts may differ before the sum overstates the path.
# The starts compared are each client's started_at (fractional, right before iperf3) put on the
# controller's clock with its measured offset (the lab's VMs differed by up to 1.3 s); a bundle
# from before has only iperf3's own start, in whole seconds, on the host's clock.
PROBE_START_SPREAD = 2.0
PROBE_START_SPREAD_SHARE = 0.25
# CPUs busy (all states but idle and iowait) over the checkpoint, averaged over the host's CPUs.
# Lab (TCG, one vCPU): a CPU-bound server ran 92-100 % busy; an idle one 4 %. 85 % leaves room
# for sampling noise while still meaning "no idle CPU to take more work".
CPU_BUSY_LIMIT = 0.85
# A disk with I/O in flight this share of the checkpoint is the storage at work without pause.
DISK_BUSY_LIMIT = 0.8
# A checkpoint window much shorter than the window between two host samples makes scaled
# figures (busy share during the checkpoint) weak: say so.
WEAK_SCALING_FACTOR = 3.0
# Requests waiting for a transport slot, per send (v3/v4.0). Lab: 680-935 with 2 slots.
BACKLOG_PER_SEND_LIMIT = 1.0
# A WRITE waits longer for a slot than it spends on the wire, and noticeably (ms).
QUEUE_TO_RTT_LIMIT = 1.0
QUEUE_MS_FLOOR = 10.0
# Link saturation: the WRITE RTT is this many times the idle RTT while requests queue to send
# (sending_u per send >= 1). Session-slot waits leave the RTT near idle (lab: 2.9x with 30
# slots in use vs 59x with a saturated emulated link).
RTT_INFLATION_LIMIT = 4.0
SENDING_PER_SEND_LIMIT = 1.0
# Share of packets that found no idle nfsd thread (1 - threads-woken/packets-arrived; kernel
# 6.1 lab: 85 % with 1 thread, <1 % with 8 or 32 threads).
NO_IDLE_THREAD_LIMIT = 0.5
NO_IDLE_THREAD_CONTRIBUTING = 0.1
# Older kernels count sockets-enqueued separately (rising = no idle thread): share of packets.
SOCKETS_ENQUEUED_LIMIT = 0.2
# Metadata ops slower than this many idle RTTs (and this many ms) point at the access pattern.
METADATA_RTT_FACTOR = 10.0
METADATA_MS_FLOOR = 50.0
# Share of D-state samples where ranks wait on one file's write lock (nfs_start_io_write).
SHARED_LOCK_SHARE_LIMIT = 0.1
# What tuning one layer realistically buys: vendors report ~3x from nconnect=4 and "no gains
# beyond four" (Azure Files); docs/nfs-facts.md: tuning alone is unlikely to close 7x.
MAX_TUNING_GAIN = 3.0
# A cap this small is an artificial limit: removing it can give more than MAX_TUNING_GAIN
# (lab: v4.0 with 2 slots 1.3 MB/s vs 20 MB/s with the default).
TINY_SLOT_CAP = 16
WRITE_SIZE_FOR_LITTLE = 1048576
LITTLE_RTT_MS = 10.0

METADATA_OPS = ("OPEN", "OPEN_NOATTR", "CLOSE", "GETATTR", "LOOKUP", "ACCESS", "SETATTR", "CREATE", "REMOVE",
                "RENAME", "MKDIR", "READDIR", "READDIRPLUS", "FSSTAT", "FSINFO", "PATHCONF", "LINK", "SYMLINK")
# context.yml `saved.window` (module_utils/stats/saved_files.py): two snapshots saved by hand, or
# one snapshot against the zero counters of its mount.
SAVED_SNAPSHOTS = "snapshots"
SAVED_SINCE_MOUNT = "since_mount"
SINCE_MOUNT_NOTE = ("one mountstats snapshot: every client figure is an average over the mount's life (%s), not a checkpoint "
                    "window; idle time dilutes the throughput, and the per-op times mix every workload since the mount")
IDLE_RTT_OPS = ("NULL", "GETATTR", "ACCESS", "OPEN", "CLOSE", "LOOKUP", "FSINFO", "PATHCONF", "SEQUENCE", "RENEW", "SERVER_CAPS")


def _number(value, name, positive=True):
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise BundleError("%s must be a number, got %r" % (name, value))
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
    target = checkpoint_bytes / window_seconds
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


def _sunrpc_settings(text):
    """sunrpc.txt 'name value' lines; the first value wins (the live sysctl comes first)."""
    settings = {}
    for line in (text or "").splitlines():
        words = line.split()
        if len(words) < 2 or words[0].startswith("#"):
            continue
        settings.setdefault(words[0], words[1])
    return settings


def _int_setting(settings, name):
    try:
        return int(settings.get(name))
    except (TypeError, ValueError):
        return None


def _client_view(host, files, mount_point):
    """(view, None) for the host's mount on mount_point, or (None, excluded) when its capture is
    not usable (stats_delta decides: truncated, reset or new_mount)."""
    for name in ("mountstats_before", "mountstats_after"):
        if not files.get(name):
            raise BundleError("clients/%s/%s.txt is missing or empty" % (host, name))
    # The text itself, not its lines: a last line cut without its newline stays visible.
    deltas = mountstats_delta(files["mountstats_after"], files["mountstats_before"], mount_points=[mount_point] if mount_point else None)
    if not deltas:
        raise BundleError("clients/%s: no NFS mount on %s in mountstats_after.txt" % (host, mount_point))
    # The kernel lists mounts in mount order: with several blocks on the path (the same export
    # mounted twice), the last is the mount on top, the one the checkpoint path resolves to.
    delta = deltas[-1]
    if not delta["usable"]:
        return None, {"host": host, "mount_point": delta["mount_point"], "device": delta["device"],
                      "problems": delta["problems"], "problem_details": delta["problem_details"]}
    dstate = summarize_dstate(parse_dstate(files.get("dstate"))) if files.get("dstate") else None
    return {"host": host, "delta": delta, "sunrpc": _sunrpc_settings(files.get("sunrpc")), "dstate": dstate}, None


def _capture_problem_text(excluded):
    return "%s %s (%s): %s" % (excluded["host"], excluded["mount_point"], ", ".join(excluded["problems"]),
                               "; ".join(excluded["problem_details"]))


def _client_views(client_files, mount_point):
    """(usable client views, excluded clients); BundleError when no client is usable."""
    clients = []
    excluded = []
    for host in sorted(client_files):
        view, problem = _client_view(host, client_files[host], mount_point)
        if problem is None:
            clients.append(view)
        else:
            excluded.append(problem)
    if not clients:
        raise BundleError("no usable client capture, every client's mountstats is broken: %s"
                          % "; ".join(_capture_problem_text(problem) for problem in excluded))
    return clients, excluded


def _add_capture_problems(evidence, excluded):
    """Each excluded client is named in the evidence: its figures are in no other row."""
    for problem in excluded:
        evidence.add(None, "capture problem on %s" % problem["host"], ", ".join(problem["problems"]), "a usable before/after pair", True,
                     "excluded from every figure: %s" % _capture_problem_text(problem))


def _sample(value):
    """A host sample from the bundle (parsed JSON), or None when absent or not a sample."""
    return value if isinstance(value, dict) and value.get("format") == 1 else None


def _client_samples(files):
    """(before, after) over the stats window and (start, end) over the canary's ranks, or Nones."""
    canary = files.get("canary") if isinstance(files.get("canary"), dict) else {}
    samples = canary.get("host_samples") or {}
    return (_sample(files.get("host_before")), _sample(files.get("host_after")),
            _sample(samples.get("start")), _sample(samples.get("end")))


SERVER_CHECKPOINT_WINDOW = "the server's samples at the ranks' start and after the last rank ended"


def _server_samples(server, checkpoint_seconds):
    """(before, after, seconds the traffic flowed or None, how): the checkpoint's own samples when taken."""
    if server["host_start"] and server["host_end"]:
        # Taken at start_at and once every client's canary had returned: the tail after the
        # last rank (Ansible's polling) is idle time, so the shares are still scaled.
        return server["host_start"], server["host_end"], checkpoint_seconds, SERVER_CHECKPOINT_WINDOW
    return server["host_before"], server["host_after"], checkpoint_seconds, "the statistics window"


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


def _sum_op(clients, names):
    """Totals of per-op deltas over clients: ops and summed ms (to re-average)."""
    total = {"ops": 0, "rtt_ms": 0.0, "exe_ms": 0.0, "queue_ms": 0.0, "bytes_sent": 0, "retrans": 0, "timeouts": 0, "errors": 0}
    for client in clients:
        for name in names:
            op = client["delta"]["ops"].get(name)
            if not op:
                continue
            total["ops"] += op["ops"]
            total["rtt_ms"] += op["avg_rtt_ms"] * op["ops"]
            total["exe_ms"] += op["avg_exe_ms"] * op["ops"]
            total["queue_ms"] += op["avg_queue_ms"] * op["ops"]
            total["bytes_sent"] += op["bytes_sent"]
            total["retrans"] += op["retrans"]
            total["timeouts"] += op["timeouts"]
            total["errors"] += op["errors"] or 0
    ops = total["ops"]
    for key in ("rtt", "exe", "queue"):
        total["avg_%s_ms" % key] = total["%s_ms" % key] / ops if ops else 0.0
    return total


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


class _Evidence:
    def __init__(self):
        self.items = []

    def add(self, layer, signal, value, threshold, crossed, explanation):
        self.items.append({"layer": layer, "signal": signal, "value": _round(value), "threshold": threshold,
                           "crossed": bool(crossed), "explanation": explanation})
        return bool(crossed)

    def crossed(self, layer):
        return [item for item in self.items if item["layer"] == layer and item["crossed"]]


def _round(value):
    if isinstance(value, float):
        return round(value, 4)
    return value


def _scaled(share, window, busy_seconds):
    """A share over the sample window, scaled to the checkpoint inside it (nothing else ran then)."""
    if share is None:
        return None
    if busy_seconds and window and 0 < busy_seconds < window:
        return min(1.0, share * window / busy_seconds)
    return share


def _host_link_rows(host, side, before, after, addresses, busy_seconds, how):
    rows = []
    for row in host_evidence.link_rows(before, after, addresses, side, busy_seconds=busy_seconds):
        row = dict(row, host=host, side=side, measured_over=how)
        rows.append(row)
    return rows


def _link_rows(client_files, servers, checkpoint_seconds):
    """Every NFS link with bytes moved and, where its speed is known, its utilisation."""
    rows = []
    addresses = set()
    for host, files in sorted(client_files.items()):
        before, after, start, end = _client_samples(files)
        if start and end:
            # The canary sampled this host when its ranks started and ended: exact window.
            addresses.update(end.get("nfs_server_addresses") or [])
            rows += _host_link_rows(host, "client", start, end, end.get("nfs_server_addresses") or [], None,
                                    "the canary's own samples at its ranks' start and end")
        elif before and after:
            addresses.update(after.get("nfs_server_addresses") or [])
            rows += _host_link_rows(host, "client", before, after, after.get("nfs_server_addresses") or [], checkpoint_seconds,
                                    "the statistics window, scaled to the checkpoint's duration")
    for server in servers:
        before, after, busy_seconds, how = _server_samples(server, checkpoint_seconds)
        if before and after:
            rows += _host_link_rows(server["host"], "server", before, after, sorted(addresses), busy_seconds,
                                    how + ", scaled to the checkpoint's duration")
    return rows


def _probe_start(probe, summary):
    """A client's probe start on the controller's clock when its clock was measured, else as the host read it."""
    start = probe.get("started_at")
    if start is None:
        start = summary.get("start_epoch")
    if start is None:
        return None
    return clock.to_controller_time(float(start), clock.offset_of(probe.get("clock")))


def _probe_capacity(client_files, evidence):
    """Sum over clients of what raw TCP carried to the server in the same window (the probe), or None.

    The sum is a capacity only when the clients sent at once: starts further apart than
    PROBE_START_SPREAD (or a quarter of the run) mean each ran partly alone and faster, so the
    probe is flagged and not used.
    """
    total = 0.0
    hosts = []
    starts = []
    seconds = []
    per_host = {}
    for host, files in sorted(client_files.items()):
        probe = files.get("probe")
        summary = probe.get("summary") if isinstance(probe, dict) else None
        rate = _probe_rate(probe)
        if rate is None:
            if isinstance(probe, dict):
                evidence.add("network", "TCP probe from %s" % host, None, "a result", True,
                             "no usable iperf3 result: %s" % ((summary or {}).get("error") or probe.get("msg") or "no summary"))
            continue
        total += rate
        per_host[host] = rate
        hosts.append("%s %s (%s stream(s))" % (host, human.rate(rate), probe.get("streams", "?")))
        start = _probe_start(probe, summary)
        if start is not None:
            starts.append(start)
        if summary.get("seconds"):
            seconds.append(float(summary["seconds"]))
    if not hosts:
        return None
    spread = max(starts) - min(starts) if len(starts) > 1 else 0.0
    bound = max(PROBE_START_SPREAD, PROBE_START_SPREAD_SHARE * min(seconds)) if seconds else PROBE_START_SPREAD
    together = spread <= bound
    if not together:
        evidence.add("network", "TCP probe start spread", spread, "<= %.1f s" % bound, True,
                     "the clients' probes did not run at once (%s): their sum is no capacity and a path that looks far "
                     "from full may not be; only a path measured full still counts" % "; ".join(hosts))
    return {"bytes_per_second": total if together else None, "hosts": hosts, "start_spread_seconds": spread,
            "together": together, "per_host": per_host}


def _network_layer(evidence, capacity, achieved, target_bps, links, probe):
    """Is a link full? Only measurements decide: nominal speeds with interface counters, the probe,
    or the link speeds the operator gave in context.yml. Returns the state and its figure."""
    # What each measurement found, in the order of the evidence: full (any measured full),
    # measured (one phrase each), clear (the measurements far from full), unknown (links
    # without a known speed).
    seen = {"full": False, "measured": [], "clear": [], "unknown": []}
    _declared_links(evidence, capacity, achieved, target_bps, seen)
    _interface_links(evidence, links, seen)
    probe_share = _probe_shares(evidence, links, probe, achieved, seen)
    state = _network_state(evidence, links, probe_share, seen)
    measured, unknown = seen["measured"], seen["unknown"]
    if state == "unmeasured":
        summary = "links: unmeasured (no interface speed, no probe, no link speeds in context.yml)"
    else:
        summary = "links: " + "; ".join(measured) + ("" if not unknown else "; capacity unknown for " + "; ".join(unknown))
    headline = "network %s: %s" % (state, measured[0] if len(measured) == 1 else "; ".join(measured[:2])) if measured else \
        "network unmeasured: no interface speed, probe or declared link speed"
    return {"state": state, "full": seen["full"], "summary": summary, "headline": headline, "probe_share": probe_share,
            "unknown": unknown}


def _declared_links(evidence, capacity, achieved, target_bps, seen):
    """The link speeds declared in context.yml against the achieved throughput."""
    if capacity.get("network_is_limit") is None:
        return
    share = achieved / capacity["practical_link_bytes_per_second"]
    seen["full"] = evidence.add(
        "network", "achieved share of practical link capacity", share, ">= %.2f" % NETWORK_BUSY_SHARE,
        capacity["network_is_limit"], "%s achieved (all clients summed) of %s practical (%s raw, %s, from context.yml network)" % (
            human.rate(achieved), human.rate(capacity["practical_link_bytes_per_second"]),
            human.rate(capacity["raw_link_bytes_per_second"]), capacity["narrowest_link"]))
    if target_bps:
        evidence.add("network", "target share of practical link capacity", target_bps / capacity["practical_link_bytes_per_second"],
                     "> 1.0", not capacity["network_can_carry_target"],
                     "the links can%s carry the target" % ("" if capacity["network_can_carry_target"] else "not"))
    seen["measured"].append("%s of the declared link capacity (all clients summed, context.yml network)" % (
        human.share(capacity["observed_link_utilisation"])))
    seen["declared_share"] = capacity["observed_link_utilisation"]
    if share < LINK_CLEAR_SHARE:
        seen["clear"].append("declared links")


def _interface_links(evidence, links, seen):
    """Each NFS interface's bytes against its nominal speed."""
    for row in links:
        where = "%s %s %s" % (row["side"], row["host"], row["interface"])
        if row["reset"]:
            evidence.add("network", "interface counters on %s" % where, None, "no reset", True,
                         "a counter went backwards between the samples (interface re-created or driver reset): not used")
            continue
        if row["utilisation_during"] is None:
            seen["unknown"].append("%s (%s)" % (where, row["speed_source"]))
            continue
        is_full = row["utilisation_during"] >= LINK_FULL_SHARE
        evidence.add("network", "NFS link utilisation on %s" % where, row["utilisation_during"], ">= %.2f of nominal" % LINK_FULL_SHARE,
                     is_full, "%s over %s on a %s Mb/s link (%s; measured over %s)%s" % (
                         human.rate(row["bytes_per_second"] * row["window_seconds"] / row["busy_seconds"]),
                         human.seconds(row["busy_seconds"]),
                         row["speed_mbps"], row["speed_source"], row["measured_over"],
                         "; %d dropped, %d errors" % (row["dropped"], row["errors"]) if row["dropped"] or row["errors"] else ""))
        seen["full"] = seen["full"] or is_full
        seen["measured"].append("%s at %.1f %% of %s Mb/s" % (where, 100 * row["utilisation_during"], row["speed_mbps"]))
        if row["utilisation_during"] < LINK_CLEAR_SHARE:
            seen["clear"].append(where)


def _probe_shares(evidence, links, probe, achieved, seen):
    """NFS throughput against the probe's TCP capacity: summed over the clients, and per path.
    Returns the share the network verdict uses (the worst path when there is one), or None."""
    probe_share = None
    if probe and probe.get("lossy"):
        seen["measured"].append("the probe ran through a lossy path (%s retransmitted): no ceiling" % ", ".join(probe["lossy"]))
        return None
    if probe and probe["bytes_per_second"]:
        probe_share = achieved / probe["bytes_per_second"]
        evidence.add("network", "NFS throughput / TCP capacity of the path (probe)", probe_share, ">= %.2f" % PROBE_FULL_SHARE,
                     probe_share >= PROBE_FULL_SHARE,
                     "%s achieved (MLPerf rule) vs %s raw TCP summed over the clients (iperf3: %s)" % (
                         human.rate(achieved), human.rate(probe["bytes_per_second"]), "; ".join(probe["hosts"])))
    # Per path: the bytes on each client's NFS interface while its own ranks ran, against what
    # raw TCP carried on that same path. The MLPerf aggregate is diluted by the start spread and
    # the fsync tail; the interface's rate is what the link itself carried.
    shares = []
    for row in links:
        rate = (probe or {}).get("per_host", {}).get(row["host"]) if row["side"] == "client" else None
        if not rate or row["reset"] or row.get("bytes_per_second") is None or not row["measured_over"].startswith("the canary's own"):
            continue
        share = row["bytes_per_second"] / rate
        shares.append(share)
        evidence.add("network", "NFS link traffic / TCP capacity of the path on client %s (probe)" % row["host"], share,
                     ">= %.2f" % PROBE_FULL_SHARE, share >= PROBE_FULL_SHARE,
                     "%s on %s during the ranks vs %s of raw TCP on the same path" % (
                         human.rate(row["bytes_per_second"]), row["interface"], human.rate(rate)))
    if not shares and probe_share is None:
        return None
    worst = max(shares) if shares else probe_share
    if worst >= PROBE_FULL_SHARE or (probe_share or 0) >= PROBE_FULL_SHARE:
        seen["full"] = True
    probe_share = worst if shares else probe_share
    seen["measured"].append("NFS at %.0f %% of the path's TCP capacity (probe%s)" % (
        100 * probe_share, ", %s summed" % human.rate(probe["bytes_per_second"]) if probe["bytes_per_second"] else
        ", clients not at once"))
    if probe_share < PROBE_CLEAR_SHARE and probe["together"]:
        seen["clear"].append("probe")
    elif not seen["full"] and not probe["together"]:
        # Probes not at once only bound the path from below: inconclusive, neither busy nor clear.
        seen["clear"].append("probe (not at once)")
    return probe_share


def _network_state(evidence, links, probe_share, seen):
    """full, clear, busy, partial or unmeasured, from what the measurements found."""
    clear, measured, unknown = seen["clear"], seen["measured"], seen["unknown"]
    # The probe measures the whole path (every hop, whatever their speeds), and declared link
    # speeds cover the server's links: either rules the network out alone. Interface counters do
    # only when every NFS link, the server's included, has a known speed.
    covered = "probe" in clear or "declared links" in clear
    interfaces_clear = bool(clear) and not unknown and any(
        row["side"] == "server" and row["utilisation_during"] is not None for row in links)
    if seen["full"]:
        state = "full"
    elif covered or interfaces_clear:
        state = "clear"
    elif len(clear) < len(measured):
        # Measured, neither full nor far from it (e.g. NFS at 53 % of the probe's capacity).
        state = "busy"
    elif measured:
        state = "partial"
    else:
        state = "unmeasured"
    if state == "clear":
        evidence.add("network", "links far from full (network ruled out)", max(
            [row["utilisation_during"] for row in links if row["utilisation_during"] is not None]
            + [share for share in (probe_share, seen.get("declared_share")) if share is not None]),
            "< %.2f of nominal, < %.2f of the probe" % (LINK_CLEAR_SHARE, PROBE_CLEAR_SHARE), False, "; ".join(measured))
    if unknown and state not in ("full", "clear", "busy"):
        evidence.add("network", "links without a known capacity", len(unknown), "speed or probe needed", False,
                     "not measured: %s; run the probe (canary_validation_probe=true) or give network.server_link_gbps" % "; ".join(unknown))
    return state


def _cpu_rows(client_files, servers, checkpoint_seconds):
    rows = []
    for host, files in sorted(client_files.items()):
        before, after, start, end = _client_samples(files)
        if start and end:
            window = host_evidence.cpu_window(start["proc_stat"], end["proc_stat"])
            rows.append(("client", host, window, None, "the canary's own samples at its ranks' start and end"))
        elif before and after:
            window = host_evidence.cpu_window(before["proc_stat"], after["proc_stat"])
            rows.append(("client", host, window, after["time"] - before["time"], "the statistics window"))
    for server in servers:
        before, after, busy_seconds, how = _server_samples(server, checkpoint_seconds)
        if before and after:
            seconds = after["time"] - before["time"]
            window = host_evidence.cpu_window(before["proc_stat"], after["proc_stat"],
                                              own_cpu_seconds=after.get("sampler_cpu_seconds") or 0.0, window_seconds=seconds)
            rows.append(("server", server["host"], window, seconds, how))
    return rows


def _cpu_layers(evidence, client_files, servers, checkpoint_seconds):
    """server_cpu / client_cpu: CPUs without idle time during the checkpoint."""
    result = {"server_saturated": False, "client_saturated": False, "server_measured": False, "client_measured": False,
              "server_weak": False, "hosts": {}}
    for side, host, window, sample_seconds, how in _cpu_rows(client_files, servers, checkpoint_seconds):
        layer = "%s_cpu" % side
        if window is None or window.get("reset"):
            evidence.add(layer, "CPU counters on %s" % host, None, "readable, no reset", True,
                         "/proc/stat missing or went backwards between the samples (reboot): not used")
            continue
        busy = _scaled(window["busy"], sample_seconds, checkpoint_seconds)
        scaled = bool(sample_seconds and checkpoint_seconds and checkpoint_seconds < sample_seconds)
        # More busy time in the window than the checkpoint lasted: the rest of the window was
        # busy too (the harness), so the scaled share is an upper estimate.
        overflow = bool(scaled and window["busy"] * sample_seconds > 1.05 * checkpoint_seconds)
        weak = bool(sample_seconds and checkpoint_seconds and sample_seconds > WEAK_SCALING_FACTOR * checkpoint_seconds) or overflow
        busiest = window.get("busiest_cpu") or {}
        saturated = evidence.add(
            layer, "CPU busy during the checkpoint on %s" % host, busy, ">= %.2f of %d CPU(s)" % (CPU_BUSY_LIMIT, window["cpus"]),
            busy >= CPU_BUSY_LIMIT,
            "%s: user %.0f %%, system %.0f %%, irq+softirq %.0f %%, iowait %.0f %%, steal %.0f %% of all CPUs; busiest %s %.0f %% "
            "(softirq %.0f %%)%s%s%s" % (
                how, 100 * window["user"], 100 * window["system"], 100 * window["softirq"], 100 * window["iowait"],
                100 * window["steal"], busiest.get("name", "-"), 100 * busiest.get("busy", 0), 100 * busiest.get("softirq", 0),
                "; the sampler's own %.0f %% taken out" % (100 * window["sampler_share"]) if window.get("sampler_share") else "",
                "; scaled from %.0f s of samples to the %.0f s checkpoint (assumes the host idled outside it)" % (
                    sample_seconds, checkpoint_seconds) if scaled else "",
                " - weak: the window held more busy time than the checkpoint lasted, an upper estimate" if overflow else
                " - weak: the checkpoint is a small part of the window" if weak else ""))
        result["%s_measured" % side] = True
        result["%s_saturated" % side] = result["%s_saturated" % side] or saturated
        if side == "server" and saturated and weak:
            result["server_weak"] = True
        result["hosts"][host] = {"side": side, "busy": _round(busy), "softirq": _round(window["softirq"]),
                                 "iowait": _round(window["iowait"]), "cpus": window["cpus"], "measured_over": how}
    return result


def _disk_rows(evidence, servers, checkpoint_seconds):
    """The server's busiest disk during the checkpoint; returns (busy share or None, measured)."""
    busiest = None
    for server in servers:
        before, after, busy_seconds, _how = _server_samples(server, checkpoint_seconds)
        if not before or not after:
            continue
        seconds = after["time"] - before["time"]
        for row in host_evidence.disk_window(before.get("diskstats"), after.get("diskstats"), seconds):
            if row["reset"]:
                continue
            busy = _scaled(row["busy"], seconds, busy_seconds)
            if busiest is None or busy > busiest[0]:
                busiest = (busy, server["host"], row)
    if busiest is None:
        return None
    busy, host, row = busiest
    evidence.add("server_storage", "busiest disk on %s (%s) with I/O in flight during the checkpoint" % (host, row["device"]), busy,
                 ">= %.2f" % DISK_BUSY_LIMIT, busy >= DISK_BUSY_LIMIT,
                 "/proc/diskstats io_ticks: %d writes, %s, %s ms per write" % (
                     row["writes"], human.size(row["bytes_written"]), "%.1f" % row["avg_write_ms"] if row["avg_write_ms"] is not None else "-"))
    return busy


def diagnose(bundle):
    """The whole diagnosis of a bundle (see module docstring for the bundle shape).

    Each layer below reads the bundle's figures, adds its rows to the evidence (in this order,
    which is the order of diagnosis.md) and returns what it found; the ranking then names the
    limiting layer from those findings and the verdict says whether tuning can close the gap.
    """
    run = _read_run(bundle)
    evidence = _Evidence()
    _add_capture_problems(evidence, run["excluded_clients"])
    _add_window_evidence(evidence, run["window"])
    _add_capture_evidence(evidence, run["capture"])
    for problem in bundle.get("problems") or []:
        evidence.add(None, "unreadable bundle file", None, "valid", True, problem)
    figures = _client_figures(run["context"], run["clients"])
    # How this server's kernel sizes a v4.1 session (fixed cap up to 6.13, on demand from 6.14).
    figures["session_grant"] = kernels.session_slot_grant(kernels.server_kernel(run["servers"]))
    net, links = _network_evidence(evidence, run, figures)
    send = _send_side_evidence(evidence, run["clients"], figures, net)
    cpu = _cpu_layers(evidence, run["client_files"], run["servers"], run["checkpoint_seconds"])
    reconnects = _reconnect_evidence(evidence, run["clients"])
    slots = _client_rpc_slots_layer(evidence, run["clients"], figures, send)
    mounts = mount_state.assess(evidence, run["clients"], run["checkpoint_seconds"])
    threads = _server_threads_layer(evidence, run["servers"])
    storage = _server_storage_layer(evidence, run, figures, send, net, cpu, threads)
    access = _access_pattern_layer(evidence, run, figures, send)
    storm = metadata_storm.assess(evidence, run["clients"], METADATA_OPS, storage["disk_busy"], cpu["server_saturated"])
    access["signal"] = access["signal"] or storm["storm"]
    found = {"net": net, "cpu": cpu, "slots": slots, "threads": threads, "storage": storage, "access": access, "send": send, "mounts": mounts, "storm": storm}
    found["pace"] = pace_host.assess(canary_ranks(bundle), _pace_facts(run, links, found))
    decision = _decide(run, figures, found)
    facts = {
        "nfs_versions": figures["versions"], "sessions": figures["sessions"], "slot_cap": slots["cap"], "tiny_cap": slots["tiny_cap"],
        "write": figures["write"], "idle_rtt_ms": figures["idle_rtt"], "no_idle_thread_share": threads["no_idle"],
        "servers": run["servers"], "clients": run["clients"], "layout": access["layout"],
        "send_backed_up": send["backed_up"], "network": net, "reconnects": reconnects,
        "shared_file": access["shared_file"], "lock_waits": access["lock_waits"],
        "session_grant": figures["session_grant"], "mounts": mounts, "storm": storm,
        "canary": run["canary"],
    }
    recommendations = _recommendations(decision["limiting"], decision["contributing"], decision["verdict"], facts)
    result = _diagnosis_result(run, evidence, links, found, decision, recommendations)
    result["pace"] = found["pace"]
    result["headline"] = diagnosis_headline.headline(result, figures)
    result["first_screen"] = diagnosis_headline.first_screen(result)
    result["evidence"] = diagnosis_markdown.fold_evidence(result)
    return result


def _pace_facts(run, links, found):
    """What pace_host compares between hosts: mount options, live slots, loss, CPU, link traffic, D-state site."""
    facts = {}
    for client in run["clients"]:
        state = found["mounts"]["hosts"][client["host"]]
        wchans = (client["dstate"] or {}).get("wchan_counts") or {}
        facts[client["host"]] = {"nconnect": state["nconnect"], "wsize": state["wsize"],
                                 "requests_in_flight": state["requests_in_flight"], "write_queue_ms": state["write_queue_ms"],
                                 "cpu_busy": (found["cpu"]["hosts"].get(client["host"]) or {}).get("busy"),
                                 "dstate_site": max(sorted(wchans), key=wchans.get) if wchans else None}
    for row in found["net"]["loss"]["hosts"]:
        if row["side"] == "client" and row["host"] in facts and row.get("measured"):
            facts[row["host"]]["retrans_share"] = row["retrans_share"]
    for row in links:
        if row["side"] == "client" and row["host"] in facts and row.get("bytes_per_second") is not None:
            facts[row["host"]]["link_bytes_per_second"] = facts[row["host"]].get("link_bytes_per_second", 0) + row["bytes_per_second"]
    for host, files in run["client_files"].items():
        if host in facts:
            # each client's probe measured its own path: a slower path is what differs about a host
            facts[host]["probe_bytes_per_second"] = _probe_rate(files.get("probe"))
    return facts


def _probe_rate(probe):
    """A client's iperf3 probe in bytes/s, or None when it has no usable result."""
    summary = probe.get("summary") if isinstance(probe, dict) else None
    if not isinstance(summary, dict) or summary.get("error") or not summary.get("received_bits_per_second"):
        return None
    return float(summary["received_bits_per_second"]) / 8.0


def _remount_headroom(found):
    """(factor, why) of remounting the mounts that missed the tuning: the aggregate gains what the
    slowest of them loses against the other hosts' median end; without canary ranks, that host's
    WRITEs no longer waiting for a slot (exe / (exe - queue)), at most MAX_TUNING_GAIN."""
    missed = found["mounts"]["missed"]
    pace = [item for item in found["pace"]["pace"] if item["host"] in missed]
    if pace and found["pace"]["median_seconds"]:
        return pace[0]["seconds"] / found["pace"]["median_seconds"], "remounting %s: it ends with the other hosts (%.1f s -> %.1f s)" % (
            pace[0]["host"], pace[0]["seconds"], found["pace"]["median_seconds"])
    host = max(missed, key=lambda name: found["mounts"]["hosts"][name]["headroom"])
    return min(MAX_TUNING_GAIN, found["mounts"]["hosts"][host]["headroom"]), \
        "remounting %s: its WRITEs no longer waiting for a slot (exe / (exe - queue), at most %.0fx)" % (host, MAX_TUNING_GAIN)


def _read_run(bundle):
    """The run's context, the usable client and server views, the achieved throughput and the
    target arithmetic; BundleError names what the bundle lacks."""
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
    clients, excluded_clients = _client_views(client_files, mount_point)
    servers = [_server_view(host, files) for host, files in sorted((bundle.get("servers") or {}).items())]
    canary = context.get("canary") or {}
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
        "client_files": dict((client["host"], client_files[client["host"]]) for client in clients),
        "checkpoint_seconds": float(canary["seconds"]) if canary.get("seconds") else _capture_seconds(capture_view),
        "capture": capture_view,
        "achieved": achieved, "achieved_source": achieved_source, "capacity": capacity, "target_bps": target_bps,
        "target": target,
        # A since-mount average is no checkpoint window: no gap against the target (CONTRACT 2).
        "gap": target_bps / achieved if target_bps and achieved > 0 and not _since_mount(context) else None,
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


def _since_mount(context):
    window = _saved_window(context)
    return bool(window and window["kind"] == SAVED_SINCE_MOUNT)


def _capture_view(context, clients):
    """A capture bundle's window and achieved figure (capture.achieved()), None for other bundles.

    A capture (roles/checkpoint_capture, `source: capture`) has no canary ranks: the figure is the
    written bytes of the usable clients' deltas over the window's seconds, with its flags. The
    operator's checkpoint size is compared with the written bytes; one taken from them is not.
    """
    block = context.get("capture")
    if context.get("source") != "capture" or not isinstance(block, dict):
        return None
    _number(block.get("seconds"), "capture.seconds")
    target = context.get("target") or {}
    stated = target.get("checkpoint_bytes") if target.get("checkpoint_bytes_from") != "measured" else 0
    view = capture.achieved(block, [client["delta"] for client in clients], _number(stated or 0, "target.checkpoint_bytes", False))
    view["window"] = block
    return view


def _capture_seconds(capture_view):
    """The window on the controller's clock: the host samples bracket it, so CPU and link shares are not scaled."""
    return capture_view["seconds"] if capture_view else None


def _add_capture_evidence(evidence, capture_view):
    """What a capture's figure rests on, once, and each of its flags as a crossed row."""
    if capture_view is None:
        return
    evidence.add(None, "capture window (no canary)", capture_view["seconds"], "a canary's ranks", False,
                 "%s; achieved = %s" % (capture_view["note"], capture_view["source"]))
    for flag in capture_view["flags"]:
        evidence.add(None, "capture: %s" % flag["kind"], None, "-", True, flag["message"])


def _capture_note(capture_view):
    """What the summary adds for a capture: no canary, and every flag."""
    if capture_view is None:
        return ""
    # The summary line ends without a full stop (_summary_line); this note follows it directly.
    flags = "".join("; " + flag["message"] for flag in capture_view["flags"])
    return (". No canary ranks: the achieved figure is every writer's WRITE bytes on the mount over the %.0f s window, "
            "idle time included%s." % (capture_view["seconds"], flags))


def _saved_window(context):
    """The statistics window of a bundle built from files saved by hand (context.yml `saved`, written by
    ckptio.nfs.saved_stats_bundle): {"kind": "snapshots" or "since_mount", "seconds"}; None for other bundles."""
    saved = context.get("saved")
    if not isinstance(saved, dict) or saved.get("window") not in (SAVED_SNAPSHOTS, SAVED_SINCE_MOUNT):
        return None
    return {"kind": saved["window"], "seconds": saved.get("window_seconds"), "source": "files saved by hand"}


def _add_window_evidence(evidence, window):
    """A since-mount average is said once, where every figure is read: it is not a checkpoint window."""
    if window and window["kind"] == SAVED_SINCE_MOUNT:
        evidence.add(None, "statistics window: since the mount", window["seconds"], "a before/after pair around the checkpoint", True,
                     SINCE_MOUNT_NOTE % _seconds_text(window["seconds"]))


def _seconds_text(seconds):
    return "%.0f s" % float(seconds) if seconds is not None else "an unknown time"


def _achieved(canary, clients):
    """(achieved bytes per second, where it comes from): the canary's MLPerf aggregate, else mountstats."""
    if canary.get("bytes") and canary.get("seconds"):
        # MLPerf Storage rule: total bytes over the slowest rank's duration. context.yml is input:
        # a value that is no positive number fails naming its key.
        _number(canary["bytes"], "canary.bytes")
        _number(canary["seconds"], "canary.seconds")
        return context_throughput(canary), "canary: total bytes / (latest end - earliest start), MLPerf rule"
    write_bytes = sum(client["delta"]["write_bytes"] for client in clients)
    interval = max(client["delta"]["interval_seconds"] for client in clients)
    return write_bytes / interval if interval else 0.0, "NFS WRITE bytes in mountstats / mount age delta"


def _client_figures(context, clients):
    """Per-op totals and transport ratios over the usable clients, and the NFS versions in use."""
    sends = sum(client["delta"]["rpc"]["sends"] for client in clients)
    idle_rtt, idle_rtt_source = _idle_rtt_ms(context, clients)
    versions = sorted(set(client["delta"]["nfs_version"] for client in clients))
    return {
        "write": _sum_op(clients, ("WRITE",)), "commit": _sum_op(clients, ("COMMIT",)), "metadata": _sum_op(clients, METADATA_OPS),
        "idle_rtt": idle_rtt, "idle_rtt_source": idle_rtt_source,
        "backlog_per_send": sum(client["delta"]["rpc"]["bklog_u"] for client in clients) / float(sends) if sends else 0.0,
        "sending_per_send": sum(client["delta"]["rpc"]["sending_u"] for client in clients) / float(sends) if sends else 0.0,
        "versions": versions, "sessions": all(version not in ("3", "4.0", "4", "2") for version in versions),
    }


def _network_evidence(evidence, run, figures):
    """network: a measured layer (links, probe, declared speeds, loss); symptoms alone never name it.
    Returns (the network layer's result, the link rows)."""
    links = _link_rows(run["client_files"], run["servers"], run["checkpoint_seconds"])
    probe = _probe_capacity(run["client_files"], evidence)
    loss = network_loss.assess(evidence, _host_windows(run["client_files"], run["servers"], run["checkpoint_seconds"]), links,
                               dict((host, files.get("probe")) for host, files in run["client_files"].items()),
                               figures["idle_rtt"], dict((client["host"], client["delta"]["nconnect"]) for client in run["clients"]))
    if probe and loss["probe_lossy"]:
        # iperf3 through a lossy path measures the damage: no ceiling, and never a reason to rule the network out.
        probe = dict(probe, lossy=loss["probe_lossy"])
    net = _network_layer(evidence, run["capacity"], run["achieved"], run["target_bps"], links, probe)
    net["loss"] = loss
    net["lossy"] = loss["lossy"]
    if loss["lossy"]:
        # Lossy is not full: the fix is the path, not more bandwidth (network_loss.py).
        net.update(state="lossy", summary=net["summary"] + "; " + loss["summary"], headline="network lossy: " + loss["summary"][len("loss: lossy - "):])
    elif loss["state"] != "unmeasured":
        net["summary"] += "; " + loss["summary"]
    return net, links


def _host_windows(client_files, servers, checkpoint_seconds):
    """Each host's pair of samples over the checkpoint (the canary's own when taken), as network_loss.assess reads them."""
    hosts = []
    for host, files in sorted(client_files.items()):
        before, after, start, end = _client_samples(files)
        if start and end:
            hosts.append({"host": host, "side": "client", "before": start, "after": end, "how": "the canary's own samples"})
        else:
            hosts.append({"host": host, "side": "client", "before": before, "after": after, "how": "the statistics window"})
    for server in servers:
        before, after, _busy, how = _server_samples(server, checkpoint_seconds)
        hosts.append({"host": server["host"], "side": "server", "before": before, "after": after, "how": how})
    return hosts


def _send_side_evidence(evidence, clients, figures, net):
    """Does the send side back up (WRITE RTT inflated while requests wait to transmit)? A symptom
    shared by a full link and a slow server, so it names no layer itself."""
    write = figures["write"]
    idle_rtt = figures["idle_rtt"]
    rtt_inflation = write["avg_rtt_ms"] / idle_rtt if idle_rtt and write["ops"] else None
    send_backed_up = False
    if rtt_inflation is not None:
        inflated = evidence.add(None, "WRITE avg RTT / idle RTT", rtt_inflation, ">= %.1f" % RTT_INFLATION_LIMIT,
                                rtt_inflation >= RTT_INFLATION_LIMIT,
                                "WRITE avg RTT %.1f ms vs idle RTT %.1f ms (%s)" % (write["avg_rtt_ms"], idle_rtt, figures["idle_rtt_source"]))
        sending_per_send = figures["sending_per_send"]
        queued_to_send = evidence.add(None, "sending_u per send (requests waiting to transmit)", sending_per_send,
                                      ">= %.1f" % SENDING_PER_SEND_LIMIT, sending_per_send >= SENDING_PER_SEND_LIMIT,
                                      "summed over %d transport(s)" % sum(client["delta"]["rpc"]["transports"] for client in clients))
        send_backed_up = inflated and queued_to_send
        if send_backed_up:
            # A full link and a server that does not drain its sockets (TCP's receive window
            # closes) give the same two signals: only link evidence tells them apart.
            evidence.add(None, "send side backs up (RTT inflated while requests wait to transmit)", rtt_inflation,
                         "both signals above", True,
                         "a full link or a slow server: %s" % (
                             "the link is measured full" if net["full"] else
                             "the links are measured far from full, so the server is slow to take requests" if net["state"] == "clear"
                             else "the links are not (fully) measured - %s" % net["summary"]))
    return {"rtt_inflation": rtt_inflation, "backed_up": send_backed_up}


def _reconnect_evidence(evidence, clients):
    """Transport reconnects inside the window (0 when none): nfsd dropped connections (over
    max_connections, see docs/tuning-modules.md) or the path reset them; either way requests
    were retransmitted."""
    reconnects = sum(client["delta"]["rpc"]["connect_count"] or 0 for client in clients)
    churn = evidence.add(None, "transport reconnects during the window (xprt connect_count)", reconnects, "0", reconnects > 0,
                         "per client: %s" % ", ".join("%s %s" % (client["host"], client["delta"]["rpc"]["connect_count"])
                                                      for client in clients))
    return reconnects if churn else 0


def _client_rpc_slots_layer(evidence, clients, figures, send):
    """client_rpc_slots: WRITEs waiting for a transport slot (v3/v4.0) or a session slot (v4.1+)."""
    write = figures["write"]
    backlog_per_send = figures["backlog_per_send"]
    queue_dominates = write["ops"] > 0 and write["avg_queue_ms"] >= QUEUE_MS_FLOOR and \
        write["avg_queue_ms"] >= QUEUE_TO_RTT_LIMIT * write["avg_rtt_ms"]
    evidence.add("client_rpc_slots", "WRITE avg queue / avg RTT", write["avg_queue_ms"] / write["avg_rtt_ms"] if write["avg_rtt_ms"] else 0.0,
                 ">= %.1f (and >= %d ms)" % (QUEUE_TO_RTT_LIMIT, QUEUE_MS_FLOOR), queue_dominates,
                 "WRITE queued %.1f ms before transmission vs %.1f ms on the wire (avg exe %.1f ms, %d ops)" % (
                     write["avg_queue_ms"], write["avg_rtt_ms"], write["avg_exe_ms"], write["ops"]))
    backlogged = evidence.add("client_rpc_slots", "transport backlog per send (bklog_u/sends, all transports)", backlog_per_send,
                              ">= %.1f" % BACKLOG_PER_SEND_LIMIT, backlog_per_send >= BACKLOG_PER_SEND_LIMIT,
                              "requests waiting for a transport slot; on v4.1+ this stays 0 because the cap is 65536 (NFS_CS_INFINITE_SLOTS)")
    slot_cap, tiny_cap, at_cap = _slot_caps(clients, evidence, figures["sessions"], figures["session_grant"])
    send_backed_up = send["backed_up"]
    if figures["sessions"]:
        # v4.1+: the transport is uncapped, session slots throttle; waiting shows only as queue
        # time with zero backlog. A saturated link looks the same, so it must be ruled out.
        slots_limit = queue_dominates and not backlogged and not send_backed_up
        if queue_dominates and not send_backed_up:
            evidence.add("client_rpc_slots", "queue time with zero backlog on NFSv%s (session slots full)" % "/".join(figures["versions"]),
                         write["avg_queue_ms"], "queue dominates while backlog < %.1f" % BACKLOG_PER_SEND_LIMIT, slots_limit,
                         "requests waited for an NFSv4.1 session slot, not for the transport")
    else:
        slots_limit = (backlogged or at_cap) and queue_dominates and not send_backed_up
    return {"limit": slots_limit, "cap": slot_cap, "tiny_cap": tiny_cap}


def _server_threads_layer(evidence, servers):
    """server_threads: packets that found no idle nfsd thread (pool_stats)."""
    no_idle = None
    enqueued_share = None
    for server in servers:
        pool = server["pool"]
        if not pool or not pool["totals"].get("packets-arrived"):
            continue
        if pool.get("packets_without_idle_thread") is not None:
            no_idle = max(no_idle or 0.0, pool["packets_without_idle_thread"])
        share = pool.get("sockets_enqueued_per_packet")
        if share is not None and share < 0.999:
            enqueued_share = max(enqueued_share or 0.0, share)
    threads_limit = threads_contributing = False
    if no_idle is not None:
        threads_limit = evidence.add("server_threads", "packets that found no idle nfsd thread (1 - threads-woken/packets-arrived)", no_idle,
                                     ">= %.2f" % NO_IDLE_THREAD_LIMIT, no_idle >= NO_IDLE_THREAD_LIMIT,
                                     "threads-woken lagging packets-arrived is the signal (measured 85 %% at 1 thread on 6.1, 45 %% on 6.12, "
                                     "0 at 8; sockets-enqueued is no signal: equal to packets on 5.10/6.1, above them on 6.12); threads=%s" % (
                                         ",".join(str(server["threads"]) for server in servers)))
        threads_contributing = no_idle >= NO_IDLE_THREAD_CONTRIBUTING
        if not threads_limit and threads_contributing:
            evidence.add("server_threads", "packets that found no idle nfsd thread (contributing)", no_idle,
                         ">= %.2f" % NO_IDLE_THREAD_CONTRIBUTING, True, "some requests waited for an nfsd thread")
    if enqueued_share is not None:
        threads_limit = evidence.add("server_threads", "sockets-enqueued per packet-arrived", enqueued_share,
                                     ">= %.2f" % SOCKETS_ENQUEUED_LIMIT, enqueued_share >= SOCKETS_ENQUEUED_LIMIT,
                                     "this kernel counts enqueued sockets separately: rising = no idle thread") or threads_limit
    return {"no_idle": no_idle, "limit": threads_limit, "contributing": threads_contributing}


def _server_storage_layer(evidence, run, figures, send, net, cpu, threads):
    """server_storage: the server is slow to answer while its link, CPUs and threads have room."""
    servers = run["servers"]
    rtt_inflation = send["rtt_inflation"]
    no_idle = threads["no_idle"]
    starved = no_idle is not None and no_idle >= NO_IDLE_THREAD_CONTRIBUTING
    disk_busy = _disk_rows(evidence, servers, run["checkpoint_seconds"])
    storage_limit = bool(rtt_inflation is not None and rtt_inflation >= RTT_INFLATION_LIMIT and not net["full"]
                         and not cpu["server_saturated"] and not starved and servers)
    if rtt_inflation is not None:
        evidence.add("server_storage", "WRITE RTT inflated with idle threads, CPUs and links not full", rtt_inflation,
                     ">= %.1f x idle RTT, no-idle-thread share < %.2f, server CPU < %.2f, no full link" % (
                         RTT_INFLATION_LIMIT, NO_IDLE_THREAD_CONTRIBUTING, CPU_BUSY_LIMIT), storage_limit,
                     "RTT dominates: the server takes long to complete WRITEs%s" % (
                         "" if servers else " (no server statistics in the bundle: not evaluated)"))
    storage_limit = storage_limit or bool(disk_busy is not None and disk_busy >= DISK_BUSY_LIMIT and not net["full"])
    commit = figures["commit"]
    idle_rtt = figures["idle_rtt"]
    commit_slow = bool(commit["ops"] and idle_rtt and commit["avg_rtt_ms"] >= METADATA_RTT_FACTOR * idle_rtt
                       and commit["avg_rtt_ms"] >= METADATA_MS_FLOOR and not net["full"])
    if commit["ops"]:
        evidence.add("server_storage", "COMMIT avg RTT", commit["avg_rtt_ms"],
                     ">= %.0f x idle RTT and >= %.0f ms" % (METADATA_RTT_FACTOR, METADATA_MS_FLOOR), commit_slow,
                     "%d COMMITs, avg exe %.1f ms" % (commit["ops"], commit["avg_exe_ms"]))
    return {"limit": storage_limit, "commit_slow": commit_slow, "disk_busy": disk_busy,
            "disk_saturated": disk_busy is not None and disk_busy >= DISK_BUSY_LIMIT and not net["full"]}


def _dstate_lock_share(evidence, clients):
    """Largest share of D-state samples waiting on a shared file's write lock, or None; every
    client's D-state samples are listed as a symptom."""
    lock_share = None
    for client in clients:
        dstate = client["dstate"]
        if not dstate:
            continue
        total = sum(dstate["group_counts"].values())
        if total:
            share = dstate["group_counts"].get("shared_file_lock", 0) / float(total)
            lock_share = max(lock_share or 0.0, share)
        evidence.add(None, "D-state samples on %s" % client["host"], dstate["max_count"], "symptom (not a layer)",
                     dstate["samples_with_dstate"] > 0,
                     "%d of %d samples had tasks in D (max %d, longest run %d); wchans %s" % (
                         dstate["samples_with_dstate"], dstate["samples"], dstate["max_count"], dstate["longest_run"],
                         ", ".join("%s=%d" % item for item in sorted(dstate["wchan_counts"].items()))))
    return lock_share


def _access_pattern_layer(evidence, run, figures, send):
    """access_pattern: one shared file, ranks waiting on its lock, slow metadata ops."""
    layout = run["canary"].get("layout")
    shared_file = evidence.add("access_pattern", "checkpoint layout", layout or "unknown", "shared_file", layout == "shared_file",
                               "all ranks write one file: writes serialise on the file's lock and its COMMITs")
    lock_share = _dstate_lock_share(evidence, run["clients"])
    lock_waits = False
    if lock_share is not None:
        lock_waits = evidence.add("access_pattern", "D-state waits on a file's write lock (nfs_start_io_write)", lock_share,
                                  ">= %.2f of D samples" % SHARED_LOCK_SHARE_LIMIT, lock_share >= SHARED_LOCK_SHARE_LIMIT,
                                  "ranks queue behind each other on one inode")
    metadata = figures["metadata"]
    idle_rtt = figures["idle_rtt"]
    metadata_slow = bool(metadata["ops"] and idle_rtt and metadata["avg_exe_ms"] >= METADATA_RTT_FACTOR * idle_rtt
                         and metadata["avg_exe_ms"] >= METADATA_MS_FLOOR)
    if metadata["ops"]:
        metadata_slow = evidence.add("access_pattern", "metadata ops avg exe (OPEN/CLOSE/GETATTR/...)", metadata["avg_exe_ms"],
                                     ">= %.0f x idle RTT and >= %.0f ms" % (METADATA_RTT_FACTOR, METADATA_MS_FLOOR),
                                     metadata_slow and not send["backed_up"],
                                     "%d metadata ops; ignored when the send side backs up (they queue behind WRITEs)" % metadata["ops"])
    return {"layout": layout, "shared_file": shared_file, "lock_waits": lock_waits,
            "signal": shared_file or lock_waits or metadata_slow}


def _rank_layers(found):
    """The layers whose signals crossed, most limiting first."""
    net, cpu, storage = found["net"], found["cpu"], found["storage"]
    candidates = []
    # A mount that missed the tuning on the host that sets the pace limits the aggregate (the
    # last host's end is MLPerf's denominator), whatever the others' links do.
    missed = found["mounts"]["missed"]
    pace = [item["host"] for item in found["pace"]["pace"]]
    if missed and set(missed) & set(pace):
        candidates.append("client_rpc_slots")
    if net["full"] or net.get("lossy"):
        candidates.append("network")
    if missed and "client_rpc_slots" not in candidates:
        candidates.append("client_rpc_slots")
    # Metadata round trips took most of the request time while the disk idled: the shape of the
    # checkpoint (file count and size) sets the pace, not the server (metadata_storm.py).
    if found["storm"]["storm"]:
        candidates.append("access_pattern")
    # A server without idle CPU cannot run more nfsd work, whatever the thread count; a starved
    # server holds every request (and its session slot) longer, so the client's queue time
    # follows from it: the server signals go first.
    # A share that is only an upper estimate (the harness ran in the window too) yields to the
    # direct server measurements: starved threads, a disk busy without pause.
    if cpu["server_saturated"] and not cpu["server_weak"]:
        candidates.append("server_cpu")
    if found["threads"]["limit"]:
        candidates.append("server_threads")
    if storage["disk_saturated"]:
        candidates.append("server_storage")
    if cpu["server_saturated"] and cpu["server_weak"]:
        candidates.append("server_cpu")
    if found["slots"]["limit"] and "client_rpc_slots" not in candidates:
        candidates.append("client_rpc_slots")
    if storage["limit"] and "server_storage" not in candidates:
        candidates.append("server_storage")
    if found["access"]["signal"] and "access_pattern" not in candidates:
        candidates.append("access_pattern")
    if storage["commit_slow"] and "server_storage" not in candidates:
        candidates.append("server_storage")
    if found["threads"]["contributing"] and "server_threads" not in candidates:
        candidates.append("server_threads")
    # A link measured partly loaded, while the send side backs up, adds to the wait.
    if net["state"] == "busy" and found["send"]["backed_up"]:
        candidates.append("network")
    # Busy client CPUs slow everything a little (and the harness itself runs there): they limit
    # only when nothing else explains the time.
    if cpu["client_saturated"]:
        candidates.append("client_cpu")
    return candidates


def _unmeasured(net, cpu, servers):
    """Layers the bundle holds no measurement of."""
    unmeasured = []
    if net["state"] in ("unmeasured", "partial"):
        unmeasured.append("network")
    if not cpu["server_measured"]:
        unmeasured.append("server_cpu")
    if not cpu["client_measured"]:
        unmeasured.append("client_cpu")
    if not servers:
        unmeasured += ["server_threads", "server_storage"]
    if (net.get("loss") or {}).get("state", "unmeasured") == "unmeasured":
        unmeasured.append("network_loss")
    return unmeasured


def _decide(run, figures, found):
    """Limiting and contributing layers, confidence, tuning headroom and the verdict."""
    write = figures["write"]
    candidates = _rank_layers(found)
    met = bool(run["target_bps"]) and run["gap"] is not None and run["achieved"] >= run["target_bps"]
    if met:
        # The target is met: only what limits the headroom is named, the first layer whose signal crossed.
        limiting = "none"
        contributing = candidates[:1]
    elif candidates:
        limiting = candidates[0]
        contributing = candidates[1:]
    else:
        # Nothing crossed a threshold: blame the bigger share of WRITE time, and say so.
        limiting = "client_rpc_slots" if write["avg_queue_ms"] > write["avg_rtt_ms"] else "server_storage"
        contributing = []
    net, cpu = found["net"], found["cpu"]
    confidence, confidence_reasons = _confidence(limiting, bool(candidates), net, cpu, run["servers"],
                                                 found["access"]["lock_waits"] or found["storm"]["storm"],
                                                 found["send"]["backed_up"], met)
    if run["window"] and run["window"]["kind"] == SAVED_SINCE_MOUNT:
        # Averages over the mount's life can show a bottleneck, never prove the checkpoint's: at most medium.
        confidence_reasons.append("the figures are since-mount averages (%s), not the checkpoint's window"
                                  % _seconds_text(run["window"]["seconds"]))
        confidence = "medium" if confidence == "high" else confidence
    headroom, headroom_why = _tuning_headroom(limiting, found["slots"]["tiny_cap"], write, run["capacity"], run["achieved"],
                                              found["threads"]["no_idle"], run["servers"], net)
    gap = run["gap"]
    if _since_mount(run["context"]):
        verdict = "no_window"
    elif not run["target_bps"]:
        verdict = "no_target"
    elif met:
        verdict = "meets_target"
    elif limiting == "network" and net.get("lossy"):
        # Throughput lost to loss comes back when the path is repaired: never a new architecture.
        verdict = "tune"
        headroom_why = "what the loss took comes back once the path is repaired (Mathis et al.: TCP's rate ~ 1/sqrt(loss))"
    elif limiting == "client_rpc_slots" and found["mounts"]["missed"]:
        # The settings are tuned, a mount is not: a remount, never a new architecture (issue 26).
        verdict = "tune"
        headroom, headroom_why = _remount_headroom(found)
    elif limiting in ("network", "server_cpu", "server_storage", "access_pattern", "client_cpu"):
        verdict = "rearchitect"
    elif run["capacity"].get("network_can_carry_target") is False:
        verdict = "rearchitect"
    elif gap is not None and gap > headroom:
        verdict = "rearchitect"
    else:
        verdict = "tune"
    return {"limiting": limiting, "contributing": contributing, "confidence": confidence, "confidence_reasons": confidence_reasons,
            "headroom": headroom, "headroom_why": headroom_why, "verdict": verdict, "unmeasured": _unmeasured(net, cpu, run["servers"])}


def _diagnosis_result(run, evidence, links, found, decision, recommendations):
    """What diagnose() returns (diagnosis.json)."""
    net = found["net"]
    limiting, contributing, verdict = decision["limiting"], decision["contributing"], decision["verdict"]
    return {
        "mount_point": run["mount_point"],
        "target_bytes_per_second": run["target_bps"],
        "achieved_bytes_per_second": run["achieved"],
        "achieved_source": run["achieved_source"],
        "gap_factor": run["gap"],
        "limiting_layer": limiting,
        "contributing": contributing,
        "confidence": decision["confidence"],
        "confidence_reasons": decision["confidence_reasons"],
        "unmeasured": decision["unmeasured"],
        "network": {"state": net["state"], "summary": net["summary"], "headline": net["headline"],
                    "probe_share": _round(net["probe_share"]), "loss": _loss_result(net["loss"]),
                    "links": [dict((key, _round(value)) for key, value in row.items()) for row in links]},
        "cpu": found["cpu"]["hosts"],
        "mounts": dict((host, dict((key, _round(value)) for key, value in state.items()))
                       for host, state in found["mounts"]["hosts"].items()),
        "verdict": verdict,
        "tuning_headroom_factor": decision["headroom"],
        "tuning_headroom_why": decision["headroom_why"],
        "evidence": evidence.items,
        "recommendations": recommendations,
        "capacity": run["capacity"],
        "summary": _summary_line(verdict, limiting, contributing, run["achieved"], run["target_bps"], run["gap"], decision["unmeasured"])
        + _loss_note(net, limiting) + _start_note(run["canary"]) + _window_note(run["window"]) + _capture_note(run["capture"]),
        "start": _start_block(run["canary"]),
        "window": run["window"],
        "capture": _capture_result(run["capture"]),
        "clients": dict((client["host"], _client_summary(client)) for client in run["clients"]),
        "excluded_clients": run["excluded_clients"],
        "servers": dict((server["host"], _server_summary(server)) for server in run["servers"]),
        "restore": restore_verdict(run["context"], run["clients"]),
    }


def _loss_result(loss):
    """diagnosis.json's network.loss: the state, the per-host rows (rounded), the probe's own retransmits."""
    rows = [dict((key, _round(value)) for key, value in row.items()) for row in loss["hosts"]]
    probe = dict((host, dict((key, _round(value)) for key, value in item.items())) for host, item in loss["probe"].items())
    return dict(loss, hosts=rows, probe=probe)


def _loss_note(net, limiting):
    """The summary says what a lossy path means for the fix, and that loss was unmeasured in an old bundle."""
    if limiting == "network" and net.get("lossy"):
        return "; the path is lossy: repair it (%s) - no slot, thread or architecture change wins back what loss takes" % (
            ", ".join(net["loss"]["lossy_hosts"][:5]))
    return ""


RESTORE_RULE = "canary reads: total bytes / (latest end - earliest start), MLPerf rule"


def restore_op_figures(clients):
    """Per-op READ and WRITE figures over the usable clients' mountstats deltas (ops, avg queue,
    RTT and exe re-averaged by op count, retransmissions): the read phase's READs beside the save's WRITEs."""
    figures = {}
    for name in ("READ", "WRITE"):
        total = _sum_op(clients, (name,))
        # No op in the window: its latencies are unmeasured (None), not 0 ms.
        seen = total["ops"] > 0
        figures[name] = {"ops": total["ops"], "avg_queue_ms": _round(total["avg_queue_ms"]) if seen else None,
                         "avg_rtt_ms": _round(total["avg_rtt_ms"]) if seen else None,
                         "avg_exe_ms": _round(total["avg_exe_ms"]) if seen else None, "retrans": total["retrans"]}
    return figures


def restore_verdict(context, clients):
    """The restore (read-back) judged like the save: None without context.yml's `restore` block.

    A read-limited restore is a checkpoint's load: achieved = the read aggregate (context.yml, the
    write's rule over the read spans on the controller's clock); the target is the checkpoint's
    bytes over the restore's own window, and without one the verdict is no_target (the figure is
    given, never judged against an assumed window). Bad blocks fail it (failed_verification); a read
    start spread over the bound is flagged in the summary, not averaged.
    """
    block = context.get("restore")
    if not isinstance(block, dict):
        return None
    achieved = context_throughput(block)
    window = block.get("target_window_seconds")
    checkpoint = (context.get("target") or {}).get("checkpoint_bytes") or block.get("bytes")
    target = float(checkpoint) / float(window) if window and checkpoint else None
    gap = target / achieved if target and achieved else None
    ops = restore_op_figures(clients)
    bad = int(block.get("verify_error_count") or 0)
    if bad:
        verdict = "failed_verification"
    elif achieved is None:
        verdict = "unmeasured"
    elif target is None:
        verdict = "no_target"
    else:
        verdict = "meets_target" if achieved >= target else "below_target"
    return {"verdict": verdict, "achieved_bytes_per_second": achieved, "achieved_source": RESTORE_RULE,
            "target_bytes_per_second": target, "target_window_seconds": window, "gap_factor": gap,
            "restore_cache": block.get("restore_cache"), "guarantee": block.get("guarantee"),
            "verify_error_count": bad, "synchronized": block.get("synchronized"), "skipped": block.get("skipped") or {},
            "ops": ops, "read_ops_note": _read_ops_note(ops["READ"], block.get("restore_cache")),
            "cold_cache": cold_cache_evidence(block, clients),
            "summary": _restore_summary(verdict, block, achieved, target, window, bad)}


# A restore read this share of its bytes from the server, or more, started from a cold client
# cache; the margin only absorbs the counters' page rounding.
COLD_CACHE_SHARE = 0.99


def cold_cache_evidence(block, clients):
    """Whether the read phase really read from the server: the usable clients' serverreadbytes
    delta (mountstats `bytes:` line, what READ replies carried) against the bytes read back.

    Why: restore_cache=fadvise drops the pages with POSIX_FADV_DONTNEED, which the kernel may
    decline (pages still dirty or under writeback are kept), so a cold cache is measured, not
    assumed; the deltas bracket the whole canary, and the save's aligned writes read nothing.
    cold is None when it cannot be told (no client delta, or nothing was read back).
    """
    restore_bytes = int(block.get("bytes") or 0)
    server_read = sum(int((client.get("delta") or {}).get("read_bytes") or 0) for client in clients)
    share = float(server_read) / restore_bytes if restore_bytes and clients else None
    return {"server_read_bytes": server_read if clients else None, "restore_bytes": restore_bytes,
            "server_share": None if share is None else round(share, 4),
            "cold": None if share is None else share >= COLD_CACHE_SHARE,
            "rests_on": "the clients' mountstats serverreadbytes delta (bytes READ replies carried) over the bytes read back"}


def _read_ops_note(read, cache):
    """What the READ figures rest on; none in the window is said, not filled in."""
    if read["ops"]:
        return "READ per op from the clients' mountstats deltas (before/after the canary, which include the read phase)"
    return ("no READ ops in the clients' mountstats deltas: the reads did not reach the server as READs (served from the"
            " client cache%s) or the statistics do not bracket the read phase; READ latency unmeasured"
            % (" - restore_cache=fadvise does not prove the cache was cold" if cache == "fadvise" else ""))


def _restore_summary(verdict, block, achieved, target, window, bad):
    rate = "-" if achieved is None else "%.4g MB/s" % (achieved / 1e6)
    text = {"meets_target": "restore %s meets the restore target %s (%s bytes in %s s)",
            "below_target": "restore %s is below the restore target %s (%s bytes in %s s)",
            "no_target": "restore %s; no restore target was given (canary_validation_restore_window_seconds)%s%s%s%s",
            "unmeasured": "restore not measured: no rank finished reading%s%s%s%s",
            "failed_verification": "restore failed verification: %d bad blocks (%s)%s%s"}[verdict]
    checkpoint = block.get("bytes")
    if verdict in ("meets_target", "below_target"):
        line = text % (rate, "%.4g MB/s" % (target / 1e6), checkpoint, _round(window))
    elif verdict == "no_target":
        line = text % (rate, "", "", "", "")
    elif verdict == "unmeasured":
        line = text % ("", "", "", "")
    else:
        line = text % (bad, rate, "", "")
    line += "; from a cold cache by %s, total bytes / (latest end - earliest start) over the reads" % (
        block.get("restore_cache") or "-")
    if block.get("synchronized") is False:
        line += "; not a synchronized restore: %s" % block.get("spread_message")
    for host, reason in sorted((block.get("skipped") or {}).items()):
        line += "; %s did not read (%s)" % (host, reason)
    return line + "."


def _capture_result(capture_view):
    """diagnosis.json `capture`: the window as context.yml has it, the written bytes and the flags; None without a capture."""
    if capture_view is None:
        return None
    window = capture_view["window"]
    return {"kind": window.get("kind"), "seconds": capture_view["seconds"], "start_at": window.get("start_at"),
            "end_at": window.get("end_at"), "hit_max": bool(window.get("hit_max")), "written": capture_view["written"],
            "flags": capture_view["flags"], "source": capture_view["source"]}


def _start_block(canary_block):
    """The canary's start as context.yml records it: spread (controller clock), whether it is one
    synchronized checkpoint (barrier.SPREAD_BOUND_SECONDS), whether clocks were measured; all None
    for a bundle written before the barrier."""
    return {"start_spread_seconds": canary_block.get("start_spread_seconds"),
            "start_spread_uncertainty_seconds": canary_block.get("start_spread_uncertainty_seconds"),
            "synchronized": canary_block.get("synchronized"),
            "clocks_measured": canary_block.get("clocks_measured")}


def _start_note(canary_block):
    """What the summary adds when the start was not synchronized, or the clocks were not measured."""
    if canary_block.get("synchronized") is False:
        return (" The ranks' start spread was %.3g s (> %.1f s): the aggregate is not a synchronized checkpoint, "
                "so the throughput above understates the path." % (
                    float(canary_block.get("start_spread_seconds") or 0.0), barrier.SPREAD_BOUND_SECONDS))
    if canary_block.get("clocks_measured") is False:
        return " The clients' clocks were not all measured: the start spread and the aggregate mix host clocks."
    if canary_block.get("synchronized") is None and canary_block.get("start_spread_uncertainty_seconds"):
        return (" A synchronized start is not confirmed: the ranks started within %.3g s on the corrected clocks, but the "
                "clients' clocks are only known to +/- %.3g s (run chrony)." % (
                    float(canary_block.get("start_spread_seconds") or 0.0),
                    float(canary_block["start_spread_uncertainty_seconds"])))
    return ""


def _window_note(window):
    """What the summary adds for a since-mount bundle (files saved by hand, one mountstats snapshot)."""
    if window and window["kind"] == SAVED_SINCE_MOUNT:
        return " Since-mount average over %s, not a checkpoint window." % _seconds_text(window["seconds"])
    return ""


def _confidence(limiting, crossed, net, cpu, servers, lock_waits, send_backed_up, met):
    """How sure the verdict is, from which evidence exists: (high|medium|low, reasons).

    A limiting layer named while something was not measured is never "high": high rests on
    measurements only. A met target is high whatever the layers: achieved and target decide it.
    """
    level, reasons = _confidence_level(limiting, crossed, net, cpu, servers, lock_waits, send_backed_up, met)
    if level == "high" and reasons and not met:
        level = "medium"
    return level, reasons


def _confidence_level(limiting, crossed, net, cpu, servers, lock_waits, send_backed_up, met):
    reasons = []
    if not crossed and not met:
        return "low", ["no signal crossed its threshold: the larger share of WRITE time (queue vs RTT) decided"]
    if net["state"] == "unmeasured":
        reasons.append("the network was not measured (no interface speed, probe or declared link speed)")
    elif net["state"] == "partial":
        reasons.append("the network was measured only in part: %s" % net["summary"])
    elif net["state"] == "busy":
        reasons.append("the network was measured neither full nor far from it: %s" % net["headline"])
    if not servers:
        reasons.append("no server statistics: nfsd threads and storage not evaluated")
    elif not cpu["server_measured"]:
        reasons.append("the server's CPUs were not measured (bundle without host samples)")
    if limiting == "access_pattern" and not lock_waits:
        reasons.append("only the layout points at the access pattern (no D-state waits on the file's lock)")
    if met:
        return "high", reasons
    # What the symptoms could also mean, were it not ruled out by a measurement.
    inferred = limiting in ("server_storage", "server_threads", "client_rpc_slots", "access_pattern", "client_cpu") and \
        send_backed_up and net["state"] != "clear"
    if inferred:
        reasons.append("the send side backs up and a full link was not ruled out by a measurement")
    if limiting == "server_cpu" and cpu["server_weak"]:
        reasons.append("the server's CPU share is an upper estimate: its samples' window is much longer than the checkpoint, "
                       "or held more busy time than the checkpoint lasted (the harness ran there too)")
        return "medium", reasons
    if limiting == "access_pattern" and not lock_waits:
        return "medium", reasons
    if inferred or (limiting != "network" and net["state"] != "clear" and limiting == "server_storage"):
        return "medium", reasons
    return "high", reasons


def _slot_caps(clients, evidence, sessions, session_grant):
    """(cap, cap is tiny, some transport reached its cap) from sunrpc.txt and max_slots."""
    tiny = False
    at_cap = False
    cap = None
    for client in clients:
        rpc = client["delta"]["rpc"]
        settings = client["sunrpc"]
        reached = rpc["max_slots_reached"]
        if sessions:
            cap = _int_setting(settings, "max_session_slots")
            if cap is not None:
                tiny = tiny or cap <= TINY_SLOT_CAP
                evidence.add("client_rpc_slots", "NFSv4.1 session slots requested (nfs max_session_slots) on %s" % client["host"], cap,
                             "<= %d is an artificial cap" % TINY_SLOT_CAP, cap <= TINY_SLOT_CAP,
                             "%s; xprt max_slots reached %s per connection, which bounds requests in flight" % (
                                 session_grant["text"], rpc["max_slots"]))
        else:
            protocol_cap = "udp_slot_table_entries" if rpc["protocols"] == ["udp"] else "tcp_max_slot_table_entries"
            cap = _int_setting(settings, protocol_cap)
            if cap is not None and reached is not None:
                full = reached >= cap
                at_cap = at_cap or full
                tiny = tiny or (full and cap <= TINY_SLOT_CAP)
                evidence.add("client_rpc_slots", "xprt max_slots reached vs %s on %s" % (protocol_cap, client["host"]), reached,
                             ">= %d (the cap)" % cap, full, "max_slots per connection %s; the slot table was full" % rpc["max_slots"]
                             if full else "max_slots per connection %s" % rpc["max_slots"])
    return cap, tiny, at_cap


def _tuning_headroom(limiting, tiny_cap, write, capacity, achieved, no_idle, servers, net=None):
    """(how much faster tuning the limiting layer can plausibly make the checkpoint, where that comes from in one clause)."""
    headroom = MAX_TUNING_GAIN
    why = "what tuning one layer buys at best: vendors measure ~3x from nconnect=4, no gain beyond"
    if limiting == "client_rpc_slots" and tiny_cap and write["avg_exe_ms"] > write["avg_queue_ms"]:
        # Removing an artificial cap: at best each WRITE stops waiting for a slot.
        removed = write["avg_exe_ms"] / (write["avg_exe_ms"] - write["avg_queue_ms"])
        if removed > headroom:
            headroom, why = removed, "each WRITE no longer waiting for a slot of the tiny cap (exe / (exe - queue))"
    if limiting == "server_threads" and no_idle is not None and no_idle < 1.0:
        if any(server["threads"] is not None and server["threads"] <= 4 for server in servers):
            if 1.0 / (1.0 - no_idle) > headroom:
                headroom, why = 1.0 / (1.0 - no_idle), "every packet finding an idle nfsd thread (1 / (1 - no-idle share))"
    practical = capacity.get("practical_link_bytes_per_second")
    if practical and achieved > 0 and practical / achieved < headroom:
        headroom, why = practical / achieved, "the declared links' practical capacity over the achieved throughput"
    if net and net.get("probe_share") and 1.0 / net["probe_share"] < headroom:
        # The path's measured TCP capacity caps what any NFS tuning can reach.
        headroom, why = 1.0 / net["probe_share"], "the path's measured TCP capacity (probe) over the NFS throughput"
    return headroom, why


_REARCHITECT = (
    ("file_per_rank", "write one file per rank (PyTorch DCP FileSystemWriter / a distributed checkpoint format) instead of one shared file"),
    ("parallel_fs_or_object_store", "move checkpoints to a parallel file system or object store (Lustre, GPFS, DAOS, S3)"),
    ("more_servers_or_pnfs", "spread checkpoints over several NFS servers or use pNFS so no single server path carries it all"),
    ("async_or_burst_buffer", "checkpoint asynchronously, or to a local NVMe burst buffer drained to NFS in the background"),
)


_REARCHITECT_ACTIONS = {
    "file_per_rank": "one file per rank instead of one shared file (e.g. PyTorch DCP FileSystemWriter)",
    "parallel_fs_or_object_store": "a parallel file system or object store (Lustre, GPFS, DAOS, S3)",
    "more_servers_or_pnfs": "several NFS servers or pNFS, so no single server path carries it all",
    "async_or_burst_buffer": "asynchronous checkpoints, or a local NVMe burst buffer drained to NFS",
}


def _threads_shrink_slots_note(facts):
    """Only where this kernel ties a v4.1 session's slots to the thread count (kernels.py)."""
    grant = facts["session_grant"]
    if not facts["sessions"] or grant["rule"] == "dynamic":
        return ""
    return "; note that more threads can shrink the session slots a new v4.1 session is granted (%s)" % grant["text"]


# Where the recommendations of layers outside the ranking go: the target or window first (nothing
# else is decided without it), then the ranked layers, then measuring the network, then the rest.
_FIRST_RECS = ("target", "window")
_LAST_RECS = ("network_measure", "access_pattern", "architecture")


def _recommendations(limiting, contributing, verdict, facts):
    """Every recommendation, ordered by the layer it acts on: the limiting layer's first (CONTRACT 3's actions)."""
    layers = [limiting] + list(contributing)
    recs = _frame_recs(verdict, facts)
    if "network" in layers and facts["network"].get("lossy"):
        recs += network_loss.recommendations(facts["network"]["loss"])
    elif "network" in layers and facts["network"]["full"]:
        recs += _network_recs(facts)
    recs += mount_state.remount_recs(facts["mounts"])
    if "client_rpc_slots" in layers and not _slots_already_set(facts):
        recs.append(_slots_rec(facts))
    recs += _mount_recs(layers, limiting, facts)
    if "server_threads" in layers:
        recs += _threads_recs(layers, facts)
    recs += _cpu_recs(layers)
    if facts["reconnects"]:
        recs.append(_reconnects_rec(facts))
    if facts["network"]["state"] in ("unmeasured", "partial") and verdict != "meets_target":
        recs.append({"layer": "network_measure", "setting": "measure the network", "value": None,
                     "action": "measure the network: ckptio.nfs.validate_checkpoint -e canary_validation_probe=true",
                     "how": "run ckptio.nfs.validate_checkpoint with -e canary_validation_probe=true (iperf3 over the NFS "
                            "path, streams = nconnect), or give network.server_link_gbps / client_link_gbps in context.yml",
                     "reason": "%s; without it the network can be neither named nor ruled out" % facts["network"]["summary"]})
    recs += _architecture_recs(limiting, verdict, facts)
    if facts["storm"]["storm"] and "access_pattern" in layers:
        recs.append(metadata_storm.shape_rec(facts["storm"], facts["canary"]))
        recs.append(metadata_storm.drain_rec(facts["storm"]))
        if limiting == "access_pattern":
            # The shape is the fix; a parallel file system or more servers would meet the same round trips.
            recs = [rec for rec in recs if rec["layer"] != "architecture"]
    if limiting == "network" and facts["network"].get("lossy"):
        # Throughput lost to loss: no slot or thread tuning is offered beside the repair (issue 26).
        recs = [rec for rec in recs if rec["layer"] not in ("client_rpc_slots", "server_threads", "architecture")]
    order = list(_FIRST_RECS) + layers
    return sorted(recs, key=lambda rec: order.index(rec["layer"]) if rec["layer"] in order else
                  len(order) + (_LAST_RECS.index(rec["layer"]) if rec["layer"] in _LAST_RECS else -1))


def _frame_recs(verdict, facts):
    """What must come before any tuning: a target to judge against, a window to judge."""
    if verdict == "no_window":
        return [{"layer": "window", "setting": "capture a checkpoint window", "value": None,
                 "action": "capture a checkpoint window: ckptio.nfs.capture, or two snapshots to ckptio.nfs.saved_stats_bundle",
                 "how": "ckptio.nfs.capture around a checkpoint (checkpoint_capture_seconds=N), or save mountstats before and "
                        "after one checkpoint and give both files to ckptio.nfs.saved_stats_bundle",
                 "reason": "one mountstats snapshot is an average since the mount: idle time and every other workload are in it"}]
    if verdict == "no_target":
        return [{"layer": "target", "setting": "the checkpoint target", "value": None,
                 "action": "set ckptio_checkpoint_bytes and ckptio_checkpoint_window_seconds, then validate again",
                 "how": NO_TARGET_TEXT.replace("no target given: set", "set") + NO_TARGET_SAVED,
                 "reason": "without the real checkpoint's size and window no throughput is short or enough"}]
    return []


def _network_recs(facts):
    """A full network: the network's own actions, never nfsd or client tuning first."""
    reason = "the links are measured full (%s): more bandwidth has to come from the network itself" % facts["network"]["headline"]
    return [
        {"layer": "network", "setting": "faster or more links", "value": None,
         "action": "faster or more links on the server and clients, bonded so the flows spread",
         "how": "faster NICs or more links on the server and clients, bonded (LACP, layer3+4 hashing) so the flows spread",
         "reason": reason},
        {"layer": "network", "setting": "nconnect across server addresses", "value": None,
         "action": "nconnect across server addresses: one address per link, the mounts spread over them",
         "how": "give the server one address per link and spread the clients' mounts (nconnect connections) over them",
         "reason": "nconnect's connections all go to one address, so one link carries them all"},
        {"layer": "network", "setting": "more servers", "value": None,
         "action": "more servers (or pNFS), so no single server's links carry the checkpoint",
         "how": "spread checkpoints over several NFS servers, or pNFS, so no single server's links carry it all",
         "reason": reason},
    ]


def _slots_rec(facts):
    write = facts["write"]
    if facts["sessions"]:
        slots = profiles.recommended("client", "sunrpc", "nfs_max_session_slots")
        return {"layer": "client_rpc_slots", "setting": "nfs max_session_slots", "value": slots,
                "action": "nfs max_session_slots = %d (ckptio.nfs.tune_clients, profile checkpoint), then remount" % slots,
                "how": "ckptio.nfs.tune_clients (profile checkpoint), or ckptio.nfs.sunrpc_slot_table nfs_max_session_slots=%d; "
                       "then unmount/mount every mount of the server" % slots,
                "reason": "NFSv4.1+ WRITEs waited %s each for a session slot (the server-granted cap on a client's requests "
                          "in flight) with zero transport backlog; tcp_max_slot_table_entries does not apply to v4.1 "
                          "(NFS_CS_INFINITE_SLOTS); %s: check the grant after remounting."
                          % (human.seconds(write["avg_queue_ms"] / 1000.0), facts["session_grant"]["text"])}
    slots = profiles.recommended("client", "sunrpc", "tcp_max_slot_table_entries")
    return {"layer": "client_rpc_slots", "setting": "sunrpc tcp_max_slot_table_entries / tcp_slot_table_entries", "value": slots,
            "action": "sunrpc slot tables = %d (ckptio.nfs.tune_clients, profile checkpoint), then remount" % slots,
            "how": "ckptio.nfs.tune_clients (profile checkpoint), or ckptio.nfs.sunrpc_slot_table tcp_slot_table_entries=%d "
                   "tcp_max_slot_table_entries=%d; then remount" % (slots, slots),
            "reason": "the transport slot table (requests a connection may have in flight) was the bottleneck (backlog or "
                      "max_slots at the cap %s); %d per connection is what NetApp-class servers accept"
                      % (human.number(facts["slot_cap"]), slots)}


def _slots_already_set(facts):
    """Every client already has the profile's slot setting: only a remount (mount_state) is left to do."""
    name = "max_session_slots" if facts["sessions"] else "tcp_max_slot_table_entries"
    wanted = profiles.recommended("client", "sunrpc", "nfs_max_session_slots" if facts["sessions"] else "tcp_max_slot_table_entries")
    values = [_int_setting(client["sunrpc"], name) for client in facts["clients"]]
    return bool(facts["mounts"]["missed"]) and all(value is not None and value >= wanted for value in values)


def _mount_recs(layers, limiting, facts):
    """nconnect and wsize per client, at the checkpoint profile's values (a mount that missed the tuning is remounted instead)."""
    recs = []
    nconnect = profiles.recommended("client", "mount_options", "nconnect")
    wsize = profiles.recommended("client", "mount_options", "wsize")
    for client in facts["clients"]:
        delta = client["delta"]
        if client["host"] in facts["mounts"]["missed"]:
            continue
        if ("client_rpc_slots" in layers or "network" in layers) and delta["nconnect"] < nconnect and delta["proto"] != "udp":
            recs.append({"layer": "client_rpc_slots", "setting": "nconnect", "value": nconnect, "host": client["host"],
                         "action": "nconnect = %d (ckptio.nfs.tune_clients, profile checkpoint), at the next mount" % nconnect,
                         "how": "ckptio.nfs.tune_clients (profile checkpoint), or ckptio.nfs.nfs_mount opts.nconnect=%d "
                                "(needs every mount of that server unmounted)" % nconnect,
                         "reason": "nconnect=%d: one TCP connection carries every request; vendors measure ~3x write throughput "
                                   "with nconnect=4 (Azure Files), best at 8 (Azure NetApp Files)" % delta["nconnect"]})
        if delta["wsize"] and delta["wsize"] < wsize and limiting != "none":
            recs.append({"layer": "client_rpc_slots", "setting": "wsize", "value": wsize, "host": client["host"],
                         "value_text": "%d KiB" % (wsize // 1024), "action": "wsize = %d KiB (ckptio.nfs.tune_clients), if the "
                         "server's max_block_size allows it" % (wsize // 1024),
                         "how": "ckptio.nfs.nfs_mount opts.wsize=%d (server max_block_size must allow it; set it before nfsd "
                                "starts)" % wsize,
                         "reason": "wsize=%d: each slot carries %s per WRITE; %s moves %dx more per request in flight" % (
                             delta["wsize"], human.size(delta["wsize"]), human.size(wsize), wsize // delta["wsize"])})
    return recs


def _threads_recs(layers, facts):
    profile_threads = profiles.recommended("server", "threads")
    recs = []
    for server in facts["servers"]:
        threads = server["threads"]
        value = profile_threads if threads is None or threads < profile_threads else 2 * threads
        recs.append({"layer": "server_threads", "setting": "nfsd threads", "value": value, "host": server["host"],
                     "action": "nfsd threads = %d (ckptio.nfs.tune_servers, profile checkpoint)" % value,
                     "how": "ckptio.nfs.tune_servers (profile checkpoint: %d), or ckptio.nfs.nfsd_threads threads=%d" % (
                         profile_threads, value),
                     "reason": "%s of packets found no idle nfsd thread at %s threads%s%s" % (
                         human.share(facts["no_idle_thread_share"] or 0), human.number(threads), _threads_shrink_slots_note(facts),
                         "; the server's CPUs were busy too: if they are saturated, more threads cannot run"
                         if "server_cpu" in layers else "")})
    return recs


def _cpu_recs(layers):
    recs = []
    if "server_cpu" in layers:
        recs.append({"layer": "server_cpu", "setting": "server CPUs", "value": None,
                     "action": "server CPUs: more or faster cores, or checkpoints spread over several servers",
                     "how": "a server with more (or faster) cores, or spread checkpoints over several servers",
                     "reason": "the server had no idle CPU during the checkpoint (nfsd, TCP softirq and the page cache share it): "
                               "more nfsd threads cannot run without CPU to run on"})
    if "client_cpu" in layers:
        recs.append({"layer": "client_cpu", "setting": "client CPUs", "value": None,
                     "action": "client CPUs: leave CPU to the checkpoint (fewer writers per node, or asynchronous)",
                     "how": "leave CPU to the checkpoint: fewer concurrent writers per node, or checkpoint asynchronously",
                     "reason": "the clients had no idle CPU during the checkpoint (the ranks' copies, RPC work and softirq share it)"})
    return recs


def _reconnects_rec(facts):
    return {"layer": "server_threads", "setting": "nfsd max_connections", "value": None,
            "action": "nfsd max_connections at least clients x nconnect (ckptio.nfs.tune_servers computes it)",
            "how": "ckptio.nfs.nfsd_threads max_connections (server_tuning computes clients x nconnect), and check the "
                   "server log for 'too many open connections'",
            "reason": "%d transport reconnect(s) during the checkpoint: nfsd drops the oldest connection above its limit "
                      "(0 = (threads + 3) x 20), and every reconnect retransmits the requests in flight" % facts["reconnects"]}


def _architecture_recs(limiting, verdict, facts):
    recs = []
    if not (facts["shared_file"] or verdict == "rearchitect"):
        return recs
    for key, text in _REARCHITECT:
        if key != "file_per_rank" and verdict != "rearchitect":
            continue
        if key == "file_per_rank" and not facts["shared_file"]:
            continue
        if key == "more_servers_or_pnfs" and limiting == "network" and facts["network"]["full"]:
            continue  # already the network's own action
        recs.append({"layer": "access_pattern" if key == "file_per_rank" else "architecture", "setting": key, "value": None,
                     "how": text, "action": _REARCHITECT_ACTIONS[key], "reason": _rearchitect_reason(key, limiting, facts)})
    return recs


def _rearchitect_reason(key, limiting, facts):
    if key == "file_per_rank":
        return "all ranks write one shared file%s" % (
            "; D-state samples show ranks waiting on its write lock (nfs_start_io_write)" if facts["lock_waits"] else "")
    if limiting == "network":
        return "the network path is measured full: tuning the client or nfsd cannot add bandwidth"
    if limiting in ("server_cpu", "client_cpu"):
        return "the %s CPUs are saturated: tuning cannot add CPU" % limiting.split("_")[0]
    return "the gap is larger than tuning the %s layer can close" % limiting


def _summary_line(verdict, limiting, contributing, achieved, target, gap, unmeasured=()):
    if target:
        text = "%s: achieved %s of %s target" % (verdict, human.rate(achieved), human.rate(target))
    else:
        missing = "a since-mount average, no checkpoint window" if verdict == "no_window" else NO_TARGET_TEXT
        text = "%s: achieved %s; %s" % (verdict, human.rate(achieved), missing)
    if gap is not None and verdict != "meets_target":
        text += " (gap %s)" % human.factor(gap)
    text += "; limiting layer: %s" % limiting
    if contributing:
        text += "; %s: %s" % ("what limits headroom" if verdict == "meets_target" else "contributing", ", ".join(contributing))
    if unmeasured:
        text += "; unmeasured: %s" % ", ".join(unmeasured)
    return text


def _client_summary(client):
    delta = client["delta"]
    write = delta["ops"].get("WRITE") or {}
    rpc = delta["rpc"]
    return {
        "nfs_version": delta["nfs_version"], "nconnect": delta["nconnect"], "wsize": delta["wsize"], "proto": delta["proto"],
        "interval_seconds": delta["interval_seconds"], "write_bytes": delta["write_bytes"],
        "write_mb_per_second": round(delta["write_mb_per_second"], 3),
        "write_ops": write.get("ops", 0), "write_avg_rtt_ms": _round(write.get("avg_rtt_ms", 0.0)),
        "write_avg_exe_ms": _round(write.get("avg_exe_ms", 0.0)), "write_avg_queue_ms": _round(write.get("avg_queue_ms", 0.0)),
        "write_retrans": write.get("retrans", 0), "write_timeouts": write.get("timeouts", 0), "write_errors": write.get("errors"),
        "transports": rpc["transports"], "sends": rpc["sends"], "backlog_per_send": _round(rpc["backlog_per_send"]),
        "sending_per_send": _round(rpc["sending_per_send"]), "max_slots": rpc["max_slots"],
        "max_slots_before": rpc["max_slots_before"], "connect_count_delta": rpc["connect_count"],
        "sunrpc": dict((name, client["sunrpc"][name]) for name in
                       ("tcp_slot_table_entries", "tcp_max_slot_table_entries", "udp_slot_table_entries", "max_session_slots")
                       if name in client["sunrpc"]),
        "dstate": client["dstate"],
    }


def _server_summary(server):
    nfsd = server["nfsd"]
    pool = server["pool"]
    return {
        "threads": server["threads"], "io_bytes_written": nfsd["io_bytes_written"], "io_bytes_read": nfsd["io_bytes_read"],
        "rpc_calls": nfsd["rpc_calls"], "write_ops": nfsd["proc4ops"].get("WRITE", 0) + nfsd["proc3"].get("WRITE", 0),
        "commit_ops": nfsd["proc4ops"].get("COMMIT", 0) + nfsd["proc3"].get("COMMIT", 0), "nfsd_reset": nfsd["reset"],
        "pool_stats": pool["totals"] if pool else None, "pool_stats_reset": pool["reset"] if pool else None,
        "packets_without_idle_thread": _round(pool["packets_without_idle_thread"]) if pool and pool["packets_without_idle_thread"] is not None else None,
    }
