# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one supervisor of the processes our modules start (issue 27 item 1).

checkpoint_canary forks its ranks (a result pipe and a go pipe each) and a detached cleanup
helper; tcp_probe_listener starts detached `timeout iperf3` listeners and later stops them; the
Slurm runner (host/slurm_supervisor.py) starts the canary in a session of its own and stops that
session on scancel. They need the same few things, written here once: fork a child with its
pipes, send it go, read what it reports, reap it, kill and wait a bounded time (every wait is
wait_until's, on the monotonic clock), detach a process from the play, and prove that a pid is
still the process we started.

"Still ours" is the pid with its start time (/proc/PID/stat field 22, proc(5)): a recycled
pid has a later start time. A process we did not fork ourselves (a listener, from a record)
must also show the executable (/proc/PID/exe) and the argv we started (probe.identity_problem).
"""

from __future__ import annotations

import ctypes
import dataclasses
import gc
import os
import select
import signal
import time

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import probe
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.host import dstate_scan
from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import dstate

# Our own children run on the live host: their /proc is the real one, never a test's fake host root.
PROC = host_root.HostRoot().proc
# prctl(2) option: the kernel sends a signal to the child when the process that forked it dies.
PR_SET_PDEATHSIG = 1
POLL_SECONDS = 0.1


@dataclasses.dataclass
class Child:
    """A forked child: its pid and start time, the read end of its output pipe, the write end of its go pipe."""

    pid: int
    starttime: int | None
    output_fd: int | None
    go_fd: int | None
    output: bytes = b""


def stat_text(pid, proc=PROC):
    return file_read.read("%s/%d/stat" % (proc, pid), kernel=True)


def task_state(pid, proc=PROC):
    """(state, wchan, starttime) of a live pid; (None, None, None) once it is gone."""
    stat = stat_text(pid, proc)
    state = dstate.task_state(stat) if stat else None
    if state is None:
        return None, None, None
    return state, dstate_scan.wait_site(proc, pid), probe.stat_start_time(stat)


def alive(pid, proc=PROC):
    """A pid that still runs (a zombie has finished: only its parent's wait is missing)."""
    stat = stat_text(pid, proc)
    return stat is not None and dstate.task_state(stat) not in (None, "Z", "X")


def gone(pid, starttime, proc=PROC):
    """True once pid is not the process that started at starttime any more (exited, or the pid reused)."""
    state, _wchan, current_start = task_state(pid, proc)
    return state in (None, "Z", "X") or (starttime is not None and current_start != starttime)


def identity(pid, proc=PROC):
    """(stat text, executable, raw cmdline) of pid for probe.identity_problem; stat None when gone."""
    return (stat_text(pid, proc), file_read.read_link("%s/%d/exe" % (proc, pid)),
            file_read.read("%s/%d/cmdline" % (proc, pid), kernel=True))


def our_processes(record, proc=PROC):
    """(live pids the record proves ours, [why other candidates were left alone]).

    Candidates are the recorded pid and the live members of its process group (a child stays in
    it even when the leader was killed alone); each must pass probe.identity_problem.
    """
    group = record["pid"]
    pids, left_alone = [], []
    try:
        entries = os.listdir(proc)
    except OSError:
        return pids, left_alone
    for entry in entries:
        if not entry.isdigit():
            continue
        pid = int(entry)
        stat, exe, cmdline = identity(pid, proc)
        if stat is None or (pid != group and probe.stat_process_group(stat) != group):
            continue
        if dstate.task_state(stat) in ("Z", "X"):
            continue
        problem = probe.identity_problem(record, pid, stat, exe, cmdline)
        if problem is None:
            pids.append(pid)
        else:
            left_alone.append("pid %d left alone: %s" % (pid, problem))
    return sorted(pids), left_alone


def libc():
    """libc through ctypes, loaded in the parent once so forked children do not pay for it."""
    return ctypes.CDLL(None, use_errno=True)


def die_with_parent(lib, parent_pid):
    """In a forked child: get SIGKILL when the module dies (SIGKILL, async timeout), or exit now if it has.

    PR_SET_PDEATHSIG covers a death after the call; the getppid check covers a parent that died
    between fork and prctl (the child was then re-parented already and no signal will come).
    """
    if lib.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != parent_pid:
        os._exit(1)


def quiet_stdio():
    """Detach a child from the module's stdin/stdout/stderr.

    Ansible waits for EOF on the module's output: a child stuck in D that still held it would
    hang the play, which is exactly what a timeout promises not to do.
    """
    devnull = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(devnull, target)
    if devnull > 2:
        os.close(devnull)


def fork_child(body, lib, close_fds=()):
    """Fork a child bound to this process; body(go_fd, output_fd) runs in it, then it exits.

    The child dies with the module (die_with_parent), holds none of the module's stdio and no
    cyclic GC (a collection walks the parent's whole heap, Ansible's imports, and copy-on-write
    copies every page it touches, on the CPU the child's work needs). It waits for go on its
    own pipe (receive_go), so it can be forked before anyone knows when it should start.
    """
    parent_pid = os.getpid()
    fds = []
    try:
        fds.extend(os.pipe())
        fds.extend(os.pipe())
        pid = os.fork()
    except OSError:
        for fd in fds:
            os.close(fd)
        raise
    output_read, output_write, go_read, go_write = fds
    if pid == 0:
        status = 1
        try:
            gc.disable()
            die_with_parent(lib, parent_pid)
            for fd in (output_read, go_write) + tuple(close_fds):
                os.close(fd)
            quiet_stdio()
            body(go_read, output_write)
            status = 0
        finally:
            os._exit(status)
    os.close(output_write)
    os.close(go_read)
    return Child(pid, task_state(pid)[2], output_read, go_write)


def send_go(children, go_at, last=True, run=None):
    """Release every child: write go (None = abort) into each go pipe, and close it when last.

    A child can take two go lines (the canary's read phase): the first is sent with last=False.
    run: a word sent after go on the line (a job's run token, canary/shapes.run_token), for receive_go_run.
    """
    message = b"abort\n" if go_at is None else (repr(float(go_at)) + ("" if run is None else " " + run) + "\n").encode()
    for child in children:
        if child.go_fd is None:
            continue
        try:
            os.write(child.go_fd, message)
        except OSError:
            pass
        finally:
            if last:
                os.close(child.go_fd)
                child.go_fd = None


def receive_go(go_fd, close=True):
    """In the child: the go epoch the parent sends (one line); None on "abort" or when the parent is gone.

    A line, not EOF: children forked later inherit the write ends of earlier children's go
    pipes, so an EOF would never come while any later child lives. Read a byte at a time, so
    nothing of a second line is taken with the first; close=False keeps the pipe open for it.
    """
    return receive_go_run(go_fd, close)[0]


def receive_go_run(go_fd, close=True):
    """(go epoch or None, the run word send_go sent after it or None): receive_go's line, both words."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(go_fd, 1)
        if not chunk:
            break
        data += chunk
    if close:
        os.close(go_fd)
    words = data.decode(errors="replace").split()
    try:
        return float(words[0]), (words[1] if len(words) > 1 else None)
    except (ValueError, IndexError):
        return None, None


def readable(fds, timeout):
    """The fds of `fds` ready to read within timeout seconds.

    poll(2), not select(2): select cannot watch a descriptor >= FD_SETSIZE (1024), which a
    module with more than ~1,020 children has (ValueError: filedescriptor out of range).
    """
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return [fd for fd, _event in poller.poll(max(0.0, timeout) * 1000.0)]


def read_output(child, first_line=False):
    """Read what the child sent; True once its output is complete: EOF, or a whole line with first_line."""
    chunk = os.read(child.output_fd, 65536)
    child.output += chunk
    if not chunk:
        close_output(child)
        return True
    return first_line and b"\n" in child.output


def close_output(child):
    """Close a child's output pipe once (EOF seen, stalled, or the phase that needed it is over)."""
    if child.output_fd is not None:
        os.close(child.output_fd)
        child.output_fd = None


def kill(pid, signum=signal.SIGKILL, group=False):
    """Send signum to pid, or with group to the process group pid leads; one already gone is no error."""
    try:
        if group:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)
    except OSError:
        pass


def wait_until(done, seconds, interval=POLL_SECONDS, between=None):
    """Call done() every interval seconds until it is true or `seconds` have passed; True when it was.

    The bound is on the monotonic clock (a wall clock stepped back stretches no wait), and no sleep
    runs past it. between(), when given, runs before each sleep.
    """
    deadline = time.monotonic() + seconds
    while not done():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        if between is not None:
            between()
        time.sleep(min(interval, remaining))
    return True


def reap(pid):
    """True once the child has exited (reaped or gone); never blocks."""
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done == pid


def reap_within(pids, seconds):
    """Reap each child, waiting at most `seconds` for each one."""
    for pid in pids:
        wait_until(lambda pid=pid: reap(pid), seconds, 0.01)


def kill_children(pids, grace, while_waiting=None):
    """SIGKILL our children and reap them for at most grace seconds, never longer (a task in D
    state outlives SIGKILL). while_waiting() runs between the checks. Returns {pid: exited}."""
    for pid in pids:
        kill(pid)
    exited = dict((pid, False) for pid in pids)

    def all_exited():
        for pid in pids:
            exited[pid] = exited[pid] or reap(pid)
        return all(exited.values())

    wait_until(all_exited, grace, between=while_waiting)
    return exited


def wait_gone(pids, seconds, proc=PROC):
    """The pids (not our children) still alive after up to `seconds`."""
    left = list(pids)

    def none_left():
        left[:] = [pid for pid in left if alive(pid, proc)]
        return not left

    wait_until(none_left, seconds)
    return left


def terminate(pids, grace, proc=PROC):
    """SIGTERM the pids, SIGKILL what is left after grace seconds; the pids that needed SIGKILL."""
    for pid in pids:
        kill(pid, signal.SIGTERM)
    left = wait_gone(pids, grace, proc)
    for pid in left:
        kill(pid)
    wait_gone(left, grace, proc)
    return set(left)


def terminate_group(pid, grace, exited=None):
    """Stop our child pid and the process group it leads (a child started in a session of its own).

    SIGTERM to the group, up to grace seconds for the child to exit, then SIGKILL to the group
    whether or not the child exited (what it forked and left behind goes too), and up to grace
    seconds more. exited() says the child has exited (default reap(pid); a subprocess.Popen's
    owner passes its poll, which keeps the exit status). True once the child has exited.
    """
    def child_exited():
        return reap(pid) if exited is None else exited()

    for signum in (signal.SIGTERM, signal.SIGKILL):
        kill(pid, signum, group=True)
        wait_until(child_exited, grace)
    return child_exited()


def detach(body):
    """Run body() in a grandchild in a session of its own, without stdio; return when it is started.

    Double fork: the process is nobody's child once the module exits (init reaps it), and a new
    session keeps the play's terminal signals away from it. The caller passes what body needs
    through fds it created before (a pipe to learn its pid, a log file).
    """
    first = os.fork()
    if first == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                try:
                    body()
                finally:
                    os._exit(0)
        finally:
            os._exit(0)
    os.waitpid(first, 0)


def spawn_detached(argv, log_path):
    """Start argv detached (detach), stdin /dev/null, stdout and stderr to log_path; return its pid."""
    read_end, write_end = os.pipe()
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)

    def run():
        os.close(read_end)
        os.write(write_end, ("%d" % os.getpid()).encode())
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.closerange(3, 65536)
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(127)

    try:
        detach(run)
    finally:
        os.close(write_end)
        os.close(log)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    if not data:
        raise OSError("could not start %s" % argv[0])
    return int(data)
