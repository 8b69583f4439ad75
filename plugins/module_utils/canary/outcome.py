# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint_canary's result from its phases' outcomes, and the failure message of a run (pure).

`written` and `read` are host/canary_run.Phase values: results, stalled, samples,
host_samples, harness, read_at, skipped.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import restore
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import dstate


def initial_result(params, mount, rank_plan, start_at, workdir):
    """What the result holds before anything ran (and all check mode returns)."""
    result = {"changed": bool(params["keep"]), "mount": mount, "plan": rank_plan, "start_at": start_at,
              "stalled": [], "dstate_text": "", "dstate_peak": 0, "cleaned_up": False, "workdir": workdir}
    if params["restore"]:
        result["restore"] = restore.plan_restore(rank_plan, params["block_size"], params["restore_cache"],
                                                 params["barrier_dir"])
    return result


def fill(result, params, written, read, diff=False):
    """Fill the result from the phases' outcomes (read is None without restore=true)."""
    results = written.results
    if read is not None:
        results = read.results
        if read.skipped is None:
            result["restore_host_samples"] = read.host_samples
    samples = written.samples
    result["ranks"] = results
    result["stalled"] = written.stalled + (read.stalled if read else [])
    timed = params["start_at"] is not None or params["barrier_dir"] is not None
    result["summary"] = plan.aggregate(results, result["start_at"] if timed else None)
    if read is not None:
        result["summary"]["restore"] = restore.summary(results, read.read_at, params["restore_cache"], read.skipped)
        result["summary"]["restore"]["read_from"] = restore.read_from(params)
    result["dstate_samples"] = samples
    result["host_samples"] = written.host_samples
    result["harness"] = written.harness
    result["dstate_text"] = "".join(dstate.format_sample(s["epoch"], s["wchans"]) + "\n" for s in samples)
    result["dstate_summary"] = dstate.summarize_dstate(samples)
    result["dstate_peak"] = result["dstate_summary"]["max_count"]
    if params["keep"] and diff:
        files = sorted({item["name"] for rank_plan in result["plan"] for item in rank_plan["files"]})
        result["diff"] = [{"before": "", "after": "".join(f + "\n" for f in files),
                           "before_header": result["workdir"] + " (absent)", "after_header": result["workdir"]}]
    return result


def failure(result, timeout, written, read):
    """The failure message of the run (the write's first, then the read's), or None when it passed."""
    if written.stalled:
        return plan.stall_message(written.stalled, timeout, result["workdir"], result.get("cleanup_deferred_pid"))
    errors = ["rank %d: %s" % (r["rank"], r["error"]) for r in result["ranks"] if r["error"]]
    if errors:
        return "canary ranks failed: %s" % "; ".join(errors)
    if read is None:
        return None
    if read.stalled:
        return "canary restore (read phase): " + plan.stall_message(
            read.stalled, timeout, result["workdir"], result.get("cleanup_deferred_pid"))
    return restore.failure_message(result["ranks"], read.skipped)


def _span(summary):
    """start, end and seconds of a plan.aggregate summary."""
    return {"start": summary["earliest_start"], "end": summary["latest_end"], "seconds": summary["seconds"]}


def fill_placement(result, params, paths, written, drained):
    """per_path, blocking_seconds and drain (issue 28), and a record per checkpoint with num_checkpoints > 1.

    blocking_seconds is the write's MLPerf span: what the optimizer waits, on the local path for a
    burst buffer. The drain fits the interval when it ends within checkpoint_interval_seconds of
    the earliest write start (the next checkpoint begins an interval after this one).
    """
    plans = dict((entry["rank"], entry) for entry in result["plan"])
    rows = []
    for index, path in enumerate(paths):
        mine = [r for r in written.results if plans[r["rank"]].get("path_index", 0) == index]
        summary = plan.aggregate(mine)
        rows.append(dict(_span(summary), path=path, ranks=len(mine), bytes=summary["total_bytes"]))
    result["per_path"] = rows
    result["blocking_seconds"] = result["summary"]["seconds"]
    result["drain"] = None
    if drained is not None:
        summary = plan.aggregate(drained.results)
        drain = dict(_span(summary), bytes=summary["total_bytes"], rate_limit=params["drain_rate_limit"],
                     fits_interval=None, skipped=drained.skipped, ranks=drained.results)
        interval = params["checkpoint_interval_seconds"]
        if interval and drain["end"] is not None and result["summary"]["earliest_start"] is not None:
            drain["fits_interval"] = drain["end"] - result["summary"]["earliest_start"] <= interval
        result["drain"] = drain
    if any(r.get("checkpoints") for r in result["ranks"]):
        result["ranks"] = expand_checkpoints(result["ranks"])
        result["summary"]["checkpoints"] = [
            dict(plan.aggregate([r for r in result["ranks"] if r.get("checkpoint") == index]), checkpoint=index)
            for index in range(params["num_checkpoints"])]
        # The pauses between checkpoints are training, not blocking: the sum of each checkpoint's span.
        spans = [c["seconds"] for c in result["summary"]["checkpoints"]]
        result["blocking_seconds"] = round(sum(spans), 6) if None not in spans else None
    return result


def expand_checkpoints(ranks):
    """One record a rank and checkpoint (its index in `checkpoint`) from the ranks' `checkpoints` lists."""
    expanded = []
    for record in ranks:
        base = dict((key, value) for key, value in record.items() if key != "checkpoints")
        for item in record.get("checkpoints") or [None]:
            if item is None:
                expanded.append(base)
            else:
                expanded.append(dict(base, checkpoint=item["checkpoint"], start=item["start"], end=item["end"], bytes=item["bytes"]))
    return expanded


def drain_failure(drained, timeout):
    """The drain's failure message, or None."""
    if drained is None or drained.skipped:
        return None
    if drained.stalled:
        return "canary drain: " + plan.stall_message(drained.stalled, timeout, "the NFS work directories")
    errors = ["rank %d: %s" % (r["rank"], r["error"]) for r in drained.results if r["error"]]
    return "canary drain failed: %s" % "; ".join(errors) if errors else None
