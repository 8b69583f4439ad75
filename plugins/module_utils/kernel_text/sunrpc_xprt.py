# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One sunrpc transport's live state: sysfs xprt_info and xprt_state, and nfs-utils' `rpcctl xprt show`. Pure.

xprt_info (net/sunrpc/sysfs.c rpc_sysfs_xprt_info_show, /sys/kernel/sunrpc/xprt-switches/switch-N/xprt-ID-PROTO/)
prints one `name=value` a line:

    last_used=%lu cur_cong=%lu cong_win=%lu max_num_slots=%u min_num_slots=%u num_reqs=%u
    binding_q_len=%u sending_q_len=%u pending_q_len=%u backlog_q_len=%u            (5.14, the first version)
    main_xprt=%d src_port=%u tasks_queuelen=%ld dst_port=%s                        (added in 5.15-5.16)

5.10 has no /sys/kernel/sunrpc at all (sysfs.c arrived in 5.13, xprt_info in 5.14); 6.1 and 6.12 print all
fourteen fields. A transport that is not connected answers -ENOTCONN (a failed read: the sampler writes no
section, or an empty one) in the version quoted above, and `<closed>` once a later patch to sysfs.c replaced
-ENOTCONN in the show functions (which of the lab's kernels carries it is docs/kernels.md's to measure). Fields
are read by name, so a kernel that adds one later is read as well; one that lacks a field leaves it None.

num_reqs counts the request slots allocated (xprt_dynamic_alloc_slot, at least min_num_slots kept), max_num_slots
the cap (sunrpc.tcp_max_slot_table_entries for TCP, 65536 by default and on NFSv4.1+ where the session limits);
backlog_q_len counts tasks waiting for a slot (xprt_add_backlog), sending_q_len tasks waiting to transmit,
pending_q_len tasks waiting for a reply. cur_cong and cong_win (RPC_CWNDSCALE = 256 per request) bound UDP only.

xprt_state (rpc_sysfs_xprt_state_show) prints `state=CLOSED` or `state=` followed by the set flags among LOCKED
CONNECTED CONNECTING CLOSE_WAIT BOUND BOUNDING CLOSING CONGESTED CWND_WAIT WRITE_SPACE OFFLINE REMOVE, each
unset one as an empty word.
"""

from __future__ import annotations

import dataclasses
import re

# The fields in the kernel's order (net/sunrpc/sysfs.c); dst_port is a string (the port as text, "0" off TCP).
NUMBER_FIELDS = ("last_used", "cur_cong", "cong_win", "max_num_slots", "min_num_slots", "num_reqs", "binding_q_len",
                 "sending_q_len", "pending_q_len", "backlog_q_len", "main_xprt", "src_port", "tasks_queuelen")
CLOSED = "<closed>"
# xprt-ID-PROTO (rpc_sysfs_xprt_alloc: "xprt-%d-%s", id and RPC_DISPLAY_PROTO); the sampler may name the directory
# or its xprt_info file.
_XPRT_DIR = re.compile(r"(?:^|/)xprt-(\d{1,9})(?:-([a-z0-9]{1,16}))?(?:/|$)")
_SWITCH_DIR = re.compile(r"(?:^|/)switch-(\d{1,9})(?:/|$)")
_FIELD = re.compile(r"^\s*([a-z_]{1,32})=(\S{0,64})\s*$")


@dataclasses.dataclass(frozen=True)
class XprtInfo:
    """One xprt_info read: each field's value (None when this kernel does not print it), closed when the
    transport was not connected (`<closed>`); switch, xprt id and protocol from its sysfs path when known."""
    last_used: object = None
    cur_cong: object = None
    cong_win: object = None
    max_num_slots: object = None
    min_num_slots: object = None
    num_reqs: object = None
    binding_q_len: object = None
    sending_q_len: object = None
    pending_q_len: object = None
    backlog_q_len: object = None
    main_xprt: object = None
    src_port: object = None
    tasks_queuelen: object = None
    dst_port: object = None
    closed: bool = False
    switch: object = None
    xprt_id: object = None
    protocol: object = None
    state: tuple = ()

    @property
    def full(self):
        """A task waiting for a slot (backlog_q_len > 0): the slot table was full at this read. num_reqs at the cap
        alone is not: it counts slots allocated, which stay allocated after a burst and never fall below
        min_num_slots (a 2-slot table reads num_reqs=2 idle; issue 47's lab run on 6.1 and 6.12)."""
        return bool(self.backlog_q_len)


def parse_xprt_info(text, path=None):
    """XprtInfo of one xprt_info text, or None when it holds no field and is not `<closed>`."""
    values = {}
    closed = False
    for line in (text or "").split("\n"):
        if line.strip() == CLOSED:
            closed = True
            continue
        field = _FIELD.match(line)
        if not field:
            continue
        name, value = field.groups()
        if name in NUMBER_FIELDS:
            try:
                values[name] = int(value)
            except ValueError:
                continue
        elif name == "dst_port":
            values[name] = value
    if not values and not closed:
        return None
    return XprtInfo(closed=closed, **dict(values, **path_names(path)))


def path_names(path):
    """{switch, xprt_id, protocol} of a sysfs path (xprt-switches/switch-0/xprt-3-tcp/xprt_info), those found."""
    names = {}
    xprt = _XPRT_DIR.search(path or "")
    if xprt:
        names["xprt_id"] = int(xprt.group(1))
        if xprt.group(2):
            names["protocol"] = xprt.group(2)
    switch = _SWITCH_DIR.search(path or "")
    if switch:
        names["switch"] = int(switch.group(1))
    return names


def parse_xprt_state(text):
    """The set flags of an xprt_state text: ("CONNECTED", "BOUND"), ("CLOSED",) or () when it is no state line."""
    for line in (text or "").split("\n"):
        if line.startswith("state="):
            return tuple(line[len("state="):].split())
    return ()


# nfs-utils tools/rpcctl/rpcctl.py Xprt.__str__: four lines a transport, the first unindented.
_RPCCTL_HEAD = re.compile(r"^(xprt-\d{1,9}): (\w{1,16}), (\S{1,80}), port (\S{1,16}), state <([A-Z_,]{0,200})>(, main)?\s*$")
_RPCCTL_REQS = re.compile(r"^\s+Source: (\S{1,80}), port (\d{1,5}), Requests: (\d{1,9})\s*$")
_RPCCTL_CONG = re.compile(r"^\s+Congestion: cur (\d{1,12}), win (\d{1,12}), Slots: min (\d{1,9}), max (\d{1,9})\s*$")
_RPCCTL_QUEUES = re.compile(r"^\s+Queues: binding (\d{1,9}), sending (\d{1,9}), pending (\d{1,9}), backlog (\d{1,9}), "
                            r"tasks (-?\d{1,12})\s*$")


def parse_rpcctl(text):
    """[(XprtInfo, server address)] of `rpcctl xprt show` output (nfs-utils 2.6.2+), one a transport it prints."""
    found = []
    current = None
    for line in (text or "").split("\n"):
        head = _RPCCTL_HEAD.match(line)
        if head:
            if current:
                found.append(current)
            name, protocol, address, port, state, main = head.groups()
            current = ({"xprt_id": int(name.split("-")[1]), "protocol": protocol, "dst_port": port,
                        "state": tuple(word for word in state.split(",") if word), "main_xprt": 1 if main else 0}, address)
            continue
        if current is None:
            continue
        values = current[0]
        for pattern, names in ((_RPCCTL_REQS, (None, "src_port", "num_reqs")),
                               (_RPCCTL_CONG, ("cur_cong", "cong_win", "min_num_slots", "max_num_slots")),
                               (_RPCCTL_QUEUES, ("binding_q_len", "sending_q_len", "pending_q_len", "backlog_q_len",
                                                 "tasks_queuelen"))):
            match = pattern.match(line)
            if match:
                values.update((name, int(value)) for name, value in zip(names, match.groups()) if name)
    if current:
        found.append(current)
    return [(XprtInfo(**values), address) for values, address in found if "num_reqs" in values or "max_num_slots" in values]
