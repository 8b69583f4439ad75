# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Resource bounds of the checkpoint canary, checked before the first fork or byte.

Pure: the module (plugins/modules/checkpoint_canary.py) reads /proc/meminfo, /proc/self/mountinfo,
getrlimit and statvfs and passes text and numbers in; every function here returns an error
message naming the option and the figures, or None when the bound holds.
"""

from __future__ import annotations

MIB = 1024 * 1024
# Linux's NFS client sends at most 1 MiB per WRITE (NFS_MAX_FILE_IO_SIZE, fs/nfs/internal.h), so a
# write call larger than a few MiB only splits into more RPCs: nothing a checkpoint shows. Each
# rank holds its block in memory once (random_block fills it in place), so 64 MiB keeps 4096
# ranks' buffers bounded while leaving room for large-block experiments on local disks.
MAX_BLOCK_SIZE = 64 * MIB
# Private memory of one forked rank besides its block: copy-on-write pages the child touches
# (refcounts, its result dict). Measured 2.5-3.5 MiB Private_Dirty in /proc/PID/smaps_rollup of a
# rank of the module under python 3.11; 8 MiB leaves room for other interpreters.
RANK_OVERHEAD_BYTES = 8 * MIB
# The ranks may use at most this share of MemAvailable: the rest is the page cache the writes go
# through (and the host's own work); a canary that pushes a node into reclaim measures the reclaim.
MEMORY_SHARE = 0.5
# File descriptors the parent needs besides one pipe per rank: stdio, the module's own files, the
# parent and work directory fds, the cleanup helper's pipes, the poll object, mountinfo reads.
FD_RESERVE = 64
# Free space the canary leaves on the file system beyond what it writes: 5 % of its size (the
# reserve where ext4/xfs servers slow down and other users start to see ENOSPC), at least 64 MiB
# for metadata and the server's allocation granularity.
SPACE_MARGIN_SHARE = 0.05
SPACE_MARGIN_MIN_BYTES = 64 * MIB
# New work directory names tried when an entry of that name exists already (a random 32-bit
# token: a second collision means someone plants names, not bad luck).
WORKDIR_ATTEMPTS = 8


def block_size_error(block_size):
    """block_size above MAX_BLOCK_SIZE (why the bound: see MAX_BLOCK_SIZE)."""
    if block_size > MAX_BLOCK_SIZE:
        return ("block_size must be at most %d (64 MiB; the NFS client sends at most 1 MiB per WRITE and every"
                " rank holds one block in memory), got %d" % (MAX_BLOCK_SIZE, block_size))
    return None


def mem_available(meminfo_text):
    """MemAvailable of /proc/meminfo text in bytes, or None (kernels before 3.14, unreadable file)."""
    for line in (meminfo_text or "").splitlines():
        name, _sep, rest = line.partition(":")
        if name == "MemAvailable":
            fields = rest.split()
            if fields and fields[0].isdigit():
                return int(fields[0]) * 1024
    return None


def rank_memory_bytes(ranks, block_size, blocks_per_rank=1):
    """Memory the ranks need together: blocks_per_rank blocks each plus the per-rank overhead.

    A rank holds one block; with restore=true a second one, the copy its reads are compared with.
    """
    return ranks * (blocks_per_rank * block_size + RANK_OVERHEAD_BYTES)


def memory_error(ranks, block_size, available, blocks_per_rank=1):
    """ranks x (block_size + overhead) above MEMORY_SHARE of MemAvailable; None when unknown or fine."""
    if available is None:
        return None
    needed = rank_memory_bytes(ranks, block_size, blocks_per_rank)
    allowed = int(available * MEMORY_SHARE)
    if needed > allowed:
        blocks = "%d" % block_size if blocks_per_rank == 1 else "%d x %d" % (blocks_per_rank, block_size)
        why = "" if blocks_per_rank == 1 else " (restore=true holds a second block per rank to compare the reads with)"
        return ("ranks x block_size needs %d bytes (%d ranks x (%s + %d overhead))%s, more than %d%% of MemAvailable"
                " (%d of %d bytes); lower ranks or block_size"
                % (needed, ranks, blocks, RANK_OVERHEAD_BYTES, why, int(MEMORY_SHARE * 100), allowed, available))
    return None


def fd_need(ranks, open_fds):
    """Descriptors the module needs while every rank runs: one pipe end per rank plus the reserve."""
    return open_fds + ranks + FD_RESERVE


def fd_limit_plan(ranks, open_fds, soft, hard):
    """(new soft limit or None, error or None) for RLIMIT_NOFILE.

    Raising the soft limit up to the hard one is what any process may do (setrlimit(2)); only a
    need above the hard limit is an error. resource.RLIM_INFINITY is -1.
    """
    need = fd_need(ranks, open_fds)
    if soft < 0 or need <= soft:
        return None, None
    if hard < 0 or need <= hard:
        return need, None
    return None, ("ranks=%d needs %d open files (one pipe per rank, %d open now, %d reserve), above the nofile"
                  " hard limit %d; lower ranks or raise the limit (ulimit -n, LimitNOFILE=)"
                  % (ranks, need, open_fds, FD_RESERVE, hard))


def space_margin(total_bytes):
    """Bytes to leave free on a file system of total_bytes (see SPACE_MARGIN_SHARE)."""
    return max(SPACE_MARGIN_MIN_BYTES, int(total_bytes * SPACE_MARGIN_SHARE))


def space_error(path, ranks, bytes_per_rank, free_bytes, total_bytes):
    """ranks x bytes_per_rank plus the margin above the free space of path's file system."""
    return bytes_space_error(path, ranks * bytes_per_rank, free_bytes, total_bytes,
                             "ranks x bytes_per_rank is %d bytes (%d x %d)" % (ranks * bytes_per_rank, ranks, bytes_per_rank))


def bytes_space_error(path, needed, free_bytes, total_bytes, what=None):
    """needed bytes plus the margin above the free space of path's file system; what names the bytes."""
    margin = space_margin(total_bytes)
    if needed + margin > free_bytes:
        return ("%s; with a margin of %d bytes that does not fit in the %d bytes free on the file system of %s (size %d)"
                % (what or "the checkpoint's bytes here are %d" % needed, margin, free_bytes, path, total_bytes))
    return None


def device_numbers(mounts, fstypes):
    """(major, minor) of every mount (mountinfo.parse_mountinfo dicts) whose fstype is in fstypes."""
    numbers = set()
    for mount in mounts:
        if mount["fstype"] not in fstypes:
            continue
        major, sep, minor = mount.get("device", "").partition(":")
        if sep and major.isdigit() and minor.isdigit():
            numbers.add((int(major), int(minor)))
    return numbers


def mount_of_device(mounts, device, preferred=None):
    """The mount whose device is (major, minor): `preferred` when it matches, else the last such mount."""
    text = "%d:%d" % device
    if preferred is not None and preferred.get("device") == text:
        return preferred
    found = None
    for mount in mounts:
        if mount.get("device") == text:
            found = mount
    return found
