# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure logic of the canary's restore (read-back) phase: options, plan, block verification, results.

MLPerf Storage's checkpoint workload measures save and load: after a failure every rank reads
the checkpoint back before training resumes. With restore=true the canary's ranks, once every
rank of the host has written and fsynced, read back what they wrote (same files, offsets and
block size) from a cold client cache, check every block and are timed by the same MLPerf rule
(canary.aggregate with canary.READ_FIELDS).

No I/O here: the module (plugins/modules/checkpoint_canary.py) opens, drops the cache, reads and
passes the buffers in.

Verification: the write path stamps each block's first canary.STAMP_BYTES with its offset over
the rank's random block. A block read back is compared with that whole (stamp + block) by
bytearray == memoryview, which is one memcmp without a copy: 9-17 GB/s against 1.1-1.9 GB/s for
zlib.crc32 of the same block (tests/bench/bench_restore_verify.py, this 2-vCPU host), at the cost
of a second block per rank (canary_limits.memory_error's blocks_per_rank).
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import shapes

# none: no emptying at all, a warm read - the control that shows what a cold cache changes (the
# diagnosis's cold_cache measures how much came from the server either way).
CACHE_METHODS = ("fadvise", "direct", "none")
# The keys a rank's result gains with restore=true; complete_read() fills the ones a rank never sent.
READ_KEYS = ("read_start", "read_end", "read_bytes", "read_error", "verify_errors", "verify_error_count")
# verify_errors names at most this many blocks per rank (verify_error_count has them all): a
# server that lost the whole file must not make the result as big as the checkpoint.
MAX_VERIFY_ERRORS = 8
# Errors named in the module's failure message, over all ranks.
MAX_MESSAGE_ERRORS = 8
# Granule for locating the first differing byte of a bad block (only on the error path).
DIFF_CHUNK = 4096

CACHE_GUARANTEES = {
    "fadvise": "POSIX_FADV_DONTNEED over each file's range after its fsync: drops the clean pages the kernel can drop;"
               " whether the NFS client released every page is measured by the diagnosis (restore.cold_cache)",
    "direct": "O_DIRECT reads: the client page cache is not used for the data read",
    "none": "nothing emptied (a warm read, the control): what was written may still be read from the client's page cache",
}


def validate_restore(restore, cache, fsync, block_size, bytes_per_rank):
    """Error messages naming the option at fault (empty when valid or restore is off)."""
    if not restore:
        return []
    errors = []
    if cache not in CACHE_METHODS:
        errors.append("restore_cache must be one of %s, got %r" % (", ".join(CACHE_METHODS), cache))
    if not fsync:
        errors.append("restore=true needs fsync=true: a checkpoint read back after a failure was fsynced, and"
                      " unsynced pages are dirty, which neither POSIX_FADV_DONTNEED drops nor O_DIRECT reads around")
    if cache == "direct":
        if block_size % canary.DIRECT_ALIGNMENT:
            errors.append("block_size must be a multiple of %d with restore_cache=direct (O_DIRECT alignment), got %d"
                          % (canary.DIRECT_ALIGNMENT, block_size))
        elif bytes_per_rank % block_size:
            errors.append("bytes_per_rank must be a multiple of block_size with restore_cache=direct"
                          " (O_DIRECT alignment), got %d and %d" % (bytes_per_rank, block_size))
    return errors


def plan_restore(plan, block_size, cache, barrier_dir=None):
    """What the read phase does (check mode returns it; a run returns it too).

    plan is canary.plan_ranks(): each rank reads back exactly its own files and ranges, in
    block_size reads, in the order it wrote them.
    """
    total = sum(item["length"] for rank in plan for item in rank["files"])
    blocks = sum(-(-item["length"] // block_size) for rank in plan for item in rank["files"])
    start = ("after written.json, at read_go.json's go_at (barrier_dir)" if barrier_dir is not None
             else "when the last rank of this host has written")
    return {"restore_cache": cache, "guarantee": CACHE_GUARANTEES.get(cache), "block_size": block_size,
            "total_read_bytes": total, "blocks": blocks, "files": len({item["name"] for rank in plan for item in rank["files"]}),
            "start": start, "verify": "every block against its offset stamp and the rank's random block"}


def first_difference(expected, got):
    """Index of the first byte where two equal-length buffers differ, or None (error path only)."""
    size = min(len(expected), len(got))
    for start in range(0, size, DIFF_CHUNK):
        stop = min(size, start + DIFF_CHUNK)
        left, right = bytes(expected[start:stop]), bytes(got[start:stop])
        if left != right:
            for index, (a, b) in enumerate(zip(left, right)):
                if a != b:
                    return start + index
    return None if len(expected) == len(got) else size


def verify_block(expected, got, offset, size):
    """None when the block read back at offset is what was written there, else what is wrong.

    expected: the rank's random block as a bytearray, block_size long; its first STAMP_BYTES are
    overwritten with offset's stamp (so a full block is one memcmp against got, no copy). got: a
    memoryview of the bytes read (shorter than size after a short read).
    """
    expected[0:canary.STAMP_BYTES] = canary.block_stamp(offset)[:len(expected)]
    if len(got) < size:
        return "short read: %d of %d bytes (the file ends early)" % (len(got), size)
    if size == len(expected):
        if expected == got:
            return None
    elif expected[:size] == got:
        return None
    return describe_mismatch(expected[:size], got)


def describe_mismatch(expected, got):
    """Why a block read back is not the one written: a stale block of another offset, a hole, or torn data."""
    stamp = canary.STAMP_BYTES
    size = len(expected)
    head = bytes(got[0:stamp])
    if not bytes(got).strip(b"\0"):
        return "block of zeros where data was written (a hole: the write never reached the file)"
    if size > stamp and head != bytes(expected[0:stamp]) and bytes(got[stamp:]) == bytes(expected[stamp:]):
        return "stale block: it holds the data written at offset %d" % int.from_bytes(head, "little")
    where = first_difference(expected, got) or 0
    if where >= stamp:
        return ("torn block: the offset stamp is right but the data differs from byte +%d on (what was written"
                " is not what was read)" % where)
    return "foreign data: neither this block nor another block of this rank (first differing byte +%d)" % where


def empty_read():
    """The read fields of a rank before it read anything."""
    return {"read_start": None, "read_end": None, "read_bytes": 0, "read_error": None, "verify_errors": [],
            "verify_error_count": 0}


def planned_sizes(plan):
    """{(path_index, file name): its size once written} of every file a rank plan writes or reads back (a rank's
    "read" plan: another rank's files): the end of its last planned range. The read-back checks the file's size
    against it (size_problem): a file grown after the write passed when only the planned ranges were read."""
    sizes = {}
    for entry in plan:
        for rank_plan in [entry] + ([entry["read"]] if entry.get("read") else []):
            for item in rank_plan.get("files", []):
                key = (rank_plan.get("path_index", 0), item["name"])
                sizes[key] = max(sizes.get(key, 0), item["offset"] + item["length"])
    return sizes


def size_problem(size, written):
    """Why a read-back file's size is not what was written (None when it is)."""
    if size == written:
        return None
    return "the file is %d bytes, %d were written: it changed size after the write" % (size, written)


def add_verify_error(result, name, offset, problem):
    """Count a bad block in a rank's read fields; name at most MAX_VERIFY_ERRORS of them."""
    result["verify_error_count"] += 1
    if len(result["verify_errors"]) < MAX_VERIFY_ERRORS:
        result["verify_errors"].append({"file": name, "offset": offset, "problem": problem})


def complete_read(result, reason=None):
    """A rank result with every READ_KEYS key: missing read fields are filled, and with a reason
    read_error says why they are missing (no reason: the phase did not run, summary says why)."""
    merged = dict(empty_read(), **result)
    if reason and any(key not in result for key in READ_KEYS) and not merged["read_error"]:
        merged["read_error"] = reason
    return merged


def skip_reason(results, stalled):
    """Why the read phase must not start (None: every rank wrote): a restore of a checkpoint that
    was never completely written measures nothing a training job would do."""
    if stalled:
        return "not run: the write phase stalled (ranks %s)" % ", ".join(str(item["rank"]) for item in stalled)
    failed = [r["rank"] for r in results if r.get("error") or r.get("end") is None]
    if failed:
        return "not run: the write phase failed (ranks %s)" % ", ".join(str(rank) for rank in failed)
    return None


def summary(results, read_go_at, cache, skipped=None):
    """summary.restore: canary.aggregate over the read fields (the write's rule and function), the
    cache method, the read go and why the phase did not run (skipped)."""
    block = canary.aggregate(results, read_go_at, canary.READ_FIELDS)
    block.update({"restore_cache": cache, "read_go_at": read_go_at, "skipped": skipped,
                  "verify_error_count": sum(r.get("verify_error_count") or 0 for r in results)})
    return block


def read_from(params):
    """Whose files this host's ranks read back and whether a cache could serve them (summary.restore.read_from).

    cache_risk is None when nothing this client holds can serve the read: the files are another host's
    (recovery_rank_shift; MLPerf's rules: write, clear the cache, read) or the reads are O_DIRECT; else
    why the client's page cache may serve part of it - the figure is then flagged, never averaged in.
    The server's cache is not emptied either way."""
    first = params["first_rank"]
    other = all(shapes.reads_other_host(first + rank, params) for rank in range(params["ranks"]))
    shift = params.get("recovery_rank_shift") or 0
    if other:
        risk = None
    elif params["restore_cache"] == "direct":
        risk = None
    elif params["restore_cache"] == "none":
        risk = "warm read: this host's own files with restore_cache=none (its page cache may serve them)"
    else:
        risk = ("this host's own files, its pages dropped by fadvise (the call is guaranteed, not that every page went;"
                " diagnose_bundle measures restore.cold_cache)")
    return {"recovery_rank_shift": shift, "other_host": other, "cache_risk": risk}


def failure_message(results, skipped=None):
    """The module's failure message for the read phase, naming rank, file and offset; None when it passed.

    At most MAX_MESSAGE_ERRORS are named; the count of every bad block (verify_error_count) and of
    the errors left unnamed follows.
    """
    parts = []
    for result in results:
        if result.get("read_error"):
            parts.append((False, "rank %d: %s" % (result["rank"], result["read_error"])))
        for item in result.get("verify_errors") or []:
            parts.append((True, "rank %d: %s offset %d: %s" % (result["rank"], item["file"], item["offset"], item["problem"])))
    bad_blocks = sum(result.get("verify_error_count") or 0 for result in results)
    if not parts and not bad_blocks:
        return None if skipped is None else "canary restore %s" % skipped
    shown = parts[:MAX_MESSAGE_ERRORS]
    notes = []
    if len(parts) > len(shown):
        notes.append("%d more not shown" % (len(parts) - len(shown)))
    if bad_blocks > sum(1 for is_block, _text in shown if is_block):
        notes.append("%d bad blocks in all" % bad_blocks)
    return "canary restore failed: %s%s" % ("; ".join(text for _is_block, text in shown),
                                            " (%s)" % ", ".join(notes) if notes else "")


def _restore_summaries(results):
    """Each result's summary.restore (None where the canary ran without restore or returned nothing)."""
    return [((result or {}).get("summary") or {}).get("restore") for result in results]


def context_restore_block(results, read_go_at, clocks, hosts, window_seconds):
    """context.yml's `restore` block, or None when no client ran with restore=true.

    The write's cluster aggregate (canary.cluster_aggregate, READ_FIELDS) over every rank of every
    client, each host's read times put on the controller's clock with its clock_offset result
    (clocks, one per result, None where unmeasured) exactly as the write's are; read_go_at is the
    one read go (controller clock). A start spread over the bound is flagged (synchronized false,
    spread_message), never averaged. window_seconds is the restore's own target: 0 or None means
    none was given (target_window_seconds None), never a default.
    """
    results = list(results)
    names = list(hosts)
    summaries = _restore_summaries(results)
    if not any(summaries):
        return None
    offsets = dict(zip(names, clocks)) if clocks is not None else {}
    ranks = canary.combine_hosts(dict((name, (result or {}).get("ranks") or []) for name, result in zip(names, results)),
                                 offsets)
    go_at = None if read_go_at is None else float(read_go_at)
    total = canary.cluster_aggregate(ranks, go_at, canary.READ_FIELDS)
    seconds = None if total["latest_end"] is None else round(total["latest_end"] - total["earliest_start"], 3)
    caches = sorted({s["restore_cache"] for s in summaries if s and s.get("restore_cache")})
    cache = caches[0] if len(caches) == 1 else (", ".join(caches) or None)
    window = float(window_seconds or 0)
    return {
        "bytes": int(total["total_bytes"]), "seconds": seconds, "read_go_at": go_at,
        "ranks": total["ranks"], "finished_ranks": total["finished_ranks"],
        "start_spread_seconds": total["start_spread_seconds"], "synchronized": total["synchronized"],
        "start_spread_uncertainty_seconds": total["start_spread_uncertainty_seconds"],
        "spread_message": total["spread_message"], "clocks_measured": total["clocks_measured"],
        "restore_cache": cache, "guarantee": CACHE_GUARANTEES.get(cache),
        "verify_error_count": sum(int(s.get("verify_error_count") or 0) for s in summaries if s),
        "skipped": dict((name, s["skipped"]) for name, s in zip(names, summaries) if s and s.get("skipped")),
        "target_window_seconds": window if window > 0 else None,
    }
