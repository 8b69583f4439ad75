"""The client_tuning role's filters, called directly (the role walk is test_client_tuning_rollback.py)."""
from __future__ import annotations

import base64
import datetime
import json

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.plugin_utils import client_tuning
from ansible_collections.ckptio.nfs.plugins.plugin_utils.client_tuning import STEPS

FILTERS = STEPS
NOW = datetime.datetime(2025, 3, 2, 9, 30, 0, tzinfo=datetime.timezone.utc)
STAMP = "2025-03-02T09:30:00Z"
STATE_FILE = "/var/lib/ckptio/client_tuning-mounts.json"


def test_filters_exposed():
    assert sorted(FILTERS) == ["client_tuning_drain_needed", "client_tuning_records", "client_tuning_records_rolled_back",
                               "client_tuning_report", "client_tuning_state_records", "client_tuning_wanted_mounts"]


def test_utc_stamp_is_the_state_file_format():
    assert client_tuning.utc_stamp(NOW) == STAMP
    local = datetime.datetime(2025, 3, 2, 11, 30, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    assert client_tuning.utc_stamp(local) == STAMP
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    taken = datetime.datetime.strptime(client_tuning.utc_stamp(), client_tuning.STAMP_FORMAT).replace(tzinfo=datetime.timezone.utc)
    assert before <= taken <= datetime.datetime.now(datetime.timezone.utc)


# ---- client_tuning_state_records -------------------------------------------------------------
def slurped(text):
    return {"content": base64.b64encode(text.encode()).decode(), "encoding": "base64", "source": STATE_FILE}


def test_state_records_read_the_file_in_its_order_and_a_skipped_read_is_no_records():
    records = FILTERS["client_tuning_state_records"](slurped('{"/mnt/b": {"opts": {"vers": "4.2"}}, "/mnt/a": {"opts": {}}}'))
    assert records == {"/mnt/b": {"opts": {"vers": "4.2"}}, "/mnt/a": {"opts": {}}}
    assert list(records) == ["/mnt/b", "/mnt/a"]
    # What ansible.builtin.slurp registers when its `when` is false (no state file).
    assert FILTERS["client_tuning_state_records"]({"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}) == {}
    # Shapes are not judged here: the role's next task refuses what holds no mount records.
    assert FILTERS["client_tuning_state_records"](slurped("[]")) == []


@pytest.mark.parametrize("text", ["", "{not json", '{"/mnt/nfs": {}} trailing', '{"a": {"__ansible_unsafe": "x"}}'])
def test_a_state_file_that_is_not_json_fails_naming_it(text):
    with pytest.raises(AnsibleFilterError, match=r"client_tuning_state_file: %s is not JSON .*fix or remove it" % STATE_FILE):
        FILTERS["client_tuning_state_records"](slurped(text))


# ---- client_tuning_wanted_mounts / client_tuning_records / client_tuning_records_rolled_back ---
CHECKPOINT = {"sunrpc_state": "present", "recorded_mounts": "record", "mount_options": {"vers": "4.1", "nconnect": 4}}
DISTRO_DEFAULT = {"sunrpc_state": "absent", "recorded_mounts": "restore", "mount_options": {}}
RECORD = {"src": "10.0.0.1:/srv/nfs", "fstype": "nfs4", "opts": {"vers": "4.2", "hard": True}, "recorded_at": "2025-03-01T08:00:00Z"}
MOUNTS = [{"src": "10.0.0.1:/srv/nfs", "path": "/mnt/nfs", "opts": {"_netdev": True}}]


def test_wanted_mounts_use_the_record_only_for_a_restore_profile():
    wanted = FILTERS["client_tuning_wanted_mounts"]
    tuned = wanted(MOUNTS, CHECKPOINT, {}, {"/mnt/nfs": RECORD}, "mounted")
    assert tuned[0]["opts"] == {"vers": "4.1", "nconnect": 4, "_netdev": True} and tuned[0]["restore_record"] is None
    rolled = wanted(MOUNTS, DISTRO_DEFAULT, {}, {"/mnt/nfs": RECORD}, "mounted")
    assert rolled[0]["opts"] == {"vers": "4.2", "hard": True, "nconnect": 1, "_netdev": True}
    assert rolled[0]["restore_record"] == RECORD


@pytest.mark.parametrize("args, message", [
    (("nfs1:/x", CHECKPOINT, {}, {}, "mounted"), "client_tuning_mounts must be a list"),
    ((MOUNTS, CHECKPOINT, ["nconnect=4"], {}, "mounted"), "client_tuning_mount_options must be a mapping"),
    ((MOUNTS, CHECKPOINT, {}, [], "mounted"), "the records must be a mapping"),
])
def test_wanted_mounts_refuse_what_is_not_the_role_s_data(args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        FILTERS["client_tuning_wanted_mounts"](*args)


def preview(path, fstab_drift):
    return {"item": {"src": "10.0.0.1:/srv/nfs", "path": path, "fstype": "nfs4", "opts": {}, "state": "mounted", "restore_record": None},
            "drift": {"fstab": fstab_drift, "live": {}}, "fstab_options_before": {"vers": "4.2"}}


def test_records_add_one_only_when_the_profile_records():
    registered = {"changed": True, "results": [preview("/mnt/nfs", {"nconnect": {"wanted": "4", "fstab": None}})]}
    records = FILTERS["client_tuning_records"]({}, registered, CHECKPOINT, now=NOW)
    assert records == {"/mnt/nfs": {"src": "10.0.0.1:/srv/nfs", "fstype": "nfs4", "opts": {"vers": "4.2"}, "recorded_at": STAMP}}
    assert FILTERS["client_tuning_records"]({"/x": RECORD}, registered, DISTRO_DEFAULT, now=NOW) == {"/x": RECORD}
    # An empty loop registers no results list item.
    assert FILTERS["client_tuning_records"]({}, {"results": [], "skipped": True}, CHECKPOINT, now=NOW) == {}
    with pytest.raises(AnsibleFilterError, match="registered loop result"):
        FILTERS["client_tuning_records"]({}, "not a result", CHECKPOINT)


def test_records_rolled_back_take_the_stamp_once_from_now():
    registered = {"results": [{"item": {"path": "/mnt/nfs", "restore_record": RECORD}, "pending": []}]}
    assert FILTERS["client_tuning_records_rolled_back"]({"/mnt/nfs": RECORD}, registered, now=NOW) == {
        "/mnt/nfs": dict(RECORD, restored_at=STAMP)}


# ---- client_tuning_drain_needed --------------------------------------------------------------
def previewed(state="mounted", live_options=None, live_drift=None, remounted="none"):
    return {"item": {"path": "/mnt/nfs", "state": state}, "remounted": remounted,
            "live_options": {"nconnect": "4"} if live_options is None else live_options,
            "drift": {"fstab": {}, "live": {"nconnect": {"wanted": "8", "live": "4"}} if live_drift is None else live_drift}}


@pytest.mark.parametrize("result, hooks, policy, needed", [
    (previewed(), True, "when_idle", True),
    (previewed(), False, "when_idle", False),
    (previewed(), True, "never", False),
    # Nothing live differs, or the mount is not mounted (present: fstab only), or not mounted now.
    (previewed(live_drift={}), True, "when_idle", False),
    (previewed(state="present"), True, "when_idle", False),
    (previewed(live_options={}), True, "when_idle", False),
    # A result that says it unmounts (outside check mode) drains whatever the drift says.
    (previewed(live_drift={}, remounted="umount"), True, "when_idle", True),
    (previewed(live_drift={}, remounted="umount+mount"), True, "when_idle", True),
    (previewed(live_drift={}, remounted="mount"), True, "when_idle", False),
])
def test_drain_needed_only_when_a_mounted_mount_would_be_unmounted(result, hooks, policy, needed):
    assert FILTERS["client_tuning_drain_needed"]({"results": [result]}, hooks, policy) is needed


def test_no_mount_no_drain():
    assert FILTERS["client_tuning_drain_needed"]({"results": [], "skipped": True}, True, "when_idle") is False


# ---- client_tuning_report --------------------------------------------------------------------
SUNRPC_WANTED = {"tcp_slot_table_entries": 128, "tcp_max_slot_table_entries": 128, "nfs_max_session_slots": 160}
SUNRPC_RESULT = {
    "changed": True,
    "live_applied": True,
    "live_not_applied_reason": "",
    "settings": [
        {"name": "tcp_slot_table_entries", "wanted": 128, "persisted": 128, "live": 128, "in_sync": True},
        {"name": "tcp_max_slot_table_entries", "wanted": 128, "persisted": 128, "live": 128, "in_sync": True},
        {"name": "nfs_max_session_slots", "wanted": 160, "persisted": 160, "live": 160, "in_sync": True},
    ],
    "mounts_pending_remount": [
        {"mount_point": "/mnt/checkpoints", "server": "10.0.0.1", "vers": "4.1",
         "reason": "its NFSv4.1 session was created with 64 slots"},
        {"mount_point": "/mnt/scratch", "server": "10.0.0.2", "vers": "3",
         "reason": "its RPC transport was created with the old slot table"},
    ],
    "warnings": ["2 NFS mount(s) keep the old slot table until remounted: see mounts_pending_remount"],
}
CHECKPOINTS_ITEM = {"src": "10.0.0.1:/srv/nfs", "path": "/mnt/checkpoints", "fstype": "nfs4",
                    "opts": {"vers": "4.1", "nconnect": 4, "rsize": 1048576, "wsize": 1048576, "hard": True},
                    "state": "mounted", "restore_record": None}
SCRATCH_ITEM = {"src": "10.0.0.2:/scratch", "path": "/mnt/scratch", "fstype": "nfs", "opts": {"vers": 3, "nconnect": 4},
                "state": "mounted", "restore_record": None}
MOUNT_RESULT = {"changed": True, "results": [
    {"changed": True, "item": CHECKPOINTS_ITEM, "remounted": "umount+mount", "same_server_mounts": [],
     "pending": [], "holders": [],
     "negotiated": [{"name": "wsize", "wanted": "1048576", "live": "262144",
                     "reason": "the server caps wsize at 262144 (its max_block_size)"}],
     "settings": [{"name": "src", "wanted": "10.0.0.1:/srv/nfs", "persisted": "10.0.0.1:/srv/nfs",
                   "live": "10.0.0.1:/srv/nfs", "in_sync": True},
                  {"name": "nconnect", "wanted": "4", "persisted": "4", "live": "4", "in_sync": True}],
     "warnings": []},
    {"changed": True, "item": SCRATCH_ITEM, "remounted": "none", "same_server_mounts": [],
     "pending": [{"name": "nconnect", "wanted": "4", "live": "1",
                  "reason": "mount is busy, nothing unmounted: pid 4242 (python3) cwd /mnt/scratch"}],
     "holders": [{"pid": 4242, "command": "python3", "how": "cwd /mnt/scratch"}],
     "negotiated": [],
     "settings": [{"name": "nconnect", "wanted": "4", "persisted": "4", "live": "1", "in_sync": False}],
     "warnings": ["/mnt/scratch: vers=3 ignores session slots"]},
]}
# A rollback run: one mount back to its record, one still busy.
RECORD = {"src": "10.0.0.1:/srv/nfs", "fstype": "nfs4", "opts": {"vers": "4.2", "hard": True, "_netdev": True},
          "recorded_at": "2025-03-01T08:00:00Z"}
OTHER_RECORD = {"src": "10.0.0.1:/srv/other", "fstype": "nfs4", "opts": {}, "recorded_at": "2025-03-01T08:00:01Z"}
ROLLBACK_RESULT = {"changed": True, "results": [
    {"changed": True, "item": dict(CHECKPOINTS_ITEM, opts={"vers": "4.2", "hard": True, "_netdev": True, "nconnect": 1},
                                   restore_record=RECORD),
     "remounted": "umount+mount", "same_server_mounts": [], "pending": [], "holders": [], "negotiated": [],
     "settings": [{"name": "nconnect", "wanted": "1", "persisted": "1", "live": "1", "in_sync": True}], "warnings": []},
    {"changed": True, "item": {"src": "10.0.0.1:/srv/other", "path": "/mnt/other", "fstype": "nfs4", "opts": {"nconnect": 1},
                               "state": "mounted", "restore_record": OTHER_RECORD},
     "remounted": "none", "same_server_mounts": [{"mount_point": "/mnt/checkpoints"}],
     "pending": [{"name": "nconnect", "wanted": "1", "live": "4", "reason": "mount is busy, nothing unmounted: pid 7 (dd) open fd 3 /mnt/other/x"}],
     "holders": [{"pid": 7, "command": "dd", "how": "open fd 3 /mnt/other/x"}], "negotiated": [],
     "settings": [{"name": "nconnect", "wanted": "1", "persisted": "1", "live": "4", "in_sync": False}], "warnings": []},
]}
ROLLED_BACK = {"/mnt/checkpoints": dict(RECORD, restored_at="2025-03-02T09:30:00Z"), "/mnt/other": OTHER_RECORD}


def report(mount_result, sunrpc_result, sunrpc_wanted, profile="checkpoint", sunrpc_state="present", records=None,
           apply_live=True, check_mode=False):
    return FILTERS["client_tuning_report"](mount_result, sunrpc_result, sunrpc_wanted, profile, {"sunrpc_state": sunrpc_state},
                                           records or {}, STATE_FILE, apply_live, check_mode)


# The report as the role's template (roles/client_tuning/templates/report.json.j2, before the
# filter) rendered it for the same input: keys, order and every line. The playbooks' final play,
# audit.yml and molecule read these.
TUNE_REPORT = {
    "role": "client_tuning", "profile": "checkpoint", "check_mode": False,
    "changed": ["sunrpc/nfs slots: tcp_slot_table_entries=128, tcp_max_slot_table_entries=128, nfs_max_session_slots=160",
                "mount /mnt/checkpoints (live: umount+mount)",
                "mount /mnt/scratch (fstab)"],
    # /mnt/checkpoints was mounted afresh, alone on its server: it has the new slots.
    "pending": ["remount /mnt/scratch (10.0.0.2, vers 3) for new slot values: its RPC transport was created with the old slot table",
                "/mnt/scratch: nconnect=4 (live 1) pending: mount is busy, nothing unmounted: pid 4242 (python3) cwd /mnt/scratch",
                "/mnt/scratch: held by pid 4242 (python3): cwd /mnt/scratch"],
    "warnings": ["2 NFS mount(s) keep the old slot table until remounted: see mounts_pending_remount",
                 "/mnt/checkpoints: wsize negotiated to 262144: the server caps wsize at 262144 (its max_block_size)",
                 "/mnt/scratch: vers=3 ignores session slots"],
    "settings": [
        {"name": "tcp_slot_table_entries", "wanted": 128, "persisted": 128, "live": 128, "in_sync": True, "scope": "client"},
        {"name": "tcp_max_slot_table_entries", "wanted": 128, "persisted": 128, "live": 128, "in_sync": True, "scope": "client"},
        {"name": "nfs_max_session_slots", "wanted": 160, "persisted": 160, "live": 160, "in_sync": True, "scope": "client"},
        {"name": "src", "wanted": "10.0.0.1:/srv/nfs", "persisted": "10.0.0.1:/srv/nfs", "live": "10.0.0.1:/srv/nfs", "in_sync": True,
         "scope": "/mnt/checkpoints"},
        {"name": "nconnect", "wanted": "4", "persisted": "4", "live": "4", "in_sync": True, "scope": "/mnt/checkpoints"},
        {"name": "nconnect", "wanted": "4", "persisted": "4", "live": "1", "in_sync": False, "scope": "/mnt/scratch"},
    ],
    "restored": [],
}
ROLLBACK_REPORT = {
    "role": "client_tuning", "profile": "distro_default", "check_mode": False,
    "changed": ["sunrpc/nfs slots: persisted ckptio values removed, live set to tcp_slot_table_entries=2, nfs_max_session_slots=64",
                "mount /mnt/checkpoints (live: umount+mount)",
                "mount /mnt/other (fstab)",
                'mount /mnt/checkpoints: back to its options from before tuning (recorded 2025-03-01T08:00:00Z): '
                '{"vers": "4.2", "hard": true, "_netdev": true, "nconnect": 1}; record marked restored in ' + STATE_FILE],
    "pending": ["sunrpc/nfs live values not applied: nfs is not loaded; the values apply when it loads",
                "/mnt/other: nconnect=1 (live 4) pending: mount is busy, nothing unmounted: pid 7 (dd) open fd 3 /mnt/other/x",
                "/mnt/other: held by pid 7 (dd): open fd 3 /mnt/other/x",
                "/mnt/other: not fully back to its options from before tuning (see its pending entries); the record stays "
                "unmarked in %s for the next rollback run" % STATE_FILE],
    "warnings": [],
    "settings": [
        {"name": "tcp_slot_table_entries", "wanted": 128, "persisted": 128, "live": 128, "in_sync": True, "scope": "client"},
        {"name": "tcp_max_slot_table_entries", "wanted": 128, "persisted": 128, "live": 128, "in_sync": True, "scope": "client"},
        {"name": "nfs_max_session_slots", "wanted": 160, "persisted": 160, "live": 160, "in_sync": True, "scope": "client"},
        {"name": "nconnect", "wanted": "1", "persisted": "1", "live": "1", "in_sync": True, "scope": "/mnt/checkpoints"},
        {"name": "nconnect", "wanted": "1", "persisted": "1", "live": "4", "in_sync": False, "scope": "/mnt/other"},
    ],
    "restored": [
        {"path": "/mnt/checkpoints", "recorded_at": "2025-03-01T08:00:00Z", "recorded_opts": {"vers": "4.2", "hard": True, "_netdev": True},
         "opts": {"vers": "4.2", "hard": True, "_netdev": True, "nconnect": 1}, "restored_at": "2025-03-02T09:30:00Z"},
        {"path": "/mnt/other", "recorded_at": "2025-03-01T08:00:01Z", "recorded_opts": {}, "opts": {"nconnect": 1}, "restored_at": None},
    ],
}


def test_report_of_a_tuning_run_keeps_its_shape():
    result = report(MOUNT_RESULT, SUNRPC_RESULT, SUNRPC_WANTED)
    assert result == TUNE_REPORT
    assert list(result) == ["role", "profile", "check_mode", "changed", "pending", "warnings", "settings", "restored"]
    assert list(result["settings"][0]) == ["name", "wanted", "persisted", "live", "in_sync", "scope"]
    # JSON through and through: the playbooks write it to files as it is.
    assert json.loads(json.dumps(result)) == result


def test_report_of_a_rollback_run_keeps_its_shape():
    sunrpc = dict(SUNRPC_RESULT, live_applied=False, live_not_applied_reason="nfs is not loaded; the values apply when it loads",
                  mounts_pending_remount=[], warnings=[])
    result = report(ROLLBACK_RESULT, sunrpc, {"tcp_slot_table_entries": 2, "nfs_max_session_slots": 64}, profile="distro_default",
                    sunrpc_state="absent", records=ROLLED_BACK)
    assert result == ROLLBACK_REPORT
    assert list(result["restored"][0]) == ["path", "recorded_at", "recorded_opts", "opts", "restored_at"]


def test_a_second_rollback_reports_the_restore_without_claiming_a_change():
    marked = dict(RECORD, restored_at="2025-03-02T09:30:00Z")
    result_item = dict(ROLLBACK_RESULT["results"][0], changed=False, remounted="none",
                       item=dict(ROLLBACK_RESULT["results"][0]["item"], restore_record=marked))
    result = report({"results": [result_item]}, {"skipped": True, "changed": False}, {}, profile="distro_default",
                    records={"/mnt/checkpoints": marked})
    assert result["changed"] == [] and result["pending"] == []
    assert [(item["path"], item["restored_at"]) for item in result["restored"]] == [("/mnt/checkpoints", "2025-03-02T09:30:00Z")]


@pytest.mark.parametrize("sunrpc", [{}, {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}])
def test_report_without_a_slot_table_run_lists_the_mounts_only(sunrpc):
    result = report(MOUNT_RESULT, sunrpc, {})
    assert result["changed"] == TUNE_REPORT["changed"][1:]
    assert [row["scope"] for row in result["settings"]] == ["/mnt/checkpoints", "/mnt/checkpoints", "/mnt/scratch"]
    assert not any(line.startswith("remount ") for line in result["pending"])


def test_report_live_values_not_applied_are_pending_only_when_applying_live():
    sunrpc = dict(SUNRPC_RESULT, live_applied=False, live_not_applied_reason="check mode")
    assert "sunrpc/nfs live values not applied: check mode" in report(MOUNT_RESULT, sunrpc, SUNRPC_WANTED)["pending"]
    assert not any("not applied" in line for line in report(MOUNT_RESULT, sunrpc, SUNRPC_WANTED, apply_live=False)["pending"])


def test_report_a_fresh_mount_sharing_its_server_still_waits_for_new_slots():
    shared = dict(MOUNT_RESULT["results"][0], same_server_mounts=[{"mount_point": "/mnt/other", "shares_client": True}])
    result = report({"results": [shared]}, SUNRPC_RESULT, SUNRPC_WANTED)
    assert result["pending"][0].startswith("remount /mnt/checkpoints (10.0.0.1, vers 4.1) for new slot values: ")


def test_report_a_failed_mount_is_pending_with_its_message():
    failed = {"failed": True, "msg": "mount point /mnt/x does not exist", "item": dict(SCRATCH_ITEM, path="/mnt/x")}
    result = report({"results": [failed]}, {}, {}, check_mode=True)
    assert result["pending"] == ["/mnt/x: failed: mount point /mnt/x does not exist"]
    assert result["changed"] == [] and result["check_mode"] is True
