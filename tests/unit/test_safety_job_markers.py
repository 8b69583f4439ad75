"""Issue 45: a job's done markers count only for the run that wrote them.

The job's rank 0 (torch_dcp, megatron) writes the coordinator's files once job_ranks done markers are in the
job's `.ckptio-barrier`. Before, a marker was the bare global rank, so the markers another run of the same
job_id left behind counted as this run's ranks: rank 0 wrote `.metadata` for ranks that never ran. Every
host of one run shares the controller's go time (go.json's go_controller with barrier_dir, start_at
without): each marker carries it, only this run's count, the others are ignored and named.
Each test failed on the code before the fix. docs/safety.md "The newest surfaces" lists them.
"""
from __future__ import annotations

import os
import time

import pytest

from ansible_collections.ckptio.nfs.plugins.modules import checkpoint_canary
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_checkpoint_canary import _args, _controller, _write_json
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_checkpoint_canary import live_host  # noqa: F401 pylint: disable=unused-import
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module

pytestmark = pytest.mark.usefixtures("live_host")


def _host(target, first_rank, shape="torch_dcp", **extra):
    """One host of a two-host job (2 ranks each, job_ranks 4) with a coordinator shape."""
    return _args(target, ranks=2, shape=shape, job_id="c1", job_ranks=4, first_rank=first_rank, **extra)


def _job(target):
    return target / "ckptio-canary-job-c1"


def _rank_0(result):
    return [r for r in result["ranks"] if r["rank"] == 0][0]


@pytest.mark.parametrize("shape, metadata", [("torch_dcp", "checkpoint/.metadata"),
                                             ("megatron", "latest_checkpointed_iteration.txt")])
def test_markers_an_earlier_run_of_the_job_left_never_release_rank_0(tmp_path, shape, metadata):
    """Run 1: only host 1 (global ranks 2-3) ran, host 0 never did. Run 2: only host 0 runs. Before, host 1's
    markers from run 1 counted: rank 0 wrote the coordinator's file for ranks 2 and 3, which never ran in run 2."""
    target = tmp_path / "target"
    target.mkdir()
    first_go = time.time()
    run_module(checkpoint_canary, _host(target, 2, shape, start_at=first_go))
    second_go = first_go + 1.5
    result = fail_module(checkpoint_canary, _host(target, 0, shape, start_at=second_go, timeout=3))
    error = _rank_0(result)["error"]
    assert "global ranks 2, 3" in error and "job_ranks=4" in error
    first, second = "%.6f" % first_go, "%.6f" % second_go
    assert "this run's go is %s" % second in error
    assert ".ckptio-barrier/2@%s (run %s)" % (first, first) in error
    assert ".ckptio-barrier/3@%s (run %s)" % (first, first) in error
    assert _rank_0(result)["other_run_markers"] == [
        {"file": ".ckptio-barrier/2@" + first, "run": first}, {"file": ".ckptio-barrier/3@" + first, "run": first}]
    assert not os.path.exists(str(_job(target) / metadata)), "rank 0 wrote %s for ranks that never ran" % metadata


def test_planted_markers_without_a_run_are_ignored_and_named(tmp_path):
    """Bare markers (the format before the run token, or planted) for the ranks of a host that never ran."""
    target = tmp_path / "target"
    _plant(target, "2", "3")
    result = fail_module(checkpoint_canary, _host(target, 0, start_at=time.time(), timeout=3))
    error = _rank_0(result)["error"]
    assert "global ranks 2, 3" in error
    assert ".ckptio-barrier/2 (no run)" in error and ".ckptio-barrier/3 (no run)" in error
    assert not os.path.exists(str(_job(target) / "checkpoint" / ".metadata"))


def _plant(target, *names):
    """Markers in the job's barrier directory, as an earlier run whose checkpoint files are gone left them."""
    barrier = _job(target) / ".ckptio-barrier"
    os.makedirs(str(barrier), 0o700)
    os.chmod(str(_job(target)), 0o700)
    for name in names:
        (barrier / name).write_text("")


def test_markers_of_other_runs_for_every_rank_are_ignored_named_and_this_run_completes(tmp_path):
    """Before, a marker an earlier run left for a rank failed that rank (O_EXCL): every later run of the job
    failed. Now this run's markers have their own names; the others are named in rank 0's result and a warning."""
    target = tmp_path / "target"
    target.mkdir()
    _plant(target, "2@1700000000.000000", "3@1700000000.000000", "1")
    go = time.time()
    second = run_module(checkpoint_canary, _host(target, 2, start_at=go))
    first = run_module(checkpoint_canary, _host(target, 0, start_at=go))
    assert [r["error"] for r in second["ranks"] + first["ranks"]] == [None] * 4
    assert os.path.exists(str(_job(target) / "checkpoint" / ".metadata"))
    run = "%.6f" % go
    assert sorted(os.listdir(str(_job(target) / ".ckptio-barrier"))) == sorted(
        ["1", "2@1700000000.000000", "3@1700000000.000000"] + ["%d@%s" % (rank, run) for rank in range(4)])
    assert _rank_0(first)["other_run_markers"] == [
        {"file": ".ckptio-barrier/1", "run": None},
        {"file": ".ckptio-barrier/2@1700000000.000000", "run": "1700000000.000000"},
        {"file": ".ckptio-barrier/3@1700000000.000000", "run": "1700000000.000000"}]
    assert [w for w in first["warnings"] if "ignored" in w] == [
        "job_id c1: done markers of other runs in %s ignored (only this run's count): .ckptio-barrier/1 (no run),"
        " .ckptio-barrier/2@1700000000.000000 (run 1700000000.000000), .ckptio-barrier/3@1700000000.000000"
        " (run 1700000000.000000)" % _job(target)]


def test_a_marker_of_this_run_already_there_fails_the_rank_naming_first_rank(tmp_path):
    """O_EXCL still refuses a marker of this run that is there already: another host given the same first_rank."""
    target = tmp_path / "target"
    target.mkdir()
    go = time.time()
    _plant(target, "2@%.6f" % go)
    result = fail_module(checkpoint_canary, _host(target, 2, start_at=go, timeout=3))
    error = result["ranks"][0]["error"]
    assert "a done marker of this run (.ckptio-barrier/2@%.6f) is already there" % go in error and "first_rank" in error


def _go(go_controller, offset):
    def write(directory):
        _write_json(directory / "go.json", {"go_at": time.time() + 0.3, "go_controller": go_controller,
                                            "offset_seconds": offset})
    return write


@pytest.mark.parametrize("same_run", [True, False])
def test_with_barrier_dir_the_run_is_the_controllers_go_time_every_host_shares(tmp_path, same_run):
    """Each host's go_at is on its own clock (and differs); go_controller is the one go time of the run."""
    target = tmp_path / "target"
    target.mkdir()
    run_1 = round(time.time() + 0.3, 6)
    _controller(tmp_path / "b1", _go(run_1, 7.0))
    second = run_module(checkpoint_canary, _host(target, 2, barrier_dir=str(tmp_path / "b1"), barrier_timeout=30))
    run_2 = run_1 if same_run else run_1 + 60
    _controller(tmp_path / "b0", _go(run_2, -3.0))
    args = _host(target, 0, barrier_dir=str(tmp_path / "b0"), barrier_timeout=30, timeout=3)
    if same_run:
        first = run_module(checkpoint_canary, args)
        assert [r["error"] for r in first["ranks"] + second["ranks"]] == [None] * 4
        assert os.path.exists(str(_job(target) / "checkpoint" / ".metadata"))
        assert first["barrier"]["go_controller"] == run_1
    else:
        result = fail_module(checkpoint_canary, args)
        assert ".ckptio-barrier/2@%.6f (run %.6f)" % (run_1, run_1) in _rank_0(result)["error"]
        assert not os.path.exists(str(_job(target) / "checkpoint" / ".metadata"))


def test_a_coordinator_job_without_a_shared_go_is_refused_naming_the_options(tmp_path):
    """Without start_at or barrier_dir the job's hosts share no go time, so no marker could tell its run."""
    target = tmp_path / "target"
    target.mkdir()
    result = fail_module(checkpoint_canary, _host(target, 0, timeout=3))
    assert "start_at" in result["msg"] and "barrier_dir" in result["msg"] and "job_id" in result["msg"]
    assert os.listdir(str(target)) == []
