from __future__ import annotations

import os

import pytest

from ansible.module_utils import basic

from ansible_collections.ckptio.nfs.plugins.modules import nfsd_threads as module
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, read_sample, run_module, tree_checksums

# The [nfsd] part of Debian 12's /etc/nfs.conf (nfs-utils 2.6.2): threads commented out, so
# nothing is set and a drop-in decides (lab.md).
DEBIAN_NFS_CONF = (
    "#\n# This is a general configuration for the\n# NFS daemons and tools\n#\n"
    "[general]\npipefs-directory=/run/rpc_pipefs\n#\n"
    "[nfsd]\n# debug=0\n# threads=8\n# host=\n# port=0\n# grace-time=90\n# lease-time=90\n"
    "# udp=n\n# tcp=y\n# vers3=y\n#\n"
    "[mountd]\n# debug=0\nmanage-gids=y\n"
)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def read(path):
    with open(path) as handle:
        return handle.read()


@pytest.fixture
def tree(fake_root, monkeypatch):
    return build_tree(fake_root, monkeypatch)


def build_tree(host, monkeypatch):
    """A stock Debian 12 server's /proc/fs/nfsd and nfs.conf on the fake host (conftest.py fake_root), the module pointed at it."""
    root = host.root
    # Live values from the lab's 2 GiB server VM (kernel 6.1): the captured threads file, max_block_size.
    threads = read_sample("bundles", "seed_like_baseline", "servers", "nfs1", "threads.txt")
    assert threads.strip() == "8"
    write(str(root / "proc/fs/nfsd/threads"), threads)
    write(str(root / "proc/fs/nfsd/max_block_size"), "262144\n")
    write(str(root / "etc/nfs.conf"), DEBIAN_NFS_CONF)
    os.makedirs(str(root / "etc/nfs.conf.d"))

    def no_commands(self, argv, **kwargs):
        if os.path.basename(argv[0]) == "lsattr":
            return 1, "", "lsattr not run in unit tests"
        pytest.fail("unexpected command: %r" % (argv,))
    monkeypatch.setattr(basic.AnsibleModule, "run_command", no_commands)
    return root


def dropin(root, name="ckptio-nfsd.conf"):
    return str(root / "etc/nfs.conf.d" / name)


def args(root, **extra):
    base = {"conf_file": dropin(root)}
    base.update(extra)
    return base


def test_apply_and_persist_then_second_run_is_unchanged(tree):
    result = run_module(module, args(tree, threads=32))
    assert result["changed"] is True
    assert (result["threads_before"], result["threads_after"]) == (8, 32)
    assert read(str(tree / "proc/fs/nfsd/threads")) == "32\n"
    assert read(dropin(tree)).endswith("[nfsd]\nthreads=32\n")
    assert result["persisted_threads"] == 32 and result["effective_persisted_threads"] == 32
    assert result["effective_persisted_source"]["path"] == dropin(tree)
    assert result["max_block_size"] == 262144
    assert result["live_applied"] is True and result["conflicts"] == []
    assert result["settings"] == [{"name": "threads", "wanted": 32, "persisted": 32, "live": 32, "in_sync": True}]
    assert read(str(tree / "etc/nfs.conf")) == DEBIAN_NFS_CONF

    before = tree_checksums(str(tree))
    assert run_module(module, args(tree, threads=32))["changed"] is False
    assert tree_checksums(str(tree)) == before


def test_check_mode_changes_nothing_and_diffs_file_and_live(tree):
    before = tree_checksums(str(tree))
    result = run_module(module, args(tree, threads=32), check_mode=True, diff=True)
    assert tree_checksums(str(tree)) == before
    assert result["changed"] is True and result["threads_after"] == 32 and result["live_applied"] is False
    by_header = dict((d["before_header"], d) for d in result["diff"])
    assert by_header[dropin(tree)]["before"] == "" and "threads=32\n" in by_header[dropin(tree)]["after"]
    live = by_header["live: %s" % (tree / "proc/fs/nfsd")]
    assert live["before"].startswith("threads = 8\n") and live["after"].startswith("threads = 32\n")
    assert result["settings"][0] == {"name": "threads", "wanted": 32, "persisted": None, "live": 8, "in_sync": False}


def test_editing_nfs_conf_itself_changes_one_line(tree):
    path = str(tree / "etc/nfs.conf")
    messy = DEBIAN_NFS_CONF.replace("[nfsd]\n", "[nfsd]\n\tthreads = 16\t# raised in 2023\n") + "; trailing note"
    write(path, messy)
    result = run_module(module, {"conf_file": path, "threads": 24, "backup": True})
    assert read(path) == messy.replace("threads = 16", "threads = 24")
    assert read(result["backup_file"]) == messy


def test_later_dropin_that_overrides_ours_is_a_conflict(tree):
    write(dropin(tree, "zz-local.conf"), "[nfsd]\nthreads=16\n")
    write(dropin(tree, "00-early.conf"), "[nfsd]\nthreads=4\n")
    result = run_module(module, args(tree, threads=32))
    assert result["effective_persisted_threads"] == 16
    assert result["conflicts"] == [
        {"key": "threads", "path": dropin(tree, "00-early.conf"), "line": 2, "value": "4", "overrides_ours": False},
        {"key": "threads", "path": dropin(tree, "zz-local.conf"), "line": 2, "value": "16", "overrides_ours": True},
    ]
    assert result["settings"][0]["in_sync"] is False
    assert any("zz-local.conf" in w for w in result["warnings"])


def test_unterminated_threads_line_elsewhere_is_not_a_conflict(tree):
    # nfs-utils ignores a last line without a newline, so this file sets nothing.
    write(dropin(tree, "zz-local.conf"), "[nfsd]\nthreads=16")
    result = run_module(module, args(tree, threads=32))
    assert result["effective_persisted_threads"] == 32 and result["conflicts"] == []


def test_nfsd_not_loaded_persists_and_says_why(tree):
    for name in ("threads", "max_block_size"):
        os.unlink(str(tree / "proc/fs/nfsd" / name))
    result = run_module(module, args(tree, threads=32))
    assert result["live_applied"] is False and "not loaded" in result["live_not_applied_reason"]
    assert result["threads_before"] is None and result["max_block_size"] is None
    assert result["effective_persisted_threads"] == 32
    assert result["settings"] == [{"name": "threads", "wanted": 32, "persisted": 32, "live": None, "in_sync": True}]


def test_nfsd_not_loaded_with_other_persisted_value_is_drift(tree):
    for name in ("threads", "max_block_size"):
        os.unlink(str(tree / "proc/fs/nfsd" / name))
    result = run_module(module, args(tree, threads=32), check_mode=True)
    assert result["changed"] is True
    assert result["settings"][0]["live"] is None and result["settings"][0]["in_sync"] is False


def test_stopped_server_is_not_started(tree):
    write(str(tree / "proc/fs/nfsd/threads"), "0\n")
    result = run_module(module, args(tree, threads=32))
    assert read(str(tree / "proc/fs/nfsd/threads")) == "0\n"
    assert result["live_applied"] is False and "not running" in result["live_not_applied_reason"]


def test_min_threads_written_where_the_kernel_has_it(tree):
    write(str(tree / "proc/fs/nfsd/min_threads"), "0\n")
    result = run_module(module, args(tree, threads=64, min_threads=8))
    assert read(str(tree / "proc/fs/nfsd/min_threads")) == "8\n"
    assert "min-threads=8\n" in read(dropin(tree))
    assert [row["name"] for row in result["settings"]] == ["threads", "min_threads"]
    assert all(row["in_sync"] for row in result["settings"])


def test_min_threads_without_kernel_support_fails_before_any_change(tree):
    before = tree_checksums(str(tree))
    result = fail_module(module, args(tree, threads=32, min_threads=4))
    assert "min_threads" in result["msg"] and "min_threads does not exist" in result["msg"]
    assert tree_checksums(str(tree)) == before


def test_atomic_write_failure_leaves_the_old_file(tree, monkeypatch):
    write(dropin(tree), "[nfsd]\nthreads=16\n")

    def broken_move(self, src, dest, unsafe_writes=False, keep_dest_attrs=True):
        raise OSError(5, "Input/output error")
    monkeypatch.setattr(basic.AnsibleModule, "atomic_move", broken_move)
    result = fail_module(module, args(tree, threads=32))
    assert "Input/output error" in result["msg"]
    assert read(dropin(tree)) == "[nfsd]\nthreads=16\n"
    assert os.listdir(str(tree / "etc/nfs.conf.d")) == ["ckptio-nfsd.conf"]
    assert read(str(tree / "proc/fs/nfsd/threads")) == "8\n"


def test_absent_removes_the_dropin_and_returns_to_the_default(tree):
    run_module(module, args(tree, threads=32))
    result = run_module(module, args(tree, state="absent"))
    assert not os.path.exists(dropin(tree))
    assert result["threads_after"] == 8 and read(str(tree / "proc/fs/nfsd/threads")) == "8\n"
    assert result["effective_persisted_threads"] is None
    assert run_module(module, args(tree, state="absent"))["changed"] is False


def test_absent_returns_to_what_nfs_conf_still_sets(tree):
    write(str(tree / "etc/nfs.conf"), DEBIAN_NFS_CONF.replace("# threads=8", "threads=12"))
    run_module(module, args(tree, threads=32))
    result = run_module(module, args(tree, state="absent"))
    assert result["threads_after"] == 12 and result["effective_persisted_threads"] == 12


@pytest.mark.parametrize("persisted", [False, True], ids=["persist-false", "persisted-already"])
def test_check_mode_predicts_a_live_only_change(tree, persisted):
    # The drop-in needs nothing (persist off, or already holding threads=32): only the running
    # server would change, and check mode must say so as the real run does.
    if persisted:
        run_module(module, args(tree, threads=32, apply_live=False))
    extra = {} if persisted else {"persist": False}
    before = tree_checksums(str(tree))
    check = run_module(module, args(tree, threads=32, **extra), check_mode=True)
    assert tree_checksums(str(tree)) == before
    assert check["changed"] is True and check["threads_after"] == 32
    assert run_module(module, args(tree, threads=32, **extra))["changed"] is True
    assert run_module(module, args(tree, threads=32, **extra), check_mode=True)["changed"] is False


BAD_INPUT = [
    ({"threads": "lots"}, "threads"),
    ({"threads": 0}, "threads"),
    ({"threads": 8193}, "threads"),
    ({"threads": "8,host=0.0.0.0"}, "threads"),
    ({"threads": "8\n[mountd]"}, "threads"),
    ({"threads": "8=9"}, "threads"),
    ({"threads": "`reboot`"}, "threads"),
    ({"threads": True}, "threads"),
    ({}, "threads"),
    ({"threads": 8, "thread_count": 8}, "thread_count"),
    ({"threads": 8, "conf_file": "nfs.conf.d/x.conf"}, "conf_file"),
    ({"threads": 8, "conf_file": "/etc/nfs.conf.d.conf"}, "conf_file"),
    ({"threads": 8, "conf_file": "DROPINS/x.conf.bak"}, "conf_file"),
    ({"threads": 8, "conf_file": "DROPINS/x;reboot.conf"}, "conf_file"),
    ({"threads": 8, "conf_file": "DROPINS/with space.conf"}, "conf_file"),
    ({"threads": 8, "min_threads": 9}, "min_threads"),
    ({"threads": 8, "state": "running"}, "state"),
]


@pytest.mark.parametrize("bad, option", BAD_INPUT)
def test_bad_input_fails_naming_the_option_and_changes_nothing(tree, bad, option):
    bad = dict((k, v.replace("DROPINS", str(tree / "etc/nfs.conf.d")) if isinstance(v, str) else v) for k, v in bad.items())
    before = tree_checksums(str(tree))
    result = fail_module(module, args(tree, **bad))
    assert option in result["msg"]
    assert tree_checksums(str(tree)) == before
