# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The access pattern layer: the checkpoint's layout, D-state waits on a file's lock, slow metadata.
"""

from __future__ import annotations

import dataclasses

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.server import METADATA_MS_FLOOR, METADATA_RTT_FACTOR
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals


# Share of D-state samples where ranks wait on one file's write lock (nfs_start_io_write).
SHARED_LOCK_SHARE_LIMIT = signals.SHARED_LOCK_SHARE.threshold


@dataclasses.dataclass(frozen=True)
class AccessFinding:
    """access_pattern: the layout, one shared file, ranks waiting on its lock, and whether any signal points here."""
    layout: object
    shared_file: bool
    lock_waits: bool
    signal: bool


def _dstate_lock_share(evidence, clients):
    """Largest share of D-state samples waiting on a shared file's write lock, or None; every
    client's D-state samples are listed as a symptom."""
    lock_share = None
    for client in clients:
        dstate = client["dstate"]
        if not dstate:
            continue
        total = sum(dstate["group_counts"].values())
        if total:
            share = dstate["group_counts"].get("shared_file_lock", 0) / float(total)
            lock_share = max(lock_share or 0.0, share)
        evidence.add(None, "D-state samples on %s" % client["host"], dstate["max_count"], "symptom (not a layer)",
                     dstate["samples_with_dstate"] > 0,
                     "%d of %d samples had tasks in D (max %d, longest run %d); wchans %s" % (
                         dstate["samples_with_dstate"], dstate["samples"], dstate["max_count"], dstate["longest_run"],
                         ", ".join("%s=%d" % item for item in sorted(dstate["wchan_counts"].items()))))
    return lock_share


def access_pattern_layer(evidence, run, figures, send):
    """access_pattern: one shared file, ranks waiting on its lock, slow metadata ops."""
    layout = run["canary"].get("layout")
    shared_file = evidence.add("access_pattern", "checkpoint layout", layout or "unknown", "shared_file", layout == "shared_file",
                               "all ranks write one file: writes serialise on the file's lock and its COMMITs")
    lock_share = _dstate_lock_share(evidence, run["clients"])
    lock_waits = False
    if lock_share is not None:
        lock_waits = evidence.add("access_pattern", "D-state waits on a file's write lock (nfs_start_io_write)", lock_share,
                                  ">= %.2f of D samples" % SHARED_LOCK_SHARE_LIMIT, lock_share >= SHARED_LOCK_SHARE_LIMIT,
                                  "ranks queue behind each other on one inode")
    metadata = figures["metadata"]
    idle_rtt = figures["idle_rtt"]
    metadata_slow = bool(metadata["ops"] and idle_rtt and metadata["avg_exe_ms"] >= METADATA_RTT_FACTOR * idle_rtt
                         and metadata["avg_exe_ms"] >= METADATA_MS_FLOOR)
    if metadata["ops"]:
        metadata_slow = evidence.add("access_pattern", "metadata ops avg exe (OPEN/CLOSE/GETATTR/...)", metadata["avg_exe_ms"],
                                     ">= %.0f x idle RTT and >= %.0f ms" % (METADATA_RTT_FACTOR, METADATA_MS_FLOOR),
                                     metadata_slow and not send.backed_up,
                                     "%d metadata ops; ignored when the send side backs up (they queue behind WRITEs)" % metadata["ops"])
    return AccessFinding(layout, shared_file, lock_waits, shared_file or lock_waits or metadata_slow)
