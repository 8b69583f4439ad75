# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint_canary's own place on the mount: the validated directory opened once, the 0700 work
directory made inside it, and the detached helper that removes that directory afterwards.

The helper is started before the work directory exists, so a module killed at any later point
(SIGKILL, Ansible's async timeout) still leaves nothing behind: the module writes `dir NAME` and
`rank PID STARTTIME` lines to the control pipe and closes it when it is done with the directory;
at EOF (the module done, or dead: its ranks then die by PR_SET_PDEATHSIG) the helper waits for
the ranks and removes the named directories relative to the opened directory. Detached
(processes.detach) so that if the server is gone it outlives the module and finishes when the
ranks are finally released, instead of holding the play.
"""

from __future__ import annotations

import errno
import os
import socket
import time

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import limits as canary_limits
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary
from ansible_collections.ckptio.nfs.plugins.module_utils.host import processes

# A helper whose ranks are stuck in D waits this long for the server before giving up.
CLEANUP_PATIENCE = 86400.0
# Subdirectories removed below the work directory: the shapes make one level (canary/shapes.py).
MAX_DEPTH = 4


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


def _remove_entries(parent_fd, workdir_name, depth=0):
    """One attempt at deleting the work directory; False while the NFS client still holds a file.

    A rank killed in the middle of a write exits before the client has flushed its pages, so the
    client still holds the file: unlink then silly-renames it to .nfsXXXX (which cannot be
    unlinked, EBUSY) and rmdir sees a directory that is not empty. Both clear up by themselves
    once the server takes the pages, so they mean "try again", not "give up".
    """
    dir_fd = os.open(workdir_name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent_fd)
    emptied = True
    try:
        for name in os.listdir(dir_fd):
            try:
                # unlink never follows a symlink: only the directory entry goes.
                os.unlink(name, dir_fd=dir_fd)
            except FileNotFoundError:
                pass
            except IsADirectoryError:
                # A shape's checkpoint directory (canary/shapes.py): at most MAX_DEPTH deep, opened O_NOFOLLOW.
                emptied = depth < MAX_DEPTH and _remove_entries(dir_fd, name, depth + 1) and emptied
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
    return emptied


def remove_workdir(parent_fd, workdir_name, rank_ids, retry_interval=1.0):
    """Body of the cleanup helper: wait for every rank to exit, then delete the work directory.

    Relative to parent_fd, the directory fd the module validated (inherited over fork): a path
    swapped for a symlink since cannot redirect the removal.
    """
    deadline = time.time() + CLEANUP_PATIENCE
    while not all(processes.gone(pid, start) for pid, start in rank_ids):
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


def wait_cleanup(read_end, seconds):
    """Read the helper's report for up to `seconds`: (done, message, helper pid)."""
    deadline = time.time() + seconds
    data = b""
    while True:
        remaining = deadline - time.time()
        if remaining <= 0:
            break
        if not processes.readable([read_end], remaining):
            break
        chunk = os.read(read_end, 4096)
        if not chunk:
            break
        data += chunk
    os.close(read_end)
    first, _sep, message = data.decode(errors="replace").partition("\n")
    helper_pid = int(first) if first.isdigit() else None
    return message == "ok", message, helper_pid


class WorkdirError(Exception):
    """No work directory could be made; the message is for the user."""


class Workdir:
    """The opened directory under test, the work directory in it and, unless keep, its cleanup helper."""

    def __init__(self, real, keep, shared=None):
        # Resolved and opened once: everything is created and removed relative to this fd.
        self.parent_fd = open_directory(real)
        self.real = real
        # shared: the job's directory name (canary/shapes.job_dir), made by whichever host comes first
        # and removed by the caller once every host is done (the role does): no helper here.
        self.shared = shared
        self.keep = keep or shared is not None
        self.name = None
        # Pipes to the cleanup helper (started before the work directory exists), when keep=false.
        self.control_fd = None
        self.report_fd = None

    def path(self):
        return os.path.join(self.real, self.name)

    def start_cleanup(self):
        """Start the detached helper that removes the work directory (the module's docstring says when)."""
        control_read, control_write = os.pipe()
        report_read, report_write = os.pipe()
        parent_fd = self.parent_fd

        def helper():
            os.close(report_read)
            os.close(control_write)
            processes.quiet_stdio()
            message = "failed"
            try:
                os.write(report_write, ("%d\n" % os.getpid()).encode())
                names, rank_ids = _read_control(control_read)
                for name in names:
                    message = remove_workdir(parent_fd, name, rank_ids)
                message = message if names else "ok"
            except OSError as exc:
                message = str(exc)
            finally:
                os.write(report_write, message.encode())

        processes.detach(helper)
        os.close(report_write)
        os.close(control_read)
        self.control_fd, self.report_fd = control_write, report_read

    def make(self):
        """Create the 0700 work directory inside the opened path; a taken name is retried, bounded.
        Returns an O_RDONLY fd of it."""
        if self.shared is not None:
            return self.make_shared()
        if not self.keep:
            self.start_cleanup()
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
            self.seal()
            raise WorkdirError("could not create a work directory in %s: %d random names %s<host>-<pid>-<token> were all taken"
                               % (self.real, canary_limits.WORKDIR_ATTEMPTS, canary.WORKDIR_PREFIX))
        self.name = name
        self.tell("dir %s\n" % name)
        dir_fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=self.parent_fd)
        os.fchmod(dir_fd, 0o700)
        return dir_fd

    def make_shared(self):
        """The job's directory: made 0700, or taken as it is when another host of the job made it - a real
        directory (never a link) of this user that no group or other can write. Returns an O_RDONLY fd of it."""
        try:
            os.mkdir(self.shared, 0o700, dir_fd=self.parent_fd)
        except FileExistsError:
            pass
        try:
            dir_fd = os.open(self.shared, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=self.parent_fd)
        except OSError as exc:
            raise WorkdirError("the job's directory %s in %s is not a directory: %s" % (self.shared, self.real, exc))
        status = os.fstat(dir_fd)
        if status.st_uid != os.geteuid() or status.st_mode & 0o022:
            os.close(dir_fd)
            raise WorkdirError("the job's directory %s in %s belongs to uid %d or others may write it (mode %o); refusing to share it"
                               % (self.shared, self.real, status.st_uid, status.st_mode & 0o7777))
        self.name = self.shared
        return dir_fd

    def tell(self, line):
        if self.control_fd is not None:
            os.write(self.control_fd, line.encode())

    def seal(self):
        """Close the control pipe: EOF tells the helper the module is done with the directory."""
        if self.control_fd is not None:
            os.close(self.control_fd)
            self.control_fd = None

    def cleaned_after_failed_start(self):
        """After ranks failed to start: seal and wait (30 s at most) for the helper; True when it removed the directory."""
        self.seal()
        return self.report_fd is not None and wait_cleanup(self.report_fd, 30.0)[0]

    def finish(self, wait_seconds, warn):
        """Seal, close the opened directory and wait up to wait_seconds for the helper; the result's cleanup keys."""
        os.close(self.parent_fd)
        self.seal()
        if self.keep:
            return {"cleaned_up": False}
        done, message, helper_pid = wait_cleanup(self.report_fd, wait_seconds)
        if done:
            return {"cleaned_up": True}
        if message:
            warn("could not remove %s: %s" % (self.path(), message))
            return {"cleaned_up": False}
        return {"cleaned_up": False, "cleanup_deferred_pid": helper_pid}
