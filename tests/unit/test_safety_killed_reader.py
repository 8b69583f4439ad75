"""Issue 45: a forked bundle reader killed (SIGKILL, as the OOM killer sends) ends parallel_map with WorkerDied
(host/parallel_map.py); every caller of diagnosis/run.read_run fails cleanly on it, naming the reader's chunk and
the signal, instead of ending in a traceback. diagnose_bundle's own test is in plugins/modules/test_diagnose_bundle.py.
docs/safety.md "The newest surfaces" lists them.
"""
from __future__ import annotations

import os
import shutil
import signal

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.filter.nfs_stats import FilterModule
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import run
from ansible_collections.ckptio.nfs.plugins.module_utils.host import bundle_reader
from ansible_collections.ckptio.nfs.plugins.module_utils.host import parallel_map
from ansible_collections.ckptio.nfs.plugins.modules import checkpoint_report, compare_report
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module, sample_path, tree_checksums


@pytest.fixture
def killed_reader(monkeypatch):
    """read_run forks a reader a client (two workers), and the reader of nfs3's chunk is SIGKILLed."""
    parent = os.getpid()
    monkeypatch.setattr(run, "PARALLEL_CLIENTS", 0)
    monkeypatch.setattr(run, "CLIENT_CHUNK", 1)
    monkeypatch.setattr(parallel_map, "workers_for", lambda items, least: 2)
    monkeypatch.setattr(parallel_map, "IDLE_SECONDS", 10.0)
    real_read_chunk = run._read_chunk

    def read_chunk(shared, hosts):
        # Only ever in a forked reader: the test's own process is never the one killed.
        if "nfs3" in hosts and os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return real_read_chunk(shared, hosts)
    monkeypatch.setattr(run, "_read_chunk", read_chunk)


def _bundle(tmp_path, name="healthy"):
    dest = str(tmp_path / name)
    shutil.copytree(sample_path("..", "captures", name), dest)
    return dest


def _named(message):
    return "chunk 1 of 2" in message and "SIGKILL" in message


@pytest.mark.usefixtures("killed_reader")
def test_checkpoint_report_fails_cleanly_naming_the_killed_reader_and_the_bundle(tmp_path):
    """Before: WorkerDied (a RuntimeError) passed the report's except and ended the module in a traceback."""
    bundle = _bundle(tmp_path)
    before = tree_checksums(bundle)
    result = fail_module(checkpoint_report, {"bundle": bundle, "png": False})
    assert _named(result["msg"]) and bundle in result["msg"], result["msg"]
    assert tree_checksums(bundle) == before


@pytest.mark.usefixtures("killed_reader")
def test_the_nfs_diagnosis_filter_fails_cleanly_naming_the_killed_reader(tmp_path):
    """The filter reads a bundle in memory through the same read_run: an AnsibleFilterError, not a traceback."""
    loaded = bundle_reader.load_bundle(_bundle(tmp_path))
    bundle = {"context": loaded["context"], "clients": loaded["clients"], "servers": loaded.get("servers") or {}}
    with pytest.raises(AnsibleFilterError) as caught:
        FilterModule().filters()["nfs_diagnosis"](bundle)
    assert _named(str(caught.value)) and str(caught.value).startswith("nfs_diagnosis: ")


def test_compare_report_reads_no_bundle_through_a_forked_reader(tmp_path, monkeypatch):
    """A guard, not a fix: compare_report reads each bundle in its own process (bundle_reader.load_bundle and the
    saved diagnosis.json, never read_run or parallel_map), so no killed reader can reach it; were it ever to fork
    one, this test would fail on the WorkerDied."""
    def refuse(*_args, **_kwargs):
        raise parallel_map.WorkerDied("reader 1 (pid 1) of chunk 1 of 2 killed by SIGKILL")
    monkeypatch.setattr(parallel_map, "chunked_map", refuse)
    out = tmp_path / "out"
    options = [{"name": "a", "bundle": _bundle(tmp_path)}]
    result = run_module(compare_report, {"options": options, "output_dir": str(out), "png": False})
    assert os.path.isfile(str(out / "compare.md")) and result["files"]
