"""diagnose_bundle through its real main() on temp copies of the lab bundles."""
from __future__ import annotations

import json
import os
import shutil
import stat

import pytest

from ansible_collections.ckptio.nfs.plugins.modules import diagnose_bundle
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module, sample_path, tree_checksums


def copy_bundle(name, tmp_path):
    dest = str(tmp_path / name)
    shutil.copytree(sample_path("bundles", name), dest)
    for dirpath, dirnames, filenames in os.walk(dest):
        os.chmod(dirpath, 0o755)
        for file_name in filenames:
            os.chmod(os.path.join(dirpath, file_name), 0o644)
    return dest


def test_writes_json_and_markdown_then_is_idempotent(tmp_path):
    bundle = copy_bundle("seed_like_baseline", tmp_path)
    result = run_module(diagnose_bundle, {"bundle": bundle}, diff=True)
    assert result["changed"] is True
    assert result["diagnosis"]["verdict"] == "tune" and result["diagnosis"]["limiting_layer"] == "client_rpc_slots"
    with open(os.path.join(bundle, "diagnosis.json")) as handle:
        assert json.load(handle)["limiting_layer"] == "client_rpc_slots"
    with open(os.path.join(bundle, "diagnosis.md")) as handle:
        markdown = handle.read()
    assert result["diff"][0]["after"] == markdown and result["diff"][0]["before"] == ""
    again = run_module(diagnose_bundle, {"bundle": bundle}, diff=True)
    assert again["changed"] is False and again["diff"] == []


def test_check_mode_writes_nothing(tmp_path):
    bundle = copy_bundle("shared_vs_perrank_5b_per_rank", tmp_path)
    before = tree_checksums(bundle)
    result = run_module(diagnose_bundle, {"bundle": bundle}, check_mode=True)
    # No link evidence in this bundle: the RTT/send-queue symptoms do not name the network (#11).
    assert result["changed"] is True and result["diagnosis"]["limiting_layer"] == "server_storage"
    assert tree_checksums(bundle) == before


def test_read_only_bundle_is_left_alone(tmp_path):
    bundle = copy_bundle("seed_like_baseline", tmp_path)
    os.chmod(bundle, stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    try:
        before = tree_checksums(bundle)
        result = run_module(diagnose_bundle, {"bundle": bundle})
        assert result["changed"] is False and result["files"] == []
        assert tree_checksums(bundle) == before
        out = tmp_path / "out"
        out.mkdir()
        result = run_module(diagnose_bundle, {"bundle": bundle, "output_dir": str(out)})
        assert result["changed"] is True and sorted(os.listdir(str(out))) == ["diagnosis.json", "diagnosis.md"]
    finally:
        os.chmod(bundle, 0o755)


@pytest.mark.parametrize("args, message", [
    ({"bundle": "/nonexistent/bundle"}, "bundle: /nonexistent/bundle is not a directory"),
])
def test_bad_paths_fail_with_the_option_name(args, message):
    assert fail_module(diagnose_bundle, args)["msg"] == message


def test_incomplete_bundle_fails_before_writing(tmp_path):
    bundle = copy_bundle("seed_like_baseline", tmp_path)
    os.remove(os.path.join(bundle, "clients", "nfs2", "mountstats_after.txt"))
    before = tree_checksums(bundle)
    result = fail_module(diagnose_bundle, {"bundle": bundle})
    assert "clients/nfs2/mountstats_after.txt is missing" in result["msg"]
    assert tree_checksums(bundle) == before
    assert "output_dir" in fail_module(diagnose_bundle, {"bundle": bundle, "output_dir": str(tmp_path / "missing")})["msg"]
