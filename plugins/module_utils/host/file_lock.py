# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How concurrent runs are serialised: one exclusive lock per file a module edits.

`locked` takes an exclusive flock(2) on a lock file beside the target, so two runs (two
operators, two plays, a loop with async) cannot both read the old file and each write their own
edit of it; the caller re-reads the file inside the lock (config/tuning_flow.run holds the locks
across read-plan-write; nfs_mount holds the fstab lock the same way).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time

from ansible_collections.ckptio.nfs.plugins.module_utils.host.file_read import describe_error, final_target

# An edit holds the lock for milliseconds (read, plan, one atomic write); a minute means the
# other holder is stuck, and waiting longer would only hide that from the operator.
LOCK_TIMEOUT_SECONDS = 60
LOCK_POLL_SECONDS = 0.05
LOCK_SUFFIX = ".ckptio.lock"


def lock_path_for(path):
    """The lock file that guards edits of path: `.<name>.ckptio.lock` beside its final target."""
    target = final_target(path)
    return os.path.join(os.path.dirname(target) or ".", "." + os.path.basename(target) + LOCK_SUFFIX)


def _open_lock(lock_path):
    """An fd of lock_path, or None when the directory takes no new file (then no write can succeed either)."""
    try:
        return os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.EROFS, errno.EACCES, errno.EPERM):
            return None
        raise


@contextlib.contextmanager
def locked(module, path, timeout=None):
    """Hold an exclusive lock on path's lock file for the with-block (nothing in check mode).

    Check mode writes nothing, so it takes no lock and creates no lock file. When the directory
    does not exist or takes no new file, no lock is taken: the write would fail the same way.
    The lock file is removed on release, so a run leaves the directory as it found it. A
    waiter may then hold a lock on the removed inode, so after each flock the file at lock_path
    must still be the one locked; otherwise it tries again (the usual rule for removable lock
    files). Fails the module, naming the lock file, after `timeout` seconds.
    """
    if module.check_mode:
        yield None
        return
    lock_path = lock_path_for(path)
    deadline = time.monotonic() + (LOCK_TIMEOUT_SECONDS if timeout is None else timeout)
    while True:
        try:
            fd = _open_lock(lock_path)
        except OSError as exc:
            module.fail_json(msg="%s: cannot open the lock file %s (%s); nothing was changed"
                             % (path, lock_path, describe_error(exc)), changed=False)
        if fd is None:
            yield None
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() >= deadline:
                module.fail_json(msg="%s: another run holds the lock %s for more than %d s; nothing was changed "
                                     "(remove the lock file only if no ckptio run is left)"
                                     % (path, lock_path, LOCK_TIMEOUT_SECONDS if timeout is None else timeout),
                                 changed=False)
            time.sleep(LOCK_POLL_SECONDS)
            continue
        try:
            current = os.stat(lock_path)
        except FileNotFoundError:
            current = None
        held = os.fstat(fd)
        if current is not None and (current.st_dev, current.st_ino) == (held.st_dev, held.st_ino):
            break
        os.close(fd)
    try:
        yield lock_path
    finally:
        try:
            os.unlink(lock_path)
        except OSError:
            pass
        os.close(fd)
