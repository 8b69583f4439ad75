# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each client mount's live state against its host's settings: did the mount take the tuning?

Pure logic on the diagnosis's client views (a mountstats delta and the host's sunrpc.txt).
What a mount runs with is fixed when it is made (docs/nfs-facts.md): nconnect and rsize/wsize
at mount time (a remount ignores them), and a v4.1 session's slots at CREATE_SESSION, asked for
with the nfs module's max_session_slots of that moment. A setting changed after the mount reads
the new value while the mount keeps the old: only a remount takes it.

The kernel exposes no granted session slot count outside debugfs and tracepoints (the lab read
it from the nfs4_sequence_done tracepoint, docs/kernels.md). What mountstats shows is the
highest number of RPC slots each connection had in use (xprt max_slots, a high-water mark): on
v4.1 every request holds a session slot while in flight, so their sum bounds the session's
slots from below - a mount whose connections never held more than a few requests while its
WRITEs queued has a session that small.
"""

from __future__ import annotations

import heapq

from ansible_collections.ckptio.nfs.plugins.module_utils.config import profiles
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals

# A session or slot table this small is an artificial cap (the same bound as client.TINY_SLOT_CAP).
TINY_SLOTS = signals.TINY_SLOT_CAP.threshold
# WRITEs queue at least this long, and this many times longer than on the wire: the host waits
# for slots, not for the path (lab old_mount: 26.8 s queued for 160 ms on the wire with a 2-slot
# session; the tuned client beside it 8.3 s for 2.5 s).
QUEUE_MS_FLOOR = signals.QUEUE_MS_FLOOR.threshold
QUEUE_TO_RTT_FACTOR = signals.MOUNT_QUEUE_TO_RTT.threshold
# Requests in flight on average that a tiny session gives (lab: 1.5-1.9 with 2 session slots).
TINY_IN_FLIGHT = signals.TINY_IN_FLIGHT.threshold


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def requests_in_flight(delta, busy_seconds=None):
    """Average requests on the wire: the summed RTT of every op / the time they ran in (Little's law).

    busy_seconds: the checkpoint's duration when shorter than the statistics window (the requests
    all ran then; averaged over the whole window, idle time would dilute the figure)."""
    seconds = delta.get("interval_seconds") or 0
    if busy_seconds and 0 < busy_seconds < seconds:
        seconds = busy_seconds
    if seconds <= 0:
        return None
    return sum(op["avg_rtt_ms"] * op["ops"] for op in delta["ops"].values()) / (1000.0 * seconds)


def live_state(client, busy_seconds=None):
    """One client's mount as it runs, beside the host's settings."""
    delta = client["delta"]
    write = delta["ops"].get("WRITE") or {}
    slots_seen = sum(delta["rpc"]["max_slots"] or []) or None
    sessions = delta["nfs_version"] not in ("2", "3", "4", "4.0")
    setting = _int(client["sunrpc"].get("max_session_slots" if sessions else "tcp_max_slot_table_entries"))
    return {"host": client["host"], "nfs_version": delta["nfs_version"], "nconnect": delta["nconnect"], "wsize": delta["wsize"],
            "rsize": delta["rsize"], "sessions": sessions, "slot_setting": setting, "slots_in_use_max": slots_seen,
            "requests_in_flight": requests_in_flight(delta, busy_seconds), "write_queue_ms": write.get("avg_queue_ms", 0.0),
            "write_rtt_ms": write.get("avg_rtt_ms", 0.0), "write_exe_ms": write.get("avg_exe_ms", 0.0)}


def _queued(state):
    return state["write_queue_ms"] >= QUEUE_MS_FLOOR and state["write_queue_ms"] >= QUEUE_TO_RTT_FACTOR * state["write_rtt_ms"]


def _peer_tops(states):
    """{nfs_version: (the two largest nconnect, the two largest wsize or 0)} over the mounts of each
    version: the largest of a mount's peers (the other mounts of its version) without a pass over
    them per mount (a pass per missed mount was quadratic: 4,096 mounts that all missed took 13 s)."""
    values = {}
    for state in states:
        nconnects, wsizes = values.setdefault(state["nfs_version"], ([], []))
        nconnects.append(state["nconnect"])
        wsizes.append(state["wsize"] or 0)
    return dict((version, (heapq.nlargest(2, nconnects), heapq.nlargest(2, wsizes))) for version, (nconnects, wsizes) in values.items())


def _largest_of_peers(top_two, own):
    """The largest value of a mount's peers, from the two largest of its version (its own among them
    when it is the largest), or None when it has no peer."""
    if len(top_two) < 2:
        return None
    return top_two[1] if own == top_two[0] else top_two[0]


def _missed(state, peer_tops, wanted):
    """What this mount runs below the tuning its host already has: a list of phrases, empty when it took it.

    The sign is the slots: the host's setting is the profile's (it was tuned, a kernel default of
    64 is not) while the mount averaged no more than a tiny session's requests in flight and its
    WRITEs queued many times longer than they took on the wire - the session (v4.1) or the slot
    table (v3/v4.0) was made before the setting. Its nconnect and wsize below its peers' or the
    profile's are named with it. (xprt max_slots is no measure of it: it is the transport's slot
    table, 128 per connection once tuned, whatever the session granted - lab old_mount.)
    """
    tuned_setting = state["slot_setting"] is not None and state["slot_setting"] >= wanted["slots"][state["sessions"]]
    in_flight = state["requests_in_flight"]
    if not (tuned_setting and in_flight is not None and in_flight <= TINY_IN_FLIGHT and _queued(state)):
        return []
    reasons = ["%.1f requests in flight on average (Little's law over the checkpoint) while WRITEs queued %.0f ms for %.0f ms "
               "on the wire and %s reads %d: the %s was made before the setting" % (
                   in_flight, state["write_queue_ms"], state["write_rtt_ms"],
                   "max_session_slots" if state["sessions"] else "tcp_max_slot_table_entries", state["slot_setting"],
                   "session" if state["sessions"] else "slot table")]
    # The other clients of the same version (nconnect and wsize are ints: mountstats.nconnect, stats_delta's wsize or 0).
    nconnect_tops, wsize_tops = peer_tops[state["nfs_version"]]
    peer_nconnect = _largest_of_peers(nconnect_tops, state["nconnect"])
    best_nconnect = wanted["nconnect"] if peer_nconnect is None else max(peer_nconnect, wanted["nconnect"])
    if state["nconnect"] < best_nconnect:
        reasons.append("nconnect %d where the profile or another client of the server has %d" % (state["nconnect"], best_nconnect))
    peer_wsize = _largest_of_peers(wsize_tops, state["wsize"] or 0)
    best_wsize = 0 if peer_wsize is None else max(peer_wsize, 0)
    if state["wsize"] and state["wsize"] < best_wsize:
        reasons.append("wsize %d KiB where another client of the server negotiated %d KiB" % (state["wsize"] // 1024, best_wsize // 1024))
    return reasons


def assess(evidence, clients, busy_seconds=None, lossy_hosts=()):
    """Per client: live state, whether the mount missed the tuning, and the headroom a remount gives that host.

    Returns {"hosts": {host: state}, "missed": [host...]}; a crossed client_rpc_slots row per missed mount.
    lossy_hosts: the clients whose own path was measured lossy (network_loss.py). Few requests in flight with
    long queues is how a mount made before the tuning looks, and how a lossy path looks too (each lost segment
    holds its requests until TCP repairs it): on a lossy host the measured loss explains it, and no remount is
    inferred (issue 43: lab v43_loss_2pct_one, both mounts tuned, nfs3 named "remount" for its 2 % loss).
    """
    wanted = {"nconnect": profiles.recommended("client", "mount_options", "nconnect"),
              "slots": {True: profiles.recommended("client", "sunrpc", "nfs_max_session_slots"),
                        False: profiles.recommended("client", "sunrpc", "tcp_max_slot_table_entries")}}
    states = [live_state(client, busy_seconds) for client in clients]
    peer_tops = _peer_tops(states)
    missed = []
    for state in states:
        reasons = _missed(state, peer_tops, wanted)
        state["missed_tuning"] = reasons
        # A remount at best stops each WRITE waiting for a slot: exe / (exe - queue) for this host.
        exe, queue = state["write_exe_ms"], state["write_queue_ms"]
        state["headroom"] = round(exe / (exe - queue), 2) if exe > queue > 0 else 1.0
        if reasons and state["host"] in lossy_hosts:
            state["missed_tuning"] = []
            evidence.add("client_rpc_slots", "mount on %s predates the tuning" % state["host"], len(reasons), "0 differences", False,
                         "it looks so (%s), but its path is lossy: the loss holds its requests, not a session made before "
                         "the setting" % reasons[0])
        elif reasons:
            missed.append(state["host"])
            evidence.add("client_rpc_slots", "mount on %s predates the tuning" % state["host"], len(reasons), "0 differences", True,
                         "; ".join(reasons) + "; a remount gives this host up to %.1fx (WRITE exe / (exe - queue))" % state["headroom"])
    return {"hosts": dict((state["host"], state) for state in states), "missed": missed}


def remount_recs(mounts):
    """One "remount HOST" per mount that missed the tuning, with the roles' drain rule."""
    recs = []
    for host in mounts["missed"]:
        state = mounts["hosts"][host]
        recs.append({"layer": "client_rpc_slots", "setting": "remount", "value": None, "host": host,
                     "action": "remount %s: its mount predates the tuning" % host,
                     "how": "drain the node first (client_tuning_apply_policy: when_idle with client_tuning_drain_tasks, e.g. "
                            "tasks/slurm_drain.yml: roles/client_tuning/README.md 'Remount policy in production'), then "
                            "ckptio.nfs.tune_clients --limit %s remounts it with the persisted options" % host,
                     "reason": "; ".join(state["missed_tuning"]) + ": the settings are already tuned, only the live mount is "
                               "not (nconnect, rsize/wsize and session slots are fixed when a mount is made)"})
    return recs
