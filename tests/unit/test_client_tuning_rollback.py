"""client_tuning records a mount's pre-tuning options and the distro_default profile restores them.

The role is walked task by task (RoleWalk from test_safety_bad_input.py) through real runs on
the fake host: ckptio.nfs modules run in-process and copy/file write into the fake tree, so the
state file, fstab and the role's report are read back as a host would have them.
"""
from __future__ import annotations

import json
import os
import re
import stat

import pytest

from ansible.errors import AnsibleError

from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import escape_path
from ansible_collections.ckptio.nfs.tests.unit.test_safety_bad_input import Rejected, RoleWalk, build_world, role_base

OLD_OPTS = "vers=4.2,hard,noatime,rsize=262144,wsize=262144,_netdev"
OLD_CANONICAL = {"vers": "4.2", "hard": True, "atime": False, "rsize": "262144", "wsize": "262144", "_netdev": True}
TUNED_OPTS = "vers=4.1,nconnect=4,rsize=1048576,wsize=1048576,hard,proto=tcp,timeo=600,retrans=2"
NOT_MOUNTED = "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,errors=remount-ro\n"


@pytest.fixture
def world(fake_root, monkeypatch):
    world = build_world(fake_root, monkeypatch)
    # The host before its first tuning: the checkpoint line has the admin's own options.
    with open(world.path("etc/fstab"), "w") as handle:
        handle.write(world.fstab_text().replace(TUNED_OPTS, OLD_OPTS))
    return world


def unmount(world):
    with open(world.path("proc/self/mountinfo"), "w") as handle:
        handle.write(NOT_MOUNTED)


def state_file(world):
    return world.path("var/lib/ckptio/client_tuning-mounts.json")


def read_records(world):
    with open(state_file(world)) as handle:
        return json.load(handle)


def checkpoint_line(world, mount_point=None):
    with open(world.path("etc/fstab")) as handle:
        lines = [line for line in handle.read().splitlines() if " %s " % escape_path(mount_point or world.mount_point) in line]
    assert len(lines) == 1
    return lines[0]


def walk(world, check_mode=False, **overrides):
    params = role_base(world, "client_tuning")
    params.update(overrides)
    role = RoleWalk(world, "client_tuning", "main", params, check_mode=check_mode, write_files=not check_mode)
    role.run()
    return role


TIMESTAMP = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"


def assert_another_tuning_keeps_the_record(world):
    """A tuning run that changes fstab again (nconnect 8) leaves the state file byte for byte."""
    with open(state_file(world), "rb") as handle:
        recorded = handle.read()
    again = walk(world, client_tuning_mount_state="present", client_tuning_mount_options={"nconnect": 8})
    assert "nconnect=8" in checkpoint_line(world)
    assert "Write the state file" not in again.changes
    with open(state_file(world), "rb") as handle:
        assert handle.read() == recorded


def test_first_tuning_records_the_old_options_before_fstab_changes_and_later_runs_keep_them(world):
    unmount(world)
    first = walk(world, client_tuning_mount_state="present")
    assert checkpoint_line(world).split()[3] == TUNED_OPTS
    assert first.changes.index("Write the state file") < first.changes.index("Persist and apply the checkpoint mounts")
    assert stat.S_IMODE(os.stat(state_file(world)).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(state_file(world))).st_mode) == 0o700
    records = read_records(world)
    assert list(records) == [world.mount_point]
    record = records[world.mount_point]
    assert (record["src"], record["fstype"], record["opts"]) == ("10.0.0.1:/srv/nfs", "nfs4", OLD_CANONICAL)
    assert re.match(TIMESTAMP, record["recorded_at"])
    # The record keeps the fstab order, so a restored line reads like the old one.
    assert list(record["opts"]) == list(OLD_CANONICAL)

    # First tuning wins: another tuning run changes fstab again, the record stays as it was.
    assert_another_tuning_keeps_the_record(world)


def test_rollback_restores_the_recorded_line_with_nconnect_1_and_marks_the_record_restored(world):
    unmount(world)
    old_line = checkpoint_line(world)
    walk(world, client_tuning_mount_state="present")
    recorded = read_records(world)[world.mount_point]
    rollback = walk(world, client_tuning_mount_state="present", client_tuning_profile="distro_default")
    # Same separators and options as before tuning; nconnect=1 makes nfs_mount compare (and
    # remount) the live connection count, which it compares only for wanted options.
    assert checkpoint_line(world) == old_line.replace(OLD_OPTS, OLD_OPTS + ",nconnect=1")
    # The record stays, as it was plus the mark: a later rollback run needs it.
    records = read_records(world)
    assert list(records) == [world.mount_point]
    restored_at = records[world.mount_point]["restored_at"]
    assert re.match(TIMESTAMP, restored_at)
    assert records[world.mount_point] == dict(recorded, restored_at=restored_at)
    assert stat.S_IMODE(os.stat(state_file(world)).st_mode) == 0o600
    report = rollback.variables["client_tuning_report"]
    assert report["restored"] == [{"path": world.mount_point, "recorded_at": recorded["recorded_at"],
                                   "recorded_opts": OLD_CANONICAL, "opts": dict(OLD_CANONICAL, nconnect=1),
                                   "restored_at": restored_at}]
    assert [line for line in report["changed"] if "back to its options from before tuning" in line] == [
        "mount %s: back to its options from before tuning (recorded %s): %s; record marked restored in %s"
        % (world.mount_point, recorded["recorded_at"], json.dumps(dict(OLD_CANONICAL, nconnect=1)), state_file(world))]
    assert report["pending"] == []


def test_a_second_rollback_changes_nothing(world):
    unmount(world)
    walk(world, client_tuning_mount_state="present")
    walk(world, client_tuning_mount_state="present", client_tuning_profile="distro_default")
    after_first = world.snapshot()
    line = checkpoint_line(world)

    again = walk(world, client_tuning_mount_state="present", client_tuning_profile="distro_default")
    # Not a byte moved: the marked record gives the same options, so fstab keeps the restored
    # line (not the mount's own opts only) and the state file is not rewritten.
    assert again.changes == []
    assert world.snapshot() == after_first
    assert checkpoint_line(world) == line
    report = again.variables["client_tuning_report"]
    assert report["changed"] == [] and report["pending"] == []
    # The report still says what the mount was restored to, and when.
    assert [(item["path"], item["restored_at"]) for item in report["restored"]] == [
        (world.mount_point, read_records(world)[world.mount_point]["restored_at"])]


def test_tuning_after_a_restore_records_the_options_it_finds_and_first_tuning_wins_again(world):
    unmount(world)
    walk(world, client_tuning_mount_state="present")
    walk(world, client_tuning_mount_state="present", client_tuning_profile="distro_default")
    first_record = read_records(world)[world.mount_point]
    rolled_back_line = checkpoint_line(world)

    retune = walk(world, client_tuning_mount_state="present")
    assert checkpoint_line(world).split()[3] == TUNED_OPTS
    assert retune.changes.index("Write the state file") < retune.changes.index("Persist and apply the checkpoint mounts")
    # The rolled-back line is the new "before", and the mark is gone: this tuning is not rolled back yet.
    record = read_records(world)[world.mount_point]
    assert "restored_at" not in record
    assert record["opts"] == dict(OLD_CANONICAL, nconnect="1")
    assert (record["src"], record["fstype"]) == (first_record["src"], first_record["fstype"])
    assert re.match(TIMESTAMP, record["recorded_at"])

    # An unmarked record is never replaced, however often the tuning changes fstab.
    assert_another_tuning_keeps_the_record(world)

    # Rolling the new tuning back gives the line the second tuning found, its nconnect=1 included.
    walk(world, client_tuning_mount_state="present", client_tuning_profile="distro_default")
    assert checkpoint_line(world) == rolled_back_line
    assert "restored_at" in read_records(world)[world.mount_point]


def test_a_mount_still_pending_keeps_its_record_unmarked_for_the_next_rollback_run(world):
    other = world.path("mnt", "other")
    os.makedirs(other)
    mounts = [{"src": "10.0.0.1:/srv/nfs", "path": world.mount_point, "state": "mounted"},
              {"src": "10.0.0.1:/srv/other", "path": other, "state": "present"}]
    walk(world, client_tuning_mounts=mounts)
    records = read_records(world)
    assert records[world.mount_point]["opts"] == OLD_CANONICAL
    # No entry before tuning: the record says so with empty options.
    assert (records[other]["src"], records[other]["opts"]) == ("10.0.0.1:/srv/other", {})
    world.commands.clear()
    # The live mount is tuned (nconnect=4); when_idle tries to unmount it (the role's default,
    # never, would not), and umount fails here, as it does for a busy mount.
    rollback = walk(world, client_tuning_mounts=mounts, client_tuning_profile="distro_default",
                    client_tuning_apply_policy="when_idle")
    assert ["umount", world.mount_point] in world.commands
    assert checkpoint_line(world).split()[3] == OLD_OPTS + ",nconnect=1"
    assert checkpoint_line(world, other).split()[3] == "nconnect=1"
    # The busy mount's record stays unmarked (pending); the idle one is marked restored.
    after = read_records(world)
    assert list(after) == [world.mount_point, other]
    assert after[world.mount_point] == records[world.mount_point]
    assert after[other] == dict(records[other], restored_at=after[other]["restored_at"])
    assert stat.S_IMODE(os.stat(state_file(world)).st_mode) == 0o600
    report = rollback.variables["client_tuning_report"]
    assert [(item["path"], item["restored_at"]) for item in report["restored"]] == [
        (world.mount_point, None), (other, after[other]["restored_at"])]
    assert any(line.startswith("%s: not fully back to its options from before tuning" % world.mount_point)
               and "stays unmarked in %s" % state_file(world) in line for line in report["pending"])
    assert [line for line in report["changed"] if "back to its options from before tuning" in line] == [
        "mount %s: back to its options from before tuning (recorded %s): %s; record marked restored in %s"
        % (other, records[other]["recorded_at"], json.dumps({"nconnect": 1}), state_file(world))]

    # Still busy at the next rollback run: still unmarked and pending; the finished mount's
    # record keeps its mark, so the state file is not rewritten.
    with open(state_file(world), "rb") as handle:
        state = handle.read()
    again = walk(world, client_tuning_mounts=mounts, client_tuning_profile="distro_default")
    with open(state_file(world), "rb") as handle:
        assert handle.read() == state
    assert "Mark in the state file which mounts are back to their pre-tuning options" not in again.changes
    report = again.variables["client_tuning_report"]
    assert [(item["path"], item["restored_at"]) for item in report["restored"]] == [
        (world.mount_point, None), (other, after[other]["restored_at"])]
    assert any(line.startswith("%s: not fully back" % world.mount_point) for line in report["pending"])
    assert not any("back to its options from before tuning" in line for line in report["changed"])


def test_record_options_are_overridden_like_the_profile_and_keep_their_own_nconnect(world):
    os.makedirs(os.path.dirname(state_file(world)))
    with open(state_file(world), "w") as handle:
        json.dump({world.mount_point: {"src": "10.0.0.1:/srv/nfs", "fstype": "nfs4", "recorded_at": "2025-01-01T00:00:00Z",
                                       "opts": {"vers": "4.2", "nconnect": "2", "timeo": "900", "_netdev": True}}}, handle)
    mounts = [{"src": "10.0.0.1:/srv/nfs", "path": world.mount_point, "opts": {"_netdev": False}}]
    rollback = walk(world, check_mode=True, client_tuning_profile="distro_default", client_tuning_mounts=mounts,
                    client_tuning_mount_options={"timeo": 600, "vers": None})
    assert rollback.variables["__client_tuning_mounts"][0]["opts"] == {"nconnect": "2", "timeo": 600, "_netdev": False}
    # Without a record (or with the tuning profile) nothing of it is used.
    tuned = walk(world, check_mode=True, client_tuning_mounts=mounts)
    assert tuned.variables["__client_tuning_mounts"][0]["opts"]["nconnect"] == 4


def test_check_mode_records_nothing(world):
    unmount(world)
    before = world.snapshot()
    audit = walk(world, check_mode=True, client_tuning_mount_state="present")
    # The record a real run would write was worked out, and nothing was written.
    assert list(audit.variables["__client_tuning_records_wanted"]) == [world.mount_point]
    assert world.snapshot() == before and not os.path.exists(state_file(world))
    assert audit.changes == []


@pytest.mark.parametrize("content", ["[]", '{"/mnt/nfs": {"src": "x"}}', '{"/mnt/nfs": "vers=4.2"}'])
def test_a_state_file_without_mount_records_is_refused_before_any_change(world, content):
    os.makedirs(os.path.dirname(state_file(world)))
    with open(state_file(world), "w") as handle:
        handle.write(content)
    before = world.snapshot()
    with pytest.raises(Rejected, match="client_tuning_state_file"):
        walk(world, client_tuning_profile="distro_default")
    assert world.snapshot() == before and world.commands == []


@pytest.mark.parametrize("content", ["", "{not json", '{"/mnt/nfs": {"opts": {}}} trailing'])
def test_a_state_file_that_is_not_json_fails_before_any_change(world, content):
    """In a play the parse task fails (its message: test_client_tuning.py); the walker, which
    skips a set_fact that fails, stops at the next task reading the fact. Either way nothing moved."""
    os.makedirs(os.path.dirname(state_file(world)))
    with open(state_file(world), "w") as handle:
        handle.write(content)
    before = world.snapshot()
    with pytest.raises((Rejected, AnsibleError)):
        walk(world, client_tuning_profile="distro_default")
    assert world.snapshot() == before and world.commands == []
