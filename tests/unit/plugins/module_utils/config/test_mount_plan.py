"""mount_plan driven directly on views: no files, no commands, no clock.

The live lines are the lab's v4.1 mount as mountinfo shows it (rsize=wsize=65536, nconnect=1;
tests/samples/bundles/seed_like_baseline/NOTES.txt).
"""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.config import mount_plan
from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import parse_mountinfo

PATH = "/mnt/nfs"
FSTAB = "# /etc/fstab\nLABEL=scratch /scratch xfs defaults,noatime 0 2\n"
ROOT_LINE = "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
SEED_OPTS = ("rw,vers=4.1,rsize=65536,wsize=65536,namlen=255,hard,proto=tcp,nconnect=1,timeo=600,retrans=2,sec=sys,"
             "clientaddr=10.0.0.2,local_lock=none,addr=10.0.0.1")
WANTED_OPTS = {"vers": 4.1, "nconnect": 4, "rsize": 1048576, "wsize": 1048576, "hard": True}
HOLDER = {"pid": 4242, "command": "python3", "how": "cwd /mnt/nfs/run"}
NOW = 1700000000.0


def wanted(**extra):
    params = {"src": "10.0.0.1:/srv/nfs", "path": PATH, "fstype": "nfs4", "opts": WANTED_OPTS, "state": "mounted",
              "fstab": "/etc/fstab", "backup": False, "apply_policy": "when_idle", "dump": 0, "passno": 0,
              "replace_foreign": False}
    params.update(extra)
    return mount_plan.wanted_from_params(params)


def mount_line(mount_point=PATH, opts=SEED_OPTS, source="10.0.0.1:/srv/nfs", fstype="nfs4", number=40):
    return "%d 22 0:%d / %s rw,relatime shared:80 - %s %s %s\n" % (number, number, mount_point, fstype, source, opts)


def views(fstab=FSTAB, mounted=(), fstab_mtime=NOW - 3600, age=None, path_is_dir=True, holders=None):
    mounts = parse_mountinfo(ROOT_LINE + "".join(mounted))
    live = mount_plan.live_mount(mounts, PATH)
    return mount_plan.Views(mount_plan.fstab_view(fstab, fstab_mtime if fstab is not None else None, PATH),
                            mount_plan.LiveView(mounts, live, age), NOW,
                            path_is_dir if live is None else None, holders)


def entry(opts="vers=4.1,nconnect=4,rsize=1048576,wsize=1048576,hard"):
    return "10.0.0.1:/srv/nfs %s nfs4 %s 0 0\n" % (PATH, opts)


def test_a_new_mount_appends_one_line_and_mounts_without_looking_for_holders():
    plan = mount_plan.plan(views(), wanted())
    assert plan.needs_holders is False
    assert plan.fstab_after == FSTAB + entry()
    assert plan.fstab_drift == {"entry": {"wanted": "10.0.0.1:/srv/nfs", "fstab": None}}
    assert plan.action == "mount" and plan.live_drift == {"mounted": {"wanted": True, "live": False}}
    assert mount_plan.mount_argv(wanted()) == ["mount", "-t", "nfs4", "-o", "vers=4.1,nconnect=4,rsize=1048576,wsize=1048576,hard",
                                               "10.0.0.1:/srv/nfs", PATH]
    assert plan.pending == [] and plan.warnings == [] and plan.holders == []


def test_a_missing_mount_point_stops_the_plan():
    with pytest.raises(mount_plan.PlanError, match="^path: /mnt/nfs does not exist"):
        mount_plan.plan(views(path_is_dir=False), wanted())


def test_an_unmount_asks_for_the_holders_before_deciding():
    plan = mount_plan.plan(views(fstab=FSTAB + entry(), mounted=[mount_line()]), wanted())
    assert plan.needs_holders is True


def test_a_busy_mount_keeps_fresh_mount_options_pending_and_names_the_holder():
    plan = mount_plan.plan(views(fstab=FSTAB + entry(), mounted=[mount_line()], holders=[HOLDER]), wanted())
    assert plan.needs_holders is False and plan.action is None
    assert plan.holders == [HOLDER]
    assert sorted(item["name"] for item in plan.pending) == ["nconnect", "rsize", "wsize"]
    assert {item["reason"] for item in plan.pending} == {"mount is busy, nothing unmounted: pid 4242 (python3) cwd /mnt/nfs/run"}
    assert plan.warnings == ["/mnt/nfs: nconnect, rsize, wsize pending: mount is busy, nothing unmounted: "
                             "pid 4242 (python3) cwd /mnt/nfs/run"]


def test_an_idle_mount_is_unmounted_and_mounted_again():
    plan = mount_plan.plan(views(fstab=FSTAB + entry(), mounted=[mount_line()], holders=[]), wanted())
    assert plan.action == "umount+mount" and plan.pending == [] and plan.fstab_after == FSTAB + entry()
    assert set(plan.live_drift) == {"nconnect", "rsize", "wsize"}


def test_apply_policy_never_needs_no_holders():
    plan = mount_plan.plan(views(fstab=FSTAB + entry(), mounted=[mount_line()]), wanted(apply_policy="never"))
    assert plan.needs_holders is False and plan.action is None
    assert {item["reason"] for item in plan.pending} == {mount_plan.POLICY_NEVER_REASON}


def test_a_remount_capable_change_is_a_remount_of_only_that_option():
    opts = {"vers": 4.1, "nconnect": 1, "rsize": 65536, "wsize": 65536, "atime": False}
    w = wanted(opts=opts)
    plan = mount_plan.plan(views(fstab=FSTAB + entry("vers=4.1,nconnect=1,rsize=65536,wsize=65536,noatime"),
                                 mounted=[mount_line()]), w)
    assert plan.needs_holders is False and plan.action == "remount"
    assert mount_plan.remount_argv(w, plan) == ["mount", "-o", "remount,noatime", PATH]


def test_nconnect_shared_with_another_mount_of_the_server_stays_pending_without_an_unmount():
    opts = {"vers": 4.1, "nconnect": 4, "rsize": 65536, "wsize": 65536}
    plan = mount_plan.plan(views(fstab=FSTAB + entry("vers=4.1,nconnect=4,rsize=65536,wsize=65536"),
                                 mounted=[mount_line(), mount_line("/mnt/scratch", number=41)]), wanted(opts=opts))
    assert plan.needs_holders is False and plan.action is None
    assert plan.same_server_mounts == [{"mount_point": "/mnt/scratch", "source": "10.0.0.1:/srv/nfs", "vers": "4.1",
                                        "nconnect": "1", "shares_client": True}]
    assert [item["name"] for item in plan.pending] == ["nconnect"]
    assert "/mnt/scratch (nconnect=1) share the client of 10.0.0.1" in plan.pending[0]["reason"]


def test_sizes_the_server_capped_count_as_applied_only_for_a_mount_newer_than_the_fstab():
    opts = {"vers": 4.1, "nconnect": 1, "rsize": 1048576, "wsize": 1048576}
    fstab = FSTAB + entry("vers=4.1,nconnect=1,rsize=1048576,wsize=1048576")
    # Mounted 60 s ago, fstab written an hour ago: 65536 was the server's answer.
    newer = mount_plan.plan(views(fstab=fstab, mounted=[mount_line()], age=60), wanted(opts=opts))
    assert newer.action is None and newer.live_drift == {}
    assert [item["name"] for item in newer.negotiated] == ["rsize", "wsize"]
    assert "caps wsize at 65536" in newer.warnings[1]
    # Mounted two hours ago, before the fstab change: a remount is due.
    older = mount_plan.plan(views(fstab=fstab, mounted=[mount_line()], age=7200, holders=[]), wanted(opts=opts))
    assert older.action == "umount+mount" and older.negotiated == []


def test_absent_removes_the_entry_and_leaves_a_busy_mount_mounted():
    plan = mount_plan.plan(views(fstab=FSTAB + entry(), mounted=[mount_line()], holders=[HOLDER]),
                           wanted(src=None, opts={}, state="absent"))
    assert plan.fstab_after == FSTAB and plan.fstab_drift == {"entry": {"wanted": None, "fstab": "10.0.0.1:/srv/nfs"}}
    assert plan.action is None
    assert plan.pending == [{"name": "mounted", "wanted": False, "live": True,
                             "reason": "mount is busy, nothing unmounted: pid 4242 (python3) cwd /mnt/nfs/run"}]


def test_present_leaves_the_live_mount_alone_and_reports_it_pending():
    plan = mount_plan.plan(views(mounted=[mount_line()]), wanted(state="present"))
    assert plan.needs_holders is False and plan.action is None and plan.fstab_after == FSTAB + entry()
    assert {item["reason"] for item in plan.pending} == {"state is present: the live mount is left alone"}


def test_a_foreign_entry_is_refused_unless_replace_foreign():
    fstab = FSTAB + "/dev/vdb %s ext4 defaults 0 2\n" % PATH
    with pytest.raises(mount_plan.PlanError, match="line 3 of /etc/fstab is a ext4 entry"):
        mount_plan.plan(views(fstab=fstab), wanted())
    assert mount_plan.plan(views(fstab=fstab), wanted(replace_foreign=True)).fstab_after == FSTAB + entry()


def test_a_non_nfs_mount_at_the_path_is_refused():
    mounts = parse_mountinfo(ROOT_LINE + mount_line(fstype="ext4", source="/dev/vdb", opts="rw"))
    with pytest.raises(mount_plan.PlanError, match="mounted with fstype ext4"):
        mount_plan.live_mount(mounts, PATH)


def test_two_entries_for_the_path_stop_at_the_view():
    with pytest.raises(mount_plan.PlanError, match="^fstab: 2 fstab entries"):
        mount_plan.fstab_view(FSTAB + entry() + entry(), NOW, PATH)


def test_verify_reports_the_nconnect_the_kernel_kept():
    w = wanted(opts={"vers": 4.1, "nconnect": 4})
    before = views(fstab=FSTAB + entry("vers=4.1,nconnect=4"), mounted=[mount_line()], holders=[])
    plan = mount_plan.plan(before, w)
    assert plan.action == "umount+mount"
    mounts = parse_mountinfo(ROOT_LINE + mount_line(number=50))
    found = mount_plan.verify(mount_plan.LiveView(mounts, mount_plan.live_mount(mounts, PATH)), w, plan,
                              "umount+mount", mount_plan.Notes())
    assert found.pending == [{"name": "nconnect", "wanted": "4", "live": "1",
                              "reason": "the kernel kept nconnect=1 (verified in mountinfo after umount+mount)"}]
    assert found.same_server_mounts == [] and found.warnings[0].startswith("/mnt/nfs: the kernel kept nconnect=1")


def test_verify_fails_when_mount_succeeded_but_nothing_is_mounted():
    plan = mount_plan.plan(views(), wanted())
    with pytest.raises(mount_plan.PlanError, match="is not mounted after mount returned success"):
        mount_plan.verify(mount_plan.LiveView([], None), wanted(), plan, "mount", mount_plan.Notes())


def test_check_mode_report_shows_the_state_as_found_and_the_change_in_the_diff():
    before = views(fstab=FSTAB + entry("vers=4.1,nconnect=1"), mounted=[mount_line()], holders=[])
    plan = mount_plan.plan(before, wanted())
    result = mount_plan.report(wanted(), before, plan, diff=True)
    assert result["changed"] is True and result["remounted"] == "none"
    assert result["fstab_options"] == result["fstab_options_before"] == {"vers": "4.1", "nconnect": "1"}
    assert result["live_options"]["wsize"] == "65536"
    # The entry lacks hard: the fstab side of that row is not wanted yet, though the mount is hard.
    assert {row["name"]: row["in_sync"] for row in result["settings"]} == {
        "src": True, "vers": True, "nconnect": False, "rsize": False, "wsize": False, "hard": False}
    assert "wsize=1048576" in result["diff"][1]["after"] and "wsize=65536" in result["diff"][1]["before"]


def test_real_run_report_merges_what_the_action_and_verify_found():
    before = views(fstab=FSTAB + entry(), mounted=[mount_line()], holders=[])
    plan = mount_plan.plan(before, wanted())
    action_notes = mount_plan.Notes()
    action_notes.add_pending(plan.live_drift, "umount failed, nothing changed live: target is busy")
    result = mount_plan.report(wanted(), before, plan, mount_plan.outcome({}, "none", before.live.live, [action_notes]))
    assert result["changed"] is True and result["remounted"] == "none"
    assert sorted(item["name"] for item in result["pending"]) == ["nconnect", "rsize", "wsize"]
    assert "backup_file" not in result and "diff" not in result
    assert result["fstab_options"] == {"vers": "4.1", "nconnect": "4", "rsize": "1048576", "wsize": "1048576", "hard": True}


def test_settings_rows_follow_the_one_in_sync_rule():
    w = wanted(opts={"vers": 4, "_netdev": True}, state="present")
    rows = mount_plan.settings_rows(w, {"vers": "4", "_netdev": True}, "10.0.0.1:/srv/nfs", {}, None)
    # state=present: the live side is not managed, so fstab alone decides.
    assert [(row["name"], row["in_sync"]) for row in rows] == [("src", True), ("vers", True), ("_netdev", True)]
    mounted = wanted(opts={"vers": 4, "_netdev": True})
    rows = mount_plan.settings_rows(mounted, {"vers": "4", "_netdev": True}, "10.0.0.1:/srv/nfs", {"vers": "4.1"},
                                    "10.0.0.1:/srv/nfs")
    # vers=4 asks for the highest 4.x; _netdev is never shown live (its row shows the default).
    assert [(row["name"], row["live"], row["in_sync"]) for row in rows] == [
        ("src", "10.0.0.1:/srv/nfs", True), ("vers", "4.1", True), ("_netdev", False, True)]
    rows = mount_plan.settings_rows(mounted, {"vers": "4", "_netdev": True}, "10.0.0.1:/srv/nfs", {}, None)
    assert [(row["name"], row["in_sync"]) for row in rows] == [("src", False), ("vers", False), ("_netdev", True)]
