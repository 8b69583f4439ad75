# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every threshold a paste is read against, in one place (docs/capture-bundle.md "What a paste can show" lists them).

The ones a bundle's diagnosis already has are taken from module_utils/diagnosis/ (client.py, server.py), so a
paste and a bundle never disagree on when a queue dominates or threads are short; the rest are
the paste's own, each with its source.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import client, server
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import mountstats
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals

# Queue time (exe - RTT, or the printed avg queue / backlog wait) dominating RTT: client RPC
# concurrency. The bundle's WRITE rule: queue > 1x RTT and above 10 ms.
QUEUE_TO_RTT_LIMIT = client.QUEUE_TO_RTT_LIMIT
QUEUE_MS_FLOOR = client.QUEUE_MS_FLOOR
# Requests waiting for a transport slot per send (xprt bklog_u / sends; mountstats' "average
# backlog queue length"): the bundle's rule (lab: 680-935 with 2 slots).
BACKLOG_PER_SEND_LIMIT = client.BACKLOG_PER_SEND_LIMIT
# pool_stats: share of packets that found no idle nfsd thread (lab 6.1: 85 % with 1 thread).
NO_IDLE_THREAD_LIMIT = server.NO_IDLE_THREAD_LIMIT
NO_IDLE_THREAD_CONTRIBUTING = server.NO_IDLE_THREAD_CONTRIBUTING
# Slots in use per send (req_u / sends) this close to max_slots: the transport ran at its cap.
# max_slots is the high-water mark of slots allocated (xprt_alloc_slot); an average this near it
# means most sends found the table full. The paste's own bound: 90 %.
SLOTS_AT_CAP_SHARE = signals.SLOTS_AT_CAP_SHARE.threshold
# A data op's RTT this long, while the queue does not dominate: the wait is on the wire or in the
# server. 50 ms is the bundle's METADATA_MS_FLOOR: a reply slower than a disk seek plus a round
# trip on any data-centre link by an order of magnitude.
RTT_HIGH_MS = server.METADATA_MS_FLOOR
# Retransmitted RPCs per op: over TCP the client retransmits only after timeo (60 s by default)
# or a reconnect (nfs(5) "timeo"), so 1 % of ops retransmitted is a path losing connections or a
# server not answering, never noise.
RETRANS_SHARE_LIMIT = signals.RETRANS_PER_OP.threshold
# The old `th` line (kernels < 2.6.29, fs/nfsd/stats.c): the share of the histogram's time with
# 90-100 % of the threads busy. The Linux NFS-HOWTO ("Number of Instances of the NFSD Server
# Daemon") reads high last buckets as "increase the thread count"; the same bounds as the
# pool_stats signal's limit and contributing shares.
TH_TOP_BUCKET_LIMIT = NO_IDLE_THREAD_LIMIT
TH_TOP_BUCKET_CONTRIBUTING = NO_IDLE_THREAD_CONTRIBUTING
# nfsstat op mix: metadata ops this share of all ops points at the access pattern (many small
# files, opens and stats) rather than bulk data (the bundle reads metadata RTT the same way).
METADATA_SHARE_LIMIT = signals.METADATA_SHARE.threshold
# ...read only over at least this many ops: a client or server just booted has done a mount's few
# lookups and getattrs (the lab's fresh mounts: 6-70 ops), which say nothing about the workload.
OP_MIX_MIN_OPS = signals.OP_MIX_MIN_OPS.threshold
# Bad calls (nfsstat -s badcalls / rpc calls): any share above 1 % is authentication or format
# trouble worth naming (RFC 5531 rejects; nfsstat's own "badcalls").
BAD_CALLS_SHARE_LIMIT = signals.BAD_CALLS_SHARE.threshold
# xprt connect_count since the mount beyond each transport's first connect (2 per TCP transport, 1 per RDMA)
# and one reopening per IDLE_CLOSE_SECONDS unused: the bundle's rule (kernel_text/mountstats.py says why).
connects_since_mount_unexplained = mountstats.connects_since_mount_unexplained
IDLE_CLOSE_SECONDS = mountstats.IDLE_CLOSE_SECONDS
# How a suspected layer's weight turns into a confidence: evidence of two independent kinds
# (two files of different kinds pointing the same way) is medium; one kind is low. A paste never
# gives high: no window of the whole checkpoint was measured.
MEDIUM_CONFIDENCE_KINDS = signals.MEDIUM_CONFIDENCE_KINDS.threshold
