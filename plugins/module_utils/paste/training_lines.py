# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One line of a training log: the checkpoint event it reports, if any. Pure.

event(line, number) returns None or a dict:
    {"kind": "start" | "end" | "done" | "timer" | "timeout" | "missing" | "size" | "step" | "file" | "written" | "profile",
     "op": "save" | "load" | None, "framework", "rank", "host", "step", "tag", "time" (epoch seconds of the
     line's own time stamp, UTC assumed), "seconds", "bytes", "bytes_per_second", "path", "line", ...}
"start"/"end" are paired by training_log.py; "done" carries its own duration; "timer" is Megatron's
(min, max) across ranks; "timeout" an NCCL watchdog timeout; "missing" ranks a barrier names; "size" a
checkpoint's size; "step" the training step a progress line shows (for a save line that prints none); "file" a
file DeepSpeed starts writing; "written" one file a DeepSpeed save wrote (its bytes and write seconds); "profile"
Lightning's SimpleProfiler row for save_checkpoint (the mean of "calls" saves).

The wording of each line is the framework's own (the source is named beside each pattern). Every pattern
is anchored on a literal, its numbers bounded (a 60,000-digit figure matches nothing), and a line is cut
to 4096 characters before any matching, so each match is linear in the cut line.
"""

from __future__ import annotations

import datetime
import posixpath
import re

_NUM = r"(\d{1,15}(?:\.\d{1,20})?)"
_STEP = r"(\d{1,12})"
_PATH = r"(\S{1,1024})"
# A Python float's repr: 0.0021131038665771484, 4.5e-05, 1e-05.
_FLOAT = r"(\d{1,15}(?:\.\d{1,20})?(?:e[-+]\d{1,3})?)"

# torchtitan torchtitan/components/checkpoint.py (CheckpointManager.save/load): "Saving the checkpoint (or
# staging if async is enabled)." then "Finished saving the checkpoint (or staging if async is enabled)in
# 393.86 seconds." (pytorch/torchtitan#1301, the missing space as printed); with async the figure is the staging.
_TITAN_SAVE = re.compile(r"Saving the (?:full )?checkpoint(?: \(or staging if async is enabled\))?\.")
_TITAN_SAVED = re.compile(r"Finished saving the (?:full )?checkpoint(?P<async> \(or staging if async is enabled\))?"
                          r" ?in " + _NUM + r" seconds")
_TITAN_LOAD = re.compile(r"Loading the checkpoint (?:from|at) " + _PATH)
_TITAN_LOADED = re.compile(r"Finished loading the checkpoint in " + _NUM + r" seconds")
# Megatron-LM megatron/training/checkpointing.py: "saving checkpoint at iteration {:7d} to {} in {} format",
# "  successfully saved checkpoint from iteration {:7d} to {}" (older: "at iteration"), NeMo prints the same
# finalize line capitalised; loads: "loading checkpoint from {} at iteration {}", "successfully loaded checkpoint
# from {} [ t .., p .. ] at iteration {}".
_MEGATRON_SAVE = re.compile(r"(?<![Ss]uccessfully )saving checkpoint at iteration\s{1,16}" + _STEP + r" to " + _PATH)
_MEGATRON_SAVED = re.compile(r"[Ss]uccessfully saved checkpoint (?:from|at) iteration\s{1,16}" + _STEP + r" to " + _PATH)
_MEGATRON_LOAD = re.compile(r"(?<![Ss]uccessfully )loading checkpoint from " + _PATH + r" at iteration " + _STEP)
_MEGATRON_LOADED = re.compile(r"[Ss]uccessfully loaded checkpoint from " + _PATH + r"(?: \[[^\]]{0,200}\])? at iteration " + _STEP)
# megatron/core/timers.py log(): under "(min, max) time across ranks (ms):" each timer prints
# "    save-checkpoint ......: (39899.66, 39899.95)" (NVIDIA/Megatron-LM#1763); with log_option "max" one figure.
_MEGATRON_TIMER = re.compile(r"\b(?P<op>save|load)-checkpoint(?:-non-persistent)?(?P<request>-async-request)?\s{0,8}\.{0,80}:"
                             r"\s{0,8}(?:\(" + _NUM + r",\s{0,8}" + _NUM + r"\)|" + _NUM + r"\s*$)")
# Megatron's training line "iteration      100/    1000 |" (training.py training_log), NeMo's "iteration 64/99 |";
# torchtitan's metrics line "step:  1  loss: ..." (torchtitan/train.py).
_PROGRESS = re.compile(r"\biteration\s{1,16}" + _STEP + r"\s{0,16}/\s{0,16}\d{1,12}\s{0,4}\||\bstep:\s{1,16}" + _STEP + r"\s{1,16}loss:")
# NeMo nemo/lightning/pytorch/callbacks/model_checkpoint.py and nemo/utils/callbacks/dist_ckpt_io.py:
# "Checkpoint save for step N started", "Scheduled async checkpoint save for PATH",
# "Async checkpoint save for step N (PATH) finalized successfully.", and (NeMo 2, dist_ckpt_io)
# "Global Checkpoint Save : Rank: 0 : Iteration: 50 : Start time: 1744408121.151s : Save duration: 4.389s"
# (NeMo 2 recipe READMEs; without "Iteration" in 25.02). Printed by nemo/lightning/io/pl.py
# MegatronCheckpointIO.save_checkpoint: " : ".join of "Global Checkpoint Save", f"Rank: {rank}", f"Iteration:
# {iteration}" (when known), f"Start time: {start_time:.3f}s", f"Save duration: {end_time - start_time:.3f}s" around
# dist_checkpointing.save() (with async save, the blocking part only); start_time is time.time(), epoch seconds,
# not the local time of the "[NeMo I ...]" stamp (training_log.py places the save on the stamps' clock).
_NEMO_SAVE = re.compile(r"Checkpoint save for step " + _STEP + r" started")
_NEMO_SCHEDULED = re.compile(r"Scheduled async checkpoint save for " + _PATH)
_NEMO_FINALIZED = re.compile(r"Async checkpoint save for step " + _STEP + r" \(" + _PATH + r"\) finalized successfully")
_NEMO_GLOBAL = re.compile(r"Global Checkpoint (?P<op>Save|Load) : Rank\s?: " + _STEP + r"(?: : Iteration\s?: " + _STEP + r")?"
                          r" : Start time\s?: " + _NUM + r"s : (?:Save|Load) duration\s?: " + _NUM + r"s")
# DLIO dlio_benchmark/utils/statscounter.py start_save_ckpt/end_save_ckpt (argonne-lcf/dlio_benchmark#270):
# "Starting saving checkpoint 1 after total step 1 for epoch 1",
# "Finished saving checkpoint 1 for epoch 1 in 77.1101 s; Throughput: 1.1394 GB/s"; config.py prints
# "Total checkpoint size: 35.5107 GB".
_DLIO_START = re.compile(r"Starting (?P<op>saving|loading) checkpoint " + _STEP + r" after total step " + _STEP)
_DLIO_END = re.compile(r"Finished (?P<op>saving|loading) checkpoint " + _STEP + r" for epoch " + _STEP + r" in " + _NUM
                       + r" s(?:; Throughput: " + _NUM + r" GB/s)?")
_DLIO_SIZE = re.compile(r"\bTotal checkpoint size: " + _NUM + r" GB\b")
# PyTorch Lightning lightning/pytorch/callbacks/model_checkpoint.py _update_best_and_save (verbose):
# "Epoch 0, global step 4: 'val_loss' reached 1.39844 (best 1.39844), saving model to '/p/e.ckpt' as top 2"
# (printed before the save; no duration is logged); checkpoint_connector.py "Restoring states from the
# checkpoint path at PATH" / "Restored all states from the checkpoint at PATH".
_LIGHTNING_SAVE = re.compile(r"\bEpoch " + _STEP + r", global step " + _STEP + r": .{1,300}? saving model to '(?P<path>[^']{1,1024})'")
_LIGHTNING_LOAD = re.compile(r"Restoring states from the checkpoint path at " + _PATH)
_LIGHTNING_LOADED = re.compile(r"Restored all states from the checkpoint at " + _PATH)
# Trainer(profiler="simple"): trainer.py save_checkpoint() runs in self.profiler.profile("save_checkpoint") and
# profilers/simple.py SimpleProfiler.summary() prints, extended (the default), the row
# f"{sep}|  {action:<{max_key}s}\t|  {mean:<15}\t|  {num_calls:<15}\t|  {total:<15}\t|  {per:<15}\t|"
# ("|  save_checkpoint  \t|  0.068505  \t|  3  \t|  0.20552  \t|  5.8763  \t|"), figures f"{x:.5}" (6.3e-05
# possible); not extended: "|  save_checkpoint\t|  MEAN\t|  TOTAL\t|".
_LIGHTNING_PROFILE = re.compile(r"^\|\s{1,4}save_checkpoint\s{0,4096}\|\s{1,4}" + _FLOAT + r"\s{0,64}\|\s{1,4}"
                                + r"(?:(\d{1,12})\s{0,64}\|\s{1,4})?" + _FLOAT + r"\s{0,64}\|")
# DeepSpeed deepspeed/runtime/engine.py _save_checkpoint: log_dist("Saving model checkpoint: PATH", ranks=[0]);
# runtime/checkpoint_engine/torch_checkpoint_engine.py: "[Torch] Checkpoint TAG is about to be saved!" (0.19;
# "is begin to save!" before deepspeedai/DeepSpeed#3019), "[Torch] Checkpoint TAG is ready now!" (commented
# out in 0.19.8, printed by older releases), "[Torch] Begin/End Load checkpoint from PATH...".
_DS_CREATE = re.compile(r"\[Torch\] Checkpoint (?P<tag>\S{1,256}) is (?:about to be saved|begin to save)!")
_DS_SAVING = re.compile(r"Saving model checkpoint: " + _PATH)
_DS_READY = re.compile(r"\[Torch\] Checkpoint (?P<tag>\S{1,256}) is ready now!")
_DS_ZERO = re.compile(r"\b(?:bf16_)?zero checkpoint saved " + _PATH)
_DS_LOAD = re.compile(r"\[Torch\] (?P<edge>Begin|End) Load checkpoint from " + _PATH)
# With the config's checkpoint writer ("checkpoint": {"writer": {..., "show_statistics": true}}, 0.17+),
# model_checkpointing/writer_factory.py release_writer() -> deepspeed/io/base_file_writer.py _dump_state()
# prints per file: print(f'stats = {self._stats}'), i.e. "stats = {'close': 1, 'fileno': 0, 'flush': 1,
# 'write': 39, 'bytes': 4471721, 'write_secs': 0.0009, 'write_GB/s': 4.5, 'path': '/ck/global_step10/f.pt'}"
# (FastFileWriter adds its aio keys between 'write_GB/s' and 'path'); a float repr may print 4.5e-05.
_DS_STATS = re.compile(r"\bstats = \{'close': \d{1,9}, [^{}]{0,200}?'bytes': (\d{1,18}), 'write_secs': " + _FLOAT
                       + r",[^{}]{0,600}?'path': '(?P<path>[^']{1,1024})'")
# metaseq/fairseq checkpoint_utils.py save_checkpoint: "Saved checkpoint PATH (epoch 1 @ 250 updates, score
# 8.201) (writing took 1.222882273956202 seconds)" (facebookresearch/metaseq#497).
_FAIRSEQ_SAVED = re.compile(r"Saved checkpoint " + _PATH + r" \(epoch \d{1,9} @ " + _STEP + r" updates[^)]{0,200}\)"
                            r" \(writing took " + _NUM + r" seconds\)")
# c10d ProcessGroupNCCL.cpp watchdog: "[Rank 7] Watchdog caught collective operation timeout:
# WorkNCCL(SeqNum=1512677, OpType=ALLREDUCE, NumelIn=.., NumelOut=.., Timeout(ms)=1200000) ran for 1200027
# milliseconds before timing out." (ai2cm/ace#851, meta-pytorch/torchtune#2093).
_NCCL_TIMEOUT = re.compile(r"Watchdog caught collective operation timeout: (?P<kind>\w{1,32})\(SeqNum=" + _STEP
                           + r", OpType=(?P<op>\w{1,64})[^)]{0,200}?Timeout\(ms\)=" + _STEP + r"\)(?: ran for " + _STEP
                           + r" milliseconds)?")
# c10d ProcessGroupGloo.cpp monitoredBarrier: "[Rank 0]: Rank 1 failed to pass monitoredBarrier in 30000 ms",
# with wait_all_ranks "[Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 30000 ms".
_MONITORED = re.compile(r"\bRanks? (?P<ranks>\d{1,7}(?:, \d{1,7}){0,4095}) failed to pass monitoredBarrier in " + _STEP + r" ms")

# Which process printed the line: torchrun's "[rank3]:" prefix, log_dist's/NCCL's "[Rank 3]", mpirun
# --tag-output "[1,3]<stderr>:", NeMo's "Rank: 3", srun -l's "3: ".
_RANKS = (re.compile(r"\[rank(\d{1,7})\]:"), re.compile(r"\[Rank (\d{1,7})\]"), re.compile(r"^\[\d{1,9},(\d{1,7})\]<std"),
          re.compile(r"\bRank\s?: (\d{1,7}) :"), re.compile(r"^(\d{1,7}): "))
# Which host: a pod or node name before " >> " (kubectl logs -f --prefix style of ms-swift's launcher) or
# before ": " at the line's start (pdsh, as DeepSpeed's multi-node launcher prints); a name with a digit or dash.
_HOST = re.compile(r"^(?:\S{1,64} \S{1,64} )?(?P<host>[A-Za-z][\w.-]{0,62}) >> |^(?P<pdsh>[A-Za-z][\w.]{0,30}[-\d][\w.-]{0,30}): ")
_STAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?")

# Literal pieces one of which every event line holds: a cheap first test before the patterns run.
MARKS = ("checkpoint", "Checkpoint", "Watchdog caught", "monitoredBarrier", "saving model to", "save-checkpoint",
         "load-checkpoint", "iteration", "step:", "'write_secs'")


def cut(line):
    """The line as matched: at most 4096 characters (a longer line is cut, never matched whole)."""
    return line[:4096]


def event(line, number):
    """The checkpoint event the line reports (see the module doc), or None."""
    line = cut(line)
    if not any(mark in line for mark in MARKS):
        return None
    for reader in _READERS:
        found = reader(line)
        if found:
            found.setdefault("op", None)
            found.update(line=number, rank=found.get("rank", _rank(line)), host=_host(line), time=_time(line))
            for key in ("step", "tag", "seconds", "bytes", "bytes_per_second", "path"):
                found.setdefault(key, None)
            return found
    return None


def _number(text):
    return float(text) if text is not None else None


def _integer(text):
    return int(text) if text is not None else None


def _titan(line):
    found = _TITAN_SAVED.search(line)
    if found:
        return {"kind": "end", "op": "save", "framework": "torchtitan", "seconds": _number(found.group(2)),
                "staging": bool(found.group("async"))}
    found = _TITAN_LOADED.search(line)
    if found:
        return {"kind": "end", "op": "load", "framework": "torchtitan", "seconds": _number(found.group(1))}
    if _TITAN_SAVE.search(line):
        return {"kind": "start", "op": "save", "framework": "torchtitan"}
    found = _TITAN_LOAD.search(line)
    if found:
        return {"kind": "start", "op": "load", "framework": "torchtitan", "path": found.group(1).rstrip(".")}
    return None


def _megatron(line):
    framework = "nemo" if "[NeMo" in line else "megatron"
    for pattern, kind, op in ((_MEGATRON_SAVED, "end", "save"), (_MEGATRON_SAVE, "start", "save")):
        found = pattern.search(line)
        if found:
            return {"kind": kind, "op": op, "framework": framework, "step": int(found.group(1)), "path": found.group(2)}
    for pattern, kind in ((_MEGATRON_LOADED, "end"), (_MEGATRON_LOAD, "start")):
        found = pattern.search(line)
        if found:
            return {"kind": kind, "op": "load", "framework": framework, "step": int(found.group(2)), "path": found.group(1)}
    found = _MEGATRON_TIMER.search(line)
    if found:
        low, high = (found.group(3), found.group(4)) if found.group(3) else (None, found.group(5))
        return {"kind": "timer", "op": found.group("op"), "framework": "megatron", "rank": None,
                "fastest_seconds": _number(low) / 1000 if low else None, "seconds": _number(high) / 1000,
                "request_only": bool(found.group("request"))}
    found = _PROGRESS.search(line)
    if found:
        return {"kind": "step", "framework": None, "step": int(found.group(1) or found.group(2))}
    return None


def _nemo(line):
    found = _NEMO_GLOBAL.search(line)
    if found:
        return {"kind": "done", "op": found.group("op").lower(), "framework": "nemo", "rank": int(found.group(2)),
                "step": _integer(found.group(3)), "started_at": _number(found.group(4)), "seconds": _number(found.group(5))}
    found = _NEMO_FINALIZED.search(line)
    if found:
        return {"kind": "end", "op": "save", "framework": "nemo", "step": int(found.group(1)), "path": found.group(2)}
    found = _NEMO_SAVE.search(line)
    if found:
        return {"kind": "start", "op": "save", "framework": "nemo", "step": int(found.group(1))}
    found = _NEMO_SCHEDULED.search(line)
    if found:
        return {"kind": "start", "op": "save", "framework": "nemo", "path": found.group(1), "async": True}
    return None


def _dlio(line):
    found = _DLIO_END.search(line)
    if found:
        rate = _number(found.group(5))
        return {"kind": "end", "op": "save" if found.group("op") == "saving" else "load", "framework": "dlio",
                "tag": "checkpoint %s" % found.group(2), "seconds": _number(found.group(4)),
                "bytes_per_second": rate * 1e9 if rate is not None else None}
    found = _DLIO_START.search(line)
    if found:
        return {"kind": "start", "op": "save" if found.group("op") == "saving" else "load", "framework": "dlio",
                "tag": "checkpoint %s" % found.group(2), "step": int(found.group(3))}
    found = _DLIO_SIZE.search(line)
    if found:
        return {"kind": "size", "framework": "dlio", "bytes": _number(found.group(1)) * 1e9}
    return None


def _lightning(line):
    found = _LIGHTNING_SAVE.search(line)
    if found:
        return {"kind": "start", "op": "save", "framework": "lightning", "step": int(found.group(2)),
                "path": found.group("path"), "no_end": True}
    found = _LIGHTNING_LOADED.search(line) or _LIGHTNING_LOAD.search(line)
    if found:
        kind = "end" if found.re is _LIGHTNING_LOADED else "start"
        return {"kind": kind, "op": "load", "framework": "lightning", "path": found.group(1)}
    found = _LIGHTNING_PROFILE.search(line)
    if found:
        mean, total = _number(found.group(1)), _number(found.group(3))
        calls = int(found.group(2)) if found.group(2) else (int(round(total / mean)) if mean else 0)
        return {"kind": "profile", "op": "save", "framework": "lightning", "seconds": mean, "calls": calls,
                "total_seconds": total}
    return None


def _deepspeed(line):
    found = _DS_CREATE.search(line) or _DS_READY.search(line)
    if found:
        tag = found.group("tag")
        return {"kind": "end" if found.re is _DS_READY else "start", "op": "save", "framework": "deepspeed",
                "tag": tag, "step": _tag_step(tag), "no_end": found.re is _DS_CREATE}
    found = _DS_SAVING.search(line) or _DS_ZERO.search(line)
    if found:
        path = found.group(1)
        return {"kind": "file", "op": "save", "framework": "deepspeed", "path": path, "step": _tag_step(path),
                "rank": _shard_rank(path, line)}
    found = _DS_STATS.search(line)
    if found:
        path = found.group("path")
        return {"kind": "written", "op": "save", "framework": "deepspeed", "path": path, "step": _tag_step(path),
                "tag": posixpath.basename(posixpath.dirname(path)) or None, "bytes": int(found.group(1)),
                "seconds": _number(found.group(2)), "rank": _shard_rank(path, line)}
    found = _DS_LOAD.search(line)
    if found:
        return {"kind": "start" if found.group("edge") == "Begin" else "end", "op": "load", "framework": "deepspeed",
                "path": found.group(2).rstrip("."), "tag": found.group(2).rstrip(".")}
    return None


def _fairseq(line):
    found = _FAIRSEQ_SAVED.search(line)
    if found:
        return {"kind": "done", "op": "save", "framework": "metaseq/fairseq", "path": found.group(1),
                "step": int(found.group(2)), "seconds": _number(found.group(3))}
    return None


def _collective(line):
    found = _NCCL_TIMEOUT.search(line)
    if found:
        return {"kind": "timeout", "framework": "nccl" if found.group("kind") == "WorkNCCL" else "torch.distributed",
                "collective": found.group("op"), "seq": int(found.group(2)), "timeout_ms": int(found.group(4)),
                "ran_ms": _integer(found.group(5))}
    found = _MONITORED.search(line)
    if found:
        return {"kind": "missing", "framework": "torch.distributed", "collective": "monitoredBarrier",
                "missing": [int(rank) for rank in found.group("ranks").split(", ")], "timeout_ms": int(found.group(2))}
    return None


_READERS = (_collective, _titan, _nemo, _megatron, _dlio, _lightning, _deepspeed, _fairseq)


def _tag_step(text):
    found = re.search(r"global_step(\d{1,12})", text)
    return int(found.group(1)) if found else None


def _shard_rank(path, line):
    """A ZeRO shard's file names its data-parallel rank (zero_pp_rank_N_...) when the line prints none."""
    found = re.search(r"zero_pp_rank_(\d{1,7})_", path)
    return _rank(line) if _rank(line) is not None or not found else int(found.group(1))


def _rank(line):
    for pattern in _RANKS:
        found = pattern.search(line)
        if found:
            return int(found.group(1))
    return None


def _host(line):
    found = _HOST.search(line)
    if not found:
        return None
    return found.group("host") or found.group("pdsh")


def _time(line):
    """Epoch seconds of the line's first ISO-like time stamp (UTC assumed: only differences are used), or None."""
    found = _STAMP.search(line)
    if not found:
        return None
    parts = [int(part) for part in found.groups()[:6]]
    fraction = found.group(7)
    try:
        moment = datetime.datetime(*parts, tzinfo=datetime.timezone.utc)
    except (ValueError, OverflowError):
        return None
    return moment.timestamp() + (float("0." + fraction) if fraction else 0.0)
