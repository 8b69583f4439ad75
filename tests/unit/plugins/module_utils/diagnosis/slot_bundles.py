"""Synthetic slot-table bundles for tests: a copy of tests/fixtures/captures/healthy with the issue-47 files added.

The file texts are built from the kernel's own format strings (net/sunrpc/sysfs.c rpc_sysfs_xprt_info_show,
net/sunrpc/debugfs.c tasks_show, include/trace/events/sunrpc.h rpc_stats_latency, fs/nfs/nfs4trace.h
nfs4_sequence_done) in the bundle container docs/capture-bundle.md describes; the lab's real captures
(i-slotlab) replace them as fixtures.
"""
from __future__ import annotations

import os
import shutil

from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path  # noqa: F401 (the tests take it from here)

# rpc_sysfs_xprt_info_show's format (6.1/6.12), one value a field.
XPRT_INFO = ("last_used=4295012345\ncur_cong=0\ncong_win=256\nmax_num_slots={cap}\nmin_num_slots=2\nnum_reqs={reqs}\n"
             "binding_q_len=0\nsending_q_len=0\npending_q_len={pending}\nbacklog_q_len={backlog}\nmain_xprt={main}\n"
             "src_port={port}\ntasks_queuelen={reqs}\ndst_port=2049\n")
# tasks_show: "%5u %04x %6d 0x%x 0x%x %8ld %ps %sv%u %s a:%ps q:%s\n"
TASK = "%5u %04x %6d 0x%x 0x%x %8ld %s %sv%u %s a:%s q:%s\n"
# rpc_stats_latency 6.12 (tracefs trace_pipe line).
LATENCY = ("           <...>-%d    [001] .....  %.6f: rpc_stats_latency: task:%08x@%08x xid=0x%08x nfsv4 WRITE "
           "backlog=%d rtt=%d execute=%d xprt_id=%d\n")
SEQUENCE = ("           <...>-%d    [001] .....  %.6f: nfs4_sequence_done: error=0 (OK) session=0x1a2b3c4d slot_nr=%d "
            "seq_nr=7 highest_slotid=%d target_highest_slotid=%d status_flags=0x0 ()\n")


def xprt_text(samples, reqs=40, cap=65536, backlog=0, pending=38, transports=4):
    out = []
    for index in range(samples):
        out.append("=== sample t=%.1f ===\n" % (index * 0.5))
        for xprt in range(transports):
            out.append("--- xprt-switches/switch-0/xprt-%d-tcp ---\n" % xprt)
            out.append(XPRT_INFO.format(cap=cap, reqs=reqs, pending=pending, backlog=backlog, main=int(xprt == 0),
                                        port=900 + xprt))
            out.append("--- xprt-switches/switch-0/xprt-%d-tcp/xprt_state ---\nstate=  CONNECTED    BOUND        \n" % xprt)
    return "".join(out)


def tasks_text(samples, full_samples, holding=160, waiting=30, pending_share=0.5):
    """`full_samples` of `samples` with `waiting` WRITEs on the ForeChannel slot table; `holding` WRITEs holding a slot,
    pending_share of them waiting for the reply, the rest queued to send."""
    out = []
    for index in range(samples):
        out.append("=== sample t=%.1f ===\n--- rpc_clnt/4/tasks ---\n" % (index * 0.5))
        pid = 100
        pending = int(holding * pending_share)
        for number in range(holding):
            queue = "xprt_pending" if number < pending else "xprt_sending"
            out.append(TASK % (pid, 0x0a81, 0, 4, 0x6c3a0000 + number, 59988, "nfs_pgio_common_ops [nfs]", "nfs", 4,
                               "WRITE", "call_status [sunrpc]", queue))
            pid += 1
        for number in range(waiting if index < full_samples else 0):
            out.append(TASK % (pid, 0x0a81, 0, 4, 0, 0, "nfs_pgio_common_ops [nfs]", "nfs", 4, "WRITE",
                               "call_start [sunrpc]", "ForeChannel Slot table"))
            pid += 1
    return "".join(out)


def latency_text(writes, backlog_us, rtt_us, slots=160):
    out = [SEQUENCE % (57, 0.5, 3, slots - 1, slots - 1)]
    for number in range(writes):
        out.append(LATENCY % (57, 1.0 + number * 0.001, 0x2a + number, 4, 0x8a1b0000 + number, backlog_us + number % 7,
                              rtt_us + number % 5, backlog_us + rtt_us + 30, number % 4))
    return "".join(out)


def bundle(tmp_path, files, base="healthy"):
    """A copy of a fixture capture (healthy unless base says) with files ({name: text}) added to each client; its path."""
    path = os.path.join(str(tmp_path), "slots")
    shutil.copytree(sample_path("..", "captures", base), path)
    for client in sorted(os.listdir(os.path.join(path, "clients"))):
        for name, text in files.items():
            with open(os.path.join(path, "clients", client, name), "w") as handle:
                handle.write(text)
    return path


def full_session():
    """The seed's case: 160 session slots held, RPCs waiting for one in 18 of 20 samples, WRITEs queued 40 ms for 2 ms
    on the wire."""
    return {"sunrpc_xprt.txt": xprt_text(20), "rpc_tasks.txt": tasks_text(20, 18),
            "rpc_latency.txt": latency_text(400, 40000, 2000)}


def full_but_replies():
    """The table full, but WRITEs wait for the server's reply most of their time."""
    return {"sunrpc_xprt.txt": xprt_text(20), "rpc_tasks.txt": tasks_text(20, 18, pending_share=0.9),
            "rpc_latency.txt": latency_text(400, 2000, 40000)}


def far_from_full():
    """12 slots in use, nobody waiting."""
    return {"sunrpc_xprt.txt": xprt_text(20, reqs=3, pending=3), "rpc_tasks.txt": tasks_text(20, 0, holding=12),
            "rpc_latency.txt": latency_text(400, 50, 2000)}
