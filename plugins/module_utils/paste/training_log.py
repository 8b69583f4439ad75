# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Training logs pasted whole or in part: what they say about checkpoint saves, loads and collective timeouts. Pure.

The lines read (their wording, framework by framework, is in training_lines.py beside each pattern):
torchtitan / torch.distributed.checkpoint, PyTorch Lightning's ModelCheckpoint, DeepSpeed, Megatron-LM and
NeMo, MLPerf Storage's DLIO, metaseq/fairseq, and the NCCL watchdog's and monitoredBarrier's timeouts.

window(text) pairs each save's start with its end (same framework, rank, step or tag), takes the durations
a line prints, and groups the saves of one checkpoint (one step; or saves overlapping in time) into a row:
its time is the last end - first start when every save has both (MLPerf Storage's rule for a checkpoint of
many writers), else the slowest rank's duration; its bytes the sum of the ranks' where a line gives them.
read(text) gives one finding per checkpoint (a figure only: the verdict against a target is the caller's),
a save that started and never finished where the framework prints an end, and each collective timeout as a
fault (ranks waited for one that did not arrive - e.g. a writer stuck in NFS I/O).
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import training_lines

KIND = "training_log"
TAKEN_FOR = ("a training log: checkpoint save/load lines (torchtitan, Lightning, DeepSpeed, Megatron-LM/NeMo, DLIO, "
             "metaseq) or NCCL/torch.distributed collective timeouts")
CAN_SHOW = ("each checkpoint's save time (slowest rank, or last end - first start), its bytes and throughput where the "
            "log prints sizes, saves that never finished, and ranks that timed out waiting in a collective")
# Literal pieces of the lines an event is read from (training_lines.py), for a cheap recognise().
_RECOGNISE = ("Watchdog caught collective operation timeout", "failed to pass monitoredBarrier", "the checkpoint",
              "checkpoint at iteration", "saved checkpoint", "loaded checkpoint", "save-checkpoint", "load-checkpoint",
              "Checkpoint save for step", "async checkpoint save", "Global Checkpoint", "saving checkpoint",
              "loading checkpoint", "saving model to '", "Restor", "[Torch] ", "Saving model checkpoint", "checkpoint saved",
              "(writing took", "'write_secs'", "|  save_checkpoint")
COLLECTIVE_TIMEOUT = {
    "name": "collective_timeout",
    "what": "ranks waited in a collective for a rank that did not arrive - e.g. a writer stuck in NFS I/O (D state)",
    "tuning_fixes": False,
    "fix": "find what held the missing rank when it timed out (its stack in /proc/PID/stack, hung-task reports in the "
           "kernel log, the save it was writing); keep a save off the collective path (the other ranks wait at an "
           "explicit barrier after the save, or the save runs asynchronously) and raise the process group's timeout "
           "(init_process_group(timeout=...)) only to cover a save that is slow but progressing",
    "source": "https://pytorch.org/docs/stable/distributed.html#torch.distributed.init_process_group",
}
_SAVE_FIELDS = ("framework", "rank", "host", "step", "started_at", "ended_at", "seconds", "bytes", "bytes_per_second",
                "path", "finished", "line")


def recognise(text):
    """True when some line of the text is a checkpoint save/load or a collective timeout line read here."""
    for mark in _RECOGNISE:
        start = text.find(mark)
        while start != -1:
            begin = text.rfind("\n", 0, start) + 1
            end = text.find("\n", start)
            end = len(text) if end == -1 else end
            found = training_lines.event(text[begin:end], 0)
            if found and found["kind"] not in ("step", "size"):
                return True
            start = text.find(mark, end)
    return False


def window(text):
    """{"saves", "loads", "timeouts", "checkpoints", "notes"} (see the module doc), or None when no line says any."""
    events = [found for found in (training_lines.event(line, number) for number, line in enumerate(text.split("\n"), 1))
              if found]
    if not any(found["kind"] not in ("step", "size") for found in events):
        return None
    state = {"save": [], "load": [], "timeouts": [], "open": [], "step": None, "bytes": None, "notes": [],
             "profile": None}
    for found in events:
        _take(state, found)
    _profiled(state)
    saves = [_public(record) for record in state["save"]]
    checkpoints = [_checkpoint(group) for group in _groups(saves)]
    if state["profile"]:
        for row in checkpoints:
            if row["framework"] == "lightning" and row["seconds"] is not None and row["rule"] == "the save's own":
                row["rule"] = "the mean of %d saves (Lightning's SimpleProfiler)" % state["profile"]["calls"]
    return {"saves": saves, "loads": [_public(record) for record in state["load"]], "timeouts": state["timeouts"],
            "checkpoints": checkpoints, "notes": _notes(state, saves, checkpoints)}


def read(text):
    """Findings: one per checkpoint (weight 0), one per save never finished, one fault per collective timeout."""
    return findings_of(window(text))


def findings_of(seen):
    """read()'s findings from a window() already worked out (None: none)."""
    if seen is None:
        return []
    findings = [_checkpoint_finding(row) for row in seen["checkpoints"]]
    findings += [_unfinished_finding(save) for save in seen["saves"] if save["finished"] is False]
    findings += [_timeout_finding(group, seen["saves"]) for group in _timeout_groups(seen["timeouts"])]
    return findings


# ---------------------------------------------------------------- pairing the lines into saves


def _take(state, found):
    kind = found["kind"]
    if kind == "step":
        state["step"] = found["step"]
    elif kind == "size":
        state["bytes"] = found["bytes"]
    elif kind in ("timeout", "missing"):
        state["timeouts"].append(_timeout(found))
    elif kind == "timer":
        _timer(state, found)
    elif kind == "file":
        _file(state, found)
    elif kind == "written":
        _written(state, found)
    elif kind == "profile":
        state["profile"] = found
    else:
        _save_line(state, found)


def _record(state, found):
    step = found["step"] if found["step"] is not None else state["step"]
    record = {"framework": found["framework"], "rank": found["rank"], "host": found["host"], "step": step,
              "started_at": None, "ended_at": None, "seconds": found["seconds"], "bytes": None,
              "bytes_per_second": found["bytes_per_second"], "path": found["path"], "finished": None,
              "line": found["line"], "_op": found["op"], "_tag": found["tag"], "_events": [found]}
    if found["op"] == "save" and state["bytes"] is not None and found["framework"] == "dlio":
        record["bytes"] = state["bytes"]
    return record


def _save_line(state, found):
    kind, target = found["kind"], state[found["op"]]
    if kind == "start":
        if found["framework"] == "nemo" and found["path"] is not None:
            _drop_lightning_twin(state, target, found["path"])
        record = _record(state, found)
        record.update(started_at=found["time"], seconds=None, finished=None if found.get("no_end") else False)
        state["open"].append(record)
        target.append(record)
        return
    if kind == "done":
        # NeMo's "Start time" is time.time() (epoch seconds) but its line stamps are the host's local time: a save
        # is placed on the stamps' clock (it ends when its line prints) so that it spans with the other lines'
        # saves; the printed start is used only on a line without a stamp.
        record = _record(state, found)
        started = found.get("started_at")
        ended = found["time"] if found["time"] is not None or started is None else started + found["seconds"]
        record.update(started_at=_minus(ended, found["seconds"]), ended_at=ended, finished=True)
        target.append(record)
        return
    record = _match(state["open"], found)
    if record is None:
        if _printed_twice(target, found):
            return  # NeMo prints a finished async save twice (Megatron's finalize line, then its own): one save
        record = _record(state, found)
        record.update(started_at=_minus(found["time"], found["seconds"]))
        target.append(record)
    else:
        state["open"].remove(record)
    _finish(record, found)


def _finish(record, found):
    record["ended_at"] = found["time"]
    record["_events"].append(found)
    if found["seconds"] is not None:
        record["seconds"] = found["seconds"]
    elif record["started_at"] is not None and found["time"] is not None:
        record["seconds"] = max(found["time"] - record["started_at"], 0.0)
    for key in ("path", "bytes_per_second", "step"):
        if record[key] is None:
            record[key] = found[key]
    if record["bytes"] is None and record["bytes_per_second"] is not None and record["seconds"] is not None:
        record["bytes"] = record["bytes_per_second"] * record["seconds"]
    record["finished"] = True


def _printed_twice(target, found):
    """An end line that repeats the latest save of its path, already finished: NeMo's "Async checkpoint save for
    step N+1 (P) finalized" after Megatron's "Successfully saved checkpoint from iteration N to P" (its step is the
    next one: global_step has moved on). Other saves may finish between the two lines (a top-k and a -last copy)."""
    if found["path"] is None:
        return False
    twin = next((record for record in reversed(target) if record["path"] == found["path"]), None)
    if twin is None or not twin["finished"]:
        return False
    return twin["step"] is None or found["step"] is None or 0 <= found["step"] - twin["step"] <= 1


def _drop_lightning_twin(state, target, path):
    """NeMo's ModelCheckpoint is Lightning's: Lightning's verbose "saving model to 'P'" line before NeMo's own save
    of P is the same save, not a second one (it prints no end and no time)."""
    for record in [record for record in target if record["framework"] == "lightning" and record["path"] == path
                   and record["ended_at"] is None]:
        target.remove(record)
        if record in state["open"]:
            state["open"].remove(record)


def _minus(moment, seconds):
    return moment - seconds if moment is not None and seconds is not None else None


def _match(open_records, found):
    """The latest open start this end closes: same op, framework, rank; same step, tag and path where both print one
    (NeMo's top-k and -last saves of one step are in flight together and finish in either order)."""
    for record in reversed(open_records):
        if (record["_op"], record["framework"], record["rank"]) != (found["op"], found["framework"], found["rank"]):
            continue
        if _differ(record["_tag"], found["tag"]) or _differ(record["step"], found["step"]) or _differ(record["path"], found["path"]):
            continue
        return record
    return None


def _differ(one, other):
    return one is not None and other is not None and one != other


def _timer(state, found):
    """Megatron's (min, max) across ranks: the slowest rank's time of the last save (or load) it follows."""
    target = state[found["op"]]
    for record in reversed(target):
        if record["framework"] in ("megatron", "nemo") and not any(item["kind"] == "timer" for item in record["_events"]):
            record["seconds"] = found["seconds"]
            record["_events"].append(found)
            return
    record = _record(state, found)
    record.update(finished=True, ended_at=found["time"], started_at=_minus(found["time"], found["seconds"]))
    target.append(record)


def _file(state, found):
    """DeepSpeed's file lines name the path of the save its "[Torch] Checkpoint TAG" line opened."""
    for record in reversed(state["save"]):
        if record["framework"] == "deepspeed" and not _differ(record["step"], found["step"]):
            if record["path"] is None:
                record["path"] = found["path"]
            return
    found = dict(found, kind="start", no_end=True)
    _save_line(state, found)


def _written(state, found):
    """DeepSpeed's show_statistics line for one file: its bytes and write seconds added to its checkpoint's save.

    The files of one save (the tag's directory) are summed: a checkpoint's seconds are its files' write() seconds
    added up - the write time if one writer wrote them in turn, more than the wall time if ranks wrote at once.
    """
    for record in reversed(state["save"]):
        if record["framework"] != "deepspeed":
            continue
        if record["_tag"] == found["tag"] or (record["step"] is not None and record["step"] == found["step"]):
            break
    else:
        record = None
    if record is None or record.get("_files") is None and record["finished"] is True:
        record = _record(state, found)
        record.update(seconds=None, path=found["path"])
        state["save"].append(record)
    if record.get("_files") is None:
        record.update(_files=0, seconds=0.0, bytes=0, finished=True, _tag=found["tag"], rank=None)
    record["_files"] += 1
    record["seconds"] += found["seconds"]
    record["bytes"] += found["bytes"]
    record["_events"].append(found)
    if record["path"] is None:
        record["path"] = found["path"]


def _profiled(state):
    """Lightning's SimpleProfiler prints the mean save_checkpoint time of its calls, not each save's: given to each
    ModelCheckpoint save the log shows (or one save when it shows none), said to be a mean in the notes."""
    profile = state["profile"]
    if profile is None or not profile["seconds"]:
        return
    saves = [record for record in state["save"] if record["framework"] == "lightning" and record["seconds"] is None]
    if not saves:
        record = _record(state, profile)
        record.update(finished=True)
        state["save"].append(record)
        return
    for record in saves:
        record["seconds"] = profile["seconds"]
        record["_events"].append(profile)


def _public(record):
    return {key: record[key] for key in _SAVE_FIELDS}


def _timeout(found):
    row = {key: found.get(key) for key in ("framework", "rank", "host", "collective", "seq", "timeout_ms", "ran_ms", "line")}
    if found["kind"] == "missing":
        row["missing"] = found["missing"]
    return row


# ---------------------------------------------------------------- checkpoints


def _groups(saves):
    """Saves of one checkpoint: one framework's step; without a step, saves overlapping in time (else one each).

    A rank writes once per checkpoint, so a second save of the same step by the same rank (a new run in the
    same paste, or NeMo's "-last" copy) starts a new checkpoint.
    """
    groups, by_step = [], {}
    for save in saves:
        if save["step"] is not None:
            key = (save["framework"], save["step"])
            if key not in by_step or any(other["rank"] == save["rank"] for other in by_step[key]):
                by_step[key] = []
                groups.append(by_step[key])
            by_step[key].append(save)
        elif groups and _overlaps(groups[-1], save):
            groups[-1].append(save)
        else:
            groups.append([save])
    return groups


def _overlaps(group, save):
    if save["started_at"] is None or any(other["step"] is not None or other["ended_at"] is None for other in group):
        return False
    return save["started_at"] <= max(other["ended_at"] for other in group)


def _checkpoint(group):
    timed = [save for save in group if save["seconds"] is not None]
    spanned = all(save["started_at"] is not None and save["ended_at"] is not None for save in group)
    if len(group) == 1 and timed:
        seconds, rule = timed[0]["seconds"], "the save's own"
    elif spanned:
        # time stamps print at most microseconds: the difference is rounded to them
        seconds = round(max(save["ended_at"] for save in group) - min(save["started_at"] for save in group), 6)
        rule = "last end - first start"
    elif timed:
        seconds, rule = max(save["seconds"] for save in timed), "slowest rank"
    else:
        seconds, rule = None, None
    sized = [save["bytes"] for save in group if save["bytes"] is not None]
    size = sum(sized) if sized else None
    slowest = max(timed, key=lambda save: save["seconds"]) if timed else None
    ranks = sorted({save["rank"] for save in group if save["rank"] is not None})
    return {"step": group[0]["step"], "framework": group[0]["framework"], "ranks": ranks, "saves": len(group),
            "seconds": seconds, "rule": rule, "bytes": size,
            "bytes_per_second": size / seconds if size is not None and seconds else None,
            "slowest": {"rank": slowest["rank"], "host": slowest["host"], "seconds": slowest["seconds"]} if slowest else None,
            "finished": all(save["finished"] is not False for save in group), "line": group[0]["line"]}


def _notes(state, saves, checkpoints):
    notes = []
    frameworks = {save["framework"] for save in saves}
    if saves and not any(row["bytes"] is not None for row in checkpoints):
        notes.append("no checkpoint sizes in the log: save times only, no throughput")
    if saves and not any(row["seconds"] is not None for row in checkpoints):
        notes.append("no save durations in the log (Lightning's ModelCheckpoint and DeepSpeed 0.19 print a save's start "
                     "only; NeMo's async finalize lines its end only)")
    if any(record.get("_files") for record in state["save"]):
        notes.append("DeepSpeed's writer show_statistics: a checkpoint's time here is the sum of its files' write() "
                     "seconds (serialisation not included; ranks writing at once overlap, so the wall time is less), "
                     "its bytes the sum of the files' bytes")
    if state["profile"]:
        profile = state["profile"]
        shown = sum(1 for save in saves if save["framework"] == "lightning")
        notes.append("Lightning's SimpleProfiler prints the mean save_checkpoint time of %d call(s), %.6g s (total %.6g s), "
                     "not each save's: the slowest save may be longer than this mean%s" % (
                         profile["calls"], profile["seconds"], profile["total_seconds"],
                         "" if shown == profile["calls"] else "; the log shows %d save(s)" % shown))
    if "dlio" in frameworks:
        notes.append("DLIO prints sizes and rates in GB: read as 10^9 bytes")
    if any(event.get("staging") for save in state["save"] for event in save["_events"]):
        notes.append("torchtitan with async enabled times the staging, not the write")
    if any(event["kind"] == "timer" for save in state["save"] for event in save["_events"]):
        notes.append("Megatron's save-checkpoint timer is the write for a synchronous save; with --async-save it times "
                     "the request only (NVIDIA/Megatron-LM#1763)")
    if any(save["started_at"] is not None or save["ended_at"] is not None for save in saves):
        notes.append("time stamps read as UTC: only differences between them are used")
    return notes


# ---------------------------------------------------------------- findings


def _finding(signal, value, explanation, line, fault=None, threshold=None, crossed=False, weight=0):
    return {"layer": None, "fault": fault, "signal": signal, "value": value, "threshold": threshold, "crossed": crossed,
            "weight": weight, "explanation": explanation, "line": line}


def _checkpoint_finding(row):
    where = "step %s" % row["step"] if row["step"] is not None else "a checkpoint"
    parts = ["%s (%s): %d save%s" % (where, row["framework"], row["saves"], "" if row["saves"] == 1 else "s")]
    if row["ranks"]:
        parts.append("ranks %s" % ", ".join(str(rank) for rank in row["ranks"]))
    if row["seconds"] is None:
        parts.append("no duration in the log")
    else:
        parts.append("%.2f s (%s)" % (row["seconds"], row["rule"]))
    slowest = row["slowest"]
    if slowest and len(row["ranks"]) > 1:
        host = " on %s" % slowest["host"] if slowest["host"] else ""
        parts.append("slowest rank %s%s %.2f s" % (slowest["rank"], host, slowest["seconds"]))
    if row["bytes"] is not None:
        parts.append("%.3f GB" % (row["bytes"] / 1e9))
    if row["bytes_per_second"] is not None:
        parts.append("%.3f GB/s" % (row["bytes_per_second"] / 1e9))
    if not row["finished"]:
        parts.append("not finished in the log")
    return _finding("checkpoint save time", row["seconds"], "; ".join(parts), row["line"])


def _unfinished_finding(save):
    step = " at step %s" % save["step"] if save["step"] is not None else ""
    where = " to %s" % save["path"] if save["path"] else ""
    return _finding("checkpoint save not finished in the log", None,
                    "%s save%s%s started (line %d) and no end follows in the text: still writing, failed, the paste "
                    "stops there, or this version prints no end" % (save["framework"], step, where, save["line"]), save["line"])


def _timeout_groups(timeouts):
    groups, index = [], {}
    for row in timeouts:
        key = (row["framework"], row["collective"], row["seq"], row["timeout_ms"])
        if key not in index:
            index[key] = []
            groups.append(index[key])
        index[key].append(row)
    return groups


def _timeout_finding(group, saves):
    first = group[0]
    ranks = sorted({row["rank"] for row in group if row["rank"] is not None})
    missing = sorted({rank for row in group for rank in row.get("missing", ())})
    ran = [row["ran_ms"] for row in group if row["ran_ms"] is not None]
    waited = max(ran) if ran else first["timeout_ms"]
    seq = " SeqNum %s" % first["seq"] if first["seq"] is not None else ""
    unranked = sum(1 for row in group if row["rank"] is None)
    who = "ranks %s" % ", ".join(str(rank) for rank in ranks) if ranks else ""
    if unranked:
        who += "%s%d report%s naming no rank" % (" and " if who else "", unranked, "" if unranked == 1 else "s")
    text = "%s timed out waiting in %s%s after %d ms (timeout %d ms)" % (who, first["collective"], seq, waited,
                                                                         first["timeout_ms"])
    if missing:
        text += "; ranks that did not arrive, as the log says: %s" % ", ".join(str(rank) for rank in missing)
    during = [save for save in saves if save["line"] < first["line"] and (
        save["finished"] is False or (save["ended_at"] is None and save["finished"] is None))]
    if during:
        text += "; a checkpoint save was under way (line %d)" % during[-1]["line"]
    return _finding("collective watchdog timeout", waited / 1000.0, text, first["line"], fault=COLLECTIVE_TIMEOUT,
                    threshold="the process group's timeout: %d ms" % first["timeout_ms"], crossed=True, weight=2)
