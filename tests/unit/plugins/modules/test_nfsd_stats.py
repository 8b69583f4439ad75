"""nfsd_stats through its real main() on a fake /proc tree."""
from __future__ import annotations

import os

from ansible_collections.ckptio.nfs.plugins.modules import nfsd_stats
from ansible_collections.ckptio.nfs.tests.unit.utils import read_sample, run_module, tree_checksums

SERVER = ("bundles", "seed_like_baseline", "servers", "nfs1")


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def test_reads_server_stats_in_bundle_formats(tmp_path, monkeypatch):
    write(str(tmp_path / "net" / "rpc" / "nfsd"), read_sample(*SERVER, "nfsd_after.txt"))
    write(str(tmp_path / "fs" / "nfsd" / "pool_stats"), read_sample(*SERVER, "pool_stats_after.txt"))
    write(str(tmp_path / "fs" / "nfsd" / "threads"), "8\n")
    write(str(tmp_path / "fs" / "nfsd" / "pool_threads"), "8\n")
    write(str(tmp_path / "fs" / "nfsd" / "max_block_size"), "1048576\n")
    monkeypatch.setattr(nfsd_stats, "PROC_NFSD_STATS", str(tmp_path / "net" / "rpc" / "nfsd"))
    monkeypatch.setattr(nfsd_stats, "PROC_FS_NFSD", str(tmp_path / "fs" / "nfsd"))
    before = tree_checksums(str(tmp_path))
    result = run_module(nfsd_stats, {}, check_mode=True)
    assert tree_checksums(str(tmp_path)) == before
    assert result["changed"] is False and result["available"] is True
    assert result["raw_nfsd"] == read_sample(*SERVER, "nfsd_after.txt")
    assert result["raw_pool_stats"] == read_sample(*SERVER, "pool_stats_after.txt")
    assert result["nfsd"]["io"]["bytes_written"] == 268435456 and result["nfsd"]["proc4ops"]["WRITE"] == 4477
    assert result["pool_stats"]["pools"][0]["threads-woken"] == 5769
    assert result["threads"] == 8 and result["pool_threads"] == [8] and result["max_block_size"] == 1048576
    # min_threads exists only on kernels with dynamic threads.
    assert result["min_threads"] is None


def test_host_without_nfsd(tmp_path, monkeypatch):
    monkeypatch.setattr(nfsd_stats, "PROC_NFSD_STATS", str(tmp_path / "nope"))
    monkeypatch.setattr(nfsd_stats, "PROC_FS_NFSD", str(tmp_path / "nope-either"))
    result = run_module(nfsd_stats, {})
    assert result["available"] is False and result["raw_nfsd"] == "" and result["threads"] is None
    assert result["pool_stats"] == {"columns": [], "pools": []}
