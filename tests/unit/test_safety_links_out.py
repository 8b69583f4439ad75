"""Issue 45, "Links followed out of our place": a bundle's host directories and files, and a canary's
directories below its target, are never followed through a symbolic link; a link planted where we
read or write our own files is a clean refusal naming the path, never a traceback.

Each test failed on the code before the fix (a linked client read as a client, ranks writing into
a linked folder, an unhandled FileRefused). docs/safety.md "The newest surfaces" lists them.
"""
from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.host import bundle_reader
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle_values import BundleError
from ansible_collections.ckptio.nfs.plugins.modules import checkpoint_report, compare_report, diagnose_bundle
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module, sample_path, tree_checksums

SECRET = "root:secret-hash:19000:0:99999:7:::"


def _bundle(tmp_path, name="healthy"):
    dest = tmp_path / name
    shutil.copytree(sample_path("..", "captures", name), str(dest))
    return dest


def _outside_client(tmp_path, bundle):
    """A client's files outside the bundle, one of them carrying a secret the bundle must never show."""
    outside = tmp_path / "outside"
    shutil.copytree(str(bundle / "clients" / "nfs2"), str(outside))
    with open(str(outside / "canary.json")) as handle:
        canary = json.load(handle)
    canary["path"] = SECRET
    (outside / "canary.json").write_text(json.dumps(canary))
    return outside


def _hosts_in(result):
    """Every client a diagnosis names in its figures (the evidence rows of the problems left out)."""
    text = json.dumps(dict((k, v) for k, v in result.items() if k != "evidence"))
    return text


def test_a_client_directory_linked_out_of_the_bundle_is_listed_and_never_read(tmp_path):
    bundle = _bundle(tmp_path)
    outside = _outside_client(tmp_path, bundle)
    os.symlink(str(outside), str(bundle / "clients" / "nfs9"))
    loaded = bundle_reader.load_bundle(str(bundle))
    assert sorted(loaded["clients"]) == ["nfs2", "nfs3"]
    assert any(str(bundle / "clients" / "nfs9") in p and "is a symbolic link" in p for p in loaded["problems"])
    result = run_module(diagnose_bundle, {"bundle": str(bundle), "write": False})
    assert SECRET not in json.dumps(result)
    assert "nfs9" not in _hosts_in(result["diagnosis"])
    assert any("is a symbolic link" in json.dumps(row) and "nfs9" in json.dumps(row)
               for row in result["diagnosis"]["evidence"])


def test_a_server_directory_linked_out_of_the_bundle_is_listed_and_never_read(tmp_path):
    bundle = _bundle(tmp_path)
    outside = tmp_path / "outside-server"
    shutil.copytree(str(bundle / "servers" / sorted(os.listdir(str(bundle / "servers")))[0]), str(outside))
    os.symlink(str(outside), str(bundle / "servers" / "nfs8"))
    loaded = bundle_reader.load_bundle(str(bundle), stream=True)
    assert "nfs8" not in list(loaded["servers"])
    assert any(str(bundle / "servers" / "nfs8") in p and "is a symbolic link" in p for p in loaded["problems"])


@pytest.mark.parametrize("kind", ["clients", "servers"])
def test_a_clients_or_servers_directory_that_is_a_link_is_refused_naming_it(tmp_path, kind):
    bundle = _bundle(tmp_path)
    outside = tmp_path / ("outside-" + kind)
    shutil.move(str(bundle / kind), str(outside))
    os.symlink(str(outside), str(bundle / kind))
    with pytest.raises(BundleError, match="is a symbolic link"):
        bundle_reader.load_bundle(str(bundle))
    result = fail_module(diagnose_bundle, {"bundle": str(bundle), "write": False})
    assert str(bundle / kind) in result["msg"] and "is a symbolic link" in result["msg"]


def test_a_host_file_linked_out_of_the_bundle_is_listed_as_a_problem_and_not_used(tmp_path):
    bundle = _bundle(tmp_path)
    outside = _outside_client(tmp_path, bundle)
    linked = bundle / "clients" / "nfs3" / "canary.json"
    linked.unlink()
    os.symlink(str(outside / "canary.json"), str(linked))
    loaded = bundle_reader.load_bundle(str(bundle))
    assert "canary" not in loaded["clients"]["nfs3"]
    assert [p for p in loaded["problems"] if "is a symbolic link" in p] == [
        "%s is a symbolic link: not read (never followed out of the bundle)" % linked]
    result = run_module(diagnose_bundle, {"bundle": str(bundle), "write": False})
    assert SECRET not in json.dumps(result)


def test_compare_report_never_shows_a_linked_clients_secret(tmp_path):
    bundle = _bundle(tmp_path)
    outside = _outside_client(tmp_path, bundle)
    os.symlink(str(outside), str(bundle / "clients" / "nfs9"))
    out = tmp_path / "out"
    result = run_module(compare_report, {"options": [{"name": "a", "bundle": str(bundle)}], "output_dir": str(out), "png": False})
    for name in os.listdir(str(out)):
        text = (out / name).read_text()
        assert SECRET not in text
        assert [line for line in text.splitlines() if "nfs9" in line and "symbolic link" not in line] == []
    assert SECRET not in json.dumps(result)


def test_checkpoint_report_never_reads_a_linked_client(tmp_path):
    bundle = _bundle(tmp_path)
    outside = _outside_client(tmp_path, bundle)
    os.symlink(str(outside), str(bundle / "clients" / "nfs9"))
    before = tree_checksums(str(outside))
    result = run_module(checkpoint_report, {"bundle": str(bundle), "png": False})
    assert SECRET not in json.dumps(result)
    for name in ("report.md", "report.json"):
        text = (bundle / name).read_text()
        assert SECRET not in text
        assert [line for line in text.splitlines() if "nfs9" in line and "symbolic link" not in line] == []
    assert tree_checksums(str(outside)) == before


# ---------------------------------------------------------------- the canary's directories below its target

from ansible_collections.ckptio.nfs.plugins.modules import checkpoint_canary  # noqa: E402 pylint: disable=wrong-import-position
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_checkpoint_canary import _args  # noqa: E402 pylint: disable=wrong-import-position
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_checkpoint_canary import live_host  # noqa: E402,F401 pylint: disable=wrong-import-position,unused-import


def _job_with_a_link(tmp_path, name):
    """A torch_dcp job directory (ours: 0700) in which `name` is a symbolic link to a folder outside."""
    target = tmp_path / "target"
    job = target / "ckptio-canary-job-j1"
    job.mkdir(parents=True)
    os.chmod(str(job), 0o700)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(str(outside), str(job / name))
    return target, job, outside


@pytest.mark.usefixtures("live_host")
@pytest.mark.parametrize("name", ["checkpoint", ".ckptio-barrier"])
def test_a_link_planted_in_a_job_directory_is_refused_and_nothing_is_written_through_it(tmp_path, name):
    target, job, outside = _job_with_a_link(tmp_path, name)
    args = _args(target, ranks=2, shape="torch_dcp", job_id="j1", job_ranks=2, timeout=10, start_at=time.time())
    result = fail_module(checkpoint_canary, args)
    assert os.listdir(str(outside)) == [], "the ranks wrote through the link into %s" % outside
    errors = " ".join(r["error"] or "" for r in result["ranks"])
    assert name in errors and "is a symbolic link" in errors
    assert os.path.islink(str(job / name))


@pytest.mark.usefixtures("live_host")
def test_a_written_json_planted_as_a_link_is_a_clean_failure_naming_it(tmp_path):
    """Before: the link was not followed, but FileRefused ended the module in a traceback."""
    import threading
    import time
    from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_checkpoint_canary import _write_json
    target, barrier_dir = tmp_path / "target", tmp_path / "barrier"
    target.mkdir()
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("{}\n")

    def play():
        deadline = time.time() + 30
        while not (barrier_dir / "ready.json").exists() and time.time() < deadline:
            time.sleep(0.01)
        os.symlink(str(elsewhere), str(barrier_dir / "written.json"))
        _write_json(barrier_dir / "go.json", {"go_at": time.time() + 0.2})
    threading.Thread(target=play, daemon=True).start()
    result = fail_module(checkpoint_canary, _args(target, restore=True, barrier_dir=str(barrier_dir), barrier_timeout=20))
    assert str(barrier_dir / "written.json") in result["msg"] and "symbolic link" in result["msg"]
    assert elsewhere.read_text() == "{}\n" and os.path.islink(str(barrier_dir / "written.json"))
    assert [name for name in os.listdir(str(target)) if name.startswith("ckptio-canary-")] == []
