# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The actions (recommendations), ordered by the layer they act on; values only from config/profiles.py.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human
from ansible_collections.ckptio.nfs.plugins.module_utils.config import profiles
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import network_loss
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import pace_host
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import mount_state
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import metadata_storm
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import slot_table
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.headline import NO_TARGET_SAVED, NO_TARGET_TEXT
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.run import int_setting


_REARCHITECT = (
    ("file_per_rank", "write one file per rank (PyTorch DCP FileSystemWriter / a distributed checkpoint format) instead of one shared file"),
    ("parallel_fs_or_object_store", "move checkpoints to a parallel file system or object store (Lustre, GPFS, DAOS, S3)"),
    ("more_servers_or_pnfs", "spread checkpoints over several NFS servers or use pNFS so no single server path carries it all"),
    ("async_or_burst_buffer", "checkpoint asynchronously, or to a local NVMe burst buffer drained to NFS in the background"),
)


_REARCHITECT_ACTIONS = {
    "file_per_rank": "one file per rank instead of one shared file (e.g. PyTorch DCP FileSystemWriter)",
    "parallel_fs_or_object_store": "a parallel file system or object store (Lustre, GPFS, DAOS, S3)",
    "more_servers_or_pnfs": "several NFS servers or pNFS, so no single server path carries it all",
    "async_or_burst_buffer": "asynchronous checkpoints, or a local NVMe burst buffer drained to NFS",
}


def _threads_shrink_slots_note(facts):
    """Only where this kernel ties a v4.1 session's slots to the thread count (kernels.py)."""
    grant = facts["session_grant"]
    if not facts["sessions"] or grant["rule"] == "dynamic":
        return ""
    return "; note that more threads can shrink the session slots a new v4.1 session is granted (%s)" % grant["text"]


# Where the recommendations of layers outside the ranking go: the target or window first (nothing
# else is decided without it), then the ranked layers, then measuring the network, then the rest.
_FIRST_RECS = ("target", "window")


_LAST_RECS = ("network_measure", "access_pattern", "architecture")


def recommend(limiting, contributing, verdict, facts):
    """Every recommendation, ordered by the layer it acts on: the limiting layer's first (CONTRACT 3's actions)."""
    layers = [limiting] + list(contributing)
    recs = _frame_recs(verdict, facts)
    if "network" in layers and facts["network"].get("lossy"):
        recs += network_loss.recommendations(facts["network"]["loss"])
    elif "network" in layers and facts["network"]["full"]:
        # A full path of the hosts that set the pace is theirs to repair: wider links everywhere are not the fix (issue 43).
        host_scoped = limiting == "network" and facts["scope"]["kind"] == "host"
        recs += _slow_path_recs(facts) + ([] if host_scoped else _network_recs(facts))
    recs += mount_state.remount_recs(facts["mounts"])
    if "client_rpc_slots" in layers:
        recs += _client_slots_recs(facts)
    recs += _mount_recs(layers, limiting, facts)
    if "server_threads" in layers:
        recs += _threads_recs(layers, facts)
    recs += _cpu_recs(layers)
    if facts["reconnects"]:
        recs.append(_reconnects_rec(facts))
    if facts["network"]["state"] in ("unmeasured", "partial") and verdict != "meets_target":
        recs.append({"layer": "network_measure", "setting": "measure the network", "value": None,
                     "action": "measure the network: ckptio.nfs.validate_checkpoint -e canary_validation_probe=true",
                     "how": "run ckptio.nfs.validate_checkpoint with -e canary_validation_probe=true (iperf3 over the NFS "
                            "path, streams = nconnect), or give network.server_link_gbps / client_link_gbps in context.yml",
                     "reason": "%s; without it the network can be neither named nor ruled out" % facts["network"]["summary"]})
    recs += _architecture_recs(limiting, verdict, facts)
    if facts["storm"]["storm"] and "access_pattern" in layers:
        recs.append(metadata_storm.shape_rec(facts["storm"], facts["canary"]))
        recs.append(metadata_storm.drain_rec(facts["storm"]))
        if limiting == "access_pattern":
            # The shape is the fix; a parallel file system or more servers would meet the same round trips.
            recs = [rec for rec in recs if rec["layer"] != "architecture"]
    if limiting == "network" and facts["network"].get("lossy"):
        # Throughput lost to loss: no slot or thread tuning is offered beside the repair (issue 26).
        recs = [rec for rec in recs if rec["layer"] not in ("client_rpc_slots", "server_threads", "architecture")]
    order = list(_FIRST_RECS) + layers
    return sorted(recs, key=lambda rec: order.index(rec["layer"]) if rec["layer"] in order else
                  len(order) + (_LAST_RECS.index(rec["layer"]) if rec["layer"] in _LAST_RECS else -1))


def _frame_recs(verdict, facts):
    """What must come before any tuning: a target to judge against, a window to judge."""
    if verdict == "no_window":
        return [{"layer": "window", "setting": "capture a checkpoint window", "value": None,
                 "action": "capture a checkpoint window: ckptio.nfs.capture, or two snapshots to ckptio.nfs.saved_stats_bundle",
                 "how": "ckptio.nfs.capture around a checkpoint (checkpoint_capture_seconds=N), or save mountstats before and "
                        "after one checkpoint and give both files to ckptio.nfs.saved_stats_bundle",
                 "reason": "one mountstats snapshot is an average since the mount: idle time and every other workload are in it"}]
    if verdict == "no_target" and facts.get("distorted"):
        return [{"layer": "window", "setting": "a window the collector's runs bracket", "value": None,
                 "action": "diagnose a checkpoint whose collector runs lie close to its edges",
                 "how": "give the collector its CPU during checkpoints (or a shorter interval) so that it runs near the "
                        "window's start and end, then bundle that window from Prometheus again",
                 "reason": "; ".join(flag["message"] for flag in facts["distorted"])}]
    if verdict == "no_target":
        return [{"layer": "target", "setting": "the checkpoint target", "value": None,
                 "action": "set ckptio_checkpoint_bytes and ckptio_checkpoint_window_seconds, then validate again",
                 "how": NO_TARGET_TEXT.replace("no target given: set", "set") + NO_TARGET_SAVED,
                 "reason": "without the real checkpoint's size and window no throughput is short or enough"}]
    return []


def _slow_path_recs(facts):
    """A full network whose pace-setting host's own path is measured slower than the other hosts' paths
    (pace_host.slow_path): that path first - wider links everywhere would not make that host end with the others."""
    recs = []
    for item in facts["pace"]["pace"]:
        path = pace_host.slow_path(item["host"], facts["pace"], facts["pace_facts"])
        if path is None:
            continue
        recs.append({"layer": "network", "setting": "%s's network path" % item["host"], "value": None, "host": item["host"],
                     "action": "%s's network path: its %s is %s against %s on the other hosts" % (
                         item["host"], path["label"], human.rate(path["bytes_per_second"]), human.rate(path["others_bytes_per_second"])),
                     "how": "on that host: its link speed and duplex (ethtool), shaping or QoS on its interface (tc qdisc show), "
                            "its switch port and cable; then measure again (canary_validation_probe=true)",
                     "reason": "%s set the pace (its ranks ended %.1f s after the median host's) and its own path is the slow one "
                               "(%s): the other hosts' paths had room" % (item["host"], item["lag_seconds"], path["text"])})
    return recs


def _network_recs(facts):
    """A full network: the network's own actions, never nfsd or client tuning first."""
    reason = "the links are measured full (%s): more bandwidth has to come from the network itself" % facts["network"]["headline"]
    return [
        {"layer": "network", "setting": "faster or more links", "value": None,
         "action": "faster or more links on the server and clients, bonded so the flows spread",
         "how": "faster NICs or more links on the server and clients, bonded (LACP, layer3+4 hashing) so the flows spread",
         "reason": reason},
        {"layer": "network", "setting": "nconnect across server addresses", "value": None,
         "action": "nconnect across server addresses: one address per link, the mounts spread over them",
         "how": "give the server one address per link and spread the clients' mounts (nconnect connections) over them",
         "reason": "nconnect's connections all go to one address, so one link carries them all"},
        {"layer": "network", "setting": "more servers", "value": None,
         "action": "more servers (or pNFS), so no single server's links carry the checkpoint",
         "how": "spread checkpoints over several NFS servers, or pNFS, so no single server's links carry it all",
         "reason": reason},
    ]


def _slots_rec(facts):
    write = facts["write"]
    if facts["sessions"]:
        slots = profiles.recommended("client", "sunrpc", "nfs_max_session_slots")
        return {"layer": "client_rpc_slots", "setting": "nfs max_session_slots", "value": slots,
                "action": "nfs max_session_slots = %d (ckptio.nfs.tune_clients, profile checkpoint), then remount" % slots,
                "how": "ckptio.nfs.tune_clients (profile checkpoint), or ckptio.nfs.sunrpc_slot_table nfs_max_session_slots=%d; "
                       "then unmount/mount every mount of the server" % slots,
                "reason": "NFSv4.1+ WRITEs waited %s each for a session slot (the server-granted cap on a client's requests "
                          "in flight) with zero transport backlog; tcp_max_slot_table_entries does not apply to v4.1 "
                          "(NFS_CS_INFINITE_SLOTS); %s: check the grant after remounting."
                          % (human.seconds(write["avg_queue_ms"] / 1000.0), facts["session_grant"]["text"])}
    slots = profiles.recommended("client", "sunrpc", "tcp_max_slot_table_entries")
    return {"layer": "client_rpc_slots", "setting": "sunrpc tcp_max_slot_table_entries / tcp_slot_table_entries", "value": slots,
            "action": "sunrpc slot tables = %d (ckptio.nfs.tune_clients, profile checkpoint), then remount" % slots,
            "how": "ckptio.nfs.tune_clients (profile checkpoint), or ckptio.nfs.sunrpc_slot_table tcp_slot_table_entries=%d "
                   "tcp_max_slot_table_entries=%d; then remount" % (slots, slots),
            "reason": "the transport slot table (requests a connection may have in flight) was the bottleneck (backlog or "
                      "max_slots at the cap %s); %d per connection is what NetApp-class servers accept"
                      % (human.number(facts["slot_cap"]), slots)}


def _client_slots_recs(facts):
    """The client slots' action: the profile's slot setting where a client lacks it; where every client has it, a
    remount (mount_state's, when one is pending) or, on v4.1+, what limits instead - the server's grant."""
    name = "max_session_slots" if facts["sessions"] else "tcp_max_slot_table_entries"
    wanted = profiles.recommended("client", "sunrpc", "nfs_max_session_slots" if facts["sessions"] else "tcp_max_slot_table_entries")
    values = [int_setting(client["sunrpc"], name) for client in facts["clients"]]
    if not all(value is not None and value >= wanted for value in values):
        return [_slots_rec(facts)]
    if facts["mounts"]["missed"] or not facts["sessions"]:
        return []
    return [_grant_rec(facts, min(values))]


# What raises a server's session grant, by its kernel's rule (kernel_text/kernels.session_slot_grant).
_GRANT_HOW = {
    "fixed": "on the server: fewer nfsd threads or more memory raise what it grants a new session",
    "dynamic": "on the server: more memory for nfsd's reply cache lets a session's slots grow further",
}


def _grant_rec(facts, requested):
    """The clients request the profile's session slots (requested, the least of them): what caps the session then is the
    server's grant (rpc_latency.txt's nfs4_sequence_done, slot_table.server_grant), named from the figures."""
    seen = [(client["host"], slot_table.server_grant(client.get("slot_table"))) for client in facts["clients"]]
    seen = [(host, grant) for host, grant in seen if grant is not None]
    rec = {"layer": "client_rpc_slots", "setting": "the server's session slot grant"}
    if not seen:
        return dict(rec, value=None,
                    action="the clients already request %d session slots: see what the server grants (rpc_sampling=trace)" % requested,
                    how="ckptio.nfs.validate_checkpoint -e canary_validation_rpc_sampling=trace (nfs4_sequence_done's "
                        "highest_slotid is the grant); then raise it on the server",
                    reason="nfs max_session_slots is already %d on every client, so requesting more changes nothing; the "
                           "server grants a new session %s" % (requested, facts["session_grant"]["text"]))
    granted = min(grant for _host, grant in seen)
    hosts = ", ".join("%s %d" % (host, grant) for host, grant in seen)
    if granted >= requested:
        return dict(rec, value=granted,
                    action="the session has the %d slots the clients request: more sessions (clients, servers), not more slots"
                           % granted,
                    how="spread the checkpoint over more clients or NFS servers (each client-server pair has one session)",
                    reason="the clients request nfs max_session_slots %d and the server granted %s (nfs4_sequence_done "
                           "highest_slotid + 1): the table is as large as asked" % (requested, hosts))
    return dict(rec, value=granted,
                action="the server granted %d session slots (the clients request %d): raise the server's grant, then remount"
                       % (granted, requested),
                how="%s (%s); then unmount/mount the clients' mounts (a new session gets a new grant)"
                    % (_GRANT_HOW.get(facts["session_grant"]["rule"], _GRANT_HOW["fixed"]), facts["session_grant"]["text"]),
                reason="the clients already request nfs max_session_slots %d, but the server granted %s (nfs4_sequence_done "
                       "highest_slotid + 1): requesting more changes nothing" % (requested, hosts))


def _mount_recs(layers, limiting, facts):
    """nconnect and wsize per client, at the checkpoint profile's values (a mount that missed the tuning is remounted instead)."""
    recs = []
    nconnect = profiles.recommended("client", "mount_options", "nconnect")
    wsize = profiles.recommended("client", "mount_options", "wsize")
    # A set: with every mount missed, a search of the list per client was quadratic (4,096 clients: 0.5 s, 16,384: ~8 s).
    missed = set(facts["mounts"]["missed"])
    for client in facts["clients"]:
        delta = client["delta"]
        if client["host"] in missed:
            continue
        if ("client_rpc_slots" in layers or "network" in layers) and delta["nconnect"] < nconnect and delta["proto"] != "udp":
            recs.append({"layer": "client_rpc_slots", "setting": "nconnect", "value": nconnect, "host": client["host"],
                         "action": "nconnect = %d (ckptio.nfs.tune_clients, profile checkpoint), at the next mount" % nconnect,
                         "how": "ckptio.nfs.tune_clients (profile checkpoint), or ckptio.nfs.nfs_mount opts.nconnect=%d "
                                "(needs every mount of that server unmounted)" % nconnect,
                         "reason": "nconnect=%d: one TCP connection carries every request; vendors measure ~3x write throughput "
                                   "with nconnect=4 (Azure Files), best at 8 (Azure NetApp Files)" % delta["nconnect"]})
        if delta["wsize"] and delta["wsize"] < wsize and limiting != "none":
            recs.append({"layer": "client_rpc_slots", "setting": "wsize", "value": wsize, "host": client["host"],
                         "value_text": "%d KiB" % (wsize // 1024), "action": "wsize = %d KiB (ckptio.nfs.tune_clients), if the "
                         "server's max_block_size allows it" % (wsize // 1024),
                         "how": "ckptio.nfs.nfs_mount opts.wsize=%d (server max_block_size must allow it; set it before nfsd "
                                "starts)" % wsize,
                         "reason": "wsize=%d: each slot carries %s per WRITE; %s moves %dx more per request in flight" % (
                             delta["wsize"], human.size(delta["wsize"]), human.size(wsize), wsize // delta["wsize"])})
    return recs


def _threads_recs(layers, facts):
    profile_threads = profiles.recommended("server", "threads")
    recs = []
    for server in facts["servers"]:
        threads = server["threads"]
        value = profile_threads if threads is None or threads < profile_threads else 2 * threads
        recs.append({"layer": "server_threads", "setting": "nfsd threads", "value": value, "host": server["host"],
                     "action": "nfsd threads = %d (ckptio.nfs.tune_servers, profile checkpoint)" % value,
                     "how": "ckptio.nfs.tune_servers (profile checkpoint: %d), or ckptio.nfs.nfsd_threads threads=%d" % (
                         profile_threads, value),
                     "reason": "%s of packets found no idle nfsd thread at %s threads%s%s" % (
                         human.share(facts["no_idle_thread_share"] or 0), human.number(threads), _threads_shrink_slots_note(facts),
                         "; the server's CPUs were busy too: if they are saturated, more threads cannot run"
                         if "server_cpu" in layers else "")})
    return recs


def _cpu_recs(layers):
    recs = []
    if "server_cpu" in layers:
        recs.append({"layer": "server_cpu", "setting": "server CPUs", "value": None,
                     "action": "server CPUs: more or faster cores, or checkpoints spread over several servers",
                     "how": "a server with more (or faster) cores, or spread checkpoints over several servers",
                     "reason": "the server had no idle CPU during the checkpoint (nfsd, TCP softirq and the page cache share it): "
                               "more nfsd threads cannot run without CPU to run on"})
    if "client_cpu" in layers:
        recs.append({"layer": "client_cpu", "setting": "client CPUs", "value": None,
                     "action": "client CPUs: leave CPU to the checkpoint (fewer writers per node, or asynchronous)",
                     "how": "leave CPU to the checkpoint: fewer concurrent writers per node, or checkpoint asynchronously",
                     "reason": "the clients had no idle CPU during the checkpoint (the ranks' copies, RPC work and softirq share it)"})
    return recs


def _reconnects_rec(facts):
    return {"layer": "server_threads", "setting": "nfsd max_connections", "value": None,
            "action": "nfsd max_connections at least clients x nconnect (ckptio.nfs.tune_servers computes it)",
            "how": "ckptio.nfs.nfsd_threads max_connections (server_tuning computes clients x nconnect), and check the "
                   "server log for 'too many open connections'",
            "reason": "%s: nfsd drops the oldest connection above its limit (0 = (threads + 3) x 20), and every "
                      "reconnect retransmits the requests in flight" % _connects_text(facts["reconnects"])}


def _connects_text(churn):
    """What the connect_count rise says, over the window or the mount's life (client.reconnect_evidence)."""
    if churn.since_mount:
        return ("the transports made %d connect(s) since the mount beyond the mount's own (xprt connect_count; a "
                "TCP reconnect adds 2), at some time since the mount, not necessarily during a checkpoint" % churn.connects)
    return "the transports' connect_count rose by %d during the checkpoint (a TCP reconnect adds 2)" % churn.connects


def _architecture_recs(limiting, verdict, facts):
    recs = []
    if not (facts["shared_file"] or verdict == "rearchitect"):
        return recs
    for key, text in _REARCHITECT:
        if key != "file_per_rank" and verdict != "rearchitect":
            continue
        if key == "file_per_rank" and not facts["shared_file"]:
            continue
        if key == "more_servers_or_pnfs" and limiting == "network" and facts["network"]["full"]:
            continue  # already the network's own action
        recs.append({"layer": "access_pattern" if key == "file_per_rank" else "architecture", "setting": key, "value": None,
                     "how": text, "action": _REARCHITECT_ACTIONS[key], "reason": _rearchitect_reason(key, limiting, facts)})
    return recs


def _rearchitect_reason(key, limiting, facts):
    if key == "file_per_rank":
        return "all ranks write one shared file%s" % (
            "; D-state samples show ranks waiting on its write lock (nfs_start_io_write)" if facts["lock_waits"] else "")
    if limiting == "network":
        return "the network path is measured full: tuning the client or nfsd cannot add bandwidth"
    if limiting in ("server_cpu", "client_cpu"):
        return "the %s CPUs are saturated: tuning cannot add CPU" % limiting.split("_")[0]
    return "the gap is larger than tuning the %s layer can close" % limiting
