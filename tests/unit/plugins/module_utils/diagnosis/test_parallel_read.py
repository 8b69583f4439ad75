"""Reading a large bundle's clients in forked workers (run.py _read_clients, host/parallel_map.py)
gives the run the serial reading gives: the same clients, exclusions and problems, in host order."""
from __future__ import annotations

import os
import shutil

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import run
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
from ansible_collections.ckptio.nfs.plugins.module_utils.host import parallel_map
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle_values import BundleError
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="forked workers need fork()")


def _forced_parallel(monkeypatch):
    """Every client read in two forked workers, one client per chunk, when the caller passes parallel_map in (as the
    modules and the filter do: the diagnosis forks nothing itself); the calls of chunked_map, to check it ran."""
    monkeypatch.setattr(run, "PARALLEL_CLIENTS", 0)
    monkeypatch.setattr(run, "CLIENT_CHUNK", 1)
    monkeypatch.setattr(parallel_map, "workers_for", lambda items, least: 2)
    calls = []
    real = parallel_map.chunked_map

    def counted(*args, **kwargs):
        calls.append(args[3:5])
        return real(*args, **kwargs)
    monkeypatch.setattr(parallel_map, "chunked_map", counted)
    return calls


def test_no_parallel_map_passed_reads_every_client_here(monkeypatch):
    """Without a parallel map (a caller that forks nothing) the clients are read in this process, whatever their count."""
    calls = _forced_parallel(monkeypatch)
    diagnose(load_bundle(sample_path("..", "captures", "healthy"), stream=True))
    assert calls == []


def _copy(tmp_path, name):
    bundle = str(tmp_path / name)
    shutil.copytree(sample_path("..", "captures", name), bundle)
    return bundle


def _square(shared, chunk):
    if "boom" in chunk:
        raise BundleError("clients/boom: broken")
    return [shared * item for item in chunk]


@needs_fork
def test_chunked_map_keeps_order_and_raises_a_workers_error():
    items = list(range(10))
    assert parallel_map.chunked_map(_square, 3, items, 2, 2) == [[0, 3], [6, 9], [12, 15], [18, 21], [24, 27]]
    with pytest.raises(BundleError, match="clients/boom: broken"):
        parallel_map.chunked_map(_square, 1, ["a", "boom", "c"], 1, 2)


@needs_fork
@pytest.mark.parametrize("workers", [1, 2])
def test_chunked_map_applies_then_here_to_each_result_in_order(workers):
    seen = []

    def then(result):
        seen.append((os.getpid(), result))
        return sum(result)

    assert parallel_map.chunked_map(_square, 3, list(range(6)), 2, workers, then=then) == [3, 15, 27]
    assert seen == [(os.getpid(), [0, 3]), (os.getpid(), [6, 9]), (os.getpid(), [12, 15])]


@needs_fork
@pytest.mark.parametrize("name", ["healthy", "loss_2pct", "one_shaped", "old_mount"])
def test_forked_reading_gives_the_serial_diagnosis(monkeypatch, name):
    serial = diagnose(load_bundle(sample_path("..", "captures", name), stream=True))
    calls = _forced_parallel(monkeypatch)
    assert diagnose(load_bundle(sample_path("..", "captures", name), stream=True), parallel_map) == serial
    assert calls == [(run.CLIENT_CHUNK, 2)]


@needs_fork
def test_a_workers_unparsed_file_is_still_listed_once(monkeypatch, tmp_path):
    bundle = _copy(tmp_path, "healthy")
    with open(os.path.join(bundle, "clients", "nfs3", "probe.json"), "w", encoding="utf-8") as handle:
        handle.write("{not json")
    serial = diagnose(load_bundle(bundle, stream=True))
    unread = [row for row in serial["evidence"] if row["signal"] == "unreadable bundle file"]
    assert len(unread) == 1 and "nfs3/probe.json" in str(unread[0])
    calls = _forced_parallel(monkeypatch)
    assert diagnose(load_bundle(bundle, stream=True), parallel_map) == serial and calls


@needs_fork
def test_a_workers_refusal_names_the_file(monkeypatch, tmp_path):
    bundle = _copy(tmp_path, "healthy")
    with open(os.path.join(bundle, "clients", "nfs3", "canary.json"), "w", encoding="utf-8") as handle:
        handle.write('{"ranks": [{"bytes": NaN}]}')
    with pytest.raises(BundleError) as serial:
        diagnose(load_bundle(bundle, stream=True))
    calls = _forced_parallel(monkeypatch)
    with pytest.raises(BundleError) as forked:
        diagnose(load_bundle(bundle, stream=True), parallel_map)
    assert calls
    assert str(forked.value) == str(serial.value) and "nfs3/canary.json" in str(forked.value)
