"""paste/sunrpc_slots.py (issue 47) on a real debugfs task list (tests/fixtures/paste_kinds/sunrpc_slots) and on
texts made by the kernel's and nfs-utils' own format strings."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import more_kinds, partial, readings, sunrpc_slots
from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.paste.kinds import around, by_signal, hostile, sample, timed

WAITING = "RPCs waiting for a slot (debugfs tasks on 'ForeChannel Slot table' or xprt_backlog)"
# net/sunrpc/sysfs.c rpc_sysfs_xprt_info_show, a 2-slot v4.0 transport with 37 requests in its backlog
XPRT_INFO = ("last_used=4295012345\ncur_cong=0\ncong_win=256\nmax_num_slots=2\nmin_num_slots=2\nnum_reqs=2\n"
             "binding_q_len=0\nsending_q_len=0\npending_q_len=2\nbacklog_q_len=37\nmain_xprt=1\nsrc_port=871\n"
             "tasks_queuelen=39\ndst_port=2049\n")
# nfs-utils rpcctl.py Xprt.__str__
RPCCTL = ("xprt-0: tcp, 192.168.122.10, port 2049, state <CONNECTED,BOUND>, main\n"
          "\tSource: 192.168.122.11, port 871, Requests: 160\n"
          "\tCongestion: cur 0, win 256, Slots: min 2, max 65536\n"
          "\tQueues: binding 0, sending 0, pending 158, backlog 0, tasks 160\n")
# include/trace/events/sunrpc.h rpc_stats_latency (6.12) as `trace-cmd report` prints it
TRACE_CMD = "".join(
    "     kworker/u4:1-57    [001]  5321.%06d: rpc_stats_latency:    task:%08x@00000004 xid=0x%08x nfsv4 WRITE "
    "backlog=%d rtt=2100 execute=%d xprt_id=0\n" % (index, index, index, 40000 + index, 42200 + index) for index in range(50))


def test_the_real_task_list_of_a_reconnecting_transport_points_at_the_transport_not_the_table():
    # linux-nfs 2024-01-03 (source.yml): 44 tasks wait for a session slot while the 30 holding one wait to be sent
    findings = sunrpc_slots.read(sample("sunrpc_slots", "linux_nfs_2024_tls_hang_tasks"))
    [waiting] = by_signal(findings, WAITING)
    assert waiting["value"] == 44 and waiting["crossed"] and waiting["weight"] == 1
    assert "44 for an NFSv4.1 session slot, 30 for its turn to send; 30 hold a slot" in waiting["explanation"]
    [sending] = by_signal(findings, "RPCs holding a slot that wait to be sent (xprt_sending)")
    assert sending["layer"] == "network" and sending["value"] == 1.0 and "30 with an error status" in sending["explanation"]
    result = partial.partial_diagnosis([readings.read_file("tasks.txt", around(sample("sunrpc_slots", "linux_nfs_2024_tls_hang_tasks")))])
    assert result["limiting_layer"] == "network"


def test_a_pasted_xprt_info_with_a_backlog_is_a_full_table_of_one_moment():
    [row] = sunrpc_slots.read(around(XPRT_INFO))
    assert row["layer"] == "client_rpc_slots" and row["value"] == 1.0 and row["crossed"] and row["weight"] == 1
    assert "2 of 2 slots in use, 37 waiting for a slot" in row["explanation"] and "one moment" in row["explanation"]


def test_rpcctl_far_from_full_crosses_nothing():
    [row] = sunrpc_slots.read(RPCCTL)
    assert row["value"] == 0.0 and not row["crossed"] and "160 of 65,536 slots in use" in row["explanation"]


def test_trace_cmd_latencies_give_percentiles_and_a_queue_that_dominates():
    [row] = sunrpc_slots.read(around(TRACE_CMD))
    assert row["signal"] == "WRITE backlog against RTT (rpc_stats_latency, mean)" and row["crossed"] and row["weight"] == 2
    assert "50 WRITE RPCs, p50/p90/p99: backlog 40 ms/40 ms/40 ms, rtt 2.1 ms/2.1 ms/2.1 ms" in row["explanation"]


def test_the_reader_is_registered_and_unrelated_text_is_not_taken():
    assert sunrpc_slots in more_kinds.READERS and more_kinds.TAKEN_FOR[sunrpc_slots.KIND] == sunrpc_slots.TAKEN_FOR
    assert sunrpc_slots.recognise(XPRT_INFO) and sunrpc_slots.recognise(RPCCTL) and sunrpc_slots.recognise(TRACE_CMD)
    assert not sunrpc_slots.recognise("max_num_slots is a field of xprt_info\nslot_table_entries=128\n")


def test_hostile_inputs_are_read_quickly():
    for label, text in hostile("max_num_slots=NUMBER\nnum_reqs=NUMBER\n").items():
        _findings, seconds = timed(sunrpc_slots.read, text)
        assert seconds < 2.0, label
