# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the modules read a file: one bounded reader, `read`, whose options say what a missing or refused file means.

Every read of a file goes through read(): opened O_RDONLY|O_NONBLOCK (a FIFO never blocks),
O_NOFOLLOW unless follow_links, then fstat: anything but a regular file is FileRefused; more
than `limit` bytes (by st_size, or by reading at most limit + 1 for /proc files, whose size is
0) is FileRefused (EFBIG) naming the file and the cap. Text keeps every byte (surrogateescape),
so a file read and written back loses nothing.

The options, by what is read:
- a file we did not write (a bundle's or saved file, a barrier or state file): the defaults -
  never through a link, INPUT_LIMIT, None when missing, every other error raised (FileRefused
  names what it refuses);
- an admin's configuration file a module may rewrite (fstab, modprobe.d, nfs.conf):
  follow_links=True (the documented fstab case), and module= so anything but a missing file
  fails the module naming the path and errno - a module never mistakes an unreadable config
  file for an absent one and writes over it;
- a /proc or /sys file (or a host file whose absence is reported, not fatal): kernel=True -
  through links (as /sys/class/net needs), PROC_LIMIT, None on any OSError, universal newlines;
- the old text of our own file before we replace it: none_on=UNREADABLE - a link or a special
  file is FileRefused, an unreadable one None (the write says why).

Also here: check_inside (no link between a directory of ours and a file in it), read_link for
the /proc links that name a process's files, and the directory listings (regular_files,
list_dirs for drop-in directories, is_empty_dir).
"""

from __future__ import annotations

import errno
import os
import stat

MIB = 1024 * 1024
# Caps of the bounded reads: a file we did not write (a bundle's or saved file, a config file)
# is refused above its cap instead of being read whole (a 1 GiB dstate.txt, /dev/zero behind a
# name). The largest real inputs are far below: a capture bundle's mountstats of a client with
# a few hundred NFS mounts is about 2 MiB, an fstab a few kB.
INPUT_LIMIT = 16 * MIB
# Kernel files (/proc, /sys): /proc/net/tcp of a server with 100000 sockets is about 15 MiB.
PROC_LIMIT = 64 * MIB
# The small JSON files of a barrier or a state directory (ready, go, abort, records).
SMALL_LIMIT = 64 * 1024
_READ_CHUNK = 1024 * 1024

# What read() returns None for, instead of raising: only a missing file (MISSING), a missing or
# unreadable one but never a refused one (UNREADABLE), or any OSError (ANY).
MISSING = "missing"
UNREADABLE = "unreadable"
ANY = "any"


class FileRefused(OSError, ValueError):
    """A file that is not read or written: a symlink where none may be, not a regular file, or over its cap.

    An OSError (errno ELOOP, EISDIR, EINVAL or EFBIG, filename set) so the callers that name the
    errno and the path word it as any other I/O error; a ValueError so a reader of a bundle that
    catches ValueError reports it instead of a traceback. str() names the file and why.
    """

    def __str__(self):
        return "%s: %s" % (self.filename, self.strerror)


def describe_error(exc):
    """'ELOOP: Too many levels of symbolic links' for an OSError (the errno name is what admins grep for)."""
    name = errno.errorcode.get(exc.errno, "errno %s" % exc.errno) if exc.errno is not None else "error"
    return "%s: %s" % (name, exc.strerror or exc)


def _size_text(limit):
    return "%d MiB" % (limit // MIB) if limit >= MIB and limit % MIB == 0 else "%d bytes" % limit


def refuse_kind(path, info):
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


def _read_bytes(path, limit, follow_links):
    """The bytes of the regular file path, at most limit (see the module docstring); OSError otherwise."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_links else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        info = _lstat_or_none(path) if exc.errno == errno.ELOOP and not follow_links else None
        if info is not None and stat.S_ISLNK(info.st_mode):
            raise refuse_kind(path, info) from exc
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise refuse_kind(path, info)
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


def _none_for(exc, none_on):
    """True when read() returns None for exc under none_on."""
    if none_on == ANY:
        return True
    if none_on == UNREADABLE:
        return not isinstance(exc, FileRefused)
    return isinstance(exc, FileNotFoundError)


def read(path, limit=None, follow_links=False, inside=None, binary=False, none_on=MISSING, module=None, kernel=False):
    """The text (bytes when binary) of the regular file path, read bounded; None as none_on says.

    limit: the cap (INPUT_LIMIT; PROC_LIMIT with kernel). follow_links: open through a symlink
    (only an admin's configuration file, or a kernel file). inside: a directory of ours; a
    symlink between it and path is FileRefused too (check_inside). none_on: MISSING (default),
    UNREADABLE or ANY (see above). module: an AnsibleModule whose fail_json reports any error
    none_on does not turn into None, naming the path and the errno (nothing was changed).
    kernel: a /proc or /sys file - follow_links, PROC_LIMIT, none_on ANY, and universal newlines
    (a CRLF copy of a /proc file reads like the file).
    /proc text is bytes, not UTF-8 (a mount point named caf\\xe9): results shown to Ansible go
    through proc_text.json_safe / show_undecodable.
    """
    if kernel:
        follow_links, none_on = True, ANY
    if limit is None:
        limit = PROC_LIMIT if kernel else INPUT_LIMIT
    try:
        if inside is not None:
            check_inside(path, inside)
        if none_on == UNREADABLE and not follow_links:
            # Our own file's old text: whatever stands at the name (a socket, which open(2) would
            # only call ENXIO) is refused by its kind before it is opened.
            info = _lstat_or_none(path)
            if info is not None and not stat.S_ISREG(info.st_mode):
                raise refuse_kind(path, info)
        data = _read_bytes(path, limit, follow_links)
    except OSError as exc:
        if _none_for(exc, none_on):
            return None
        if module is not None:
            module.fail_json(msg="%s: cannot read it (%s); nothing was changed" % (path, describe_error(exc)), changed=False)
        raise
    if binary:
        return data
    text = data.decode("utf-8", "surrogateescape")
    # Universal newlines, as the text-mode readers before.
    return text.replace("\r\n", "\n").replace("\r", "\n") if kernel else text


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
            raise refuse_kind(current, info) if stat.S_ISLNK(info.st_mode) else FileRefused(
                errno.ENOTDIR, "is not a directory", current)


def regular_files(directory):
    """Sorted names of the regular files directly in directory (through symlinks), dot-files left out.

    For an input directory of files to read: subdirectories, sockets and the like are not
    files to read, and a name starting with a dot is an editor's or a tool's own file. OSError
    (missing, not a directory, unreadable) propagates: the caller names its option.
    """
    return sorted(name for name in os.listdir(directory)
                  if not name.startswith(".") and os.path.isfile(os.path.join(directory, name)))


def list_dirs(directories):
    """[(directory, sorted names)] of the drop-in directories that can be listed, in the order given.

    The one reader of drop-in directories (modprobe.d, nfs.conf.d, a unit's .d, a kernel
    module's parameters): a missing or unreadable directory is left out, as the tools that read
    them skip it; which names count and which hides which is the format's pure rule
    (modprobe_conf.config_order, nfs_conf.dropin_names, systemd's name order).
    """
    listing = []
    for directory in directories:
        try:
            listing.append((directory, sorted(os.listdir(directory))))
        except OSError:
            continue
    return listing


def is_empty_dir(path):
    """True when path is a directory with nothing in it (False when missing, not a directory, or unreadable)."""
    try:
        return not os.listdir(path)
    except OSError:
        return False
