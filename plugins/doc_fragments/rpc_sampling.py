# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""checkpoint_canary's rpc_sampling option (issue 47), kept here so the module stays within its line budget."""

from __future__ import annotations


class ModuleDocFragment:  # pylint: disable=too-few-public-methods

    DOCUMENTATION = r"""
options:
  rpc_sampling:
    description:
      - What the canary also reads during the write window, on a cadence of its own apart from the D-state sampler
        (a pass every second while its CPU in the window stays within 5 % of one CPU, later otherwise; C(docs/kernels.md)).
      - V(queues) - every transport's C(/sys/kernel/sunrpc/xprt-switches/*/xprt-*/xprt_info) and C(xprt_state)
        (kernels 5.14 and later) and, where debugfs is mounted, every C(/sys/kernel/debug/sunrpc/rpc_clnt/*/tasks)
        - slots in use against the cap, queue lengths, and each RPC's wait queue (a session slot, the transport,
        the reply). Returned verbatim in RV(rpc_samples) for the bundle's C(sunrpc_xprt.txt) and C(rpc_tasks.txt).
      - V(trace) - the same, and the C(sunrpc:rpc_stats_latency) and C(nfs4:nfs4_sequence_done) tracepoints in a
        tracefs instance of its own (C(instances/ckptio-canary), 16 MiB of ring buffer over all CPUs, filtered in the
        kernel) for the write window only, for C(rpc_latency.txt). The instance is made before the go and its buffer
        read once after the window (events the kernel lost are counted in the notes). It is removed at the end, by a
        detached watchdog when the module is killed, and by the next run otherwise (RV(rpc_samples) notes say so).
      - V(off) - neither. Check mode reads and enables nothing. What a kernel lacks is named in the notes of RV(rpc_samples).
    type: str
    choices: ["off", queues, trace]
    default: queues
"""
