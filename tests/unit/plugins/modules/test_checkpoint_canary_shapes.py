"""checkpoint_canary's shapes, paths and burst buffer through its real main(): real forked ranks in tmp_path."""
from __future__ import annotations

import os
import time

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.host.canary import shapes as canary_shapes
from ansible_collections.ckptio.nfs.plugins.modules import checkpoint_canary
# The canary tests' live host (autouse) and arguments: 3 ranks x 64 KiB in 16 KiB blocks, allow_local.
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_checkpoint_canary import _args
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_checkpoint_canary import live_host  # noqa: F401 pylint: disable=unused-import

pytestmark = pytest.mark.usefixtures("live_host")
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module, tree_checksums

KIB = 1024
MIB = 1024 * KIB


def _dir(tmp_path, name):
    path = tmp_path / name
    path.mkdir()
    return path


def _tree(path):
    """Every file below path (relative name: size)."""
    found = {}
    for root, _dirs, files in os.walk(str(path)):
        for name in files:
            full = os.path.join(root, name)
            found[os.path.relpath(full, str(path))] = os.path.getsize(full)
    return found


def _left(*paths):
    return [name for path in paths for name in os.listdir(str(path))]


def test_torch_dcp_writes_distcp_files_and_renames_the_metadata(tmp_path):
    target = _dir(tmp_path, "target")
    result = run_module(checkpoint_canary, _args(target, shape="torch_dcp", thread_count=2, keep=True))
    files = _tree(result["workdir"])
    assert sorted(files) == ["checkpoint/.metadata"] + ["checkpoint/__%d_%d.distcp" % (r, t) for r in range(3) for t in range(2)]
    assert files["checkpoint/.metadata"] == 64 * KIB
    assert result["shape"]["name"] == "torch_dcp" and result["shape"]["files_per_rank"] == 2
    assert result["shape"]["metadata_ops_per_rank"] == 5
    assert result["summary"]["total_bytes"] == 3 * 64 * KIB
    assert result["drain"] is None and result["blocking_seconds"] == result["summary"]["seconds"]


def test_torch_dcp_cleans_up_its_checkpoint_directory(tmp_path):
    target = _dir(tmp_path, "target")
    result = run_module(checkpoint_canary, _args(target, shape="torch_dcp"))
    assert result["cleaned_up"] is True and _left(target) == []


def test_megatron_writes_two_files_a_rank_and_the_tracker(tmp_path):
    target = _dir(tmp_path, "target")
    result = run_module(checkpoint_canary, _args(target, shape="megatron", keep=True))
    files = _tree(result["workdir"])
    assert files["latest_checkpointed_iteration.txt"] == 8
    assert sorted(n for n in files if n.endswith(".distcp")) == ["iter_0000001/__%d_%d.distcp" % (r, t)
                                                                 for r in range(3) for t in range(2)]
    assert result["shape"]["directory_by"] == "rank_0"


def test_mlperf_two_checkpoints_give_a_record_per_rank_and_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setattr(canary_shapes.time, "sleep", lambda seconds: None)
    target = _dir(tmp_path, "target")
    result = run_module(checkpoint_canary, _args(target, ranks=2, shape="mlperf_llama3_8b", shape_scale=1e-5,
                                                 num_checkpoints=2, keep=True))
    files = _tree(result["workdir"])
    assert sorted({name.split("/")[0] for name in files}) == ["global_epoch1_step1", "global_epoch1_step2"]
    assert sorted((r["rank"], r["checkpoint"]) for r in result["ranks"]) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    per_rank = 105 * 10 ** 9 * 1e-5 // 8
    assert all(abs(r["bytes"] - per_rank) <= 1 for r in result["ranks"])
    first, second = result["summary"]["checkpoints"]
    assert first["latest_end"] <= second["earliest_start"]
    assert result["blocking_seconds"] == pytest.approx(first["seconds"] + second["seconds"], abs=1e-5)


def test_paths_spread_ranks_round_robin_with_figures_per_path(tmp_path):
    one, two = _dir(tmp_path, "one"), _dir(tmp_path, "two")
    result = run_module(checkpoint_canary, _args(one, paths=[str(one), str(two)], layout="file_per_rank",
                                                 first_rank=3, keep=True))
    assert [(row["path"], row["ranks"], row["bytes"]) for row in result["per_path"]] == [
        (str(one), 1, 64 * KIB), (str(two), 2, 128 * KIB)]
    assert sorted(_tree(result["workdirs"][0])) == ["__4_0.ckpt"]
    assert sorted(_tree(result["workdirs"][1])) == ["__3_0.ckpt", "__5_0.ckpt"]


def test_paths_are_all_cleaned_up(tmp_path):
    one, two = _dir(tmp_path, "one"), _dir(tmp_path, "two")
    result = run_module(checkpoint_canary, _args(one, paths=[str(one), str(two)], shape="torch_dcp"))
    assert result["cleaned_up"] is True and _left(one, two) == []


def test_burst_buffer_writes_locally_then_drains_to_nfs_and_leaves_nothing(tmp_path):
    target, local = _dir(tmp_path, "target"), _dir(tmp_path, "local")
    result = run_module(checkpoint_canary, _args(target, shape="torch_dcp", local_path=str(local),
                                                 checkpoint_interval_seconds=1800))
    drain = result["drain"]
    assert drain["bytes"] == 3 * 64 * KIB + 64 * KIB
    assert drain["start"] >= result["summary"]["latest_end"] and drain["seconds"] > 0
    assert drain["fits_interval"] is True and drain["rate_limit"] == 0
    assert result["cleaned_up"] is True and _left(target, local) == []


def test_burst_buffer_drain_lands_every_byte_on_nfs(tmp_path):
    target, local = _dir(tmp_path, "target"), _dir(tmp_path, "local")
    result = run_module(checkpoint_canary, _args(target, layout="shared_file", local_path=str(local), keep=True,
                                                 drain_rate_limit=4 * MIB))
    local_dir, nfs_dir = result["workdirs"][1], result["workdirs"][0]
    with open(os.path.join(local_dir, "shared.ckpt"), "rb") as a, open(os.path.join(nfs_dir, "shared.ckpt"), "rb") as b:
        assert a.read() == b.read()
    # 192 KiB at 4 MiB/s shared by 3 drains: at least 0.046 s.
    assert result["drain"]["seconds"] >= 3 * 64 * KIB / float(4 * MIB) * 0.9
    assert result["drain"]["fits_interval"] is None


@pytest.mark.parametrize("extra, message", [
    ({"shape": "bogus"}, "value of shape must be one of"),
    ({"shape": "torch_dcp", "thread_count": 0}, "thread_count"),
    ({"local_path": "LOCAL", "drain_rate_limit": 1000, "checkpoint_interval_seconds": 10},
     "checkpoint_interval_seconds=10 is shorter than the drain"),
    ({"drain_rate_limit": 1000}, "drain_rate_limit needs local_path"),
    ({"paths": ["TARGET", "MISSING"]}, "paths entry: path"),
    ({"local_path": "MISSING"}, "local_path: path"),
])
def test_bad_placement_is_refused_naming_the_option_before_anything_is_written(tmp_path, extra, message):
    target, local = _dir(tmp_path, "target"), _dir(tmp_path, "local")
    names = {"TARGET": str(target), "LOCAL": str(local), "MISSING": str(tmp_path / "missing")}
    extra = dict((key, [names.get(v, v) for v in value] if isinstance(value, list) else names.get(value, value))
                 for key, value in extra.items())
    before = tree_checksums(str(tmp_path))
    result = fail_module(checkpoint_canary, _args(target, **extra))
    assert message in result["msg"]
    assert tree_checksums(str(tmp_path)) == before


def test_a_non_nfs_entry_of_paths_is_refused(tmp_path):
    one, two = _dir(tmp_path, "one"), _dir(tmp_path, "two")
    result = fail_module(checkpoint_canary, _args(one, paths=[str(one), str(two)], allow_local=False))
    assert "paths entry" in result["msg"] and "not NFS" in result["msg"]
    assert _left(one, two) == []


def test_local_path_on_nfs_is_refused(fake_root, tmp_path):
    target, local = _dir(tmp_path, "target"), _dir(tmp_path, "local")
    st_dev = os.stat(str(local)).st_dev
    fake_root.write("/proc/self/mountinfo", "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n40 22 %d:%d / %s rw - nfs4 s:/x rw\n"
                    % (os.major(st_dev), os.minor(st_dev), local))
    result = fail_module(checkpoint_canary, _args(target, local_path=str(local)))
    assert "local_path" in result["msg"] and "node-local" in result["msg"]


def test_local_path_without_room_is_refused(tmp_path, monkeypatch):
    target, local = _dir(tmp_path, "target"), _dir(tmp_path, "local")
    real = os.fstatvfs

    class Full:
        def __init__(self, vfs):
            self.f_frsize, self.f_blocks, self.f_bavail = vfs.f_frsize, vfs.f_blocks, 0

    # The local path's file system is full, the target's is not: only the local check can refuse.
    monkeypatch.setattr(os, "fstatvfs", lambda fd: Full(real(fd)) if os.readlink("/proc/self/fd/%d" % fd) == str(local)
                        else real(fd))
    before = tree_checksums(str(tmp_path))
    result = fail_module(checkpoint_canary, _args(target, local_path=str(local)))
    assert result["msg"].startswith("local_path has no room for this host's checkpoint")
    assert tree_checksums(str(tmp_path)) == before


def test_check_mode_returns_the_shape_and_writes_nothing(tmp_path):
    target, local = _dir(tmp_path, "target"), _dir(tmp_path, "local")
    before = tree_checksums(str(tmp_path))
    result = run_module(checkpoint_canary, _args(target, shape="megatron", local_path=str(local)), check_mode=True)
    assert result["shape"]["files_per_rank"] == 2 and result["plan"][0]["ops"][0]["kind"] == "begin"
    assert tree_checksums(str(tmp_path)) == before


def _job_args(target, first_rank, **extra):
    return _args(target, ranks=2, shape="mlperf_llama3_8b", shape_scale=1e-5, job_id="t1", job_ranks=4,
                 first_rank=first_rank, **extra)


def test_a_job_shares_one_directory_and_a_host_reads_back_another_hosts_files(tmp_path):
    """Two hosts of a job, run one after the other: host 0 writes global ranks 0-1 into the job's directory;
    host 1 writes 2-3 and, recovery_rank_shift=2, its ranks read back and verify ranks 0-1's files."""
    target = _dir(tmp_path, "target")
    first = run_module(checkpoint_canary, _job_args(target, 0))
    assert first["workdir"] == str(target / "ckptio-canary-job-t1") and first["cleaned_up"] is False
    second = run_module(checkpoint_canary, _job_args(target, 2, restore=True, recovery_rank_shift=2))
    assert second["workdir"] == first["workdir"]
    assert [(r["rank"], r["read_from_rank"], r["verify_error_count"], r["read_error"]) for r in second["ranks"]] == [
        (0, 0, 0, None), (1, 1, 0, None)]
    assert [r["read_bytes"] for r in second["ranks"]] == [r["bytes"] for r in first["ranks"]]
    assert second["summary"]["restore"]["read_from"] == {"recovery_rank_shift": 2, "other_host": True, "cache_risk": None}
    names = sorted(_tree(first["workdir"]))
    assert [n.split("/")[0] for n in names] == ["global_epoch1_step1"] * 8
    assert sorted(n.split("_rank_")[1].split("_")[0] for n in names if "optim" in n) == ["0", "1", "2", "3"]


def test_a_read_back_of_a_file_another_rank_never_wrote_fails_naming_it(tmp_path):
    target = _dir(tmp_path, "target")
    run_module(checkpoint_canary, _job_args(target, 0))
    os.unlink(str(target / "ckptio-canary-job-t1" / "global_epoch1_step1" / "model_states-1.pt"))
    result = fail_module(checkpoint_canary, _job_args(target, 2, restore=True, recovery_rank_shift=2))
    assert "model_states-1.pt" in result["ranks"][1]["read_error"] or "model_states-1.pt" in result["msg"]


def test_a_job_directory_others_may_write_is_refused_before_anything_is_written(tmp_path):
    target = _dir(tmp_path, "target")
    shared = target / "ckptio-canary-job-t1"
    shared.mkdir()
    os.chmod(str(shared), 0o777)
    result = fail_module(checkpoint_canary, _job_args(target, 0))
    assert "others may write it" in result["msg"] and os.listdir(str(shared)) == []


def _coordinated_job(target, shape, first_rank, **extra):
    """One host of a two-host job (2 ranks each) sharing the job's directory with a coordinator shape; one run
    (the same start_at: its done markers carry it, tests/unit/test_safety_job_markers.py)."""
    return _args(target, ranks=2, shape=shape, job_id="c1", job_ranks=4, first_rank=first_rank, **extra)


@pytest.mark.parametrize("shape, metadata", [("torch_dcp", "checkpoint/.metadata"),
                                             ("megatron", "latest_checkpointed_iteration.txt")])
def test_a_job_with_a_coordinator_waits_for_every_host_before_rank_0_finishes(tmp_path, shape, metadata):
    """Host 1 (global ranks 2-3) finishes first and leaves its done markers; host 0's rank 0 writes the
    coordinator's files only once every rank of the job has left one - after its own host's files."""
    target = _dir(tmp_path, "target")
    go = time.time()
    second = run_module(checkpoint_canary, _coordinated_job(target, shape, 2, start_at=go))
    job = target / "ckptio-canary-job-c1"
    assert second["workdir"] == str(job) and metadata not in _tree(job)
    first = run_module(checkpoint_canary, _coordinated_job(target, shape, 0, start_at=go))
    files = _tree(job)
    assert metadata in files
    assert sorted(n for n in files if n.endswith(".distcp")) == sorted(
        "%s/__%d_%d.distcp" % (metadata.split("/")[0] if shape == "torch_dcp" else "iter_0000001", r, t)
        for r in range(4) for t in range(1 if shape == "torch_dcp" else 2))
    marker_times = [os.stat(str(job / ".ckptio-barrier" / ("%d@%.6f" % (r, go)))).st_mtime for r in range(4)]
    assert os.stat(str(job / metadata)).st_mtime >= max(marker_times)
    assert [r["error"] for r in first["ranks"] + second["ranks"]] == [None] * 4
    await_ops = [op for entry in first["plan"] for op in entry["ops"] if op["kind"] == "await"]
    assert [(op["name"], op["length"]) for op in await_ops] == [(".ckptio-barrier", 4)]


def test_a_job_whose_other_host_never_wrote_fails_naming_the_missing_ranks(tmp_path):
    target = _dir(tmp_path, "target")
    result = fail_module(checkpoint_canary, _coordinated_job(target, "torch_dcp", 0, timeout=3, start_at=time.time()))
    rank_0 = [r for r in result["ranks"] if r["rank"] == 0][0]
    assert "global ranks 2, 3" in rank_0["error"] and "job_ranks=4" in rank_0["error"]
    assert "checkpoint/.metadata" not in _tree(target / "ckptio-canary-job-c1")


@pytest.mark.parametrize("extra, message", [
    ({}, "job_ranks"),
    ({"job_ranks": 4, "local_path": "LOCAL"}, "local_path"),
])
def test_a_coordinator_job_without_job_ranks_or_with_a_burst_buffer_is_refused(tmp_path, extra, message):
    target, local = _dir(tmp_path, "target"), _dir(tmp_path, "local")
    args = _args(target, ranks=2, shape="torch_dcp", job_id="c1", **extra)
    if "local_path" in args:
        args["local_path"] = str(local)
    result = fail_module(checkpoint_canary, args)
    assert message in result["msg"] and _left(target, local) == []
