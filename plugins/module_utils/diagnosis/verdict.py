# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ranking of the layers, the verdict, the confidence and the tuning headroom.
"""

from __future__ import annotations

import dataclasses

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.run import SAVED_SINCE_MOUNT, distorted, seconds_text, since_mount
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals


LAYERS = ("network", "server_cpu", "client_rpc_slots", "server_threads", "server_storage", "access_pattern", "client_cpu", "none")


VERDICTS = ("meets_target", "tune", "rearchitect", "no_target", "no_window")


@dataclasses.dataclass(frozen=True)
class Decision:
    """What the ranking decided: the limiting and contributing layers, the confidence and its reasons, the tuning
    headroom and where it comes from, the verdict, the layers not measured and the verdict's scope (scope())."""
    limiting: str
    contributing: tuple
    confidence: str
    confidence_reasons: tuple
    headroom: float
    headroom_why: str
    verdict: str
    unmeasured: tuple
    scope: dict


# What tuning one layer realistically buys: vendors report ~3x from nconnect=4 and "no gains
# beyond four" (Azure Files); docs/nfs-facts.md: tuning alone is unlikely to close 7x.
MAX_TUNING_GAIN = signals.MAX_TUNING_GAIN.threshold


def _remount_headroom(found):
    """(factor, why) of remounting the mounts that missed the tuning: the aggregate gains what the
    slowest of them loses against the other hosts' median end; without canary ranks, that host's
    WRITEs no longer waiting for a slot (exe / (exe - queue)), at most MAX_TUNING_GAIN."""
    missed = found["mounts"]["missed"]
    paced = _pace_headroom(found, missed, "remounting")
    if paced:
        return paced
    host = max(missed, key=lambda name: found["mounts"]["hosts"][name]["headroom"])
    return min(MAX_TUNING_GAIN, found["mounts"]["hosts"][host]["headroom"]), \
        "remounting %s: its WRITEs no longer waiting for a slot (exe / (exe - queue), at most %.0fx)" % (host, MAX_TUNING_GAIN)


def _slowest_paced(found, hosts):
    """The slowest of hosts among those that set the pace (pace_host lists them slowest first), or None."""
    return next((item for item in found["pace"]["pace"] if item["host"] in hosts), None)


def _pace_headroom(found, hosts, doing):
    """(factor, why) of fixing the slowest of hosts that set the pace: the aggregate gains what it loses against the
    other hosts' median end; None when none of them set it or the ends were not measured."""
    slowest, median = _slowest_paced(found, hosts), found["pace"]["median_seconds"]
    if slowest is None or not median:
        return None
    return slowest["seconds"] / median, "%s %s: it ends with the other hosts (%.1f s -> %.1f s)" % (
        doing, slowest["host"], slowest["seconds"], median)


def _faulty_hosts(found, limiting):
    """(the client hosts the limiting layer's own evidence is confined to, whether it spans the cluster).

    A network fault of a few clients' paths (their own links or probes full, their own segments lost) is
    theirs; the server's link, the clients' summed capacity, loss on the server or incast are everyone's.
    A mount that missed the tuning is its host's; a busy client CPU is its host's.
    """
    net = found["net"]
    if limiting == "network" and net.get("lossy"):
        rows = [row for row in net["loss"]["hosts"] if row.get("lossy")]
        cluster = net["loss"]["incast"] or any(row["side"] == "server" for row in rows)
        return sorted(row["host"] for row in rows if row["side"] == "client"), cluster
    if limiting == "network":
        return list(net.get("full_hosts") or []), bool(net.get("cluster_full")) or not net.get("full_hosts")
    if limiting == "client_rpc_slots" and found["mounts"]["missed"]:
        return sorted(found["mounts"]["missed"]), False
    if limiting == "client_cpu":
        busy = sorted(host for host, row in found["cpu"]["hosts"].items()
                      if row["side"] == "client" and signals.CPU_BUSY.crossed(row["busy"]))
        return busy, not busy
    return [], True


def scope(found, limiting, run, met=False):
    """Whether the limit is one host's (repair or tune that host) or the whole cluster's, with what the cluster
    would reach without that host: {"kind": host|cluster, "hosts", "why", "without_bytes_per_second"}.

    Issue 43: one client's link shaped to 16 Mbit/s set the pace while the other finished in half the time,
    yet the verdict was "re-architect: the network"; the fix is that host's path. A host-scoped limit needs its
    hosts to be a minority of the clients and, where the ranks' ends were measured, to be the hosts that set
    the pace; then the checkpoint ends when the other hosts do (the median host's end, pace_host.py).
    """
    if met:
        return {"kind": "cluster", "hosts": [], "without_bytes_per_second": None, "why": "the target is met"}
    hosts, cluster = _faulty_hosts(found, limiting)
    clients = len(run["clients"])
    pace = found["pace"]
    pace_hosts = [item["host"] for item in pace["pace"]]
    if cluster or not hosts or len(hosts) * 2 > clients or (pace["measured"] and not set(hosts) <= set(pace_hosts)):
        return {"kind": "cluster", "hosts": [], "without_bytes_per_second": None,
                "why": "the limit is not confined to a minority of the hosts: every client's path or the server is at it"}
    paced = _pace_headroom(found, hosts, "repairing")
    without = run["achieved"] * paced[0] if paced and run["achieved"] else None
    return {"kind": "host", "hosts": hosts, "without_bytes_per_second": without,
            "why": "only %s: %s" % (", ".join(hosts), pace["text"] if pace_hosts else "the other hosts' figures are clear")}


def _host_headroom(where, found):
    """(factor, why) of repairing the hosts that set the pace (_pace_headroom), at most MAX_TUNING_GAIN unmeasured."""
    return _pace_headroom(found, where["hosts"], "repairing") or (
        MAX_TUNING_GAIN, "repairing %s brings it to the other hosts' figures (at most %.0fx)" % (
            ", ".join(where["hosts"]), MAX_TUNING_GAIN))


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
    if found["threads"].limit:
        candidates.append("server_threads")
    if storage.disk_saturated:
        candidates.append("server_storage")
    # ... and to the client's slot table seen full while RPCs waited for a slot (issue 47's direct evidence): on the
    # lab's 2-slot baseline the server's estimate read 100 % where Prometheus measured 80 % over the window itself
    # (tests/fixtures/captures/v48_bookworm_seed_like_v41_nice0).
    table = getattr(found["slots"], "table", None)
    seen_full = bool(table is not None and table.full and table.points_at_slots)
    if cpu["server_saturated"] and cpu["server_weak"] and not seen_full:
        candidates.append("server_cpu")
    if found["slots"].limit and "client_rpc_slots" not in candidates:
        candidates.append("client_rpc_slots")
    if cpu["server_saturated"] and cpu["server_weak"] and "server_cpu" not in candidates:
        candidates.append("server_cpu")
    if storage.limit and "server_storage" not in candidates:
        candidates.append("server_storage")
    if found["access"].signal and "access_pattern" not in candidates:
        candidates.append("access_pattern")
    if storage.commit_slow and "server_storage" not in candidates:
        candidates.append("server_storage")
    if found["threads"].contributing and "server_threads" not in candidates:
        candidates.append("server_threads")
    # A link measured partly loaded, while the send side backs up, adds to the wait.
    if net["state"] == "busy" and found["send"].backed_up:
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


def decide(run, figures, found):
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
        # Nothing crossed a threshold: blame the bigger share of WRITE time, and say so - unless a
        # measurement rules that layer out (issue 43: a layer is never named against its own figure).
        limiting = "client_rpc_slots" if write["avg_queue_ms"] > write["avg_rtt_ms"] else "server_storage"
        if limiting == "server_storage" and found["storage"].ruled_out:
            limiting = "none"
        elif limiting == "client_rpc_slots" and found["slots"].ruled_out:
            # The slot table was seen far from full (or held by the server's replies): issue 47.
            limiting = "none"
        contributing = []
    net, cpu = found["net"], found["cpu"]
    confidence, confidence_reasons = _confidence(limiting, bool(candidates), net, cpu, run["servers"],
                                                 found["access"].lock_waits or found["storm"]["storm"],
                                                 found["send"].backed_up, met)
    if run["window"] and run["window"]["kind"] == SAVED_SINCE_MOUNT:
        # Averages over the mount's life can show a bottleneck, never prove the checkpoint's: at most medium.
        confidence_reasons.append("the figures are since-mount averages (%s), not the checkpoint's window"
                                  % seconds_text(run["window"]["seconds"]))
        confidence = "medium" if confidence == "high" else confidence
    headroom, headroom_why = _tuning_headroom(limiting, found["slots"].tiny_cap, write, run["capacity"], run["achieved"],
                                              found["threads"].no_idle, run["servers"], net)
    gap = run["gap"]
    where = scope(found, limiting, run, met)
    if since_mount(run["context"]):
        verdict = "no_window"
    elif not run["target_bps"] or distorted(run.get("capture")):
        # A distorted figure (the writes of a wider span counted: capture flags) is judged against no target.
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
    elif where["kind"] == "host":
        # One host's path or CPUs set the pace: repair that host, never a new architecture (issue 43).
        verdict = "tune"
        headroom, headroom_why = _host_headroom(where, found)
    elif limiting in ("network", "server_cpu", "server_storage", "access_pattern", "client_cpu"):
        verdict = "rearchitect"
    elif run["capacity"].get("network_can_carry_target") is False:
        verdict = "rearchitect"
    elif gap is not None and gap > headroom:
        verdict = "rearchitect"
    else:
        verdict = "tune"
    return Decision(limiting, tuple(contributing), confidence, tuple(confidence_reasons), headroom, headroom_why, verdict,
                    tuple(_unmeasured(net, cpu, run["servers"])), where)


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
        if any(server["threads"] is not None and signals.FEW_THREADS.crossed(server["threads"]) for server in servers):
            if 1.0 / (1.0 - no_idle) > headroom:
                headroom, why = 1.0 / (1.0 - no_idle), "every packet finding an idle nfsd thread (1 / (1 - no-idle share))"
    practical = capacity.get("practical_link_bytes_per_second")
    if practical and achieved > 0 and practical / achieved < headroom:
        headroom, why = practical / achieved, "the declared links' practical capacity over the achieved throughput"
    if net and net.get("probe_share") and 1.0 / net["probe_share"] < headroom:
        # The path's measured TCP capacity caps what any NFS tuning can reach.
        headroom, why = 1.0 / net["probe_share"], "the path's measured TCP capacity (probe) over the NFS throughput"
    return headroom, why
