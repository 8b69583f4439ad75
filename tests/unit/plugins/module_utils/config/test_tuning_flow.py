"""tuning_flow, the one flow of sunrpc_slot_table, nfsd_threads and nfs_mount, driven on fake steps:
the gate (check mode writes and changes nothing), the order (files under the locks, live after
them), the one outcome and backup rule; and the pure plans it runs (records frozen, mount_plan's
plan a value, never an exception).
"""
from __future__ import annotations

import dataclasses
import os

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.config import mount_plan
from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfsd_plan
from ansible_collections.ckptio.nfs.plugins.module_utils.config import owned_files
from ansible_collections.ckptio.nfs.plugins.module_utils.config import settings
from ansible_collections.ckptio.nfs.plugins.module_utils.config import slot_table_plan
from ansible_collections.ckptio.nfs.plugins.module_utils.config import tuning_flow
from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import parse_mountinfo
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_lock


class FakeModule:
    def __init__(self, check_mode, diff=False):
        self.check_mode = check_mode
        self._diff = diff
        self.warnings = []

    def warn(self, message):
        self.warnings.append(message)

    def fail_json(self, **kwargs):
        raise AssertionError("fail_json(%r)" % kwargs)


class Plan:
    """The least a flow needs of a plan: its edits and warnings."""

    def __init__(self, path):
        self.edits = [owned_files.FileEdit(path, "old\n", "new\n", True)]
        self.warnings = ["from the plan"]


def recording_steps(tmp_path, calls):
    """Steps that record what ran, and whether the file's lock was held at that moment."""
    path = str(tmp_path / "owned.conf")
    lock = file_lock.lock_path_for(path)

    def read_and_plan():
        calls.append(("read_and_plan", os.path.exists(lock)))
        return "views", Plan(path)

    def write_files(views, plan):
        calls.append(("write_files", os.path.exists(lock)))
        return tuning_flow.Written({path: path + ".bak"}, ("reload failed",))

    def change_live(views, plan, written):
        calls.append(("change_live", os.path.exists(lock)))
        return tuning_flow.Outcome("live after", True, written.backups, written.warnings + ("kernel kept 2",))

    def report(views, plan, outcome, diff):
        calls.append(("report", outcome))
        result = {"changed": tuning_flow.changed(plan.edits, outcome, False), "diff_asked": diff}
        result.update(tuning_flow.backups_of(outcome, path))
        return result
    return path, tuning_flow.Steps((path,), read_and_plan, write_files, change_live, report)


def test_check_mode_stops_at_the_gate_takes_no_lock_and_reports_the_state_as_found(tmp_path):
    calls = []
    _path, steps = recording_steps(tmp_path, calls)
    module = FakeModule(check_mode=True, diff=True)
    result = tuning_flow.run(module, steps, file_lock.locked)
    assert calls == [("read_and_plan", False), ("report", None)]
    assert result == {"changed": True, "diff_asked": True, "backup_files": {}}
    assert module.warnings == ["from the plan"]
    assert os.listdir(str(tmp_path)) == []


def test_a_real_run_writes_under_the_lock_then_changes_live_without_it(tmp_path):
    calls = []
    path, steps = recording_steps(tmp_path, calls)
    module = FakeModule(check_mode=False)
    result = tuning_flow.run(module, steps, file_lock.locked)
    assert [name for name, _held in calls[:3]] == ["read_and_plan", "write_files", "change_live"]
    # Read and written under the lock; the live change (a modprobe, a mount) runs after its release.
    assert [held for _name, held in calls[:3]] == [True, True, False]
    outcome = calls[3][1]
    assert outcome == tuning_flow.Outcome("live after", True, {path: path + ".bak"}, ("reload failed", "kernel kept 2"))
    # One backup rule: every backup named by the file it saves, backup_file the documented file's.
    assert result == {"changed": True, "diff_asked": False, "backup_files": {path: path + ".bak"}, "backup_file": path + ".bak"}
    # The plan's warnings are said before anything is written, so a run that fails later says them too.
    assert module.warnings == ["from the plan", "reload failed", "kernel kept 2"]


def test_a_plan_error_stops_the_run_before_any_write(tmp_path):
    calls = []
    _path, steps = recording_steps(tmp_path, calls)

    def refuse():
        raise settings.PlanError("modprobe_conf: not ours")
    with pytest.raises(settings.PlanError, match="^modprobe_conf: not ours$"):
        tuning_flow.run(FakeModule(check_mode=False), dataclasses.replace(steps, read_and_plan=refuse), file_lock.locked)
    assert calls == [] and os.listdir(str(tmp_path)) == []


def test_changed_is_an_edit_or_the_live_change_done_or_predicted():
    same = [owned_files.FileEdit("/etc/x.conf", "a\n", "a\n", False)]
    assert tuning_flow.changed(same, None, False) is False
    assert tuning_flow.changed(same, None, True) is True
    assert tuning_flow.changed(same, tuning_flow.Outcome(None, False), True) is False
    assert tuning_flow.changed(same, tuning_flow.Outcome(None, True), False) is True
    assert tuning_flow.changed([owned_files.FileEdit("/etc/x.conf", None, "a\n", False)], None, False) is True


def test_a_backup_of_another_file_never_becomes_backup_file():
    outcome = tuning_flow.Outcome(None, False, {"/etc/default/nfs-kernel-server": "/etc/default/nfs-kernel-server.1~"})
    assert tuning_flow.backups_of(outcome, "/etc/nfs.conf.d/ckptio-nfsd.conf") == {
        "backup_files": {"/etc/default/nfs-kernel-server": "/etc/default/nfs-kernel-server.1~"}}


@pytest.mark.parametrize("record", [
    slot_table_plan.Request.from_params({
        "tcp_slot_table_entries": None, "tcp_max_slot_table_entries": 128, "udp_slot_table_entries": None,
        "nfs_max_session_slots": None, "apply_live": True, "persist": True, "state": "present",
        "modprobe_conf": "/etc/modprobe.d/a.conf", "modules_load_conf": "/etc/modules-load.d/a.conf", "backup": False,
        "force": False}),
    nfsd_plan.Request.from_params({"threads": 8, "min_threads": None, "max_connections": None, "apply_live": True,
                                   "persist": True, "state": "present", "conf_file": "/etc/nfs.conf.d/a.conf",
                                   "backup": False}, is_main_conf=False),
    tuning_flow.Outcome(None, False),
    mount_plan.HOLDERS_NEEDED,
], ids=["slot_table_request", "nfsd_request", "outcome", "holders_needed"])
def test_records_are_frozen(record):
    field = dataclasses.fields(record)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(record, field, None)


# ---- mount_plan.plan() is pure: a plan or a refusal value, the views untouched ----------------------
MOUNTED = ("22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
           "40 22 0:40 / /mnt/nfs rw,relatime shared:80 - nfs4 10.0.0.1:/srv/nfs rw,vers=4.1,rsize=65536,wsize=65536,"
           "hard,proto=tcp,nconnect=1,timeo=600,retrans=2,sec=sys,addr=10.0.0.1\n")
ENTRY = "10.0.0.1:/srv/nfs /mnt/nfs nfs4 vers=4.1,nconnect=4,hard 0 0\n"


def mount_views(holders=None):
    mounts = parse_mountinfo(MOUNTED)
    return mount_plan.Views(mount_plan.fstab_view(ENTRY, 1.0, "/mnt/nfs"),
                            mount_plan.LiveView(mounts, mount_plan.live_mount(mounts, "/mnt/nfs")), 2.0, None, holders)


def mount_wanted():
    return mount_plan.wanted_from_params({
        "src": "10.0.0.1:/srv/nfs", "path": "/mnt/nfs", "fstype": "nfs4", "opts": {"vers": 4.1, "nconnect": 4, "hard": True},
        "state": "mounted", "fstab": "/etc/fstab", "backup": False, "apply_policy": "when_idle", "dump": 0, "passno": 0,
        "replace_foreign": False})


def test_mount_plan_answers_holders_needed_as_a_value_and_the_same_views_give_the_same_plan():
    views = mount_views()
    before = repr(views)
    assert mount_plan.plan(views, mount_wanted()) is mount_plan.HOLDERS_NEEDED
    assert repr(views) == before
    idle = views.with_holders([])
    first, second = mount_plan.plan(idle, mount_wanted()), mount_plan.plan(idle, mount_wanted())
    assert first == second and first.action == "umount+mount" and first.needs_holders is False
    assert repr(views) == before and views.holders is None


def test_mount_plan_verify_names_what_the_kernel_kept():
    plan = mount_plan.plan(mount_views(holders=[]), mount_wanted())
    mounts = parse_mountinfo(MOUNTED)
    found = mount_plan.verify(mount_plan.LiveView(mounts, mount_plan.live_mount(mounts, "/mnt/nfs")), mount_wanted(), plan,
                              "umount+mount", mount_plan.Notes())
    assert [item["name"] for item in found.pending] == ["nconnect"]
    result = mount_plan.report(mount_wanted(), mount_views(holders=[]), plan,
                               mount_plan.outcome({"/etc/fstab": "/etc/fstab.1~"}, "umount+mount", mounts[-1], [found]))
    assert result["remounted"] == "umount+mount" and [item["name"] for item in result["pending"]] == ["nconnect"]
    assert result["backup_file"] == "/etc/fstab.1~" and result["backup_files"] == {"/etc/fstab": "/etc/fstab.1~"}


def test_config_imports_nothing_of_host():
    """config/ is a pure floor below host/ (issue 46): tuning_flow takes the lock from the module
    (file_lock.locked) instead of importing host/ itself. Fails on 9eeadc4 (tuning_flow -> host/atomic_file)."""
    config_dir = os.path.dirname(tuning_flow.__file__)
    importing = []
    for name in sorted(os.listdir(config_dir)):
        if name.endswith(".py"):
            with open(os.path.join(config_dir, name)) as handle:
                if "module_utils.host" in handle.read():
                    importing.append(name)
    assert importing == []
