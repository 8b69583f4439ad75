# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The textfile collector: read this host's NFS figures once, write them as one .prom file.

A systemd timer runs it every few seconds on each client and server (the `nfs_metrics_collector`
module installs it as a zip of these very files, so what runs is what the unit tests run). It reads
through HostRoot (bounded reads of /proc and /sys), parses with the collection's own parsers, and
replaces TEXTFILE_NAME in node_exporter's textfile directory atomically: node_exporter reads only
*.prom files, so the temporary file is a dot-file without that suffix and a scrape never sees half
a file (node_exporter's textfile collector docs: "write to a temporary file and rename").

Only stdlib and the collection's module_utils: nodes have no Ansible.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import iter_mountstats
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.nfsd_stats import (
    parse_nfsd_stats,
    parse_pool_stats,
    parse_single_number,
)
from ansible_collections.ckptio.nfs.plugins.module_utils.telemetry import exposition

TEXTFILE_NAME = "ckptio_nfs.prom"
# node_exporter serves the file to anyone who can scrape it; nothing in it is secret.
TEXTFILE_MODE = 0o644


def client_samples(root, mount_points=()):
    """(samples, read): the checkpoint mounts' series, and whether /proc/self/mountstats was read."""
    text = root.read(root.mountstats)
    if text is None:
        return [], False
    samples = []
    for mount in exposition.select_mounts(iter_mountstats(text), mount_points):
        samples.extend(exposition.mount_samples(mount))
    return samples, True


def server_samples(root):
    """(samples, read): the NFS server's series, and whether nfsd's files were there (not on a client)."""
    threads = parse_single_number(root.read(root.nfsd_file("threads")) or "")
    pool_text = root.read(root.nfsd_file("pool_stats"))
    stats_text = root.read(root.nfsd_stats)
    if threads is None and pool_text is None and stats_text is None:
        return [], False
    samples = exposition.server_samples(
        parse_nfsd_stats(stats_text) if stats_text is not None else None,
        parse_pool_stats(pool_text) if pool_text is not None else None,
        threads)
    return samples, True


def collect(root, mount_points=(), now=None):
    """The .prom text of one run."""
    client, mountstats_read = client_samples(root, mount_points)
    server, nfsd_read = server_samples(root)
    sources = {"mountstats": mountstats_read, "nfsd": nfsd_read}
    return exposition.render(client=client, server=server, sources=sources, now=time.time() if now is None else now)


def write_textfile(directory, text):
    """Replace directory/TEXTFILE_NAME with text: a temp file in the same directory, fsync, rename.

    The directory must exist (node_exporter's package makes it): a missing one is an error, not
    created, so a node without node_exporter gets a message and no stray directory. Nothing is
    followed: the temp file is created O_EXCL|O_NOFOLLOW and rename(2) replaces a link at the
    final name instead of writing through it.
    """
    final = os.path.join(directory, TEXTFILE_NAME)
    temp = os.path.join(directory, ".%s.%d.tmp" % (TEXTFILE_NAME, os.getpid()))
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, TEXTFILE_MODE)
    try:
        with os.fdopen(fd, "wb") as stream:
            os.fchmod(stream.fileno(), TEXTFILE_MODE)
            stream.write(text.encode("utf-8"))
            stream.flush()
            os.fsync(stream.fileno())
        os.rename(temp, final)
    finally:
        if os.path.lexists(temp):
            os.unlink(temp)
    return final


def main(argv=None):
    """ckptio-nfs-metrics --textfile-directory DIR [--mount-point P ...]: one run; exit 0, or 1 with a message."""
    parser = argparse.ArgumentParser(prog="ckptio-nfs-metrics", description=__doc__.splitlines()[0])
    parser.add_argument("--textfile-directory", required=True, help="node_exporter's --collector.textfile.directory")
    parser.add_argument("--mount-point", action="append", default=[],
                        help="a checkpoint mount to export (repeat); none: every NFS mount")
    parser.add_argument("--root", default="/", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not os.path.isdir(args.textfile_directory):
        sys.stderr.write("ckptio-nfs-metrics: %s is not a directory: is node_exporter installed with its textfile "
                         "collector?\n" % args.textfile_directory)
        return 1
    text = collect(host_root.HostRoot(args.root), args.mount_point)
    try:
        write_textfile(args.textfile_directory, text)
    except OSError as exc:
        sys.stderr.write("ckptio-nfs-metrics: cannot write %s: %s\n" % (args.textfile_directory, exc))
        return 1
    return 0
