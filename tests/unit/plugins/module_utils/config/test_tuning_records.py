"""client_tuning's rollback records, on the pure functions (the role walk is test_client_tuning_rollback.py)."""
from __future__ import annotations

import copy

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.config.tuning_records import (
    merge_options, records_rolled_back, records_with_new, rollback_base, wanted_mounts,
)

STAMP = "2025-03-02T09:30:00Z"
PROFILE = {"vers": "4.1", "nconnect": 4, "rsize": 1048576, "hard": True}
OLD = {"vers": "4.2", "hard": True, "atime": False, "_netdev": True}
RECORD = {"src": "10.0.0.1:/srv/nfs", "fstype": "nfs4", "opts": OLD, "recorded_at": "2025-03-01T08:00:00Z"}


def test_merge_options_later_layers_win_keep_the_first_order_and_null_drops():
    merged = merge_options({"vers": "4.1", "nconnect": 4, "hard": True}, {"nconnect": 8, "vers": None}, None, {"_netdev": True})
    assert merged == {"nconnect": 8, "hard": True, "_netdev": True}
    assert list(merged) == ["nconnect", "hard", "_netdev"]


def test_rollback_base_adds_nconnect_1_only_when_the_record_has_none():
    assert rollback_base(RECORD) == dict(OLD, nconnect=1)
    assert list(rollback_base(RECORD))[-1] == "nconnect"
    assert rollback_base(dict(RECORD, opts={"nconnect": "2"})) == {"nconnect": "2"}
    assert RECORD["opts"] == OLD


def test_wanted_mounts_merge_profile_overrides_and_own_opts_with_defaults():
    mounts = [{"src": "nfs1:/ckpt", "path": "/mnt/ckpt", "opts": {"_netdev": True, "rsize": None}},
              {"src": "nfs1:/other", "path": "/mnt/other", "fstype": "nfs", "state": "present", "opts": None}]
    wanted = wanted_mounts(mounts, PROFILE, {"nconnect": 8}, {"/mnt/ckpt": RECORD}, False, "mounted")
    assert wanted == [
        {"src": "nfs1:/ckpt", "path": "/mnt/ckpt", "fstype": "nfs4", "opts": {"vers": "4.1", "nconnect": 8, "hard": True, "_netdev": True},
         "state": "mounted", "restore_record": None},
        {"src": "nfs1:/other", "path": "/mnt/other", "fstype": "nfs", "opts": {"vers": "4.1", "nconnect": 8, "rsize": 1048576, "hard": True},
         "state": "present", "restore_record": None},
    ]


def test_wanted_mounts_of_a_rollback_use_the_record_in_place_of_the_profile():
    mounts = [{"src": "nfs1:/ckpt", "path": "/mnt/ckpt", "opts": {"_netdev": False}},
              {"src": "nfs1:/other", "path": "/mnt/other", "opts": {"hard": True}}]
    wanted = wanted_mounts(mounts, {}, {"timeo": 600, "vers": None}, {"/mnt/ckpt": RECORD}, True, "present")
    assert wanted[0]["opts"] == {"hard": True, "atime": False, "_netdev": False, "nconnect": 1, "timeo": 600}
    assert wanted[0]["restore_record"] == RECORD and wanted[0]["restore_record"] is not RECORD
    # No record: the mount's own opts only, no tuning option added.
    assert wanted[1]["opts"] == {"timeo": 600, "hard": True} and wanted[1]["restore_record"] is None
    assert [item["state"] for item in wanted] == ["present", "present"]


def preview(path, fstab_drift, before, src="10.0.0.1:/srv/nfs"):
    return {"item": {"src": src, "path": path, "fstype": "nfs4", "opts": PROFILE, "state": "mounted", "restore_record": None},
            "drift": {"fstab": fstab_drift, "live": {}}, "fstab_options_before": before, "changed": bool(fstab_drift)}


def test_records_with_new_records_a_mount_about_to_change_and_first_tuning_wins():
    records = {"/mnt/kept": dict(RECORD)}
    original = copy.deepcopy(records)
    result = records_with_new(records, [
        preview("/mnt/kept", {"nconnect": {"wanted": "4", "fstab": "1"}}, {"vers": "4.1"}),
        preview("/mnt/new", {"nconnect": {"wanted": "4", "fstab": None}}, OLD, src="10.0.0.2:/x"),
        preview("/mnt/same", {}, OLD),
        preview("/mnt/no-entry", {"entry": {"wanted": "present", "fstab": None}}, {}),
    ], STAMP)
    assert result == {"/mnt/kept": RECORD,
                      "/mnt/new": {"src": "10.0.0.2:/x", "fstype": "nfs4", "opts": OLD, "recorded_at": STAMP},
                      "/mnt/no-entry": {"src": "10.0.0.1:/srv/nfs", "fstype": "nfs4", "opts": {}, "recorded_at": STAMP}}
    assert list(result) == ["/mnt/kept", "/mnt/new", "/mnt/no-entry"]
    assert records == original


def test_records_with_new_replaces_a_record_marked_restored_in_place():
    records = {"/mnt/a": dict(RECORD, restored_at="2025-03-01T09:00:00Z"), "/mnt/b": RECORD}
    result = records_with_new(records, [preview("/mnt/a", {"nconnect": {}}, dict(OLD, nconnect="1"))], STAMP)
    assert list(result) == ["/mnt/a", "/mnt/b"]
    assert result["/mnt/a"] == {"src": "10.0.0.1:/srv/nfs", "fstype": "nfs4", "opts": dict(OLD, nconnect="1"), "recorded_at": STAMP}
    assert result["/mnt/b"] == RECORD


def done(path, record, pending=()):
    return {"item": {"path": path, "restore_record": record}, "pending": list(pending)}


def test_records_rolled_back_marks_finished_mounts_and_unmarks_busy_ones():
    records = {"/mnt/done": dict(RECORD), "/mnt/busy": dict(RECORD, restored_at="2025-03-01T09:00:00Z"),
               "/mnt/again": dict(RECORD, restored_at="2025-03-01T09:00:00Z"), "/mnt/untouched": dict(RECORD)}
    original = copy.deepcopy(records)
    result = records_rolled_back(records, [
        done("/mnt/done", RECORD),
        done("/mnt/busy", RECORD, [{"name": "nconnect", "wanted": "1", "live": "4", "reason": "busy"}]),
        done("/mnt/again", RECORD),
        # Not a rollback item (tuning profile, or no record): left as it is.
        done("/mnt/untouched", None),
    ], STAMP)
    assert result == {"/mnt/done": dict(RECORD, restored_at=STAMP), "/mnt/busy": RECORD,
                      "/mnt/again": dict(RECORD, restored_at="2025-03-01T09:00:00Z"), "/mnt/untouched": RECORD}
    assert list(result["/mnt/done"])[-1] == "restored_at"
    assert records == original


def test_records_rolled_back_needs_the_record_of_each_restored_mount():
    with pytest.raises(KeyError):
        records_rolled_back({}, [done("/mnt/done", RECORD)], STAMP)
