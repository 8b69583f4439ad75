# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply the FileEdits a tuning module planned (config/owned_files.py), and write kernel values.

I/O, through file_write, the one writer: each file is replaced atomically or removed, and a
failure fails the module naming the file, with the old file untouched. The message is the
same for every module that owns files (sunrpc_slot_table, nfsd_threads).
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_write


def apply_edits(module, edits):
    """Write (or remove, when after is None) each changed file in order; return {path: backup} of
    the backups made (owned_files.backup_result() turns it into the module's return values).

    These are an admin's configuration files (modprobe.d, modules-load.d, nfs.conf.d,
    /etc/default): a symlinked one is written through to its target (follow_links=True, the
    documented case in file_write); every other writer of the collection never follows a link.

    The caller orders the edits so that a failure between two of them leaves a consistent set
    (a value file before the drop-in that reads it). A failure fails the module naming the file,
    with changed=true and the files already written named when an earlier edit was made.
    """
    backups, done = {}, []
    for edit in edits:
        if not edit.changed:
            continue
        try:
            if edit.after is None:
                backup_file = file_write.remove_file(module, edit.path, backup=edit.backup)
            else:
                backup_file = file_write.write_file(module, edit.path, edit.after, backup=edit.backup, make_parent=True,
                                                    follow_links=True)
        except OSError as exc:
            module.fail_json(msg="could not %s %s (the old file is untouched)%s: %s" % (
                "remove" if edit.after is None else "write", edit.path,
                "; already changed before it: %s" % ", ".join(done) if done else "", file_read.describe_error(exc)),
                changed=bool(done), backup_files=backups)
        done.append(edit.path)
        if backup_file:
            backups[edit.path] = backup_file
    return backups


def write_kernel_value(path, value):
    """Write one integer to a /proc or /sys parameter file; raises OSError.

    Not file_write.write_file: such a file cannot be replaced, only written, and the kernel
    takes (or refuses) the value at write(2).
    """
    with open(path, "w") as handle:
        handle.write("%d\n" % value)
