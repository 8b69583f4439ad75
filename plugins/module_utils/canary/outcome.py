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
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import dstate


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
