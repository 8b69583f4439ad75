"""roles/checkpoint_capture walked task by task on the safety tests' fake host (RoleWalk).

The capture must be read-only on every host: its client entry point in check mode reads the
statistics once and changes nothing, a marker left from an earlier checkpoint is refused naming
the option and the host before the sampler starts, and a real run gets as far as the one
asynchronous sampler per client without having changed anything.
"""
from __future__ import annotations

import os
import time

import pytest

from ansible_collections.ckptio.nfs.plugins.plugin_utils.capture_steps import capture_window
from ansible_collections.ckptio.nfs.plugins.modules import nfs_client_stats
from ansible_collections.ckptio.nfs.tests.unit.test_safety_bad_input import Rejected, RoleWalk, Unmodelled, build_world, role_base


@pytest.fixture
def world(fake_root, monkeypatch):
    """The safety tests' fake host: module paths in tmp_path, commands and forks recorded, never run."""
    return build_world(fake_root, monkeypatch)


class ClientWalk(RoleWalk):
    """RoleWalk with what prepare left on the controller (the client play reads it through hostvars['localhost'])."""

    def __init__(self, world, params, window, check_mode=False):
        super().__init__(world, "checkpoint_capture", "clients", params, check_mode=check_mode)
        self.hostvars = {"localhost": {"checkpoint_capture__window": capture_window(time.time(), **window),
                                       "checkpoint_capture__bundle": world.path("reports", "capture-bundle")}}

    def walk(self, tasks):
        self.variables["hostvars"] = self.hostvars
        super().walk(tasks)


def client_walk(world, check_mode=False, **window):
    return ClientWalk(world, role_base(world, "checkpoint_capture"), window or {"seconds": 30}, check_mode=check_mode)


def test_clients_in_check_mode_read_once_and_change_nothing(world):
    before = world.snapshot()
    walk = client_walk(world, check_mode=True)
    walk.run()
    assert world.snapshot() == before and walk.changes == [] and world.commands == []
    record = walk.variables["checkpoint_capture__record"]
    assert record["start"] is not None and record["end"] >= record["start"] and record["dstate_samples"] == 0
    assert record["clock"]["offset_seconds"] is not None and record["marker_seen"] is None
    assert not os.path.exists(world.path("reports", "capture-bundle"))


def test_a_marker_that_exists_already_is_refused_naming_the_option_and_the_host(world):
    marker = world.path("run", "ckpt-done")
    os.makedirs(os.path.dirname(marker), exist_ok=True)
    with open(marker, "w"):
        pass
    before = world.snapshot()
    walk = client_walk(world, marker=marker)
    with pytest.raises(Rejected) as refused:
        walk.run()
    assert "checkpoint_capture_marker" in refused.value.msg and "localhost" in refused.value.msg
    assert "checkpoint_capture__before" not in walk.variables, "refused only after reading the statistics"
    assert world.snapshot() == before and walk.changes == []


@pytest.mark.parametrize("window", [{"seconds": 5}, {"marker": "/run/ckptio-test-marker-absent", "max_seconds": 5}])
def test_a_real_run_reaches_the_one_sampler_per_client_having_changed_nothing(world, window, monkeypatch):
    # The walker validates the async launch by running the sampler in check mode: without its sleeps.
    monkeypatch.setattr(nfs_client_stats.time, "sleep", lambda seconds: None)
    before = world.snapshot()
    walk = client_walk(world, **window)
    with pytest.raises(Unmodelled) as reached:
        walk.run()
    assert str(reached.value).startswith("Sample D state for the whole window")
    sampling = walk.variables["checkpoint_capture__sampling"]
    assert sampling["stop_path"] == window.get("marker")
    assert walk.variables["checkpoint_capture__before"]["mounts"], "the statistics at the start were read"
    assert world.snapshot() == before and walk.changes == [] and world.commands == []


def test_prepare_in_check_mode_plans_the_window_and_writes_nothing(world):
    before = world.snapshot()
    options = dict(role_base(world, "checkpoint_capture"), checkpoint_capture_reports_dir=world.path("capture-reports"))
    walk = RoleWalk(world, "checkpoint_capture", "prepare", options, check_mode=True)
    walk.run()
    assert walk.variables["checkpoint_capture__window"]["kind"] == "seconds"
    assert world.snapshot() == before and not os.path.exists(world.path("capture-reports"))


def test_main_explains_the_playbook_by_its_installed_name(world):
    with pytest.raises(Rejected, match="ckptio.nfs.capture") as refused:
        RoleWalk(world, "checkpoint_capture", "main", {}).run()
    assert "playbooks/" not in refused.value.msg


def test_a_mount_that_is_not_nfs_on_the_client_is_refused_in_check_mode_too_naming_the_variable(world):
    """capture --check fails where the real run would (issue 23): no NFS mount there, nothing to measure."""
    elsewhere = world.path("not-a-mount")
    os.makedirs(elsewhere)
    for check_mode in (True, False):
        walk = ClientWalk(world, dict(role_base(world, "checkpoint_capture"), checkpoint_capture_mount_point=elsewhere),
                          {"seconds": 30}, check_mode=check_mode)
        with pytest.raises(Rejected) as refused:
            walk.run()
        assert "ckptio_checkpoint_mount" in refused.value.msg and "checkpoint_capture_mount_point" in refused.value.msg
        assert elsewhere in refused.value.msg and "checkpoint_capture__sampling" not in walk.variables


def test_no_mount_at_all_is_refused_on_the_client_naming_the_inventory_variable(world):
    walk = ClientWalk(world, dict(role_base(world, "checkpoint_capture"), checkpoint_capture_mount_point=""), {"seconds": 30})
    with pytest.raises(Rejected, match="set ckptio_checkpoint_mount"):
        walk.run()
    assert "checkpoint_capture__before" not in walk.variables, "refused before reading anything"


def test_the_playbook_runs_the_entry_points_in_the_windows_order(tmp_path):
    """ckptio.nfs.capture: plan -> servers at the start -> clients (start, sampler, wait, end) -> servers at the end -> report."""
    from ansible_collections.ckptio.nfs.tests.unit.test_playbook_tags import listed, names
    order = names(listed(tmp_path, "capture.yml"))
    wanted = ["Plan the window on the controller's clock (module_utils/bundle/capture.py)",
              "Read nfsd statistics at the window's {{ checkpoint_capture_phase }}", "Read client statistics at the window's start",
              "Sample D state for the whole window (one call per client, asynchronously; it stops at the marker)",
              "Wait on the controller until the window's planned end (nothing polls the clients meanwhile)",
              "Read client statistics at the window's end",
              "Write context.yml (source capture, the window on the controller's clock, the written bytes)",
              "Diagnose the bundle"]
    positions = [order.index(name) for name in wanted]
    assert positions == sorted(positions)
