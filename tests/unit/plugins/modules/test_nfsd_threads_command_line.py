"""nfsd_threads on hosts whose nfs-server passes rpc.nfsd a count (Debian 11, Ubuntu 20.04) and on
those where nfs.conf decides, with the units and scripts of the real packages (tests/fixtures/distro)."""
from __future__ import annotations

import os
import shutil

import pytest

from ansible_collections.ckptio.nfs.plugins.modules import nfsd_threads as module
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_nfsd_threads import args, build_tree, read, write
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module, tree_checksums

DISTRO = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "distro")
BULLSEYE = "debian-bullseye-1.3.4-6+deb11u1"
TEMPLATE = "usr/share/nfs-kernel-server/conffiles/nfs-kernel-server.default"


@pytest.fixture
def tree(fake_root, monkeypatch):
    return build_tree(fake_root, monkeypatch)


def install(root, distro, defaults=True):
    """The distro's units and script where the package puts them, and the default file postinst installs."""
    source = os.path.join(DISTRO, distro)
    for directory, _dirs, names in os.walk(source):
        for name in names:
            relative = os.path.relpath(os.path.join(directory, name), source)
            if relative == "NOTES.txt" or relative.startswith("usr/share"):
                continue
            # nfs-utils_env.sh.txt: stored so because sanity runs shellcheck on *.sh (NOTES.txt).
            target = os.path.join(str(root), relative[:-len(".txt")] if relative.endswith(".sh.txt") else relative)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy(os.path.join(directory, name), target)
    if defaults:
        # postinst: ucf --three-way .../nfs-kernel-server.default /etc/default/nfs-kernel-server
        write(str(root / "etc/default/nfs-kernel-server"), read(os.path.join(source, TEMPLATE)))
    return read(os.path.join(source, TEMPLATE))


def defaults_path(root):
    return str(root / "etc/default/nfs-kernel-server")


def record_path(root):
    return str(root / "etc/ckptio/nfsd-rpcnfsdcount.record")


@pytest.mark.parametrize("distro, mechanism", [
    ("debian-bookworm-2.6.2-4+deb12u1", "nfs_conf"), ("debian-trixie-2.8.3-1", "nfs_conf"),
    ("ubuntu-jammy-2.6.1-1ubuntu1.2", "nfs_conf"), ("ubuntu-noble-2.6.4-3ubuntu5.1", "nfs_conf"),
    (BULLSEYE, "command_line"), ("ubuntu-focal-1.3.4-2.5ubuntu3.7", "command_line"),
])
def test_mechanism_reported_per_distro(tree, distro, mechanism):
    install(tree, distro)
    result = run_module(module, args(tree, threads=32))
    assert result["persist_mechanism"] == mechanism, result["persist_mechanism_reason"]
    if mechanism == "nfs_conf":
        assert result["effective_persisted_threads"] == 32
        assert result["settings"][0]["in_sync"] is True
    else:
        # RPCNFSDCOUNT=8 from the template wins at every restart: said, not hidden.
        assert result["effective_persisted_threads"] == 8
        assert result["effective_persisted_source"]["via"] == "RPCNFSDCOUNT"
        assert result["settings"][0] == {"name": "threads", "wanted": 32, "persisted": 8, "live": 32, "in_sync": False}
        assert any("RPCNFSDCOUNT=8 from %s line 2" % defaults_path(tree) in warning and "persist_command_line=true" in warning
                   for warning in result["warnings"])
        assert read(defaults_path(tree)) == install(tree, distro, defaults=False)


def test_no_unit_at_all_is_unknown_and_keeps_nfs_conf_behaviour(tree):
    result = run_module(module, args(tree, threads=32))
    assert result["persist_mechanism"] == "unknown"
    assert result["effective_persisted_threads"] == 32 and result["nfs_server_exec_start"] is None


def test_persist_command_line_edits_one_line_records_it_and_is_idempotent(tree):
    template = install(tree, BULLSEYE)
    result = run_module(module, args(tree, threads=32, persist_command_line=True))
    assert result["changed"] is True
    assert read(defaults_path(tree)) == template.replace("RPCNFSDCOUNT=8\n", "RPCNFSDCOUNT=32\n", 1)
    assert result["effective_persisted_threads"] == 32 and result["persist_mechanism"] == "command_line"
    assert result["settings"][0]["in_sync"] is True
    assert '"line": "RPCNFSDCOUNT=8"' in read(record_path(tree))
    before = tree_checksums(str(tree))
    again = run_module(module, args(tree, threads=32, persist_command_line=True))
    assert again["changed"] is False and tree_checksums(str(tree)) == before


def test_a_second_tuning_keeps_the_first_record(tree):
    install(tree, BULLSEYE)
    run_module(module, args(tree, threads=32, persist_command_line=True))
    run_module(module, args(tree, threads=64, persist_command_line=True))
    assert "RPCNFSDCOUNT=64\n" in read(defaults_path(tree))
    assert '"line": "RPCNFSDCOUNT=8"' in read(record_path(tree))


def test_check_mode_writes_nothing_and_shows_the_diff(tree):
    install(tree, BULLSEYE)
    before = tree_checksums(str(tree))
    result = run_module(module, args(tree, threads=32, persist_command_line=True, _ansible_check_mode=True, _ansible_diff=True))
    assert tree_checksums(str(tree)) == before
    assert result["changed"] is True
    # Check mode reports the state as found: RPCNFSDCOUNT=8 still decides.
    assert result["settings"][0]["persisted"] == 8
    changed = dict((entry["after_header"], entry) for entry in result["diff"])
    assert "RPCNFSDCOUNT=32\n" in changed[defaults_path(tree)]["after"]


def test_rollback_restores_the_original_line_byte_for_byte(tree):
    template = install(tree, BULLSEYE)
    run_module(module, args(tree, threads=32, persist_command_line=True))
    result = run_module(module, args(tree, state="absent"))
    assert read(defaults_path(tree)) == template
    assert not os.path.exists(record_path(tree))
    assert result["effective_persisted_threads"] == 8
    assert result["threads_after"] == 8


def test_rollback_removes_a_line_that_was_not_there(tree):
    install(tree, BULLSEYE, defaults=False)
    write(defaults_path(tree), "# local\nRPCNFSDPRIORITY=0")
    run_module(module, args(tree, threads=16, persist_command_line=True))
    assert read(defaults_path(tree)) == "# local\nRPCNFSDPRIORITY=0\nRPCNFSDCOUNT=16\n"
    run_module(module, args(tree, state="absent"))
    assert read(defaults_path(tree)) == "# local\nRPCNFSDPRIORITY=0\n"


def test_a_count_in_rpcnfsdopts_is_reported_not_edited(tree):
    install(tree, BULLSEYE, defaults=False)
    text = 'RPCNFSDCOUNT=8\nRPCNFSDOPTS="--no-udp 24"\n'
    write(defaults_path(tree), text)
    result = run_module(module, args(tree, threads=32, persist_command_line=True))
    assert read(defaults_path(tree)) == text
    assert result["effective_persisted_threads"] == 24
    assert any("RPCNFSDOPTS" in warning for warning in result["warnings"])


def test_a_foreign_record_file_fails_before_any_change(tree):
    install(tree, BULLSEYE)
    write(record_path(tree), "something else\n")
    before = tree_checksums(str(tree))
    result = fail_module(module, args(tree, threads=32, persist_command_line=True))
    assert "not written by ckptio.nfs" in result["msg"] and record_path(tree) in result["msg"]
    assert tree_checksums(str(tree)) == before
