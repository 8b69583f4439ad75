# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which processes and mounts keep a mount point busy.

find_holders is pure: it gets the processes' /proc/<pid>/{comm,cwd,root,fd/*,maps} values and
the mount points of /proc/self/mountinfo. read_processes reads those values from /proc, through
file_read's reader (the documented host/ I/O); it only reads links and small /proc files and
never touches anything under a mount point. A holder is anything that makes `umount` fail with
EBUSY (or, with -l, would keep using the old mount): an open file, a current or root directory,
a mapped file under the mount point, or another mount stacked below it.
"""

from __future__ import annotations

import os

from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read

# readlink() of a deleted file's fd or map keeps the old path with this suffix (fs/d_path.c).
_DELETED = " (deleted)"


def is_under(path, mount_point):
    """True when path is mount_point itself or lies below it."""
    if path is None:
        return False
    if path.endswith(_DELETED):
        path = path[:-len(_DELETED)]
    if mount_point == "/":
        return path.startswith("/")
    return path == mount_point or path.startswith(mount_point.rstrip("/") + "/")


def mapped_paths(maps_text):
    """File paths in /proc/<pid>/maps text (column 6; it may contain spaces)."""
    paths = []
    for line in maps_text.splitlines():
        fields = line.split(None, 5)
        if len(fields) == 6 and fields[5].startswith("/"):
            paths.append(fields[5])
    return paths


def find_holders(mount_point, processes, mounts=()):
    """List {pid, command, how} for everything that holds mount_point.

    processes: dicts with pid, command, and any of cwd, root (link targets), fds (dict of fd
    number -> link target) and maps (the maps text). Unreadable items are None/missing and
    skipped. mounts: mount points from mountinfo; one below mount_point pins it too.
    """
    holders = []
    for process in processes:
        reasons = []
        if is_under(process.get("cwd"), mount_point):
            reasons.append("cwd %s" % process["cwd"])
        if is_under(process.get("root"), mount_point):
            reasons.append("root %s" % process["root"])
        for fd, target in sorted((process.get("fds") or {}).items(), key=lambda item: int(item[0])):
            if is_under(target, mount_point):
                reasons.append("open fd %s %s" % (fd, target))
        seen = set()
        for path in mapped_paths(process.get("maps") or ""):
            if path not in seen and is_under(path, mount_point):
                seen.add(path)
                reasons.append("mmap %s" % path)
        for how in reasons:
            holders.append({"pid": process["pid"], "command": process.get("command"), "how": how})
    for other in mounts:
        if other != mount_point and is_under(other, mount_point):
            holders.append({"pid": None, "command": None, "how": "mount %s below it" % other})
    return holders


def read_processes(proc_root):
    """The processes find_holders() takes, read from proc_root; unreadable items are None or missing.

    Processes that exit during the scan, or whose files this user may not read, simply hold less:
    a missed holder makes umount fail with EBUSY, which the caller reports as pending.
    """
    try:
        entries = os.listdir(proc_root)
    except OSError:
        entries = []
    processes = []
    for name in entries:
        if not name.isdigit():
            continue
        base = os.path.join(proc_root, name)
        fds = {}
        try:
            for fd in os.listdir(os.path.join(base, "fd")):
                fds[fd] = file_read.read_link(os.path.join(base, "fd", fd))
        except OSError:
            pass
        processes.append({
            "pid": int(name),
            "command": (file_read.read(os.path.join(base, "comm"), kernel=True) or "").strip() or None,
            "cwd": file_read.read_link(os.path.join(base, "cwd")),
            "root": file_read.read_link(os.path.join(base, "root")),
            "fds": fds,
            "maps": file_read.read(os.path.join(base, "maps"), kernel=True),
        })
    return processes
