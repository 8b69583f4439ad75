# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The restore (read-back) verdict, judged like the save.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.canary.plan import context_throughput
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.evidence import rounded
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import rates
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.run import sum_op


RESTORE_RULE = "canary reads: total bytes / (latest end - earliest start), the rule MLPerf Storage states"


def restore_op_figures(ops):
    """Per-op READ and WRITE figures from the run's per-op totals over the usable clients (run.op_totals: ops,
    avg queue, RTT and exe re-averaged by op count, retransmissions): the read phase's READs beside the save's WRITEs."""
    figures = {}
    for name in ("READ", "WRITE"):
        total = ops.get(name) or sum_op((), ())
        # No op in the window: its latencies are unmeasured (None), not 0 ms.
        seen = total["ops"] > 0
        figures[name] = {"ops": total["ops"], "avg_queue_ms": rounded(total["avg_queue_ms"]) if seen else None,
                         "avg_rtt_ms": rounded(total["avg_rtt_ms"]) if seen else None,
                         "avg_exe_ms": rounded(total["avg_exe_ms"]) if seen else None, "retrans": total["retrans"]}
    return figures


def restore_verdict(context, clients, ops):
    """The restore (read-back) judged like the save: None without context.yml's `restore` block.

    A read-limited restore is a checkpoint's load: achieved = the read aggregate (context.yml, the
    write's rule over the read spans on the controller's clock); the target is the checkpoint's
    bytes over the restore's own window, and without one the verdict is no_target (the figure is
    given, never judged against an assumed window). Bad blocks fail it (failed_verification); a read
    start spread over the bound is flagged in the summary, not averaged. clients: the usable clients'
    views (their serverreadbytes); ops: the run's per-op totals over them.
    """
    block = context.get("restore")
    if not isinstance(block, dict):
        return None
    achieved = context_throughput(block)
    window = block.get("target_window_seconds")
    checkpoint = (context.get("target") or {}).get("checkpoint_bytes") or block.get("bytes")
    target = rates.target_rate(checkpoint, window)
    gap = target / achieved if target and achieved else None
    ops = restore_op_figures(ops)
    bad = int(block.get("verify_error_count") or 0)
    verdict = rates.restore_verdict(achieved, target, bad)
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
        line = text % (rate, "%.4g MB/s" % (target / 1e6), checkpoint, rounded(window))
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
