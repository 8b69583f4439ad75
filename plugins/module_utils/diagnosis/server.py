# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The server layer group: nfsd threads (pool_stats) and storage (RTT, COMMIT, disks).
"""

from __future__ import annotations

import dataclasses

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import host_evidence
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.cpu import CPU_BUSY_LIMIT
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.evidence import scaled_share
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.network import RTT_INFLATION_LIMIT
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.run import server_samples
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals


# A disk with I/O in flight this share of the checkpoint is the storage at work without pause.
DISK_BUSY_LIMIT = signals.DISK_BUSY.threshold


# Share of packets that found no idle nfsd thread (1 - threads-woken/packets-arrived; kernel
# 6.1 lab: 85 % with 1 thread, <1 % with 8 or 32 threads).
NO_IDLE_THREAD_LIMIT = signals.NO_IDLE_THREAD.threshold


NO_IDLE_THREAD_CONTRIBUTING = signals.NO_IDLE_THREAD_CONTRIBUTING.threshold


# Older kernels count sockets-enqueued separately (rising = no idle thread): share of packets.
SOCKETS_ENQUEUED_LIMIT = signals.SOCKETS_ENQUEUED.threshold


# Metadata ops slower than this many idle RTTs (and this many ms) point at the access pattern.
METADATA_RTT_FACTOR = signals.METADATA_RTT_FACTOR.threshold


METADATA_MS_FLOOR = signals.RTT_HIGH_MS.threshold


@dataclasses.dataclass(frozen=True)
class ThreadsFinding:
    """server_threads: the largest share of packets without an idle nfsd thread, limit, contributing."""
    no_idle: object
    limit: bool
    contributing: bool


@dataclasses.dataclass(frozen=True)
class StorageFinding:
    """server_storage: slow to answer with room elsewhere, slow COMMITs, the busiest disk's share, a disk without pause,
    and the measurement that rules the storage out (None when none does)."""
    limit: bool
    commit_slow: bool
    disk_busy: object
    disk_saturated: bool
    ruled_out: object = None


def _storage_ruled_out(net, disk_busy, disk_host):
    """Why the server's storage cannot explain slow WRITEs or COMMITs, from a measurement of this bundle, or None.

    A lossy path inflates every RTT and stretches every COMMIT (each lost segment waits for a retransmit),
    so loss explains them before the disk can (issue 43: at 5 % loss the busiest disk was 0.6 % busy); and a
    disk with I/O in flight less than half the checkpoint had room to take more.
    """
    if net.get("lossy"):
        return "the path is lossy (%s): its retransmits explain the inflated RTT and the slow COMMITs" % (
            ", ".join(net["loss"]["lossy_hosts"][:5]))
    if signals.DISK_IDLE.crossed(disk_busy):
        return "its busiest disk%s was %s busy during the checkpoint (< %s): the storage had room" % (
            " (on %s)" % disk_host if disk_host else "", human.share(disk_busy), human.share(signals.DISK_IDLE.threshold))
    return None


def _disk_rows(evidence, servers, checkpoint_seconds):
    """The server's busiest disk during the checkpoint; returns (busy share, host) or (None, None)."""
    busiest = None
    for server in servers:
        before, after, busy_seconds, _how = server_samples(server, checkpoint_seconds)
        if server.get("figures") is not None:
            # Disk rows from another source than host samples (prometheus/rows.py: node_exporter's node_disk_*).
            seconds, rows = server["figures"].get("disks") or (None, [])
        elif not before or not after:
            continue
        else:
            seconds = after["time"] - before["time"]
            rows = host_evidence.disk_window(before.get("diskstats"), after.get("diskstats"), seconds)
        for row in rows:
            if row["reset"]:
                continue
            busy = scaled_share(row["busy"], seconds, busy_seconds)
            if busiest is None or busy > busiest[0]:
                busiest = (busy, server["host"], row)
    if busiest is None:
        return None, None
    busy, host, row = busiest
    evidence.add("server_storage", "busiest disk on %s (%s) with I/O in flight during the checkpoint" % (host, row["device"]), busy,
                 ">= %.2f" % DISK_BUSY_LIMIT, busy >= DISK_BUSY_LIMIT,
                 "/proc/diskstats io_ticks: %d writes, %s, %s ms per write" % (
                     row["writes"], human.size(row["bytes_written"]), "%.1f" % row["avg_write_ms"] if row["avg_write_ms"] is not None else "-"))
    return busy, "%s %s" % (host, row["device"])


def server_threads_layer(evidence, servers):
    """server_threads: packets that found no idle nfsd thread (pool_stats)."""
    no_idle = None
    enqueued_share = None
    for server in servers:
        pool = server["pool"]
        if not pool or not pool["totals"].get("packets-arrived"):
            continue
        if pool.get("packets_without_idle_thread") is not None:
            no_idle = max(no_idle or 0.0, pool["packets_without_idle_thread"])
        share = pool.get("sockets_enqueued_per_packet")
        if share is not None and share < signals.SOCKETS_ENQUEUED_ALL.threshold:
            enqueued_share = max(enqueued_share or 0.0, share)
    threads_limit = threads_contributing = False
    if no_idle is not None:
        threads_limit = evidence.add("server_threads", "packets that found no idle nfsd thread (1 - threads-woken/packets-arrived)", no_idle,
                                     ">= %.2f" % NO_IDLE_THREAD_LIMIT, no_idle >= NO_IDLE_THREAD_LIMIT,
                                     "threads-woken lagging packets-arrived is the signal (measured 85 %% at 1 thread on 6.1, 45 %% on 6.12, "
                                     "0 at 8; sockets-enqueued is no signal: equal to packets on 5.10/6.1, above them on 6.12); threads=%s" % (
                                         ",".join(str(server["threads"]) for server in servers)))
        threads_contributing = no_idle >= NO_IDLE_THREAD_CONTRIBUTING
        if not threads_limit and threads_contributing:
            evidence.add("server_threads", "packets that found no idle nfsd thread (contributing)", no_idle,
                         ">= %.2f" % NO_IDLE_THREAD_CONTRIBUTING, True, "some requests waited for an nfsd thread")
    if enqueued_share is not None:
        threads_limit = evidence.add("server_threads", "sockets-enqueued per packet-arrived", enqueued_share,
                                     ">= %.2f" % SOCKETS_ENQUEUED_LIMIT, enqueued_share >= SOCKETS_ENQUEUED_LIMIT,
                                     "this kernel counts enqueued sockets separately: rising = no idle thread") or threads_limit
    return ThreadsFinding(no_idle, threads_limit, threads_contributing)


def server_storage_layer(evidence, run, figures, send, net, cpu, threads):
    """server_storage: the server is slow to answer while its link, CPUs and threads have room."""
    servers = run["servers"]
    rtt_inflation = send.rtt_inflation
    no_idle = threads.no_idle
    starved = no_idle is not None and no_idle >= NO_IDLE_THREAD_CONTRIBUTING
    disk_busy, disk_host = _disk_rows(evidence, servers, run["checkpoint_seconds"])
    ruled_out = _storage_ruled_out(net, disk_busy, disk_host)
    inflated = bool(rtt_inflation is not None and rtt_inflation >= RTT_INFLATION_LIMIT and not net["full"]
                    and not cpu["server_saturated"] and not starved and servers)
    storage_limit = inflated and not ruled_out
    if rtt_inflation is not None:
        # The rule-out is named where it decided (the row crossed without it), so a row it did not change reads as before.
        evidence.add("server_storage", "WRITE RTT inflated with idle threads, CPUs and links not full", rtt_inflation,
                     ">= %.1f x idle RTT, no-idle-thread share < %.2f, server CPU < %.2f, no full link" % (
                         RTT_INFLATION_LIMIT, NO_IDLE_THREAD_CONTRIBUTING, CPU_BUSY_LIMIT), storage_limit,
                     "RTT dominates: the server takes long to complete WRITEs%s" % (
                         " - but not the storage: %s" % ruled_out if inflated and ruled_out else
                         "" if servers else " (no server statistics in the bundle: not evaluated)"))
    disk_saturated = bool(disk_busy is not None and disk_busy >= DISK_BUSY_LIMIT and not net["full"])
    storage_limit = storage_limit or disk_saturated
    commit = figures["commit"]
    idle_rtt = figures["idle_rtt"]
    commit_long = bool(commit["ops"] and idle_rtt and commit["avg_rtt_ms"] >= METADATA_RTT_FACTOR * idle_rtt
                       and commit["avg_rtt_ms"] >= METADATA_MS_FLOOR and not net["full"])
    commit_slow = commit_long and not ruled_out
    if commit["ops"]:
        evidence.add("server_storage", "COMMIT avg RTT", commit["avg_rtt_ms"],
                     ">= %.0f x idle RTT and >= %.0f ms" % (METADATA_RTT_FACTOR, METADATA_MS_FLOOR),
                     commit_slow, "%d COMMITs, avg exe %.1f ms%s" % (
                         commit["ops"], commit["avg_exe_ms"], " - slow, but not the storage: %s" % ruled_out if commit_long and ruled_out else ""))
    return StorageFinding(storage_limit, commit_slow, disk_busy, disk_saturated, None if disk_saturated else ruled_out)
