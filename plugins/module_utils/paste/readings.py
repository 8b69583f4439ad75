# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one pasted file shows: its evidence rows, the layers it speaks for and the layers it points at. Pure.

read_file(name, text) cleans the layout (layout.clean), tells the kind (recognise.kind_of),
parses it with that format's one parser and reads it against the thresholds (thresholds.py).
A reading is a dict:
    {"file", "kind", "taken_for", "can_show", "window", "layers", "evidence": [diagnosis evidence rows],
     "suspects": [{"layer", "weight", "why", "alternatives"}], "notes": [...], "repairs": [...],
     "tells_nothing": None or why}
weight 2: a signal crossed its threshold; 1: consistent with the layer, not decisive alone.
partial.py weighs the readings of every file together.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import kernel_log, layout, mountstats_report, nfsiostat, nfsstat_mounts
from ansible_collections.ckptio.nfs.plugins.module_utils.paste import hangs, more_kinds, recognise
from ansible_collections.ckptio.nfs.plugins.module_utils.paste import thresholds as limits
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.run import METADATA_OPS
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import iter_mountstats, parse_mount_lines
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.nfsd_stats import (
    NFS3_PROCS,
    nfsd_text_from_nfsstat,
    nfsstat_tables,
    parse_nfsd_stats,
    parse_pool_stats,
)
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.stats_delta import NEGATIVE_PRINTED, nfsd_delta, pool_stats_delta

CAN_SHOW = {
    "mountstats": "per op queue vs RTT vs execute, transport slots in use per send against max_slots, backlog, "
                  "sending/pending per send, retransmissions, reconnects and the mount options (since the mount; two "
                  "snapshots make a bundle with a window)",
    "mountstats_lines": "the lines pasted: mount options (opts:), transport slots, backlog and reconnects (xprt:), "
                        "per-op times (op lines), each since the mount",
    "nfsiostat": "per op rates over its interval: ops/s, kB/s, retransmissions, avg RTT and execute (and avg queue "
                 "where printed): queue time against RTT",
    "mountstats_report": "per op ops, retransmissions, major timeouts, backlog wait (queue), RTT and execute time; "
                         "the average backlog queue length",
    "nfsstat_client": "the op mix (data vs metadata share) and retransmissions of every mount of the client, since boot",
    "nfsstat_mounts": "each mount's options: vers (which slots cap it), proto, nconnect, rsize/wsize; no figure",
    "rpc_nfs": "the client's RPC calls and retransmissions and its NFSv3 op mix, since boot (what nfsstat -c reads)",
    "nfsstat_server": "the op mix, bad calls and bytes of the server, since boot (two make a difference, no rate)",
    "nfsd": "the op mix, bytes, bad calls and reply cache since boot; on kernels before 2.6.29 the th line's busy-thread "
            "histogram (nfsd threads)",
    "pool_stats": "packets that found no idle nfsd thread, since nfsd started",
    "kernel_log": "what blocked tasks waited on and for how long, server outages, RPC timeouts, NFSv4 state recovery, "
                  "stale file handles",
    "empty": "nothing",
    "unknown": "nothing",
}
DATA_OPS = ("READ", "WRITE", "COMMIT")
# nfsstat prints some v4 ops cut to 9 characters (open_noat, open_conf, open_dgrd): the same metadata ops.
_META = frozenset(METADATA_OPS + ("OPEN_NOAT", "OPEN_CONF", "OPEN_DGRD", "OPEN_CONFIRM", "OPEN_DOWNGRADE", "LOOKUPP",
                                  "LOOKUP_ROOT", "STATFS", "READLINK", "RMDIR", "MKNOD", "DELEGRETURN"))


def read_file(name, text):
    """The reading of one file (see the module docstring); never raises on any text.

    A statistics kind (recognise.kind_of) is read by its parser; a kernel log and a text of no statistics kind are
    also read by every reader of more_kinds.py that finds a line of its own in it (kernel messages, training logs,
    captures, disk and server statistics, benchmarks, configuration), so a journal holding a kernel message, a
    mount line and a training step is read for all three (issue 44)."""
    cleaned = layout.clean(text)
    kind = recognise.kind_of(cleaned.text)
    found = more_kinds.TextReading(cleaned.text) if kind in ("unknown", "kernel_log") else None
    extra = found.kinds if found else []
    if kind == "unknown" and extra:
        kind = extra[0]
    taken_for = recognise.KINDS.get(kind) or more_kinds.TAKEN_FOR[kind]
    reading = {"file": name, "kind": kind, "taken_for": taken_for, "can_show": CAN_SHOW.get(kind) or more_kinds.CAN_SHOW[kind],
               "window": None, "layers": [], "evidence": [], "suspects": [], "notes": [], "repairs": list(cleaned.repairs),
               "tells_nothing": None, "text": cleaned.text, "faults": [], "also": [item for item in extra if item != kind],
               "training": None}
    try:
        _READERS.get(kind, _nothing if kind in ("empty", "unknown") else _no_statistics)(reading, cleaned.text)
        for other in extra:
            add_findings(reading, found.findings(other, kernel_log_read=reading["kind"] == "kernel_log"))
        if more_kinds.training_log.KIND in extra:
            reading["training"] = found.training
            reading["window"] = reading["window"] or "the training log's checkpoint saves"
    except (ValueError, TypeError, KeyError, IndexError, ZeroDivisionError, OverflowError) as exc:
        # A file that looks like a kind but breaks its format (a table printed twice, junk in a
        # column) is named, never a traceback.
        reading["tells_nothing"] = "recognised as %s, but it cannot be read: %s" % (reading["taken_for"], exc)
    if reading["also"]:
        reading["notes"].append("also read in it: %s" % "; ".join(more_kinds.TAKEN_FOR[item] for item in reading["also"]))
    if not reading["evidence"] and not reading["notes"] and not reading["faults"]:
        _nfs_kernel_lines_read(reading, cleaned.text)
    if not reading["evidence"] and not reading["notes"] and not reading["faults"] and reading["tells_nothing"] is None:
        reading["tells_nothing"] = "recognised as %s, but it holds no figure this can read" % reading["taken_for"]
    return reading


def _nfs_kernel_lines_read(reading, text):
    """A text that holds NFS kernel lines is never refused (issue 44): what nothing else read of it is said as such -
    how many, which, and that no catalogued message or hang report explains them - so its partial diagnosis still
    lists the captures that would tell more. Why it could not be read otherwise is kept beside."""
    lines = more_kinds.kernel_catalogue.nfs_kernel_lines(text)
    if not lines:
        return
    why = reading["tells_nothing"] if reading["kind"] not in ("unknown", "empty") else None
    reading["notes"].append("%d NFS kernel line(s) (stack frames in NFS or sunrpc modules, NFS or RPC messages) that no "
                            "catalogued message or hang report explains: read, no figure in them%s; first, line %d: %s" % (
                                len(lines), " (%s)" % why if why else "", lines[0][0], lines[0][1].strip()[:160]))
    reading["tells_nothing"] = None


def _no_statistics(_reading, _text):
    """A kind of more_kinds.py: its findings are added by read_file."""


def unread(name, kind, reason):
    """The reading of a file that could not be read at all (refused: a link, a FIFO, over the cap; or unreadable)."""
    return {"file": name, "kind": kind, "taken_for": "a file not read (%s)" % kind, "can_show": "nothing", "window": None,
            "layers": [], "evidence": [], "suspects": [], "notes": [], "repairs": [], "tells_nothing": reason, "text": "",
            "faults": []}


def _nothing(reading, text):
    reading["tells_nothing"] = {"empty": "the file is empty", "unknown": (
        "not a kind recognised by content: /proc/self/mountstats (whole, one mount or its opts:/xprt: lines), "
        "nfsiostat, the mountstats command, nfsstat -c/-s, /proc/net/rpc/nfsd, pool_stats, a kernel log or NFS kernel "
        "message, a training log, a packet capture, disk or server statistics, a benchmark's output, mount options or "
        "configuration%s" % _nfs_lines_skipped(text))}[reading["kind"]]


def _nfs_lines_skipped(text):
    """What was skipped: the lines that name NFS or RPC although no reader took them (issue 44: say why, per file)."""
    lines = [line.strip() for line in text.split("\n")[:100000] if "nfs" in line.lower()[:4096] or "rpc" in line.lower()[:4096]]
    if not lines:
        return ""
    return "; %d line(s) name NFS or RPC but none is a message, figure or setting read here (first: %s)" % (
        len(lines), lines[0][:160])


def _row(reading, layer, signal, value, threshold, crossed, explanation):
    reading["evidence"].append({"layer": layer, "signal": signal, "value": round(value, 4) if isinstance(value, float) else value,
                                "threshold": threshold, "crossed": bool(crossed),
                                "explanation": "%s (%s): %s" % (reading["file"], reading["taken_for"], explanation)})
    return bool(crossed)


def _suspect(reading, layer, weight, why, alternatives=()):
    reading["suspects"].append({"layer": layer, "weight": weight, "why": "%s: %s" % (reading["file"], why),
                                "alternatives": list(alternatives), "kind": reading["kind"]})


def add_findings(reading, findings):
    """A reader's findings (paste/*.py read(): {"layer", "fault", "signal", "value", "threshold", "crossed", "weight",
    "explanation", "line"}) as this reading's evidence rows, suspects and faults: one mapping for every pasted kind."""
    for finding in findings:
        layer, fault = finding.get("layer"), finding.get("fault")
        where = "line %s: " % finding["line"] if finding.get("line") else ""
        if layer:
            _speaks_for(reading, layer)
        _row(reading, layer, finding["signal"], finding.get("value"), finding.get("threshold") or "-", finding.get("crossed"),
             where + finding["explanation"])
        if layer and finding.get("weight"):
            _suspect(reading, layer, finding["weight"], "%s%s" % (where, finding["explanation"]))
        if fault:
            add_fault(reading, fault, where + finding["explanation"])


def add_fault(reading, fault, rests_on):
    """A hang, a known bug, a misconfiguration or a broken path: named once per reading, with what it rests on."""
    for known in reading["faults"]:
        if known["name"] == fault["name"]:
            if len(known["rests_on"]) < 3:
                known["rests_on"].append("%s: %s" % (reading["file"], rests_on))
            return
    reading["faults"].append(dict(fault, kind=more_kinds.fault_kind(fault), rests_on=["%s: %s" % (reading["file"], rests_on)]))


def _speaks_for(reading, *layers):
    for layer in layers:
        if layer not in reading["layers"]:
            reading["layers"].append(layer)


# ---------------------------------------------------------------- per-op times: nfsiostat, mountstats command, raw

def read_op(reading, where, name, op, version=None, backlog=None):
    """Queue vs RTT vs execute and retransmissions of one op: {"ops", "avg_rtt_ms", "avg_exe_ms", "avg_queue_ms" or None,
    "retrans" (count), "ops_count"}; version/backlog say which slots a dominating queue points at."""
    rtt, exe = op.get("avg_rtt_ms"), op.get("avg_exe_ms")
    if rtt is None or exe is None or not op.get("ops"):
        return
    queue = op.get("avg_queue_ms")
    queue = max(0.0, exe - rtt) if queue is None else queue
    label = "%s %s" % (where, name) if where else name
    if max(rtt, exe, queue) * op["ops"] >= NEGATIVE_PRINTED:
        # The op's time summed to a negative kernel value printed unsigned (stats_delta.NEGATIVE_PRINTED).
        reading["notes"].append("%s: times not read - their sum is a negative kernel value printed unsigned "
                                "(%s ms per op)" % (label, human.number(max(rtt, exe, queue))))
        return
    _speaks_for(reading, "client_rpc_slots")
    crossed = _row(reading, "client_rpc_slots", "%s queue time (exe - RTT) against RTT" % label, queue,
                   ">= %.1fx RTT and >= %s ms" % (limits.QUEUE_TO_RTT_LIMIT, human.number(limits.QUEUE_MS_FLOOR)),
                   signals.queue_dominates(queue, rtt),
                   "%s waited %s for a slot vs %s on the wire (exe %s)" % (
                       name, _ms(queue), _ms(rtt), _ms(exe)))
    if crossed:
        _suspect(reading, "client_rpc_slots", 2, "%s queue time %s dominates its RTT %s: the client's RPC concurrency "
                 "(%s) held requests back" % (label, _ms(queue), _ms(rtt), slots_in_play(version, backlog)))
    elif rtt >= limits.RTT_HIGH_MS:
        _speaks_for(reading, "network", "server_storage")
        _row(reading, "server_storage", "%s RTT with little queueing" % label, rtt, ">= %s ms" % human.number(limits.RTT_HIGH_MS),
             True, "the wait is on the wire or in the server: %s RTT, %s queue" % (_ms(rtt), _ms(queue)))
        _suspect(reading, "server_storage", 1, "%s RTT %s with a queue of %s: the path or the server is slow" % (
            label, _ms(rtt), _ms(queue)), alternatives=("network", "server_threads", "server_cpu"))
    _retrans(reading, label, op.get("retrans"), op.get("ops_count"))


def _retrans(reading, label, retrans, ops):
    if retrans is None or not ops:
        return
    _speaks_for(reading, "network")
    share = float(retrans) / ops
    if _row(reading, "network", "%s retransmissions per op" % label, share, ">= %s" % human.share(limits.RETRANS_SHARE_LIMIT),
            share >= limits.RETRANS_SHARE_LIMIT, "%s of %s ops retransmitted (over TCP only after a timeout or a "
            "reconnect)" % (human.number(retrans), human.number(ops))):
        _suspect(reading, "network", 2, "%s: %s of ops retransmitted: requests or replies are lost" % (label, human.share(share)),
                 alternatives=("server_cpu",))


def slots_in_play(version, backlog):
    """Which cap a dominating queue points at, from the NFS version and the transport backlog."""
    if version and version.startswith("4.") and version != "4.0":
        if backlog:
            return "NFSv%s: session slots and a transport backlog both seen" % version
        return "NFSv%s with no transport backlog: the session slots the server grants" % version
    if version:
        return "NFSv%s: the transport's RPC slot table (sunrpc tcp_slot_table_entries)" % version
    return "session slots on NFSv4.1+, the transport slot table on v3/v4.0: the paste names no version"


def _ms(value):
    return human.seconds(value / 1000.0) if value is not None else human.UNMEASURED


def _read_nfsiostat(reading, text):
    reports = nfsiostat.parse(text)
    if not reports:
        reading["tells_nothing"] = "an nfsiostat header without an op's figures"
        return
    last = {}
    for report in reports:
        last[report["mount_point"]] = report
    repeated = len(reports) > len(last)
    reading["window"] = "nfsiostat's interval" if repeated else "nfsiostat's interval, or since the mount (a run's first report)"
    if repeated:
        reading["notes"].append("%d reports of %d mount(s): each mount's last is read (a run's first is the since-mount "
                                "average)" % (len(reports), len(last)))
    for report in reports:
        reading["notes"] += ["%s: %s (a negative figure is no nfsiostat output)" % (report["mount_point"] or "the mount", refused)
                             for refused in report.get("refused") or []]
    for report in last.values():
        for name, op in sorted(report["ops"].items()):
            figures = dict(op, ops=op["ops_per_second"], ops_count=op["ops_per_second"])
            read_op(reading, report["mount_point"], name.upper(), figures)
        if report["rpc_backlog"]:
            reading["notes"].append("rpc bklog %s on %s (nfsiostat's backlog per send per second)" % (
                human.number(report["rpc_backlog"]), report["mount_point"] or "the mount"))


def _read_mountstats_report(reading, text):
    mounts = mountstats_report.parse(text)
    if not mounts:
        reading["tells_nothing"] = "the mountstats command's titles without an op's figures"
        return
    reading["window"] = "since the mount, or between the two files given with -S"
    for mount in mounts:
        version = _version(mount["options"])
        backlog = mount["average_backlog"]
        if backlog is not None:
            _speaks_for(reading, "client_rpc_slots")
            if _row(reading, "client_rpc_slots", "%s average backlog queue length" % (mount["mount_point"] or "mount"), backlog,
                    ">= %s" % human.number(limits.BACKLOG_PER_SEND_LIMIT), backlog >= limits.BACKLOG_PER_SEND_LIMIT,
                    "requests waiting for a transport slot per send"):
                _suspect(reading, "client_rpc_slots", 2, "%s requests wait for a transport slot per send: the RPC slot "
                         "table is full" % human.number(backlog))
        if mount["options"]:
            reading["notes"].append(options_note(mount["mount_point"], mount["options"]))
        for name in _ops_in_order(mount["ops"]):
            op = mount["ops"][name]
            read_op(reading, mount["mount_point"], name, dict(op, ops_count=op["ops"]), version, backlog)
            if op["major_timeouts"]:
                # A major timeout: every retransmission of the request timed out (nfs(5) retrans), "server not responding".
                _row(reading, "network", "%s %s major timeouts" % (mount["mount_point"] or "mount", name), op["major_timeouts"], "0",
                     True, "requests whose every retransmission timed out: the server did not answer")
                _suspect(reading, "network", 1, "%s %s: %d major timeout(s)" % (mount["mount_point"] or "mount", name, op["major_timeouts"]),
                         alternatives=("server_cpu", "server_threads"))


def _ops_in_order(ops):
    return [name for name in DATA_OPS if name in ops]


def _version(options):
    vers = options.get("vers")
    if vers == "4" and options.get("minorversion"):
        return "4.%s" % options["minorversion"]
    return vers


def options_note(mount_point, options):
    shown = ", ".join("%s=%s" % (key, options[key]) for key in ("vers", "proto", "nconnect", "rsize", "wsize") if key in options)
    return "%s mount options: %s" % (mount_point or "the mount", shown or "none of vers, proto, nconnect, rsize, wsize")


# ---------------------------------------------------------------- raw /proc/self/mountstats

def _read_mountstats(reading, text):
    mounts = list(iter_mountstats(text))
    reading["window"] = "since the mount (one snapshot; two make a bundle)"
    if not mounts:
        reading["tells_nothing"] = "device lines, but no NFS mount (other file systems only)"
        return
    for mount in mounts:
        read_mount(reading, mount)
    _compare_mounts(reading, mounts)


def _read_mountstats_lines(reading, text):
    mount = parse_mount_lines(text)
    reading["window"] = "since the mount"
    if mount is None:
        reading["tells_nothing"] = "no opts:, xprt: or op line"
        return
    read_mount(reading, mount)


def read_mount(reading, mount):
    """Options, transport and per-op readings of one MountStats (whole block or fragment)."""
    where = mount.mount_point
    version = mount.nfs_version if mount.opts_text or mount.fstype else None
    if mount.truncated and mount.device is not None:
        reading["notes"].append("%s: %s; what it holds is read" % (where, mount.truncated))
    if mount.opts_text:
        reading["notes"].append(options_note(where, mount.opts))
    backlog = _read_transport(reading, where, mount, version)
    for name in DATA_OPS:
        values = mount.op(name)
        if not values or not values["ops"]:
            continue
        ops = values["ops"]
        figures = {"ops": ops, "ops_count": ops, "avg_rtt_ms": float(values["rtt_ms"]) / ops, "avg_exe_ms": float(values["execute_ms"]) / ops,
                   "avg_queue_ms": float(values["queue_ms"]) / ops, "retrans": max(0, (values["transmissions"] or ops) - ops)}
        read_op(reading, where, name, figures, version, backlog)


def _read_transport(reading, where, mount, version):
    """xprt: slots in use per send against max_slots, backlog, sending/pending, reconnects; the backlog per send."""
    if not mount.xprt_lines:
        return None
    totals = mount.xprt_totals()
    sends = totals.get("sends") or 0
    label = where or "the mount"
    if not sends:
        reading["notes"].append("%s: xprt lines with no send yet" % label)
        return None
    _speaks_for(reading, "client_rpc_slots")
    backlog = float(totals.get("bklog_u") or 0) / sends
    in_use = float(totals.get("req_u") or 0) / sends / max(1, totals.get("transports") or 1)
    cap = max(totals["max_slots"]) if totals.get("max_slots") else None
    if _row(reading, "client_rpc_slots", "%s requests waiting for a transport slot per send (bklog_u / sends)" % label, backlog,
            ">= %s" % human.number(limits.BACKLOG_PER_SEND_LIMIT), backlog >= limits.BACKLOG_PER_SEND_LIMIT,
            "%s sends over %d transport(s)" % (human.number(sends), totals.get("transports") or 1)):
        _suspect(reading, "client_rpc_slots", 2, "%s: %s requests waited for a transport slot per send: the RPC slot table "
                 "(sunrpc tcp_slot_table_entries) is full" % (label, human.number(backlog)))
    if cap:
        at_cap = in_use >= limits.SLOTS_AT_CAP_SHARE * cap
        _row(reading, "client_rpc_slots", "%s slots in use per send (req_u / sends) against max_slots" % label, in_use,
             ">= %s of %d" % (human.share(limits.SLOTS_AT_CAP_SHARE), cap), at_cap,
             "max_slots is the most slots the transport ever held")
        if at_cap:
            _suspect(reading, "client_rpc_slots", 1, "%s: %s slots in use per send of at most %d: the transport ran at its "
                     "cap" % (label, human.number(in_use), cap))
    for key, what in (("sending_u", "waiting to be sent"), ("pending_u", "waiting for a reply")):
        if totals.get(key) is not None:
            reading["notes"].append("%s: %s requests %s per send" % (label, human.number(float(totals[key]) / sends), what))
    beyond = limits.connects_since_mount_unexplained(totals.get("connect_count"), totals.get("protocols"), totals.get("transports"), mount.age)
    if beyond:
        _speaks_for(reading, "network")
        _row(reading, "network", "%s transport connects beyond a healthy mount's" % label, beyond, "> 0", True,
             "connect_count %d over %d transport(s) in %s s since the mount, less each transport's first connect and one "
             "reopening per %d s unused; each reconnect resends what was in flight" % (
                 totals.get("connect_count") or 0, totals.get("transports") or 1, human.number(mount.age or 0), limits.IDLE_CLOSE_SECONDS))
        _suspect(reading, "network", 1, "%s: %d transport connect(s) since the mount beyond a healthy mount's (a TCP reconnect adds 2)" % (
            label, beyond))
    if version:
        reading["notes"].append("%s: %s" % (label, slots_in_play(version, backlog >= limits.BACKLOG_PER_SEND_LIMIT)))
    return backlog >= limits.BACKLOG_PER_SEND_LIMIT


def _compare_mounts(reading, mounts):
    """Two or more mounts of one server (v3 beside v4.1, as users paste): which one is concurrency-capped and by what."""
    by_server = {}
    for mount in mounts:
        by_server.setdefault(mount.device.split(":", 1)[0], []).append(mount)
    for server, group in sorted(by_server.items()):
        if len(group) < 2:
            continue
        lines = []
        for mount in group:
            write = mount.op("WRITE")
            if not write or not write["ops"]:
                continue
            queue, rtt = float(write["queue_ms"]) / write["ops"], float(write["rtt_ms"]) / write["ops"]
            capped = queue >= limits.QUEUE_MS_FLOOR and queue > limits.QUEUE_TO_RTT_LIMIT * rtt
            totals = mount.xprt_totals()
            backlog = float(totals.get("bklog_u") or 0) / totals["sends"] if totals.get("sends") else 0.0
            lines.append("%s (NFSv%s) WRITE queue %s vs RTT %s: %s" % (
                mount.mount_point, mount.nfs_version, _ms(queue), _ms(rtt),
                ("concurrency-capped by " + slots_in_play(mount.nfs_version, backlog >= limits.BACKLOG_PER_SEND_LIMIT))
                if capped else "not capped"))
        if len(lines) >= 2:
            reading["notes"].append("mounts of %s side by side: %s" % (server, "; ".join(lines)))


# ---------------------------------------------------------------- nfsstat -c / -s, /proc/net/rpc/nfsd, pool_stats

def op_mix(reading, counts, where):
    """Data (READ/WRITE/COMMIT) against metadata share of the op counts {NAME: count}."""
    data = sum(count for name, count in counts.items() if name.upper() in DATA_OPS)
    meta = sum(count for name, count in counts.items() if name.upper() in _META)
    if data + meta < limits.OP_MIX_MIN_OPS:
        if data + meta:
            reading["notes"].append("%s: %d data and metadata ops, too few to say what the workload is" % (where, data + meta))
        return
    _speaks_for(reading, "access_pattern")
    share = float(meta) / (data + meta)
    if _row(reading, "access_pattern", "%s metadata share of data and metadata ops" % where, share,
            ">= %s" % human.share(limits.METADATA_SHARE_LIMIT), share >= limits.METADATA_SHARE_LIMIT,
            "%s metadata ops (opens, lookups, getattrs ...) against %s READ/WRITE/COMMIT" % (human.number(meta), human.number(data))):
        _suspect(reading, "access_pattern", 1, "%s of the ops are metadata: many small files or opens, not bulk data" % human.share(share))


def _read_nfsstat_client(reading, text):
    reading["window"] = "since the client booted (every mount together)"
    tables = nfsstat_tables(text)
    rpc = dict(tables.get("Client rpc stats", ()))
    if rpc.get("calls"):
        _retrans(reading, "client RPC", rpc.get("retrans"), rpc["calls"])
    counts = {}
    for title, rows in tables.items():
        if title.startswith("Client nfs v"):
            for name, count in rows:
                counts[name.upper()] = counts.get(name.upper(), 0) + count
    op_mix(reading, counts, "client")


def _read_nfsstat_mounts(reading, text):
    reading["window"] = "the moment it was run (options only)"
    for mount in nfsstat_mounts.parse(text):
        reading["notes"].append(options_note(mount["mount_point"], mount["options"]))
        if _version(mount["options"]):
            reading["notes"].append("%s: a dominating queue there would point at %s" % (
                mount["mount_point"], slots_in_play(_version(mount["options"]), False)))


def _read_rpc_nfs(reading, text):
    reading["window"] = "since the client booted (every mount together)"
    words = dict((line.split()[0], line.split()[1:]) for line in text.split("\n") if line.split())
    rpc = [int(word) for word in words.get("rpc", [])]
    if len(rpc) >= 2 and rpc[0]:
        _retrans(reading, "client RPC", rpc[1], rpc[0])
    # proc3: the count, then one counter per NFSv3 procedure in RFC 1813 order (the client's order too).
    proc3 = [int(word) for word in words.get("proc3", [])[1:]]
    op_mix(reading, dict(zip(NFS3_PROCS, proc3)), "client NFSv3")


def _read_nfsstat_server(reading, text):
    try:
        rebuilt, _labels = nfsd_text_from_nfsstat(text)
    except ValueError as exc:
        reading["tells_nothing"] = str(exc)
        return
    _read_nfsd(reading, rebuilt, rebuilt_from="nfsstat -s")
    reading["server_text"] = rebuilt


def _read_nfsd(reading, text, rebuilt_from=None):
    reading["window"] = "since the server booted (a pair gives differences, no rates: the file holds no time)"
    reading["server_text"] = text
    stats = parse_nfsd_stats(text)
    rpc = stats.get("rpc") or {}
    if rpc.get("calls"):
        _speaks_for(reading, "server_cpu")
        bad = float(rpc.get("bad_calls") or 0) / rpc["calls"]
        _row(reading, None, "server bad calls per call", bad, ">= %s" % human.share(limits.BAD_CALLS_SHARE_LIMIT),
             bad >= limits.BAD_CALLS_SHARE_LIMIT, "%s of %s calls refused (authentication or format)" % (
                 human.number(rpc.get("bad_calls") or 0), human.number(rpc["calls"])))
    io = stats.get("io") or {}
    if io.get("bytes_written") or io.get("bytes_read"):
        reading["notes"].append("server wrote %s and read %s since boot" % (
            human.size(io.get("bytes_written") or 0), human.size(io.get("bytes_read") or 0)))
    counts = {}
    for label in ("proc3", "proc4ops"):
        for name, count in (stats.get(label) or {}).items():
            counts[name] = counts.get(name, 0) + count
    op_mix(reading, counts, "server")
    _read_th(reading, stats.get("th"))
    if rebuilt_from:
        reading["notes"].append("read from the tables %s printed (percentages dropped)" % rebuilt_from)


def _read_th(reading, th):
    if not th:
        return
    _speaks_for(reading, "server_threads")
    if th["busy_seconds"] is None:
        reading["notes"].append("%d nfsd threads; this kernel keeps no busy-thread histogram (th line all zero since "
                                "2.6.29): read pool_stats for the threads signal" % th["threads"])
        return
    total = sum(th["busy_seconds"])
    top = th["busy_seconds"][-1] / total if total else 0.0
    crossed = _row(reading, "server_threads", "time with 90-100 % of nfsd threads busy (th histogram)", top,
                   ">= %s" % human.share(limits.TH_TOP_BUCKET_LIMIT), top >= limits.TH_TOP_BUCKET_LIMIT,
                   "%d threads, all busy %s times; %s of %s in the top bucket" % (
                       th["threads"], human.number(th["all_busy_count"]), human.seconds(th["busy_seconds"][-1]), human.seconds(total)))
    if crossed or top >= limits.TH_TOP_BUCKET_CONTRIBUTING:
        _suspect(reading, "server_threads", 2 if crossed else 1, "%d nfsd threads were 90-100 %% busy %s of the time and all "
                 "busy %s times: too few threads" % (th["threads"], human.share(top), human.number(th["all_busy_count"])))


def _read_pool_stats(reading, text):
    reading["window"] = "since nfsd started (one snapshot; two make a window)"
    parsed = parse_pool_stats(text)
    if not parsed["pools"]:
        reading["tells_nothing"] = "the pool_stats header without a pool's counters"
        return
    delta = pool_stats_delta(parsed)
    share = delta.get("packets_without_idle_thread")
    if share is None or not delta["totals"].get("packets-arrived"):
        reading["tells_nothing"] = "no packet arrived since nfsd started"
        return
    _speaks_for(reading, "server_threads")
    crossed = _row(reading, "server_threads", "packets that found no idle nfsd thread (1 - threads-woken/packets-arrived)", share,
                   ">= %s" % human.share(limits.NO_IDLE_THREAD_LIMIT), share >= limits.NO_IDLE_THREAD_LIMIT,
                   "since nfsd started; threads-woken lagging packets-arrived is the signal on 5.10, 6.1 and 6.12 (lab: 67-85 %% "
                   "with 1 thread, 0-12 %% with 8); sockets-enqueued is none (equal to packets on 5.10/6.1, above them on "
                   "6.12), docs/kernels.md; %s packets" % human.number(delta["totals"]["packets-arrived"]))
    if crossed or share >= limits.NO_IDLE_THREAD_CONTRIBUTING:
        _suspect(reading, "server_threads", 2 if crossed else 1, "%s of packets found no idle nfsd thread" % human.share(share))


# ---------------------------------------------------------------- kernel logs

def _read_kernel_log(reading, text):
    log = kernel_log.parse(text)
    reading["window"] = "the log's time span"
    waits = {}
    for task in log["hung_tasks"]:
        key = (task["waits_on"] or "an unrecognised wait (frames: %s)" % ", ".join(task["frames"][:4] or ["none"]), task["layer"])
        waits.setdefault(key, []).append(task)
    for (what, layer), tasks in sorted(waits.items(), key=lambda item: -len(item[1])):
        if layer:
            _speaks_for(reading, layer)
        longest = max(task["seconds"] for task in tasks)
        names = ["%s:%d" % (task["task"], task["pid"]) for task in tasks]
        _row(reading, layer, "tasks blocked (hung-task reports) waiting on %s" % what, len(tasks), ">= 1", True,
             "%s blocked more than %s (hung_task_timeout_secs: a lower bound)" % (
                 ", ".join(names[:4]) + (" ..." if len(names) > 4 else ""), human.seconds(longest)))
        if layer:
            direct = layer != "client_rpc_slots" or "slot" in what
            _suspect(reading, layer, 2 if direct else 1, "%d task(s) blocked more than %s waiting on %s" % (
                len(tasks), human.seconds(longest), what), alternatives=() if direct else ("server_storage", "network"))
        elif hangs.waits_for_the_server(what, tasks) and log["not_responding"]:
            # A client task waiting for the server's replies (writeback, fsync, an RPC) in a log where the server was
            # "not responding": the outage read below is what it waits for, not a hang of its own (issue 44).
            _suspect(reading, "network", 1, "%d task(s) blocked more than %s waiting on %s while the server was not "
                     "responding" % (len(tasks), human.seconds(longest), what), alternatives=("server_storage",))
        else:
            # A stack that waits on nothing a capacity layer explains (an exported file system's lock, a callback)
            # is a hang: the stack is the evidence, and no slot, thread or link setting frees it (issue 44).
            add_fault(reading, hangs.hang_fault(tasks), "%s blocked more than %s (%s)" % (
                ", ".join(names[:4]), human.seconds(longest), what))
    _read_outages(reading, log, text)
    for key, what in (("rpc_timeouts", "RPC timeouts"), ("state_messages", "NFSv4 state manager / lease messages"),
                      ("stale_handles", "stale file handles")):
        if log[key]:
            reading["notes"].append("%d %s, first: %s" % (len(log[key]), what, log[key][0][:160]))
    if log["rpc_timeouts"]:
        _speaks_for(reading, "network")
        _suspect(reading, "network", 1, "%d RPC timeout message(s)" % len(log["rpc_timeouts"]), alternatives=("server_cpu",))


def _read_outages(reading, log, text):
    if not log["not_responding"]:
        return
    _speaks_for(reading, "network")
    unended = [outage for outage in log["outages"] if not outage["ended"] and outage["server"] in log["still_trying"]]
    last_time = kernel_log.last_line_time(text) if unended else None
    for outage in log["outages"]:
        away = (human.seconds(outage["seconds"]) if outage["seconds"] is not None
                else "a time the log does not end (not back by its last line)" if not outage["ended"]
                else "an unknown time (no time stamps)")
        _row(reading, "network", "server %s not responding" % outage["server"], outage["seconds"], "any", True,
             "away %s (\"not responding\" to \"OK\")" % away)
        _suspect(reading, "network", 2, "server %s did not answer for %s" % (outage["server"], away),
                 alternatives=("server_cpu", "server_threads"))
        fault = hangs.server_not_back(outage, last_time) if outage["server"] in log["still_trying"] else None
        if fault:
            seconds = hangs.away_seconds(outage, last_time)
            add_fault(reading, fault, "\"not responding, still trying\" and no \"OK\" by the last line%s" % (
                ", %s later" % human.seconds(seconds) if seconds else ""))


_READERS = {
    "nfsiostat": _read_nfsiostat, "mountstats_report": _read_mountstats_report, "mountstats": _read_mountstats,
    "mountstats_lines": _read_mountstats_lines, "nfsstat_client": _read_nfsstat_client, "nfsstat_server": _read_nfsstat_server,
    "nfsd": _read_nfsd, "rpc_nfs": _read_rpc_nfs, "nfsstat_mounts": _read_nfsstat_mounts, "pool_stats": _read_pool_stats, "kernel_log": _read_kernel_log,
}


# ---------------------------------------------------------------- two snapshots of one server: the difference

def pair_readings(found):
    """Readings of the difference between two server snapshots of one kind (pool_stats; nfsd or nfsstat -s), ordered
    by their counters: shares over the time between them, which the snapshots alone (since boot) cannot give.
    Neither file holds a time, so no rate: the shares need none."""
    extra = []
    pools = [reading for reading in found if reading["kind"] == "pool_stats" and reading["tells_nothing"] is None]
    if len(pools) == 2:
        extra.append(_pool_pair(pools))
    servers = [reading for reading in found if reading.get("server_text") and reading["tells_nothing"] is None]
    if len(servers) == 2:
        extra.append(_nfsd_pair(servers))
    return [reading for reading in extra if reading is not None]


def _pair(first, second, kind):
    return {"file": "%s -> %s" % (first["file"], second["file"]), "kind": kind, "taken_for": "the difference of two %ss" % first["taken_for"],
            "can_show": CAN_SHOW[kind] + ", over the time between the two", "window": "between the two snapshots (no time: shares only)",
            "layers": [], "evidence": [], "suspects": [], "notes": [], "repairs": [], "tells_nothing": None, "text": ""}


def _pool_pair(pools):
    parsed = sorted(((parse_pool_stats(reading["text"]), reading) for reading in pools),
                    key=lambda item: sum(pool.get("packets-arrived", 0) for pool in item[0]["pools"]))
    (before, first), (after, second) = parsed
    delta = pool_stats_delta(after, before)
    reading = _pair(first, second, "pool_stats")
    share = delta.get("packets_without_idle_thread")
    if delta["reset"] or share is None or not delta["totals"].get("packets-arrived"):
        reading["tells_nothing"] = "nfsd restarted between them, or no packet arrived" if delta["reset"] else "no packet arrived between them"
        return reading
    _speaks_for(reading, "server_threads")
    crossed = _row(reading, "server_threads", "packets that found no idle nfsd thread between the two snapshots", share,
                   ">= %s" % human.share(limits.NO_IDLE_THREAD_LIMIT), share >= limits.NO_IDLE_THREAD_LIMIT,
                   "%s packets arrived between them" % human.number(delta["totals"]["packets-arrived"]))
    if crossed or share >= limits.NO_IDLE_THREAD_CONTRIBUTING:
        _suspect(reading, "server_threads", 2 if crossed else 1, "%s of the packets between the two snapshots found no idle nfsd "
                 "thread" % human.share(share))
    return reading


def _nfsd_pair(servers):
    parsed = sorted(((parse_nfsd_stats(reading["server_text"]), reading) for reading in servers),
                    key=lambda item: (item[0].get("rpc") or {}).get("calls", 0))
    (before, first), (after, second) = parsed
    delta = nfsd_delta(after, before)
    reading = _pair(first, second, "nfsd")
    if delta.get("reset"):
        reading["tells_nothing"] = "counters went back between them (nfsd restarted, or two servers)"
        return reading
    reading["notes"].append("between the two: %s RPC calls, %s written, %s read" % (
        human.number(delta["rpc_calls"]), human.size(delta["io_bytes_written"]), human.size(delta["io_bytes_read"])))
    counts = {}
    for label in ("proc3", "proc4ops"):
        for name, count in (delta.get(label) or {}).items():
            counts[name] = counts.get(name, 0) + count
    op_mix(reading, counts, "server, between the two snapshots,")
    return reading
