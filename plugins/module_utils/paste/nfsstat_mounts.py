# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`nfsstat -m` output (nfs-utils utils/nfsstat/nfsstat.c mounts()): each NFS mount and its live options. Pure.

    /mnt/nfs from nfs1:/srv/nfs
     Flags:	rw,relatime,vers=4.1,rsize=65536,...,nconnect=1,...

No figure: which slots cap a mount's concurrency (vers), how many connections (nconnect) and the
transfer sizes, beside another paste's figures.
"""

from __future__ import annotations

import re

from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import split_options

# Bounded, so a search runs in time linear in the line (issue 45, test_regex_linear.py).
_MOUNT = re.compile(r"^(?P<mount_point>/\S{0,4096}) from (?P<export>\S{1,4096})[ \t]*$")


def recognise(text):
    """True when a `MOUNT from EXPORT` line is followed by a `Flags:` line."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    return any(_MOUNT.match(line) and following.startswith("Flags:") for line, following in zip(lines, lines[1:]))


def parse(text):
    """[{"mount_point", "export", "options": {...}}]."""
    mounts = []
    for line in text.split("\n"):
        stripped = line.strip()
        found = _MOUNT.match(stripped)
        if found:
            mounts.append({"mount_point": found.group("mount_point"), "export": found.group("export"), "options": {}})
        elif stripped.startswith("Flags:") and mounts:
            mounts[-1]["options"] = split_options("".join(stripped[len("Flags:"):].split()))
    return mounts
