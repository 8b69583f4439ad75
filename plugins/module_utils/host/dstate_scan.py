# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One pass over /proc: the tasks in D state right now, and what the pass itself cost.

A read-only I/O exception in module_utils, like host_reader: checkpoint_canary (every second
while its ranks run) and nfs_client_stats (dstate_samples) take the same sample, so it is
written once; what a sample means (task_state, dstate_task) stays in the pure kernel_text/dstate.

Why it is this lean: a pass reads /proc/PID/stat for every task on the host, and the kernel
formats each one on read. In the lab's 1-vCPU TCG clients a pass over 93 tasks took 199 ms of
CPU with Python's open() (about seven syscalls per file) and 97 ms with os.open/os.read/os.close
(three), so one pass a second was 10-20 % of the client's only CPU, inside the checkpoint the
canary times (measured 2026-12-01, /tmp/d.py on nfs2; the canary's own CPU was 34 % of the run).
wchan is read only for the tasks in D. The caller stretches its interval with
dstate.sampling_interval so the passes stay within a bounded share of one CPU.
"""

from __future__ import annotations

import os
import time

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import dstate

# /proc/PID/stat is one line well under a page; wchan is a symbol name; the first frames of a
# stack (all a wait site needs) fit in a page too.
READ_LIMIT = 4096


def _read(path):
    """The file's bytes, or None on any OSError (the task exited, no such file, not readable)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, READ_LIMIT)
    except OSError:
        return None
    finally:
        os.close(fd)


def _text(data):
    return None if data is None else data.decode("utf-8", "surrogateescape")


def wait_site(proc, pid):
    """Where task pid sleeps: its wchan, or the stack's wait site where wchan says "0" (see
    scan); "0" or None (no wchan file) when neither names one. Read for a stalled rank."""
    wchan_text = _text(_read("%s/%s/wchan" % (proc, pid)))
    if not dstate.wchan_unknown(wchan_text):
        return wchan_text.strip()
    # x86 kernels before 5.16 ("x86: Fix get_wchan() to support the ORC unwinder") print "0" in
    # wchan for every sleeping task with Debian's ORC build: measured on Debian 11's 5.10
    # (docs/kernels.md); 5.14/5.15 kernels predate the fix unless their vendor backported it (not
    # verified). The stack (root only) still names the site. Read only then.
    return dstate.stack_wait_site(_text(_read("%s/%s/stack" % (proc, pid)))) or ((wchan_text or "").strip() or None)


def scan(proc):
    """([{pid, wchan}] sorted by pid, CPU seconds the pass took) for every task in D state under proc (host_root.HostRoot.proc)."""
    started = time.process_time()
    tasks = []
    try:
        entries = os.listdir(proc)
    except OSError:
        return tasks, time.process_time() - started
    for entry in entries:
        if not entry.isdigit():
            continue
        stat = _read("%s/%s/stat" % (proc, entry))
        if not stat:
            continue
        stat_text = stat.decode("utf-8", "surrogateescape")
        if dstate.task_state(stat_text) != "D":
            continue
        task = dstate.dstate_task(entry, stat_text, wait_site(proc, entry))
        if task is not None:
            tasks.append(task)
    tasks.sort(key=lambda task: task["pid"])
    return tasks, time.process_time() - started
