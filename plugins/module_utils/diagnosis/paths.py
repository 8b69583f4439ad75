# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Several NFS paths (the canary's `paths`, issue 28): each client's mountstats delta of every path, merged
into the one delta the layers judge (the bytes went to all of them), and the figures per path and in total.

A merged delta sums the per-mount counters - every op's counts, bytes and times (averages re-weighted by
ops) and the mount's byte counters - and keeps the first path's transport (rpc/xprt, options, version):
two exports of one server share one NFS client and its connections, so their xprt lines count the same
sends twice; the per-path rows say which path took which bytes.
"""

from __future__ import annotations

# Per-op fields that add up across mounts; the averages are re-weighted by ops.
SUMMED_OP_FIELDS = ("ops", "retrans", "timeouts", "errors", "bytes_sent", "bytes_recv")
AVERAGED_OP_FIELDS = ("avg_rtt_ms", "avg_exe_ms", "avg_queue_ms")
SUMMED_MOUNT_FIELDS = ("write_bytes", "read_bytes")


def _merged_op(ops, interval):
    merged = dict((field, sum(op.get(field) or 0 for op in ops)) for field in SUMMED_OP_FIELDS)
    count = merged["ops"]
    for field in AVERAGED_OP_FIELDS:
        merged[field] = sum((op.get(field) or 0.0) * op["ops"] for op in ops) / count if count else 0.0
    merged["retrans_percent"] = 100.0 * merged["retrans"] / count if count else 0.0
    merged["bytes_per_op"] = (merged["bytes_sent"] + merged["bytes_recv"]) / float(count) if count else 0.0
    merged["bytes_sent_per_op"] = merged["bytes_sent"] / float(count) if count else 0.0
    merged["ops_per_second"] = count / interval if interval else 0.0
    merged["kib_per_second"] = (merged["bytes_sent"] + merged["bytes_recv"]) / 1024.0 / interval if interval else 0.0
    merged["mb_per_second"] = (merged["bytes_sent"] + merged["bytes_recv"]) / 1e6 / interval if interval else 0.0
    return merged


def merge_deltas(deltas):
    """One client's deltas of its paths (stats_delta.mount_delta, all usable) as one delta over them all."""
    first = deltas[0]
    if len(deltas) == 1:
        return first
    merged = dict(first)
    interval = first.get("interval_seconds") or 0.0
    names = []
    for delta in deltas:
        names.extend(name for name in delta["ops"] if name not in names)
    merged["ops"] = dict((name, _merged_op([delta["ops"][name] for delta in deltas if delta["ops"].get(name)], interval))
                         for name in names)
    for field in SUMMED_MOUNT_FIELDS:
        merged[field] = sum(delta.get(field) or 0 for delta in deltas)
    merged["write_mb_per_second"] = merged["write_bytes"] / 1e6 / interval if interval else 0.0
    merged["read_mb_per_second"] = merged["read_bytes"] / 1e6 / interval if interval else 0.0
    merged["mount_point"] = ", ".join(delta["mount_point"] for delta in deltas)
    return merged


def _row(mount_point, deltas):
    ops = {}
    for delta in deltas:
        for name, op in delta["ops"].items():
            if op and op["ops"]:
                ops.setdefault(name, []).append(op)
    write = _merged_op(ops.get("WRITE", []), 0) if ops.get("WRITE") else None
    commit = _merged_op(ops.get("COMMIT", []), 0) if ops.get("COMMIT") else None
    return {"mount_point": mount_point, "clients": len(deltas),
            "write_bytes": sum(delta.get("write_bytes") or 0 for delta in deltas),
            "read_bytes": sum(delta.get("read_bytes") or 0 for delta in deltas),
            "ops": sum(op["ops"] for group in ops.values() for op in group),
            "write_ops": write["ops"] if write else 0, "write_avg_rtt_ms": write["avg_rtt_ms"] if write else None,
            "commit_ops": commit["ops"] if commit else 0, "commit_avg_rtt_ms": commit["avg_rtt_ms"] if commit else None}


def path_figures(clients):
    """{"paths": [a row per mount point], "total": the same over all}: ops, bytes written and read, WRITE and
    COMMIT ops and average RTT, over the usable clients' per-path deltas (client["paths"]); None with one path."""
    by_path = {}
    for client in clients:
        for item in client.get("paths") or ():
            by_path.setdefault(item["mount_point"], []).append(item["delta"])
    if len(by_path) < 2:
        return None
    rows = [_row(mount_point, deltas) for mount_point, deltas in by_path.items()]
    total = _row("total", [delta for deltas in by_path.values() for delta in deltas])
    total["clients"] = len(clients)
    return {"paths": rows, "total": total}


def markdown_lines(figures):
    """The per-path table of report and diagnosis Markdown (empty with one path)."""
    if not figures:
        return []
    lines = ["## Per NFS path", "", "| path | bytes written | bytes read | ops | WRITE ops | WRITE avg RTT | COMMIT ops | COMMIT avg RTT |",
             "|---|---|---|---|---|---|---|---|"]
    for row in figures["paths"] + [figures["total"]]:
        lines.append("| %s | %d | %d | %d | %d | %s | %d | %s |" % (
            row["mount_point"], row["write_bytes"], row["read_bytes"], row["ops"], row["write_ops"],
            "%.1f ms" % row["write_avg_rtt_ms"] if row["write_avg_rtt_ms"] is not None else "-", row["commit_ops"],
            "%.1f ms" % row["commit_avg_rtt_ms"] if row["commit_avg_rtt_ms"] is not None else "-"))
    return lines + [""]
