# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An errno a program printed while it read or wrote: Python's "OSError: [Errno N] text" and a tool's "...: text"
(cp, dd, rsync print strerror after a colon). Recognise it and say what it is (issue 44). Pure.

What each errno means on an NFS mount (errno(3); the NFS client's own returns, fs/nfs): an error is a fault, never a
capacity limit - the write did not happen. Some name who is at fault:
- EFAULT "Bad address": the kernel refused the buffer address the program passed (copy_from_user failed); no storage
  or server returns it - a bug of the program or its library (metaseq#493/#497: an async writer's buffer);
- ENOSPC "No space left on device": the export (or its quota tree) is full - the server's storage;
- EDQUOT "Disk quota exceeded" and EACCES/EPERM: a quota or a permission the export or the server sets;
- EIO, ETIMEDOUT, ESTALE and the rest: said with their usual NFS causes (a soft mount that timed out, the server's
  storage failing, a file replaced on the server), which the paste alone does not decide.
A mount.nfs error ("mount.nfs: Connection timed out") is mount_errors.py's, not read here.
"""

from __future__ import annotations

import re

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import mount_errors, text_figures as tf

KIND = "io_errors"
TAKEN_FOR = "I/O errors a program printed (Python's [Errno N], a tool's strerror)"
CAN_SHOW = "each errno printed, how often, what it means on an NFS mount and, where the errno says so, who is at fault"

# errno: (name, strerror, fault kind or "other", meaning on an NFS mount, fix)
ERRNOS = {
    14: ("EFAULT", "Bad address", "bug",
         "the kernel refused the buffer address the program passed to read or write (copy_from_user failed): no storage or "
         "server returns it, so it is the program's (or its I/O library's) bug",
         "fix the writer in the program or its library (metaseq#497 dropped its asynchronous PathManager writer for the "
         "NFS save); no NFS or storage setting changes it"),
    5: ("EIO", "Input/output error", "other",
        "the write (often reported at close() or fsync(), where NFS returns deferred write errors) did not reach the "
        "server: a soft or softerr mount whose request timed out, or an error from the server's storage",
        "check the mount's options (`grep nfs /proc/mounts`: hard, not soft) and the client's and server's kernel logs "
        "at that time (`dmesg -T`: 'not responding', I/O errors); a soft mount turns a slow server into lost writes"),
    28: ("ENOSPC", "No space left on device", "server_storage",
         "the export is full (or a quota tree on the server is)", "free or grow the export on the server (`df -h` there)"),
    122: ("EDQUOT", "Disk quota exceeded", "misconfiguration",
          "a quota of the user or project on the server's file system is used up", "raise the quota or write elsewhere"),
    13: ("EACCES", "Permission denied", "misconfiguration",
         "the server refused the access (export options, root_squash, the file's mode or an ACL)",
         "check the export (`exportfs -v` on the server) and the writer's uid/gid against root_squash"),
    116: ("ESTALE", "Stale file handle", "other",
          "the file or directory was removed or replaced on the server (or the export moved) while the client held it",
          "reopen the path; find who replaces the files on the server"),
    110: ("ETIMEDOUT", "Connection timed out", "other",
          "a request gave up waiting for the server (a soft mount, or the connection)",
          "use hard mounts for checkpoints; see why the server did not answer"),
}
_PYTHON = re.compile(r"\[Errno (\d{1,4})\] ([^:\n'\"]{1,80})")
_BY_TEXT = dict((entry[1], number) for number, entry in ERRNOS.items())


def recognise(text):
    """True when a Python errno or a strerror of ERRNOS after ": " is in the text."""
    return bool(_errors(text))


def read(text):
    """Findings: each errno once (its first line, how many times), a fault each."""
    found = {}
    for number, errno, line in _errors(text):
        entry = found.setdefault(errno, [number, line, 0])
        entry[2] += 1
    findings = []
    for errno, (number, line, count) in found.items():
        name, strerror, kind, meaning, fix = ERRNOS[errno]
        fault = tf.fault("errno_%s" % name.lower(), "%s (%s, errno %d): %s" % (strerror, name, errno, meaning), fix,
                         "errno(3); the NFS client's returns (fs/nfs/write.c, file.c)")
        fault["kind"] = kind
        findings.append(tf.finding(None, "I/O error %s" % name, count, "%s%s" % (
            line.strip()[:200], " (%d times)" % count if count > 1 else ""), number, fault=fault))
    return findings


def _errors(text):
    """(line number, errno, line) of each error of ERRNOS in the text."""
    if "Errno" not in text and not any(strerror in text for strerror in _BY_TEXT):
        return []
    out = []
    for number, line in tf.lines(text):
        found = _PYTHON.search(line)
        if found and int(found.group(1)) in ERRNOS:
            out.append((number, int(found.group(1)), line))
            continue
        for strerror, errno in _BY_TEXT.items():
            if ": " + strerror in line and not mount_errors.is_mount_error(line):
                out.append((number, errno, line))
                break
    return out
