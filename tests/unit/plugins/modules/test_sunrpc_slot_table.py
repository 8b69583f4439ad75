from __future__ import annotations

import os
import shutil

import pytest

from ansible.module_utils import basic

from ansible_collections.ckptio.nfs.plugins.modules import sunrpc_slot_table as module
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module, tree_checksums

# Live values of the lab's Debian 12 guest (kernel 6.1), lab.md "Guest facts".
GUEST_SUNRPC = {"tcp_slot_table_entries": "2", "tcp_max_slot_table_entries": "65536", "udp_slot_table_entries": "16",
                "min_resvport": "665", "max_resvport": "1023", "transports": "tcp"}
MOUNTINFO = (
    "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
    "40 22 0:36 / /mnt/nfs rw,relatime shared:80 - nfs4 10.0.0.1:/srv/nfs "
    "rw,vers=4.1,rsize=65536,wsize=65536,namlen=255,hard,proto=tcp,nconnect=1,timeo=600,retrans=2,sec=sys,"
    "clientaddr=10.0.0.2,local_lock=none,addr=10.0.0.1\n"
    "41 22 0:37 / /mnt/old rw,relatime shared:81 - nfs4 10.0.0.3:/srv/nfs rw,vers=4.0,hard,proto=tcp,addr=10.0.0.3\n"
    "42 22 0:38 / /mnt/v3 rw,relatime shared:82 - nfs 10.0.0.4:/export rw,vers=3,hard,proto=tcp,addr=10.0.0.4\n"
)
# A hand-kept file somebody else owns, in the same directory.
SITE_CONF = "# site\noptions\tlockd nlm_timeout=10\n\nblacklist floppy"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def read(path):
    with open(path) as handle:
        return handle.read()


@pytest.fixture
def tree(fake_root, monkeypatch):
    root = fake_root.root
    for name, value in GUEST_SUNRPC.items():
        write(str(root / "proc/sys/sunrpc" / name), value + "\n")
        write(str(root / "sys/module/sunrpc/parameters" / name), value + "\n")
    write(str(root / "sys/module/nfs/parameters/max_session_slots"), "64\n")
    write(str(root / "proc/self/mountinfo"), MOUNTINFO)
    write(str(root / "etc/modprobe.d/site.conf"), SITE_CONF)
    os.makedirs(str(root / "etc/modules-load.d"))

    def no_commands(self, argv, **kwargs):
        # backup_local asks lsattr for file attributes; anything that could touch the kernel fails the test.
        if os.path.basename(argv[0]) == "lsattr":
            return 1, "", "lsattr not run in unit tests"
        pytest.fail("unexpected command: %r" % (argv,))
    monkeypatch.setattr(basic.AnsibleModule, "run_command", no_commands)
    return root


def args(root, **extra):
    base = {"modprobe_conf": str(root / "etc/modprobe.d/ckptio-nfs.conf"),
            "modules_load_conf": str(root / "etc/modules-load.d/ckptio-nfs.conf")}
    base.update(extra)
    return base


def test_apply_and_persist_then_second_run_is_unchanged(tree):
    result = run_module(module, args(tree, tcp_slot_table_entries=128, tcp_max_slot_table_entries=128, nfs_max_session_slots=128))
    assert result["changed"] is True
    assert result["live_before"]["tcp_max_slot_table_entries"] == 65536
    assert result["live_after"] == {"tcp_slot_table_entries": 128, "tcp_max_slot_table_entries": 128,
                                    "udp_slot_table_entries": 16, "nfs_max_session_slots": 128}
    assert result["live_applied"] is True and result["live_not_applied_reason"] == ""
    assert read(str(tree / "proc/sys/sunrpc/tcp_max_slot_table_entries")) == "128\n"
    assert read(str(tree / "sys/module/nfs/parameters/max_session_slots")) == "128\n"
    conf = read(str(tree / "etc/modprobe.d/ckptio-nfs.conf"))
    assert "options sunrpc tcp_slot_table_entries=128 tcp_max_slot_table_entries=128\n" in conf
    assert "options nfs max_session_slots=128\n" in conf
    assert read(str(tree / "etc/modules-load.d/ckptio-nfs.conf")).endswith("\nsunrpc\n")
    assert read(str(tree / "etc/modprobe.d/site.conf")) == SITE_CONF
    assert result["persisted"] == {"tcp_slot_table_entries": 128, "tcp_max_slot_table_entries": 128, "nfs_max_session_slots": 128}
    assert all(row["in_sync"] for row in result["settings"])
    assert [row["name"] for row in result["settings"]] == ["tcp_slot_table_entries", "tcp_max_slot_table_entries", "nfs_max_session_slots"]

    before = tree_checksums(str(tree))
    again = run_module(module, args(tree, tcp_slot_table_entries=128, tcp_max_slot_table_entries=128, nfs_max_session_slots=128))
    assert again["changed"] is False
    assert again["mounts_pending_remount"] == []
    assert tree_checksums(str(tree)) == before


def test_mounts_keeping_the_old_table_are_named_with_their_server(tree):
    result = run_module(module, args(tree, tcp_max_slot_table_entries=128))
    assert [(row["mount_point"], row["server"], row["vers"]) for row in result["mounts_pending_remount"]] == [
        ("/mnt/old", "10.0.0.3", "4.0"), ("/mnt/v3", "10.0.0.4", "3")]
    assert [(row["mount_point"], row["vers"]) for row in result["session_slot_mounts"]] == [("/mnt/nfs", "4.1")]
    assert "nfs_max_session_slots" in result["advice"]
    assert any("ignore tcp_max_slot_table_entries" in w for w in result["warnings"])


def test_session_slots_change_leaves_the_v41_mount_pending(tree):
    result = run_module(module, args(tree, nfs_max_session_slots=16))
    assert [row["mount_point"] for row in result["mounts_pending_remount"]] == ["/mnt/nfs"]


def test_check_mode_changes_nothing_and_reports_the_diff(tree):
    before = tree_checksums(str(tree))
    result = run_module(module, args(tree, tcp_max_slot_table_entries=128), check_mode=True, diff=True)
    assert tree_checksums(str(tree)) == before
    assert result["changed"] is True
    assert result["live_applied"] is False and "check mode" in result["live_not_applied_reason"]
    assert result["live_after"]["tcp_max_slot_table_entries"] == 128
    by_header = dict((d["before_header"], d) for d in result["diff"])
    conf = by_header[str(tree / "etc/modprobe.d/ckptio-nfs.conf")]
    assert conf["before"] == "" and "options sunrpc tcp_max_slot_table_entries=128\n" in conf["after"]
    live = by_header["live: sunrpc/nfs slot tables"]
    assert live["before"] == "tcp_max_slot_table_entries = 65536\n" and live["after"] == "tcp_max_slot_table_entries = 128\n"
    # The audit row shows the state as it is, not as it would be.
    assert result["settings"] == [{"name": "tcp_max_slot_table_entries", "wanted": 128, "persisted": None, "live": 65536, "in_sync": False}]


def test_existing_file_keeps_every_other_byte_and_backup_restores_it(tree):
    path = str(tree / "etc/modprobe.d/ckptio-nfs.conf")
    original = "# ours, edited by hand\n\noptions sunrpc\ttcp_max_slot_table_entries=64  udp_slot_table_entries=16\n# end"
    write(path, original)
    result = run_module(module, args(tree, tcp_max_slot_table_entries=128, backup=True))
    assert read(path) == original.replace("=64", "=128")
    assert read(result["backup_file"]) == original
    assert result["backup_files"] == {path: result["backup_file"]}


def test_atomic_write_failure_leaves_the_old_file(tree, monkeypatch):
    path = str(tree / "etc/modprobe.d/ckptio-nfs.conf")
    write(path, "options sunrpc tcp_max_slot_table_entries=64\n")

    def broken_move(self, src, dest, unsafe_writes=False, keep_dest_attrs=True):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(basic.AnsibleModule, "atomic_move", broken_move)
    result = fail_module(module, args(tree, tcp_max_slot_table_entries=128))
    assert "No space left on device" in result["msg"] and path in result["msg"]
    assert read(path) == "options sunrpc tcp_max_slot_table_entries=64\n"
    assert sorted(os.listdir(str(tree / "etc/modprobe.d"))) == ["ckptio-nfs.conf", "site.conf"]


PENDING = "3 NFS mount(s) keep the old slot table until remounted: see mounts_pending_remount"


def test_a_write_that_fails_on_a_read_only_etc_changes_nothing_and_promises_no_remount(tree, monkeypatch):
    # Before: the plan's "until remounted" warning was told before the write, which then failed and changed nothing.
    def read_only(self, src, dest, unsafe_writes=False, keep_dest_attrs=True):
        raise OSError(30, "Read-only file system")
    monkeypatch.setattr(basic.AnsibleModule, "atomic_move", read_only)
    before = tree_checksums(str(tree))
    failed = fail_module(module, args(tree, tcp_slot_table_entries=16))
    assert "Read-only file system" in failed["msg"] and tree_checksums(str(tree)) == before
    assert not any("until remounted" in warning for warning in failed["warnings"]), failed["warnings"]


def test_the_remount_warning_comes_when_the_table_changed_and_in_check_mode(tree):
    checked = run_module(module, args(tree, tcp_slot_table_entries=16), check_mode=True)
    assert checked["changed"] is True and PENDING in checked["warnings"]
    result = run_module(module, args(tree, tcp_slot_table_entries=16))
    assert result["changed"] is True and PENDING in result["warnings"]
    assert len(result["mounts_pending_remount"]) == 3


def test_sunrpc_not_loadable_in_a_container_persists_and_says_why(tree, monkeypatch):
    # The host kernel here has no sunrpc at all: no /proc/sys/sunrpc, no /sys/module/{sunrpc,nfs}.
    for path in ("proc/sys/sunrpc", "sys/module/sunrpc", "sys/module/nfs"):
        shutil.rmtree(str(tree / path))
    write(str(tree / "proc/self/mountinfo"), "22 1 254:0 / / rw,relatime - overlay overlay rw\n")
    commands = []

    def modprobe_fails(self, argv, **kwargs):
        commands.append(argv)
        return 1, "", "modprobe: FATAL: Module sunrpc not found in directory /lib/modules/6.8.0\n"
    monkeypatch.setattr(basic.AnsibleModule, "run_command", modprobe_fails)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/sbin/" + name)
    result = run_module(module, args(tree, tcp_max_slot_table_entries=128))
    assert commands == [["/usr/sbin/modprobe", "sunrpc"]]
    assert result["live_applied"] is False
    assert "modprobe sunrpc" in result["live_not_applied_reason"] and "not found" in result["live_not_applied_reason"]
    assert result["live_before"]["tcp_max_slot_table_entries"] is None
    assert "tcp_max_slot_table_entries=128" in read(str(tree / "etc/modprobe.d/ckptio-nfs.conf"))
    # No live value can exist: the persisted one applies when sunrpc loads, so the row is in sync
    # (what did not happen live is in live_not_applied_reason, reported as pending by the role).
    assert result["settings"] == [{"name": "tcp_max_slot_table_entries", "wanted": 128, "persisted": 128, "live": None, "in_sync": True}]


def test_modules_not_loaded_rows_follow_the_persisted_value(tree, monkeypatch):
    for path in ("proc/sys/sunrpc", "sys/module/sunrpc", "sys/module/nfs"):
        shutil.rmtree(str(tree / path))
    write(str(tree / "proc/self/mountinfo"), "22 1 254:0 / / rw,relatime - overlay overlay rw\n")
    write(str(tree / "etc/modprobe.d/ckptio-nfs.conf"), "options sunrpc tcp_max_slot_table_entries=128\n")
    # Check mode loads nothing: one option persisted as wanted, one persisted with another value.
    result = run_module(module, args(tree, tcp_max_slot_table_entries=128, nfs_max_session_slots=128), check_mode=True)
    assert result["settings"] == [
        {"name": "tcp_max_slot_table_entries", "wanted": 128, "persisted": 128, "live": None, "in_sync": True},
        {"name": "nfs_max_session_slots", "wanted": 128, "persisted": None, "live": None, "in_sync": False},
    ]


def test_loaded_module_with_a_missing_live_value_is_not_in_sync(tree):
    # sunrpc is loaded (its parameters are there) but this value cannot be read: that is drift, not "not applicable".
    os.unlink(str(tree / "proc/sys/sunrpc/udp_slot_table_entries"))
    os.unlink(str(tree / "sys/module/sunrpc/parameters/udp_slot_table_entries"))
    write(str(tree / "etc/modprobe.d/ckptio-nfs.conf"), "options sunrpc udp_slot_table_entries=32\n")
    result = run_module(module, args(tree, udp_slot_table_entries=32), check_mode=True)
    assert result["settings"] == [{"name": "udp_slot_table_entries", "wanted": 32, "persisted": 32, "live": None, "in_sync": False}]


def test_modprobe_loads_sunrpc_with_the_persisted_options(tree, monkeypatch):
    shutil.rmtree(str(tree / "proc/sys/sunrpc"))
    shutil.rmtree(str(tree / "sys/module/sunrpc"))

    def modprobe_loads(self, argv, **kwargs):
        # The real modprobe reads modprobe.d: the module comes up with our value already.
        conf = read(str(tree / "etc/modprobe.d/ckptio-nfs.conf"))
        assert "tcp_max_slot_table_entries=128" in conf
        for name, value in dict(GUEST_SUNRPC, tcp_max_slot_table_entries="128").items():
            write(str(tree / "proc/sys/sunrpc" / name), value + "\n")
        return 0, "", ""
    monkeypatch.setattr(basic.AnsibleModule, "run_command", modprobe_loads)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/sbin/" + name)
    result = run_module(module, args(tree, tcp_max_slot_table_entries=128))
    assert result["live_applied"] is True and result["changed"] is True
    assert result["live_after"]["tcp_max_slot_table_entries"] == 128


def test_other_modprobe_file_that_overrides_ours_is_reported(tree):
    write(str(tree / "etc/modprobe.d/sunrpc.conf"), "options sunrpc tcp_max_slot_table_entries=64\n")
    result = run_module(module, args(tree, tcp_max_slot_table_entries=128))
    assert result["modprobe_conflicts"] == [{"path": str(tree / "etc/modprobe.d/sunrpc.conf"), "name": "tcp_max_slot_table_entries",
                                             "value": "64", "overrides_ours": True}]
    assert result["effective_persisted"]["tcp_max_slot_table_entries"] == 64
    assert result["settings"][0]["in_sync"] is False


def test_absent_removes_what_we_persisted_and_restores_kernel_defaults(tree):
    run_module(module, args(tree, tcp_max_slot_table_entries=128, nfs_max_session_slots=128))
    result = run_module(module, args(tree, state="absent"))
    assert result["changed"] is True
    assert not os.path.exists(str(tree / "etc/modprobe.d/ckptio-nfs.conf"))
    assert not os.path.exists(str(tree / "etc/modules-load.d/ckptio-nfs.conf"))
    assert read(str(tree / "proc/sys/sunrpc/tcp_max_slot_table_entries")) == "65536\n"
    assert read(str(tree / "sys/module/nfs/parameters/max_session_slots")) == "64\n"
    assert read(str(tree / "etc/modprobe.d/site.conf")) == SITE_CONF
    # Nothing persisted any more: the kernel defaults apply at the next load, which is the target.
    assert [(row["name"], row["persisted"], row["live"], row["in_sync"]) for row in result["settings"]] == [
        ("tcp_slot_table_entries", None, 2, True), ("tcp_max_slot_table_entries", None, 65536, True),
        ("udp_slot_table_entries", None, 16, True), ("nfs_max_session_slots", None, 64, True)]
    assert run_module(module, args(tree, state="absent"))["changed"] is False


def test_persist_false_touches_no_file(tree):
    before = dict((k, v) for k, v in tree_checksums(str(tree)).items() if k.startswith("etc"))
    result = run_module(module, args(tree, udp_slot_table_entries=32, persist=False))
    assert result["live_after"]["udp_slot_table_entries"] == 32
    assert dict((k, v) for k, v in tree_checksums(str(tree)).items() if k.startswith("etc")) == before


@pytest.mark.parametrize("persisted", [False, True], ids=["persist-false", "persisted-already"])
def test_check_mode_predicts_a_live_only_change(tree, persisted):
    # The files need nothing (persist off, or already holding the value): only the live value
    # would change, and check mode must say so as the real run does.
    if persisted:
        run_module(module, args(tree, udp_slot_table_entries=32, apply_live=False))
    extra = {} if persisted else {"persist": False}
    before = tree_checksums(str(tree))
    check = run_module(module, args(tree, udp_slot_table_entries=32, **extra), check_mode=True)
    assert tree_checksums(str(tree)) == before
    assert check["changed"] is True and check["live_after"]["udp_slot_table_entries"] == 32
    assert run_module(module, args(tree, udp_slot_table_entries=32, **extra))["changed"] is True
    assert run_module(module, args(tree, udp_slot_table_entries=32, **extra), check_mode=True)["changed"] is False


BAD_INPUT = [
    ({"tcp_slot_table_entries": "many"}, "tcp_slot_table_entries"),
    ({"tcp_slot_table_entries": [2]}, "tcp_slot_table_entries"),
    ({"tcp_slot_table_entries": True}, "tcp_slot_table_entries"),
    ({"tcp_slot_table_entries": 1}, "tcp_slot_table_entries"),
    ({"tcp_max_slot_table_entries": 65537}, "tcp_max_slot_table_entries"),
    ({"udp_slot_table_entries": "16,tcp_slot_table_entries=2"}, "udp_slot_table_entries"),
    ({"nfs_max_session_slots": 0}, "nfs_max_session_slots"),
    ({"nfs_max_session_slots": 1025}, "nfs_max_session_slots"),
    ({"nfs_max_session_slots": "64\noptions nfs x=1"}, "nfs_max_session_slots"),
    ({"tcp_max_slot_table_entries": "128=1"}, "tcp_max_slot_table_entries"),
    ({"tcp_max_slot_table_entries": "$(reboot)"}, "tcp_max_slot_table_entries"),
    ({"tcp_max_slot_table_entries": 128, "slot_tables": 5}, "slot_tables"),
    ({}, "tcp_slot_table_entries"),
    ({"tcp_max_slot_table_entries": 128, "modprobe_conf": "modprobe.d/ckptio.conf"}, "modprobe_conf"),
    ({"tcp_max_slot_table_entries": 128, "modprobe_conf": "/tmp/ckptio.conf"}, "modprobe_conf"),
    ({"tcp_max_slot_table_entries": 128, "modprobe_conf": "MODPROBE_DIR/a;rm -rf.conf"}, "modprobe_conf"),
    ({"tcp_max_slot_table_entries": 128, "modprobe_conf": "MODPROBE_DIR/ckptio nfs.conf"}, "modprobe_conf"),
    ({"tcp_max_slot_table_entries": 128, "modules_load_conf": "MODPROBE_DIR/ckptio.conf"}, "modules_load_conf"),
    ({"tcp_max_slot_table_entries": 128, "state": "gone"}, "state"),
    ({"tcp_max_slot_table_entries": 128, "apply_live": "perhaps"}, "apply_live"),
]


@pytest.mark.parametrize("bad, option", BAD_INPUT)
def test_bad_input_fails_naming_the_option_and_changes_nothing(tree, bad, option):
    bad = dict((k, v.replace("MODPROBE_DIR", str(tree / "etc/modprobe.d")) if isinstance(v, str) else v) for k, v in bad.items())
    before = tree_checksums(str(tree))
    result = fail_module(module, args(tree, **bad))
    assert option in result["msg"]
    assert tree_checksums(str(tree)) == before
