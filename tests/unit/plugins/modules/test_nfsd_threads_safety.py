"""nfsd_threads' command line and drop-ins under hostile states (issue 24 items 7-11).

The module runs through its real main() on a fake root holding the real Debian 11 package's
units, nfs-utils_env.sh and /etc/default/nfs-kernel-server (tests/fixtures/distro).
"""
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.ckptio.nfs.plugins.modules import nfsd_threads as module
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_nfsd_threads_command_line import (
    BULLSEYE, defaults_path, install, record_path)
# The max_connections tests' fake root, as a fixture of this module.
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_nfsd_threads_max_connections import (  # noqa: F401 pylint: disable=unused-import
    tree as connections_tree)
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_nfsd_threads import args, build_tree, read, write
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module, tree_checksums

RECORD_HEADER = "# Managed by ckptio.nfs.nfsd_threads: the RPCNFSDCOUNT line it replaced, for state=absent.\n"


@pytest.fixture
def tree(fake_root, monkeypatch):
    return build_tree(fake_root, monkeypatch)


# ---- item 7: a rollback restores only over the line ckptio wrote ---------------------------------
def test_rollback_keeps_an_operators_later_line_and_says_so(tree):
    template = install(tree, BULLSEYE)
    run_module(module, args(tree, threads=32, persist_command_line=True))
    operators = read(defaults_path(tree)).replace("RPCNFSDCOUNT=32\n", "RPCNFSDCOUNT=64\n")
    write(defaults_path(tree), operators)
    record = read(record_path(tree))
    result = run_module(module, args(tree, state="absent"))
    assert read(defaults_path(tree)) == operators and operators != template
    assert read(record_path(tree)) == record
    [warning] = [w for w in result["warnings"] if "not restored" in w]
    assert "RPCNFSDCOUNT=64" in warning and "RPCNFSDCOUNT=32" in warning and "RPCNFSDCOUNT=8" in warning
    assert record_path(tree) in warning
    # Nothing else changed in the defaults file, and a second rollback is quiet about files.
    again = run_module(module, args(tree, state="absent"))
    assert read(defaults_path(tree)) == operators


def test_rollback_still_restores_the_line_ckptio_wrote(tree):
    template = install(tree, BULLSEYE)
    run_module(module, args(tree, threads=32, persist_command_line=True))
    assert json.loads(read(record_path(tree))[len(RECORD_HEADER):])["written"] == "RPCNFSDCOUNT=32"
    run_module(module, args(tree, state="absent"))
    assert read(defaults_path(tree)) == template and not os.path.exists(record_path(tree))


def test_a_record_without_the_written_line_keeps_the_line_and_warns(tree):
    """A record from before ckptio kept the line it wrote: the line now may be anyone's."""
    install(tree, BULLSEYE, defaults=False)
    write(defaults_path(tree), "RPCNFSDCOUNT=64\n")
    write(record_path(tree), RECORD_HEADER + json.dumps({"path": defaults_path(tree), "line": "RPCNFSDCOUNT=8"}) + "\n")
    result = run_module(module, args(tree, state="absent"))
    assert read(defaults_path(tree)) == "RPCNFSDCOUNT=64\n" and os.path.exists(record_path(tree))
    assert any("not restored" in w and "did not keep the line it wrote" in w for w in result["warnings"])


def test_a_second_tuning_updates_the_written_line_and_keeps_the_original(tree):
    template = install(tree, BULLSEYE)
    run_module(module, args(tree, threads=32, persist_command_line=True))
    run_module(module, args(tree, threads=64, persist_command_line=True))
    record = json.loads(read(record_path(tree))[len(RECORD_HEADER):])
    assert (record["line"], record["written"]) == ("RPCNFSDCOUNT=8", "RPCNFSDCOUNT=64")
    run_module(module, args(tree, state="absent"))
    assert read(defaults_path(tree)) == template


# ---- item 8: what cannot be read is unknown, never in sync ---------------------------------------
@pytest.mark.parametrize("line, edited", [
    ("RPCNFSDCOUNT=8    # comment\n", "RPCNFSDCOUNT=32    # comment\n"),
    ('RPCNFSDCOUNT="8"  # comment\n', 'RPCNFSDCOUNT="32"  # comment\n'),
], ids=["comment", "quoted-comment"])
def test_a_count_with_a_comment_is_read_and_edited_in_place(tree, line, edited):
    install(tree, BULLSEYE, defaults=False)
    write(defaults_path(tree), "# mine\n" + line + "RPCNFSDPRIORITY=0\n")
    result = run_module(module, args(tree, threads=32))
    assert result["persist_mechanism"] == "command_line" and result["effective_persisted_threads"] == 8
    assert result["settings"][0]["in_sync"] is False
    result = run_module(module, args(tree, threads=32, persist_command_line=True))
    assert read(defaults_path(tree)) == "# mine\n" + edited + "RPCNFSDPRIORITY=0\n"
    assert result["settings"][0]["in_sync"] is True and result["effective_persisted_threads"] == 32


UNREADABLE = [
    ('RPCNFSDCOUNT="$(nproc)"\n', ["line 1", "command substitution $(nproc)"]),
    ("RPCNFSDCOUNT=$COUNT\n", ["line 1", "the expansion $COUNT"]),
    ("if [ -r /etc/big ]; then\n  RPCNFSDCOUNT=64\nelse\n  RPCNFSDCOUNT=8\nfi\n", ["lines 2, 4"]),
]


@pytest.mark.parametrize("text, words", UNREADABLE, ids=["command-substitution", "expansion", "if-else"])
@pytest.mark.parametrize("check_mode", [False, True], ids=["run", "check"])
def test_an_unreadable_count_is_unknown_and_not_in_sync(tree, text, words, check_mode):
    install(tree, BULLSEYE, defaults=False)
    write(defaults_path(tree), text)
    result = run_module(module, args(tree, threads=32, _ansible_check_mode=check_mode))
    assert result["persist_mechanism"] == "unknown"
    assert result["effective_persisted_threads"] is None
    row = result["settings"][0]
    assert row["in_sync"] is False and row["persisted"] is None
    for word in words:
        assert word in result["persist_mechanism_reason"]
    assert any("unknown" in w and "not in sync" in w and words[0] in w for w in result["warnings"])


@pytest.mark.parametrize("text, words", UNREADABLE, ids=["command-substitution", "expansion", "if-else"])
def test_an_unreadable_count_is_never_edited(tree, text, words):
    install(tree, BULLSEYE, defaults=False)
    write(defaults_path(tree), text)
    result = run_module(module, args(tree, threads=32, persist_command_line=True))
    assert read(defaults_path(tree)) == text and not os.path.exists(record_path(tree))
    assert result["settings"][0]["in_sync"] is False


def test_no_unit_at_all_is_still_nfs_conf_and_in_sync(tree):
    """Nothing passes a count where no nfs-server unit exists: that is no unreadable count."""
    result = run_module(module, args(tree, threads=32))
    assert result["persist_mechanism"] == "unknown" and result["settings"][0]["in_sync"] is True


# ---- item 9: state=absent removes only what ckptio wrote in its drop-in --------------------------
def test_absent_keeps_lines_an_operator_added_to_our_dropin(connections_tree):
    world = connections_tree
    run_module(module, world.args(threads=8, max_connections=5000))
    ours = read(world.dropin)
    write(world.dropin, ours + "Environment=SITE=1\nExecStartPost=/usr/local/bin/tell-ops\n")
    result = run_module(module, world.args(state="absent"))
    assert result["changed"] is True
    assert read(world.dropin) == "[Service]\nEnvironment=SITE=1\nExecStartPost=/usr/local/bin/tell-ops\n"
    assert not os.path.exists(world.value_file)
    again = run_module(module, world.args(state="absent"))
    assert again["changed"] is False


def test_zero_keeps_lines_an_operator_added_and_a_new_value_keeps_them_too(connections_tree):
    world = connections_tree
    run_module(module, world.args(threads=8, max_connections=5000))
    added = read(world.dropin) + "# ops: see ticket 42\nTimeoutStartSec=300\n"
    write(world.dropin, added)
    run_module(module, world.args(threads=8, max_connections=6000))
    assert read(world.dropin) == added and read(world.value_file) == "6000\n"
    run_module(module, world.args(threads=8, max_connections=0))
    assert read(world.dropin) == "[Service]\n# ops: see ticket 42\nTimeoutStartSec=300\n"


def test_absent_still_deletes_a_dropin_that_holds_only_our_lines(connections_tree):
    world = connections_tree
    run_module(module, world.args(threads=8, max_connections=5000))
    run_module(module, world.args(state="absent"))
    assert not os.path.exists(world.dropin)


# ---- item 10: one reader, one writer, changed whenever anything was written ----------------------
@pytest.mark.parametrize("which", ["dropin", "value_file"])
def test_a_directory_where_our_connection_file_belongs_fails_cleanly(connections_tree, which):
    world = connections_tree
    os.makedirs(getattr(world, which))
    before = tree_checksums(str(world.root))
    result = fail_module(module, world.args(threads=8, max_connections=5000))
    assert getattr(world, which) in result["msg"] and "EISDIR" in result["msg"]
    assert result["changed"] is False and tree_checksums(str(world.root)) == before


def test_a_failed_write_after_the_record_was_written_reports_changed(tree, monkeypatch):
    """The record is written first; the defaults file then fails (as an immutable one does): changed is true."""
    install(tree, BULLSEYE)
    real = module.file_edits.file_write.write_file

    def immutable_defaults(mod, path, *args, **kwargs):
        if path == defaults_path(tree):
            raise PermissionError(1, "Operation not permitted", path)
        return real(mod, path, *args, **kwargs)
    monkeypatch.setattr(module.file_edits.file_write, "write_file", immutable_defaults)
    result = fail_module(module, args(tree, threads=32, persist_command_line=True))
    assert result["changed"] is True
    assert defaults_path(tree) in result["msg"] and record_path(tree) in result["msg"]
    assert "RPCNFSDCOUNT=8\n" in read(defaults_path(tree))


# ---- item 11: every backup, named by the file it saves -------------------------------------------
def test_backup_file_is_conf_files_and_backup_files_names_every_backup(tree):
    install(tree, BULLSEYE)
    conf = args(tree)["conf_file"]
    write(conf, "[nfsd]\nthreads=16\n")
    defaults_before = read(defaults_path(tree))
    result = run_module(module, args(tree, threads=32, persist_command_line=True, backup=True))
    assert read(result["backup_file"]) == "[nfsd]\nthreads=16\n"
    assert sorted(result["backup_files"]) == sorted([conf, defaults_path(tree)])
    assert result["backup_files"][conf] == result["backup_file"]
    assert read(result["backup_files"][defaults_path(tree)]) == defaults_before


def test_backup_of_the_defaults_file_alone_is_no_backup_file(tree):
    """Only the defaults file changed: backup_file (documented as conf_file's) is absent, not the other file's."""
    install(tree, BULLSEYE)
    run_module(module, args(tree, threads=32))
    result = run_module(module, args(tree, threads=32, persist_command_line=True, backup=True))
    assert "backup_file" not in result and list(result["backup_files"]) == [defaults_path(tree)]


def test_the_start_check_warning_survives_a_daemon_reload(connections_tree, monkeypatch):
    """A warning appended before the drop-in's daemon-reload was dropped when the list was reassigned."""
    world = connections_tree
    monkeypatch.setattr(module.nfsd_plan, "start_verified", lambda planned, verified: "start check says so")
    monkeypatch.setattr(module.nfsd_plan, "plan_start", _plan_start_with_an_edit(module.nfsd_plan.plan_start))
    result = run_module(module, world.args(threads=8, max_connections=5000))
    assert "start check says so" in result["warnings"]


def _plan_start_with_an_edit(real):
    def plan_start(request, view):
        planned = real(request, view)
        return planned._replace(edits=[module.owned_files.FileEdit("/nonexistent/never-written", "x", "x", False)])
    return plan_start
