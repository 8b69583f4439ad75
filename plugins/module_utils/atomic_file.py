# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The modules' file reading and writing; a replace or remove that fails leaves the old file byte for byte.

The one module_utils file that does I/O: every module that writes a file (fstab, nfs.conf
drop-ins, modprobe.d, the diagnosis and report files) goes through here, so the data-safety
guarantee is written, and tested, once. The small readers live here too, so each "missing file
means None" rule is written once: read_text for files a module may rewrite, read_optional for
/proc and /sys files and inputs that may be absent or unreadable.

How: the new bytes go to a temp file in the same directory (rename(2) is atomic only within
one file system), are fsync'ed, then `module.atomic_move` renames the temp file over the old
one. atomic_move copies the old file's mode, owner and SELinux context onto the new one; a new
file it gives 0666 & ~umask, so we set `mode` after the move. Whatever fails, the temp file is
removed and the error propagates: the caller words the message (its option names).
"""

from __future__ import annotations

import os
import tempfile

NEW_FILE_MODE = 0o644


def read_text(path):
    """File text, or None when it does not exist; surrogateescape keeps every byte for the rewrite.

    Only a missing file is None: any other OSError (permission, a directory) propagates, so a
    module never mistakes an unreadable config file for an absent one and writes over it.
    """
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "surrogateescape")
    except FileNotFoundError:
        return None


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


def _backup(module, path, backup):
    """module.backup_local's copy of path (it fails the module itself on error), or None."""
    if backup and os.path.exists(path):
        return module.backup_local(path)
    return None


def write_file(module, path, content, mode=NEW_FILE_MODE, backup=False, make_parent=False):
    """Atomically replace path with content; return the backup file's path or None.

    content: bytes, or str encoded as UTF-8 with surrogateescape, so text read with
    surrogateescape is written back with every original byte. mode applies only when path does
    not exist yet; an existing file keeps its mode and owner. make_parent creates a missing
    parent directory (0755). Raises OSError (or what atomic_move raises) with the old file
    untouched and no temp file left.
    """
    if isinstance(content, str):
        content = content.encode("utf-8", "surrogateescape")
    backup_file = _backup(module, path, backup)
    directory = os.path.dirname(path) or "."
    if make_parent and not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    creating = not os.path.exists(path)
    handle, temp_path = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=directory)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(content)
            stream.flush()
            os.fsync(stream.fileno())
        module.atomic_move(temp_path, path)
    finally:
        if os.path.exists(temp_path):
            os.unlink(temp_path)
    if creating and mode is not None:
        os.chmod(path, mode)
    return backup_file


def remove_file(module, path, backup=False):
    """Remove path (absent already is fine); return the backup file's path or None."""
    backup_file = _backup(module, path, backup)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    return backup_file
