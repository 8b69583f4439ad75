# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse /proc/self/mountinfo and the octal escapes shared by /proc and fstab.

Pure functions: callers read the files and pass the text in.

The kernel (fs/proc_namespace.c, mangle()) and fstab(5) escape space, tab, newline and
backslash in paths as \\040, \\011, \\012 and \\134; every other byte is written as is.
"""

from __future__ import annotations

import re
import unicodedata

_ESCAPED = {" ": "\\040", "\t": "\\011", "\n": "\\012", "\\": "\\134"}
_OCTAL = re.compile(r"\\([0-7]{3})")

NFS_FSTYPES = ("nfs", "nfs4")


def escape_path(path):
    """Escape a path the way the kernel and fstab(5) expect it."""
    return "".join(_ESCAPED.get(char, char) for char in path)


# fstab(5) and libmount separate fields by blanks (space and tab) only; escape_path handles
# those and newline and backslash. Any other control or whitespace character in a mount point is
# refused: str.split() and other readers split on them, mount(8) does not, so the entry we write
# and the entry we read back could differ (issue 12: every run appended one more line).
FIELD_SEPARATORS = " \t"
_REFUSED_CATEGORIES = ("Cc", "Zs", "Zl", "Zp")


def path_character_error(path):
    """Why path cannot be a mount point we write to fstab (a message), or None.

    Refused: NUL, every control character (C0, DEL, C1 such as U+0085) and every Unicode
    space or line/paragraph separator (U+00A0, U+2028, U+3000...) except space, tab and newline,
    which escape_path writes as \\040, \\011 and \\012.
    """
    for char in path:
        if char in " \t\n":
            continue
        if char.isspace() or unicodedata.category(char) in _REFUSED_CATEGORIES:
            return ("contains %r (U+%04X): fstab fields are separated by space and tab only and only space, tab, "
                    "newline and backslash are escaped, so this character would be read back differently"
                    % (char, ord(char)))
    return None


def normal_path(path):
    """path with repeated '/' (a leading '//' too), '.' components and a trailing '/' removed.

    '..' is kept as written: resolving it by text would be wrong across a symlink, and our own
    paths never contain it (the validator refuses it), so an entry with '..' is simply not ours.
    """
    if not path.startswith("/"):
        return path
    parts = [part for part in path.split("/") if part not in ("", ".")]
    return "/" + "/".join(parts)


def unescape_path(text):
    """Undo \\ooo octal escapes (only valid three-digit ones; anything else stays literal)."""
    return _OCTAL.sub(lambda match: chr(int(match.group(1), 8)), text)


def split_options(text):
    """Split a comma-separated option string into an ordered dict; flags map to None."""
    options = {}
    for item in text.split(","):
        if not item:
            continue
        name, sep, value = item.partition("=")
        options[name] = value if sep else None
    return options


def parse_mountinfo(text):
    """Parse mountinfo text into a list of dicts, one per mount, in file order.

    Format (proc(5)): ID PARENT MAJ:MIN ROOT MOUNT_POINT MOUNT_OPTS [OPTIONAL...] - FSTYPE
    SOURCE SUPER_OPTS. Lines that do not fit are skipped: a parser for live kernel output must
    not crash on a format it has not seen.
    """
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        try:
            dash = fields.index("-", 6)
        except ValueError:
            continue
        if len(fields) < dash + 4:
            continue
        mount_options = split_options(fields[5])
        super_options = split_options(fields[dash + 3])
        mounts.append({
            "mount_id": fields[0],
            "parent_id": fields[1],
            "device": fields[2],
            "root": unescape_path(fields[3]),
            "mount_point": unescape_path(fields[4]),
            "fstype": fields[dash + 1],
            "source": unescape_path(fields[dash + 2]),
            # NFS puts its own options (vers, rsize, nconnect, addr...) in the super options;
            # the per-mount flags (rw, relatime) come first, as in /proc/mounts.
            "options": dict(mount_options, **super_options),
        })
    return mounts


def nfs_server_of(mount):
    """The server a mount talks to: addr= when the kernel shows it, else the host in source."""
    addr = mount["options"].get("addr")
    if addr:
        return addr
    source = mount["source"]
    if source.startswith("["):
        return source[1:source.find("]")]
    return source.rsplit(":", 1)[0] if ":" in source else source


def nfs_version_of(mount):
    """NFS version as a string like '3', '4.0', '4.1' ('4' for an nfs4 mount without vers=)."""
    options = mount["options"]
    vers = options.get("vers") or options.get("nfsvers")
    if vers is None:
        return "4" if mount["fstype"] == "nfs4" else "3"
    if vers == "4" and options.get("minorversion"):
        return "4.%s" % options["minorversion"]
    return vers


def nfs_mounts(mounts):
    """Only the NFS mounts of a parse_mountinfo() result."""
    return [mount for mount in mounts if mount["fstype"] in NFS_FSTYPES]
