"""host/parallel_map.py: a forked worker that dies (the OOM killer's SIGKILL, an exit) ends the map with an
error naming the chunk, the worker and the signal within seconds, never a wait for ever (issue 45)."""
from __future__ import annotations

import os
import pickle
import select
import signal
import time

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.host import parallel_map

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="forked workers need fork()")
# The old Pool.imap waited for ever for a killed worker's chunk: the map runs in a child and gets this long.
BOUND_SECONDS = 20


def _kill_self_on(shared, chunk):
    if shared in chunk:
        os.kill(os.getpid(), signal.SIGKILL)
    return [item * 2 for item in chunk]


def _exit_on(shared, chunk):
    if shared in chunk:
        os._exit(3)
    return chunk


def _outcome_within(function, shared, items, bound=BOUND_SECONDS):
    """(seconds taken, ("ok", result) or (exception class name, message)) of chunked_map run in a forked child;
    None when it had not ended within bound seconds (the child is then killed)."""
    read_end, write_end = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            outcome = ("ok", parallel_map.chunked_map(function, shared, items, 2, 3))
        except Exception as exc:  # pylint: disable=broad-except
            outcome = (type(exc).__name__, str(exc))
        os.write(write_end, pickle.dumps(outcome))
        os._exit(0)
    os.close(write_end)
    try:
        ready, _w, _x = select.select([read_end], [], [], bound)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            return None
        data = b""
        while True:
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            data += chunk
        return time.monotonic() - started, pickle.loads(data)
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)


@needs_fork
def test_a_worker_killed_by_sigkill_ends_the_map_with_an_error_naming_the_chunk_and_signal():
    """The OOM killer's SIGKILL in one worker: the map fails within seconds naming chunk, items and signal."""
    got = _outcome_within(_kill_self_on, 7, list(range(12)))
    assert got is not None, "chunked_map still waiting %d s after its worker was killed" % BOUND_SECONDS
    seconds, (kind, message) = got
    assert kind == "WorkerDied" and seconds < 10
    assert "chunk 3 of 6" in message and "items 6-7" in message and "SIGKILL" in message


@needs_fork
def test_a_worker_that_exits_early_ends_the_map_naming_its_status():
    got = _outcome_within(_exit_on, 2, list(range(12)))
    assert got is not None
    _seconds, (kind, message) = got
    assert kind == "WorkerDied" and "chunk 1 of 6" in message and "exited with status 3" in message


@needs_fork
def test_a_worker_that_stops_answering_is_killed_after_the_idle_bound(monkeypatch):
    monkeypatch.setattr(parallel_map, "IDLE_SECONDS", 1.0)
    got = _outcome_within(_sleep_on, 5, list(range(12)))
    assert got is not None
    seconds, (kind, message) = got
    assert kind == "WorkerDied" and "no result for 1 s" in message and seconds < 10


def _sleep_on(shared, chunk):
    if shared in chunk:
        time.sleep(60)
    return chunk


@needs_fork
def test_the_map_leaves_no_worker_behind():
    before = _children()
    expected = [[0, 2], [4, 6], [8, 10], [12, 14], [16, 18], [20, 22]]
    assert parallel_map.chunked_map(_kill_self_on, 99, list(range(12)), 2, 3) == expected
    with pytest.raises(parallel_map.WorkerDied):
        parallel_map.chunked_map(_kill_self_on, 7, list(range(12)), 2, 3)
    assert _children() == before


def _children():
    try:
        with open("/proc/self/task/%d/children" % os.getpid()) as handle:
            return handle.read().split()
    except OSError:
        return []
