"""slot_table_plan driven directly on views: the files, the live writes and the report.

Live values are the lab's Debian 12 guest (kernel 6.1): tcp 2 / 65536, udp 16, 64 session slots.
"""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.config import slot_table_plan
from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import nfs_mounts, parse_mountinfo

GUEST = {"tcp_slot_table_entries": 2, "tcp_max_slot_table_entries": 65536, "udp_slot_table_entries": 16, "nfs_max_session_slots": 64}
LOADED = {"sunrpc": True, "nfs": True}
OWN = "/etc/modprobe.d/ckptio-nfs.conf"
LOAD = "/etc/modules-load.d/ckptio-nfs.conf"
V3_MOUNT = "42 22 0:38 / /mnt/v3 rw,relatime shared:82 - nfs 10.0.0.4:/export rw,vers=3,hard,proto=tcp,addr=10.0.0.4\n"


def request(**extra):
    params = {"tcp_slot_table_entries": None, "tcp_max_slot_table_entries": None, "udp_slot_table_entries": None,
              "nfs_max_session_slots": None, "apply_live": True, "persist": True, "state": "present",
              "modprobe_conf": OWN, "modules_load_conf": LOAD, "backup": False, "force": False}
    params.update(extra)
    return slot_table_plan.Request.from_params(params)


def planned(req, modprobe_before=None, load_before=None, live=None, loaded=None, others=(), mounts=""):
    modprobe_after, load_after = slot_table_plan.plan_files(req, modprobe_before, load_before)
    own = [(OWN, modprobe_after)] if modprobe_after is not None else []
    views = slot_table_plan.Views(dict(live or GUEST), dict(loaded or LOADED), modprobe_before, load_before,
                                  files_after=list(others) + own,
                                  files_now=list(others) + ([(OWN, modprobe_before)] if modprobe_before else []),
                                  mounts=nfs_mounts(parse_mountinfo(mounts)))
    return views, slot_table_plan.plan(req, views, modprobe_after, load_after)


def test_present_writes_both_files_and_plans_one_live_write():
    req = request(tcp_max_slot_table_entries=128)
    views, plan = planned(req, mounts=V3_MOUNT)
    assert plan.edits[0].after == slot_table_plan.HEADER + "options sunrpc tcp_max_slot_table_entries=128\n"
    assert plan.edits[1].after == slot_table_plan.HEADER + "sunrpc\n"
    assert plan.wanted == {"tcp_max_slot_table_entries": 128}
    assert plan.live.steps == [("sunrpc", ["tcp_max_slot_table_entries"], False)]
    assert plan.live.unapplied == (dict(GUEST, tcp_max_slot_table_entries=128), False, "check mode: live values not written")
    assert [row["mount_point"] for row in plan.pending] == ["/mnt/v3"]
    # Told by the module only once something changed, not with the warnings told at once.
    assert plan.warnings == [] and plan.pending_warning == "1 NFS mount(s) keep the old slot table until remounted: see mounts_pending_remount"
    result = slot_table_plan.report(req, views, plan, diff=True)
    # Check mode: the rows show the state as found, the diff what a real run writes.
    assert result["settings"] == [{"name": "tcp_max_slot_table_entries", "wanted": 128, "persisted": None, "live": 65536,
                                   "in_sync": False}]
    assert [entry["before_header"] for entry in result["diff"]] == [OWN, LOAD, "live: sunrpc/nfs slot tables"]


def test_a_module_that_is_not_loaded_is_loaded_first_and_check_mode_says_so():
    req = request(nfs_max_session_slots=128)
    _views, plan = planned(req, loaded={"sunrpc": True, "nfs": False})
    assert plan.live.steps == [("nfs", ["nfs_max_session_slots"], True)]
    assert plan.live.unapplied.reason == "check mode: nfs is not loaded; would run 'modprobe nfs'"


def test_absent_rolls_back_to_what_other_files_persist_or_the_kernel_default():
    req = request(state="absent")
    site = ("/etc/modprobe.d/site.conf", "options sunrpc udp_slot_table_entries=32\n")
    own = slot_table_plan.HEADER + "options sunrpc tcp_max_slot_table_entries=128 udp_slot_table_entries=64\n"
    _views, plan = planned(req, modprobe_before=own, load_before=slot_table_plan.HEADER + "sunrpc\n", others=[site])
    assert [edit.after for edit in plan.edits] == [None, None]
    assert plan.wanted == {"tcp_slot_table_entries": 2, "tcp_max_slot_table_entries": 65536, "udp_slot_table_entries": 32,
                           "nfs_max_session_slots": 64}


def test_absent_refuses_a_file_it_did_not_write_unless_force():
    site = "options sunrpc tcp_max_slot_table_entries=128\n"
    with pytest.raises(slot_table_plan.PlanError, match="^modprobe_conf: .* was not written by this module"):
        slot_table_plan.plan_files(request(state="absent"), site, None)
    assert slot_table_plan.plan_files(request(state="absent", force=True), site, None) == (None, None)


def test_verified_live_names_what_the_kernel_kept():
    req = request(tcp_max_slot_table_entries=128)
    result = slot_table_plan.verified_live(req, {"tcp_max_slot_table_entries": 128}, GUEST, [])
    assert result == (GUEST, False, "kernel kept other values: tcp_max_slot_table_entries is 65536, wanted 128")
