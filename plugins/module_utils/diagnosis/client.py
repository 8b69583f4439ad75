# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The client layer group: RPC slot tables, session slots and transport reconnects.
"""

from __future__ import annotations

import dataclasses

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.run import int_setting
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import (
    IDLE_CLOSE_SECONDS,
    connects_since_mount_unexplained,
)
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import slot_table


# Requests waiting for a transport slot, per send (v3/v4.0). Lab: 680-935 with 2 slots.
BACKLOG_PER_SEND_LIMIT = signals.BACKLOG_PER_SEND.threshold


# A WRITE waits longer for a slot than it spends on the wire, and noticeably (ms).
QUEUE_TO_RTT_LIMIT = signals.QUEUE_TO_RTT.threshold


QUEUE_MS_FLOOR = signals.QUEUE_MS_FLOOR.threshold


# A cap this small is an artificial limit: removing it can give more than MAX_TUNING_GAIN
# (lab: v4.0 with 2 slots 1.3 MB/s vs 20 MB/s with the default).
TINY_SLOT_CAP = signals.TINY_SLOT_CAP.threshold


@dataclasses.dataclass(frozen=True)
class SlotsFinding:
    """client_rpc_slots: whether slots limit, the slot cap read from sunrpc.txt, whether it is tiny; table: the slot
    table seen fill (slot_table.SlotTableFinding), None without the sampler's files."""
    limit: bool
    cap: object
    tiny_cap: bool
    table: object = None

    @property
    def ruled_out(self):
        """The table was seen far from full, or full with the reply wait dominating: not the client's slots."""
        return self.table is not None and (self.table.clear or self.table.reply_dominates)


@dataclasses.dataclass(frozen=True)
class ConnectChurn:
    """Transport connects that were not the mount's own: their count and whether it spans the mount's life."""
    connects: int
    since_mount: bool


def reconnect_evidence(evidence, clients, since_mount=False):
    """Transport connects a healthy mount does not make (None when none): nfsd dropped
    connections (over max_connections, see docs/tuning-modules.md) or the path reset them;
    either way the requests in flight were retransmitted.

    xprt connect_count counts a TCP connect's start and its establishment (mountstats.
    CONNECTS_PER_CONNECT): a reconnect adds 2, a failed attempt 1, so the rise is reported as it
    is, not as a number of reconnects. A transport nobody used for IDLE_CLOSE_SECONDS is closed
    and opens again on the next request: in a window, one connect of a transport the before
    sample showed closed (stats_delta reopen_connects) is that; over a mount's life (one
    snapshot, which starts from zero), each transport's first connect and one reopening per
    IDLE_CLOSE_SECONDS of its age are (mountstats.connects_since_mount_unexplained).
    """
    if any(client["delta"]["rpc"]["connect_count"] is None for client in clients):
        # A source without xprt connect_count (prometheus/rows.py): not measured, never 0.
        return None
    if since_mount:
        beyond = dict((client["host"], connects_since_mount_unexplained(
            client["delta"]["rpc"]["connect_count"], client["delta"]["rpc"].get("protocols"), client["delta"]["rpc"]["transports"],
            client["delta"]["interval_seconds"])) for client in clients)
        signal = ("transport connects since the mount beyond a healthy mount's (xprt connect_count - each transport's first "
                  "connect and one reopening per %d s unused)" % IDLE_CLOSE_SECONDS)
        reopened = 0
    else:
        reopens = dict((client["host"], client["delta"]["rpc"].get("reopen_connects") or 0) for client in clients)
        beyond = dict((client["host"], max(0, (client["delta"]["rpc"]["connect_count"] or 0) - reopens[client["host"]]))
                      for client in clients)
        signal = "transport connects during the window (xprt connect_count rise; a TCP reconnect adds 2)"
        reopened = sum(reopens.values())
    connects = sum(beyond.values())
    detail = "per client: %s" % ", ".join("%s %s" % (host, count) for host, count in beyond.items())
    if reopened:
        detail += ("; not counted: %d from transports the before sample showed closed (idle_time 0) opening once for the "
                   "checkpoint (closed after %d s unused, or used in that second)" % (reopened, IDLE_CLOSE_SECONDS))
    churn = evidence.add(None, signal, connects, "0", connects > 0, detail)
    return ConnectChurn(connects, since_mount) if churn else None


def client_rpc_slots_layer(evidence, clients, figures, send):
    """client_rpc_slots: WRITEs waiting for a transport slot (v3/v4.0) or a session slot (v4.1+)."""
    write = figures["write"]
    backlog_per_send = figures["backlog_per_send"]
    queue_dominates = write["ops"] > 0 and signals.queue_dominates(write["avg_queue_ms"], write["avg_rtt_ms"])
    evidence.add("client_rpc_slots", "WRITE avg queue / avg RTT", write["avg_queue_ms"] / write["avg_rtt_ms"] if write["avg_rtt_ms"] else 0.0,
                 ">= %.1f (and >= %d ms)" % (QUEUE_TO_RTT_LIMIT, QUEUE_MS_FLOOR), queue_dominates,
                 "WRITE queued %.1f ms before transmission vs %.1f ms on the wire (avg exe %.1f ms, %d ops)" % (
                     write["avg_queue_ms"], write["avg_rtt_ms"], write["avg_exe_ms"], write["ops"]))
    backlogged = evidence.add("client_rpc_slots", "transport backlog per send (bklog_u/sends, all transports)", backlog_per_send,
                              ">= %.1f" % BACKLOG_PER_SEND_LIMIT, backlog_per_send >= BACKLOG_PER_SEND_LIMIT,
                              "requests waiting for a transport slot; on v4.1+ this stays 0 because the cap is 65536 (NFS_CS_INFINITE_SLOTS)")
    slot_cap, tiny_cap, at_cap = _slot_caps(clients, evidence, figures["sessions"], figures["session_grant"])
    send_backed_up = send.backed_up
    if figures["sessions"]:
        # v4.1+: the transport is uncapped, session slots throttle; waiting shows only as queue
        # time with zero backlog. A saturated link looks the same, so it must be ruled out.
        slots_limit = queue_dominates and not backlogged and not send_backed_up
        if queue_dominates and not send_backed_up:
            evidence.add("client_rpc_slots", "queue time with zero backlog on NFSv%s (session slots full)" % "/".join(figures["versions"]),
                         write["avg_queue_ms"], "queue dominates while backlog < %.1f" % BACKLOG_PER_SEND_LIMIT, slots_limit,
                         "requests waited for an NFSv4.1 session slot, not for the transport")
    else:
        slots_limit = (backlogged or at_cap) and queue_dominates and not send_backed_up
    table = slot_table.assess(evidence, clients, figures["sessions"], send_backed_up)
    if table is not None:
        # Seen, not inferred: a table full most of the window is the slots' (unless the reply wait or the send side
        # explains the wait); one far from full, or full while WRITEs wait for the reply, is not.
        slots_limit = (slots_limit or table.points_at_slots) and not (table.clear or table.reply_dominates)
    return SlotsFinding(slots_limit, slot_cap, tiny_cap, table)


def _slot_caps(clients, evidence, sessions, session_grant):
    """(cap, cap is tiny, some transport reached its cap) from sunrpc.txt and max_slots."""
    tiny = False
    at_cap = False
    cap = None
    for client in clients:
        rpc = client["delta"]["rpc"]
        settings = client["sunrpc"]
        reached = rpc["max_slots_reached"]
        if sessions:
            cap = int_setting(settings, "max_session_slots")
            if cap is not None:
                tiny = tiny or cap <= TINY_SLOT_CAP
                evidence.add("client_rpc_slots", "NFSv4.1 session slots requested (nfs max_session_slots) on %s" % client["host"], cap,
                             "<= %d is an artificial cap" % TINY_SLOT_CAP, cap <= TINY_SLOT_CAP,
                             "%s; xprt max_slots reached %s per connection, which bounds requests in flight" % (
                                 session_grant["text"], rpc["max_slots"]))
        else:
            protocol_cap = "udp_slot_table_entries" if rpc["protocols"] == ["udp"] else "tcp_max_slot_table_entries"
            cap = int_setting(settings, protocol_cap)
            if cap is not None and reached is not None:
                full = reached >= cap
                at_cap = at_cap or full
                tiny = tiny or (full and cap <= TINY_SLOT_CAP)
                evidence.add("client_rpc_slots", "xprt max_slots reached vs %s on %s" % (protocol_cap, client["host"]), reached,
                             ">= %d (the cap)" % cap, full, "max_slots per connection %s; the slot table was full" % rpc["max_slots"]
                             if full else "max_slots per connection %s" % rpc["max_slots"])
    return cap, tiny, at_cap
