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
      - What the D-state sampler also reads in its passes during the write window, within a CPU budget of its own (C(docs/kernels.md)).
      - V(queues) - every transport's C(/sys/kernel/sunrpc/xprt-switches/*/xprt-*/xprt_info) and C(xprt_state)
        (kernels 5.14 and later) and, where debugfs is mounted, every C(/sys/kernel/debug/sunrpc/rpc_clnt/*/tasks)
        - slots in use against the cap, queue lengths, and each RPC's wait queue (a session slot, the transport,
        the reply). Returned verbatim in RV(rpc_samples) for the bundle's C(sunrpc_xprt.txt) and C(rpc_tasks.txt).
      - V(trace) - the same, and the C(sunrpc:rpc_stats_latency) and C(nfs4) sequence tracepoints in a tracefs
        instance of its own (C(instances/ckptio-canary), 16 MiB of ring buffer over all CPUs, drained every sample)
        for the write window only, for C(rpc_latency.txt). The instance is removed at the end, by a detached watchdog
        when the module is killed, and by the next run otherwise (RV(rpc_samples) notes say so).
      - V(off) - neither. Check mode reads and enables nothing. What a kernel lacks is named in the notes of RV(rpc_samples).
    type: str
    choices: ["off", queues, trace]
    default: queues
"""
