# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure logic of the checkpoint canary: rank plans, write offsets, aggregation, messages.

No I/O here: the module (plugins/modules/checkpoint_canary.py) forks the ranks, reads /proc and
passes text and numbers in. D-state parsing and the dstate.txt format live in dstate.py.

The aggregate follows MLPerf Storage's checkpointing rule (DLIO): the checkpoint takes as long
as its slowest rank, so throughput = total bytes / (latest end - earliest start).
"""

from __future__ import annotations

import collections
import os

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import barrier
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import clock

LAYOUTS = ("shared_file", "file_per_rank")
SHARED_FILE_NAME = "shared.ckpt"
# O_DIRECT needs buffer, offset and length aligned to the logical block size of the device;
# 4096 covers every NFS client (the NFS client accepts 512, local disks may need 4096).
DIRECT_ALIGNMENT = 4096
MAX_RANKS = 4096
WORKDIR_PREFIX = "ckptio-canary-"
# Every block a rank writes starts with its file offset, 8 bytes little-endian, over the rank's
# random block: no two blocks are alike (a deduplicating server cannot shortcut them) and a
# block read back says where it was written (restore.verify_block).
STAMP_BYTES = 8

# Which fields of a rank's result one phase's aggregate reads: its start, end and bytes, and the
# fields whose truth leaves a rank out of the time span (a failed write also fails its read).
PhaseFields = collections.namedtuple("PhaseFields", "start end bytes errors")
WRITE_FIELDS = PhaseFields("start", "end", "bytes", ("error",))
READ_FIELDS = PhaseFields("read_start", "read_end", "read_bytes", ("error", "read_error", "verify_errors"))


def validate_plan(ranks, bytes_per_rank, block_size, layout, files_per_rank, direct):
    """Return a list of error messages, each naming the option at fault (empty when valid)."""
    errors = []
    if not 1 <= ranks <= MAX_RANKS:
        errors.append("ranks must be between 1 and %d, got %d" % (MAX_RANKS, ranks))
    if bytes_per_rank < 1:
        errors.append("bytes_per_rank must be at least 1, got %d" % bytes_per_rank)
    if block_size < STAMP_BYTES:
        # A smaller block cannot hold its offset stamp: every rank failed without a result.
        errors.append("block_size must be at least %d (each block starts with its %d-byte offset stamp), got %d"
                      % (STAMP_BYTES, STAMP_BYTES, block_size))
    if layout not in LAYOUTS:
        errors.append("layout must be one of %s, got %r" % (", ".join(LAYOUTS), layout))
    if files_per_rank < 1:
        errors.append("files_per_rank must be at least 1, got %d" % files_per_rank)
    elif files_per_rank > 1 and layout != "file_per_rank":
        errors.append("files_per_rank > 1 needs layout=file_per_rank (a shared file is one file)")
    if errors:
        return errors
    if bytes_per_rank < files_per_rank * block_size:
        errors.append("bytes_per_rank (%d) must hold at least one block_size (%d) per file (files_per_rank=%d)"
                      % (bytes_per_rank, block_size, files_per_rank))
    if direct:
        if block_size % DIRECT_ALIGNMENT:
            errors.append("block_size must be a multiple of %d with direct=true (O_DIRECT alignment), got %d"
                          % (DIRECT_ALIGNMENT, block_size))
        elif bytes_per_rank % block_size:
            errors.append("bytes_per_rank must be a multiple of block_size with direct=true (O_DIRECT alignment)")
    return errors


def _split_aligned(total, parts, block_size):
    """Split total bytes into parts whose boundaries fall on block_size multiples."""
    bounds = [(total * index // parts) // block_size * block_size for index in range(parts)] + [total]
    return [(bounds[index], bounds[index + 1] - bounds[index]) for index in range(parts)]


def plan_ranks(ranks, bytes_per_rank, block_size, layout, files_per_rank=1):
    """Which file, offset and length each rank writes.

    shared_file: every rank pwrites its own disjoint range of one file (the seed's pattern:
    rank r owns [r * bytes_per_rank, (r + 1) * bytes_per_rank)).
    file_per_rank: rank r writes files_per_rank files of its own, named like PyTorch DCP's
    __{rank}_{n}.distcp, each from offset 0.
    Returns [{rank, files: [{name, offset, length, create}]}]; `create` says whether the rank
    creates the file (O_CREAT|O_EXCL) or opens one the module created before the start.
    """
    plan = []
    for rank in range(ranks):
        if layout == "shared_file":
            files = [{"name": SHARED_FILE_NAME, "offset": rank * bytes_per_rank,
                      "length": bytes_per_rank, "create": False}]
        else:
            files = [{"name": "__%d_%d.ckpt" % (rank, index), "offset": 0, "length": length, "create": True}
                     for index, (_start, length) in enumerate(_split_aligned(bytes_per_rank, files_per_rank, block_size))]
        plan.append({"rank": rank, "files": files})
    return plan


def block_stamp(offset):
    """The STAMP_BYTES the write path puts at the start of the block written at offset."""
    return offset.to_bytes(STAMP_BYTES, "little")


def write_chunks(offset, length, block_size):
    """Yield (offset, size) for sequential block writes covering [offset, offset + length)."""
    end = offset + length
    position = offset
    while position < end:
        size = min(block_size, end - position)
        yield position, size
        position += size


def finished_ranks(results, fields=WRITE_FIELDS):
    """The ranks that finished the phase: a start, an end and none of its error fields set."""
    return [r for r in results if r.get(fields.start) is not None and r.get(fields.end) is not None
            and not any(r.get(name) for name in fields.errors)]


def aggregate(results, start_at=None, fields=WRITE_FIELDS):
    """MLPerf Storage aggregate over per-rank results [{rank, start, end, bytes, error}].

    Ranks without start/end (never started, stalled) are left out of the time span but
    counted in `incomplete_ranks`; the aggregate is None when no rank finished. fields says
    which phase: WRITE_FIELDS (the checkpoint's save) or READ_FIELDS (its restore, the same
    rule over read_start, read_end and read_bytes).
    """
    finished = finished_ranks(results, fields)
    total_bytes = sum(r.get(fields.bytes) or 0 for r in results)
    summary = {
        "ranks": len(results),
        "finished_ranks": len(finished),
        "incomplete_ranks": sorted(r["rank"] for r in results if r not in finished),
        "total_bytes": total_bytes,
        "earliest_start": None,
        "latest_end": None,
        "seconds": None,
        "throughput_bytes_per_second": None,
        "max_rank_seconds": None,
        "start_spread_seconds": None,
        "max_start_delay_seconds": None,
    }
    if not finished:
        return summary
    starts = [r[fields.start] for r in finished]
    ends = [r[fields.end] for r in finished]
    summary["earliest_start"] = min(starts)
    summary["latest_end"] = max(ends)
    seconds = summary["latest_end"] - summary["earliest_start"]
    summary["seconds"] = round(seconds, 6)
    summary["throughput_bytes_per_second"] = round(total_bytes / seconds, 3) if seconds > 0 else None
    summary["max_rank_seconds"] = round(max(r[fields.end] - r[fields.start] for r in finished), 6)
    summary["start_spread_seconds"] = round(max(starts) - min(starts), 6)
    if start_at is not None:
        summary["max_start_delay_seconds"] = round(max(abs(s - start_at) for s in starts), 6)
    return summary


def combine_hosts(host_summaries, offsets=None):
    """Every rank of every host, tagged with its host, its start/end on the controller's clock.

    host_summaries: {host: [rank results]}; offsets: {host: clock_offset result or seconds}, None
    (or a host missing from it) when the clock was not measured: its times stay as the host read
    them and the rank says clock_offset_seconds None. Each host's own clock is only right against
    itself: the lab's nfs2 ran 1.27 s behind, so its ranks' times mixed with nfs3's made a 1.23 s
    spread look like 0.02 s (issue 14).
    """
    offsets = offsets or {}
    every_rank = []
    for host, results in sorted(host_summaries.items()):
        offset = clock.offset_of(offsets.get(host))
        uncertainty = clock.uncertainty_of(offsets.get(host))
        for result in results:
            moved = dict(result, host=host, clock_offset_seconds=offset, clock_uncertainty_seconds=uncertainty)
            # A restore's read times (READ_FIELDS) move with the write's; results without them stay as they were.
            for name in ("start", "end") + tuple(n for n in (READ_FIELDS.start, READ_FIELDS.end) if n in result):
                moved[name] = clock.to_controller_time(result.get(name), offset)
            every_rank.append(moved)
    return every_rank


def cluster_aggregate(every_rank, go_at=None, fields=WRITE_FIELDS):
    """The one cross-host aggregate: MLPerf's rule over ranks from combine_hosts(), plus the start
    spread against SPREAD_BOUND_SECONDS and which hosts' clocks were measured.

    go_at is the go time on the controller's clock. Adds synchronized (False: the spread exceeds
    the bound, so this is not one synchronized checkpoint; flagged, never averaged away),
    spread_bound_seconds, spread_message, clocks_measured (False when any host's clock was not
    measured: the spread and the aggregate then mix clocks) and unmeasured_clocks. fields as in
    aggregate() (READ_FIELDS with go_at the read go: the restore's cross-host aggregate).
    """
    summary = aggregate(every_rank, go_at, fields)
    per_host = dict((r.get("host", "-"), r.get("clock_uncertainty_seconds")) for r in every_rank)
    verdict = barrier.spread([r[fields.start] for r in finished_ranks(every_rank, fields)], go_at,
                             uncertainty=clock.pair_uncertainty(per_host.values()))
    hosts = sorted({r.get("host", "-") for r in every_rank})
    unmeasured = sorted({r.get("host", "-") for r in every_rank if r.get("clock_offset_seconds") is None})
    summary.update({
        "synchronized": verdict["synchronized"], "spread_bound_seconds": verdict["bound_seconds"],
        "start_spread_uncertainty_seconds": verdict["uncertainty_seconds"],
        "spread_message": verdict["message"], "clocks_measured": bool(hosts) and not unmeasured,
        "unmeasured_clocks": unmeasured,
    })
    if unmeasured:
        summary["spread_message"] += ("; clocks not measured on %s: times are each host's own clock"
                                      % ", ".join(unmeasured))
    return summary


def _layout_written(results, layout):
    """The layout the ranks really wrote: a shape the canary reports (its result's shape.name) decides it -
    every shape but shared_file writes files of a rank's own - else the layout it was given."""
    names = set(((result or {}).get("shape") or {}).get("name") for result in results) - {None}
    if not names:
        return layout
    return "shared_file" if names == {"shared_file"} else "file_per_rank"


def _drain_block(results, names, offsets):
    """A burst buffer's drain to NFS over every client (latest drain end - earliest drain start, on the controller's
    clock): {bytes, seconds, start, end}; None when no client drained, or one has no span."""
    drains = [(name, (result or {}).get("drain")) for name, result in zip(names, results)]
    drains = [(name, drain) for name, drain in drains if isinstance(drain, dict)]
    if not drains or any(drain.get("start") is None or drain.get("end") is None for _name, drain in drains):
        return None
    starts = [clock.to_controller_time(drain["start"], clock.offset_of(offsets.get(name))) for name, drain in drains]
    ends = [clock.to_controller_time(drain["end"], clock.offset_of(offsets.get(name))) for name, drain in drains]
    return {"bytes": int(sum(drain.get("bytes") or 0 for _name, drain in drains)), "seconds": round(max(ends) - min(starts), 3),
            "start": min(starts), "end": max(ends)}


def context_block(results, layout, start_at=None, clocks=None, hosts=None):
    """The `canary` block of context.yml from every client's canary result (what the module returned).

    bytes and seconds are the cluster_aggregate() of every rank of every client (seconds to the
    millisecond, as context.yml has always carried it); start_at is the one start (go) the
    controller set for all clients, or None when no client returned a result. With clocks (one
    clock_offset result per result, None where unmeasured) and hosts (the clients' names), rank
    times are put on the controller's clock first and the block also carries start_spread_seconds,
    synchronized and clocks_measured; without them (old callers) the block is as it always was.
    """
    results = list(results)
    names = list(hosts) if hosts is not None else ["client%d" % index for index in range(len(results))]
    offsets = dict(zip(names, clocks)) if clocks is not None else {}
    ranks = combine_hosts(dict((name, (result or {}).get("ranks") or []) for name, result in zip(names, results)),
                          offsets)
    summary = cluster_aggregate(ranks, start_at)
    seconds = None
    if summary["latest_end"] is not None:
        seconds = round(summary["latest_end"] - summary["earliest_start"], 3)
    block = {"layout": _layout_written(results, layout), "ranks": len(ranks), "clients": len(results),
             "bytes": int(summary["total_bytes"]),
             "seconds": seconds, "start_at": float(start_at) if results and start_at is not None else None}
    shapes = set(((result or {}).get("shape") or {}).get("name") for result in results) - {None}
    if len(shapes) == 1:
        block["shape"] = shapes.pop()
    drain = _drain_block(results, names, offsets)
    if drain is not None:
        block["drain"] = drain
    # Several NFS paths (the canary's `paths`): their mount points, each client's mountstats of all of them is diagnosed.
    points = []
    for result in results:
        points.extend(m.get("mount_point") for m in (result or {}).get("mounts") or () if m.get("mount_point") not in points)
    if len(points) > 1:
        block["mount_points"] = points
    if clocks is not None:
        block.update({"start_spread_seconds": summary["start_spread_seconds"], "synchronized": summary["synchronized"],
                      "start_spread_uncertainty_seconds": summary["start_spread_uncertainty_seconds"],
                      "clocks_measured": summary["clocks_measured"]})
    return block


def context_throughput(block):
    """Achieved bytes per second of a context.yml `canary` block (bytes over the MLPerf seconds), or None."""
    if block.get("bytes") and block.get("seconds"):
        return float(block["bytes"]) / float(block["seconds"])
    return None


def failed_hosts(hosts, results):
    """'host: message' for each client whose canary returned no rank, or a rank with an error."""
    failed = []
    for host, result in zip(hosts, results):
        result = result or {}
        ranks = result.get("ranks") or []
        if not ranks or any(rank.get("error") for rank in ranks):
            failed.append("%s: %s" % (host, result.get("msg", "no result")))
    return failed


STATE_NAMES = {
    "R": "running",
    "S": "sleeping",
    "D": "uninterruptible (D)",
    "Z": "zombie",
    "T": "stopped",
    "t": "traced",
    "X": "dead",
    "I": "idle",
}


def stall_message(stalled, timeout, workdir, cleanup_deferred_pid=None):
    """One clear failure message naming each stalled rank with its state and wchan."""
    parts = []
    for item in stalled:
        state = item.get("state") or "gone"
        parts.append("rank %d (pid %d) %s, wchan %s%s" % (
            item["rank"], item["pid"], STATE_NAMES.get(state, state), item.get("wchan") or "-",
            "" if item.get("exited") else ", still alive after SIGKILL"))
    message = "canary ranks did not finish within timeout=%ss: %s." % (timeout, "; ".join(parts))
    if any(item.get("state") == "D" and not item.get("exited") for item in stalled):
        message += (" A task in D state cannot be killed until the NFS server answers (hard mount):"
                    " SIGKILL is pending and takes effect when the server returns.")
    if cleanup_deferred_pid:
        message += " Removal of %s is deferred to pid %d, which waits for the ranks to exit." % (workdir, cleanup_deferred_pid)
    return message


def mount_for_path(mounts, path):
    """The mount (from mountinfo.parse_mountinfo) holding an absolute, resolved path.

    The last matching entry wins, as in the kernel: a later mount on the same point hides the
    earlier one.
    """
    best = None
    best_len = -1
    for mount in mounts:
        point = mount["mount_point"]
        if point == "/" or path == point or path.startswith(point.rstrip("/") + "/"):
            if len(point) >= best_len:
                best = mount
                best_len = len(point)
    return best


def is_inside(child, parent):
    """True when resolved path child is parent or lies below it."""
    return os.path.commonpath([child, parent]) == parent
