"""Which statistics files a host's part of a bundle holds, decided once for the canary and the capture."""
from __future__ import annotations

import json

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle

CLIENT_BEFORE = {"raw_mountstats": "device a\n", "sunrpc_text": "tcp_slot_table_entries 2\n", "host_sample": {"format": 1, "time": 1.0}}
CLIENT_AFTER = {"raw_mountstats": "device b\n", "sunrpc_text": "ignored\n", "host_sample": {"format": 1, "time": 2.0}}
SERVER_BEFORE = {"raw_nfsd": "io 1 2\n", "raw_pool_stats": "# pool\n", "threads": 8, "host_sample": {"format": 1, "time": 1.0}}
SERVER_AFTER = {"raw_nfsd": "io 3 4\n", "raw_pool_stats": "# pool 2\n", "threads": 16, "host_sample": {"format": 1, "time": 2.0}}


def test_client_files_are_the_bundle_tables_names_with_the_module_texts():
    files = dict((item["name"], item["content"]) for item in bundle.stats_files("clients", CLIENT_BEFORE, CLIENT_AFTER, "1.0 0 \n"))
    assert files == {"mountstats_before.txt": "device a\n", "mountstats_after.txt": "device b\n",
                     "sunrpc.txt": "tcp_slot_table_entries 2\n",
                     "host_before.json": json.dumps({"format": 1, "time": 1.0}) + "\n",
                     "host_after.json": json.dumps({"format": 1, "time": 2.0}) + "\n",
                     "dstate.txt": "1.0 0 \n"}


def test_client_files_without_d_state_samples_leave_dstate_out():
    names = [item["name"] for item in bundle.stats_files("clients", CLIENT_BEFORE, CLIENT_AFTER)]
    assert "dstate.txt" not in names and len(names) == 5


def test_server_files_keep_the_threads_after_the_window():
    files = dict((item["name"], item["content"]) for item in bundle.stats_files("servers", SERVER_BEFORE, SERVER_AFTER))
    assert files["nfsd_before.txt"] == "io 1 2\n" and files["nfsd_after.txt"] == "io 3 4\n"
    assert files["pool_stats_after.txt"] == "# pool 2\n" and files["threads.txt"] == "16\n"
    assert json.loads(files["host_after.json"]) == {"format": 1, "time": 2.0}


def test_server_without_a_threads_file_writes_none():
    after = dict(SERVER_AFTER, threads=None)
    assert "threads.txt" not in [item["name"] for item in bundle.stats_files("servers", SERVER_BEFORE, after)]


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="clients"):
        bundle.stats_files("barrier", {}, {})
