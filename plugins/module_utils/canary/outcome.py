# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint_canary's values and its result (pure): a Refusal, a phase's Phase, the run's Outcome
(host/canary/run.run returns it), and report(), which turns the plan and the Outcome into the
module's result and failure message once.
"""

from __future__ import annotations

import dataclasses

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import restore
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import dstate


@dataclasses.dataclass(frozen=True)
class Refusal:
    """The canary cannot run as asked: msg names why; result holds the keys the failure returns with it."""

    msg: str
    result: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Phase:
    """One phase's outcome: per-rank results, the stalled ranks, D-state samples, host samples at start and end."""

    results: list
    stalled: list
    samples: list
    host_samples: dict
    harness: dict = dataclasses.field(default_factory=dict)
    read_at: float | None = None
    skipped: str | None = None


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What the run did. stopped: why it failed before any rank was released (barrier_dir, a work
    directory, a fork), None when the ranks ran; cleanup: the result's cleaned_up (and
    cleanup_deferred_pid); start_at: the go on this host's clock, None when the run was called off
    before it (written is then None too); barrier: the barrier record with barrier_dir (with restore,
    its `read`); nfs_paths: the NFS paths' real names, in path_index order."""

    stopped: str | None = None
    cleanup: dict = dataclasses.field(default_factory=dict)
    workdir: str | None = None
    workdirs: tuple = ()
    nfs_paths: tuple = ()
    barrier: dict | None = None
    start_at: float | None = None
    written: Phase | None = None
    read: Phase | None = None
    drained: Phase | None = None
    # The sunrpc views read during the write (host/sunrpc_sampler.RpcSampler.result()); None when the write never ran.
    rpc_samples: dict | None = None


def report(params, planned, ran, diff=False):
    """(the module's result, the failure message or None) of the plan (preflight.Plan, or the Refusal
    that stopped it) and of what the run did (an Outcome; None in check mode)."""
    if isinstance(planned, Refusal):
        return dict(planned.result), planned.msg
    result = dict(planned.result)
    if ran is None:
        return result, None
    if ran.stopped is not None:
        return dict(ran.cleanup), ran.stopped
    result["workdir"] = ran.workdir
    if ran.workdirs:
        result["workdirs"] = list(ran.workdirs)
    if ran.barrier is not None:
        result["barrier"] = ran.barrier
    if ran.written is None:
        # The controller (or barrier_timeout) called the run off: ranks exited unwritten, the directories went.
        result.update(ran.cleanup)
        result["ranks"] = []
        return result, "canary aborted before any rank wrote: %s" % ((ran.barrier or {}).get("abort") or "aborted")
    result["start_at"] = ran.start_at
    if ran.rpc_samples is not None:
        result["rpc_samples"] = ran.rpc_samples
    result.update(ran.cleanup)
    fill(result, params, ran, diff)
    fill_placement(result, params, list(ran.nfs_paths), ran.written, ran.drained)
    return result, failure(result, params["timeout"], ran.written, ran.read) or drain_failure(ran.drained, params["timeout"])


def initial_result(params, mount, rank_plan, start_at, workdir):
    """What the result holds before anything ran (and all check mode returns)."""
    result = {"changed": bool(params["keep"]), "mount": mount, "plan": rank_plan, "start_at": start_at,
              "stalled": [], "dstate_text": "", "dstate_peak": 0, "cleaned_up": False, "workdir": workdir}
    if params["restore"]:
        result["restore"] = restore.plan_restore(rank_plan, params["block_size"], params["restore_cache"],
                                                 params["barrier_dir"])
    return result


def fill(result, params, ran, diff=False):
    """Fill the result from the phases of the Outcome ran (read is None without restore=true); the
    read's and the drain's D-state samples follow the write's."""
    written, read = ran.written, ran.read
    results = written.results
    if read is not None:
        results = read.results
        if read.skipped is None:
            result["restore_host_samples"] = read.host_samples
    samples = written.samples + (read.samples if read else []) + (ran.drained.samples if ran.drained else [])
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
