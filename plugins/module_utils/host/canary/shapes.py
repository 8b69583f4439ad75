# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint_canary's shapes on the host: a rank running its ops (canary/shapes.py), the barrier
of one host's ranks, and the burst buffer's drain (a forked child per rank copying its files from
the local path to its NFS path, rate-capped).

Every name is opened relative to a work directory's fd, one component at a time with O_NOFOLLOW
(open_below, parent_below): O_NOFOLLOW on the leaf alone still follows a directory on the way, and a
job's directory is shared by the job's hosts, so a `checkpoint` or `.ckptio-barrier` planted there as
a link made the ranks write into the linked folder (issue 45). A link on the way is an OSError naming
the path and "is a symbolic link"; nothing is written through it.
"""

from __future__ import annotations

import errno
import os
import stat
import time

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import shapes
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read

FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC


class PipeBarrier:
    """A barrier of one host's ranks over pipes made before the fork: rank 0 takes one byte from every
    other rank, then releases them with one byte each. The release pipe alternates by round: a fast
    rank in round r + 1 cannot take a byte meant for a slow rank still leaving round r (it can reach
    round r + 2, the same pipe again, only after every rank has left round r). A rank that failed
    keeps passing its barriers (run_ops), so the others never wait on it; a dead one leaves them to
    the timeout."""

    def __init__(self, ranks):
        self.ranks = ranks
        self.round = 0
        self.arrive = os.pipe() if ranks > 1 else None
        self.release = (os.pipe(), os.pipe()) if ranks > 1 else ()

    def _read(self, fd, count):
        while count > 0:
            got = len(os.read(fd, count))
            if got == 0:
                raise OSError(errno.EPIPE, "barrier closed")
            count -= got

    def wait(self, rank):
        if self.arrive is None:
            return
        release = self.release[self.round % 2]
        self.round += 1
        if rank == 0:
            self._read(self.arrive[0], self.ranks - 1)
            os.write(release[1], b"g" * (self.ranks - 1))
        else:
            os.write(self.arrive[1], b"a")
            self._read(release[0], 1)

    def close(self):
        for pair in ((self.arrive,) if self.arrive else ()) + self.release:
            for fd in pair:
                os.close(fd)


DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | FLAGS


def _enter(fd, part, shown):
    """The fd of directory `part` inside fd, never through a link (ELOOP/ENOTDIR named as the path's link)."""
    try:
        return os.open(part, DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            try:
                is_link = stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode)
            except OSError:
                is_link = False
            if is_link:
                raise OSError(errno.ELOOP, "%s is a symbolic link: not followed (it may point outside)" % shown)
        raise


class parent_below:  # pylint: disable=invalid-name
    """with parent_below(dir_fd, "a/b/name", make=False) as (fd, "name"): the directory holding name, entered a
    component at a time without following a link (made 0700 first when make)."""

    def __init__(self, dir_fd, name, make=False):
        self.dir_fd, self.name, self.make, self.fds = dir_fd, name, make, []

    def __enter__(self):
        parts = self.name.split("/")
        fd = self.dir_fd
        try:
            for index, part in enumerate(parts[:-1]):
                if self.make:
                    try:
                        os.mkdir(part, 0o700, dir_fd=fd)
                    except FileExistsError:
                        pass
                fd = _enter(fd, part, "/".join(parts[:index + 1]))
                self.fds.append(fd)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return fd, parts[-1]

    def __exit__(self, *_exc):
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def open_below(dir_fd, name, flags, mode=0o600):
    """os.open(name, flags | O_NOFOLLOW) relative to dir_fd, every directory on the way entered without a link."""
    with parent_below(dir_fd, name) as (fd, leaf):
        try:
            return os.open(leaf, flags | FLAGS, mode, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise OSError(errno.ELOOP, "%s is a symbolic link: not followed (it may point outside)" % name)
            raise


def _mkdir_p(dir_fd, name):
    """mkdir -p of a relative name inside dir_fd (every component made 0700 or entered, never through a link)."""
    with parent_below(dir_fd, name + "/.", make=True):
        pass


def _write_data(dir_fd, op, view, block_size, direct):
    flags = os.O_WRONLY | FLAGS | (os.O_CREAT | os.O_EXCL if op["create"] else 0) | (os.O_DIRECT if direct else 0)
    fd = open_below(dir_fd, op["name"], flags)
    try:
        written_total = write_range(fd, view, op["offset"], op["length"], block_size)
        if op["fsync"]:
            os.fsync(fd)
    finally:
        os.close(fd)
    return written_total


def write_range(fd, view, offset, length, block_size, counted=None):
    """pwrite [offset, offset + length) in block_size writes of view, each block stamped with its offset
    (no two blocks alike: a deduplicating server cannot shortcut them); counted(size) after each block."""
    total = 0
    for position, size in canary.write_chunks(offset, length, block_size):
        view[0:canary.STAMP_BYTES] = canary.block_stamp(position)
        written = 0
        while written < size:
            written += os.pwrite(fd, view[written:size], position + written)
        total += size
        if counted is not None:
            counted(size)
    return total


def _write_small(dir_fd, op, view):
    """A small file written whole: create (O_EXCL) or, create false, truncated and rewritten in place."""
    flags = os.O_WRONLY | os.O_CREAT | FLAGS | (os.O_EXCL if op["create"] else os.O_TRUNC)
    fd = open_below(dir_fd, op["name"], flags)
    try:
        position = 0
        while position < op["length"]:
            position += os.write(fd, view[0:min(len(view), op["length"] - position)])
        if op["fsync"]:
            os.fsync(fd)
    finally:
        os.close(fd)


def _metadata(dir_fd, op):
    if op["kind"] == "mkdir_p":
        _mkdir_p(dir_fd, op["name"])
    elif op["kind"] == "exists":
        try:
            with parent_below(dir_fd, op["name"]) as (fd, leaf):
                os.stat(leaf, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            pass
    elif op["kind"] == "unlink":
        try:
            with parent_below(dir_fd, op["name"]) as (fd, leaf):
                os.unlink(leaf, dir_fd=fd)
        except FileNotFoundError:
            pass
    elif op["kind"] == "rename":
        with parent_below(dir_fd, op["name"]) as (source_fd, source):
            with parent_below(dir_fd, op["target"]) as (target_fd, target):
                os.rename(source, target, src_dir_fd=source_fd, dst_dir_fd=target_fd)


def mark_done(job_fd, op, run):
    """This rank's done marker of run `run` in the job's directory (canary/shapes.py, "A job"): a marker of
    another run has another name; one of this run already there (a second host with this rank) fails it."""
    _mkdir_p(job_fd, op["name"].rsplit("/", 1)[0])
    name = shapes.marker_name(op["name"], run)
    try:
        os.close(open_below(job_fd, name, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        raise OSError(errno.EEXIST, "a done marker of this run (%s) is already there: another host of the job has this"
                      " rank (its first_rank)" % name)


def await_job(job_fd, op, start_at, seconds, run):
    """The job's rank 0: wait until op["length"] ranks have left their marker of run `run` in op["name"] (reopened
    each poll, so NFS revalidates it), at most seconds from start_at. Returns (the global ranks still missing,
    the markers of other runs it ignored: shapes.sort_markers)."""
    deadline = start_at + seconds
    expected = set(str(rank) for rank in range(op["length"]))
    while True:
        try:
            fd = _enter(job_fd, op["name"], op["name"])
            try:
                present, others = shapes.sort_markers(os.listdir(fd), run, op["length"])
            finally:
                os.close(fd)
        except FileNotFoundError:
            present, others = set(), []
        missing = expected - present
        if not missing or time.time() >= deadline:
            return missing, others
        time.sleep(shapes.AWAIT_POLL_SECONDS)


def run_ops(dir_fd, rank_plan, params, start_at, barrier, buffer, job_fd=None):
    """One rank of a shape: its ops in order; its result with one record a checkpoint (MLPerf).

    start and end of the result are the first begin and the last end; after an error the rank
    only passes its remaining barriers. job_fd: the first path's work directory (a job's markers,
    of run params["run_token"]); rank 0's other_run_markers names the other runs' markers it ignored.
    """
    view = memoryview(buffer)
    delay = start_at - time.time()
    if delay > 0:
        time.sleep(delay)
    result = {"rank": rank_plan["rank"], "pid": os.getpid(), "start": None, "end": None, "bytes": 0, "error": None}
    checkpoints = []
    for op in rank_plan["ops"]:
        kind = op["kind"]
        if kind == "barrier":
            barrier.wait(rank_plan["rank"])
            continue
        if result["error"]:
            continue
        try:
            if kind == "begin":
                checkpoints.append({"checkpoint": op["length"], "start": time.time(), "end": None, "bytes": 0})
            elif kind == "end":
                checkpoints[-1]["end"] = time.time()
            elif kind == "pause":
                time.sleep(op["length"])
            elif kind == "data":
                checkpoints[-1]["bytes"] += _write_data(dir_fd, op, view, params["block_size"], params["direct"])
            elif kind == "write":
                _write_small(dir_fd, op, view)
            elif kind == "mark":
                mark_done(dir_fd if job_fd is None else job_fd, op, params["run_token"])
            elif kind == "await":
                seconds = shapes.AWAIT_SHARE * params["timeout"]
                missing, others = await_job(dir_fd if job_fd is None else job_fd, op, start_at, seconds, params["run_token"])
                if others:
                    result["other_run_markers"] = others
                if missing:
                    raise OSError(errno.ETIMEDOUT, shapes.missing_message(missing, op["length"], seconds,
                                                                          params["run_token"], others))
            else:
                _metadata(dir_fd, op)
        except OSError as exc:
            result["error"] = "%s %s: %s" % (kind, op["name"], file_read.describe_error(exc))
    if checkpoints:
        result["start"] = checkpoints[0]["start"]
        result["end"] = checkpoints[-1]["end"] if not result["error"] else None
        result["bytes"] = sum(c["bytes"] for c in checkpoints)
    if len(checkpoints) > 1:
        result["checkpoints"] = checkpoints
    return result


def drain_items(rank_plan):
    """(name, offset, length or None for the whole file) a rank's drain copies: its data ranges, then its other outputs."""
    items = [(f["name"], f["offset"], f["length"]) for f in rank_plan["files"]]
    data = set(f["name"] for f in rank_plan["files"])
    return items + [(name, 0, None) for name in rank_plan.get("outputs", []) if name not in data]


def _pace(started, copied, rate):
    """Sleep until copied bytes at rate bytes/s have had their time (rate 0: no cap)."""
    if rate > 0:
        wait = started + copied / float(rate) - time.time()
        if wait > 0:
            time.sleep(wait)


def drain_rank(source_fd, target_fd, rank_plan, block_size, rate, buffer, start_at):
    """Copy one rank's files from the local work directory to its NFS one, fsync each; its drain record."""
    delay = start_at - time.time()
    if delay > 0:
        time.sleep(delay)
    view = memoryview(buffer)
    result = {"rank": rank_plan["rank"], "pid": os.getpid(), "start": time.time(), "end": None, "bytes": 0, "error": None}
    try:
        for name, offset, length in drain_items(rank_plan):
            if "/" in name:
                _mkdir_p(target_fd, name.rsplit("/", 1)[0])
            source = open_below(source_fd, name, os.O_RDONLY)
            try:
                target = open_below(target_fd, name, os.O_WRONLY | os.O_CREAT)
                try:
                    end = offset + (os.fstat(source).st_size if length is None else length)
                    position = offset
                    while position < end:
                        got = os.preadv(source, [view[0:min(block_size, end - position)]], position)
                        if got == 0:
                            break
                        done = 0
                        while done < got:
                            done += os.pwrite(target, view[done:got], position + done)
                        position += got
                        result["bytes"] += got
                        _pace(result["start"], result["bytes"], rate)
                    os.fsync(target)
                finally:
                    os.close(target)
            finally:
                os.close(source)
        result["end"] = time.time()
    except OSError as exc:
        result["error"] = "drain %s: %s" % (name, file_read.describe_error(exc))
    return result
