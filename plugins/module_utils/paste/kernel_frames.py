# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hung-task stack frames that say where an NFS task waits: a hand table (issue 44). Pure data.

A row is (pattern, meaning, layer_or_fault). A pattern is a function name, or a name with "*"
standing for any run of characters ("nfs4_callback_*", "pnfs_*layout*"). The frames are the
functions a blocked task sleeps under in fs/nfs, fs/nfsd and net/sunrpc (v5.10 to v6.12); the
meanings follow what each function waits for in that source.
"""

from __future__ import annotations

FRAMES = (
    # net/sunrpc/sched.c: an RPC task sleeps here until its reply (or a timeout) wakes it.
    ("rpc_wait_bit_killable", "waits for an RPC reply from the server (the call is sent; the server or the path has not answered)", "network"),
    ("__rpc_wait_for_completion_task", "waits for an RPC task to complete (a synchronous NFS call: the server has not answered)", "network"),
    ("rpc_wait_for_completion_task", "waits for an RPC task to complete (a synchronous NFS call: the server has not answered)", "network"),
    ("__rpc_execute", "runs an RPC state machine synchronously: waits for transmit or reply", "network"),
    # net/sunrpc/xprt.c: a request waits for a transport slot (sunrpc.tcp_max_slot_table_entries).
    ("xprt_reserve", "waits for a free RPC slot on the transport (the slot table is full)", "client_rpc_slots"),
    ("xprt_alloc_slot", "waits for a free RPC slot on the transport (the slot table is full)", "client_rpc_slots"),
    ("xprt_do_reserve", "waits for a free RPC slot on the transport (the slot table is full)", "client_rpc_slots"),
    ("call_reserve", "waits for a free RPC slot on the transport (the slot table is full)", "client_rpc_slots"),
    ("rpc_sleep_on", "an RPC task queued to sleep (a slot, a connection or a reply); the frames around it say which", "client_rpc_slots"),
    ("xprt_lock_connect", "waits for the transport's connection to be (re)established", "network"),
    # fs/nfs/nfs4proc.c / nfs4session.c: the NFSv4.1 session's ForeChannel slot table.
    ("nfs4_setup_sequence", "waits for an NFSv4.1 session slot (ForeChannel slot table full, or the session draining)", "client_rpc_slots"),
    ("nfs41_setup_sequence", "waits for an NFSv4.1 session slot (ForeChannel slot table full, or the session draining)", "client_rpc_slots"),
    ("nfs41_sequence*", "an NFSv4.1 SEQUENCE (session slot or lease renewal) in progress", "client_rpc_slots"),
    ("nfs4_alloc_slot", "takes an NFSv4.1 session slot (ForeChannel slot table)", "client_rpc_slots"),
    ("nfs41_wait_on_slot", "waits for an NFSv4.1 session slot", "client_rpc_slots"),
    # fs/nfs/pagelist.c, write.c: page requests and writeback.
    ("nfs_wait_on_request", "waits for a page's WRITE or READ request still in flight to the server", "client_rpc_slots"),
    ("nfs_page_group_lock*", "waits on a page request group another task holds (its I/O in flight)", "client_rpc_slots"),
    ("nfs_lock_and_join_requests", "waits on a page's in-flight requests before writing it again", "client_rpc_slots"),
    ("nfs_writepages", "flushes dirty pages to the server (writeback): WRITEs queued behind slots or replies", "client_rpc_slots"),
    ("nfs_writepage_locked", "writes one dirty page back (memory pressure or fsync): waits for its WRITE", "client_rpc_slots"),
    ("nfs_writepage", "writes one dirty page back: waits for its WRITE", "client_rpc_slots"),
    ("nfs_commit_inode", "waits for a COMMIT: the server writing unstable data to its storage", "server_storage"),
    ("__nfs_commit_inode", "waits for a COMMIT: the server writing unstable data to its storage", "server_storage"),
    ("wait_on_commit", "waits for another task's COMMIT of this file to finish (server storage)", "server_storage"),
    ("nfs_file_fsync", "fsync on an NFS file: all dirty pages written and committed to the server's storage", "server_storage"),
    ("nfs_wb_all", "writes back and commits every dirty page of the file", "server_storage"),
    # fs/nfs/io.c: buffered and O_DIRECT I/O on one inode exclude each other.
    ("nfs_start_io_write", "waits for the inode's I/O lock: another writer (buffered vs O_DIRECT) holds the same file", "access_pattern"),
    ("nfs_start_io_direct", "waits for the inode's I/O lock to switch to O_DIRECT: buffered I/O on the same file", "access_pattern"),
    ("nfs_start_io_read", "waits for the inode's I/O lock: a writer holds the same file", "access_pattern"),
    # fs/nfs/nfs4state.c: state recovery blocks every call to the server meanwhile.
    ("nfs4_wait_clnt_recover", "waits for NFSv4 state recovery (lease, session or reboot reclaim) to finish", "network"),
    ("nfs4_run_state_manager", "the NFSv4 state manager thread: recovering lease/session state with the server", "network"),
    ("nfs4_state_manager", "the NFSv4 state manager: recovering lease/session state with the server", "network"),
    ("nfs4_begin_drain_session", "drains the NFSv4.1 session's slots before a reset (waits for calls in flight)", "network"),
    ("nfs4_drain_slot_tbl", "drains the NFSv4.1 session's slots before a reset (waits for calls in flight)", "network"),
    # fs/nfs/nfs4proc.c nfs_set_open_stateid_locked: with a v4.1 session, an OPEN's reply updates the open stateid only
    # in the server's seqid order; the task sleeps 5 s at a time until the replies before it arrive.
    ("nfs_set_open_stateid_locked", "waits for the OPEN replies before it, to update the open stateid in sequence (NFSv4.1 "
     "seqid); a task that stays here waits for a reply or a seqid the server never sends", "fault_hang"),
    # fs/nfs/delegation.c: returning a delegation the server recalled (another client opened the file).
    ("nfs4_delegreturn", "returns a delegation (the server recalled it: another client opened the file)", "access_pattern"),
    ("nfs4_proc_delegreturn", "returns a delegation (DELEGRETURN call to the server)", "access_pattern"),
    ("_nfs4_proc_delegreturn", "returns a delegation (DELEGRETURN call to the server)", "access_pattern"),
    ("nfs_inode_return_delegation", "flushes and returns a delegation before a conflicting operation", "access_pattern"),
    ("nfs4_inode_return_delegation", "flushes and returns a delegation before a conflicting operation", "access_pattern"),
    ("nfs_end_delegation_return", "flushes dirty data before returning a recalled delegation", "access_pattern"),
    # fs/nfs/callback*.c: the client's callback service (server-to-client calls).
    ("nfs4_callback_*", "the client's NFSv4 callback service handling a server callback (recall, layout recall)", "informational"),
    ("nfs41_callback_svc", "the client's NFSv4.1 backchannel thread (idle there is normal)", "informational"),
    # fs/nfsd/nfs4callback.c: the server's callbacks to a client.
    ("nfsd4_cb_*", "the server's callback to a client (recall, layout recall): waits on the callback path", "network"),
    ("nfsd4_run_cb*", "the server's callback work queue: waits on a client's callback", "network"),
    # fs/nfs/pnfs.c: pNFS layouts.
    ("pnfs_update_layout", "waits for a pNFS layout (LAYOUTGET, or a recall/return in progress)", "fault_hang"),
    ("pnfs_*layout*", "pNFS layout get, return or commit in progress", "fault_hang"),
    # net/sunrpc/svc*.c, fs/nfsd/nfssvc.c: server threads.
    ("svc_recv", "an nfsd/lockd thread idle, waiting for a request (not a stall by itself)", "informational"),
    ("svc_get_next_xprt", "an nfsd thread idle, waiting for a transport with work", "informational"),
    ("nfsd", "an nfsd thread serving a request: what it waits for below is usually the exported filesystem", "server_storage"),
    ("nfsd_vfs_write", "an nfsd thread writing to the exported filesystem", "server_storage"),
    ("nfsd_commit", "an nfsd thread flushing a COMMIT to the exported filesystem", "server_storage"),
    # fs/nfs/super.c, fs_context.c, nfs4client.c: mount.nfs waiting on the server.
    ("nfs_get_tree", "mount(2) of an NFS filesystem: waits for the server (first calls of the mount)", "network"),
    ("nfs4_try_get_tree", "NFSv4 mount: waits for the server (client ID, session, root lookup)", "network"),
    ("nfs4_proc_exchange_id", "EXCHANGE_ID at mount or recovery: establishing the client ID with the server", "network"),
    ("_nfs4_proc_exchange_id", "EXCHANGE_ID at mount or recovery: establishing the client ID with the server", "network"),
    ("nfs4_discover_server_trunking", "establishing the client ID at mount (trunking discovery): waits for the server", "network"),
    ("nfs4_init_client", "setting up the NFSv4 client at mount: waits for the server", "network"),
)


# Where an nfsd thread blocked inside the exported file system waits (issue 44), innermost frame first. On a lock
# (a mutex, an rw semaphore, ZFS's range and rrw locks): the file system's own code holds it and does not let go - a
# deadlock, which its tracker calls a bug (openzfs/zfs#2954 zfs_zget's mutex, #4362 zfs_range_lock, #4648
# rrw_enter_read, #2864 dmu_zfetch's mutex). On I/O (io_schedule, ZFS's txg and zio waits, a journal or log force,
# page writeback): the storage under the export does not complete the I/O. Patterns as in FRAMES.
FS_LOCK_FRAMES = ("mutex_lock*", "__mutex_lock*", "rwsem_down_*", "down_read*", "down_write*", "__down_*", "rrw_enter*",
                  "zfs_range_lock*", "*rangelock_enter*", "rw_enter*")
FS_IO_FRAMES = ("io_schedule*", "txg_wait_*", "zio_wait", "dmu_tx_wait", "wait_on_page_writeback", "folio_wait_writeback",
                "wait_on_page_bit*", "folio_wait_bit*", "jbd2_log_wait_commit", "jbd2_journal_*", "xlog_wait*",
                "xfs_log_force*", "_xfs_log_force*", "submit_bio_wait", "blk_mq_get_tag")


def file_system_wait(frames):
    """("lock" or "io", the frame) of the innermost frame of FS_LOCK_FRAMES or FS_IO_FRAMES, or None."""
    for name in frames:
        for what, patterns in (("lock", FS_LOCK_FRAMES), ("io", FS_IO_FRAMES)):
            if any(_matches(pattern, name) for pattern in patterns):
                return what, name
    return None


def frame_meaning(name):
    """(meaning, layer_or_fault) of a frame name in FRAMES, or None."""
    for pattern, meaning, layer in FRAMES:
        if _matches(pattern, name):
            return meaning, layer
    return None


def _matches(pattern, name):
    """A glob with "*" only, matched by sequential str.find: linear in the name, no regex."""
    if "*" not in pattern:
        return pattern == name
    parts = pattern.split("*")
    if not name.startswith(parts[0]) or not name.endswith(parts[-1]) or len(name) < len(parts[0]) + len(parts[-1]):
        return False
    pos = len(parts[0])
    end = len(name) - len(parts[-1])
    for part in parts[1:-1]:
        found = name.find(part, pos, end)
        if found < 0:
            return False
        pos = found + len(part)
    return True
