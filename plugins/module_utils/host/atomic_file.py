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

Which writes follow a symlink, decided here once: only the configuration files an admin may
have linked elsewhere (fstab, modprobe.d, nfs.conf.d, /etc/default; docs/safety.md "A symlink
stays a symlink") are written through a link, by `follow_links=True` (file_edits.apply_edits and
nfs_mount's fstab). Every other write (the controller's outputs in a bundle, barrier and state
files, saved_stats_bundle's dest) never follows one: a link, or anything but a regular file, at
the name or at a directory between `inside` and the name fails with FileRefused naming it.

How files we did not write are read: read_input, the one bounded reader (never through a link,
regular files only, opened O_NONBLOCK so a FIFO cannot block, at most `limit` bytes read, a
FileRefused naming the file and the cap otherwise). read_text (config files) and read_optional
(/proc, /sys) are bounded and non-blocking too.

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
MIB = 1024 * 1024
# Caps of the bounded reads: a file we did not write (a bundle's or saved file, a config file)
# is refused above its cap instead of being read whole (a 1 GiB dstate.txt, /dev/zero behind a
# name). The largest real inputs are far below: a capture bundle's mountstats of a client with
# a few hundred NFS mounts is about 2 MiB, an fstab a few kB.
INPUT_LIMIT = 16 * MIB
CONFIG_LIMIT = 16 * MIB
# Kernel files (/proc, /sys): /proc/net/tcp of a server with 100000 sockets is about 15 MiB.
PROC_LIMIT = 64 * MIB
# The small JSON files of a barrier or a state directory (ready, go, abort, records).
SMALL_LIMIT = 64 * 1024
_READ_CHUNK = 1024 * 1024


class FileRefused(OSError, ValueError):
    """A file that is not read or written: a symlink where none may be, not a regular file, or over its cap.

    An OSError (errno ELOOP, EISDIR, EINVAL or EFBIG, filename set) so the callers that name the
    errno and the path word it as any other I/O error; a ValueError so a reader of a bundle that
    catches ValueError reports it instead of a traceback. str() names the file and why.
    """

    def __str__(self):
        return "%s: %s" % (self.filename, self.strerror)


def _size_text(limit):
    return "%d MiB" % (limit // MIB) if limit >= MIB and limit % MIB == 0 else "%d bytes" % limit


def _refuse_kind(path, info):
    """FileRefused for a file that is not a regular file (a directory keeps EISDIR)."""
    if stat.S_ISDIR(info.st_mode):
        return FileRefused(errno.EISDIR, "is a directory, not a file", path)
    if stat.S_ISLNK(info.st_mode):
        return FileRefused(errno.ELOOP, "is a symbolic link: not followed (it may point outside)", path)
    kind = ("a FIFO" if stat.S_ISFIFO(info.st_mode) else "a socket" if stat.S_ISSOCK(info.st_mode)
            else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else "not a regular file")
    return FileRefused(errno.EINVAL, "is %s, not a regular file: not read" % kind, path)


def _lstat_or_none(path):
    try:
        return os.lstat(path)
    except OSError:
        return None


def read_bytes(path, limit=INPUT_LIMIT, follow_links=False):
    """The bytes of the regular file path, at most limit; the one bounded reader.

    Opened O_RDONLY|O_NONBLOCK (a FIFO never blocks), O_NOFOLLOW unless follow_links (a link is
    FileRefused, ELOOP), then fstat: anything but a regular file is FileRefused; more than limit
    bytes (by st_size, or by reading at most limit + 1 for /proc files, whose size is 0) is
    FileRefused (EFBIG) naming the file and the cap. Any other OSError (missing, permission)
    propagates unchanged.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_links else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        info = _lstat_or_none(path) if exc.errno == errno.ELOOP and not follow_links else None
        if info is not None and stat.S_ISLNK(info.st_mode):
            raise _refuse_kind(path, info) from exc
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refuse_kind(path, info)
        too_large = FileRefused(errno.EFBIG, "larger than the %s cap for this file: not read" % _size_text(limit), path)
        if info.st_size > limit:
            raise too_large
        chunks = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, _READ_CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise too_large
        return data
    finally:
        os.close(fd)


def read_input(path, limit=INPUT_LIMIT, inside=None):
    """Text (surrogateescape) of a file we did not write, or None when it does not exist.

    read_bytes without following links: a link, a FIFO, a device or a file over limit is
    FileRefused naming it and the cap; with inside, a symlink between inside and the file is
    refused too (check_inside). Any other OSError propagates.
    """
    if inside is not None:
        check_inside(path, inside)
    try:
        return read_bytes(path, limit).decode("utf-8", "surrogateescape")
    except FileNotFoundError:
        return None


def read_text(path, limit=CONFIG_LIMIT):
    """File text, or None when it does not exist; surrogateescape keeps every byte for the rewrite.

    Only a missing file is None: any other OSError (permission, a directory, a symlink loop, an
    I/O error) propagates, so a module never mistakes an unreadable config file for an absent one
    and writes over it. Config files are read through a symlink (the documented fstab case), but
    never block (a FIFO) and never past CONFIG_LIMIT (FileRefused).
    """
    try:
        return read_bytes(path, limit, follow_links=True).decode("utf-8", "surrogateescape")
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


def read_optional(path, limit=PROC_LIMIT):
    """File text with every byte kept (surrogateescape), or None on any OSError: missing, unreadable, vanished.

    For /proc and /sys files, where an absent value is reported, not fatal. Bounded like every
    read (read_bytes, through links as /sys/class/net needs): a FIFO, a device or more than
    limit bytes is None too. A file from outside (a bundle, a saved file, a go file) is read
    with read_input, which names what it refuses.
    /proc text is bytes, not UTF-8 (a mount point named caf\xe9, garbage in a broken copy): a
    text-mode read failed on the first such byte. Results shown to Ansible go through
    proc_text.json_safe / show_undecodable.
    """
    try:
        text = read_bytes(path, limit, follow_links=True).decode("utf-8", "surrogateescape")
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


def _mode_text(mode):
    return "%04o" % stat.S_IMODE(mode)


def private_dir_error(path, option, create=False):
    """Why path cannot be a directory we keep state in (None when it can), like ssh's StrictModes.

    The directory must be a real directory (lstat: not a symlink), owned by this user (euid),
    with no group or other write bit; each parent must be owned by root or this user and not
    writable by group or others unless sticky (/tmp, /dev/shm). create makes a missing one 0700
    (its parent must exist). Another user's directory, or one anybody may write into, could
    hold planted records or links: it is refused, never chmod'ed into use. The message names
    option.
    """
    if not os.path.isabs(path):
        return "%s must be an absolute path, got %r" % (option, path)
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            return "%s %s cannot be created (%s)" % (option, path, describe_error(exc))
    try:
        info = os.lstat(path)
    except OSError as exc:
        return "%s %s cannot be used (%s)" % (option, path, describe_error(exc))
    euid = os.geteuid()
    if stat.S_ISLNK(info.st_mode):
        return "%s %s is a symbolic link: give a real directory of this user; refusing to use it" % (option, path)
    if not stat.S_ISDIR(info.st_mode):
        return "%s %s exists and is not a directory" % (option, path)
    if info.st_uid != euid:
        return ("%s %s is owned by uid %d, not by this user (uid %d): its files cannot be trusted; refusing to use it "
                "(give a directory of this user, mode 0700)" % (option, path, info.st_uid, euid))
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return ("%s %s is writable by group or others (mode %s): its files cannot be trusted; refusing to use it "
                "(chmod 0700 it, or give a new directory)" % (option, path, _mode_text(info.st_mode)))
    parent = os.path.dirname(os.path.normpath(path))
    while True:
        try:
            above = os.stat(parent)
        except OSError as exc:
            return "%s %s: its parent %s cannot be checked (%s)" % (option, path, parent, describe_error(exc))
        if above.st_uid not in (0, euid):
            return ("%s %s: its parent %s is owned by uid %d (not root, not this user): it could be replaced; "
                    "refusing to use it" % (option, path, parent, above.st_uid))
        if above.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not above.st_mode & stat.S_ISVTX:
            return ("%s %s: its parent %s is writable by group or others without the sticky bit (mode %s): it could "
                    "be replaced; refusing to use it" % (option, path, parent, _mode_text(above.st_mode)))
        if parent == os.path.dirname(parent):
            return None
        parent = os.path.dirname(parent)


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


def check_inside(path, inside):
    """FileRefused when a directory between inside and path (path's parents below inside) is a symlink or not a directory.

    inside itself is the operator's own choice and may be reached through links; below it every
    component is ours and must be a real directory, so nothing we write, read or remove there
    lands outside through a planted link (a bundle's `clients/<host>` linked to /etc).
    Components that do not exist yet are fine (make_parent creates them as real directories).
    """
    base = os.path.abspath(inside)
    parent = os.path.dirname(os.path.abspath(path))
    relative = os.path.relpath(parent, base)
    if relative == os.curdir:
        return
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        raise FileRefused(errno.EINVAL, "is not inside %s: not touched" % base, path)
    current = base
    for part in relative.split(os.sep):
        current = os.path.join(current, part)
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(info.st_mode):
            raise _refuse_kind(current, info) if stat.S_ISLNK(info.st_mode) else FileRefused(
                errno.ENOTDIR, "is not a directory", current)


def _no_follow_target(path, inside):
    """Mode of the existing regular file at path (None when absent); FileRefused for a link or a non-regular file."""
    if inside is not None:
        check_inside(path, inside)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        raise _refuse_kind(path, info)
    return stat.S_IMODE(info.st_mode)


def _make_parents(directory, mode=0o755):
    """Create directory and missing parents one by one, never through a symlink (mkdir never follows one)."""
    missing = []
    current = directory
    while current and not os.path.lexists(current):
        missing.append(current)
        current = os.path.dirname(current)
    for name in reversed(missing):
        try:
            os.mkdir(name, mode)
        except FileExistsError:
            pass
        info = os.lstat(name)
        if not stat.S_ISDIR(info.st_mode):
            raise _refuse_kind(name, info)


def write_file(module, path, content, mode=NEW_FILE_MODE, backup=False, make_parent=False, follow_links=False, inside=None):
    """Atomically replace path with content; return the backup's path or None.

    content: bytes, or str encoded as UTF-8 with surrogateescape, so text read with
    surrogateescape is written back with every original byte. mode applies only when the file
    does not exist yet; an existing file keeps its mode and owner. make_parent creates a missing
    parent directory (0755). Raises OSError (FileWriteError for what atomic_move raises
    otherwise) with the old file untouched and no temp file left.

    follow_links=True only for an admin's configuration file (fstab, modprobe.d, nfs.conf.d):
    a symlink stays a symlink and its final target gets the new content. Otherwise (the
    default) nothing is followed: a symlink or a non-regular file at path, or a symlink between
    inside and path, is FileRefused naming it, and nothing is read, backed up or written.
    """
    if isinstance(content, str):
        content = content.encode("utf-8", "surrogateescape")
    if follow_links:
        target = final_target(path)
    else:
        target = path
        _no_follow_target(path, inside)
    directory = os.path.dirname(target) or "."
    if make_parent and not os.path.isdir(directory):
        if follow_links:
            os.makedirs(directory, 0o755)
        else:
            _make_parents(directory)
            if inside is not None:
                check_inside(path, inside)
    if follow_links:
        try:
            existing_mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            existing_mode = None
    else:
        existing_mode = _no_follow_target(path, inside)
    backup_file = _backup(module, target, backup)
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
        # rename(2) put a regular file at target (a link planted meanwhile was replaced, not
        # followed); chmod through the fd of that file, never through a name.
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            os.fchmod(fd, final_mode)
        finally:
            os.close(fd)
    return backup_file


def write_if_changed(module, path, content, mode=NEW_FILE_MODE, make_parent=False, inside=None):
    """write_file() unless path holds exactly these bytes already; True when it changed (in check
    mode: would change, and nothing is written). make_parent as in write_file().

    Never through a link (write_file's default): a symlink or a non-regular file at path is
    FileRefused before anything is read, so another file's content never reaches a diff. The
    comparison is of bytes: a report.png, or a CRLF copy of a text file, is never taken for the
    same content as other bytes.
    """
    if isinstance(content, str):
        content = content.encode("utf-8", "surrogateescape")
    old = read_own(path, inside=inside)
    if old is not None and old.encode("utf-8", "surrogateescape") == content:
        return False
    if not module.check_mode:
        write_file(module, path, content, mode=mode, make_parent=make_parent, inside=inside)
    return True


def read_own(path, limit=INPUT_LIMIT, inside=None):
    """The current text of a file we are about to replace (for a diff or a comparison), or None when absent.

    Never through a link and only a regular file (FileRefused otherwise), so a diff shows only
    our own file's old content. Unreadable (EACCES, EIO): None, and the write says why.
    """
    try:
        _no_follow_target(path, inside)
        return read_input(path, limit)
    except FileRefused:
        raise
    except OSError:
        return None


def write_outputs(module, outputs, inside=None, make_parent=False):
    """Write each (path, content) of a module's outputs (diagnosis.md, report.json, ...) unless unchanged.

    Every path is checked first, so a symlink or a special file planted at any of them fails
    the module, naming it, before any file is read or written. Returns [{path, before, changed}]
    (before: the old text, for a diff; never another file's). In check mode nothing is written.
    """
    rows = []
    for path, _content in outputs:
        try:
            rows.append({"path": path, "before": read_own(path, inside=inside), "changed": False})
        except FileRefused as exc:
            module.fail_json(msg="%s; refusing to write %s there, nothing was written" % (exc, os.path.basename(path)),
                             changed=False)
    for index, (path, content) in enumerate(outputs):
        try:
            rows[index]["changed"] = write_if_changed(module, path, content, make_parent=make_parent, inside=inside)
        except OSError as exc:
            module.fail_json(msg="%s: cannot write it (%s)" % (path, describe_error(exc)),
                             changed=any(row["changed"] for row in rows))
    return rows


def remove_file(module, path, backup=False, inside=None):
    """Remove path (absent already is fine); return the backup file's path or None.

    A symlink is removed as the link: its target, which may be shared, stays. With inside, a
    symlink between inside and path is FileRefused (nothing is removed through it).
    """
    if inside is not None:
        check_inside(path, inside)
    backup_file = _backup(module, path, backup)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    return backup_file
