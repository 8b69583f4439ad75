# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The two write-throughput figures of one run, over its rank records: the one place they are computed.

- ``ours``: all bytes / (latest end - earliest start) over every rank of every host (canary.aggregate,
  the rule MLPerf Storage's rules text states: the checkpoint lasts until its slowest process is done).
- ``mlperf_published``: what MLPerf Storage publishes, computed as DLIO's code does it
  (argonne-lcf/dlio_benchmark e1919d7, dlio_benchmark/utils/statscounter.py): end_save_ckpt() sets a
  checkpoint's throughput to ``checkpoint_size / duration`` where duration is the calling process's own
  time from start_save_ckpt() (taken right after a barrier, main.py) to the end of its own save - no
  barrier before the end unless checkpoint.rank_sync (default False, utils/config.py) - and end_run()
  keeps rank 0's values only, publishing their mean over the checkpoints as
  save_checkpoint_io_mean_GB_per_second. checkpoint_size is the sum over all ranks of their state's
  bytes divided by 1024**3 (checkpointing/base_checkpointing.py: allreduce, then /1024./1024./1024.),
  so the "GB/s" DLIO prints is GiB/s. When rank 0 finishes before the others, this figure is higher
  than ours: the checkpoint is not done when rank 0 is.

A rank record is a dict {host, rank, start, end, bytes, error} on the controller's clock
(bundle/bundle.canary_ranks); optional ``checkpoint`` (the index of the checkpoint when the run wrote
several, default 0) and ``global_rank``. A record of a run with several checkpoints carries them as
``checkpoints`` [{checkpoint, start, end, bytes}] on its host's clock (host/canary/shapes.py): each
becomes a record of its own, moved by the record's clock_offset_seconds. Without global_rank, rank 0 is rank 0 of the first host in
sorted order: the role gives client i of the sorted client group the global ranks from i x ranks
(roles/canary_validation, first_rank).
"""

from __future__ import annotations

import math

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import clock
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary

GIB = 1024.0 ** 3

OURS_RULE = ("all bytes / (latest end - earliest start) over every rank of every host, per checkpoint "
             "(MLPerf Storage's rules text: the slowest process ends the checkpoint)")
PUBLISHED_RULE = ("checkpoint bytes / rank 0's own duration, mean over the checkpoints, in GiB/s "
                  "(DLIO statscounter.py end_save_ckpt/end_run, what MLPerf Storage publishes)")


def _expanded(ranks):
    """One record per rank and checkpoint: a record's own `checkpoints` split out, on the controller's clock."""
    for record in ranks:
        nested = record.get("checkpoints")
        if not isinstance(nested, list) or not nested:
            yield record
            continue
        offset = record.get("clock_offset_seconds")
        for item in nested:
            # A rank that failed in a checkpoint has no end there: that checkpoint carries its error.
            yield dict(record, checkpoint=item.get("checkpoint"), bytes=item.get("bytes") or 0,
                       start=clock.to_controller_time(item.get("start"), offset),
                       end=clock.to_controller_time(item.get("end"), offset),
                       error=record.get("error") if item.get("end") is None else None, checkpoints=None)


def inconsistent(records, start="start", end="end"):
    """Sentences naming each record whose start and end are no span: a time that is not a finite number,
    or an end before its start (a forged or hand-edited canary.json; a clock step is caught by clock_offset).

    Such a record is never used: one rank that "ends" a second before the others start shrinks the span
    and ranks its option first. A record without an end (a rank that did not finish) is no such problem.
    """
    found = []
    for record in records:
        begin, finish = record.get(start), record.get(end)
        if begin is None or finish is None:
            continue
        where = "%s rank %s%s" % (record.get("host"), record.get("rank"),
                                  "" if record.get("checkpoint") is None else " checkpoint %s" % record.get("checkpoint"))
        if not (finite(begin) and finite(finish)):
            found.append("%s: %s %r / %s %r is no time" % (where, start, begin, end, finish))
        elif finish < begin:
            found.append("%s ends %.6g s before it starts (%s %r, %s %r)" % (where, begin - finish, start, begin, end, finish))
    return found


def finite(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def refusal(found):
    """The problem text of figures left unmeasured because of inconsistent records."""
    return "refused: %s%s" % ("; ".join(found[:3]), " (and %d more)" % (len(found) - 3) if len(found) > 3 else "")


def _checkpoints(ranks):
    """{checkpoint index: [rank records]} (one checkpoint, index 0, when the records carry none)."""
    groups = {}
    for record in _expanded(ranks):
        groups.setdefault(int(record.get("checkpoint") or 0), []).append(record)
    return groups


def _is_rank_zero(record, first_host):
    if record.get("global_rank") is not None:
        return int(record["global_rank"]) == 0
    return record.get("host") == first_host and int(record.get("rank") or 0) == 0


def _rank_zero(records):
    hosts = sorted(set(record.get("host") for record in records if record.get("host") is not None))
    first_host = hosts[0] if hosts else None
    found = [record for record in records if _is_rank_zero(record, first_host)]
    return found[0] if found else None


def _published_checkpoint(index, records):
    """One checkpoint's DLIO figure: (sum of the ranks' bytes / GiB) / rank 0's own seconds."""
    row = {"checkpoint": index, "bytes": sum(record.get("bytes") or 0 for record in records),
           "rank0_host": None, "rank0_seconds": None, "gib_per_second": None, "problem": None}
    zero = _rank_zero(records)
    if zero is None:
        row["problem"] = "no rank 0 record"
        return row
    row["rank0_host"] = zero.get("host")
    if not canary.finished_ranks([zero]):
        row["problem"] = "rank 0 did not finish (%s)" % (zero.get("error") or "no end")
        return row
    seconds = zero["end"] - zero["start"]
    row["rank0_seconds"] = round(seconds, 6)
    if seconds > 0:
        row["gib_per_second"] = row["bytes"] / GIB / seconds
    return row


def two_figures(ranks):
    """Both write-throughput figures of one run, each with what it rests on.

    {"ours": {bytes, seconds, bytes_per_second, checkpoints, incomplete_ranks, rests_on},
     "mlperf_published": {gib_per_second, bytes_per_second, checkpoints: [per checkpoint], rests_on},
     "published_over_ours": ratio or None}. A figure that cannot be computed (no finished rank, no
    rank 0, a rank that did not finish) is None and ``problem`` says why: unmeasured, never guessed.
    With several checkpoints ours is their bytes over the sum of their own spans (the pauses between
    checkpoints are no checkpoint time), the published one the mean of the per-checkpoint figures.
    """
    ranks = list(ranks or [])
    refused = inconsistent(_expanded(ranks))
    if refused:
        return _refused_figures(ranks, refusal(refused))
    groups = _checkpoints(ranks)
    spans, total_bytes, incomplete, problems = [], 0, [], []
    for index in sorted(groups):
        summary = canary.aggregate(groups[index])
        total_bytes += summary["total_bytes"]
        incomplete.extend("%s/%s" % (record.get("host"), record.get("rank")) for record in groups[index]
                          if record not in canary.finished_ranks(groups[index]))
        if summary["seconds"] is None:
            problems.append("checkpoint %d: no rank finished" % index)
        else:
            spans.append(summary["seconds"])
    seconds = sum(spans) if spans and not problems else None
    ours = {"bytes": total_bytes, "seconds": seconds, "checkpoints": len(groups),
            "bytes_per_second": total_bytes / seconds if seconds else None,
            "incomplete_ranks": incomplete, "rests_on": OURS_RULE,
            "problem": "; ".join(problems) if problems else (None if ranks else "no rank records")}
    per_checkpoint = [_published_checkpoint(index, groups[index]) for index in sorted(groups)]
    figures = [row["gib_per_second"] for row in per_checkpoint]
    measured = bool(figures) and all(value is not None for value in figures)
    mean = sum(figures) / len(figures) if measured else None
    problems = "; ".join("checkpoint %d: %s" % (row["checkpoint"], row["problem"]) for row in per_checkpoint if row["problem"])
    published = {"gib_per_second": mean, "bytes_per_second": mean * GIB if mean is not None else None,
                 "checkpoints": per_checkpoint, "rests_on": PUBLISHED_RULE,
                 "problem": None if measured else (problems or "no rank records")}
    ratio = None
    if published["bytes_per_second"] and ours["bytes_per_second"]:
        ratio = published["bytes_per_second"] / ours["bytes_per_second"]
    return {"ours": ours, "mlperf_published": published, "published_over_ours": ratio}


def _refused_figures(ranks, problem):
    """two_figures() when a record is inconsistent: both figures unmeasured, saying why; the bytes still counted."""
    total = sum(record.get("bytes") or 0 for record in _expanded(ranks))
    return {"ours": {"bytes": total, "seconds": None, "checkpoints": len(_checkpoints(ranks)), "bytes_per_second": None,
                     "incomplete_ranks": [], "rests_on": OURS_RULE, "problem": problem},
            "mlperf_published": {"gib_per_second": None, "bytes_per_second": None, "checkpoints": [], "rests_on": PUBLISHED_RULE,
                                 "problem": problem},
            "published_over_ours": None}


READ_PUBLISHED_RULE = ("checkpoint bytes read / rank 0's own read duration, in GiB/s (DLIO statscounter.py end_load_ckpt,"
                       " the load's counterpart of the save figure)")


def published_read(ranks):
    """MLPerf's published restore figure over the read fields of the rank records (read_start, read_end,
    read_bytes): {gib_per_second, bytes_per_second, rank0_seconds, rests_on, problem}; None values when
    no rank read or rank 0 did not finish its read."""
    records = [dict(record, start=record.get("read_start"), end=record.get("read_end"), bytes=record.get("read_bytes") or 0,
                    error=record.get("error") or record.get("read_error") or (record.get("verify_error_count") and "verify errors"))
               for record in (ranks or []) if record.get("read_start") is not None or record.get("read_error")]
    if not records:
        return {"gib_per_second": None, "bytes_per_second": None, "rank0_seconds": None, "rests_on": READ_PUBLISHED_RULE,
                "problem": "no read-back in this run"}
    refused = inconsistent(ranks or [], "read_start", "read_end")
    if refused:
        return {"gib_per_second": None, "bytes_per_second": None, "rank0_seconds": None, "rests_on": READ_PUBLISHED_RULE,
                "problem": refusal(refused)}
    row = _published_checkpoint(0, records)
    value = row["gib_per_second"]
    return {"gib_per_second": value, "bytes_per_second": value * GIB if value is not None else None,
            "rank0_seconds": row["rank0_seconds"], "rests_on": READ_PUBLISHED_RULE, "problem": row["problem"]}
