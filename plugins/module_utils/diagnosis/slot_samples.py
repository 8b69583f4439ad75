# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One client's slot table over the window, from its sunrpc_xprt.txt, rpc_tasks.txt and rpc_latency.txt (issue 47).

Worked out where the client's files are read (diagnosis/client_row.py) and kept in its row as a small JSON-ready
dict (figures.json carries it), so the files are dropped as the other figures' are. Pure: the kernel texts are
read by module_utils/kernel_text/, the mount's transports by stats/mountstats.py.

Which transports and RPC clients are the mount's: a transport whose src_port (xprt_info, 5.15+) is one of the
mount's xprt lines' source ports (mountstats `xprt: tcp SRCPORT ...`), else whose dstaddr section is the mount's
server address (opts addr=); an RPC client (debugfs rpc_clnt/ID) whose server (its `clnt[ADDR:PORT]` line, or its
xprt's info `addr:`) is that address - on NFSv4 one RPC client (and one session) serves every mount of a server, so
its tasks are those mounts' together; a latency whose xprt_id or client id is one of those. When none can be told
apart, every transport or NFS task of the host is counted and the summary says so (`mapped` False, with why).
"""

from __future__ import annotations

import collections
import dataclasses

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import rpc_latency, rpc_tasks, samples, sunrpc_xprt
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import rates
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import iter_mountstats

# The bundle's three files (stats/bundle.py CLIENT_FILES keys) and what each shows.
FILES = {"sunrpc_xprt": "sunrpc_xprt.txt", "rpc_tasks": "rpc_tasks.txt", "rpc_latency": "rpc_latency.txt"}
SHOWS = {"sunrpc_xprt": "the transport slots in use, their cap and the backlog (sysfs xprt_info)",
         "rpc_tasks": "the RPCs waiting for a session slot, to send and for the reply (debugfs tasks)",
         "rpc_latency": "each RPC's backlog, RTT and execute time (sunrpc:rpc_stats_latency)"}
QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))
# At most this many points of the in-use series are kept (a 10-minute window sampled every second is 600).
SERIES_POINTS = 240
NFS_PROGRAM = "nfs"
# A task in one of these queues waits for a slot (a transport's or a session's): rpc_tasks.WAITS_FOR.
SLOT_QUEUES = (rpc_tasks.SESSION_SLOT_QUEUE, rpc_tasks.TRANSPORT_SLOT_QUEUE)


def mount_endpoints(mountstats_text, mount_point):
    """(server address or None, frozenset of the mount's transports' source ports) of the mount's last block."""
    address, ports = None, frozenset()
    for mount in iter_mountstats(mountstats_text or ""):
        if mount.mount_point == mount_point:
            address, ports = endpoints(mount)
    return address, ports


def endpoints(mount):
    """(server address or None, frozenset of its transports' source ports) of one parsed mountstats block."""
    return mount.opts.get("addr"), frozenset(xprt.get("srcport") for xprt in mount.xprt_dicts() if xprt.get("srcport"))


# A client's files parsed once (parse_files), to be mapped to each of its mounts (summarize_parsed). A namedtuple:
# the textfile collector imports this file at every run, and a dataclass costs ~0.4 ms of exec there (a namedtuple
# 0.03 ms, measured with time.process_time on 3.11).
ParsedFiles = collections.namedtuple("ParsedFiles", ["xprt", "tasks", "latency"])


def parse_files(files):
    """ParsedFiles of the files present, or None when none is: the textfile collector parses a host's texts once
    and maps them to every mount."""
    present = dict((key, files.get(key)) for key in FILES if files.get(key) is not None)
    if not present:
        return None
    latency = present.get("rpc_latency")
    return ParsedFiles(xprt=_parse_xprt(present.get("sunrpc_xprt")), tasks=_parse_tasks(present.get("rpc_tasks")),
                       latency=None if latency is None else rpc_latency.parse_trace(latency))


def summarize(files, mount_point, mountstats_text):
    """The client's slot-table summary (a dict, see docs/capture-bundle.md), or None when it has none of the files."""
    parsed = parse_files(files)
    if parsed is None:
        return None
    address, ports = mount_endpoints(mountstats_text, mount_point)
    if address is None:
        # mountstats prints no addr= (and srcport 0) on 6.1: the host sample's NFS server address, when it names one.
        address = _sampled_server(files)
    return summarize_parsed(parsed, address, ports)


def summarize_parsed(parsed, address, ports):
    """summarize() of files parse_files() read, for the mount whose server is address and source ports are ports."""
    summary = {"seen": {}, "not_seen": {}, "server": address}
    xprt = _xprt_summary(parsed.xprt, address, ports, summary)
    tasks = _tasks_summary(parsed.tasks, address, summary)
    summary["transport"] = xprt
    summary["session"] = tasks
    summary["latency"] = _latency_summary(parsed.latency, xprt, tasks, summary)
    summary["full"] = _full_samples(xprt, tasks)
    for part, times in ((xprt, "full_times"), (tasks, "waiter_times")):
        if part:
            part.pop(times)
    for key in FILES:
        summary["seen"].setdefault(key, False)
        if not summary["seen"][key]:
            summary["not_seen"].setdefault(key, "no %s in the bundle" % FILES[key])
    return summary


def _sampled_server(files):
    """The one NFS server address the client's host samples name (host_reader's nfs_server_addresses), else None."""
    for key in ("host_after", "host_before"):
        sample = files.get(key)
        addresses = sample.get("nfs_server_addresses") if isinstance(sample, dict) else None
        if addresses and len(set(addresses)) == 1:
            return str(addresses[0])
    return None


def _not_seen(summary, key, parsed, what):
    """Marks a file seen, or says why not (the sampler's comment, or that it holds no sample)."""
    if what:
        summary["seen"][key] = True
        return
    reason = "; ".join(parsed.comments) if parsed is not None and parsed.comments else "%s holds no sample" % FILES[key]
    summary["not_seen"][key] = reason


def _parse_xprt(text):
    """(parsed samples, [(t, [(XprtInfo, dstaddr)])]) of sunrpc_xprt.txt, or None."""
    if text is None:
        return None
    parsed = samples.parse_samples(text)
    return parsed, [(sample.t, _sample_xprts(sample)) for sample in parsed.samples]


def _xprt_summary(parsed_rows, address, ports, summary):
    if parsed_rows is None:
        return None
    parsed, rows = parsed_rows
    every = [info for _t, infos in rows for info, _addr in infos if not info.closed]
    by_port = ports and any(info.src_port in ports for info in every)
    by_address = address and any(addr == address for _t, infos in rows for _info, addr in infos)
    if by_port:
        mapped, how = True, "by source port (xprt_info src_port = mountstats xprt srcport)"
    elif by_address:
        mapped, how = True, "by server address (dstaddr = the mount's addr=, or the host sample's one NFS server address)"
    else:
        mapped, how = False, "not mappable (no src_port or dstaddr matched the mount's): every transport of the host counted"
    points = []
    ids = set()
    for t, infos in rows:
        kept = [info for info, addr in infos if not info.closed and (
            not mapped or (info.src_port in ports if by_port else addr == address))]
        ids.update(info.xprt_id for info in kept if info.xprt_id is not None)
        if kept:
            points.append(_xprt_point(t, kept))
    _not_seen(summary, "sunrpc_xprt", parsed, points)
    if not points:
        return None
    return {"mapped": mapped, "how": how, "xprt_ids": sorted(ids), "samples": len(points),
            "full_samples": sum(1 for point in points if point["full"]), "full_times": [point["t"] for point in points if point["full"]],
            "peak_in_use": max(point["in_use"] for point in points), "cap": max(point["cap"] for point in points),
            "mean_in_use": _mean([point["in_use"] for point in points]),
            "max_backlog": max(point["backlog"] for point in points), "mean_backlog": _mean([point["backlog"] for point in points]),
            "mean_sending": _mean([point["sending"] for point in points]),
            "mean_pending": _mean([point["pending"] for point in points]),
            "transports": max(point["transports"] for point in points),
            "series": _thinned([[point["t"], point["in_use"], point["cap"], point["backlog"]] for point in points])}


def _sample_xprts(sample):
    """[(XprtInfo, its dstaddr or None)] of one sample's xprt_info sections (a path naming the directory counts)."""
    addresses = dict((path.rsplit("/", 1)[0], text.strip()) for path, text in sample.texts("/dstaddr"))
    states = dict((path.rsplit("/", 1)[0], sunrpc_xprt.parse_xprt_state(text)) for path, text in sample.texts("/xprt_state"))
    found = []
    for path, text in sample.sections:
        if path.endswith(("/dstaddr", "/xprt_state", "/srcaddr", "/xprt_switch_info")):
            continue
        directory = path[:-len("/xprt_info")] if path.endswith("/xprt_info") else path
        info = sunrpc_xprt.parse_xprt_info(text, directory)
        if info is None:
            continue
        if directory in states:
            info = _with_state(info, states[directory])
        found.append((info, addresses.get(directory)))
    return found


def _with_state(info, state):
    return dataclasses.replace(info, state=state)


def _xprt_point(t, infos):
    return {"t": t, "in_use": sum(info.num_reqs or 0 for info in infos), "cap": sum(info.max_num_slots or 0 for info in infos),
            "backlog": sum(info.backlog_q_len or 0 for info in infos), "sending": sum(info.sending_q_len or 0 for info in infos),
            "pending": sum(info.pending_q_len or 0 for info in infos), "full": any(info.full for info in infos),
            "transports": len(infos)}


def _parse_tasks(text):
    """(parsed samples, {RPC client id: server address}, [(t, [(client id, parsed tasks)])]) of rpc_tasks.txt, or None."""
    if text is None:
        return None
    parsed = samples.parse_samples(text)
    clients = {}
    rows = []
    for sample in parsed.samples:
        servers = _client_servers(sample)
        lists = [(_client_of(path), rpc_tasks.parse_tasks(text)) for path, text in sample.texts("/tasks")]
        for client, tasks in lists:
            if tasks.server:
                servers.setdefault(client, rpc_tasks.server_address(tasks.server))
        clients.update(servers)
        rows.append((sample.t, lists))
    return parsed, clients, rows


def _tasks_summary(parsed_rows, address, summary):
    if parsed_rows is None:
        return None
    parsed, clients, rows = parsed_rows
    mine = set(client for client, server in clients.items() if address and server == address)
    mapped = bool(mine)
    how = ("by server address (the RPC client's server = the mount's addr=)" if mapped else
           "not mappable (no RPC client named the mount's server): every NFS task of the host counted")
    points = []
    for t, lists in rows:
        tasks = [task for client, task_list in lists if not mapped or client in mine for task in task_list.tasks
                 if task.program == NFS_PROGRAM]
        points.append(_task_point(t, tasks))
    _not_seen(summary, "rpc_tasks", parsed, rows)
    if not points:
        return None
    writes = dict((queue, sum(point["write_queues"].get(queue, 0) for point in points)) for queue in
                  sorted(set(queue for point in points for queue in point["write_queues"])))
    return {"mapped": mapped, "how": how, "client_ids": sorted(_client_number(client) for client in mine),
            "samples": len(points), "waiter_samples": sum(1 for point in points if point["session_waiters"]),
            # a task waiting for either slot (session or transport) means that table was full then
            "waiter_times": [point["t"] for point in points if point["session_waiters"] or point["transport_waiters"]],
            "max_waiters": max(point["session_waiters"] for point in points),
            "mean_waiters": _mean([point["session_waiters"] for point in points]),
            "max_transport_waiters": max(point["transport_waiters"] for point in points),
            "peak_in_use": max(point["holding"] for point in points),
            "mean_in_use": _mean([point["holding"] for point in points]),
            "write_queues": writes, "write_split": _split(writes)}


def _client_servers(sample):
    """{rpc_clnt id: server address} from a sample's rpc_clnt/ID/info or rpc_clnt/ID/xprt/info sections."""
    servers = {}
    for path, text in sample.texts("/info"):
        info = rpc_tasks.parse_xprt_debugfs_info(text)
        if info.get("addr"):
            servers[_client_of(path)] = info["addr"]
    return servers


def _client_of(path):
    """The rpc_clnt id of a debugfs path (rpc_clnt/4/tasks -> '4'), else the path."""
    parts = path.split("/")
    return parts[parts.index("rpc_clnt") + 1] if "rpc_clnt" in parts and parts.index("rpc_clnt") + 1 < len(parts) else path


def _client_number(client):
    """debugfs names an RPC client by its id in hex (rpc_clnt_debugfs_register, "%x")."""
    try:
        return int(client, 16)
    except ValueError:
        return client


def _task_point(t, tasks):
    counts = {}
    write_queues = {}
    holding = 0
    for task in tasks:
        counts[task.queue] = counts.get(task.queue, 0) + 1
        if task.procedure == "WRITE":
            write_queues[task.queue] = write_queues.get(task.queue, 0) + 1
        # A task with an xid has its transport slot, and on NFSv4.1 its session slot before it (rpc_call_prepare
        # takes the session slot, call_reserve the transport's after it).
        if task.xid and task.queue not in SLOT_QUEUES:
            holding += 1
    return {"t": t, "session_waiters": counts.get(rpc_tasks.SESSION_SLOT_QUEUE, 0),
            "transport_waiters": counts.get(rpc_tasks.TRANSPORT_SLOT_QUEUE, 0), "holding": holding,
            "write_queues": write_queues}


def _split(queues):
    """The shares of sampled WRITE tasks waiting for a slot, to send, for the reply and otherwise (Little's law: a
    queue's share of the samples is its share of a WRITE's time)."""
    total = sum(queues.values())
    if not total:
        return None
    slot = sum(queues.get(queue, 0) for queue in SLOT_QUEUES)
    send = queues.get(rpc_tasks.SENDING_QUEUE, 0)
    reply = queues.get(rpc_tasks.PENDING_QUEUE, 0)
    return {"slot": slot / total, "send": send / total, "reply": reply / total,
            "other": (total - slot - send - reply) / total, "observations": total}


def _latency_summary(trace, xprt, tasks, summary):
    if trace is None:
        return None
    events = [event for event in trace.latencies if event.program == NFS_PROGRAM]
    xprt_ids = set((xprt or {}).get("xprt_ids") or []) if (xprt or {}).get("mapped") else set()
    client_ids = set((tasks or {}).get("client_ids") or []) if (tasks or {}).get("mapped") else set()
    by_xprt = bool(xprt_ids) and any(event.xprt_id is not None for event in events)
    if by_xprt or client_ids:
        # xprt_id (6.9+) names the transport; before it, the RPC client id is all a line carries
        kept = [event for event in events if (event.xprt_id in xprt_ids if by_xprt else event.client_id in client_ids)]
        mapped, how = True, "by transport id or RPC client id (the mount's transports and RPC clients above)"
    else:
        kept = events
        mapped, how = False, "not mappable (no transport or RPC client of the mount known): every NFS RPC of the host counted"
    summary["seen"]["rpc_latency"] = bool(trace.latencies or trace.sequences)
    if not summary["seen"]["rpc_latency"]:
        summary["not_seen"]["rpc_latency"] = "rpc_latency.txt holds no rpc_stats_latency or nfs4_sequence_done line"
    if not kept and not trace.sequences:
        return None
    by_op = {}
    for event in kept:
        by_op.setdefault(event.procedure, []).append(event)
    by_transport = {}
    for event in kept:
        if event.xprt_id is not None:
            by_transport.setdefault(str(event.xprt_id), []).append(event)
    session_slots = max((sequence.highest_slotid for sequence in trace.sequences), default=None)
    write = by_op.get("WRITE") or []
    return {"mapped": mapped, "how": how, "events": len(kept), "truncated": trace.truncated,
            "by_op": dict((op, _percentiles(items)) for op, items in sorted(by_op.items())),
            "by_transport": dict((xprt_id, _percentiles(items)) for xprt_id, items in sorted(by_transport.items())),
            "write_split": _time_split(write),
            "session_slots": session_slots + 1 if session_slots is not None else None}


def _percentiles(events):
    figures = {"count": len(events)}
    for name in ("backlog", "rtt", "execute"):
        values = sorted(getattr(event, name + "_us") for event in events)
        figures[name] = dict((label, rates.nearest_rank(values, share)) for label, share in QUANTILES)
        figures[name]["mean"] = _mean(values)
    return figures


def _time_split(events):
    """A WRITE's time, summed over the WRITEs: before transmission (slots and socket), waiting for the reply, the rest."""
    execute = sum(event.execute_us for event in events)
    if not execute:
        return None
    backlog = sum(event.backlog_us for event in events)
    rtt = sum(event.rtt_us for event in events)
    return {"queue": backlog / execute, "reply": rtt / execute, "other": max(0, execute - backlog - rtt) / execute,
            "writes": len(events)}


def _full_samples(xprt, tasks):
    """{samples, full, share, times}: the samples (by time) where the mount's transport table was full or an RPC waited
    for a session slot, over the samples either file holds."""
    full = set((xprt or {}).get("full_times") or []) | set((tasks or {}).get("waiter_times") or [])
    count = max((xprt or {}).get("samples") or 0, (tasks or {}).get("samples") or 0)
    if not count:
        return None
    return {"samples": count, "full": min(count, len(full)), "share": min(count, len(full)) / count}


def _mean(values):
    return sum(values) / len(values) if values else None


def _thinned(points):
    if len(points) <= SERIES_POINTS:
        return points
    step = len(points) / float(SERIES_POINTS)
    return [points[int(index * step)] for index in range(SERIES_POINTS)]
