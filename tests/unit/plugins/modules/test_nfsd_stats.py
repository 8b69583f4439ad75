"""nfsd_stats through its real main() on a fake /proc tree."""
from __future__ import annotations

import json
import os

from ansible_collections.ckptio.nfs.plugins.modules import nfsd_stats
from ansible_collections.ckptio.nfs.tests.unit.utils import broken_capture, fail_module, read_sample, run_module, tree_checksums

SERVER = ("bundles", "seed_like_baseline", "servers", "nfs1")


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def test_reads_server_stats_in_bundle_formats(fake_root):
    proc = fake_root.path("/proc")
    write(str(proc / "net" / "rpc" / "nfsd"), read_sample(*SERVER, "nfsd_after.txt"))
    write(str(proc / "fs" / "nfsd" / "pool_stats"), read_sample(*SERVER, "pool_stats_after.txt"))
    write(str(proc / "fs" / "nfsd" / "threads"), "8\n")
    write(str(proc / "fs" / "nfsd" / "pool_threads"), "8\n")
    write(str(proc / "fs" / "nfsd" / "max_block_size"), "1048576\n")
    before = tree_checksums(str(fake_root.root))
    result = run_module(nfsd_stats, {}, check_mode=True)
    assert tree_checksums(str(fake_root.root)) == before
    assert result["changed"] is False and result["available"] is True
    assert result["raw_nfsd"] == read_sample(*SERVER, "nfsd_after.txt")
    assert result["raw_pool_stats"] == read_sample(*SERVER, "pool_stats_after.txt")
    assert result["nfsd"]["io"]["bytes_written"] == 268435456 and result["nfsd"]["proc4ops"]["WRITE"] == 4477
    assert result["pool_stats"]["pools"][0]["threads-woken"] == 5769
    assert result["threads"] == 8 and result["pool_threads"] == [8] and result["max_block_size"] == 1048576
    # min_threads exists only on kernels with dynamic threads.
    assert result["min_threads"] is None


def test_host_without_nfsd(fake_root):
    result = run_module(nfsd_stats, {})
    assert result["available"] is False and result["raw_nfsd"] == "" and result["threads"] is None
    assert result["pool_stats"] == {"columns": [], "pools": []}


def test_binary_garbage_does_not_crash_and_the_result_is_valid_utf8(fake_root):
    proc = fake_root.path("/proc")
    os.makedirs(str(proc / "net" / "rpc"))
    with open(str(proc / "net" / "rpc" / "nfsd"), "wb") as handle:
        handle.write(broken_capture("nfsd_after_with_binary_garbage.escaped.txt"))
    os.makedirs(str(proc / "fs" / "nfsd"))
    with open(str(proc / "fs" / "nfsd" / "pool_stats"), "wb") as handle:
        handle.write(broken_capture("pool_stats_after_with_binary_garbage.escaped.txt"))
    with open(str(proc / "fs" / "nfsd" / "threads"), "wb") as handle:
        handle.write(b"\xff\xfe\n")
    result = run_module(nfsd_stats, {})
    # What Ansible's controller does with the result: UTF-8 without lone surrogates.
    json.dumps(result, ensure_ascii=False).encode("utf-8")
    assert result["nfsd"]["io"]["bytes_written"] == 268435456 and result["nfsd"]["proc4ops"]["WRITE"] == 4477
    assert result["nfsd"]["threads"] == 8 and result["threads"] is None
    assert result["pool_stats"]["pools"] == [{"pool": 0, "packets-arrived": 7133, "sockets-enqueued": 7133, "threads-woken": 5769,
                                              "threads-timedout": 0}]
    assert "\\377\\376" in result["raw_nfsd"] and result["raw_nfsd"].startswith("rc 0 0 4527\n")


def test_wait_until_samples_at_that_moment(fake_root, monkeypatch):
    slept = []
    monkeypatch.setattr(nfsd_stats.time, "sleep", slept.append)
    monkeypatch.setattr(nfsd_stats.time, "time", lambda: 1000.0)
    result = run_module(nfsd_stats, {"wait_until": 1012.5})
    assert slept == [12.5] and result["changed"] is False and result["host_sample"]["format"] == 1
    slept.clear()
    result = run_module(nfsd_stats, {"wait_until": 990.0})
    assert slept == [] and any("10.0 s in the past" in warning for warning in result["warnings"])
    assert "more than 3600 s" in fail_module(nfsd_stats, {"wait_until": 1000.0 + 7200})["msg"]
