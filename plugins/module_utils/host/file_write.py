# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The modules' one file writer; a replace or remove that fails leaves the old file byte for byte.

Every module that writes a file (fstab, nfs.conf drop-ins, modprobe.d, the diagnosis and report
files) goes through here, so the data-safety guarantee is written, and tested, once. Reading is
file_read.read, locking file_lock.locked.

How a write works: the new bytes go to a temp file in the directory of the file's final target
(rename(2) is atomic only within one file system, and renaming over a symlink would replace the
link by a regular file while its target kept the old content), are fsync'ed, then one move
renames the temp file over the target: `module.atomic_move` in a module (write_file), a plain
rename(2) where no AnsibleModule runs (replace_file: the textfile collector on a node). The
temp file is created with the final mode (the old file's mode, or `mode` for a new file), so
no moment exists where the new content is readable by more users than the final file allows,
whatever the umask. Whatever fails, the temp file is removed and the error propagates as OSError: the caller words the
message (its option names).

Which writes follow a symlink, decided here once: only the configuration files an admin may
have linked elsewhere (fstab, modprobe.d, nfs.conf.d, /etc/default; docs/safety.md "A symlink
stays a symlink") are written through a link, by `follow_links=True` (file_edits.apply_edits and
nfs_mount's fstab). Every other write (the controller's outputs in a bundle, barrier and state
files, saved_stats_bundle's dest) never follows one: a link, or anything but a regular file, at
the name or at a directory between `inside` and the name fails with FileRefused naming it.
"""

from __future__ import annotations

import binascii
import contextlib
import errno
import os
import stat

from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.host.file_read import FileRefused, check_inside, describe_error

NEW_FILE_MODE = 0o644


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


def remove_empty_dir(module, path):
    """Remove directory path when it is empty (True), leave it otherwise (False); nothing in check mode.

    For a directory a module created for files it wrote and has now removed: anything else
    in it (a file someone added) keeps it.
    """
    if not file_read.is_empty_dir(path):
        return False
    if not module.check_mode:
        os.rmdir(path)
    return True


def _no_follow_target(path, inside):
    """Mode of the existing regular file at path (None when absent); FileRefused for a link or a non-regular file."""
    if inside is not None:
        check_inside(path, inside)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        raise file_read.refuse_kind(path, info)
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
            raise file_read.refuse_kind(name, info)


def _as_bytes(content):
    return content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content


def _replace(target, content, final_mode, creating, move):
    """The one move into place: a temp file born with final_mode in target's directory gets content,
    is fsync'ed, and move(temp, target) renames it over target; whatever fails, the temp file is
    removed and the old file keeps its bytes. A file this created is chmod'ed through its fd."""
    temp_path = None
    try:
        handle, temp_path = _create_temp(os.path.dirname(target) or ".", os.path.basename(target), final_mode)
        with os.fdopen(handle, "wb") as stream:
            os.fchmod(stream.fileno(), final_mode)
            stream.write(content)
            stream.flush()
            os.fsync(stream.fileno())
        move(temp_path, target)
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


def replace_file(path, content, mode=NEW_FILE_MODE, inside=None):
    """Atomically replace path with content without an AnsibleModule (the textfile collector on a node).

    The same replace as write_file's (a temp file in path's directory, fsync, rename(2)), with
    os.rename as the move: mode applies to a new file, an existing one keeps its mode. Nothing is
    followed: a symlink or a non-regular file at path, or a symlink between inside and path, is
    FileRefused naming it and nothing is written; the directory must exist. Raises OSError with
    the old file untouched and no temp file left.
    """
    existing_mode = _no_follow_target(path, inside)
    creating = existing_mode is None
    _replace(path, _as_bytes(content), mode if creating else existing_mode, creating, os.rename)


def _module_move(module, creating, final_mode):
    """module.atomic_move as _replace's move: it keeps an existing file's owner and SELinux context."""
    def move(temp_path, target):
        try:
            if creating:
                # atomic_move gives a file it creates 0666 & ~umask after the rename; with this
                # umask that is at most final_mode, and _replace's fchmod restores it exactly.
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
    return move


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
    content = _as_bytes(content)
    if follow_links:
        target = file_read.final_target(path)
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
    _replace(target, content, final_mode, creating, _module_move(module, creating, final_mode))
    return backup_file


def write_if_changed(module, path, content, mode=NEW_FILE_MODE, make_parent=False, inside=None):
    """write_file() unless path holds exactly these bytes already; True when it changed (in check
    mode: would change, and nothing is written). make_parent as in write_file().

    Never through a link (write_file's default): a symlink or a non-regular file at path is
    FileRefused before anything is read, so another file's content never reaches a diff. The
    comparison is of bytes: a report.png, or a CRLF copy of a text file, is never taken for the
    same content as other bytes.
    """
    content = _as_bytes(content)
    old = file_read.read(path, inside=inside, none_on=file_read.UNREADABLE)
    if old is not None and old.encode("utf-8", "surrogateescape") == content:
        return False
    if not module.check_mode:
        write_file(module, path, content, mode=mode, make_parent=make_parent, inside=inside)
    return True


def write_outputs(module, outputs, inside=None, make_parent=False):
    """Write each (path, content) of a module's outputs (diagnosis.md, report.json, ...) unless unchanged.

    Every path is checked first, so a symlink or a special file planted at any of them fails
    the module, naming it, before any file is read or written. Returns [{path, before, changed}]
    (before: the old text, for a diff; never another file's). In check mode nothing is written.
    """
    rows = []
    for path, _content in outputs:
        try:
            rows.append({"path": path, "before": file_read.read(path, inside=inside, none_on=file_read.UNREADABLE),
                         "changed": False})
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
