"""modprobe.d and the sunrpc proc files in bad *states* (issue 12 items 1, 2, 4, 7, 8, 9).

sunrpc_slot_table's real main() on the fake tree of test_sunrpc_slot_table.py. Each test failed
on the code before issue 12 (a traceback, a deleted site file, an ignored `install` line).
"""
from __future__ import annotations

import os
import stat


from ansible_collections.ckptio.nfs.plugins.modules import sunrpc_slot_table as module
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_sunrpc_slot_table import (
    SITE_CONF, args, read, tree, write,
)
from ansible_collections.ckptio.nfs.tests.unit.test_safety_states_fstab import immutable
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module, tree_checksums

# The fake host of test_sunrpc_slot_table.py and chattr +i; pytest finds fixtures by name in this module.
SHARED_FIXTURES = (tree, immutable)


def own(tree):
    return str(tree / "etc/modprobe.d/ckptio-nfs.conf")


def load_conf(tree):
    return str(tree / "etc/modules-load.d/ckptio-nfs.conf")


# ---- 7. a directory where a file belongs ------------------------------------------------------------
def test_directory_at_our_modprobe_conf_fails_cleanly(tree):
    os.makedirs(own(tree))
    sums = tree_checksums(str(tree))
    result = fail_module(module, args(tree, tcp_max_slot_table_entries=128))
    assert own(tree) in result["msg"] and "EISDIR" in result["msg"]
    assert tree_checksums(str(tree)) == sums


def test_directory_named_conf_among_other_modprobe_files_fails_cleanly(tree):
    os.makedirs(str(tree / "etc/modprobe.d/zz-site.conf"))
    result = fail_module(module, args(tree, tcp_max_slot_table_entries=128))
    assert "zz-site.conf" in result["msg"] and "EISDIR" in result["msg"]


def test_directory_at_a_sunrpc_proc_file_fails_cleanly(tree):
    path = str(tree / "proc/sys/sunrpc/tcp_max_slot_table_entries")
    os.unlink(path)
    os.makedirs(path)
    sums = tree_checksums(str(tree))
    result = fail_module(module, args(tree, tcp_max_slot_table_entries=128))
    assert path in result["msg"] and "EISDIR" in result["msg"]
    assert tree_checksums(str(tree)) == sums


def test_symlink_loop_at_our_modprobe_conf_fails_with_eloop(tree):
    os.symlink(own(tree) + ".b", own(tree))
    os.symlink(own(tree), own(tree) + ".b")
    result = fail_module(module, args(tree, tcp_max_slot_table_entries=128))
    assert own(tree) in result["msg"] and "ELOOP" in result["msg"]
    assert os.path.islink(own(tree))


def test_immutable_own_file_on_absent_fails_cleanly(tree, immutable):
    run_module(module, args(tree, tcp_max_slot_table_entries=128))
    before = read(own(tree))
    immutable(own(tree))
    result = fail_module(module, args(tree, state="absent"))
    assert own(tree) in result["msg"] and "EPERM" in result["msg"]
    assert read(own(tree)) == before


def test_immutable_own_file_on_change_fails_cleanly(tree, immutable):
    run_module(module, args(tree, tcp_max_slot_table_entries=128))
    before = read(own(tree))
    immutable(own(tree))
    result = fail_module(module, args(tree, tcp_max_slot_table_entries=256))
    assert own(tree) in result["msg"] and "untouched" in result["msg"]
    assert read(own(tree)) == before


# ---- 8. a file we did not write is not deleted; install lines count ----------------------------------
SITE_VALUES = "options sunrpc tcp_slot_table_entries=16 tcp_max_slot_table_entries=64\n"


def test_absent_refuses_to_delete_a_file_without_our_header(tree):
    write(own(tree), SITE_VALUES)
    sums = tree_checksums(str(tree))
    result = fail_module(module, args(tree, state="absent"))
    assert own(tree) in result["msg"] and "force" in result["msg"]
    assert tree_checksums(str(tree)) == sums


def test_absent_refuses_to_edit_a_file_without_our_header(tree):
    write(own(tree), SITE_VALUES + "options sunrpc udp_slot_table_entries=32\n")
    result = fail_module(module, args(tree, state="absent", tcp_slot_table_entries=2))
    assert own(tree) in result["msg"] and "force" in result["msg"]
    assert read(own(tree)) == SITE_VALUES + "options sunrpc udp_slot_table_entries=32\n"


def test_absent_refuses_a_modules_load_file_without_our_header(tree):
    write(load_conf(tree), "sunrpc\n")
    result = fail_module(module, args(tree, state="absent"))
    assert load_conf(tree) in result["msg"] and "force" in result["msg"]
    assert read(load_conf(tree)) == "sunrpc\n"


def test_absent_with_force_removes_a_file_without_our_header(tree):
    write(own(tree), SITE_VALUES)
    result = run_module(module, args(tree, state="absent", force=True))
    assert result["changed"] is True and not os.path.exists(own(tree))


def test_absent_removes_our_own_file_without_force(tree):
    run_module(module, args(tree, tcp_max_slot_table_entries=128))
    assert read(own(tree)).startswith(module.HEADER)
    run_module(module, args(tree, state="absent"))
    assert not os.path.exists(own(tree)) and not os.path.exists(load_conf(tree))
    assert read(str(tree / "etc/modprobe.d/site.conf")) == SITE_CONF


INSTALL = "install sunrpc /sbin/modprobe --ignore-install sunrpc $CMDLINE_OPTS tcp_slot_table_entries=4\n"


def test_install_line_values_override_options_and_are_warned_about(tree):
    path = str(tree / "etc/modprobe.d/site.conf")
    write(path, SITE_CONF + "\n" + INSTALL)
    result = run_module(module, args(tree, tcp_slot_table_entries=128))
    # modprobe appends the install command's own parameters after the options lines: 4 wins.
    assert result["effective_persisted"]["tcp_slot_table_entries"] == 4
    assert {"path": path, "name": "tcp_slot_table_entries", "value": "4", "overrides_ours": True} in result["modprobe_conflicts"]
    assert [row["in_sync"] for row in result["settings"]] == [False]
    warning = [text for text in result["warnings"] if "install sunrpc" in text]
    assert warning and "%s line 5" % path in warning[0]


def test_install_line_without_parameters_is_still_warned_about(tree):
    path = str(tree / "etc/modprobe.d/site.conf")
    write(path, "install nfs /sbin/modprobe --ignore-install nfs $CMDLINE_OPTS\n")
    result = run_module(module, args(tree, nfs_max_session_slots=128))
    assert result["effective_persisted"]["nfs_max_session_slots"] == 128
    assert any("install nfs" in text and "%s line 1" % path in text for text in result["warnings"])


# ---- 4. a symlinked modprobe file stays a link ----------------------------------------------------------
def test_symlinked_own_file_is_written_through(tree):
    target = str(tree / "srv/config/ckptio-nfs.conf")
    write(target, module.HEADER + "options sunrpc tcp_max_slot_table_entries=64\n")
    os.symlink(target, own(tree))
    run_module(module, args(tree, tcp_max_slot_table_entries=128))
    assert os.path.islink(own(tree)) and os.readlink(own(tree)) == target
    assert read(target) == module.HEADER + "options sunrpc tcp_max_slot_table_entries=128\n"


# ---- 9. a new file is never wider than its final mode ------------------------------------------------------
def test_new_files_are_never_wider_than_their_final_mode_under_umask_000(tree, monkeypatch):
    watched = [str(tree / "etc/modprobe.d"), str(tree / "etc/modules-load.d")]
    seen = []

    def record():
        for directory in watched:
            for name in os.listdir(directory):
                if name != "site.conf":
                    seen.append((name, stat.S_IMODE(os.lstat(os.path.join(directory, name)).st_mode)))

    def spy(name):
        real = getattr(os, name)

        def wrapper(*a, **k):
            result = real(*a, **k)
            record()
            return result
        monkeypatch.setattr(os, name, wrapper)
    for name in ("open", "fsync", "rename", "chmod", "fchmod", "chown"):
        spy(name)
    old = os.umask(0)
    try:
        run_module(module, args(tree, tcp_max_slot_table_entries=128))
    finally:
        os.umask(old)
    monkeypatch.undo()
    assert seen, "the spy saw nothing"
    wider = [(name, oct(mode)) for name, mode in seen if mode & ~0o644]
    assert wider == []
    assert stat.S_IMODE(os.stat(own(tree)).st_mode) == 0o644
