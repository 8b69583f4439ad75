# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""chunked_map(): a pure per-chunk function over a long list in forked workers, results in order.

Reading a bundle of thousands of clients is CPU-bound Python (json.loads, the schema check, the
mountstats deltas: tests/bench/bench_diagnose_scale.py): forked workers use the other cores. Each
worker inherits the caller's state (the bundle reader) by fork, so only the chunk's items go to it
and only the chunk's compact result comes back (pickled through a pipe). An exception a worker
raises is raised here, as in a loop. Host side: processes, not values.
"""

from __future__ import annotations

import multiprocessing
import os

# The work fork() inherits: (function, shared argument), set only while the pool runs.
_WORK = None


def _run_chunk(chunk):
    function, shared = _WORK
    return function(shared, chunk)


def workers_for(items, min_per_worker):
    """How many workers a list of items is worth: one per core, none below min_per_worker items each."""
    return max(1, min(os.cpu_count() or 1, len(items) // max(1, min_per_worker)))


def _same(result):
    return result


def chunked_map(function, shared, items, chunk_size, workers, then=_same):
    """[then(function(shared, chunk)) for each chunk of items] in order, function in `workers` forked processes
    (in this process when workers <= 1 or fork is not available); then in this process, on each chunk's result
    as it comes back, while the workers go on with the next chunks."""
    global _WORK  # pylint: disable=global-statement
    chunks = [items[start:start + chunk_size] for start in range(0, len(items), chunk_size)]
    if workers <= 1 or len(chunks) <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [then(function(shared, chunk)) for chunk in chunks]
    _WORK = (function, shared)
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, len(chunks))) as pool:
            # imap: results come back chunk by chunk, in order, never all pickled at once.
            return [then(result) for result in pool.imap(_run_chunk, chunks)]
    finally:
        _WORK = None
