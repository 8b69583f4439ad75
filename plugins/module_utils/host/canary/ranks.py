# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint_canary's rank workload: what one forked rank does, and its result as the parent reads it.

A rank writes its planned files (canary/plan.py) from a random block stamped with each offset,
fsyncs them, and with restore=true reads them back and verifies every block (canary/restore.py).
It is forked by processes.fork_child and released by processes.send_go; every file is opened
relative to the work directory's fd, never through a link on the way (canary_shapes.open_below).
"""

from __future__ import annotations

import dataclasses
from functools import partial
import gc
import json
import mmap
import os
import random
import resource
import time

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import restore
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.host.canary import shapes as canary_shapes
from ansible_collections.ckptio.nfs.plugins.module_utils.host import processes

# os.urandom is called in pieces so a rank never holds its block twice (bytes + mmap).
RANDOM_CHUNK = 1024 * 1024


class RankStartError(Exception):
    """A fork or pipe failed while starting the ranks; the message is for the user."""


@dataclasses.dataclass
class Rank:
    """A forked rank: its number and process; write_cpu_seconds as it reported it (restore=true)."""

    number: int
    child: processes.Child
    write_cpu_seconds: float | None = None


def random_block(block_size, seed=None):
    """A page-aligned buffer of random bytes (mmap is page aligned, as O_DIRECT needs).

    seed (a job's read-back, seed_of): the same bytes on every host, so a rank reading another
    host's files knows what each block must be; else os.urandom."""
    buffer = mmap.mmap(-1, block_size)
    generator = random.Random(seed) if seed is not None else None
    for start in range(0, block_size, RANDOM_CHUNK):
        size = min(RANDOM_CHUNK, block_size - start)
        buffer[start:start + size] = generator.getrandbits(size * 8).to_bytes(size, "little") if generator else os.urandom(size)
    return buffer


def seed_of(params, global_rank):
    """The block seed of global_rank's files in a job (job_id), None outside one."""
    return "%s/%d" % (params["job_id"], global_rank) if params.get("job_id") is not None else None


def _count(result, size):
    result["bytes"] += size


def run_rank(dir_fd, rank_plan, block_size, fsync, direct, start_at, buffer=None):
    """Write one rank's files; return its result dict. Runs in the forked child.

    buffer: the rank's random block (random_block), made here when not given; restore=true
    passes its own, which the reads are compared with afterwards.
    """
    buffer = random_block(block_size) if buffer is None else buffer
    view = memoryview(buffer)
    flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_DIRECT if direct else 0)
    delay = start_at - time.time()
    if delay > 0:
        time.sleep(delay)
    result = {"rank": rank_plan["rank"], "pid": os.getpid(), "start": time.time(), "end": None,
              "bytes": 0, "error": None}
    try:
        for item in rank_plan["files"]:
            open_flags = flags | (os.O_CREAT | os.O_EXCL if item["create"] else 0)
            fd = canary_shapes.open_below(dir_fd, item["name"], open_flags)
            try:
                canary_shapes.write_range(fd, view, item["offset"], item["length"], block_size, partial(_count, result))
                if fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
        result["end"] = time.time()
    except OSError as exc:
        result["error"] = file_read.describe_error(exc)
    return result


def drop_cached_pages(dir_fd, rank_plan):
    """restore_cache=fadvise, in a rank after its writes and fsyncs: POSIX_FADV_DONTNEED over its own
    range of each file it wrote. Returns an error text or None.

    The rank's own range, not the whole file (offset 0, length 0): with layout=shared_file the
    other ranks may still be writing, and DONTNEED starts writeback of dirty pages in its range,
    which would move their flushes into the middle of their write phase. After fsync (the NFS
    COMMIT) the range's pages are clean, the ones the kernel drops. Reopened read-only after the
    rank's end time, so neither the call nor its OPEN/CLOSE is in the write's or the read's time.
    """
    try:
        for item in rank_plan["files"]:
            fd = canary_shapes.open_below(dir_fd, item["name"], os.O_RDONLY)
            try:
                os.posix_fadvise(fd, item["offset"], item["length"], os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    except OSError as exc:
        return "dropping the cached pages (restore_cache=fadvise): %s" % file_read.describe_error(exc)
    return None


def _read_full(fd, view, offset, size):
    """Read size bytes at offset into view (preadv, no copy); fewer only at end of file."""
    got = 0
    while got < size:
        count = os.preadv(fd, [view[got:size]], offset + got)
        if count == 0:
            break
        got += count
    return got


def run_read(dir_fd, rank_plan, block_size, cache, buffer, read_at, expected=None, sizes=None):
    """Read one rank's files back as it wrote them and check every block; its read fields.

    buffer is the rank's block from run_rank: copied once into `expected` (what each block must
    be, with its stamp), then reused as the read buffer (page aligned, as O_DIRECT needs).
    expected given (another rank's files, recovery_rank_shift): that rank's block. sizes
    (restore.planned_sizes): the rank whose range ends a file checks the file's size too.
    """
    expected = bytearray(buffer if expected is None else expected)
    view = memoryview(buffer)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_DIRECT if cache == "direct" else 0)
    delay = read_at - time.time()
    if delay > 0:
        time.sleep(delay)
    result = restore.empty_read()
    result["read_start"] = time.time()
    name = None
    try:
        for item in rank_plan["files"]:
            name = item["name"]
            fd = canary_shapes.open_below(dir_fd, item["name"], flags)
            try:
                for offset, size in canary.write_chunks(item["offset"], item["length"], block_size):
                    got = _read_full(fd, view, offset, size)
                    result["read_bytes"] += got
                    problem = restore.verify_block(expected, view[0:got], offset, size)
                    if problem:
                        restore.add_verify_error(result, item["name"], offset, problem)
                    if got < size:
                        break
                else:
                    _check_size(result, fd, rank_plan, item, sizes)
            finally:
                os.close(fd)
        result["read_end"] = time.time()
    except OSError as exc:
        result["read_error"] = "read %s: %s" % (name, file_read.describe_error(exc))
    return result


def _check_size(result, fd, rank_plan, item, sizes):
    """A verify error when the file's size is not the planned one; checked by the rank whose range ends the file
    (a short read already says a file is short)."""
    written = (sizes or {}).get((rank_plan.get("path_index", 0), item["name"]))
    if written is None or item["offset"] + item["length"] != written:
        return
    problem = restore.size_problem(os.fstat(fd).st_size, written)
    if problem:
        restore.add_verify_error(result, item["name"], written, problem)


def write_rank(dir_fd, rank_plan, params, start_at, barrier, buffer=None, job_fd=None):
    """A rank's write: a shape's ops (host/canary/shapes.run_ops; job_fd, the first path's directory, holds a job's
    done markers) or a layout's files (run_rank)."""
    if buffer is None:
        buffer = random_block(params["block_size"], seed_of(params, rank_plan.get("global_rank", rank_plan["rank"])))
    if rank_plan.get("ops"):
        return canary_shapes.run_ops(dir_fd, rank_plan, params, start_at, barrier, buffer, job_fd)
    return run_rank(dir_fd, rank_plan, params["block_size"], params["fsync"], params["direct"], start_at, buffer)


def write_then_restore(dir_fds, rank_plan, params, start_at, go_read, write_end, barrier=None):
    """A rank with restore=true: write; drop its pages (fadvise); send the write result as line 1;
    wait for the read go (a second line through the go pipe); read back (its own files, or with
    recovery_rank_shift the files of rank_plan["read"], from that rank's path); send line 2."""
    dir_fd = dir_fds[rank_plan.get("path_index", 0)]
    buffer = random_block(params["block_size"], seed_of(params, rank_plan.get("global_rank", rank_plan["rank"])))
    result = write_rank(dir_fd, rank_plan, params, start_at, barrier, buffer, dir_fds[0])
    # The parent's RUSAGE_CHILDREN has no rank before it is reaped, and this one lives on to read.
    usage = resource.getrusage(resource.RUSAGE_SELF)
    line = dict(result, write_cpu_seconds=usage.ru_utime + usage.ru_stime)
    drop_error = None
    if not result.get("error") and params["restore_cache"] == "fadvise":
        drop_error = drop_cached_pages(dir_fd, rank_plan)
    os.write(write_end, (json.dumps(line) + "\n").encode())
    if result.get("error"):
        return
    read_at = processes.receive_go(go_read)
    if read_at is None:
        return
    if drop_error:
        read = dict(restore.empty_read(), read_error=drop_error)
    elif rank_plan.get("read"):
        other = rank_plan["read"]
        read = run_read(dir_fds[other["path_index"]], other, params["block_size"], params["restore_cache"], buffer, read_at,
                        random_block(params["block_size"], seed_of(params, other["global_rank"])), params.get("planned_sizes"))
        read["read_from_rank"] = other["global_rank"]
    else:
        read = run_read(dir_fd, rank_plan, params["block_size"], params["restore_cache"], buffer, read_at, None,
                        params.get("planned_sizes"))
    os.write(write_end, (json.dumps(read) + "\n").encode())


def rank_body(dir_fds, rank_plan, params, barrier=None):
    """What a forked rank runs: wait for go (the barrier's, through its go pipe), then its work in
    the work directory of its path (dir_fds[path_index]; the local path's for a burst buffer)."""
    dir_fd = dir_fds[rank_plan.get("path_index", 0)]

    def body(go_read, write_end):
        # The go line carries the run of a job's done markers (canary/shapes.run_token), known only at go.
        start_at, run = processes.receive_go_run(go_read, close=not params.get("restore"))
        if start_at is None:
            return
        run_params = dict(params, run_token=run)
        if params.get("restore"):
            write_then_restore(dir_fds, rank_plan, run_params, start_at, go_read, write_end, barrier)
        else:
            result = write_rank(dir_fd, rank_plan, run_params, start_at, barrier, job_fd=dir_fds[0])
            os.write(write_end, json.dumps(result).encode())
    return body


def drain_body(source_fd, target_fds, rank_plan, params, rate):
    """A forked drain: wait for go, copy the rank's files from the local path to its NFS path."""
    def body(go_read, write_end):
        start_at = processes.receive_go(go_read)
        if start_at is None:
            return
        result = canary_shapes.drain_rank(source_fd, target_fds[rank_plan.get("path_index", 0)], rank_plan,
                                          params["block_size"], rate, random_block(params["block_size"]), start_at)
        os.write(write_end, json.dumps(result).encode())
    return body


def start_ranks(plan, body_of, control_fds=()):
    """Fork one child per plan entry (body_of(entry) its body), telling every cleanup helper each (pid, starttime).

    A fork or pipe that fails (EAGAIN from the process limit, EMFILE) kills the ranks already
    forked and raises RankStartError: the caller fails cleanly and the helper removes the directory.
    """
    lib = processes.libc()
    # Objects so far go to the permanent generation (gc.freeze, Python 3.7+): no collection in
    # the parent or a rank touches them, so their pages stay shared after fork.
    gc.collect()
    gc.freeze()
    ranks = []
    close_fds = tuple(fd for fd in control_fds if fd is not None)
    try:
        for rank_plan in plan:
            child = processes.fork_child(body_of(rank_plan), lib, close_fds)
            ranks.append(Rank(rank_plan["rank"], child))
            for control_fd in close_fds:
                os.write(control_fd, ("rank %d %s\n" % (child.pid, child.starttime)).encode())
    except OSError as exc:
        for rank in ranks:
            processes.kill(rank.child.pid)
            processes.close_output(rank.child)
        processes.send_go([rank.child for rank in ranks], None)
        for rank in ranks:
            os.waitpid(rank.child.pid, 0)
        raise RankStartError("could not start rank %d of ranks=%d: %s"
                             % (len(ranks), len(plan), file_read.describe_error(exc)))
    return ranks


def rank_result(rank):
    """The rank's result: its one JSON document, or with restore=true its lines merged (write, then read)."""
    result = None
    for line in rank.child.output.splitlines():
        try:
            document = json.loads(line.decode())
        except ValueError:
            break
        result = document if result is None else dict(result, **document)
    if result is not None and "write_cpu_seconds" in result:
        # restore=true's first line carries the rank's CPU for the harness, not for the result.
        rank.write_cpu_seconds = result.pop("write_cpu_seconds")
    if result is None:
        processes.reap(rank.child.pid)
        return {"rank": rank.number, "pid": rank.child.pid, "start": None, "end": None, "bytes": 0,
                "error": "rank process exited without a result"}
    return result


def stalled_write(rank):
    return {"rank": rank.number, "pid": rank.child.pid, "start": None, "end": None,
            "bytes": 0, "error": "stalled: no result within timeout"}


def stalled_read(rank):
    """A rank that wrote but did not finish reading within timeout: its write result, read_error says so."""
    result = restore.complete_read(rank_result(rank))
    result["read_error"] = "stalled: no read result within timeout"
    return result
