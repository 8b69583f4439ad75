"""The shapes' pure plans (canary/shapes.py): files, sizes, metadata operations and their order."""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import shapes

KIB = 1024
MIB = 1024 * KIB


def _params(**extra):
    params = {"shape": None, "layout": "shared_file", "ranks": 2, "bytes_per_rank": 4 * MIB, "block_size": MIB,
              "files_per_rank": 1, "fsync": True, "direct": False, "restore": False, "shape_scale": 1.0,
              "thread_count": 1, "num_checkpoints": 1, "first_rank": 0}
    params.update(extra)
    return params


def _kinds(rank):
    return [(op.kind, op.name) for op in rank.ops if op.kind not in ("data",)]


def test_no_shape_is_the_layout_unchanged():
    plan = shapes.resolve(_params())
    assert plan.name == "shared_file" and plan.directory_by == "module"
    assert plan.shared_files == ((0, "shared.ckpt"),)
    assert [r.files() for r in plan.ranks] == [[{"name": "shared.ckpt", "offset": 0, "length": 4 * MIB, "create": False}],
                                               [{"name": "shared.ckpt", "offset": 4 * MIB, "length": 4 * MIB, "create": False}]]
    assert "ops" not in plan.rank_plans()[0]


def test_file_per_rank_names_files_by_global_rank_and_spreads_paths_round_robin():
    plan = shapes.resolve(_params(shape="file_per_rank", files_per_rank=2, first_rank=8, ranks=3), path_count=2)
    assert [r.global_rank for r in plan.ranks] == [8, 9, 10]
    assert [r.path_index for r in plan.ranks] == [0, 1, 0]
    assert [f["name"] for f in plan.ranks[1].files()] == ["__9_0.ckpt", "__9_1.ckpt"]
    assert shapes.bytes_by_path(plan, 2) == [8 * MIB, 4 * MIB]


def test_shared_file_over_two_paths_has_one_file_a_path_with_offsets_within_it():
    plan = shapes.resolve(_params(ranks=4), path_count=2)
    assert plan.shared_files == ((0, "shared.ckpt"), (1, "shared.ckpt"))
    assert [(r.path_index, r.files()[0]["offset"]) for r in plan.ranks] == [(0, 0), (1, 0), (0, 4 * MIB), (1, 4 * MIB)]


def test_torch_dcp_every_rank_mkdirs_and_checks_metadata_and_the_coordinator_renames():
    plan = shapes.resolve(_params(shape="torch_dcp", thread_count=2))
    coordinator, other = plan.ranks
    assert _kinds(coordinator) == [("begin", ""), ("mkdir_p", "checkpoint"), ("exists", "checkpoint/.metadata"),
                                   ("barrier", ""), ("write", "checkpoint/.metadata.tmp"), ("unlink", "checkpoint/.metadata"),
                                   ("rename", "checkpoint/.metadata.tmp"), ("barrier", ""), ("end", "")]
    assert _kinds(other) == [("begin", ""), ("mkdir_p", "checkpoint"), ("exists", "checkpoint/.metadata"),
                             ("barrier", ""), ("barrier", ""), ("end", "")]
    assert [f["name"] for f in other.files()] == ["checkpoint/__1_0.distcp", "checkpoint/__1_1.distcp"]
    assert sum(f["length"] for f in other.files()) == 4 * MIB
    write = [op for op in coordinator.ops if op.kind == "write"][0]
    assert write.fsync and write.create and [op.target for op in coordinator.ops if op.kind == "rename"] == ["checkpoint/.metadata"]
    assert all(op.fsync for op in coordinator.ops if op.kind == "data")
    assert coordinator.outputs() == ["checkpoint/__0_0.distcp", "checkpoint/__0_1.distcp", "checkpoint/.metadata"]
    assert plan.summary()["metadata_ops_per_rank"] == 5 and plan.directory_by == "every_rank"


def test_megatron_rank_0_makes_the_directory_and_rewrites_the_tracker_in_place():
    plan = shapes.resolve(_params(shape="megatron", ranks=3, fsync=False))
    coordinator, other = plan.ranks[0], plan.ranks[1]
    assert _kinds(coordinator)[:3] == [("begin", ""), ("mkdir_p", "iter_0000001"), ("barrier", "")]
    assert _kinds(other) == [("begin", ""), ("barrier", ""), ("barrier", ""), ("barrier", ""), ("end", "")]
    tracker = coordinator.ops[-3]
    assert (tracker.kind, tracker.name, tracker.create) == ("write", "latest_checkpointed_iteration.txt", False)
    # torch_dist fsyncs always, whatever fsync says.
    assert len(other.files()) == 2 and all(op.fsync for op in other.ops if op.kind == "data")
    assert plan.directory_by == "rank_0"
    # Every rank passes the same number of barriers, or the host's ranks would wait on each other forever.
    assert len({sum(op.kind == "barrier" for op in r.ops) for r in plan.ranks}) == 1


@pytest.mark.parametrize("name, per_rank, layer_files", [
    ("mlperf_llama3_8b", 105 * 10 ** 9 // 8, 0), ("mlperf_llama3_70b", 912 * 10 ** 9 // 64, 20),
    ("mlperf_llama3_405b", 5290 * 10 ** 9 // 512, 8), ("mlperf_llama3_1t", 18 * 10 ** 12 // 1024, 4)])
def test_mlperf_sizes_follow_the_model_scaled(name, per_rank, layer_files):
    plan = shapes.resolve(_params(shape=name, shape_scale=0.001))
    files = plan.ranks[1].files()
    assert abs(sum(f["length"] for f in files) - per_rank // 1000) <= 1
    assert files[0]["name"] == "global_epoch1_step1/zero_pp_rank_1_mp_rank_00_optim_states.pt"
    assert len([f for f in files if "layer_" in f["name"]]) == layer_files
    assert sum(f["length"] for f in files[1:]) == sum(f["length"] for f in files) * 2 // 14


def test_mlperf_checkpoints_each_their_directory_by_every_rank_after_a_pause_and_a_barrier():
    plan = shapes.resolve(_params(shape="mlperf_llama3_8b", shape_scale=0.0001, num_checkpoints=2))
    kinds = [(op.kind, op.name, op.length) for op in plan.ranks[1].ops if op.kind != "data"]
    assert kinds == [("begin", "", 0), ("mkdir_p", "global_epoch1_step1", 0), ("end", "", 0),
                     ("pause", "", 5), ("barrier", "", 0),
                     ("begin", "", 1), ("mkdir_p", "global_epoch1_step2", 0), ("end", "", 1)]
    assert not [op for op in plan.ranks[0].ops if op.kind in ("rename", "write", "unlink")]
    assert plan.summary()["num_checkpoints"] == 2


@pytest.mark.parametrize("extra, option", [
    ({"shape": "bogus"}, "shape must be one of"), ({"shape_scale": 0}, "shape_scale"),
    ({"thread_count": 0}, "thread_count"), ({"num_checkpoints": 2}, "num_checkpoints > 1 needs an MLPerf shape"),
    ({"shape": "mlperf_llama3_8b", "num_checkpoints": 2, "restore": True}, "restore=true"),
    ({"first_rank": -1}, "first_rank"), ({"shape": "torch_dcp", "files_per_rank": 2}, "files_per_rank"),
    ({"shape": "mlperf_llama3_8b", "shape_scale": 1e-12}, "shape_scale=1e-12")])
def test_bad_shape_options_are_named(extra, option):
    errors = shapes.validate(_params(**extra))
    assert errors and option in errors[0]


@pytest.mark.parametrize("shape, coordinator_kinds", [("torch_dcp", {"rename", "unlink", "write"}), ("megatron", {"write"})])
def test_only_the_jobs_rank_0_coordinates_not_every_hosts_rank_0(shape, coordinator_kinds):
    # The lab's torch_dcp run showed RENAME 2 with two clients: each host's rank 0 renamed .metadata.
    # The writers have one coordinator per checkpoint, the job's rank 0.
    first_host = shapes.resolve(_params(shape=shape, ranks=2, first_rank=0))
    second_host = shapes.resolve(_params(shape=shape, ranks=2, first_rank=2))
    assert coordinator_kinds <= set(op.kind for op in first_host.ranks[0].ops)
    assert not coordinator_kinds & set(op.kind for rank in second_host.ranks for op in rank.ops)
    # Still as many barriers on every rank of a host, or its ranks would wait on each other forever.
    assert len({sum(op.kind == "barrier" for op in r.ops) for r in second_host.ranks}) == 1


def _job(**extra):
    job = dict(shape="mlperf_llama3_8b", shape_scale=1e-4, ranks=4, restore=True, job_id="j1", job_ranks=8, recovery_rank_shift=4)
    job.update(extra)
    return _params(**job)


def test_recovery_rank_shift_reads_the_files_of_the_rank_a_host_further_on():
    # DLIO's load_checkpoint with recovery_rank_shift: rank g loads rank (g + ranks per node) mod world's files.
    host0, host1 = shapes.resolve(_job(first_rank=0)), shapes.resolve(_job(first_rank=4))
    assert [entry["read"]["global_rank"] for entry in host0.rank_plans()] == [4, 5, 6, 7]
    assert [entry["read"]["global_rank"] for entry in host1.rank_plans()] == [0, 1, 2, 3]
    # The files read are exactly the ones the other host's rank writes (names, sizes), none of its own.
    read = host0.rank_plans()[1]["read"]["files"]
    assert read == host1.ranks[1].files()
    assert all("_5_" in f["name"] or "-5." in f["name"] for f in read)
    assert host0.summary()["reads_ranks"] == [4, 5, 6, 7]
    assert all(shapes.reads_other_host(g, _job(first_rank=0)) for g in range(4))


def test_recovery_rank_shift_round_robin_paths_follow_the_writer():
    plan = shapes.resolve(_job(first_rank=0, job_ranks=8, recovery_rank_shift=5), path_count=2)
    assert [(e["global_rank"], e["read"]["global_rank"], e["read"]["path_index"]) for e in plan.rank_plans()] == [
        (0, 5, 1), (1, 6, 0), (2, 7, 1), (3, 0, 0)]
    # Rank 3 reads rank 0's files: its own host's - not another host's.
    assert not shapes.reads_other_host(3, _job(first_rank=0, recovery_rank_shift=5))


def test_without_shift_no_rank_reads_another_ranks_files():
    plan = shapes.resolve(_job(first_rank=0, recovery_rank_shift=0))
    assert all("read" not in entry for entry in plan.rank_plans()) and plan.summary()["reads_ranks"] == []


@pytest.mark.parametrize("extra, message", [
    ({"shape": "torch_dcp", "job_ranks": 0, "recovery_rank_shift": 0}, "job_id with shape=torch_dcp needs job_ranks"),
    ({"shape": "megatron", "local_path": "/local"}, "job_id with shape=megatron cannot be combined with local_path"),
    ({"shape": "shared_file"}, "job_id (one directory shared by the job's hosts) needs shape"),
    ({"job_id": "a/b"}, "job_id must be 1 to 64 letters"),
    ({"job_ranks": 6}, "job_ranks must be a multiple of ranks (4)"),
    ({"first_rank": 8}, "job_ranks must be a multiple of ranks (4) of at least first_rank + ranks (12)"),
    ({"recovery_rank_shift": -1}, "recovery_rank_shift must be 0 or more"),
    ({"restore": False}, "recovery_rank_shift needs restore=true, job_id and job_ranks"),
    ({"job_id": None}, "recovery_rank_shift needs restore=true, job_id and job_ranks"),
])
def test_job_options_are_refused_naming_the_option(extra, message):
    params = _job()
    params.update(extra)
    assert any(message in error for error in shapes.validate(params)), shapes.validate(params)


@pytest.mark.parametrize("shape", ["torch_dcp", "megatron"])
def test_a_job_with_a_coordinator_marks_every_rank_and_only_the_jobs_rank_0_awaits_them(shape):
    """Each rank leaves its done marker after its files; the job's rank 0 alone waits for job_ranks of them,
    then does the coordinator's work; another host's rank 0 (first_rank 4) neither waits nor coordinates."""
    for first_rank in (0, 4):
        plan = shapes.resolve(_job(shape=shape, first_rank=first_rank, restore=False, recovery_rank_shift=0))
        for rank in plan.ranks:
            kinds = [op.kind for op in rank.ops]
            assert [op.name for op in rank.ops if op.kind == "mark"] == [".ckptio-barrier/%d" % rank.global_rank]
            assert kinds.index("mark") > max(i for i, kind in enumerate(kinds) if kind == "data")
            coordinating = rank.global_rank == 0
            assert ("await" in kinds) is coordinating
            assert any(kind in ("rename", "write") for kind in kinds) is coordinating
            if coordinating:
                awaited = kinds.index("await")
                assert rank.ops[awaited].length == 8 and kinds.index("mark") < awaited
                assert all(kinds.index(kind) > awaited for kind in kinds if kind in ("rename", "write"))
        assert plan.summary()["metadata_ops_per_rank"] == max(len(r.metadata_ops()) for r in plan.ranks)


def test_without_a_job_a_coordinator_shape_has_no_markers():
    plan = shapes.resolve(_job(shape="torch_dcp", job_id=None, restore=False, recovery_rank_shift=0))
    assert not any(op.kind in ("mark", "await") for rank in plan.ranks for op in rank.ops)


def test_the_role_removes_the_directory_the_canary_shares():
    import pathlib
    clients = pathlib.Path(__file__).parents[5] / "roles" / "canary_validation" / "tasks" / "clients_run.yml"
    assert "{{ item }}/%s{{ canary_validation__job_id }}" % shapes.JOB_DIR_PREFIX in clients.read_text()
