# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Before/after deltas of NFS client (mountstats) and server (nfsd, pool_stats) counters.

Definitions follow nfs-utils (tools/mountstats/mountstats.py, nfsiostat) so our numbers can
be checked against `mountstats -f AFTER -S BEFORE` on the same files:
  avg RTT = d(rtt_ms)/d(ops), avg exe = d(execute_ms)/d(ops), avg queue = d(queue_ms)/d(ops),
  retrans = d(transmissions) - d(ops), kB/s = (d(bytes_sent) + d(bytes_recv)) / 1024 / interval.
Where nfs-utils is wrong we say so and do better:
  - transports: nfs-utils keeps only the last xprt line; with nconnect=N we sum all N.
  - backlog per send = d(bklog_u) / d(sends), *not* also divided by the interval (nfsiostat's
    "rpc bklog" does that, which makes it depend on the sampling period).
  - max_slots is a high-water mark: reported as after (per connection), never subtracted.
"""

from __future__ import annotations

from operator import sub

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import (
    BYTE_NAMES,
    CONNECTS_PER_CONNECT,
    XPRT_SUMMED,
    column_total,
    iter_mountstats,
)
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.sample_pair import SamplePair

MB = 1000000.0


def _ratio(numerator, denominator):
    return float(numerator) / denominator if denominator else 0.0


def _op_delta(after, before, interval):
    d_ops = after[0] - before[0]
    # Transmissions are counted with the op when it completes (net/sunrpc/stats.c
    # rpc_count_iostats_metrics), but kernels before max(rq_ntrans, 1) add 0 for an op that never
    # went out: trans - ops can be below 0 there, which is no retransmission.
    d_retrans = max(0, after[1] - before[1] - d_ops)
    d_sent = after[3] - before[3]
    d_recv = after[4] - before[4]
    errors = after[8] - before[8] if len(after) > 8 and len(before) > 8 else None
    # _ratio() written out: this dict is built for every op that moved, so the calls add up.
    return {
        "ops": d_ops,
        "ops_per_second": float(d_ops) / interval if interval else 0.0,
        "retrans": d_retrans,
        "retrans_percent": float(d_retrans * 100) / d_ops if d_ops else 0.0,
        "timeouts": after[2] - before[2],
        "errors": errors,
        "bytes_sent": d_sent,
        "bytes_recv": d_recv,
        "bytes_per_op": float(d_sent + d_recv) / d_ops if d_ops else 0.0,
        "bytes_sent_per_op": float(d_sent) / d_ops if d_ops else 0.0,
        # nfs-utils labels this kB/s but divides by 1024: keep its definition, say so in the name.
        "kib_per_second": (d_sent + d_recv) / 1024.0 / interval if interval else 0.0,
        "mb_per_second": (d_sent + d_recv) / MB / interval if interval else 0.0,
        "avg_rtt_ms": float(after[6] - before[6]) / d_ops if d_ops else 0.0,
        "avg_exe_ms": float(after[7] - before[7]) / d_ops if d_ops else 0.0,
        "avg_queue_ms": float(after[5] - before[5]) / d_ops if d_ops else 0.0,
    }


_ZERO_OP = (0, 0, 0, 0, 0, 0, 0, 0, 0)

# Capture problems, in the order they are reported. A delta with any of them is not `usable`:
# its figures do not describe the window between the two samples.
PROBLEMS = ("truncated", "reset", "new_mount", "negative_time", "not_kernel_value")

# A per-op time (queue, RTT, execute: fields 5-7) at or above this is a negative kernel value printed
# unsigned: the times are signed ktime sums printed with %llu (net/sunrpc/stats.c rpc_print_iostats),
# so a sum below zero reads 2^64 - x (prometheus/procfs's fixture proc/26231/mountstats holds one:
# ACCESS queue 18446743919241604546). No op's time sums to 2^63 ms (292 million years).
NEGATIVE_PRINTED = 2 ** 63


def mount_delta(after, before=None, interval_seconds=None, before_sampled=None):
    """Delta of one mount (MountStats objects); before=None means "since mount".

    The interval is d(age) (what nfs-utils uses) unless the caller measured one.
    before_sampled says a before sample was taken (default: before is not None): with no block
    for this mount in it, the mount is new. Problems of the capture are decided here, once:
      truncated  a sample lacks lines the kernel always prints (mountstats.truncation()), or the
                 two samples' op lists differ (same kernel, same list: one was cut at a line end);
      new_mount  no before block, or age went backwards (remounted between the samples);
      reset      a counter went backwards while age rose (remounted, or another mount's block);
      not_kernel_value  a sample holds a counter above 2^64 (mountstats.refuse_out_of_range, numbers.py):
                 no kernel printed it; the parser read it as 0 and the figures count from the mount.
    For new_mount and reset the figures count from the mount (the after counters alone over its
    age), as nfs-utils does for a remount and pool_stats_delta() for an nfsd restart, so no
    number in a delta is ever below 0. `usable` is false when any problem was found; the
    `problems` codes and `problem_details` sentences say which and why.
    """
    if before_sampled is None:
        before_sampled = before is not None
    problems = []
    for sample, mount in (("after", after), ("before", before)):
        if mount is not None and mount.truncated:
            problems.append(("truncated", "%s sample: %s" % (sample, mount.truncated)))
        if mount is not None and mount.not_kernel_values:
            problems.append(("not_kernel_value", "%s sample: %s" % (sample, mount.not_kernel_values)))
    if any(code == "not_kernel_value" for code, _detail in problems):
        # The parser read the value as 0 (mountstats.refuse_out_of_range): counted from the mount, so
        # that 0 is no counter going back; the delta is not usable whatever it holds.
        before, before_sampled = None, False
    if before is None and before_sampled:
        problems.append(("new_mount", "no block for this mount in the before sample (mounted during the window, "
                                      "or the before file is cut short)"))
    elif before is not None and before.age is not None and after.age is not None and before.age > after.age:
        problems.append(("new_mount", "age went back from %d to %d: remounted between the samples; counted since that mount"
                                      % (before.age, after.age)))
        before = None
    if before is not None and not problems:
        cut = SamplePair(after, before).op_list_cut()
        if cut:
            problems.append(("truncated", cut))

    delta, went_back, torn, negative = _window_delta(after, before, interval_seconds)
    problems.extend(("truncated", sentence) for sentence in torn)
    problems.extend(("negative_time", sentence) for sentence in negative)
    if went_back:
        problems.append(("reset", "%s went backwards while age rose from %s to %s: remounted or another mount's block; "
                                  "counted since mount" % (", ".join(went_back[:4]) + (" ..." if len(went_back) > 4 else ""),
                                                           before.age, after.age)))
        delta, _went_back, _torn, _negative = _window_delta(after, None, None)
    codes = [code for code in PROBLEMS if any(found == code for found, _detail in problems)]
    # not_kernel_value has no flag of its own (the flags are the figures' format, diagnosis/host_figures.FORMAT): it is
    # in `problems` and `problem_details`, and the delta is not `usable`.
    delta.update({
        "truncated": "truncated" in codes,
        "reset": "reset" in codes,
        "new_mount": "new_mount" in codes,
        "negative_time": "negative_time" in codes,
        "usable": not codes,
        "problems": codes,
        "problem_details": [detail for _code, detail in problems],
    })
    return delta


def _negative_time_sentences(name, sample, values):
    """Sentences on the per-op times (queue, RTT, execute) of one op line printed from a negative
    kernel value (NEGATIVE_PRINTED): their averages would be nonsense of 10^15 ms."""
    return ["%s sample: %s %s time %d ms is a negative kernel value printed unsigned (net/sunrpc/stats.c): the op's times "
            "are not the window's" % (sample, name, label, values[field])
            for field, label in ((5, "queue"), (6, "RTT"), (7, "execute")) if values[field] >= NEGATIVE_PRINTED]


def _window_delta(after, before, interval_seconds):
    """(delta of the window, names of counters that went backwards, sentences on torn op lines, sentences
    on op times printed from negative kernel values)."""
    if interval_seconds is None:
        if after.age is not None:
            interval_seconds = after.age - (before.age if before is not None and before.age is not None else 0)
        interval_seconds = interval_seconds or 0
    interval = float(interval_seconds) if interval_seconds and interval_seconds > 0 else 0.0

    went_back = []
    torn = []
    negative = []
    pair = SamplePair(after, before)
    ops = _ops_delta(pair, interval, went_back, torn, negative)

    after_x, before_x = pair.xprt_columns()
    rpc = _summed_xprt_delta(after_x["columns"], before_x["columns"] if before_x else None)
    went_back.extend("xprt %s" % name for name in XPRT_SUMMED if rpc[name] < 0)
    max_slots = _present(after_x["columns"].get("max_slots", ()))
    per_transport_backlog = _per_transport_backlog(after_x, before_x)
    if per_transport_backlog and min(per_transport_backlog) < 0:
        went_back.append("xprt bklog_u or sends of one transport")
    rpc.update({
        "transports": len(after_x["protocols"]),
        "protocols": sorted(set(after_x["protocols"])),
        "max_slots": max_slots,
        "max_slots_before": _present(before_x["columns"].get("max_slots", ())) if before_x else [],
        "max_slots_reached": max(max_slots) if max_slots else None,
        "backlog_per_send": _ratio(rpc["bklog_u"], rpc["sends"]),
        # Average requests holding a slot, waiting to send, and waiting for a reply, seen at
        # each send: Little's-law style occupancy of the transports.
        "slots_in_use_per_send": _ratio(rpc["req_u"], rpc["sends"]),
        "sending_per_send": _ratio(rpc["sending_u"], rpc["sends"]),
        "pending_per_send": _ratio(rpc["pending_u"], rpc["sends"]),
        "sends_per_second": _ratio(rpc["sends"], interval),
        "backlog_per_send_per_transport": per_transport_backlog,
        "reopen_connects": _reopen_connects(after_x, before_x),
    })

    # Properties parse on first use; bind them once rather than per counter.
    after_bytes = after.bytes
    before_bytes = before.bytes if before is not None else {}
    nbytes = dict((name, after_bytes.get(name, 0) - before_bytes.get(name, 0)) for name in BYTE_NAMES if name in after_bytes)
    went_back.extend("bytes %s" % name for name in BYTE_NAMES if nbytes.get(name, 0) < 0)
    write_bytes = nbytes.get("serverwritebytes", 0)
    read_bytes = nbytes.get("serverreadbytes", 0)
    opts = after.opts
    return {
        "device": after.device,
        "mount_point": after.mount_point,
        "fstype": after.fstype,
        "nfs_version": after.nfs_version,
        "nconnect": after.nconnect,
        "wsize": _int_or_none(opts.get("wsize")),
        "rsize": _int_or_none(opts.get("rsize")),
        "proto": opts.get("proto"),
        "opts": dict(opts),
        "interval_seconds": interval,
        "bytes": nbytes,
        "write_bytes": write_bytes,
        "read_bytes": read_bytes,
        "write_mb_per_second": _ratio(write_bytes / MB, interval),
        "read_mb_per_second": _ratio(read_bytes / MB, interval),
        "rpc": rpc,
        "ops": ops,
    }, went_back, torn, negative


def _ops_delta(pair, interval, went_back, torn, negative):
    """Per-op deltas of the ops whose line changed (SamplePair.changed_ops()); names of ops whose
    counters went back are appended to went_back, sentences on lines with too few counters to torn,
    sentences on times printed from a negative kernel value to negative."""
    ops = {}
    for name, new_values, old_values in pair.changed_ops():
        if len(new_values) < 8:
            # A line torn in the middle of the section (the parser reads only the last line).
            torn.append("after sample: the %s line has %d counters" % (name, len(new_values)))
            continue
        if old_values is None:
            old_values = _ZERO_OP[:len(new_values)]
        elif len(old_values) < 8:
            torn.append("before sample: the %s line has %d counters" % (name, len(old_values)))
            continue
        # One pass in C over the pair: any counter below its before value.
        if min(map(sub, new_values, old_values)) < 0:
            went_back.append(name)
        if max(new_values[5:8]) >= NEGATIVE_PRINTED or max(old_values[5:8]) >= NEGATIVE_PRINTED:
            negative.extend(_negative_time_sentences(name, "after", new_values) + _negative_time_sentences(name, "before", old_values))
        ops[name] = _op_delta(new_values, old_values, interval)
    return ops


def _summed_xprt_delta(after_columns, before_columns):
    """{counter: after total - before total} for XPRT_SUMMED, as totals_from_columns() sums them."""
    delta = {}
    for name in XPRT_SUMMED:
        column = after_columns.get(name, ())
        old_column = before_columns.get(name, ()) if before_columns is not None else ()
        # A column SamplePair.xprt_columns() shared between the samples did not move.
        delta[name] = 0 if column is old_column else column_total(column) - column_total(old_column)
    return delta


def _present(column):
    return [value for value in column if value is not None]


def _per_transport_backlog(after_x, before_x):
    backlog = after_x["columns"].get("bklog_u", [])
    sends = after_x["columns"].get("sends", [])
    old_backlog = before_x["columns"].get("bklog_u", []) if before_x else []
    old_sends = before_x["columns"].get("sends", []) if before_x else []
    if len(old_backlog) == len(backlog) == len(sends) == len(old_sends):
        try:
            # Same transports in both samples, every counter present (the usual case).
            return [float(new_b - old_b) / (new_s - old_s) if new_s - old_s else 0.0
                    for new_b, old_b, new_s, old_s in zip(backlog, old_backlog, sends, old_sends)]
        except TypeError:
            # A None (counter missing from an old kernel's line): the loop below.
            pass
    result = []
    for index, value in enumerate(backlog):
        old_b = old_backlog[index] if index < len(old_backlog) and old_backlog[index] is not None else 0
        old_s = old_sends[index] if index < len(old_sends) and old_sends[index] is not None else 0
        if value is None or sends[index] is None:
            result.append(0.0)
            continue
        result.append(_ratio(value - old_b, sends[index] - old_s))
    return result


def _reopen_connects(after_x, before_x):
    """connect_count rise of transports that connected exactly once in the window after the before
    sample showed them closed (idle_time 0: closed after IDLE_CLOSE_SECONDS unused, or used in that
    same second): a transport opening again for the checkpoint, not a lost connection."""
    if not before_x:
        return 0
    protocols = after_x["protocols"]
    after_connects = after_x["columns"].get("connect_count", [])
    before_connects = before_x["columns"].get("connect_count", [])
    before_idle = before_x["columns"].get("idle_time", [])
    if not len(protocols) == len(before_x["protocols"]) == len(after_connects) == len(before_connects) == len(before_idle):
        return 0
    reopened = 0
    for protocol, new, old, idle in zip(protocols, after_connects, before_connects, before_idle):
        once = CONNECTS_PER_CONNECT.get(protocol, 0)
        if once and idle == 0 and new is not None and old is not None and new - old == once:
            reopened += once
    return reopened


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def iter_mountstats_delta(after_lines, before_lines=None, interval_seconds=None, mount_points=None):
    """Yield the delta of every NFS mount of the after sample, paired with its before block.

    Both samples stream in step: the kernel lists mounts in mount order, so the matching before
    block is normally the next one and memory holds one mount of each file. Mounts that appear or
    vanish between the samples are parked in a dict until matched.

    A block is paired by mount point, device, fstype, NFS version and transport, and by its
    position among the blocks with those same five in its file: real files hold duplicates (the
    same export mounted twice on one path with other versions or transports, rdma multi-mounts),
    and pairing one with another's before block gave deltas of minus a million ops.
    """
    wanted = set(mount_points) if mount_points else None
    before_iter = iter_mountstats(before_lines) if before_lines is not None else iter(())
    parked = {}
    after_seen = {}
    before_seen = {}
    for mount in iter_mountstats(after_lines):
        if wanted is not None and mount.mount_point not in wanted:
            continue
        key = _pairing_key(mount, after_seen)
        old = parked.pop(key, None)
        while old is None:
            candidate = next(before_iter, None)
            if candidate is None:
                break
            if wanted is not None and candidate.mount_point not in wanted:
                continue
            candidate_key = _pairing_key(candidate, before_seen)
            if candidate_key == key:
                old = candidate
            else:
                parked[candidate_key] = candidate
        yield mount_delta(mount, old, interval_seconds, before_sampled=before_lines is not None)


def _pairing_key(mount, seen):
    """(mount point, device, fstype, vers, proto, n): the n-th block with those five so far."""
    identity = mount.identity()
    position = seen.get(identity, 0)
    seen[identity] = position + 1
    return identity + (position,)


def mountstats_delta(after_lines, before_lines=None, interval_seconds=None, mount_points=None):
    """List of iter_mountstats_delta()."""
    return list(iter_mountstats_delta(after_lines, before_lines, interval_seconds, mount_points))


# ---------------------------------------------------------------- server side

def _counter_delta(after, before):
    """after - before, or after alone when the counter went backwards (it was reset)."""
    if before is None:
        return after, False
    if after < before:
        return after, True
    return after - before, False


def nfsd_delta(after, before=None):
    """Delta of two parse_nfsd_stats() results (module_utils.nfsd_stats)."""
    before = before or {}
    reset = False
    io_after = after.get("io", {})
    io_before = before.get("io", {})
    result = {}
    for key in ("bytes_read", "bytes_written"):
        delta, was_reset = _counter_delta(io_after.get(key, 0), io_before.get(key) if before else None)
        result["io_" + key] = delta
        reset = reset or was_reset
    rpc_delta = {}
    for key, value in after.get("rpc", {}).items():
        rpc_delta[key], was_reset = _counter_delta(value, before.get("rpc", {}).get(key) if before else None)
        reset = reset or was_reset
    result["rpc"] = rpc_delta
    result["rpc_calls"] = rpc_delta.get("calls", 0)
    net_delta = {}
    for key, value in after.get("net", {}).items():
        if key == "tcp_connections":
            # A gauge-like count of connections accepted: report the after value too.
            net_delta[key] = value
            continue
        net_delta[key], was_reset = _counter_delta(value, before.get("net", {}).get(key) if before else None)
        reset = reset or was_reset
    result["net"] = net_delta
    for section in ("proc3", "proc4", "proc4ops"):
        ops_after = after.get(section, {})
        ops_before = before.get(section, {})
        changed = {}
        for name, value in ops_after.items():
            delta, was_reset = _counter_delta(value, ops_before.get(name) if before else None)
            reset = reset or was_reset
            if delta:
                changed[name] = delta
        result[section] = changed
    result["threads"] = after.get("threads")
    result["threads_before"] = before.get("threads") if before else None
    result["reset"] = reset
    return result


def pool_stats_delta(after, before=None):
    """Delta of two parse_pool_stats() results, per pool, plus the starvation ratios.

    pool_stats resets to zero when nfsd restarts (measured: /proc/net/rpc/nfsd survived, the
    pool counters did not). A column going backwards therefore means "restarted during the
    window": we count from zero (the after value) and flag `reset`.
    """
    before_pools = dict((pool["pool"], pool) for pool in (before or {}).get("pools", []))
    pools = []
    totals = {}
    any_reset = False
    for pool in (after or {}).get("pools", []):
        old = before_pools.get(pool["pool"])
        reset = old is not None and any(pool[key] < old.get(key, 0) for key in pool if key != "pool")
        entry = {"pool": pool["pool"], "reset": reset}
        for key, value in pool.items():
            if key == "pool":
                continue
            entry[key] = value if (old is None or reset) else value - old.get(key, 0)
            totals[key] = totals.get(key, 0) + entry[key]
        any_reset = any_reset or reset
        pools.append(entry)
    packets = totals.get("packets-arrived", 0)
    result = {
        "columns": (after or {}).get("columns", []),
        "pools": pools,
        "totals": totals,
        "reset": any_reset,
        "sockets_enqueued_per_packet": _ratio(totals.get("sockets-enqueued", 0), packets) if "sockets-enqueued" in totals else None,
        "threads_woken_per_packet": _ratio(totals.get("threads-woken", 0), packets) if "threads-woken" in totals else None,
    }
    # Measured on kernel 6.1: sockets-enqueued always equals packets-arrived, so the share of
    # packets that found no idle thread is 1 - woken/arrived (85 % with 1 thread, <1 % with 8).
    if result["threads_woken_per_packet"] is not None and packets:
        result["packets_without_idle_thread"] = max(0.0, 1.0 - result["threads_woken_per_packet"])
    else:
        result["packets_without_idle_thread"] = None
    return result
