"""nfsd_threads max_connections: the live limit, its nfs-server.service drop-in, the limit report."""
from __future__ import annotations

import os

import pytest

from ansible.module_utils import basic

from ansible_collections.ckptio.nfs.plugins.modules import nfsd_threads as module
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, read_sample, run_module, tree_checksums

SYSTEMCTL = "/usr/bin/systemctl"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def read(path):
    with open(path) as handle:
        return handle.read()


class Tree:
    def __init__(self, root):
        self.root = root
        self.commands = []
        self.reload_result = (0, "", "")

    def path(self, relative):
        return str(self.root / relative)

    @property
    def proc(self):
        return self.path("proc/fs/nfsd")

    @property
    def dropin(self):
        return self.path("etc/systemd/system/nfs-server.service.d/ckptio-max-connections.conf")

    @property
    def value_file(self):
        return self.path("etc/ckptio/nfsd-max-connections")

    def args(self, **extra):
        base = {"conf_file": self.path("etc/nfs.conf.d/ckptio-nfsd.conf")}
        base.update(extra)
        return base

    def expected_dropin(self):
        # No dd under the fake root: the unit names the first of HostRoot.DD_PATHS (test_host_root.py tests the choice).
        dd = "/usr/bin/dd"
        return ("# Managed by ckptio.nfs.nfsd_threads: knfsd connection limit (/proc/fs/nfsd/max_connections).\n"
                "# nfs-utils has no setting for it (nfs.conf, rpc.nfsd and nfsdctl know none), so it is\n"
                "# written before nfsd starts: clients reconnecting all at once after a restart are held\n"
                "# to this limit, not to the default (threads + 3) * 20. The leading '-' lets nfs-server start\n"
                "# on a kernel without the file (Linux 6.14 and later).\n"
                "[Service]\n"
                "ExecStartPre=-%s if=%s of=%s/max_connections conv=notrunc status=none\n" % (dd, self.value_file, self.proc))


@pytest.fixture
def tree(fake_root, monkeypatch):
    world = Tree(fake_root.root)
    # The lab server's captured thread count (kernel 6.1) and a stock max_connections of 0.
    threads = read_sample("bundles", "seed_like_baseline", "servers", "nfs1", "threads.txt")
    assert threads.strip() == "8"
    write(world.path("proc/fs/nfsd/threads"), threads)
    write(world.path("proc/fs/nfsd/max_connections"), "0\n")
    write(world.path("proc/fs/nfsd/max_block_size"), "262144\n")
    write(world.path("etc/nfs.conf"), "[nfsd]\n# threads=8\n")
    os.makedirs(world.path("etc/nfs.conf.d"))

    def run_command(self, argv, **kwargs):
        world.commands.append(list(argv))
        if argv == [SYSTEMCTL, "daemon-reload"]:
            return world.reload_result
        pytest.fail("unexpected command: %r" % (argv,))

    def get_bin_path(self, name, *args, **kwargs):
        return SYSTEMCTL if name == "systemctl" else None

    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", get_bin_path)
    return world


def test_sets_live_and_persists_then_second_run_is_unchanged(tree):
    result = run_module(module, tree.args(threads=64, max_connections=5000))
    assert result["changed"] is True
    assert (result["max_connections_before"], result["max_connections_after"]) == (0, 5000)
    assert read(tree.path("proc/fs/nfsd/max_connections")) == "5000\n"
    # dd copies the whole value file into the proc file: a number and nothing else.
    assert read(tree.value_file) == "5000\n"
    assert read(tree.dropin) == tree.expected_dropin()
    assert tree.commands == [[SYSTEMCTL, "daemon-reload"]]
    assert result["persisted_max_connections"] == 5000
    assert result["connection_limit"] == {"configured": 5000, "effective": 5000, "threads": 64, "supported": True}
    assert result["live_applied"] is True
    assert {"name": "max_connections", "wanted": 5000, "persisted": 5000, "live": 5000, "in_sync": True} in result["settings"]

    before = tree_checksums(str(tree.root))
    again = run_module(module, tree.args(threads=64, max_connections=5000))
    assert again["changed"] is False
    assert tree_checksums(str(tree.root)) == before
    assert tree.commands == [[SYSTEMCTL, "daemon-reload"]]


def test_unset_only_reports_the_default_limit_from_threads(tree):
    result = run_module(module, tree.args(threads=64))
    # svc_check_conn_limits(): (sv_nrthreads + 3) * 20 when max_connections is 0.
    assert result["connection_limit"] == {"configured": 0, "effective": 1340, "threads": 64, "supported": True}
    assert [row["name"] for row in result["settings"]] == ["threads"]
    assert not os.path.exists(tree.dropin) and not os.path.exists(tree.value_file)
    assert tree.commands == []


def test_check_mode_changes_nothing_and_shows_the_plan(tree):
    before = tree_checksums(str(tree.root))
    result = run_module(module, tree.args(threads=8, max_connections=5000), check_mode=True, diff=True)
    assert tree_checksums(str(tree.root)) == before
    assert tree.commands == []
    assert result["changed"] is True
    assert result["max_connections_after"] == 5000
    assert result["live_applied"] is False and "check mode" in result["live_not_applied_reason"]
    # The audit row shows the state as it is, not as it would be.
    assert {"name": "max_connections", "wanted": 5000, "persisted": 0, "live": 0, "in_sync": False} in result["settings"]
    by_header = dict((entry["after_header"], entry) for entry in result["diff"])
    assert by_header[tree.value_file]["after"] == "5000\n"
    assert by_header[tree.dropin]["after"] == tree.expected_dropin()
    live = by_header["live: %s/max_connections" % tree.proc]
    assert (live["before"], live["after"]) == ("max_connections = 0\n", "max_connections = 5000\n")


def test_zero_removes_our_files_and_restores_the_default(tree):
    run_module(module, tree.args(threads=8, max_connections=5000))
    result = run_module(module, tree.args(threads=8, max_connections=0))
    assert result["changed"] is True
    assert not os.path.exists(tree.dropin) and not os.path.exists(tree.value_file)
    assert read(tree.path("proc/fs/nfsd/max_connections")) == "0\n"
    assert result["connection_limit"] == {"configured": 0, "effective": 220, "threads": 8, "supported": True}
    assert {"name": "max_connections", "wanted": 0, "persisted": 0, "live": 0, "in_sync": True} in result["settings"]
    assert tree.commands == [[SYSTEMCTL, "daemon-reload"]] * 2


def test_refuses_a_dropin_it_did_not_write_before_changing_anything(tree):
    write(tree.dropin, "[Service]\nExecStartPre=/bin/true\n")
    before = tree_checksums(str(tree.root))
    result = fail_module(module, tree.args(threads=32, max_connections=5000))
    assert "max_connections" in result["msg"] and "not written by ckptio" in result["msg"]
    # Not even the thread count changed: the refusal comes before the first write.
    assert tree_checksums(str(tree.root)) == before
    assert tree.commands == []


def test_refuses_a_value_file_that_is_not_a_number(tree):
    write(tree.value_file, "keep me\n")
    before = tree_checksums(str(tree.root))
    result = fail_module(module, tree.args(threads=8, max_connections=5000))
    assert "max_connections" in result["msg"] and tree.value_file in result["msg"]
    assert tree_checksums(str(tree.root)) == before


def test_kernel_without_the_file_says_so_and_writes_nothing_for_it(tree):
    os.unlink(tree.path("proc/fs/nfsd/max_connections"))
    write(tree.path("etc/nfs.conf.d/ckptio-nfsd.conf"), "[nfsd]\nthreads=8\n")
    result = run_module(module, tree.args(threads=8, max_connections=5000))
    assert result["changed"] is False
    assert any("no %s/max_connections" % tree.proc in warning and "6.14" in warning for warning in result["warnings"])
    assert result["connection_limit"] == {"configured": None, "effective": None, "threads": 8, "supported": False}
    assert [row["name"] for row in result["settings"]] == ["threads"]
    assert result["max_connections_before"] is None and result["max_connections_after"] is None
    assert not os.path.exists(tree.dropin) and not os.path.exists(tree.value_file)
    # Asking for the kernel default there is no news: no warning.
    quiet = run_module(module, tree.args(threads=8, max_connections=0))
    assert quiet["changed"] is False and quiet["warnings"] == []


def test_rollback_after_a_kernel_upgrade_removes_our_files(tree):
    run_module(module, tree.args(threads=8, max_connections=5000))
    # The new kernel (6.14 on) has no max_connections.
    os.unlink(tree.path("proc/fs/nfsd/max_connections"))
    result = run_module(module, tree.args(state="absent"))
    assert not os.path.exists(tree.dropin) and not os.path.exists(tree.value_file)
    assert result["warnings"] == []
    assert {"name": "max_connections", "wanted": 0, "persisted": 0, "live": None, "in_sync": True} in result["settings"]


def test_nfsd_not_loaded_persists_and_reports_the_limit_at_the_next_start(tree):
    os.unlink(tree.path("proc/fs/nfsd/max_connections"))
    os.unlink(tree.path("proc/fs/nfsd/threads"))
    result = run_module(module, tree.args(threads=64, max_connections=5000))
    assert read(tree.value_file) == "5000\n" and read(tree.dropin) == tree.expected_dropin()
    assert result["live_applied"] is False
    assert "applies when nfs-server starts" in result["live_not_applied_reason"]
    assert result["connection_limit"] == {"configured": 5000, "effective": 5000, "threads": 64, "supported": None}
    # Persisted as wanted: the row is in sync, as every module's rows are when nothing is loaded.
    assert {"name": "max_connections", "wanted": 5000, "persisted": 5000, "live": None, "in_sync": True} in result["settings"]

    unset = run_module(module, tree.args(threads=64))
    assert unset["connection_limit"] == {"configured": 5000, "effective": 5000, "threads": 64, "supported": None}


def test_written_while_nfsd_is_stopped_without_starting_it(tree):
    # nfsd() copies nn->max_connections into sv_maxconn on each loop: a write with nfsd stopped
    # is kept for its start, and it never starts threads (unlike a write to threads).
    write(tree.path("proc/fs/nfsd/threads"), "0\n")
    write(tree.path("etc/nfs.conf.d/ckptio-nfsd.conf"), "[nfsd]\nthreads=64\n")
    result = run_module(module, tree.args(threads=64, max_connections=5000))
    assert read(tree.path("proc/fs/nfsd/max_connections")) == "5000\n"
    assert read(tree.path("proc/fs/nfsd/threads")) == "0\n"
    assert result["connection_limit"] == {"configured": 5000, "effective": 5000, "threads": 64, "supported": True}


def test_absent_removes_our_files_and_sets_the_default_live(tree):
    run_module(module, tree.args(threads=64, max_connections=5000))
    result = run_module(module, tree.args(state="absent"))
    assert not os.path.exists(tree.dropin) and not os.path.exists(tree.value_file)
    assert read(tree.path("proc/fs/nfsd/max_connections")) == "0\n"
    assert {"name": "max_connections", "wanted": 0, "persisted": 0, "live": 0, "in_sync": True} in result["settings"]
    again = run_module(module, tree.args(state="absent"))
    assert again["changed"] is False
    assert [row["name"] for row in again["settings"]] == ["threads"]


def test_persist_false_writes_live_only(tree):
    result = run_module(module, tree.args(threads=8, max_connections=3000, persist=False))
    assert read(tree.path("proc/fs/nfsd/max_connections")) == "3000\n"
    assert not os.path.exists(tree.dropin) and not os.path.exists(tree.value_file)
    assert tree.commands == []
    assert {"name": "max_connections", "wanted": 3000, "persisted": 0, "live": 3000, "in_sync": True} in result["settings"]


def test_check_mode_predicts_a_live_only_max_connections_change(tree):
    check = run_module(module, tree.args(threads=8, max_connections=3000, persist=False), check_mode=True)
    assert check["changed"] is True and check["max_connections_after"] == 3000
    assert read(tree.path("proc/fs/nfsd/max_connections")) == "0\n"
    assert run_module(module, tree.args(threads=8, max_connections=3000, persist=False))["changed"] is True


def test_a_failed_daemon_reload_is_a_warning(tree):
    tree.reload_result = (1, "", "Failed to connect to bus\n")
    result = run_module(module, tree.args(threads=8, max_connections=5000))
    assert read(tree.dropin) == tree.expected_dropin()
    assert any("daemon-reload failed (Failed to connect to bus)" in warning for warning in result["warnings"])


@pytest.mark.parametrize("value, message", [
    (-1, "max_connections must be between 0 and 4294967295, got -1"),
    (4294967296, "max_connections must be between 0 and 4294967295, got 4294967296"),
    (True, "max_connections must be an integer, got True"),
])
def test_bad_values_fail_naming_the_option(tree, value, message):
    before = tree_checksums(str(tree.root))
    result = fail_module(module, tree.args(threads=8, max_connections=value))
    assert message in result["msg"]
    assert tree_checksums(str(tree.root)) == before
