"""paste/ganesha.py: NFS-Ganesha's log lines and its dbus I/O statistics, on real pastes of the corpus."""
from __future__ import annotations

import os

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import ganesha, partial, readings
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path

CORPUS = sample_path("..", "paste_corpus")


def _read(entry):
    with open(os.path.join(CORPUS, entry, "paste.txt"), encoding="utf-8") as handle:
        reading = readings.read_file("paste.txt", handle.read())
    return reading, partial.partial_diagnosis([reading])


def test_an_unhealthy_heartbeat_is_a_server_that_dequeues_nothing():
    # nfs-ganesha#892: "enq new: 434176, old: 434126; deq new: 434113, old: 434113" - 50 requests queued, none taken
    # (nfs_health logs only then); only a restart recovered the clients.
    reading, result = _read("040_ganesha_892_health_unhealthy_not_responding")
    assert "ganesha" in [reading["kind"]] + reading["also"]
    names = [fault["name"] for fault in result["faults"]]
    assert "ganesha_not_dequeuing" in names
    fault = result["faults"][names.index("ganesha_not_dequeuing")]
    assert fault["kind"] == "hang" and "50 request(s)" in fault["what"] and "restart" in fault["fix"]


def test_zero_latency_over_many_ops_is_fast_stats_not_a_fast_server():
    # nfs-ganesha#1191: GetNFSv41IO shows 78112 writes with latency 0; the reporter's fix was turning fast_stats off
    # (server_stats.c returns before timing a request when Enable_Fast_Stats is set).
    reading, result = _read("042_ganesha_1191_dbus_exportstats_latency_zero")
    assert reading["kind"] == "ganesha"
    fault = result["faults"][0]
    assert fault["kind"] == "misconfiguration" and fault["name"] == "ganesha_latency_not_measured"
    assert "78119 ops" in fault["what"] and "Enable_Fast_Stats" in fault["fix"]  # 7 reads + 78112 writes


def test_a_delegation_conflict_is_read_as_a_figure_not_a_fault():
    # nfs-ganesha#1055: one "found a conflicting READ delegation" line: a recall in progress is normal; the loop the
    # thread found is not in the excerpt, so no fault is named.
    reading, result = _read("051_ganesha_1055_rename_delay_loop")
    assert reading["kind"] == "ganesha" and not result["faults"]
    assert any("conflicting READ delegation" in row["explanation"] for row in result["evidence"])


def test_a_ganesha_line_is_recognised_and_a_kernel_line_is_not():
    assert ganesha.recognise("18/12/2022 18:33:59 : epoch 639f584e : host : ganesha.nfsd-26859[main] main :MAIN :EVENT :x\n")
    assert not ganesha.recognise("[ 12.3] nfs: server a not responding, still trying\n")
