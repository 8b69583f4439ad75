# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The modules' file reading, locking and writing; a replace or remove that fails leaves the old file byte for byte.

The one module_utils file that does I/O: every module that writes a file (fstab, nfs.conf
drop-ins, modprobe.d, the diagnosis and report files) goes through here, so the data-safety
guarantee is written, and tested, once. The small readers live here too, so each "missing file
means None" rule is written once: read_text (and read_text_or_fail, its module-facing form) for
files a module may rewrite, read_optional for /proc and /sys files and inputs that may be absent
or unreadable, read_link for the /proc links that name a process's files.

How a write works: the new bytes go to a temp file in the directory of the file's final target
(rename(2) is atomic only within one file system, and renaming over a symlink would replace the
link by a regular file while its target kept the old content), are fsync'ed, then
`module.atomic_move` renames the temp file over the target. The temp file is created with the
final mode (the old file's mode, or `mode` for a new file), so no moment exists where the new
content is readable by more users than the final file allows, whatever the umask. Whatever
fails, the temp file is removed and the error propagates as OSError: the caller words the
message (its option names).

How concurrent runs are serialised: `locked` takes an exclusive flock(2) on a lock file beside
the target, so two runs (two operators, two plays, a loop with async) cannot both read the old
file and each write their own edit of it; the caller re-reads the file inside the lock.
"""

from __future__ import annotations

import binascii
import contextlib
import errno
import fcntl
import os
import stat
import time

NEW_FILE_MODE = 0o644
# An edit holds the lock for milliseconds (read, plan, one atomic write); a minute means the
# other holder is stuck, and waiting longer would only hide that from the operator.
LOCK_TIMEOUT_SECONDS = 60
LOCK_POLL_SECONDS = 0.05
LOCK_SUFFIX = ".ckptio.lock"


def read_text(path):
    """File text, or None when it does not exist; surrogateescape keeps every byte for the rewrite.

    Only a missing file is None: any other OSError (permission, a directory, a symlink loop, an
    I/O error) propagates, so a module never mistakes an unreadable config file for an absent one
    and writes over it.
    """
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "surrogateescape")
    except FileNotFoundError:
        return None


def describe_error(exc):
    """'ELOOP: Too many levels of symbolic links' for an OSError (the errno name is what admins grep for)."""
    name = errno.errorcode.get(exc.errno, "errno %s" % exc.errno) if exc.errno is not None else "error"
    return "%s: %s" % (name, exc.strerror or exc)


def read_text_or_fail(module, path):
    """read_text for a module: anything but a missing file fails the module naming path and errno."""
    try:
        return read_text(path)
    except OSError as exc:
        module.fail_json(msg="%s: cannot read it (%s); nothing was changed" % (path, describe_error(exc)), changed=False)


def read_optional(path):
    """File text with every byte kept (surrogateescape), or None on any OSError: missing, unreadable, vanished.

    For /proc and /sys files and optional inputs where an absent value is reported, not fatal.
    /proc text is bytes, not UTF-8 (a mount point named caf\xe9, garbage in a broken copy): a
    text-mode read failed on the first such byte. Results shown to Ansible go through
    proc_text.json_safe / show_undecodable.
    """
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8", "surrogateescape")
    except OSError:
        return None
    # Universal newlines, as the text-mode readers before (a CRLF copy of a /proc file).
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_link(path):
    """A symlink's target, or None on any OSError (not a link, missing, unreadable, vanished).

    For /proc/<pid>/{cwd,root,fd/N}: readlink(2) reads the link only and never stats the target,
    so a hung NFS mount behind it cannot block the caller.
    """
    try:
        return os.readlink(path)
    except OSError:
        return None


def final_target(path):
    """The file a write to path really changes: the end of its symlink chain (path itself when none)."""
    return os.path.realpath(path) if os.path.islink(path) else path


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


def _backup(module, path, backup):
    """module.backup_local's copy of path (it fails the module itself on error), or None."""
    if backup and os.path.exists(path):
        return module.backup_local(path)
    return None


class FileWriteError(OSError):
    """atomic_move failed with something other than OSError (ansible-core raises plain Exception)."""


@contextlib.contextmanager
def _umask(value):
    old = os.umask(value)
    try:
        yield
    finally:
        os.umask(old)


def _create_temp(directory, name, mode):
    """(fd, path) of a new file `.<name>.<random>` in directory, created with mode.

    Not mkstemp: it creates 0600 and only a chmod later gives the final mode. O_EXCL makes
    sure the file is new (nobody's file or link is reused); the fchmod in the caller undoes
    what the umask took away (a umask never widens).
    """
    for _attempt in range(100):
        path = os.path.join(directory, ".%s.%s" % (name, binascii.hexlify(os.urandom(6)).decode()))
        try:
            return os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, mode), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temp file name", directory)


def regular_files(directory):
    """Sorted names of the regular files directly in directory (through symlinks), dot-files left out.

    For an input directory of files to read: subdirectories, sockets and the like are not
    files to read, and a name starting with a dot is an editor's or a tool's own file. OSError
    (missing, not a directory, unreadable) propagates: the caller names its option.
    """
    return sorted(name for name in os.listdir(directory)
                  if not name.startswith(".") and os.path.isfile(os.path.join(directory, name)))


def is_empty_dir(path):
    """True when path is a directory with nothing in it (False when missing, not a directory, or unreadable)."""
    try:
        return not os.listdir(path)
    except OSError:
        return False


def remove_empty_dir(module, path):
    """Remove directory path when it is empty (True), leave it otherwise (False); nothing in check mode.

    For a directory a module created for files it wrote and has now removed: anything else
    in it (a file someone added) keeps it.
    """
    if not is_empty_dir(path):
        return False
    if not module.check_mode:
        os.rmdir(path)
    return True


def write_file(module, path, content, mode=NEW_FILE_MODE, backup=False, make_parent=False):
    """Atomically replace path (through symlinks, its final target) with content; return the backup's path or None.

    content: bytes, or str encoded as UTF-8 with surrogateescape, so text read with
    surrogateescape is written back with every original byte. mode applies only when the file
    does not exist yet; an existing file keeps its mode and owner. make_parent creates a missing
    parent directory (0755). A symlink stays a symlink: the target gets the new content. Raises
    OSError (FileWriteError for what atomic_move raises otherwise) with the old file untouched
    and no temp file left.
    """
    if isinstance(content, str):
        content = content.encode("utf-8", "surrogateescape")
    target = final_target(path)
    backup_file = _backup(module, target, backup)
    directory = os.path.dirname(target) or "."
    if make_parent and not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    try:
        existing_mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        existing_mode = None
    creating = existing_mode is None
    if mode is None:
        # No mode asked: what a plain open() would have given.
        current_umask = os.umask(0)
        os.umask(current_umask)
        mode = 0o666 & ~current_umask
    final_mode = mode if creating else existing_mode
    temp_path = None
    try:
        handle, temp_path = _create_temp(directory, os.path.basename(target), final_mode)
        with os.fdopen(handle, "wb") as stream:
            os.fchmod(stream.fileno(), final_mode)
            stream.write(content)
            stream.flush()
            os.fsync(stream.fileno())
        try:
            if creating:
                # atomic_move gives a file it creates 0666 & ~umask after the rename; with this
                # umask that is at most final_mode, and the chmod below restores it exactly.
                with _umask(0o777 & ~final_mode):
                    module.atomic_move(temp_path, target)
            else:
                module.atomic_move(temp_path, target)
        except OSError:
            raise
        except Exception as exc:  # pylint: disable=broad-except
            # ansible-core's atomic_move raises Exception (not OSError) when even its fallback
            # rename fails, for example over an immutable file (EPERM).
            cause = exc.__cause__ if isinstance(exc.__cause__, OSError) else None
            raise FileWriteError(cause.errno if cause else None,
                                 "%s%s" % (exc, " (%s)" % describe_error(cause) if cause else ""))
    finally:
        if temp_path is not None and os.path.lexists(temp_path):
            os.unlink(temp_path)
    if creating:
        os.chmod(target, final_mode)
    return backup_file


def write_if_changed(module, path, content, mode=NEW_FILE_MODE, make_parent=False):
    """write_file() unless path holds exactly these bytes already; True when it changed (in check
    mode: would change, and nothing is written). make_parent as in write_file().

    The comparison is of bytes, through read_text (it keeps every byte): a report.png, or a
    CRLF copy of a text file, is never taken for the same content as other bytes.
    """
    if isinstance(content, str):
        content = content.encode("utf-8", "surrogateescape")
    try:
        old = read_text(path)
    except OSError:
        # Unreadable: write_file says why, naming the error, when it cannot replace it either.
        old = None
    if old is not None and old.encode("utf-8", "surrogateescape") == content:
        return False
    if not module.check_mode:
        write_file(module, path, content, mode=mode, make_parent=make_parent)
    return True


def remove_file(module, path, backup=False):
    """Remove path (absent already is fine); return the backup file's path or None.

    A symlink is removed as the link: its target, which may be shared, stays.
    """
    backup_file = _backup(module, path, backup)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    return backup_file
