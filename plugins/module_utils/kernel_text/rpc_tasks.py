# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The RPC tasks of a client and the queue each sleeps on: debugfs rpc_clnt/ID/tasks, and the same list as
`rpcdebug -m rpc -c` (rpc_show_tasks) prints it to the kernel log. Pure.

debugfs (net/sunrpc/debugfs.c tasks_show, 5.10 to 6.12 alike), one line a task:

    seq_printf(f, "%5u %04x %6d 0x%x 0x%x %8ld %ps %sv%u %s a:%ps q:%s\\n",
               tk_pid, tk_flags, tk_status, cl_clid, xid, rpc_task_timeout(task), tk_ops,
               cl_program->name, cl_vers, rpc_proc_name(task), tk_action, rpc_waitq)

e.g. `  291 0a81      0 0x4 0x6c3a1f2e    59988 nfs_pgio_common_ops [nfs] nfsv4 WRITE a:call_status [sunrpc]
q:xprt_pending`: %ps of a symbol in a module adds " [module]" (lib/vsprintf.c, kallsyms), so the ops and action
may hold a blank; the queue name is the rest of the line and holds blanks too ("ForeChannel Slot table"). Kernels
after 6.12 end the file with `clnt[ADDR:PORT] RPC tasks[N]` (tasks_stop, 2024), the server it talks to.

The kernel log form (net/sunrpc/clnt.c rpc_show_task) prints pointers instead of the client id and xid:
"%5u %04x %6d %8p %8p %8ld %8p %sv%u %s a:%ps q:%s" (flags %08x in newer kernels), after a header
"-pid- flgs status -client- --rqstp- -timeout ---ops--".

The queue says what a task waits for (rpc_qname of tk_waitqueue, "none" when it is not queued):
- "ForeChannel Slot table": an NFSv4.1+ session slot (fs/nfs/nfs4session.c nfs4_init_slot_table), the server's
  session limit; "BackChannel Slot table" is the callback channel's;
- "xprt_backlog": a transport request slot (net/sunrpc/xprt.c xprt_add_backlog), the client's slot table;
- "xprt_sending": its turn to transmit on the socket (xprt_request_enqueue_transmit);
- "xprt_pending": the server's reply (xprt_request_wait_receive);
- "xprt_binding": the server's port (rpcbind), "delayq": a delayed retry (rpc_delay).
"""

from __future__ import annotations

import dataclasses
import re

SESSION_SLOT_QUEUE = "ForeChannel Slot table"
TRANSPORT_SLOT_QUEUE = "xprt_backlog"
SENDING_QUEUE = "xprt_sending"
PENDING_QUEUE = "xprt_pending"
NOT_QUEUED = "none"
# What a task on each queue waits for, in words (the queue names above).
WAITS_FOR = {SESSION_SLOT_QUEUE: "an NFSv4.1 session slot", TRANSPORT_SLOT_QUEUE: "a transport slot",
             SENDING_QUEUE: "its turn to send", PENDING_QUEUE: "the server's reply", "xprt_binding": "the server's port",
             "delayq": "a delayed retry", NOT_QUEUED: "nothing (running)"}
# A task line is split at " a:" and " q:" (the queue name holds blanks, the symbols " [module]"), its first six
# words checked: pid, flags (hex), status, client id and xid (0x... in debugfs, hashed pointers in the log), timeout.
_HEAD = re.compile(r"^(\d{1,10}) ([0-9a-f]{4,8}) (-?\d{1,10}) (\S{1,18}) (\S{1,18}) (-?\d{1,20})$")
_PROGRAM = re.compile(r"^([a-z0-9_]{1,32})v(\d{1,3})$")
_LOG_PREFIX = re.compile(r"^\s*\[[\s\d.]{1,20}\]")
_TRAILER = re.compile(r"^clnt\[(\S{1,80})\] RPC tasks\[(\d{1,10})\]\s*$")
_INFO = re.compile(r"^(netid|addr|port|state|netns|saddr):\s+(\S{1,80})\s*$")


@dataclasses.dataclass(frozen=True)
class Task:
    """One RPC task: pid, status, client id (debugfs, None in the kernel log form), xid (0 before a transport slot
    was taken), program and version ("nfs", 4), procedure ("WRITE"), action and the queue it sleeps on."""
    pid: int
    flags: str
    status: int
    client_id: object
    xid: int
    program: str
    version: int
    procedure: str
    action: str
    queue: str


@dataclasses.dataclass(frozen=True)
class TaskList:
    """The tasks of one tasks file (or kernel log), and the server it names (`clnt[...]`, newer kernels) or None."""
    tasks: tuple
    server: object = None
    task_count: object = None

    def queue_counts(self):
        """{queue name: tasks on it}."""
        counts = {}
        for task in self.tasks:
            counts[task.queue] = counts.get(task.queue, 0) + 1
        return counts


def _hex(word):
    """0x1a -> 26; a hashed kernel pointer of the log form -> None."""
    if word.startswith("0x"):
        try:
            return int(word, 16)
        except ValueError:
            return None
    return None


def parse_task_line(line):
    """Task of one tasks line (either form), or None."""
    head, sep, queue = line.partition(" q:")
    if not sep:
        return None
    head, sep, action = head.rpartition(" a:")
    words = _LOG_PREFIX.sub("", head).split()
    if not sep or len(words) < 9:
        return None
    fields = _HEAD.match(" ".join(words[:6]))
    program = _PROGRAM.match(words[-2])
    if not fields or not program:
        return None
    pid, flags, status, client, xid, _timeout = fields.groups()
    return Task(int(pid), flags, int(status), _hex(client), _hex(xid) or 0, program.group(1), int(program.group(2)),
                words[-1], action.strip(), queue.strip()[:64])


def parse_tasks(text):
    """TaskList of a debugfs tasks file or of rpc_show_tasks lines in a kernel log."""
    tasks = []
    server = count = None
    for line in (text or "").split("\n"):
        task = parse_task_line(line)
        if task is not None:
            tasks.append(task)
            continue
        trailer = _TRAILER.match(line.strip())
        if trailer:
            server, count = trailer.group(1), int(trailer.group(2))
    return TaskList(tuple(tasks), server, count)


def parse_xprt_debugfs_info(text):
    """{netid, addr, port, state, netns, saddr} of a debugfs rpc_xprt/ID/info file (debugfs.c xprt_info_show), those
    printed: what names the server of an rpc_clnt/ID/xprt link."""
    found = {}
    for line in (text or "").split("\n"):
        match = _INFO.match(line.strip())
        if match:
            found[match.group(1)] = match.group(2)
    return found


def server_address(server):
    """The address of `clnt[ADDR:PORT]` (IPv4 192.0.2.1:2049, IPv6 [2001:db8::1]:2049), without the port."""
    if not server:
        return None
    if server.startswith("["):
        return server[1:].split("]", 1)[0]
    return server.rsplit(":", 1)[0] if server.count(":") == 1 else server
