# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The knfsd connection budget: the kernel's limit, the play's need, and how it is persisted.

Pure functions, no I/O. Kernel facts (docs/tuning-modules.md has the long form):
- net/sunrpc/svc_xprt.c svc_check_conn_limits(): when a listener accepts, if the service's
  temporary (accepted) transports sv_tmpcnt exceed sv_maxconn, or (sv_nrthreads + 3) * 20 when
  sv_maxconn is 0, the oldest temporary transport is closed and
  "nfsd: too many open connections, consider increasing the number of threads" is logged
  (rate-limited). sv_tmpcnt and sv_nrthreads are per svc_serv: one per network namespace,
  all pools together. Every TCP (and RDMA) connection a client opens counts, so a client
  with nconnect=N holds N of them per server and NFS version.
- fs/nfsd/nfsctl.c write_maxconn(): /proc/fs/nfsd/max_connections is nn->max_connections of
  the writer's network namespace; fs/nfsd/nfssvc.c nfsd() copies it into sv_maxconn on every
  pass of the thread loop, so a write takes effect while nfsd runs.
- Linux 6.14 (NeilBrown, "sunrpc: remove all connection limit configuration") removed the
  file: only connections that have not yet presented a valid file handle are limited (64).
- nfs-utils (2.9.2) has no setting for it: neither nfs.conf, rpc.nfsd nor nfsdctl.
"""

from __future__ import annotations

import re

from ansible_collections.ckptio.nfs.plugins.module_utils.config.tuning_records import merge_options

# svc_check_conn_limits(): limit = (sv_nrthreads + 3) * 20 when sv_maxconn is 0.
CONNECTIONS_PER_THREAD = 20
EXTRA_THREADS = 3
# sv_maxconn is an unsigned int; write_maxconn() parses it with get_uint().
MAX_CONNECTIONS = 4294967295
# fs/nfs/client.c: nconnect is 1..NFS_MAX_CONNECTIONS (16).
MAX_NCONNECT = 16
# The margin over the play's connections (see connection_need).
DEFAULT_MARGIN_PERCENT = 25

DROPIN_HEADER = "# Managed by ckptio.nfs.nfsd_threads: knfsd connection limit (/proc/fs/nfsd/max_connections).\n"


def default_limit(threads):
    """The limit nfsd enforces when max_connections is 0."""
    return (int(threads) + EXTRA_THREADS) * CONNECTIONS_PER_THREAD


def connection_limit(configured, threads, supported=True):
    """{configured, effective, threads, supported}: what the kernel enforces.

    configured is the max_connections value (0 = the default from threads); effective is None
    when the kernel has no such limit (supported False) or nothing is known.
    """
    if not supported:
        return {"configured": None, "effective": None, "threads": threads, "supported": False}
    if configured:
        effective = configured
    elif threads is not None and configured is not None:
        effective = default_limit(threads)
    else:
        effective = None
    return {"configured": configured, "effective": effective, "threads": threads, "supported": supported}


def dropin_text(dd_path, value_file, proc_file):
    """The nfs-server.service drop-in that writes value_file to proc_file before nfsd starts."""
    return (
        DROPIN_HEADER
        + "# nfs-utils has no setting for it (nfs.conf, rpc.nfsd and nfsdctl know none), so it is\n"
        "# written before nfsd starts: clients reconnecting all at once after a restart are held\n"
        "# to this limit, not to the default (threads + 3) * 20. The leading '-' lets nfs-server start\n"
        "# on a kernel without the file (Linux 6.14 and later).\n"
        "[Service]\n"
        "ExecStartPre=-%s if=%s of=%s conv=notrunc status=none\n" % (dd_path, value_file, proc_file)
    )


# The ExecStartPre= line dropin_text() writes, whichever dd it named (/bin/dd or /usr/bin/dd).
_OUR_EXEC_START_PRE = re.compile(r"^ExecStartPre=-\S+ if=\S+ of=\S+ conv=notrunc status=none$")


def _written_by_us(line, ours):
    body = line.rstrip("\r\n")
    return body in ours or bool(_OUR_EXEC_START_PRE.match(body))


def dropin_after(before, wanted):
    """Our drop-in's text after the run, keeping every line someone else added to it.

    before: the drop-in now (ours: it starts with DROPIN_HEADER, or None); wanted: dropin_text()
    of the run, or None when the limit goes. Only what dropin_text() writes is ours: a changed
    ExecStartPre= line is replaced in place; removal takes out our lines and leaves the others
    (under a [Service] line when they need one), deleting the file only when nothing else is in it.
    """
    if not is_our_dropin(before):
        return wanted
    ours = set(dropin_text("-", "-", "-").splitlines()[:-1])
    lines = before.splitlines(keepends=True)
    if wanted is not None:
        new_line = wanted.splitlines(keepends=True)[-1]
        found = [index for index, line in enumerate(lines) if _OUR_EXEC_START_PRE.match(line.rstrip("\r\n"))]
        if not found:
            return wanted + "".join(line for line in lines if not _written_by_us(line, ours))
        lines[found[0]] = new_line
        return "".join(lines)
    others = [line for line in lines if not _written_by_us(line, ours)]
    if not any(line.strip() for line in others):
        return None
    first = next(line for line in others if line.strip())
    section = "" if first.lstrip().startswith("[") else "[Service]\n"
    return section + "".join(others)


def masked_dropin_error(path, wanted):
    """Why max_connections cannot be persisted in a drop-in masked as `systemctl mask` masks (a link to /dev/null).

    systemd reads such a drop-in as empty (src/shared/dropin.c skips a drop-in that is null_or_empty): whoever
    linked it wants nothing there, and a write would go to /dev/null or replace their link.
    """
    return ("max_connections: %s is masked (a symbolic link to /dev/null, as `systemctl mask` makes): systemd reads it as "
            "empty, so max_connections=%d cannot be persisted there and ckptio does not write through the mask; nothing "
            "was changed. To persist it, remove the link (rm %s) and run again; to set only the live value, use "
            "persist: false; or leave max_connections unset" % (path, wanted, path))


def is_our_dropin(text):
    return text is not None and text.startswith(DROPIN_HEADER)


def value_text(value):
    # The whole file is copied into /proc/fs/nfsd/max_connections by dd: a number, nothing else.
    return "%d\n" % value


def parse_value(text):
    """The integer a value file holds, or None when it holds anything else."""
    if text is None:
        return None
    stripped = text.strip()
    if not stripped.isdigit():
        return None
    return int(stripped)


def _split_src(src):
    """(server, export) of an NFS source; IPv6 servers are written [addr]:/export."""
    if not isinstance(src, str):
        return None, None
    if src.startswith("["):
        close = src.find("]")
        if close > 0 and src[close + 1:close + 2] == ":":
            return src[1:close], src[close + 2:]
        return None, None
    server, sep, export = src.partition(":")
    if not sep:
        return None, None
    return server, export


def _transport_key(fstype, opts):
    """Mounts with the same key share one nfs_client, so one set of nconnect connections."""
    vers = opts.get("vers", opts.get("nfsvers"))
    if vers is None and fstype == "nfs4":
        vers = "4"
    proto = str(opts.get("proto", "tcp")).lower()
    return ("default" if vers is None else str(vers), proto)


def _nconnect(value, where):
    if value is None:
        return 1
    if isinstance(value, bool):
        raise ValueError("%s: nconnect must be a whole number 1..%d, got %r" % (where, MAX_NCONNECT, value))
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ValueError("%s: nconnect must be a whole number 1..%d, got %r" % (where, MAX_NCONNECT, value))
    if not 1 <= number <= MAX_NCONNECT:
        raise ValueError("%s: nconnect must be 1..%d (fs/nfs NFS_MAX_CONNECTIONS), got %d" % (where, MAX_NCONNECT, number))
    return number


def client_transports(host, mounts, mount_options, profile_options, server_names):
    """The transports one client opens to this server: [{vers, proto, nconnect, connections, mounts}].

    Options are merged the way client_tuning does (profile, then client_tuning_mount_options,
    then the mount's own opts; a null value drops the option, leaving the kernel default
    nconnect=1). Mounts sharing a transport key share connections; the first mount sets their
    nconnect, and which one mounts first is not known here, so the largest is counted.
    UDP transports are not connections.
    """
    names = set(name.lower() for name in server_names if name)
    groups = {}
    order = []
    for mount in mounts or []:
        if not isinstance(mount, dict):
            raise ValueError("%s: client_tuning_mounts items must be mappings, got %r" % (host, mount))
        server, _export = _split_src(mount.get("src"))
        if server is None or server.lower() not in names:
            continue
        opts = merge_options(profile_options, mount_options, mount.get("opts"))
        key = _transport_key(mount.get("fstype") or "nfs4", opts)
        nconnect = _nconnect(opts.get("nconnect"), "%s mount %s" % (host, mount.get("path")))
        if key not in groups:
            groups[key] = {"vers": key[0], "proto": key[1], "nconnect": nconnect, "mounts": []}
            order.append(key)
        groups[key]["nconnect"] = max(groups[key]["nconnect"], nconnect)
        groups[key]["mounts"].append(mount.get("path"))
    transports = []
    for key in order:
        group = groups[key]
        group["connections"] = 0 if group["proto"] == "udp" else group["nconnect"]
        transports.append(group)
    return transports


def connection_need(clients, server_names, margin_percent=DEFAULT_MARGIN_PERCENT, extra=0):
    """The connections the play's clients open to this server, plus a margin.

    clients: [{host, mounts, mount_options, profile_options}] (client_tuning's variables).
    need = connections + extra + ceil((connections + extra) * margin_percent / 100). The margin
    covers a client that reconnects (xprt connect_count rising) while the server still holds
    its old connection - an idle one is closed only after two 6-minute sweeps
    (svc_age_temp_xprts) - and clients outside the play. extra is for mounts the play does not
    know (login nodes, other clusters).
    """
    if isinstance(margin_percent, bool) or not isinstance(margin_percent, (int, float)) or margin_percent < 0:
        raise ValueError("margin_percent must be a number >= 0, got %r" % (margin_percent,))
    if isinstance(extra, bool) or not isinstance(extra, int) or extra < 0:
        raise ValueError("extra must be a whole number >= 0, got %r" % (extra,))
    per_client = []
    total = 0
    for client in clients:
        transports = client_transports(client["host"], client.get("mounts"), client.get("mount_options"),
                                       client.get("profile_options"), server_names)
        if not transports:
            continue
        connections = sum(transport["connections"] for transport in transports)
        total += connections
        per_client.append({"host": client["host"], "connections": connections, "transports": transports})
    base = total + extra
    # Integer ceiling without floats: exact for any size.
    margin = -(-base * int(margin_percent * 100) // 10000)
    return {
        "clients": len(per_client),
        "hosts_checked": len(clients),
        "connections": total,
        "extra": extra,
        "margin_percent": margin_percent,
        "margin": margin,
        "need": base + margin,
        "per_client": per_client,
    }


def max_connections_setting(setting, need, threads):
    """The max_connections to ask nfsd_threads for: {max_connections, default_limit, reason}.

    setting: 'auto' (0 while the default limit from the wanted threads covers the need, else
    the need), or a whole number (0 = the kernel default).
    """
    limit = default_limit(threads)
    if isinstance(setting, str) and setting.strip().lower() == "auto":
        if limit >= need:
            return {"max_connections": 0, "default_limit": limit,
                    "reason": "the default limit (%d + 3) * 20 = %d covers the need %d" % (threads, limit, need)}
        return {"max_connections": need, "default_limit": limit,
                "reason": "the default limit (%d + 3) * 20 = %d is below the need %d" % (threads, limit, need)}
    if isinstance(setting, bool):
        raise ValueError("max_connections must be auto or a whole number >= 0, got %r" % (setting,))
    try:
        value = int(str(setting).strip())
    except ValueError:
        raise ValueError("max_connections must be auto or a whole number >= 0, got %r" % (setting,))
    if not 0 <= value <= MAX_CONNECTIONS:
        raise ValueError("max_connections must be 0..%d, got %d" % (MAX_CONNECTIONS, value))
    effective = value or limit
    if effective >= need:
        reason = "set to %d: the limit %d covers the need %d" % (value, effective, need)
    else:
        reason = "set to %d: the limit %d is below the need %d" % (value, effective, need)
    return {"max_connections": value, "default_limit": limit, "reason": reason}
