# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a kernel log's hang is, said as a fault no capacity tuning fixes (issue 44). Pure.

- tasks blocked where no capacity layer explains it (kernel_log.WAITS names none): where their stacks wait. An nfsd
  (or lockd) thread blocked on a lock inside the exported file system is that file system's bug (a deadlock, or a
  lock held by another stuck task); one blocked on that file system's I/O is the server's storage not completing it
  (kernel_frames.file_system_wait); anything else is a hang at the frames it names.
- a server reported "not responding" and not back ("OK") by the log's last line: every hard mount of it hangs there.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import kernel_frames, kernel_log
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human

SOURCE = "kernel/hung_task.c check_hung_task (the report); the frames name the code that waits"


def hang_fault(tasks):
    """The fault of tasks (kernel_log.parse's hung_tasks) blocked where no capacity layer explains it."""
    frames = [frame for task in tasks for frame in task["frames"][:6] if not frame.startswith(("schedule", "__schedule", "io_schedule"))]
    server = any(task["task"].startswith(("nfsd", "lockd")) for task in tasks)
    found = _file_system_wait(tasks) if server else None
    if found:
        return _file_system_fault(tasks, *found)
    where = ", ".join(dict.fromkeys(frames[:4])) or "frames not printed"
    return {"name": "hung_task_%s" % ("nfsd" if server else "client"), "kind": "hang", "tuning_fixes": False,
            "what": "%s blocked in %s: %s" % (
                "nfsd threads" if server else "tasks", where,
                "the server's exported file system or its locks stopped answering, and every request behind them waits"
                if server else "they wait on something no slot, thread or link setting frees"),
            "fix": "read the stack's innermost frames (%s): a bug of that file system or driver (its tracker and the kernel's "
                   "stable releases), or a lock held by another stuck task; a reboot of the %s only clears it" % (
                       where, "server" if server else "client"),
            "source": SOURCE}


def waits_for_the_server(what, tasks):
    """True when client tasks (no nfsd or lockd) wait where kernel_log.WAITS names a wait for the server's replies
    (an RPC's reply, writeback, fsync) - not an unrecognised wait."""
    return what in kernel_log.SERVER_REPLY_WAITS and not any(task["task"].startswith(("nfsd", "lockd")) for task in tasks)


def _file_system_wait(tasks):
    """(lock or io, frame, guessed) of the first task whose frames wait on the exported file system's lock or I/O. A
    frame printed with "?" (the unwinder's guess) is read only for a task with no other frame: old kernels print
    the whole trace so (openzfs/zfs#3997's only frame is "? __mutex_lock_common")."""
    for task in tasks:
        found = kernel_frames.file_system_wait(task["frames"])
        if found:
            return found + (False,)
    for task in tasks:
        found = kernel_frames.file_system_wait(task.get("guessed") or []) if not task["frames"] else None
        if found:
            return found + (True,)
    return None


def _file_system_fault(tasks, what, frame, guessed):
    who = ", ".join("%s:%d" % (task["task"], task["pid"]) for task in tasks[:4]) + (" ..." if len(tasks) > 4 else "")
    longest = human.seconds(max(task["seconds"] for task in tasks))
    shown = "%s, printed with '?': the unwinder's guess" % frame if guessed else frame
    if what == "lock":
        return {"name": "nfsd_blocked_on_file_system_lock", "kind": "bug", "tuning_fixes": False,
                "what": "a known bug class: nfsd threads (%s) blocked more than %s on a lock inside the exported file system "
                        "(%s): a deadlock of that file system's code, or its lock held by another stuck task - not NFS "
                        "load" % (who, longest, shown),
                "fix": "on the server, find the lock's holder (`echo w > /proc/sysrq-trigger`, then `dmesg`: every blocked "
                       "task's stack) and look the frames up in the exported file system's tracker (openzfs/zfs#2954, "
                       "#4362 and #4648 are such deadlocks under nfsd); upgrade that file system or the kernel with the "
                       "fix; restarting the server only clears it, no NFS setting frees it",
                "source": SOURCE + "; the lock frames: kernel_frames.FS_LOCK_FRAMES"}
    return {"name": "nfsd_blocked_on_file_system_io", "kind": "server_storage", "tuning_fixes": False,
            "what": "the server's storage: nfsd threads (%s) blocked more than %s waiting for the exported file system's "
                    "I/O (%s): the storage under the export does not complete it" % (who, longest, shown),
            "fix": "on the server: `iostat -x 5 3` (await, %util per device), `zpool iostat -v 5 3` or `zpool status` on "
                   "ZFS, and `dmesg` for disk, controller or multipath errors; a failing or saturated device is replaced "
                   "or relieved there, no NFS setting frees it",
            "source": SOURCE + "; the I/O frames: kernel_frames.FS_IO_FRAMES"}


def server_not_back(outage, last_time):
    """The fault of a server reported "not responding" and not back ("OK") by the log's last line, or None when the
    outage ended. outage: kernel_log.parse's; last_time: the log's last time stamp (seconds) or None."""
    if outage["ended"]:
        return None
    seconds = away_seconds(outage, last_time)
    since = " for at least %s" % human.seconds(seconds) if seconds else ""
    return {"name": "server_not_back", "kind": "hang", "tuning_fixes": False,
            "what": "a hang: server %s stopped answering and is not back by the log's last line%s - every hard mount of it "
                    "blocks until it answers again, whatever the tuning" % (outage["server"], since),
            "fix": "on the server: is it up and serving (`systemctl status nfs-server` or the user-space server's health, "
                   "`rpcinfo -p SERVER` from the client, `ss -tn sport = :2049`)? Restart or fail over what stopped; from a "
                   "client, `umount -f -l` clears a mount whose server is gone for good",
            "source": "net/sunrpc/clnt.c rpc_check_timeout (\"not responding\") and call_decode (\"OK\")"}


def away_seconds(outage, last_time):
    """Seconds from an unended outage's first "not responding" to the log's last time stamp, or None."""
    if outage["from"] is None or last_time is None or last_time <= outage["from"]:
        return None
    return last_time - outage["from"]
