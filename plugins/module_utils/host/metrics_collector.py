# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The textfile collector: read this host's NFS figures once, write them as one .prom file.

A systemd timer runs it every few seconds on each client and server (the `nfs_metrics_collector`
module installs it as a zip of these very files, so what runs is what the unit tests run). It reads
through HostRoot (bounded reads of /proc and /sys), parses with the collection's own parsers, and
replaces TEXTFILE_NAME in node_exporter's textfile directory atomically: node_exporter reads only
*.prom files, so the temporary file (file_write's, a dot-file without that suffix) is never scraped
half written (node_exporter's textfile collector docs: "write to a temporary file and rename").

Only stdlib and the collection's module_utils: nodes have no Ansible.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import NFS_FSTYPES, nfs_server_of, parse_mountinfo
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import slot_samples
from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root, sunrpc_sampler
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import iter_mountstats
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.nfsd_stats import (
    parse_nfsd_stats,
    parse_pool_stats,
    parse_single_number,
)
from ansible_collections.ckptio.nfs.plugins.module_utils.telemetry import exposition
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_write

TEXTFILE_NAME = "ckptio_nfs.prom"
# node_exporter serves the file to anyone who can scrape it; nothing in it is secret.
TEXTFILE_MODE = 0o644


def client_samples(root, mount_points=()):
    """(samples, sources read): the checkpoint mounts' series; which of mountstats, sunrpc sysfs and debugfs were read."""
    text = root.read(root.mountstats)
    if text is None:
        return [], {"mountstats": False}
    mounts = exposition.select_mounts(iter_mountstats(text), mount_points)
    views, sources = slot_views(root, mounts)
    samples = []
    for mount in mounts:
        slot_figures, waiters = views.get(mount.mount_point, (None, None))
        samples.extend(exposition.mount_samples(mount, slot_figures, waiters))
    return samples, dict(sources, mountstats=True)


def _servers(root):
    """{mount point: NFS server address} of this host's NFS mounts (mountinfo's addr=, else the source's host)."""
    mounts = parse_mountinfo(root.read(root.mountinfo) or "")
    return dict((mount["mount_point"], nfs_server_of(mount)) for mount in mounts if mount["fstype"] in NFS_FSTYPES)


def slot_views(root, mounts):
    """({mount point: (slot figures or None, session-slot waiters or None)}, {sunrpc_sysfs, debugfs_tasks: read}).

    One read of the live views the canary samples (host/sunrpc_sampler: sysfs xprt_info, debugfs rpc_clnt tasks),
    mapped to each mount by diagnosis/slot_samples (source port, else server address). A figure is exported only for
    a mount its transports or RPC clients were mapped to - or, when nothing names them, on a host whose NFS mounts all
    go to one server (then the host's are that server's): never another server's figures under this mount's name.
    On NFSv4 one RPC client and one session serve every mount of a server, so those mounts show the same figures.
    The texts are parsed once (slot_samples.parse_files) for all of mounts, the parsed mountstats blocks of the run.
    """
    header = "=== sample t=0.000 ===\n"
    xprt, tasks = sunrpc_sampler.xprt_text(root), sunrpc_sampler.tasks_text(root, [])
    files = dict((key, header + text) for key, text in (("sunrpc_xprt", xprt), ("rpc_tasks", tasks)) if text is not None)
    sources = {"sunrpc_sysfs": xprt is not None, "debugfs_tasks": tasks is not None}
    parsed = slot_samples.parse_files(files)
    if parsed is None:
        return {}, sources
    servers = _servers(root)
    one_server = len(set(servers.values())) == 1
    views = {}
    for mount in mounts:
        address, ports = slot_samples.endpoints(mount)
        if address is None:
            # mountstats prints no addr= on 6.1: mountinfo's server of this mount point (slot_samples' own fallback).
            address = servers.get(mount.mount_point) or None
        summary = slot_samples.summarize_parsed(parsed, address, ports)
        views[mount.mount_point] = (_slot_figures(summary.get("transport"), one_server),
                                    _session_waiters(summary.get("session"), one_server))
    return views, sources


def _slot_figures(transport, one_server):
    if not transport or not (transport["mapped"] or one_server):
        return None
    return {"slots_allocated": transport["peak_in_use"], "slot_table_size": transport["cap"],
            "backlog_queue": transport["max_backlog"], "pending_queue": transport["mean_pending"]}


def _session_waiters(session, one_server):
    return session["max_waiters"] if session and (session["mapped"] or one_server) else None


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
    client, sources = client_samples(root, mount_points)
    server, nfsd_read = server_samples(root)
    sources["nfsd"] = nfsd_read
    return exposition.render(client=client, server=server, sources=sources, now=time.time() if now is None else now)


def write_textfile(directory, text):
    """Replace directory/TEXTFILE_NAME with text through file_write.replace_file (temp file in the same
    directory, fsync, rename): node_exporter reads only *.prom, and the temp file is a dot-file without
    that suffix, so a scrape never sees half a file.

    The directory must exist (node_exporter's package makes it): a missing one is an error, not
    created, so a node without node_exporter gets a message and no stray directory. A link or a
    non-regular file at the name is refused (FileRefused, an OSError), never written through.
    """
    final = os.path.join(directory, TEXTFILE_NAME)
    file_write.replace_file(final, text, mode=TEXTFILE_MODE, inside=directory)
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
