# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""chunked_map(): a pure per-chunk function over a long list in forked workers, results in order.

Reading a bundle of thousands of clients is CPU-bound Python (json.loads, the schema check, the
mountstats deltas: tests/bench/bench_diagnose_scale.py): forked workers use the other cores. Each
worker inherits the caller's state (the bundle reader) by fork, so only the chunk's index decides
its work and only the chunk's compact result comes back (pickled through the worker's pipe). An
exception a worker raises is raised here, as in a loop.

Why not multiprocessing.Pool (issue 45): a Pool worker killed by a signal (the OOM killer's
SIGKILL) is replaced, and imap waits for ever for the chunk it was reading. Here each worker has
its own pipe and a fixed share of the chunks (chunk i goes to worker i mod workers): EOF before
its last chunk, or no byte from any worker for IDLE_SECONDS, ends the map at once with a
WorkerDied naming the chunk, its items, the worker and how it ended (the signal, the exit status),
and every worker is killed and reaped before chunked_map returns or raises. Host side: processes,
not values.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import time

# A chunk of 128 clients takes ~35 ms (tests/bench/README.md); a worker silent this long is stuck
# (a file on a dead mount in D state), and the diagnosis fails naming it instead of holding the play.
IDLE_SECONDS = 300.0
# A worker whose pipe closed is reaped within this bound (it has exited or is about to).
REAP_SECONDS = 5.0
# Each result: the chunk's index and its pickle's length, then the pickle.
_HEADER = struct.Struct("!QQ")


class WorkerDied(RuntimeError):
    """A forked worker ended (a signal, an exit) or went silent before sending its chunks; str() names them."""


def workers_for(items, min_per_worker):
    """How many workers a list of items is worth: one per core, none below min_per_worker items each."""
    return max(1, min(os.cpu_count() or 1, len(items) // max(1, min_per_worker)))


def _same(result):
    return result


def chunked_map(function, shared, items, chunk_size, workers, then=_same):
    """[then(function(shared, chunk)) for each chunk of items] in order, function in `workers` forked processes
    (in this process when workers <= 1 or fork is not available); then in this process, on each chunk's result
    as it comes back, while the workers go on with the next chunks. WorkerDied when a worker dies or stalls."""
    chunks = [items[start:start + chunk_size] for start in range(0, len(items), chunk_size)]
    if workers <= 1 or len(chunks) <= 1 or not hasattr(os, "fork"):
        return [then(function(shared, chunk)) for chunk in chunks]
    pool = _Workers(function, shared, chunks, chunk_size, min(workers, len(chunks)))
    try:
        return [then(result) for result in pool.results()]
    finally:
        pool.stop()


def _send(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _work(function, shared, chunks, index, count, fd):
    """A worker's body: every count-th chunk from index, each result (or the exception raised) sent in order."""
    for number in range(index, len(chunks), count):
        try:
            outcome = ("ok", function(shared, chunks[number]))
            data = pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # pylint: disable=broad-except
            # Raised in the caller as in a loop; one that cannot be pickled is sent as its text.
            try:
                data = pickle.dumps(("error", exc), pickle.HIGHEST_PROTOCOL)
            except Exception:  # pylint: disable=broad-except
                data = pickle.dumps(("error", RuntimeError("%s: %s" % (type(exc).__name__, exc))))
        _send(fd, _HEADER.pack(number, len(data)) + data)


def how_it_ended(status):
    """'killed by signal SIGKILL' or 'exited with status N' of a waitpid status."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = str(number)
        return "killed by signal %s%s" % (name, " (the OOM killer sends it when memory runs out)" if number == signal.SIGKILL else "")
    if os.WIFEXITED(status):
        return "exited with status %d" % os.WEXITSTATUS(status)
    return "ended (status %d)" % status


class _Workers:
    """The forked workers of one chunked_map: their pipes, what each has sent, the results in chunk order."""

    def __init__(self, function, shared, chunks, chunk_size, count):
        self.chunks, self.chunk_size, self.count = chunks, chunk_size, count
        self.pids, self.fds, self.buffers, self.ready, self.reaped = {}, {}, {}, {}, set()
        for index in range(count):
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    os.close(read_end)
                    for fd in self.fds:
                        os.close(fd)
                    _work(function, shared, chunks, index, count, write_end)
                except BaseException:  # pylint: disable=broad-except
                    code = 1
                finally:
                    # Never back into the caller's stack (its finally blocks, Ansible's exit).
                    os._exit(code)
            os.close(write_end)
            self.pids[index], self.fds[read_end], self.buffers[read_end] = pid, index, b""

    def results(self):
        """Each chunk's result in order, waiting (bounded) for the worker that has it."""
        for number in range(len(self.chunks)):
            while number not in self.ready:
                self._read_some(number)
            kind, value = self.ready.pop(number)
            if kind == "error":
                raise value
            yield value

    def _read_some(self, waiting_for):
        if not self.fds:
            raise WorkerDied(self._describe(waiting_for, "every worker has ended without it"))
        readable, _w, _x = select.select(list(self.fds), [], [], IDLE_SECONDS)
        if not readable:
            raise WorkerDied(self._describe(waiting_for, "no result for %g s from any worker: stuck (a file in D state?),"
                                                         " killed" % IDLE_SECONDS))
        for fd in readable:
            data = os.read(fd, 1 << 20)
            if data:
                self.buffers[fd] += data
                self._take_frames(fd)
                continue
            index = self.fds.pop(fd)
            os.close(fd)
            missing = [n for n in range(index, len(self.chunks), self.count) if n not in self.ready and n >= waiting_for]
            if missing or self.buffers[fd]:
                raise WorkerDied(self._describe(missing[0] if missing else waiting_for, self._reap(self.pids[index])))

    def _take_frames(self, fd):
        buffer = self.buffers[fd]
        while len(buffer) >= _HEADER.size:
            number, length = _HEADER.unpack_from(buffer)
            if len(buffer) < _HEADER.size + length:
                break
            self.ready[number] = pickle.loads(buffer[_HEADER.size:_HEADER.size + length])
            buffer = buffer[_HEADER.size + length:]
        self.buffers[fd] = buffer

    def _describe(self, number, how):
        first = number * self.chunk_size
        last = first + len(self.chunks[number]) - 1 if number < len(self.chunks) else first
        index = number % self.count
        return ("forked reader %d (pid %d) of %d, reading chunk %d of %d (items %d-%d), %s"
                % (index, self.pids[index], self.count, number, len(self.chunks), first, last, how))

    def _reap(self, pid):
        """How pid ended, waiting at most REAP_SECONDS (its pipe is closed: it has exited or is about to)."""
        deadline = time.monotonic() + REAP_SECONDS
        while True:
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                return "ended (already reaped)"
            if done == pid:
                self.reaped.add(pid)
                return how_it_ended(status)
            if time.monotonic() >= deadline:
                return "closed its pipe and did not exit within %g s" % REAP_SECONDS
            time.sleep(0.01)

    def stop(self):
        """Kill and reap every worker still there (bounded: a worker in D state is left to init)."""
        for fd in list(self.fds):
            os.close(fd)
        self.fds = {}
        for pid in self.pids.values():
            if pid in self.reaped:
                continue
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            deadline = time.monotonic() + REAP_SECONDS
            while True:
                try:
                    done, _status = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    break
                if done == pid or time.monotonic() >= deadline:
                    break
                time.sleep(0.01)
