# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every signal the diagnosis reads, defined once: what it measures, its unit, its threshold, the layer it speaks for, its source.

A bundle's layers (diagnosis/*.py) and a paste's readings (paste/readings.py, partial.py) take their
thresholds from this table and nowhere else (tests/unit/plugins/module_utils/diagnosis/test_signals.py
fails on a threshold literal in a layer or a paste reader), so the two paths cannot disagree on when a
queue dominates or threads are short. The rules that combine two figures (queue_dominates) live here too.

Layers: the verdict's (diagnosis/verdict.py LAYERS); "window" marks a signal about the measurement itself.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Signal:
    """One signal: crossed(value) compares value against threshold with comparison (>=, >, < or <=)."""
    name: str
    measures: str
    unit: str
    threshold: float
    layer: str
    source: str
    comparison: str = ">="

    def crossed(self, value):
        """Whether value crosses the threshold; None (unmeasured) never does."""
        if value is None:
            return False
        if self.comparison == "<":
            return value < self.threshold
        if self.comparison == "<=":
            return value <= self.threshold
        if self.comparison == ">":
            return value > self.threshold
        return value >= self.threshold


def _signal(name, measures, unit, threshold, layer, source, comparison=">="):
    return Signal(name, measures, unit, threshold, layer, source, comparison)


# ---------------------------------------------------------------- client RPC slots
QUEUE_TO_RTT = _signal(
    "queue_to_rtt", "a request's time queued for a slot against its time on the wire (avg queue / avg RTT)", "ratio", 1.0,
    "client_rpc_slots", "mountstats per-op queue/RTT (net/sunrpc/stats.c rpc_count_iostats_metrics); a WRITE that waits "
    "longer for a slot than it spends on the wire is held back by the client's concurrency")
QUEUE_MS_FLOOR = _signal(
    "queue_ms_floor", "the smallest average queue time that counts as waiting", "ms", 10.0, "client_rpc_slots",
    "below 10 ms a queue is noise against any data-centre RTT (lab 6.1: 2-slot session queued 26.8 s per WRITE)")
BACKLOG_PER_SEND = _signal(
    "backlog_per_send", "requests waiting for a transport slot per send (xprt bklog_u / sends)", "requests", 1.0,
    "client_rpc_slots", "net/sunrpc/xprt.c xprt_add_backlog; lab v4.0 with 2 slots: 680-935 per send; 0 on v4.1+ "
    "(the transport cap is 65536, NFS_CS_INFINITE_SLOTS)")
TINY_SLOT_CAP = _signal(
    "tiny_slot_cap", "a slot table or session this small is an artificial cap", "slots", 16, "client_rpc_slots",
    "lab: v4.0 with 2 slots 1.3 MB/s vs 20 MB/s with the default; removing it can give more than the tuning maximum",
    comparison="<=")
SLOTS_AT_CAP_SHARE = _signal(
    "slots_at_cap_share", "slots in use per send (req_u / sends) against max_slots", "share", 0.9, "client_rpc_slots",
    "max_slots is the high-water mark of slots allocated (xprt_alloc_slot); an average this near it means most sends found "
    "the table full")
MOUNT_QUEUE_TO_RTT = _signal(
    "mount_queue_to_rtt", "one mount's WRITE queue time against its RTT, for a mount that missed the tuning", "ratio", 10.0,
    "client_rpc_slots", "lab old_mount: 26.8 s queued for 160 ms on the wire with a 2-slot session; the tuned client beside "
    "it 8.3 s for 2.5 s")
TINY_IN_FLIGHT = _signal(
    "tiny_in_flight", "requests in flight on average (Little's law over the window) that a tiny session gives", "requests",
    4.0, "client_rpc_slots", "lab: 1.5-1.9 with 2 session slots", comparison="<=")

# The slot table seen directly (issue 47): the host sampler's sysfs xprt_info and debugfs tasks, the
# rpc_stats_latency tracepoint (diagnosis/slot_samples.py, slot_table.py).
SLOT_TABLE_FULL_SHARE = _signal(
    "slot_table_full_share", "samples with the mount's slot table full: every transport slot taken or a task in "
    "xprt_backlog (sysfs xprt_info num_reqs >= max_num_slots, backlog_q_len > 0), or an RPC waiting on the "
    "'ForeChannel Slot table' (debugfs tasks)", "share", 0.5, "client_rpc_slots",
    "'full most of the window' (issue 47): a table full in most samples holds requests back for most of the "
    "checkpoint; net/sunrpc/xprt.c xprt_add_backlog, fs/nfs/nfs4session.c nfs41_setup_sequence sleep on these queues")
SLOT_TABLE_CLEAR_SHARE = _signal(
    "slot_table_clear_share", "samples with the slot table full below which client slots are ruled out", "share", 0.1,
    "client_rpc_slots", "a table full in fewer than one sample in ten left a free slot for nearly every request: "
    "raising the cap cannot put more requests in flight", comparison="<")
SESSION_SLOT_WAITERS = _signal(
    "session_slot_waiters", "RPCs waiting for an NFSv4.1 session slot per sample (debugfs tasks on 'ForeChannel Slot "
    "table')", "requests", 1.0, "client_rpc_slots",
    "fs/nfs/nfs4session.c: a task sleeps there only when every slot the server granted is taken; one waiting on "
    "average means the session was full whenever it was looked at")
REPLY_WAIT_SHARE = _signal(
    "reply_wait_share", "a WRITE's time waiting for the server's reply (rpc_stats_latency rtt / execute, or WRITE tasks "
    "sampled on xprt_pending)", "share", 0.5, "server_storage",
    "net/sunrpc/stats.c rpc_count_iostats_metrics: rtt runs from transmission to the reply; a full table whose "
    "requests spend most of their time there is held by the server, not by the cap")
SEND_WAIT_SHARE = _signal(
    "send_wait_share", "RPCs holding a slot that wait to be sent (debugfs tasks on xprt_sending) over those holding one",
    "share", 0.5, "network", "net/sunrpc/xprt.c xprt_request_enqueue_transmit: a request on xprt_sending has its slot and "
    "waits for the socket; most of them there means the transport, not the table, holds the slots")
TRACE_AGREEMENT_SHARE = _signal(
    "trace_agreement_share", "relative difference of the rpc_stats_latency WRITE means from mountstats' WRITE averages "
    "over the same window, above which the two did not see the same RPCs", "share", 0.1, "window",
    "net/sunrpc/stats.c rpc_count_iostats_metrics adds backlog, rtt and execute to the op's mountstats sums and fires "
    "the tracepoint with the same three; only RPCs in flight at the window's ends or events the trace buffer dropped "
    "differ (issue 47: within 10 %)", comparison=">")
SLOT_SAMPLES_MIN = _signal(
    "slot_samples_min", "samples of the slot table below which its full share says nothing", "samples", 5, "window",
    "a window sampled fewer than five times can miss a table that fills and drains between samples")

# ---------------------------------------------------------------- network
LINK_FULL_SHARE = _signal(
    "link_full_share", "bytes on the NFS interfaces over nominal speed x time", "share", 0.7, "network",
    "TCP goodput over Ethernet tops out at ~94 % of line rate and a checkpoint's bursts queue well before the average gets there")
LINK_CLEAR_SHARE = _signal(
    "link_clear_share", "link utilisation below which a link cannot be what limits", "share", 0.3, "network",
    "room for 3x more; the seed's links ran at 4.4 %", comparison="<")
PROBE_FULL_SHARE = _signal(
    "probe_full_share", "NFS throughput over what raw TCP (the iperf3 probe, streams = nconnect) carried on the same path",
    "share", 0.8, "network", "the same 80 % protocol allowance as the practical link efficiency")
PROBE_CLEAR_SHARE = _signal(
    "probe_clear_share", "NFS throughput over the probe's, below which the path had room", "share", 0.5, "network",
    "half of what raw TCP carried is room, not a ceiling", comparison="<")
PROBE_START_SPREAD = _signal(
    "probe_start_spread", "how far apart the clients' probes started", "s", 2.0, "window",
    "their sum is the server's capacity only when they send at once; the lab's VMs' clocks differed by up to 1.3 s")
PROBE_START_SPREAD_SHARE = _signal(
    "probe_start_spread_share", "the probes' start spread as a share of their run", "share", 0.25, "window",
    "a quarter of the run, the most before the sum overstates the path")
EDGE_WIDEN_SHARE = _signal(
    "edge_widen_share", "how far the collector's runs around a window from Prometheus lie outside it (seconds from the "
    "newest run at or before its start, plus to the oldest at or after its end, on the client most off) as a share of "
    "the window", "share", 0.1, "window",
    "a bundle from Prometheus counts the writes between those runs: wider by more than a tenth, the writes of a wider "
    "span may be counted (lab, 1-vCPU VMs: a client's collector did not run from 97 s before a 139 s checkpoint to 50 s "
    "into it)", comparison=">")
RTT_INFLATION = _signal(
    "rtt_inflation", "WRITE RTT over the idle RTT", "ratio", 4.0, "network",
    "session-slot waits leave the RTT near idle (lab: 2.9x with 30 slots in use) vs 59x with a saturated emulated link")
SENDING_PER_SEND = _signal(
    "sending_per_send", "requests queued to send per send (xprt sending_u / sends)", "requests", 1.0, "network",
    "net/sunrpc/xprt.c xprt_request_enqueue_transmit: requests wait for the socket, not for a slot")
NETWORK_BUSY_SHARE = _signal(
    "network_busy_share", "achieved throughput over the links' practical capacity", "share", 0.8, "network",
    "2x100GbE = 25 GB/s raw, ~20 GB/s practical (protocol headers, TCP, RPC framing)")
LOSSY_RETRANS_SHARE = _signal(
    "lossy_retrans_share", "TCP segments retransmitted over segments sent (/proc/net/snmp RetransSegs/OutSegs, or the probe's "
    "own retransmits over the segments it sent)", "share", 0.01, "network",
    "Mathis et al. (CCR 1997): one connection carries at most ~1.22 MSS / (RTT sqrt(p)), ~12 MSS per RTT at 1 %; lab 6.1 "
    "netem loss 2 %: 2.1 % retransmitted, 2.5x less throughput")
LOSS_NOTICEABLE_SHARE = _signal(
    "loss_noticeable_share", "retransmitted share at which loss contributes without being named the limit", "share", 0.001,
    "network", "a healthy LAN retransmits well below it (lab control runs: under 0.05 %)")
LOSSY_TIMEOUTS_PER_SECOND = _signal(
    "lossy_timeouts_per_second", "TCP retransmission timeouts per second (TcpExt TCPTimeouts)", "1/s", 1.0, "network",
    "each stalls its connection for at least TCP_RTO_MIN (200 ms, include/net/tcp.h) and drops its window to one segment")
LOSS_MIN_SEGMENTS = _signal(
    "loss_min_segments", "segments sent below which a retransmitted share is noise", "segments", 1000, "window",
    "one retransmit of 100 segments is 1 %")
RETRANS_PER_OP = _signal(
    "retrans_per_op", "RPCs retransmitted per op (mountstats, nfsiostat, nfsstat -c)", "share", 0.01, "network",
    "over TCP the client retransmits only after timeo (60 s by default) or a reconnect (nfs(5) timeo)")

# ---------------------------------------------------------------- CPU
CPU_BUSY = _signal(
    "cpu_busy", "CPUs busy (all states but idle and iowait) over the checkpoint, averaged over the host's CPUs", "share", 0.85,
    "server_cpu", "lab (TCG, one vCPU): a CPU-bound server ran 92-100 % busy, an idle one 4 %; 85 % leaves room for "
                  "sampling noise")
WEAK_SCALING_FACTOR = _signal(
    "weak_scaling_factor", "the host samples' window over the checkpoint's, above which a scaled share is weak", "ratio",
    3.0, "window", "a checkpoint that is a small part of the sampled window makes its busy share an estimate")
SCALED_BUSY_MARGIN = _signal(
    "scaled_busy_margin", "busy time in the samples' window over the checkpoint's length, above which the scaled share "
    "is an upper estimate", "ratio", 1.05, "window", "the harness ran in the window too; 5 % absorbs the clocks' rounding")

# ---------------------------------------------------------------- server threads and storage
NO_IDLE_THREAD = _signal(
    "no_idle_thread", "packets that found no idle nfsd thread (1 - threads-woken / packets-arrived, pool_stats)", "share",
    0.5, "server_threads", "lab 6.1: 85 % with 1 thread, < 1 % with 8 or 32")
NO_IDLE_THREAD_CONTRIBUTING = _signal(
    "no_idle_thread_contributing", "the no-idle-thread share at which threads contribute", "share", 0.1, "server_threads",
    "some requests waited for an nfsd thread")
SOCKETS_ENQUEUED = _signal(
    "sockets_enqueued", "sockets-enqueued per packet-arrived on kernels that count them apart", "share", 0.2,
    "server_threads", "rising = no idle thread (fs/nfsd, net/sunrpc/svc_xprt.c svc_xprt_enqueue)")
SOCKETS_ENQUEUED_ALL = _signal(
    "sockets_enqueued_all", "sockets-enqueued per packet at which the counter only mirrors packets-arrived", "share", 0.999,
    "window", "5.10 and 6.1 count every packet as enqueued: equal to packets-arrived, no signal")
FEW_THREADS = _signal(
    "few_threads", "nfsd threads at or below which every packet finding an idle thread is the tuning's headroom", "threads",
    4, "server_threads", "the distribution default (8) halved: a server run this thin is the bottleneck", comparison="<=")
TH_TOP_BUCKET = _signal(
    "th_top_bucket", "the old th line's share of time with 90-100 % of the threads busy (kernels < 2.6.29)", "share", 0.5,
    "server_threads", "Linux NFS-HOWTO, Number of Instances of the NFSD Server Daemon; the pool_stats signal's bound")
TH_TOP_BUCKET_CONTRIBUTING = _signal(
    "th_top_bucket_contributing", "the th line's top-bucket share at which threads contribute", "share", 0.1,
    "server_threads", "the pool_stats signal's contributing bound")
DISK_BUSY = _signal(
    "disk_busy", "the server's busiest disk: time with I/O in flight over the checkpoint (/proc/diskstats io_ticks)", "share",
    0.8, "server_storage", "a disk with I/O in flight this share of the checkpoint works without pause (lab slow_storage: "
                           "dm-delay 40 ms per write busy >= 80 %)")
DISK_IDLE = _signal(
    "disk_idle", "the server's busiest disk busy share below which its storage had room", "share", 0.5, "server_storage",
    "a disk idle half the checkpoint cannot be what holds the WRITEs back", comparison="<")
METADATA_RTT_FACTOR = _signal(
    "metadata_rtt_factor", "an op's RTT over the idle RTT (COMMIT, metadata)", "ratio", 10.0, "server_storage",
    "a reply ten round trips late waits on the server, not the wire")
RTT_HIGH_MS = _signal(
    "rtt_high_ms", "an op's RTT that is slow on any data-centre path", "ms", 50.0, "server_storage",
    "a disk seek plus a round trip by an order of magnitude")
DISK_QUEUE_DEEP = _signal(
    "disk_queue_deep", "requests queued at a device on average (iostat aqu-sz / avgqu-sz, sar -d)", "requests", 1.0,
    "server_storage", "B. Gregg, Linux Performance Analysis in 60,000 Milliseconds (Netflix, 2015): avgqu-sz 'greater "
    "than 1 can be evidence of saturation' (devices that serve requests in parallel can take more)")
DISK_AWAIT_HIGH_MS = _signal(
    "disk_await_high_ms", "a device's average time per request, queue included (iostat await / w_await, sar -d)", "ms",
    20.0, "server_storage", "a 7200 rpm disk's average seek (~8.5 ms) plus half a rotation (4.2 ms) is ~13 ms; beyond "
    "20 ms requests wait in a queue (lab slow_storage: dm-delay 40 ms per write)")
PARALLEL_DEVICE_AWAIT_LOW_MS = _signal(
    "parallel_device_await_low_ms", "await below which a device that serves requests in parallel (nvme*, md*) is not "
    "saturated even at 100 % util", "ms", 2.0, "server_storage",
    "iostat(1) %util: 'for devices serving requests in parallel, such as RAID arrays and modern SSDs, this number does "
    "not reflect their performance limits'; an NVMe write completes in tens of microseconds idle", comparison="<")
PERF_HOT_SYMBOL_SHARE = _signal(
    "perf_hot_symbol_share", "one kernel symbol's share of perf samples (perf top / perf report, self overhead)", "share",
    0.1, "server_cpu", "a kernel that is not contended spreads its cycles over many symbols; openzfs/zfs#10547: 75 % in "
    "native_queued_spin_lock_slowpath under contention, far less on XFS on the same host")
TCP_TIMEO_DECISECONDS = _signal(
    "tcp_timeo_deciseconds", "the NFS mount's timeo over TCP (tenths of a second)", "ds", 600, "network",
    "nfs(5) timeo: 'For NFS over TCP the default timeo value is 600 (60 seconds)'; shorter retransmits requests TCP "
    "already carries (ltsp/ltsp#27: timeo=7 gave 2 MB/s, timeo=600 fixed it)", comparison="<")
BULK_IO_SIZE_BYTES = _signal(
    "bulk_io_size_bytes", "rsize/wsize below which a bulk write path sends more RPCs than it needs", "bytes", 1048576,
    "client_rpc_slots", "Linux's largest NFS I/O is 1 MiB (fs/nfs/internal.h NFS_MAX_FILE_IO_SIZE); a smaller wsize "
    "multiplies the WRITEs, each taking a slot and a round trip", comparison="<")
NFS_READAHEAD_KIB = _signal(
    "nfs_readahead_kib", "an NFS mount's read-ahead (its bdi's read_ahead_kb)", "KiB", 1024, "client_rpc_slots",
    "below Linux's largest NFS READ (1 MiB, fs/nfs/internal.h NFS_MAX_FILE_IO_SIZE) a sequential reader never has a "
    "full-size READ in flight; since 5.4 an NFS mount's default is the VM's 128 KiB (amazon-ec2-utils#7: 128 -> 15360 "
    "KiB took an rsync from 14.4 s to 3.6 s on EFS; buroa/home-ops#5862: 1024 KiB +45 %)", comparison="<")
CREATES_PER_WRITTEN_MIB = _signal(
    "creates_per_written_mib", "files created per second over MiB written per second, in one benchmark paste", "ratio",
    1.0, "access_pattern", "below one create per MiB written, files of 1 MiB or less (metadata_ops_per_mib's pattern) "
    "are created more slowly than they are written", comparison="<")

SOCKET_UNREAD_BYTES = _signal(
    "socket_unread_bytes", "bytes an NFS server's connection holds unread (ss/netstat Recv-Q on local port 2049)", "bytes",
    2097152, "server_threads", "two of the largest NFS requests (a 1 MiB WRITE, fs/nfs/internal.h NFS_MAX_FILE_IO_SIZE, "
    "plus headers): a server that reads its connection never lets more wait; nfs-ganesha#1374: 3767744 bytes on one of "
    "16 connections that hung")

# ---------------------------------------------------------------- access pattern and metadata
SHARED_LOCK_SHARE = _signal(
    "shared_lock_share", "D-state samples where ranks wait on one file's write lock (nfs_start_io_write)", "share", 0.1,
    "access_pattern", "fs/nfs/io.c nfs_start_io_write takes the inode's rwsem: ranks of one shared file queue there")
METADATA_TIME_SHARE = _signal(
    "metadata_time_share", "metadata ops' share of the clients' request time", "share", 0.5, "access_pattern",
    "metadata round trips took most of the request time")
METADATA_OPS_PER_MIB = _signal(
    "metadata_ops_per_mib", "metadata ops per MiB written", "ops/MiB", 4.0, "access_pattern",
    "a file of 64 MiB or more costs well under one metadata op per MiB; 4 means files of about 1 MiB or less")
STORAGE_IDLE_SHARE = _signal(
    "storage_idle_share", "the busiest disk's busy share below which a metadata storm is not the disk's", "share", 0.5,
    "access_pattern", "the disk had I/O in flight less than half the time", comparison="<")
METADATA_SHARE = _signal(
    "metadata_share", "metadata ops' share of all ops in an op mix (nfsstat)", "share", 0.5, "access_pattern",
    "many small files, opens and stats rather than bulk data")
OP_MIX_MIN_OPS = _signal(
    "op_mix_min_ops", "ops below which an op mix says nothing of the workload", "ops", 1000, "window",
    "the lab's fresh mounts: 6-70 ops of lookups and getattrs")
BAD_CALLS_SHARE = _signal(
    "bad_calls_share", "bad calls over RPC calls (nfsstat -s badcalls)", "share", 0.01, "server_threads",
    "RFC 5531 rejects: authentication or format trouble")

# ---------------------------------------------------------------- the host that sets the pace
PACE_LAG_SHARE = _signal(
    "pace_lag_share", "a host's ranks' time over the median host's, above which it sets the pace", "share", 0.2, "window",
    "lab, one client shaped to 16 Mbit/s: 19.4 s vs 10.6 s; an even run's hosts differ by a few per cent")
PACE_LAG_FLOOR_SECONDS = _signal(
    "pace_lag_floor_seconds", "the least lag that counts as setting the pace", "s", 0.5, "window",
    "below it the hosts' clocks and starts blur the difference")
PACE_CPU_DIFFERENCE = _signal(
    "pace_cpu_difference", "a host's CPU busy share against the other hosts' median", "share", 0.2, "client_cpu",
    "a fifth of a CPU more is what differs, not noise")
PACE_RATE_RATIO = _signal(
    "pace_rate_ratio", "the other hosts' median rate over this host's (probe, link)", "ratio", 1.5, "network",
    "a path half again slower is a different path")
PACE_SLOTS_RATIO = _signal(
    "pace_slots_ratio", "the other hosts' median requests in flight over this host's", "ratio", 1.4, "client_rpc_slots",
    "fewer requests in flight is a smaller slot table or session")
PACE_QUEUE_RATIO = _signal(
    "pace_queue_ratio", "this host's WRITE queue time over the other hosts' median", "ratio", 2.0, "client_rpc_slots",
    "twice the queue of its peers")
PACE_LOSS_SHARE = _signal(
    "pace_loss_share", "this host's retransmitted share that counts as different (and over twice its peers')", "share",
    0.001, "network", "the loss_noticeable_share bound")

# ---------------------------------------------------------------- the verdict
MAX_TUNING_GAIN = _signal(
    "max_tuning_gain", "what tuning one layer realistically buys", "factor", 3.0, "none",
    "vendors report ~3x from nconnect=4 and no gain beyond four (Azure Files); docs/nfs-facts.md")
MEDIUM_CONFIDENCE_KINDS = _signal(
    "medium_confidence_kinds", "kinds of pasted file pointing the same way for a medium confidence", "kinds", 2, "none",
    "two independent kinds agree; a paste never gives high (no window of the whole checkpoint)")
PASTE_WEIGHT_CROSSED = _signal(
    "paste_weight_crossed", "a pasted suspect's weight when one of its signals crossed its threshold", "weight", 2, "none",
    "paste/readings.py: 2 for a crossed signal, 1 for a figure only consistent with the layer")
PASTE_WEIGHT_STRONG = _signal(
    "paste_weight_strong", "a pasted suspect's summed weight that names it limiting without an alternative", "weight", 3,
    "none", "two crossed signals, or one crossed and one consistent (paste/readings.py weights 2 and 1)")


SIGNALS = tuple(value for value in list(globals().values()) if isinstance(value, Signal))


def by_name():
    """{name: Signal} of the table."""
    return dict((signal.name, signal) for signal in SIGNALS)


def queue_dominates(queue_ms, rtt_ms):
    """A request waited for a slot at least as long as it spent on the wire, and noticeably: the one rule of
    a bundle's WRITE and a paste's op (before, >= in diagnosis/client.py and > in paste/readings.py)."""
    if queue_ms is None or rtt_ms is None:
        return False
    return QUEUE_MS_FLOOR.crossed(queue_ms) and queue_ms >= QUEUE_TO_RTT.threshold * rtt_ms


def lossy_share(share, segments=None):
    """A retransmitted share that names the path lossy (host counters or the probe), read over enough segments."""
    if share is None or (segments is not None and segments < LOSS_MIN_SEGMENTS.threshold):
        return False
    return LOSSY_RETRANS_SHARE.crossed(share)
