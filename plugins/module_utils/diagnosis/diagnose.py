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

import dataclasses

from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import headline
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import markdown
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import barrier
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import kernels
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import mount_state
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import metadata_storm
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import pace_host
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import shape
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.access import access_pattern_layer
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.advice import recommend
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.client import client_rpc_slots_layer, reconnect_evidence
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.client_row import SUNRPC_SETTINGS
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.cpu import cpu_layers
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.evidence import (
    Evidence, add_capture_evidence, add_capture_problems, add_window_evidence, rounded, rounded_row)
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.headline import NO_TARGET_TEXT, limit_label
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.network import network_evidence, send_side_evidence
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.restore import restore_verdict
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.run import METADATA_OPS, SAVED_SINCE_MOUNT, canary_ranks, read_run, seconds_text, since_mount
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.run import DISTORTED_FLAGS
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.server import server_storage_layer, server_threads_layer
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.verdict import decide
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.why_not import why_not


def diagnose(bundle, parallel=None):
    """The whole diagnosis of a bundle (see module docstring for the bundle shape); parallel: run.read_run's
    (host/parallel_map from a module or filter, to read a large bundle's clients in forked workers)."""
    return diagnose_run(read_run(bundle, parallel))


def diagnose_run(run):
    """The whole diagnosis of a run (run.read_run: the bundle read once).

    Each layer below reads the bundle's figures, adds its rows to the evidence (in this order,
    which is the order of diagnosis.md) and returns what it found; the ranking then names the
    limiting layer from those findings and the verdict says whether tuning can close the gap.
    """
    evidence = Evidence()
    add_capture_problems(evidence, run["excluded_clients"])
    add_window_evidence(evidence, run["window"])
    add_capture_evidence(evidence, run["capture"])
    for problem in run["problems"]:
        evidence.add(None, "unreadable bundle file", None, "valid", True, problem)
    # How this server's kernel sizes a v4.1 session (fixed cap up to 6.13, on demand from 6.14).
    figures = dict(run["figures"], session_grant=kernels.session_slot_grant(kernels.server_kernel(run["servers"])))
    net, links = network_evidence(evidence, run, figures)
    send = send_side_evidence(evidence, run["clients"], figures, net)
    cpu = cpu_layers(evidence, run["client_evidence"], run["servers"], run["checkpoint_seconds"])
    reconnects = reconnect_evidence(evidence, run["clients"], since_mount(run["context"]))
    slots = client_rpc_slots_layer(evidence, run["clients"], figures, send)
    lossy_clients = [row["host"] for row in net["loss"]["hosts"] if row.get("lossy") and row["side"] == "client"]
    mounts = mount_state.assess(evidence, run["clients"], run["checkpoint_seconds"], lossy_clients)
    threads = server_threads_layer(evidence, run["servers"])
    storage = server_storage_layer(evidence, run, figures, send, net, cpu, threads)
    access = access_pattern_layer(evidence, run, figures, send)
    storm = metadata_storm.assess(evidence, run["clients"], METADATA_OPS, storage.disk_busy, cpu["server_saturated"])
    access = dataclasses.replace(access, signal=access.signal or storm["storm"])
    found = {"net": net, "cpu": cpu, "slots": slots, "threads": threads, "storage": storage, "access": access, "send": send, "mounts": mounts, "storm": storm}
    pace_facts = _pace_facts(run, links, found)
    found["pace"] = pace_host.assess(canary_ranks(run), pace_facts)
    decision = decide(run, figures, found)
    facts = {
        "nfs_versions": figures["versions"], "sessions": figures["sessions"], "slot_cap": slots.cap, "tiny_cap": slots.tiny_cap,
        "write": figures["write"], "idle_rtt_ms": figures["idle_rtt"], "no_idle_thread_share": threads.no_idle,
        "servers": run["servers"], "clients": run["clients"], "layout": access.layout,
        "send_backed_up": send.backed_up, "network": net, "reconnects": reconnects,
        "shared_file": access.shared_file, "lock_waits": access.lock_waits,
        "session_grant": figures["session_grant"], "mounts": mounts, "storm": storm,
        "canary": run["canary"], "pace": found["pace"], "pace_facts": pace_facts, "scope": decision.scope,
        "distorted": [flag for flag in (run["capture"] or {}).get("flags") or () if flag["kind"] in DISTORTED_FLAGS],
    }
    recommendations = recommend(decision.limiting, decision.contributing, decision.verdict, facts)
    result = _diagnosis_result(run, evidence, links, found, decision, recommendations)
    result["why_not"] = why_not(found, figures, decision)
    if slots.table is not None:
        # Only with the slot table's files (issue 47): a bundle without them keeps its diagnosis.json.
        result["slot_table"] = slots.table.as_result()
    # A bundle's own faults (a hung mount, a known bug) are not read yet: its kernel log is not part of it.
    result["faults"] = []
    result["pace"] = found["pace"]
    result["headline"] = headline.headline(result, figures)
    result["first_screen"] = headline.first_screen(result)
    result["evidence"] = markdown.fold_evidence(result)
    return shape.checked(result)


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
    for host in facts:
        # each client's probe measured its own path: a slower path is what differs about a host
        facts[host]["probe_bytes_per_second"] = found["net"]["probe_per_host"].get(host)
    return facts


def _capture_note(capture_view):
    """What the summary adds for a capture: no canary, and every flag."""
    if capture_view is None:
        return ""
    # The summary line ends without a full stop (_summary_line); this note follows it directly.
    flags = "".join("; " + flag["message"] for flag in capture_view["flags"])
    return (". No canary ranks: the achieved figure is every writer's WRITE bytes on the mount over the %.0f s window, "
            "idle time included%s." % (capture_view["seconds"], flags))


def _diagnosis_result(run, evidence, links, found, decision, recommendations):
    """What diagnose() returns (diagnosis.json)."""
    net = found["net"]
    limiting, contributing, verdict = decision.limiting, decision.contributing, decision.verdict
    return {
        "mount_point": run["mount_point"],
        "target_bytes_per_second": run["target_bps"],
        "achieved_bytes_per_second": run["achieved"],
        "achieved_source": run["achieved_source"],
        # Several NFS paths: ops, bytes and RTT per path and in total (diagnosis/paths.py); absent with one.
        **({"paths": run["paths"]} if run.get("paths") else {}),
        "gap_factor": run["gap"],
        "limiting_layer": limiting,
        "contributing": list(contributing),
        "confidence": decision.confidence,
        "confidence_reasons": list(decision.confidence_reasons),
        "unmeasured": list(decision.unmeasured),
        "network": {"state": net["state"], "summary": net["summary"], "headline": net["headline"],
                    "probe_share": rounded(net["probe_share"]), "loss": _loss_result(net["loss"]),
                    "links": [rounded_row(row) for row in links]},
        "cpu": found["cpu"]["hosts"],
        "mounts": dict((host, rounded_row(state)) for host, state in found["mounts"]["hosts"].items()),
        "verdict": verdict,
        # Whether the limit is one host's to repair or the whole cluster's (verdict.scope).
        "scope": rounded_row(decision.scope),
        "tuning_headroom_factor": decision.headroom,
        "tuning_headroom_why": decision.headroom_why,
        "evidence": evidence.items,
        "recommendations": recommendations,
        "capacity": run["capacity"],
        "summary": _summary_line(verdict, limiting, contributing, run["achieved"], run["target_bps"], run["gap"], decision.unmeasured)
        + _loss_note(net, limiting) + _start_note(run["canary"]) + _window_note(run["window"]) + _capture_note(run["capture"]),
        "start": _start_block(run["canary"]),
        "window": run["window"],
        "capture": _capture_result(run["capture"]),
        "clients": dict((client["host"], _client_summary(client)) for client in run["clients"]),
        "excluded_clients": run["excluded_clients"],
        "servers": dict((server["host"], _server_summary(server)) for server in run["servers"]),
        "restore": restore_verdict(run["context"], run["clients"], run["ops"]),
    }


def _loss_result(loss):
    """diagnosis.json's network.loss: the state, the per-host rows (rounded), the probe's own retransmits."""
    rows = [rounded_row(row) for row in loss["hosts"]]
    probe = dict((host, rounded_row(item)) for host, item in loss["probe"].items())
    return dict(loss, hosts=rows, probe=probe)


def _loss_note(net, limiting):
    """The summary says what a lossy path means for the fix, and that loss was unmeasured in an old bundle."""
    if limiting == "network" and net.get("lossy"):
        return "; the path is lossy: repair it (%s) - no slot, thread or architecture change wins back what loss takes" % (
            ", ".join(net["loss"]["lossy_hosts"][:5]))
    return ""


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
        return " Since-mount average over %s, not a checkpoint window." % seconds_text(window["seconds"])
    return ""


def _summary_line(verdict, limiting, contributing, achieved, target, gap, unmeasured=()):
    if target:
        text = "%s: achieved %s of %s target" % (verdict, human.rate(achieved), human.rate(target))
    else:
        missing = "a since-mount average, no checkpoint window" if verdict == "no_window" else NO_TARGET_TEXT
        text = "%s: achieved %s; %s" % (verdict, human.rate(achieved), missing)
    if gap is not None and verdict != "meets_target":
        text += " (gap %s)" % human.factor(gap)
    text += "; %s: %s" % (limit_label(verdict), limiting)
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
        "write_ops": write.get("ops", 0), "write_avg_rtt_ms": rounded(write.get("avg_rtt_ms", 0.0)),
        "write_avg_exe_ms": rounded(write.get("avg_exe_ms", 0.0)), "write_avg_queue_ms": rounded(write.get("avg_queue_ms", 0.0)),
        "write_retrans": write.get("retrans", 0), "write_timeouts": write.get("timeouts", 0), "write_errors": write.get("errors"),
        "transports": rpc["transports"], "sends": rpc["sends"], "backlog_per_send": rounded(rpc["backlog_per_send"]),
        "sending_per_send": rounded(rpc["sending_per_send"]), "max_slots": rpc["max_slots"],
        "max_slots_before": rpc["max_slots_before"], "connect_count_delta": rpc["connect_count"],
        "sunrpc": dict((name, client["sunrpc"][name]) for name in SUNRPC_SETTINGS if name in client["sunrpc"]),
        "dstate": client["dstate"],
        # A bundle from Prometheus: the collector's runs its figures rest on (prometheus/rows.py); no other source has them.
        **({"edges": delta["edges"]} if delta.get("edges") else {}),
    }


def _server_summary(server):
    nfsd = server["nfsd"]
    pool = server["pool"]
    return {
        "threads": server["threads"], "io_bytes_written": nfsd["io_bytes_written"], "io_bytes_read": nfsd["io_bytes_read"],
        "rpc_calls": nfsd["rpc_calls"], "write_ops": nfsd["proc4ops"].get("WRITE", 0) + nfsd["proc3"].get("WRITE", 0),
        "commit_ops": nfsd["proc4ops"].get("COMMIT", 0) + nfsd["proc3"].get("COMMIT", 0), "nfsd_reset": nfsd["reset"],
        "pool_stats": pool["totals"] if pool else None, "pool_stats_reset": pool["reset"] if pool else None,
        "packets_without_idle_thread": rounded(pool["packets_without_idle_thread"]) if pool and pool["packets_without_idle_thread"] is not None else None,
    }
