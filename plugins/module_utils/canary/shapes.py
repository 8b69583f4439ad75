# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checkpoint shapes: what each real writer does on the file system, resolved into a pure plan.

A shape is a preset over files, sizes, metadata operations, fsync and who makes the directory,
named after the writer whose I/O it reproduces (issue 28; read from the writers' code):
- torch_dcp: torch.distributed.checkpoint FileSystemWriter - every rank makes the checkpoint
  directory (mkdir -p) and checks for an existing `.metadata`, writes `__{rank}_{thread}.distcp`
  (one per writer thread) and fsyncs it; after every rank is done the coordinator writes
  `.metadata.tmp`, fsyncs it, removes the old `.metadata` and renames the new one into place.
- megatron: Megatron-LM / NeMo torch_dist - rank 0 makes `iter_{7 digits}` (the others wait at a
  barrier), two `.distcp` files per rank, fsync always; rank 0 then writes the common state and
  rewrites the tracker file `latest_checkpointed_iteration.txt` in place (no temp, no rename).
- mlperf_llama3_*: MLPerf Storage v2.0's checkpoint workload (DLIO's checkpointing): per
  checkpoint a `global_epoch{e}_step{s}` directory made by every rank, file per rank (optimizer
  state, model state; layer files for the pipeline-parallel models), buffered writes then fsync,
  no temp-and-rename, and a pause and a barrier before every checkpoint after the first.
shared_file and file_per_rank are today's two layouts (plan.plan_ranks): data operations only,
written by host/canary/ranks.run_rank as before. Each host's canary is its own checkpoint
directory (its rank 0 makes it where the writer's rank 0 does), but only the job's rank 0
(first_rank 0) does the coordinator's work - the metadata, the rename, the tracker - once per
checkpoint as the writers do (the lab showed one RENAME per client before). Without a job it does
it after its own host's ranks are done.

A job (job_id, job_ranks) shares one checkpoint directory per path across its hosts, the files
named by global rank (no shared_file: its offsets are per host). With a coordinator (torch_dcp,
megatron) the job's rank 0 finishes only after every rank of every host has finished its files, as
the writers do (DCP's save runs the ranks' writes and the coordinator's finish as one collective -
every write result gathered to the coordinator before its finish; Megatron barriers before rank 0
writes). The canary has no network collective across hosts, so each rank leaves a done marker
(BARRIER_DIR/<global rank>, created after its files' fsync) in the job directory of the first path,
and the job's rank 0 waits until job_ranks markers are there (reopening BARRIER_DIR each poll: an
NFS open revalidates the directory, a plain lookup could be served from a cached negative entry),
at most AWAIT_SHARE of timeout, then fails naming the missing global ranks. The markers are the
canary's own metadata (a MKDIR and a CREATE a rank, and rank 0's polls), shown in the plan as
`mark` and `await`, not counted in metadata_ops_per_rank. In a job every host's rank 0 makes
Megatron's directory (the first one makes it; the others' mkdir finds it): the barrier after it
would be a collective across hosts too. A marker is `<global rank>@<run>`, run the controller's go
time every host of one run shares (run_token: go.json's go_controller with barrier_dir, start_at
without; a coordinator's job needs one of them): only this run's markers count, those another run of
the same job_id left (or a bare `<global rank>`) are ignored and named (sort_markers), so rank 0 never
writes the metadata for ranks that did not run this time (issue 45). O_EXCL still fails a rank whose
marker of this run is already there: two hosts given the same first_rank.
With recovery_rank_shift the read-back is MLPerf's (DLIO's load_checkpoint with recovery_rank_shift):
global rank g reads the files global rank (g + shift) mod job_ranks wrote - with the shift a whole
host's ranks, a host the reader's client never cached them on (MLPerf's rules: write, clear the
cache, read).
"""

from __future__ import annotations

import dataclasses

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary

MLPERF_SHAPES = ("mlperf_llama3_8b", "mlperf_llama3_70b", "mlperf_llama3_405b", "mlperf_llama3_1t")
LAYOUT_SHAPES = canary.LAYOUTS
SHAPES = LAYOUT_SHAPES + ("torch_dcp", "megatron") + MLPERF_SHAPES
# MLPerf Storage v2.0 checkpoint sizes (bytes over ranks, issue 28's figures from the rules' table):
# 105 GB / 8, 912 GB / 64, 5.29 TB / 512, 18 TB / 1024. layers: the models' transformer layers;
# pipeline stages: assumed from the configs' parallelism (1 for 8b); each rank writes its stage's
# layer files, so only the number of files (metadata) rests on the assumption, not the bytes.
MLPERF_MODELS = {
    "mlperf_llama3_8b": {"bytes": 105 * 10 ** 9, "ranks": 8, "layers": 32, "stages": 1},
    "mlperf_llama3_70b": {"bytes": 912 * 10 ** 9, "ranks": 64, "layers": 80, "stages": 4},
    "mlperf_llama3_405b": {"bytes": 5290 * 10 ** 9, "ranks": 512, "layers": 126, "stages": 16},
    "mlperf_llama3_1t": {"bytes": 18 * 10 ** 12, "ranks": 1024, "layers": 128, "stages": 32},
}
# DLIO's state: the model in 2 bytes a parameter (bf16), the optimizer in 12 (fp32 master and two
# Adam moments: three fp32 groups of every parameter) - the model is 1/7 of the bytes.
MODEL_SHARE = (2, 14)
MLPERF_PAUSE_SECONDS = 5.0
# Small files the coordinator writes: DCP's pickled `.metadata` index, Megatron's common state and
# metadata.json. Their ops, not their bytes, are what costs on NFS.
METADATA_BYTES = 64 * 1024
MEGATRON_FILES_PER_RANK = 2
DCP_DIR = "checkpoint"
MEGATRON_DIR = "iter_0000001"
MEGATRON_TRACKER = "latest_checkpointed_iteration.txt"
DIRECTORY_BY = {"torch_dcp": "every_rank", "megatron": "rank_0"}
# The shapes whose job may share one directory across hosts: no shared file (whose offsets are per host).
COORDINATOR_SHAPES = ("torch_dcp", "megatron")
JOB_SHAPES = ("file_per_rank",) + COORDINATOR_SHAPES + MLPERF_SHAPES
# The job's barrier before its coordinator: a done marker a rank in the first path's job directory.
BARRIER_DIR = ".ckptio-barrier"
# The job's rank 0 waits for the markers at most this share of timeout (then fails, before the kill).
AWAIT_SHARE = 0.9
AWAIT_POLL_SECONDS = 0.05
JOB_DIR_PREFIX = "ckptio-canary-job-"
JOB_ID_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"


@dataclasses.dataclass(frozen=True)
class Op:
    """One step of a rank, in order. kind: begin/end (a checkpoint's timed span, checkpoint index in
    length), mkdir_p, exists (stat, absent is fine), data (name, offset, length, create, fsync),
    write (a small file: create or truncate in place, fsync), unlink (absent is fine), rename (name
    to target), barrier (every rank of the host), pause (length seconds); in a job with a coordinator
    mark (this rank's done marker, name) and await (the job's rank 0: length markers in name)."""

    kind: str
    name: str = ""
    length: int = 0
    offset: int = 0
    create: bool = True
    fsync: bool = True
    target: str = ""

    def as_dict(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class RankShape:
    rank: int
    global_rank: int
    path_index: int
    ops: tuple

    def files(self):
        return [{"name": op.name, "offset": op.offset, "length": op.length, "create": op.create}
                for op in self.ops if op.kind == "data"]

    def outputs(self):
        """Every file this rank leaves (its data files and the metadata it writes or renames): what a drain copies."""
        names = []
        for op in self.ops:
            name = op.target if op.kind == "rename" else op.name
            if op.kind in ("data", "write", "rename") and name not in names:
                names.append(name)
            if op.kind in ("unlink", "rename") and op.name in names:
                names.remove(op.name)
        return names

    def metadata_ops(self):
        return [op for op in self.ops if op.kind in ("mkdir_p", "exists", "write", "unlink", "rename")]


@dataclasses.dataclass(frozen=True)
class ShapePlan:
    """A resolved shape: every rank's ops, who makes the directory, the shared files made before go."""

    name: str
    ranks: tuple
    directory_by: str
    shared_files: tuple = ()
    num_checkpoints: int = 1
    reads: tuple = ()

    def rank_plans(self):
        """The result's `plan` (files as plan.plan_ranks gives them; ops and outputs for the shapes with metadata)."""
        plans = []
        for rank in self.ranks:
            entry = {"rank": rank.rank, "global_rank": rank.global_rank, "path_index": rank.path_index,
                     "files": rank.files(), "outputs": rank.outputs()}
            if self.name not in LAYOUT_SHAPES:
                entry["ops"] = [op.as_dict() for op in rank.ops]
            plans.append(entry)
        for entry, read in zip(plans, self.reads):
            entry["read"] = {"global_rank": read.global_rank, "path_index": read.path_index, "files": read.files()}
        return plans

    def summary(self):
        first = self.ranks[0]
        files = first.files()
        return {"name": self.name, "files_per_rank": len(files),
                "bytes_per_file": sorted({item["length"] for item in files}),
                "bytes_per_rank": sum(item["length"] for item in files),
                "metadata_ops_per_rank": max(len(rank.metadata_ops()) for rank in self.ranks),
                "directory_by": self.directory_by, "num_checkpoints": self.num_checkpoints,
                "reads_ranks": [read.global_rank for read in self.reads]}


def bytes_per_rank(name, params):
    """Bytes one rank writes per checkpoint: the model's share for MLPerf (x shape_scale), else bytes_per_rank."""
    if name in MLPERF_MODELS:
        model = MLPERF_MODELS[name]
        return max(1, int(model["bytes"] * params["shape_scale"] / model["ranks"]))
    return params["bytes_per_rank"]


def shape_name(params):
    return params.get("shape") or params["layout"]


def validate(params):
    """Errors of the shape options, each naming the option (empty when valid)."""
    name = shape_name(params)
    errors = []
    if name not in SHAPES:
        errors.append("shape must be one of %s, got %r" % (", ".join(SHAPES), name))
    if not params["shape_scale"] > 0:
        errors.append("shape_scale must be greater than 0, got %s" % params["shape_scale"])
    if not 1 <= params["thread_count"] <= 64:
        errors.append("thread_count must be between 1 and 64, got %d" % params["thread_count"])
    if not 1 <= params["num_checkpoints"] <= 100:
        errors.append("num_checkpoints must be between 1 and 100, got %d" % params["num_checkpoints"])
    elif params["num_checkpoints"] > 1 and name not in MLPERF_SHAPES:
        errors.append("num_checkpoints > 1 needs an MLPerf shape (shape=mlperf_llama3_*), got shape %s" % name)
    elif params["num_checkpoints"] > 1 and params["restore"]:
        errors.append("num_checkpoints > 1 cannot be combined with restore=true (the read-back follows one checkpoint)")
    if params["first_rank"] < 0:
        errors.append("first_rank must be 0 or more, got %d" % params["first_rank"])
    if params.get("shape") and params["shape"] not in LAYOUT_SHAPES and params["files_per_rank"] != 1:
        errors.append("files_per_rank is set by shape=%s (thread_count for torch_dcp); leave it at 1" % params["shape"])
    errors += job_errors(params, name)
    if not errors and name in MLPERF_SHAPES and bytes_per_rank(name, params) < params["block_size"]:
        errors.append("shape_scale=%s makes %s's %d bytes per rank smaller than block_size (%d)"
                      % (params["shape_scale"], name, bytes_per_rank(name, params), params["block_size"]))
    return errors


def job_errors(params, name):
    """Errors of job_id, job_ranks and recovery_rank_shift (a job's shared directory and MLPerf's read-back)."""
    job_id, job_ranks, shift = params.get("job_id"), params.get("job_ranks") or 0, params.get("recovery_rank_shift") or 0
    errors = []
    if job_id is not None:
        if not job_id or len(job_id) > 64 or any(char not in JOB_ID_CHARS for char in job_id):
            errors.append("job_id must be 1 to 64 letters, digits, '_' or '-', got %r" % job_id)
        if name not in JOB_SHAPES:
            errors.append("job_id (one directory shared by the job's hosts) needs shape %s, got %s (a shared file's offsets"
                          " are per host)" % (" or ".join(JOB_SHAPES), name))
        if name in COORDINATOR_SHAPES and not job_ranks:
            errors.append("job_id with shape=%s needs job_ranks (the job's rank 0 waits for every rank's done marker)" % name)
        if name in COORDINATOR_SHAPES and params.get("start_at") is None and params.get("barrier_dir") is None:
            errors.append("job_id with shape=%s needs barrier_dir or start_at: the done markers carry the go time the"
                          " job's hosts share, so a marker another run left is never counted" % name)
        if name in COORDINATOR_SHAPES and params.get("local_path"):
            errors.append("job_id with shape=%s cannot be combined with local_path (the job's barrier is on NFS, the"
                          " burst buffer's files are not)" % name)
    if job_ranks and (job_ranks < params["first_rank"] + params["ranks"] or job_ranks % params["ranks"]):
        errors.append("job_ranks must be a multiple of ranks (%d) of at least first_rank + ranks (%d), got %d"
                      % (params["ranks"], params["first_rank"] + params["ranks"], job_ranks))
    if shift < 0:
        errors.append("recovery_rank_shift must be 0 or more, got %d" % shift)
    elif shift and not (params["restore"] and job_id is not None and job_ranks):
        errors.append("recovery_rank_shift needs restore=true, job_id and job_ranks (the files read are another host's)")
    return errors


def read_target(global_rank, params):
    """The global rank whose files global_rank reads back: (global_rank + recovery_rank_shift) mod job_ranks."""
    shift, job_ranks = params.get("recovery_rank_shift") or 0, params.get("job_ranks") or 0
    return (global_rank + shift) % job_ranks if shift and job_ranks else global_rank


def reads_other_host(global_rank, params):
    """True when the files global_rank reads were written on another host (hosts hold `ranks` ranks each)."""
    return read_target(global_rank, params) // params["ranks"] != global_rank // params["ranks"]


def job_dir(params):
    """The job's shared directory name in each path, or None without job_id."""
    return JOB_DIR_PREFIX + params["job_id"] if params.get("job_id") is not None else None


def _layout(name, params, path_count):
    """shared_file / file_per_rank: plan.plan_ranks, named by global rank, a shared file per path."""
    first = params["first_rank"]
    base = canary.plan_ranks(params["ranks"], params["bytes_per_rank"], params["block_size"], name, params["files_per_rank"])
    ranks, on_path = [], [0] * path_count
    for entry in base:
        global_rank = first + entry["rank"]
        path_index = global_rank % path_count
        ops = [Op("begin")]
        for index, item in enumerate(entry["files"]):
            if name == "shared_file":
                ops.append(Op("data", item["name"], item["length"], on_path[path_index] * item["length"], False, params["fsync"]))
            else:
                ops.append(Op("data", "__%d_%d.ckpt" % (global_rank, index), item["length"], 0, True, params["fsync"]))
        on_path[path_index] += 1
        ranks.append(RankShape(entry["rank"], global_rank, path_index, tuple(ops + [Op("end")])))
    shared = tuple(sorted({(r.path_index, canary.SHARED_FILE_NAME) for r in ranks})) if name == "shared_file" else ()
    return ShapePlan(name, tuple(ranks), "module", shared)


def _data(names_and_sizes, fsync=True):
    return [Op("data", name, size, 0, True, fsync) for name, size in names_and_sizes]


def _split(total, parts, block_size):
    return [length for _start, length in canary._split_aligned(total, parts, block_size)]


def _job_barrier(params, global_rank):
    """A job's barrier before its coordinator: every rank's done marker, the job's rank 0's wait for all (no job: none)."""
    if params.get("job_id") is None:
        return []
    ops = [Op("mark", "%s/%d" % (BARRIER_DIR, global_rank))]
    return ops + ([Op("await", BARRIER_DIR, params["job_ranks"])] if global_rank == 0 else [])


def run_token(params, go_at, go_controller=None):
    """The run of a job's done markers: the go on the controller's clock, the one time every host of the run
    shares (go.json's go_controller; start_at without barrier_dir). A go without go_controller (written by
    hand) falls back to this host's go_at: hosts on other clocks then do not share it, and rank 0 fails
    naming their markers rather than count a marker it cannot place."""
    if params.get("barrier_dir") is None and params.get("start_at") is not None:
        return "%.6f" % params["start_at"]
    return "%.6f" % (go_at if go_controller is None else go_controller)


def marker_name(name, run):
    """The file of a mark op (BARRIER_DIR/<global rank>) in run `run`."""
    return "%s@%s" % (name, run)


def sort_markers(names, run, job_ranks):
    """(the global ranks, as text, whose marker of this run is among names; the other markers, each
    {file, run} - run None for a bare name - in name order). Names that are no marker are ignored."""
    present, others = set(), []
    for name in sorted(names):
        rank, _at, other = name.partition("@")
        if not rank.isdigit() or int(rank) >= job_ranks:
            continue
        if other == run:
            present.add(rank)
        else:
            others.append({"file": "%s/%s" % (BARRIER_DIR, name), "run": other or None})
    return present, others


def missing_message(missing, job_ranks, seconds, run, others):
    """Rank 0's failure when markers of this run are missing, naming the other runs' markers it ignored."""
    message = ("no done marker from global ranks %s (job_ranks=%d) within %.1f s of the start (%s x timeout);"
               " this run's go is %s" % (", ".join(sorted(missing, key=int)), job_ranks, seconds, AWAIT_SHARE, run))
    if others:
        message += "; markers of other runs ignored: %s" % describe_markers(others)
    return message


def describe_markers(others, limit=8):
    """The first `limit` markers of other runs, each `file (run R)` or `file (no run)`, and how many more."""
    shown = ["%s (%s)" % (item["file"], "run %s" % item["run"] if item["run"] else "no run") for item in others[:limit]]
    return ", ".join(shown) + (" and %d more" % (len(others) - limit) if len(others) > limit else "")


def _torch_dcp(params, rank, global_rank):
    sizes = _split(params["bytes_per_rank"], params["thread_count"], params["block_size"])
    ops = [Op("begin"), Op("mkdir_p", DCP_DIR), Op("exists", DCP_DIR + "/.metadata")]
    ops += _data([("%s/__%d_%d.distcp" % (DCP_DIR, global_rank, t), size) for t, size in enumerate(sizes)], params["fsync"])
    ops += [Op("barrier")] + _job_barrier(params, global_rank)
    if global_rank == 0:
        ops += [Op("write", DCP_DIR + "/.metadata.tmp", METADATA_BYTES, fsync=True), Op("unlink", DCP_DIR + "/.metadata"),
                Op("rename", DCP_DIR + "/.metadata.tmp", target=DCP_DIR + "/.metadata")]
    return ops + [Op("barrier"), Op("end")]


def _megatron(params, rank, global_rank):
    sizes = _split(params["bytes_per_rank"], MEGATRON_FILES_PER_RANK, params["block_size"])
    ops = [Op("begin")] + ([Op("mkdir_p", MEGATRON_DIR)] if rank == 0 else []) + [Op("barrier")]
    # torch_dist's writer fsyncs always (not an option there).
    ops += _data([("%s/__%d_%d.distcp" % (MEGATRON_DIR, global_rank, t), size) for t, size in enumerate(sizes)])
    ops += [Op("barrier")] + _job_barrier(params, global_rank)
    if global_rank == 0:
        ops += [Op("write", MEGATRON_DIR + "/common.pt", METADATA_BYTES), Op("write", MEGATRON_DIR + "/metadata.json", 64),
                Op("write", MEGATRON_TRACKER, 8, create=False, fsync=False)]
    return ops + [Op("barrier"), Op("end")]


def _mlperf(name, params, rank, global_rank):
    model = MLPERF_MODELS[name]
    total = bytes_per_rank(name, params)
    model_bytes = total * MODEL_SHARE[0] // MODEL_SHARE[1]
    layers = -(-model["layers"] // model["stages"]) if model["stages"] > 1 else 1
    ops = []
    for checkpoint in range(params["num_checkpoints"]):
        if checkpoint:
            ops += [Op("pause", length=int(MLPERF_PAUSE_SECONDS)), Op("barrier")]
        directory = "global_epoch1_step%d" % (checkpoint + 1)
        files = [("%s/zero_pp_rank_%d_mp_rank_00_optim_states.pt" % (directory, global_rank), total - model_bytes)]
        if layers == 1:
            files.append(("%s/model_states-%d.pt" % (directory, global_rank), model_bytes))
        else:
            files += [("%s/layer_%02d-model_%d_model_states.pt" % (directory, index, global_rank), size)
                      for index, size in enumerate(_split(model_bytes, layers, 1))]
        ops += [Op("begin", length=checkpoint), Op("mkdir_p", directory)] + _data(files, params["fsync"]) + [Op("end", length=checkpoint)]
    return ops


def resolve(params, path_count=1):
    """The ShapePlan of the options (validate() first): ranks round-robin over path_count paths by global rank;
    with recovery_rank_shift each rank's read (the files of read_target, as that rank writes them)."""
    shape_plan = _resolve(params, path_count)
    if not (params.get("recovery_rank_shift") and params.get("job_ranks")):
        return shape_plan
    reads = tuple(_resolve(dict(params, ranks=1, first_rank=read_target(rank.global_rank, params)), path_count).ranks[0]
                  for rank in shape_plan.ranks)
    return dataclasses.replace(shape_plan, reads=reads)


def _resolve(params, path_count):
    name = shape_name(params)
    if name in LAYOUT_SHAPES:
        return _layout(name, params, path_count)
    ranks = []
    for rank in range(params["ranks"]):
        global_rank = params["first_rank"] + rank
        if name == "torch_dcp":
            ops = _torch_dcp(params, rank, global_rank)
        elif name == "megatron":
            ops = _megatron(params, rank, global_rank)
        else:
            ops = _mlperf(name, params, rank, global_rank)
        ranks.append(RankShape(rank, global_rank, global_rank % path_count, tuple(ops)))
    return ShapePlan(name, tuple(ranks), DIRECTORY_BY.get(name, "every_rank"), (), params["num_checkpoints"])


def bytes_by_path(shape_plan, path_count):
    """Bytes the ranks write to each path (index = path_index), every checkpoint counted."""
    totals = [0] * path_count
    for rank in shape_plan.ranks:
        totals[rank.path_index] += sum(op.length for op in rank.ops if op.kind in ("data", "write"))
    return totals
