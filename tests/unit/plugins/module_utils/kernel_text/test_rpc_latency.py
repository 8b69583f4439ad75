"""sunrpc:rpc_stats_latency and nfs4:nfs4_sequence_done as tracefs, trace-cmd report and perf script print them."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import rpc_latency

# include/trace/events/sunrpc.h TRACE_EVENT(rpc_stats_latency) TP_printk, with include/trace/misc/sunrpc.h's
# SUNRPC_TRACE_TASK_SPECIFIER "task:%08x@%08x":
# 6.12: " xid=0x%08x %sv%d %s backlog=%lu rtt=%lu execute=%lu" " xprt_id=%d"
TRACEFS_612 = ("     kworker/u4:1-57      [001] .....  5321.000100: rpc_stats_latency: task:0000002a@00000004 "
               "xid=0x8a1b2c3d nfsv4 WRITE backlog=40100 rtt=2100 execute=42250 xprt_id=3\n")
# 6.1: the same without xprt_id (trace-cmd report drops the flags column)
TRACE_CMD_61 = ("     kworker/u4:1-57    [001]  5321.000200: rpc_stats_latency:    task:0000002b@00000004 "
                "xid=0x8a1b2c3e nfsv4 COMMIT backlog=5 rtt=900 execute=950\n")
# 5.10: "task:%u@%d xid=0x%08x %sv%d %s backlog=%lu rtt=%lu execute=%lu" (perf script names sunrpc:)
PERF_510 = ("   dd  1234 [000]  77.123456: sunrpc:rpc_stats_latency: task:43@4 xid=0x0000002c nfsv3 WRITE "
            "backlog=15 rtt=88 execute=104\n")
# fs/nfs/nfs4trace.h TRACE_EVENT(nfs4_sequence_done): "error=%ld (%s) session=0x%08x slot_nr=%u seq_nr=%u "
# "highest_slotid=%u target_highest_slotid=%u " "status_flags=0x%lx (%s)"
SEQUENCE = ("     kworker/u4:1-57      [001] .....  5321.000300: nfs4_sequence_done: error=0 (OK) session=0x1a2b3c4d "
            "slot_nr=1 seq_nr=7 highest_slotid=159 target_highest_slotid=159 status_flags=0x0 ()\n")


def test_the_three_kernels_formats_and_three_tools():
    trace = rpc_latency.parse_trace(TRACEFS_612 + TRACE_CMD_61 + PERF_510 + "unrelated line\n" + SEQUENCE)
    new, mid, old = trace.latencies
    assert (new.timestamp, new.task_id, new.client_id, new.xid, new.procedure) == (5321.0001, 0x2a, 4, 0x8a1b2c3d, "WRITE")
    assert (new.backlog_us, new.rtt_us, new.execute_us, new.xprt_id) == (40100, 2100, 42250, 3)
    assert (mid.procedure, mid.xprt_id, mid.timestamp) == ("COMMIT", None, 5321.0002)
    assert (old.task_id, old.client_id, old.version, old.timestamp) == (43, 4, 3, 77.123456)
    [sequence] = trace.sequences
    assert (sequence.slot_nr, sequence.highest_slotid, sequence.target_highest_slotid) == (1, 159, 159)
    assert not trace.truncated


def test_nothing_in_an_empty_text():
    assert rpc_latency.parse_trace("") == rpc_latency.Trace((), (), False)
