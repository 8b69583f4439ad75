"""saved_stats_bundle through its real main(): real lab captures saved under other names -> a bundle -> its diagnosis.

The raw files are the lab captures (tests/fixtures/captures/seed_like_v41, tests/fixtures/samples);
the nfsiostat and mountstats command outputs are in tests/fixtures/saved (NOTES.txt: how each was made).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import saved_files
from ansible_collections.ckptio.nfs.plugins.modules import diagnose_bundle, saved_stats_bundle
from ansible_collections.ckptio.nfs.tests.unit.test_safety_states_fstab import collection_root
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module, sample_path, tree_checksums

FIXTURES = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures"))
SEED = os.path.join(FIXTURES, "captures", "seed_like_v41")
TARGET = {"checkpoint_bytes": 2400000000, "window_seconds": 300}
# saved name -> real capture: names that sort against time, as an operator's might.
SEED_SAVED = {
    "after.txt": "clients/nfs2/mountstats_after.txt", "before.txt": "clients/nfs2/mountstats_before.txt",
    "nfsd-2.txt": "servers/nfs1/nfsd_before.txt", "nfsd-1.txt": "servers/nfs1/nfsd_after.txt",
    "pool-b": "servers/nfs1/pool_stats_after.txt", "pool-a": "servers/nfs1/pool_stats_before.txt",
}


def saved_dir(tmp_path, files=None, extra=()):
    """A directory of saved files: SEED_SAVED (or `files`: name -> path) plus `extra` (name, path)."""
    src = tmp_path / "saved"
    src.mkdir()
    chosen = dict((name, os.path.join(SEED, relative)) for name, relative in SEED_SAVED.items()) if files is None else dict(files)
    chosen.update(extra)
    for name, path in chosen.items():
        shutil.copyfile(path, str(src / name))
    return str(src)


def args(src, dest, **more):
    result = dict(TARGET, src=src, dest=dest, client="nfs2", server="nfs1")
    result.update(more)
    return result


def test_saved_builds_a_bundle_then_is_idempotent(tmp_path):
    dest = str(tmp_path / "bundle")
    result = run_module(saved_stats_bundle, args(saved_dir(tmp_path), dest), diff=True)
    assert result["changed"] is True and result["window"] == "snapshots" and result["interval_seconds"] == 127.0
    assert len(result["changed_files"]) == 7 and result["removed"] == [] and result["unusable"] == []
    assert {row["file"]: row["used_as"] for row in result["sources"]}["before.txt"] == "clients/nfs2/mountstats_before.txt"
    with open(os.path.join(dest, "servers/nfs1/nfsd_before.txt")) as handle, open(os.path.join(SEED, "servers/nfs1/nfsd_before.txt")) as lab:
        assert handle.read() == lab.read()
    with open(os.path.join(dest, "context.yml")) as handle:
        context = yaml.safe_load(handle)
    assert context["saved"]["written_by"] == saved_files.WRITER and context["target"] == {"checkpoint_bytes": 2400000000,
                                                                                          "window_seconds": 300.0}
    assert [entry["before"] for entry in result["diff"]] == [""] * 7
    again = run_module(saved_stats_bundle, args(os.path.join(str(tmp_path), "saved"), dest), diff=True)
    assert again["changed"] is False and again["changed_files"] == [] and again["diff"] == []


def test_saved_check_mode_writes_nothing(tmp_path):
    src = saved_dir(tmp_path)
    dest = str(tmp_path / "bundle")
    before = tree_checksums(str(tmp_path))
    result = run_module(saved_stats_bundle, args(src, dest), check_mode=True, diff=True)
    assert result["changed"] is True and len(result["changed_files"]) == 7
    assert not os.path.exists(dest) and tree_checksums(str(tmp_path)) == before
    # Over a bundle it wrote, with another client name: it would write the new files and remove the old.
    run_module(saved_stats_bundle, args(src, dest))
    before = tree_checksums(str(tmp_path))
    result = run_module(saved_stats_bundle, args(src, dest, client="gpu017"), check_mode=True, diff=True)
    assert result["changed"] is True and sorted(os.path.basename(path) for path in result["removed"]) == [
        "mountstats_after.txt", "mountstats_before.txt"]
    assert tree_checksums(str(tmp_path)) == before


def test_saved_rerun_with_another_client_removes_the_old_client(tmp_path):
    src, dest = saved_dir(tmp_path), str(tmp_path / "bundle")
    run_module(saved_stats_bundle, args(src, dest))
    result = run_module(saved_stats_bundle, args(src, dest, client="gpu017"))
    assert result["changed"] is True and len(result["removed"]) == 2
    assert sorted(os.listdir(os.path.join(dest, "clients"))) == ["gpu017"]


def test_saved_wrong_file_kinds_are_named_in_the_error(tmp_path):
    src = saved_dir(tmp_path, extra=[("iostat.log", os.path.join(FIXTURES, "saved", "nfsiostat_after.txt")),
                                     ("stats.out", os.path.join(FIXTURES, "saved", "mountstats-tool_after.txt"))])
    dest = str(tmp_path / "bundle")
    failed = fail_module(saved_stats_bundle, args(src, dest))
    assert "2 file(s) cannot be used" in failed["msg"] and "nothing was written" in failed["msg"]
    assert "iostat.log: nfsiostat output: per-mount rates" in failed["msg"] and "makes no before/after delta" in failed["msg"]
    assert "stats.out: output of the mountstats command" in failed["msg"]
    assert [row["file"] for row in failed["unusable"]] == ["iostat.log", "stats.out"] and not os.path.exists(dest)
    result = run_module(saved_stats_bundle, args(src, dest, skip_unusable=True))
    assert result["changed"] is True and [row["kind"] for row in result["unusable"]] == ["nfsiostat", "mountstats_report"]
    assert any(warning.startswith("iostat.log not used (nfsiostat output)") for warning in result["warnings"])


def test_saved_mixed_mounts_and_reset_counters_fail_naming_the_files(tmp_path):
    mixed = saved_dir(tmp_path, {"x": os.path.join(FIXTURES, "captures/healthy/clients/nfs2/mountstats_before.txt"),
                                 "y": os.path.join(FIXTURES, "captures/healthy/clients/nfs3/mountstats_after.txt")})
    failed = fail_module(saved_stats_bundle, args(mixed, str(tmp_path / "b1")))
    assert "x and y are not two snapshots of one mount on /mnt/nfs" in failed["msg"] and "clientaddr" in failed["msg"]
    reset_dir = tmp_path / "reset"
    reset_dir.mkdir()
    reset = saved_dir(reset_dir, {"first": sample_path("bundles/seed_like_baseline/clients/nfs2/mountstats_after.txt"),
                                  "second": sample_path("broken/mountstats_after_remounted_age_rose.txt")})
    failed = fail_module(saved_stats_bundle, args(reset, str(tmp_path / "b2")))
    assert "(reset)" in failed["msg"] and "never averaged" in failed["msg"]
    assert not os.path.exists(str(tmp_path / "b1")) and not os.path.exists(str(tmp_path / "b2"))


def test_saved_refuses_a_non_empty_directory_it_did_not_write(tmp_path):
    dest = tmp_path / "data"
    dest.mkdir()
    (dest / "checkpoint.bin").write_text("x")
    before = tree_checksums(str(dest))
    failed = fail_module(saved_stats_bundle, args(saved_dir(tmp_path), str(dest)))
    assert failed["msg"].startswith("dest: ") and "not a bundle this module wrote" in failed["msg"]
    assert tree_checksums(str(dest)) == before


def test_saved_single_snapshot_bundle_is_diagnosed_as_since_mount(tmp_path):
    src = saved_dir(tmp_path, {"gpu017-mountstats": sample_path("mountstats-v41-nconnect4-after-2GiB-write.txt")})
    dest = str(tmp_path / "bundle")
    result = run_module(saved_stats_bundle, args(src, dest))
    assert result["window"] == "since_mount" and result["interval_seconds"] == 178.0
    assert "not a checkpoint window" in result["notes"][0]
    diagnosis = run_module(diagnose_bundle, {"bundle": dest})["diagnosis"]
    assert diagnosis["window"]["kind"] == "since_mount" and "Since-mount average over 178 s" in diagnosis["summary"]
    # A since-mount average decides nothing (CONTRACT 2): no verdict on throughput, no gap, what to capture instead.
    assert diagnosis["verdict"] == "no_window" and diagnosis["gap_factor"] is None
    assert diagnosis["recommendations"][0]["setting"] == "capture a checkpoint window"
    assert diagnosis["headline"]["snapshot_text"].startswith("the snapshot shows, averaged since the mount: WRITE waited ")


def test_saved_bundle_diagnoses_like_a_canary_bundle(tmp_path):
    dest = str(tmp_path / "bundle")
    run_module(saved_stats_bundle, args(saved_dir(tmp_path), dest))
    result = run_module(diagnose_bundle, {"bundle": dest})
    assert result["changed"] is True and result["diagnosis"]["limiting_layer"] == "client_rpc_slots"
    # diagnosis.json and .md beside the bundle's files do not stop a rerun, and are left alone.
    again = run_module(saved_stats_bundle, args(os.path.join(str(tmp_path), "saved"), dest))
    assert again["changed"] is False and os.path.exists(os.path.join(dest, "diagnosis.json"))


def test_saved_documented_commands_work_end_to_end(tmp_path):
    """README's two commands, run for real on the implicit localhost: `ansible localhost -m ckptio.nfs.saved_stats_bundle`,
    then `ansible-playbook ckptio.nfs.diagnose -e ckptio_bundle=DIR`."""
    binaries = dict((name, os.path.join(os.path.dirname(sys.executable), name)) for name in ("ansible", "ansible-playbook"))
    if not all(os.path.exists(path) for path in binaries.values()):
        pytest.skip("ansible and ansible-playbook are not next to this python")
    src, dest = saved_dir(tmp_path), str(tmp_path / "bundle")
    environment = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collection_root(), ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0",
                       ANSIBLE_INVENTORY_UNPARSED_WARNING="0", ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
                       ANSIBLE_HOME=str(tmp_path / "ansible-home"), ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    for argv in ([binaries["ansible"], "localhost", "-m", "ckptio.nfs.saved_stats_bundle", "-a", json.dumps(dict(TARGET, src=src, dest=dest))],
                 [binaries["ansible-playbook"], "ckptio.nfs.diagnose", "-e", "ckptio_bundle=%s" % dest]):
        run = subprocess.run(argv, env=environment, capture_output=True, text=True, timeout=300, cwd=str(tmp_path), check=False)
        assert run.returncode == 0, run.stdout + run.stderr
    # The play ends with the diagnosis's first screen (ckptio.nfs.diagnose, issue 23 item 9).
    assert "Limiting layer: client RPC slots" in run.stdout
    with open(os.path.join(dest, "diagnosis.json")) as handle:
        assert json.load(handle)["window"]["kind"] == "snapshots"
