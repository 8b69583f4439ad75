# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tuning profiles: the one source of every recommended value.

The roles' profile files (roles/client_tuning/vars/profile_*.yml, roles/server_tuning/vars/
profile_*.yml) read their data from here through ckptio.nfs.internal('tuning_profile', side), and the
diagnosis recommends these same values (recommended()), so advice and profile cannot disagree.
Why each value is what it is: the comments below (facts in docs/nfs-facts.md, docs/operations.md).
"""

from __future__ import annotations

import copy

_CLIENT_CHECKPOINT = {
    # Persist the values (modprobe.d options applied when sunrpc/nfs load) and apply them live.
    "sunrpc_state": "present",
    # Before a mount's fstab entry first gets tuned options, its old ones go to
    # client_tuning_state_file: distro_default brings the mount back to them. A record marked
    # restored (that tuning was rolled back) is replaced by the options found now.
    "recorded_mounts": "record",
    "sunrpc": {
        # Pre-allocated RPC slots per transport. The default is 2 (RPC_MIN_SLOT_TABLE) and grows on
        # demand; with 128 set before mounting, the lab's xprt showed max_slots=128 at once instead of
        # creeping up from 2 to 9-27 under load. Read only when a transport is created, so it must be
        # in place before the checkpoint mounts are (re)mounted.
        "tcp_slot_table_entries": 128,
        # Cap per transport. Some servers (some NetApp) misbehave above 128 slots per connection;
        # Google NetApp Volumes documents 128 execution contexts per TCP connection. Concurrency per
        # client is about slots x nconnect (128 x 4 = 512). NFSv4.1+ ignores this cap
        # (NFS_CS_INFINITE_SLOTS, fs/nfs/nfs4client.c; measured in the lab): it limits only NFSv3 and
        # NFSv4.0 mounts; on v4.1 the session slots below are what count.
        "tcp_max_slot_table_entries": 128,
        # NFSv4.1 session slots requested at CREATE_SESSION (nfs module parameter, default 64, max
        # 1024). One session serves all nconnect connections, so this caps in-flight requests per
        # client; waiting for it shows as per-op queue time, not backlog (lab: 2 slots gave 25 s
        # average WRITE queue time). 160 is the most a 5.4-6.13 server grants
        # (min(request, 160, DRC memory / threads)); newer servers allocate on demand up to 2048.
        "nfs_max_session_slots": 160,
    },
    "mount_options": {
        # Sessions (and so session slots) exist from NFSv4.1 on; the lab measurements are on 4.1.
        "vers": "4.1",
        # Several TCP connections per server (kernel >= 5.3). Vendor figures: Azure Files NFS ~3x
        # write throughput at nconnect=4 and "no gains beyond four"; Azure NetApp Files is best at 8
        # (raise it to 8 for NetApp). The first mount to a server wins: changing it needs every mount
        # of that server unmounted.
        "nconnect": 4,
        # 1 MiB is the client maximum; the server negotiates it down to its max_block_size
        # (/proc/fs/nfsd/max_block_size, e.g. 256 KiB on a 2 GiB server; ckptio.nfs.tune_servers reports
        # it). A remount cannot change rsize/wsize, so a change is pending until the mount is idle.
        "rsize": 1048576,
        "wsize": 1048576,
        # Hard mounts retry forever: a checkpoint rank waits in D state through a server outage
        # (lab: 27 s outage, writer exited 0) instead of getting EIO and leaving a torn checkpoint.
        "hard": True,
        "proto": "tcp",
        # nfs(5) defaults for TCP, stated so that a distro default change does not move them:
        # 60 s before a retry, 2 retries before "server not responding".
        "timeo": 600,
        "retrans": 2,
    },
}

_CLIENT_DISTRO_DEFAULT = {
    # Remove what ckptio persisted (modprobe.d / modules-load.d entries); the kernel defaults then
    # apply at the next module load.
    "sunrpc_state": "absent",
    # Mounts with a record get their pre-tuning options back (plus nconnect 1 when the record has
    # none, the kernel default: only a wanted nconnect makes nfs_mount remount away the tuned
    # connections); the record is marked restored once nothing is pending for the mount and stays,
    # so a rollback run again writes the same options and changes nothing.
    "recorded_mounts": "restore",
    "sunrpc": {
        # RPC_MIN_SLOT_TABLE: 2 pre-allocated slots, growing on demand.
        "tcp_slot_table_entries": 2,
        # RPC_MAX_SLOT_TABLE_LIMIT (very old kernels had a fixed 128).
        "tcp_max_slot_table_entries": 65536,
        # Kernel default for UDP transports.
        "udp_slot_table_entries": 16,
        # nfs module default.
        "nfs_max_session_slots": 64,
    },
    # No tuning options: nconnect, rsize, wsize, timeo... come from the record, the mount's own
    # opts or the kernel's defaults (nconnect 1, rsize/wsize negotiated, hard, timeo=600, retrans=2).
    "mount_options": {},
}

_SERVER_CHECKPOINT = {
    # Persist in /etc/nfs.conf.d (read after /etc/nfs.conf; RPCNFSDCOUNT in
    # /etc/default/nfs-kernel-server is ignored on Debian 12 - measured) and apply live.
    "state": "present",
    # Default is 8 (16 from nfs-utils 2.8.2). Little's law: 8 GB/s of 1 MiB WRITEs is ~7,600 ops/s;
    # at a few ms of service time per WRITE that keeps ~40-60 requests in service, and a request
    # that finds no idle thread waits (lab: with 1 thread 85 % of requests found none; with 8 or 32
    # threads_woken matched packets_arrived within 1 %). 64 is also one thread per client. Caveat:
    # on 5.4-6.13 kernels session slots granted = min(request, 160, DRC memory / threads), so on a
    # small-memory server more threads shrink the slots each client gets - watch highest_slotid.
    "threads": 64,
    # Dynamic threads (newer kernels, /proc/fs/nfsd/min_threads): threads becomes the maximum.
    # Left unset: applied only where the kernel supports it and you choose a floor.
    "min_threads": None,
}

_SERVER_DISTRO_DEFAULT = {
    "state": "absent",
    # nfs-utils default on Debian 12 / RHEL 9 (nfs-utils < 2.8.2; 16 from 2.8.2).
    "threads": 8,
    "min_threads": None,
}

PROFILES = {
    "client": {"checkpoint": _CLIENT_CHECKPOINT, "distro_default": _CLIENT_DISTRO_DEFAULT},
    "server": {"checkpoint": _SERVER_CHECKPOINT, "distro_default": _SERVER_DISTRO_DEFAULT},
}
# The profile whose values the diagnosis recommends.
RECOMMENDED = "checkpoint"


class ProfileError(ValueError):
    """An unknown side or profile; the message names the known ones."""


def profile(name, side):
    """A copy of one profile's data (what __<role>_profile_data holds)."""
    if side not in PROFILES:
        raise ProfileError("side must be one of %s, got %r" % (", ".join(sorted(PROFILES)), side))
    if name not in PROFILES[side]:
        raise ProfileError("profile must be one of %s, got %r" % (", ".join(sorted(PROFILES[side])), name))
    return copy.deepcopy(PROFILES[side][name])


def recommended(side, *path):
    """One value of the recommended profile: recommended("client", "sunrpc", "nfs_max_session_slots") -> 160."""
    value = PROFILES[side][RECOMMENDED]
    for key in path:
        value = value[key]
    return value
