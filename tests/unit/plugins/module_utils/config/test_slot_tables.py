from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.config import mountinfo
from ansible_collections.ckptio.nfs.plugins.module_utils.config import settings
from ansible_collections.ckptio.nfs.plugins.module_utils.config import slot_tables

# Mounts as the lab's Debian 12 client shows them (kernel 6.1), one per NFS version.
MOUNTINFO = (
    "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
    "40 22 0:36 / /mnt/v41 rw,relatime shared:80 - nfs4 10.0.0.1:/srv/nfs "
    "rw,vers=4.1,rsize=65536,wsize=65536,namlen=255,hard,proto=tcp,nconnect=1,timeo=600,retrans=2,sec=sys,"
    "clientaddr=10.0.0.2,local_lock=none,addr=10.0.0.1\n"
    "41 22 0:37 / /mnt/v40 rw,relatime shared:81 - nfs4 10.0.0.3:/srv/nfs "
    "rw,vers=4.0,rsize=65536,wsize=65536,hard,proto=tcp,addr=10.0.0.3\n"
    "42 22 0:38 / /mnt/v3 rw,relatime shared:82 - nfs 10.0.0.4:/export "
    "rw,vers=3,rsize=65536,wsize=65536,hard,proto=tcp,mountproto=tcp,addr=10.0.0.4\n"
    "43 22 0:39 / /mnt/v3udp rw,relatime shared:83 - nfs 10.0.0.5:/export rw,vers=3,proto=udp,addr=10.0.0.5\n"
)


def nfs_mounts():
    return mountinfo.nfs_mounts(mountinfo.parse_mountinfo(MOUNTINFO))


def classify(changing):
    return slot_tables.classify_mounts(nfs_mounts(), set(changing), mountinfo.nfs_server_of, mountinfo.nfs_version_of)


@pytest.mark.parametrize("params, fragment", [
    ({"tcp_slot_table_entries": 1}, "tcp_slot_table_entries must be between 2 and 65536"),
    ({"tcp_max_slot_table_entries": 65537}, "tcp_max_slot_table_entries must be between 2 and 65536"),
    ({"udp_slot_table_entries": 0}, "udp_slot_table_entries must be between"),
    ({"nfs_max_session_slots": 0}, "nfs_max_session_slots must be between 1 and 1024"),
    ({"nfs_max_session_slots": 1025}, "nfs_max_session_slots must be between 1 and 1024"),
    ({"tcp_slot_table_entries": True}, "tcp_slot_table_entries must be an integer"),
    ({}, "needs at least one of"),
])
def test_validate_rejects(params, fragment):
    errors = slot_tables.validate(params)
    assert any(fragment in error for error in errors), errors


@pytest.mark.parametrize("params", [
    {"tcp_slot_table_entries": 2, "tcp_max_slot_table_entries": 65536},
    {"nfs_max_session_slots": 1},
    {"nfs_max_session_slots": 1024},
    {"state": "absent"},
])
def test_validate_accepts_the_edges(params):
    assert slot_tables.validate(params) == []


def test_cap_below_initial_is_warned():
    assert slot_tables.cap_warnings({"tcp_slot_table_entries": 256, "tcp_max_slot_table_entries": 128})
    assert slot_tables.cap_warnings({"tcp_slot_table_entries": 128, "tcp_max_slot_table_entries": 128}) == []


def test_parameters_by_module():
    assert slot_tables.parameters_by_module({"tcp_max_slot_table_entries": 128, "nfs_max_session_slots": 32, "udp_slot_table_entries": None}) == {
        "sunrpc": {"tcp_max_slot_table_entries": 128}, "nfs": {"max_session_slots": 32}}


def test_tcp_cap_change_leaves_v3_and_v40_pending_and_flags_v41_as_session_mount():
    pending, sessions = classify({"tcp_max_slot_table_entries"})
    assert [(row["mount_point"], row["server"], row["vers"]) for row in pending] == [
        ("/mnt/v40", "10.0.0.3", "4.0"), ("/mnt/v3", "10.0.0.4", "3")]
    assert "tcp_max_slot_table_entries" in pending[0]["reason"] and "10.0.0.3" in pending[0]["reason"]
    assert [(row["mount_point"], row["vers"]) for row in sessions] == [("/mnt/v41", "4.1")]
    assert "nfs_max_session_slots" in sessions[0]["reason"]


def test_udp_mount_is_pending_only_for_the_udp_table():
    pending, _sessions = classify({"udp_slot_table_entries"})
    assert [row["mount_point"] for row in pending] == ["/mnt/v3udp"]


def test_session_slot_change_leaves_v41_pending():
    pending, _sessions = classify({"nfs_max_session_slots"})
    assert [row["mount_point"] for row in pending] == ["/mnt/v41"]
    assert "session" in pending[0]["reason"]


def test_nothing_changing_nothing_pending():
    assert classify(set())[0] == []


def test_nfs4_without_minor_version_is_flagged_as_uncertain():
    mount = mountinfo.parse_mountinfo("50 22 0:40 / /mnt/v4 rw - nfs4 srv:/x rw,proto=tcp\n")[0]
    pending, sessions = slot_tables.classify_mounts([mount], {"tcp_max_slot_table_entries"}, mountinfo.nfs_server_of, mountinfo.nfs_version_of)
    assert sessions == [] and "minor version" in pending[0]["reason"]


def test_settings_rows_and_in_sync():
    rows = slot_tables.settings_rows({"tcp_max_slot_table_entries": 128, "nfs_max_session_slots": 64},
                                     {"tcp_max_slot_table_entries": 128}, {"tcp_max_slot_table_entries": 128, "nfs_max_session_slots": 64})
    assert rows == [
        {"name": "tcp_max_slot_table_entries", "wanted": 128, "persisted": 128, "live": 128, "in_sync": True},
        {"name": "nfs_max_session_slots", "wanted": 64, "persisted": None, "live": 64, "in_sync": False},
    ]
    assert settings.in_sync(64, None, 64, check_persisted=False)


def test_rows_of_options_whose_module_is_not_loaded_follow_the_persisted_value():
    rows = slot_tables.settings_rows({"tcp_max_slot_table_entries": 128, "nfs_max_session_slots": 64},
                                     {"tcp_max_slot_table_entries": 128, "nfs_max_session_slots": 32}, {},
                                     not_loaded=["tcp_max_slot_table_entries", "nfs_max_session_slots"])
    assert [(row["live"], row["in_sync"]) for row in rows] == [(None, True), (None, False)]
    # Not loaded and not persisted: the wanted value is nowhere, even with persist off.
    assert not settings.in_sync(128, None, None, check_persisted=False, live_applicable=False)


def test_absent_compares_nothing_persisted_as_the_kernel_default():
    wanted = {"tcp_slot_table_entries": 2, "udp_slot_table_entries": 16}
    rows = slot_tables.settings_rows(wanted, {"udp_slot_table_entries": 64}, {"tcp_slot_table_entries": 2, "udp_slot_table_entries": 16},
                                     unset_is_default=True)
    assert [(row["persisted"], row["in_sync"]) for row in rows] == [(None, True), (64, False)]
    assert slot_tables.settings_rows(wanted, {}, dict(wanted))[0]["in_sync"] is False
