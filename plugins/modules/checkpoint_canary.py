#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: checkpoint_canary
short_description: Write a checkpoint-shaped load to an NFS mount and time every rank
version_added: 0.1.0
description:
  - Forks O(ranks) writer processes that write O(bytes_per_rank) each in O(block_size) blocks, either
    into disjoint ranges of one shared file with C(pwrite) (O(layout=shared_file), the pattern of a
    single-file checkpoint) or into files of their own (O(layout=file_per_rank), the PyTorch DCP and
    MLPerf Storage pattern), then C(fsync) and close, as a real checkpoint does.
  - Two-phase start with O(barrier_dir) (what roles/canary_validation uses) - the canary prepares (its
    directory and files, the ranks forked and blocked), writes C(ready.json) in O(barrier_dir), and waits
    for the controller's C(go.json) (key C(go_at), the epoch on this host's clock) or C(abort.json). Every rank
    receives the go time through its pipe and sleeps until it, so ranks on many hosts begin together
    whatever the launch took. The module writes C(done.json) there when it ends.
  - Without O(barrier_dir) every rank waits for O(start_at) (direct use), and reports its own
    start, end, bytes and error. The aggregate follows MLPerf Storage's rule
    (total bytes / (latest end - earliest start)).
  - Samples the tasks in D state and their C(wchan) once a second while the ranks run.
  - On a hard mount a dead server leaves writers in D state, where not even SIGKILL ends them. Ranks
    that do not finish within O(timeout) are sent SIGKILL; the module waits at most O(kill_grace)
    seconds more and then fails naming each stalled rank with its state and C(wchan). It never waits
    on a task in D state.
  - Writes only inside a directory it creates with mode 0700 under O(path), opens every file relative
    to that directory with C(O_NOFOLLOW) and C(O_EXCL), and removes the directory afterwards, after a
    failure too, unless O(keep=true). Removal runs in a detached helper that first waits for every
    rank to exit, so a dead server delays it instead of hanging the play.
  - Data is random (a block generated once per rank, each write stamped with its offset), so a server
    that compresses or deduplicates cannot shortcut it.
  - With O(restore=true) the canary also measures the checkpoint's load (MLPerf Storage's checkpoint workload
    times save and load - after a failure every rank reads the checkpoint back before training resumes). Once
    every rank of this host has written and fsynced, the parent releases the reads together (a second line
    through each rank's go pipe) and the same ranks read back exactly what they wrote (same files, offsets and
    O(block_size)) from a cold client cache (O(restore_cache)), timed by the same MLPerf rule
    (RV(summary.restore)). Every block read is compared with what was written (its offset stamp and the rank's
    random block); a torn, stale or missing block fails the module naming the rank, file and offset.
  - The read phase has its own O(timeout), counted from the read go, with the same SIGKILL and O(kill_grace)
    handling as the write. It does not start when a rank failed or stalled writing (C(skipped) in
    RV(summary.restore) says why).
  - Read start with O(barrier_dir) (the hook for a read barrier across hosts) - after the writes the canary
    writes C(written.json) in O(barrier_dir) and waits for C(read_go.json) (key C(go_at), like C(go.json)) or
    C(abort.json) for at most O(barrier_timeout) seconds. Without O(barrier_dir) the reads start as soon as
    the last rank of this host has written. C(written.json) says C(read_ready) - a canary whose write failed
    or stalled writes it too, with C(read_ready=false) and C(skipped) (why), and does not wait, so the
    controller's wait for it ends at once; it then writes C(done.json) and fails.
author:
  - ckptio.nfs maintainers (@ckptio)
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: Validates the options and the target and returns the plan; creates and writes nothing.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: partial
    details: With O(keep=true) the diff lists the files left behind.
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
    platforms: linux
options:
  path:
    description:
      - Existing directory on the NFS mount to test. The canary creates its own 0700 directory inside.
      - Must be absolute and must not pass through a symbolic link (give the real path).
    type: path
    required: true
  ranks:
    description: Writer processes on this host (GPUs per node in a training job).
    type: int
    default: 1
  bytes_per_rank:
    description: Bytes each rank writes (its checkpoint shard).
    type: int
    default: 67108864
  block_size:
    description: Bytes per write call. With O(direct=true) a multiple of 4096.
    type: int
    default: 1048576
  layout:
    description:
      - V(shared_file) - every rank C(pwrite)s its own disjoint range of one file.
      - V(file_per_rank) - every rank writes O(files_per_rank) files of its own.
    type: str
    choices: [shared_file, file_per_rank]
    default: shared_file
  files_per_rank:
    description: Files per rank with O(layout=file_per_rank); O(bytes_per_rank) is split between them.
    type: int
    default: 1
  fsync:
    description: C(fsync) every file before the rank's end time, as MLPerf Storage requires.
    type: bool
    default: true
  direct:
    description: Open with C(O_DIRECT) (page-aligned buffers), bypassing the client page cache.
    type: bool
    default: false
  start_at:
    description:
      - Unix epoch (seconds, may have a fraction) at which every rank starts writing. Set it once on
        the controller a few seconds ahead so all hosts start together. Omitted means now.
      - It must be finite and within O(barrier_timeout) seconds of now; a go file's C(go_at) is held to the
        same bound and must echo the run id of C(ready.json).
    type: float
  barrier_dir:
    description:
      - Directory on a local file system (tmpfs such as C(/dev/shm) or C(/run), never the NFS mount under
        test) for the two-phase start. The canary creates it (mode 0700; an existing one must be a real
        directory of this user without group or other write), writes C(ready.json) when prepared, waits for
        C(go.json) or C(abort.json) and writes C(done.json) at the end. O(start_at) is then ignored.
      - With O(restore=true) also the read barrier - C(written.json) after the writes, then C(read_go.json)
        or C(abort.json), waited for at most O(barrier_timeout).
      - Omitted means no barrier - the ranks start at O(start_at).
    type: path
  barrier_timeout:
    description:
      - Seconds the prepared canary waits for C(go.json) before it gives up, cleans up and fails, so a
        controller that died does not leave ranks waiting.
      - With O(restore=true) also the longest wait for C(read_go.json) after C(written.json).
    type: float
    default: 600
  timeout:
    description:
      - Seconds from the start until every rank must have finished.
      - With O(restore=true) the read phase gets its own O(timeout), counted from the read go (so a run may
        take twice O(timeout), plus the wait for C(read_go.json)).
    type: float
    default: 600
  kill_grace:
    description: Seconds to wait for stalled ranks to exit after SIGKILL before failing anyway.
    type: float
    default: 5
  allow_local:
    description: Allow a O(path) that is not on an NFS mount (tests, benchmarks against local disks).
    type: bool
    default: false
  keep:
    description: Leave the written files in place (in the directory named by RV(workdir)).
    type: bool
    default: false
  restore:
    description:
      - After the writes, read everything back (the checkpoint's load) and verify every block; see the description.
      - Needs O(fsync=true) (a checkpoint read back after a failure was fsynced, and dirty pages can neither be
        dropped nor read around). Each rank then holds a second block in memory (the copy it compares with),
        which the memory bound counts.
    type: bool
    default: false
  restore_cache:
    description:
      - How the read phase starts from a cold client page cache (ignored unless O(restore=true)). Neither method
        empties the NFS server's cache - a read right after the write may be served from the server's memory.
      - V(fadvise) - after its fsync each rank reopens its files and calls
        C(posix_fadvise(POSIX_FADV_DONTNEED)) over its own range (the whole file with O(layout=file_per_rank);
        with O(layout=shared_file) its own range only, because a whole-file DONTNEED would start writeback of
        ranks still writing), outside both timed windows. The reads are then ordinary buffered reads with the
        client's readahead, as a training job's load is. What is guaranteed is the call - the kernel drops the
        clean, unmapped, unlocked pages of the range; after the fsync (NFS COMMIT) the pages should all be clean.
        Not guaranteed by the call - that the NFS client releases every page (a page it still holds state for
        is not dropped), so some reads may still hit the cache. This module records only the method (no
        C(mincore) in the Python standard library); M(ckptio.nfs.diagnose_bundle) measures the result
        (C(restore.cold_cache) - the clients' mountstats C(serverreadbytes) against the bytes read back).
      - V(direct) - the reads open with C(O_DIRECT) into a page-aligned buffer; the client page cache is not used
        for the data read, each block is a READ to the server, and there is no readahead. Needs O(block_size) a
        multiple of 4096 and O(bytes_per_rank) a multiple of O(block_size), as O(direct=true) does. A file system
        without C(O_DIRECT) (tmpfs) fails the read with C(EINVAL).
      - V(none) - nothing is emptied, a warm read - the control case that shows what a cold cache changes (the
        diagnosis's C(restore.cold_cache) measures how much was read from the server whichever method ran).
    type: str
    choices: [fadvise, direct, none]
    default: fadvise
notes:
  - Ranks are forked processes; results, D-state samples and cleanup do not depend on the play's
    connection staying open.
seealso:
  - name: MLPerf Storage checkpointing rules
    description: Duration is the slowest rank; throughput is total bytes over that duration.
    link: https://github.com/mlcommons/storage
"""

EXAMPLES = r"""
- name: Eight ranks write 1 GiB each into one shared file, starting together
  ckptio.nfs.checkpoint_canary:
    path: /mnt/checkpoints
    ranks: 8
    bytes_per_rank: 1073741824
    layout: shared_file
    start_at: "{{ canary_start_at }}"
    timeout: 300

- name: File per rank, two files each, O_DIRECT
  ckptio.nfs.checkpoint_canary:
    path: /mnt/checkpoints
    ranks: 8
    layout: file_per_rank
    files_per_rank: 2
    direct: true

- name: Save and load - write, then read everything back with O_DIRECT and verify every block
  ckptio.nfs.checkpoint_canary:
    path: /mnt/checkpoints
    ranks: 8
    layout: file_per_rank
    restore: true
    restore_cache: direct
  register: canary

- name: Show the load's MLPerf throughput
  ansible.builtin.debug:
    msg: "{{ canary.summary.restore.throughput_bytes_per_second }} B/s ({{ canary.summary.restore.restore_cache }})"
"""

RETURN = r"""
workdir:
  description: The 0700 directory the canary wrote into (removed unless O(keep=true)).
  returned: always
  type: str
  sample: /mnt/checkpoints/ckptio-canary-node01-4711-1a2b3c4d
mount:
  description:
    - The mount holding O(path), from C(/proc/self/mountinfo), which is read as bytes, so other mounts of the host
      whose names are not UTF-8 do not matter.
    - A byte of its source or mount point that is not UTF-8 is shown as a backslash and three octal digits (C(\351)).
  returned: always
  type: dict
  sample: {mount_point: /mnt/checkpoints, fstype: nfs4, source: "10.0.0.1:/srv/nfs"}
plan:
  description: Files, offsets and lengths per rank.
  returned: always
  type: list
  elements: dict
ranks:
  description:
    - Per-rank results; start and end are Unix epochs, error is null on success.
    - With O(restore=true) also C(read_start), C(read_end) (epochs), C(read_bytes), C(read_error) (null on success),
      C(verify_errors) (at most 8 bad blocks, each C({file, offset, problem})) and C(verify_error_count) (all of them).
  returned: when the ranks ran
  type: list
  elements: dict
  sample: [{rank: 0, pid: 4712, start: 1760000000.001, end: 1760000004.2, bytes: 1073741824, error: null}]
summary:
  description:
    - MLPerf Storage aggregate over this host's ranks. C(seconds) is latest end minus earliest start,
      C(throughput_bytes_per_second) total bytes over that, C(max_start_delay_seconds) the largest
      distance of a rank's start from O(start_at).
  returned: when the ranks ran
  type: dict
  contains:
    restore:
      description:
        - With O(restore=true) - the same aggregate over the read fields (C(read_start), C(read_end), C(read_bytes);
          a rank with a read or verify error is left out of the span), computed by the same function, with
          C(max_start_delay_seconds) measured from C(read_go_at) (the read go on this host's clock), plus
          C(restore_cache) (the method used), C(verify_error_count) and C(skipped) (null, or why no rank read).
      returned: when O(restore=true) and the ranks ran
      type: dict
restore:
  description:
    - The read phase's plan - C(restore_cache), C(guarantee) (what the method guarantees), C(block_size),
      C(total_read_bytes), C(blocks), C(files), C(start) (when the reads start) and C(verify).
    - In check mode this is what would be done; nothing is written or read.
  returned: when O(restore=true)
  type: dict
restore_host_samples:
  description: The host samples (as RV(host_samples)) at the read go and when the last rank finished reading.
  returned: when O(restore=true) and the read phase ran
  type: dict
stalled:
  description:
    - Ranks that did not finish within O(timeout), with state, C(wchan) and whether they exited after SIGKILL.
    - A rank that stalled reading (O(restore=true)) has C(phase) C(read).
  returned: always
  type: list
  elements: dict
dstate_samples:
  description: Once-a-second samples of tasks in D state, C({epoch, count, wchans, rank_pids}).
  returned: when the ranks ran
  type: list
  elements: dict
host_samples:
  description:
    - CPU, disk and network evidence of this host when the ranks started (C(start), taken at O(start_at)) and when the
      last rank ended or the timeout hit (C(end)), in the capture-bundle host sample format (C(docs/capture-bundle.md)).
      C(start) is missing when no rank was still running at O(start_at).
  returned: when the ranks ran
  type: dict
dstate_text:
  description: The same samples in the capture-bundle C(dstate.txt) format (C(EPOCH COUNT wchan1,wchan2,...)).
  returned: always
  type: str
dstate_summary:
  description: Samples, samples with a task in D, peak count, longest run and C(wchan) counts (from dstate.summarize_dstate).
  returned: when the ranks ran
  type: dict
dstate_peak:
  description: Most tasks seen in D state in one sample.
  returned: always
  type: int
cleaned_up:
  description: True when the work directory was removed before the module returned.
  returned: always
  type: bool
cleanup_deferred_pid:
  description: Pid of the helper still waiting for stalled ranks before it removes the work directory.
  returned: when removal could not finish in time
  type: int
start_at:
  description: The start epoch the ranks waited for (the go time on this host's clock with O(barrier_dir)).
  returned: always
  type: float
barrier:
  description:
    - With O(barrier_dir) - C(ready_at) (when the canary was prepared), C(signal) (C(go) or C(abort)), C(go_at),
      C(go_late_seconds) (how long after go the go file was read; 0 when it came in time), C(abort) (the reason).
    - With O(restore=true) also C(read) - the read barrier's record, C(written_at) (when C(written.json) was
      written) and C(signal), C(go_at), C(go_late_seconds), C(abort) as above for C(read_go.json).
  returned: when O(barrier_dir) is set and the canary got that far
  type: dict
harness:
  description:
    - The harness's own CPU while the ranks ran - C(canary_cpu_seconds) (this module's process, getrusage),
      C(ranks_cpu_seconds), C(host_busy_cpu_seconds) (from the host samples at go and at the end) and
      C(other_cpu_seconds) (the host's busy CPU that was neither, such as Ansible's own processes), and
      C(dstate_sampler) - the D-state passes over /proc (C(passes), their C(cpu_seconds)), sampled every second
      unless a pass costs more than C(max_share) of its interval, which then stretches
      (C(longest_interval_seconds), at most 10 s; a pass took ~0.1 s of CPU in a 1-vCPU QEMU TCG guest).
  returned: when the ranks ran
  type: dict
"""

import ctypes
import errno
import gc
import json
import math
import mmap
import os
import resource
import select
import signal
import socket
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import barrier
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import limits as canary_limits
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import dstate
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import restore
from ansible_collections.ckptio.nfs.plugins.module_utils.host import atomic_file
from ansible_collections.ckptio.nfs.plugins.module_utils.host import barrier_files
from ansible_collections.ckptio.nfs.plugins.module_utils.host import dstate_scan
from ansible_collections.ckptio.nfs.plugins.module_utils.host import proc_text
from ansible_collections.ckptio.nfs.plugins.module_utils.host.host_reader import read_host_sample
from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import NFS_FSTYPES, nfs_server_of, parse_mountinfo

PROC = "/proc"
PROC_MOUNTINFO = "/proc/self/mountinfo"
PROC_MEMINFO = "/proc/meminfo"
SYS_CLASS_NET = "/sys/class/net"
DSTATE_INTERVAL = 1.0
# A helper whose ranks are stuck in D waits this long for the server before giving up.
CLEANUP_PATIENCE = 86400.0
# prctl(2) option and signal: the kernel sends SIGKILL to a rank when the module process dies.
PR_SET_PDEATHSIG = 1
# os.urandom is called in pieces so a rank never holds its block twice (bytes + mmap).
RANDOM_CHUNK = 1024 * 1024


class CanaryError(Exception):
    """A clean failure found while preparing (limits, fork, pipes): the message is for the user."""


def task_state(pid):
    """(state, wchan, starttime) of a live pid; (None, None, None) once it is gone."""
    stat = atomic_file.read_optional("%s/%d/stat" % (PROC, pid))
    state = dstate.task_state(stat) if stat else None
    if state is None:
        return None, None, None
    return state, dstate_scan.wait_site(PROC, pid), canary.parse_stat_starttime(stat)


def sample_dstate(rank_pids):
    """Every task in D state right now: (wchans, rank pids among them, CPU seconds the pass took)."""
    tasks, cpu_seconds = dstate_scan.scan(PROC)
    wchans = sorted(task["wchan"] for task in tasks)
    ranks_in_d = sorted(task["pid"] for task in tasks if task["pid"] in rank_pids)
    return wchans, ranks_in_d, cpu_seconds


def _quiet_stdio():
    """Detach a child from the module's stdin/stdout/stderr.

    Ansible waits for EOF on the module's output: a rank stuck in D that still held it would
    hang the play, which is exactly what the timeout promises not to do.
    """
    devnull = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(devnull, target)
    if devnull > 2:
        os.close(devnull)


def random_block(block_size):
    """A page-aligned buffer of random bytes (mmap is page aligned, as O_DIRECT needs)."""
    buffer = mmap.mmap(-1, block_size)
    for start in range(0, block_size, RANDOM_CHUNK):
        size = min(RANDOM_CHUNK, block_size - start)
        buffer[start:start + size] = os.urandom(size)
    return buffer


def readable(fds, timeout):
    """The fds of `fds` ready to read within timeout seconds.

    poll(2), not select(2): select cannot watch a descriptor >= FD_SETSIZE (1024), which a
    module with more than ~1,020 ranks has (ValueError: filedescriptor out of range).
    """
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return [fd for fd, _event in poller.poll(max(0.0, timeout) * 1000.0)]


def _libc():
    """libc through ctypes, loaded in the parent once so forked ranks do not pay for it."""
    return ctypes.CDLL(None, use_errno=True)


def die_with_parent(libc, parent_pid):
    """In a forked rank: get SIGKILL when the module dies (SIGKILL, async timeout), or exit now if it has.

    PR_SET_PDEATHSIG covers a death after the call; the getppid check covers a parent that died
    between fork and prctl (the rank was then re-parented already and no signal will come).
    """
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != parent_pid:
        os._exit(1)


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
            fd = os.open(item["name"], open_flags, 0o600, dir_fd=dir_fd)
            try:
                for offset, size in canary.write_chunks(item["offset"], item["length"], block_size):
                    # Stamp the offset into the block so no two blocks are identical (dedupe).
                    view[0:canary.STAMP_BYTES] = canary.block_stamp(offset)
                    written = 0
                    while written < size:
                        written += os.pwrite(fd, view[written:size], offset + written)
                    result["bytes"] += size
                if fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
        result["end"] = time.time()
    except OSError as exc:
        result["error"] = atomic_file.describe_error(exc)
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
            fd = os.open(item["name"], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            try:
                os.posix_fadvise(fd, item["offset"], item["length"], os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    except OSError as exc:
        return "dropping the cached pages (restore_cache=fadvise): %s" % atomic_file.describe_error(exc)
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


def run_read(dir_fd, rank_plan, block_size, cache, buffer, read_at):
    """Read one rank's files back as it wrote them and check every block; its read fields.

    buffer is the rank's block from run_rank: copied once into `expected` (what each block must
    be, with its stamp), then reused as the read buffer (page aligned, as O_DIRECT needs).
    """
    expected = bytearray(buffer)
    view = memoryview(buffer)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_DIRECT if cache == "direct" else 0)
    delay = read_at - time.time()
    if delay > 0:
        time.sleep(delay)
    result = restore.empty_read()
    result["read_start"] = time.time()
    try:
        for item in rank_plan["files"]:
            fd = os.open(item["name"], flags, dir_fd=dir_fd)
            try:
                for offset, size in canary.write_chunks(item["offset"], item["length"], block_size):
                    got = _read_full(fd, view, offset, size)
                    result["read_bytes"] += got
                    problem = restore.verify_block(expected, view[0:got], offset, size)
                    if problem:
                        restore.add_verify_error(result, item["name"], offset, problem)
                    if got < size:
                        break
            finally:
                os.close(fd)
        result["read_end"] = time.time()
    except OSError as exc:
        result["read_error"] = "read: " + atomic_file.describe_error(exc)
    return result


def _write_then_restore(dir_fd, rank_plan, params, start_at, go_read, write_end):
    """A rank with restore=true: write; drop its pages (fadvise); send the write result as line 1;
    wait for the read go (a second line through the go pipe); read back; send line 2."""
    buffer = random_block(params["block_size"])
    result = run_rank(dir_fd, rank_plan, params["block_size"], params["fsync"], params["direct"], start_at, buffer)
    # The parent's RUSAGE_CHILDREN has no rank before it is reaped, and this one lives on to read.
    usage = resource.getrusage(resource.RUSAGE_SELF)
    line = dict(result, write_cpu_seconds=usage.ru_utime + usage.ru_stime)
    drop_error = None
    if not result.get("error") and params["restore_cache"] == "fadvise":
        drop_error = drop_cached_pages(dir_fd, rank_plan)
    os.write(write_end, (json.dumps(line) + "\n").encode())
    if result.get("error"):
        return
    read_at = _receive_go(go_read)
    if read_at is None:
        return
    if drop_error:
        read = dict(restore.empty_read(), read_error=drop_error)
    else:
        read = run_read(dir_fd, rank_plan, params["block_size"], params["restore_cache"], buffer, read_at)
    os.write(write_end, (json.dumps(read) + "\n").encode())


def _receive_go(go_read, close=True):
    """The go epoch the parent sends through the rank's go pipe (one line); None on "abort" or when
    the parent is gone. The rank blocks here, prepared, until the barrier releases it.

    A line, not EOF: ranks forked later inherit the write ends of earlier ranks' go pipes, so an
    EOF would never come while any later rank lives. Read a byte at a time, so nothing of a
    second line (restore=true's read go) is taken with the first; close=False keeps the pipe
    open for it.
    """
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(go_read, 1)
        if not chunk:
            break
        data += chunk
    if close:
        os.close(go_read)
    try:
        return float(data.decode())
    except ValueError:
        return None


def _start_rank(dir_fd, rank_plan, params, libc=None, close_fds=()):
    parent_pid = os.getpid()
    read_end, write_end = os.pipe()
    try:
        # The go time comes through its own pipe after the fork (barrier.py): the rank is forked
        # and waiting before the controller even knows the host is ready.
        go_read, go_write = os.pipe()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        raise
    try:
        pid = os.fork()
    except OSError:
        for fd in (read_end, write_end, go_read, go_write):
            os.close(fd)
        raise
    if pid == 0:
        status = 1
        try:
            # No cyclic GC in a rank: a collection walks the parent's whole heap (Ansible's imports,
            # tens of MiB) and copy-on-write copies every page it touches, on the CPU the writes need.
            gc.disable()
            die_with_parent(libc or _libc(), parent_pid)
            os.close(read_end)
            for fd in close_fds:
                os.close(fd)
            os.close(go_write)
            _quiet_stdio()
            start_at = _receive_go(go_read, close=not params.get("restore"))
            if start_at is None:
                status = 0
                os._exit(0)
            if params.get("restore"):
                _write_then_restore(dir_fd, rank_plan, params, start_at, go_read, write_end)
            else:
                result = run_rank(dir_fd, rank_plan, params["block_size"], params["fsync"], params["direct"], start_at)
                os.write(write_end, json.dumps(result).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    os.close(go_read)
    return {"rank": rank_plan["rank"], "pid": pid, "fd": read_end, "buffer": b"", "starttime": task_state(pid)[2],
            "go_fd": go_write}


def send_go(ranks, go_at, last=True):
    """Release every rank: write go (None = abort) into each go pipe, and close it when last.

    restore=true sends two lines, the write's go (last=False) and the read's; an abort closes.
    """
    message = b"abort\n" if go_at is None else (repr(float(go_at)) + "\n").encode()
    for item in ranks:
        fd = item.get("go_fd")
        if fd is None:
            continue
        try:
            os.write(fd, message)
        except OSError:
            pass
        finally:
            if last:
                os.close(item.pop("go_fd"))


def _close_result(item):
    """Close a rank's result pipe once (EOF seen, stalled, or the phase that needed it is over)."""
    if item.get("fd") is not None:
        os.close(item["fd"])
        item["fd"] = None


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _reap(pid):
    """True once the child has exited (reaped or gone); never blocks."""
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done == pid


def _rank_gone(pid, starttime):
    state, _wchan, current_start = task_state(pid)
    return state in (None, "Z", "X") or (starttime is not None and current_start != starttime)


def _remove_entries(parent_fd, workdir_name):
    """One attempt at deleting the work directory; False while the NFS client still holds a file.

    A rank killed in the middle of a write exits before the client has flushed its pages, so the
    client still holds the file: unlink then silly-renames it to .nfsXXXX (which cannot be
    unlinked, EBUSY) and rmdir sees a directory that is not empty. Both clear up by themselves
    once the server takes the pages, so they mean "try again", not "give up".
    """
    dir_fd = os.open(workdir_name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent_fd)
    try:
        for name in os.listdir(dir_fd):
            try:
                # unlink never follows a symlink: only the directory entry goes.
                os.unlink(name, dir_fd=dir_fd)
            except FileNotFoundError:
                pass
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    raise
    finally:
        os.close(dir_fd)
    try:
        os.rmdir(workdir_name, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.EBUSY):
            return False
        raise
    return True


def start_ranks(dir_fd, plan, params, control_fd=None):
    """Fork one rank per plan entry, telling the cleanup helper each (pid, starttime) as it goes.

    A fork or pipe that fails (EAGAIN from the process limit, EMFILE) kills the ranks already
    forked and raises CanaryError: the caller fails cleanly and the helper removes the directory.
    """
    libc = _libc()
    # Objects so far go to the permanent generation (gc.freeze, Python 3.7+): no collection in
    # the parent or a rank touches them, so their pages stay shared after fork.
    gc.collect()
    gc.freeze()
    ranks = []
    close_fds = tuple(fd for fd in (control_fd,) if fd is not None)
    try:
        for rank_plan in plan:
            item = _start_rank(dir_fd, rank_plan, params, libc, close_fds)
            ranks.append(item)
            if control_fd is not None:
                os.write(control_fd, ("rank %d %s\n" % (item["pid"], item["starttime"])).encode())
    except OSError as exc:
        for item in ranks:
            _kill(item["pid"])
            os.close(item["fd"])
            os.close(item.pop("go_fd"))
        for item in ranks:
            os.waitpid(item["pid"], 0)
        raise CanaryError("could not start rank %d of ranks=%d: %s" % (len(ranks), len(plan), atomic_file.describe_error(exc)))
    return ranks


def _read_control(control_fd):
    """The helper's view of the module: work directory names and (pid, starttime) of the ranks.

    Read until EOF, which comes when the module is done with the directory or has died.
    """
    data = b""
    while True:
        try:
            chunk = os.read(control_fd, 65536)
        except InterruptedError:
            continue
        if not chunk:
            break
        data += chunk
    os.close(control_fd)
    names, rank_ids = [], []
    for line in data.decode(errors="replace").splitlines():
        fields = line.split(" ")
        if fields[0] == "dir" and len(fields) == 2:
            names.append(fields[1])
        elif fields[0] == "rank" and len(fields) == 3 and fields[1].isdigit():
            rank_ids.append((int(fields[1]), int(fields[2]) if fields[2].isdigit() else None))
    return names, rank_ids


def _remove_workdir(parent_fd, workdir_name, rank_ids, retry_interval=1.0):
    """Body of the cleanup helper: wait for every rank to exit, then delete the work directory.

    Relative to parent_fd, the directory fd the module validated (inherited over fork): a path
    swapped for a symlink since cannot redirect the removal.
    """
    deadline = time.time() + CLEANUP_PATIENCE
    while not all(_rank_gone(pid, start) for pid, start in rank_ids):
        if time.time() > deadline:
            return "ranks still alive after %ds" % CLEANUP_PATIENCE
        time.sleep(0.2)
    try:
        while not _remove_entries(parent_fd, workdir_name):
            if time.time() > deadline:
                return "%s still not empty after %ds" % (workdir_name, CLEANUP_PATIENCE)
            time.sleep(retry_interval)
    except FileNotFoundError:
        # Never created (the module died before mkdir) or already gone.
        pass
    return "ok"


def start_cleanup(parent_fd):
    """Fork a detached helper that removes the work directory; return (control fd, report fd).

    Started before the work directory exists, so a module killed at any later point (SIGKILL,
    Ansible's async timeout) still leaves nothing behind: the module writes `dir NAME` and
    `rank PID STARTTIME` lines to the control fd and closes it when it is done with the
    directory; at EOF (the module done, or dead: its ranks then die by PR_SET_PDEATHSIG) the
    helper waits for the ranks and removes the named directories relative to parent_fd.
    Detached (double fork, new session, no stdio) so that if the server is gone it outlives the
    module and finishes when the ranks are finally released, instead of holding the play.
    """
    control_read, control_write = os.pipe()
    report_read, report_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(report_read)
            os.close(control_write)
            os.setsid()
            _quiet_stdio()
            if os.fork() == 0:
                message = "failed"
                try:
                    os.write(report_write, ("%d\n" % os.getpid()).encode())
                    names, rank_ids = _read_control(control_read)
                    for name in names:
                        message = _remove_workdir(parent_fd, name, rank_ids)
                    message = message if names else "ok"
                except OSError as exc:
                    message = str(exc)
                finally:
                    try:
                        os.write(report_write, message.encode())
                    finally:
                        os._exit(0)
        finally:
            os._exit(0)
    os.close(report_write)
    os.close(control_read)
    os.waitpid(pid, 0)
    return control_write, report_read


def wait_cleanup(read_end, seconds):
    """Read the helper's report for up to `seconds`: (done, message, helper pid)."""
    deadline = time.time() + seconds
    data = b""
    while True:
        remaining = deadline - time.time()
        if remaining <= 0:
            break
        if not readable([read_end], remaining):
            break
        chunk = os.read(read_end, 4096)
        if not chunk:
            break
        data += chunk
    os.close(read_end)
    first, _sep, message = data.decode(errors="replace").partition("\n")
    helper_pid = int(first) if first.isdigit() else None
    return message == "ok", message, helper_pid


def open_directory(real):
    """An O_RDONLY fd of the absolute path `real`, walked one component at a time with O_NOFOLLOW.

    O_NOFOLLOW alone guards only the last component: a parent directory swapped for a symlink
    after validation would still be followed. Walking with openat(O_PATH|O_NOFOLLOW) makes any
    symlink on the way fail with ELOOP or ENOTDIR instead.
    """
    fd = os.open("/", os.O_PATH | os.O_DIRECTORY)
    try:
        for part in [p for p in real.split("/") if p]:
            next_fd = os.open(part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        final = os.open(".", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    finally:
        os.close(fd)
    return final


def _open_fd_count():
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 16


class Canary:
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.servers = []
        # The validated directory, opened once: everything is created and removed relative to it.
        self.parent_fd = None
        # Pipes to the cleanup helper (started before the work directory exists), when keep=false.
        self.cleanup_control = None
        self.cleanup_report = None
        # The D-state sampler's own cost and the interval it set itself (dstate.sampling_interval).
        self.sampler = {"passes": 0, "cpu_seconds": 0.0, "interval_seconds": DSTATE_INTERVAL,
                        "longest_interval_seconds": DSTATE_INTERVAL}

    def fail(self, msg, **extra):
        self.module.fail_json(msg=msg, **extra)

    def validate(self):
        params = self.params
        errors = canary.validate_plan(params["ranks"], params["bytes_per_rank"], params["block_size"],
                                      params["layout"], params["files_per_rank"], params["direct"])
        errors += [e for e in (canary_limits.block_size_error(params["block_size"]),) if e]
        errors += restore.validate_restore(params["restore"], params["restore_cache"], params["fsync"],
                                           params["block_size"], params["bytes_per_rank"])
        if params["timeout"] <= 0:
            errors.append("timeout must be greater than 0, got %s" % params["timeout"])
        if params["kill_grace"] < 0:
            errors.append("kill_grace must be 0 or more, got %s" % params["kill_grace"])
        if errors:
            self.fail("; ".join(errors))
        path = params["path"]
        if not os.path.isabs(path):
            self.fail("path must be absolute, got %r" % path)
        # Resolved once; from here on only self.parent_fd is used, never the name.
        real = os.path.realpath(path)
        if real != os.path.normpath(path):
            self.fail("path %s passes through a symbolic link (it resolves to %s); give the real path" % (path, real))
        if not os.path.isdir(real):
            self.fail("path %s is not an existing directory" % path)
        try:
            self.parent_fd = open_directory(real)
        except OSError as exc:
            self.fail("path %s cannot be opened without following a symbolic link (%s); give the real path"
                      % (path, atomic_file.describe_error(exc)))
        mount = self.check_mount(path, real)
        self.check_limits(real)
        return real, mount

    def check_mount(self, path, real):
        """The mount holding real; fails unless it is NFS and the opened directory is on it (or allow_local).

        The mount is found by path in mountinfo, then the opened fd must be on that mount's device
        (os.fstat(fd).st_dev against mountinfo's MAJ:MIN): a path swapped between the checks
        opens something else, and that is refused instead of written.
        """
        mounts = parse_mountinfo(atomic_file.read_optional(PROC_MOUNTINFO) or "")
        st_dev = os.fstat(self.parent_fd).st_dev
        device = (os.major(st_dev), os.minor(st_dev))
        by_path = canary.mount_for_path(mounts, real)
        mount = by_path if by_path and by_path["fstype"] in NFS_FSTYPES else None
        on_nfs = mount is not None and device in canary_limits.device_numbers([mount], NFS_FSTYPES)
        shown = canary_limits.mount_of_device(mounts, device, by_path) or by_path
        # The server the ranks' traffic goes to (mountinfo addr=): its route names the NFS link.
        self.servers = [nfs_server_of(mount)] if on_nfs else []
        # Shown with undecodable bytes escaped (an export named caf\xe9): results must be valid UTF-8.
        shown = proc_text.json_safe({key: shown[key] for key in ("mount_point", "fstype", "source")}) if shown else {}
        if on_nfs or self.params["allow_local"]:
            return shown
        if mount is not None:
            self.fail("path %s is on the NFS mount %s (device %s) but the directory opened is on device %d:%d:"
                      " the path changed while it was checked; refusing to write"
                      % (path, mount["mount_point"], mount.get("device"), device[0], device[1]), mount=shown)
        self.fail("path %s is on %s (%s), not NFS; set allow_local=true to test a local file system"
                  % (path, shown.get("mount_point", "an unknown mount"), shown.get("fstype", "unknown type")),
                  mount=shown)

    def check_limits(self, real):
        """Memory, open files and free space for the whole run, before the first fork or byte."""
        params = self.params
        ranks = params["ranks"]
        errors = []
        available = canary_limits.mem_available(atomic_file.read_optional(PROC_MEMINFO))
        errors.append(canary_limits.memory_error(ranks, params["block_size"], available, 2 if params["restore"] else 1))
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        new_soft, error = canary_limits.fd_limit_plan(ranks, _open_fd_count(), soft, hard)
        errors.append(error)
        if new_soft is not None and not self.module.check_mode:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new_soft, hard))
        vfs = os.fstatvfs(self.parent_fd)
        errors.append(canary_limits.space_error(real, ranks, params["bytes_per_rank"],
                                                vfs.f_bavail * vfs.f_frsize, vfs.f_blocks * vfs.f_frsize))
        errors = [e for e in errors if e]
        if errors:
            self.fail("; ".join(errors))

    def make_workdir(self, real):
        """Create the 0700 work directory inside the opened path; a taken name is retried, bounded."""
        if not self.params["keep"]:
            self.cleanup_control, self.cleanup_report = start_cleanup(self.parent_fd)
        host = socket.gethostname().split(".")[0] or "host"
        for _attempt in range(canary_limits.WORKDIR_ATTEMPTS):
            name = "%s%s-%d-%s" % (canary.WORKDIR_PREFIX, host, os.getpid(), os.urandom(4).hex())
            try:
                # mkdir fails on any existing entry, a planted symlink included.
                os.mkdir(name, 0o700, dir_fd=self.parent_fd)
                break
            except FileExistsError:
                continue
        else:
            self.seal_cleanup()
            self.fail("could not create a work directory in %s: %d random names %s<host>-<pid>-<token> were all taken"
                      % (real, canary_limits.WORKDIR_ATTEMPTS, canary.WORKDIR_PREFIX))
        if self.cleanup_control is not None:
            os.write(self.cleanup_control, ("dir %s\n" % name).encode())
        dir_fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=self.parent_fd)
        os.fchmod(dir_fd, 0o700)
        return name, dir_fd

    def start_ranks(self, dir_fd, plan):
        """Fork the ranks, telling the helper each one; a fork that fails is a clean failure."""
        try:
            return start_ranks(dir_fd, plan, self.params, self.cleanup_control)
        except CanaryError as exc:
            self.seal_cleanup()
            cleaned = self.cleanup_report is not None and wait_cleanup(self.cleanup_report, 30.0)[0]
            self.fail(str(exc), cleaned_up=cleaned)

    def seal_cleanup(self):
        """Close the control pipe: EOF tells the helper the module is done with the directory."""
        if self.cleanup_control is not None:
            os.close(self.cleanup_control)
            self.cleanup_control = None

    def run(self):
        params = self.params
        real, mount = self.validate()
        plan = canary.plan_ranks(params["ranks"], params["bytes_per_rank"], params["block_size"],
                                 params["layout"], params["files_per_rank"])
        now = time.time()
        use_barrier = params["barrier_dir"] is not None
        start_at = params["start_at"] if params["start_at"] is not None and not use_barrier else now
        result = {"changed": bool(params["keep"]), "mount": mount, "plan": plan, "start_at": start_at,
                  "stalled": [], "dstate_text": "", "dstate_peak": 0, "cleaned_up": False,
                  "workdir": os.path.join(real, canary.WORKDIR_PREFIX + "<host>-<pid>-<token>")}
        if params["restore"]:
            result["restore"] = restore.plan_restore(plan, params["block_size"], params["restore_cache"],
                                                     params["barrier_dir"])
        self.check_start(use_barrier, start_at, now)
        if self.module.check_mode:
            self.module.exit_json(**result)
        if use_barrier:
            # Before the work directory: a refused barrier_dir leaves nothing behind.
            self.make_barrier_dir()

        name, dir_fd = self.make_workdir(real)
        workdir = os.path.join(real, name)
        result["workdir"] = workdir
        ranks, outcome, restored = self.run_phases(dir_fd, plan, workdir, start_at, result)
        rank_ids = [(item["pid"], item["starttime"]) for item in ranks]
        if outcome is None:
            self.abort(ranks, result, real, name, workdir, rank_ids)
        stalled = outcome[1] + (restored["stalled"] if restored else [])
        result.update(self.finish_cleanup(real, name, workdir, rank_ids, bool(stalled)))
        for item in ranks:
            _reap(item["pid"])
        self.report(result, plan, outcome, restored)

    def check_start(self, use_barrier, start_at, now):
        """The start options, before check mode returns (barrier_files.prepare_dir checks barrier_dir again)."""
        params = self.params
        if use_barrier and not os.path.isabs(params["barrier_dir"]):
            self.fail("barrier_dir must be absolute, got %r" % params["barrier_dir"])
        if not math.isfinite(params["barrier_timeout"]) or params["barrier_timeout"] <= 0:
            self.fail("barrier_timeout must be a finite number greater than 0, got %s" % params["barrier_timeout"])
        if params["start_at"] is not None and not use_barrier:
            # The go files' bound (barrier.go_time_error): a year ahead would hold the ranks for a year.
            error = barrier.go_time_error(start_at, now, params["barrier_timeout"], "start_at")
            if error:
                self.fail("%s (barrier_timeout=%s bounds it)" % (error, params["barrier_timeout"]))
        if params["start_at"] is not None and not use_barrier and start_at < now:
            self.module.warn("start_at is %.1f s in the past: ranks start late and max_start_delay_seconds shows it"
                             % (now - start_at))

    def run_phases(self, dir_fd, plan, workdir, start_at, result):
        """Fork the ranks, start them together, write; with restore=true then read back.

        Returns (ranks, the write's outcome or None when called off before go, the read's or None).
        """
        ranks = []
        outcome = restored = None
        try:
            if self.params["layout"] == "shared_file":
                os.close(os.open(canary.SHARED_FILE_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600,
                                 dir_fd=dir_fd))
            children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
            ranks = self.start_ranks(dir_fd, plan)
            go_at, signal_info = self.wait_for_go(workdir, len(ranks), start_at)
            if signal_info is not None:
                result["barrier"] = signal_info
            if go_at is not None:
                result["start_at"] = go_at
                outcome = self.run_ranks(ranks, go_at, children_before)
                if self.params["restore"]:
                    restored = self.run_restore(ranks, workdir, outcome, result)
        finally:
            # Any rank not released yet (abort, or an error before go) is told to exit unwritten;
            # with restore=true one still waiting for its read go is told to exit unread.
            send_go(ranks, None)
            for item in ranks:
                _close_result(item)
            os.close(dir_fd)
        return ranks, outcome, restored

    def report(self, result, plan, outcome, restored):
        """Fill the result from the phases' outcomes; write done.json and exit, or fail naming what went wrong."""
        params = self.params
        results, stalled, samples, host_samples, harness = outcome
        if restored is not None:
            results = restored["results"]
            if restored["skipped"] is None:
                result["restore_host_samples"] = restored["host_samples"]
        result["ranks"] = results
        result["stalled"] = stalled + (restored["stalled"] if restored else [])
        result["summary"] = canary.aggregate(results, result["start_at"] if params["start_at"] is not None
                                             or params["barrier_dir"] is not None else None)
        if restored is not None:
            result["summary"]["restore"] = restore.summary(results, restored["read_at"], params["restore_cache"],
                                                           restored["skipped"])
        result["dstate_samples"] = samples
        result["host_samples"] = host_samples
        result["harness"] = harness
        result["dstate_text"] = "".join(dstate.format_sample(s["epoch"], s["wchans"]) + "\n" for s in samples)
        result["dstate_summary"] = dstate.summarize_dstate(samples)
        result["dstate_peak"] = result["dstate_summary"]["max_count"]
        if params["keep"] and self.module._diff:
            files = sorted({item["name"] for rank_plan in plan for item in rank_plan["files"]})
            result["diff"] = [{"before": "", "after": "".join(f + "\n" for f in files),
                               "before_header": result["workdir"] + " (absent)", "after_header": result["workdir"]}]
        self.finish(result, self.failure(result, stalled, restored))

    def failure(self, result, stalled, restored):
        """The failure message of the run (the write's first, then the read's), or None when it passed."""
        if stalled:
            return canary.stall_message(stalled, self.params["timeout"], result["workdir"],
                                        result.get("cleanup_deferred_pid"))
        errors = ["rank %d: %s" % (r["rank"], r["error"]) for r in result["ranks"] if r["error"]]
        if errors:
            return "canary ranks failed: %s" % "; ".join(errors)
        if restored is None:
            return None
        if restored["stalled"]:
            return "canary restore (read phase): " + canary.stall_message(
                restored["stalled"], self.params["timeout"], result["workdir"], result.get("cleanup_deferred_pid"))
        return restore.failure_message(result["ranks"], restored["skipped"])

    def run_ranks(self, ranks, go_at, children_before):
        """Release the ranks at go and monitor them; the harness's own CPU over the ranks' run.

        With restore=true a rank is done writing at its first line (its pipe stays open for the read).
        """
        restoring = bool(self.params["restore"])
        send_go(ranks, go_at, last=not restoring)
        own_before = resource.getrusage(resource.RUSAGE_SELF)
        results, stalled, samples, host_samples = self.monitor(
            ranks, max(go_at, time.time()) + self.params["timeout"], go_at, self.servers, first_line=restoring)
        own_after = resource.getrusage(resource.RUSAGE_SELF)
        children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        ranks_cpu = (children_after.ru_utime + children_after.ru_stime) - (children_before.ru_utime + children_before.ru_stime)
        if restoring:
            # The ranks live on to read: each reported its own CPU with its write result (rank_result).
            ranks_cpu = sum(item.get("write_cpu_seconds") or 0.0 for item in ranks)
        harness = barrier.harness_cost(
            (own_after.ru_utime + own_after.ru_stime) - (own_before.ru_utime + own_before.ru_stime),
            ranks_cpu, host_samples.get("start"), host_samples.get("end"))
        harness["dstate_sampler"] = {"passes": self.sampler["passes"], "cpu_seconds": round(self.sampler["cpu_seconds"], 3),
                                     "longest_interval_seconds": round(self.sampler["longest_interval_seconds"], 3),
                                     "max_share": dstate.SAMPLER_MAX_SHARE}
        return results, stalled, samples, host_samples, harness

    def run_restore(self, ranks, workdir, outcome, result):
        """The read phase, once every rank of this host has written: release the reads together (at
        read_go.json's go_at with barrier_dir, else now) and monitor them as the writes were, with
        their own timeout. Returns {results, stalled, host_samples, read_at, skipped}; skipped says
        why no rank read (the write failed or stalled, or the controller called the read off).
        """
        results, stalled, samples = outcome[0], outcome[1], outcome[2]
        skipped = restore.skip_reason(results, stalled)
        read_at = None
        if skipped is None:
            read_at, info = self.wait_for_read_go(workdir, len(ranks))
            if info is not None:
                result["barrier"]["read"] = info
            if read_at is None:
                skipped = "not run: aborted: %s" % info["abort"]
        else:
            self.announce_unread(workdir, len(ranks), skipped)
        if skipped is not None:
            return {"results": [restore.complete_read(r) for r in results], "stalled": [], "host_samples": {},
                    "read_at": None, "skipped": skipped}
        send_go(ranks, read_at)
        read_results, read_stalled, read_samples, host_samples = self.monitor(
            ranks, max(read_at, time.time()) + self.params["timeout"], read_at, self.servers, on_stall=self.stalled_read)
        samples.extend(read_samples)
        for item in read_stalled:
            item["phase"] = "read"
        return {"results": [restore.complete_read(r, "rank exited without a read result") for r in read_results],
                "stalled": read_stalled, "host_samples": host_samples, "read_at": read_at, "skipped": None}

    def wait_for_read_go(self, workdir, rank_count):
        """(read go epoch on this host's clock or None to abort, barrier record or None without a barrier)."""
        if self.params["barrier_dir"] is None:
            return time.time(), None
        return barrier_files.wait_for_read_go(
            self.module, self.params["barrier_dir"],
            barrier.written_document(time.time(), os.getpid(), rank_count, workdir), self.params["barrier_timeout"])

    def announce_unread(self, workdir, rank_count, skipped):
        """written.json with read_ready false (barrier.WRITTEN_READY_PATTERN): the controller's wait
        for this host ends now, and it leaves the host out of the read go; nothing waits here."""
        if self.params["barrier_dir"] is None:
            return
        try:
            barrier_files.write_json(self.module, self.params["barrier_dir"], barrier.WRITTEN_FILE,
                                     barrier.written_document(time.time(), os.getpid(), rank_count, workdir, skipped))
        except OSError as exc:
            self.module.warn("could not write %s in %s: %s" % (barrier.WRITTEN_FILE, self.params["barrier_dir"], exc))

    def make_barrier_dir(self):
        error = barrier_files.prepare_dir(self.params["barrier_dir"])
        if error:
            self.fail(error)

    def wait_for_go(self, workdir, rank_count, start_at):
        """(go epoch on this host's clock or None to abort, barrier record or None without a barrier)."""
        if self.params["barrier_dir"] is None:
            return start_at, None
        return barrier_files.wait_for_go(
            self.module, self.params["barrier_dir"],
            barrier.ready_document(time.time(), os.getpid(), rank_count, workdir), self.params["barrier_timeout"])

    def abort(self, ranks, result, real, name, workdir, rank_ids):
        """The controller (or barrier_timeout) called the run off: ranks exit unwritten, the
        directory goes, and the module fails naming why."""
        for item in ranks:
            _close_result(item)
        for item in ranks:
            deadline = time.time() + self.params["kill_grace"]
            while not _reap(item["pid"]) and time.time() < deadline:
                time.sleep(0.01)
        result.update(self.finish_cleanup(real, name, workdir, rank_ids, True))
        result["ranks"] = []
        reason = (result.get("barrier") or {}).get("abort") or "aborted"
        self.finish(result, "canary aborted before any rank wrote: %s" % reason)

    def finish(self, result, failure=None):
        """Write done.json (the role's one wait after go returns on it), then exit or fail."""
        if self.params["barrier_dir"] is not None:
            barrier_files.write_done(self.module, self.params["barrier_dir"], failure is not None)
        if failure is not None:
            self.fail(failure, **result)
        self.module.exit_json(**result)

    def finish_cleanup(self, real, name, workdir, rank_ids, stalled):
        """Wait for the helper started by make_workdir (it knows the ranks from the control pipe)."""
        os.close(self.parent_fd)
        self.seal_cleanup()
        if self.params["keep"]:
            return {"cleaned_up": False}
        read_end = self.cleanup_report
        # After a stall the ranks may never exit soon: give the helper only the grace period.
        wait = self.params["kill_grace"] if stalled else max(self.params["timeout"], 30.0)
        done, message, helper_pid = wait_cleanup(read_end, wait)
        if done:
            return {"cleaned_up": True}
        if message:
            self.module.warn("could not remove %s: %s" % (workdir, message))
            return {"cleaned_up": False}
        return {"cleaned_up": False, "cleanup_deferred_pid": helper_pid}

    def monitor(self, ranks, deadline, start_at, servers, first_line=False, on_stall=None):
        """Collect rank results, sampling D state every DSTATE_INTERVAL (longer when a pass costs more
        than dstate.SAMPLER_MAX_SHARE of it), until done or deadline.

        Host samples (CPU, disks, links) are taken when the ranks start and when the last one
        ends, so the diagnosis measures this host over the checkpoint itself, not over the
        whole play with Ansible's own launch and polling in it. first_line: a rank is done at
        its first line, not at EOF (restore=true's write phase). on_stall(item): the result of a
        rank that did not finish (default: a write that never reported).
        """
        pending = {item["fd"]: item for item in ranks if item.get("fd") is not None}
        rank_pids = {item["pid"] for item in ranks}
        results = []
        samples = []
        host_samples = {}
        next_sample = time.time()
        while pending and time.time() < deadline:
            now = time.time()
            if "start" not in host_samples and now >= start_at:
                host_samples["start"] = read_host_sample(servers, root=SYS_CLASS_NET, proc=PROC)
            if now >= next_sample:
                samples.append(self.sample(rank_pids))
                next_sample = now + self.sampler["interval_seconds"]
            wake = min(next_sample, deadline) if "start" in host_samples else min(next_sample, deadline, start_at)
            wait = max(0.0, wake - time.time())
            for fd in readable(list(pending), wait):
                if self.read_result(pending[fd], first_line):
                    results.append(self.rank_result(pending.pop(fd)))
        host_samples["end"] = read_host_sample(servers, root=SYS_CLASS_NET, proc=PROC)
        stalled = []
        if pending:
            stalled = self.stop_stalled(list(pending.values()), rank_pids, samples)
            for item in pending.values():
                _close_result(item)
                results.append((on_stall or self.stalled_write)(item))
        for item in ranks:
            _reap(item["pid"])
        return sorted(results, key=lambda r: r["rank"]), stalled, samples, host_samples

    @staticmethod
    def read_result(item, first_line):
        """Read what a rank sent; True once its result is complete: EOF, or a line with first_line."""
        chunk = os.read(item["fd"], 65536)
        item["buffer"] += chunk
        if not chunk:
            _close_result(item)
            return True
        return first_line and b"\n" in item["buffer"]

    @staticmethod
    def rank_result(item):
        """The rank's result: its one JSON document, or with restore=true its lines merged (write, then read)."""
        result = None
        for line in item["buffer"].splitlines():
            try:
                document = json.loads(line.decode())
            except ValueError:
                break
            result = document if result is None else dict(result, **document)
        if result is not None and "write_cpu_seconds" in result:
            # restore=true's first line carries the rank's CPU for the harness, not for the result.
            item["write_cpu_seconds"] = result.pop("write_cpu_seconds")
        if result is None:
            _reap(item["pid"])
            return {"rank": item["rank"], "pid": item["pid"], "start": None, "end": None, "bytes": 0,
                    "error": "rank process exited without a result"}
        return result

    @staticmethod
    def stalled_write(item):
        return {"rank": item["rank"], "pid": item["pid"], "start": None, "end": None,
                "bytes": 0, "error": "stalled: no result within timeout"}

    def stalled_read(self, item):
        """A rank that wrote but did not finish reading within timeout: its write result, read_error says so."""
        result = restore.complete_read(self.rank_result(item))
        result["read_error"] = "stalled: no read result within timeout"
        return result

    def sample(self, rank_pids):
        """One D-state pass; its cost sets the interval to the next (dstate.sampling_interval)."""
        wchans, ranks_in_d, cpu_seconds = sample_dstate(rank_pids)
        sampler = self.sampler
        sampler["passes"] += 1
        sampler["cpu_seconds"] += cpu_seconds
        sampler["interval_seconds"] = dstate.sampling_interval(DSTATE_INTERVAL, cpu_seconds)
        sampler["longest_interval_seconds"] = max(sampler["longest_interval_seconds"], sampler["interval_seconds"])
        return {"epoch": round(time.time(), 3), "count": len(wchans), "wchans": wchans, "rank_pids": ranks_in_d}

    def stop_stalled(self, items, rank_pids, samples):
        """SIGKILL the stalled ranks, wait at most kill_grace for them, never longer."""
        stalled = []
        for item in items:
            state, wchan, _start = task_state(item["pid"])
            stalled.append({"rank": item["rank"], "pid": item["pid"], "state": state, "wchan": wchan,
                            "exited": False})
            _kill(item["pid"])
        deadline = time.time() + self.params["kill_grace"]
        next_sample = time.time() + self.sampler["interval_seconds"]
        while True:
            for entry in stalled:
                if not entry["exited"]:
                    entry["exited"] = _reap(entry["pid"])
            if all(entry["exited"] for entry in stalled) or time.time() >= deadline:
                break
            if time.time() >= next_sample:
                samples.append(self.sample(rank_pids))
                next_sample = time.time() + self.sampler["interval_seconds"]
            time.sleep(min(0.1, max(0.0, deadline - time.time())))
        for entry in stalled:
            if not entry["exited"]:
                # Report where it is stuck now, after the kill, not only before it.
                state, wchan, _start = task_state(entry["pid"])
                entry["state"] = state or entry["state"]
                entry["wchan"] = wchan or entry["wchan"]
        return stalled


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            ranks=dict(type="int", default=1),
            bytes_per_rank=dict(type="int", default=64 * 1024 * 1024),
            block_size=dict(type="int", default=1024 * 1024),
            layout=dict(type="str", default="shared_file", choices=list(canary.LAYOUTS)),
            files_per_rank=dict(type="int", default=1),
            fsync=dict(type="bool", default=True),
            direct=dict(type="bool", default=False),
            start_at=dict(type="float"),
            barrier_dir=dict(type="path"),
            barrier_timeout=dict(type="float", default=600.0),
            timeout=dict(type="float", default=600.0),
            kill_grace=dict(type="float", default=5.0),
            allow_local=dict(type="bool", default=False),
            keep=dict(type="bool", default=False),
            restore=dict(type="bool", default=False),
            restore_cache=dict(type="str", default="fadvise", choices=list(restore.CACHE_METHODS)),
        ),
        supports_check_mode=True,
    )
    Canary(module).run()


if __name__ == "__main__":
    main()
