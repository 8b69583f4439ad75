# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The configuration files a tuning module owns: which names it may own, and the edits it plans.

sunrpc_slot_table (a modprobe.d and a modules-load.d file) and nfsd_threads (an nfs.conf
drop-in, a systemd drop-in and its value file) own whole files. Both check the names given
to them the same way, recognise their own files by a header line, and plan each change as a
FileEdit: the text before, the text after (None removes the file), and whether to keep a backup.
host/file_edits.py applies the edits; the diff entries come from here, so check mode shows the
same thing a real run writes.

Pure functions.
"""

from __future__ import annotations

import os
from collections import namedtuple

# Letters, digits, '.', '_' and '-': no name the tools would read differently, nothing a shell
# or a later option line could take apart.
SAFE_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def safe_name(name):
    return set(name) <= SAFE_NAME_CHARS


def directly_in(path, directories):
    """True when path names a file directly in one of directories (not below, not elsewhere)."""
    return os.path.dirname(os.path.normpath(path)) in [os.path.normpath(directory) for directory in directories]


def conf_name(name):
    """True for a drop-in name the tools read: NAME.conf, not a dot-file (kmod's and nfs-utils' rule)."""
    return name.endswith(".conf") and not name.startswith(".") and len(name) > len(".conf")


# The rules of owned_path_error, each with the message a module words it in.
PLACE = "place"
NAME = "name"


def owned_path_error(option, path, directories, messages, files=()):
    """Why path cannot be a file the module owns (None when it can): the one check of the paths a
    tuning module is given to own (sunrpc_slot_table's modprobe_conf/modules_load_conf, nfsd_threads'
    conf_file).

    The path must be absolute, then pass each rule of messages ((rule, text), in the order the
    module reports them): PLACE - one of files, or a conf_name directly in one of directories (what
    the tool reads); NAME - one of files, or a conf_name of SAFE_NAME_CHARS only. The first rule
    that fails gives its text, formatted with option, path (%(path)r), and directories and files
    each joined by ", ".
    """
    if not path or not os.path.isabs(path):
        return "%s must be an absolute path, got %r" % (option, path)
    name = os.path.basename(path)
    exact = os.path.normpath(path) in [os.path.normpath(item) for item in files]
    passes = {
        PLACE: exact or (conf_name(name) and directly_in(path, directories)),
        NAME: exact or (conf_name(name) and safe_name(name)),
    }
    for rule, text in messages:
        if not passes[rule]:
            return text % {"option": option, "path": path, "directories": ", ".join(directories), "files": ", ".join(files)}
    return None


def written_by(text, header):
    """True when text has header (without its newline) as one of its lines: a file this module wrote."""
    return header.rstrip("\n") in text.splitlines()


class FileEdit(namedtuple("FileEdit", ["path", "before", "after", "backup"])):
    """One planned file change; before/after None mean the file is (or becomes) absent."""

    __slots__ = ()

    @property
    def changed(self):
        return self.before != self.after


def with_own(paths, own_path, own_text, read):
    """[(path, text)] of the files at paths as the next reader sees them after the run: own_text for
    own_path (left out when None, the run removes it), read(path) for every other (left out when it
    returns None, a missing file). Both tuning modules that own files read their config directory
    this way (kmod's modprobe.d, nfs-utils' nfs.conf.d), so the plan judges the files with ours as
    planned."""
    own = os.path.normpath(own_path)
    files = []
    for path in paths:
        text = own_text if os.path.normpath(path) == own else read(path)
        if text is not None:
            files.append((path, text))
    return files


def diffs(edits):
    """The diff entries (ini_file's shape: before/after text, a header naming the file) of the changed edits."""
    return [{"before": edit.before or "", "after": edit.after or "", "before_header": edit.path, "after_header": edit.path}
            for edit in edits if edit.changed]


def backup_result(backups, main_path):
    """The backup return values of a module that edits several files, from {path: backup}
    (host/file_edits.apply_edits): backup_files names every backup by the file it saves, and
    backup_file is main_path's (the file the module documents it for), absent when main_path
    was not backed up. One rule for every module, whatever order the files were written in."""
    result = {"backup_files": dict(backups or {})}
    if main_path in result["backup_files"]:
        result["backup_file"] = result["backup_files"][main_path]
    return result
