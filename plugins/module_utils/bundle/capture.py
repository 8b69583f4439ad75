# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Capture of a real training job's checkpoint, with no canary: the window, its sampler, what it measured.

roles/checkpoint_capture (ckptio.nfs.capture) reads the same statistics the canary bundle holds at
the start and the end of a window, samples D state on the clients during it, and writes the same
files (bundle.py's table). What differs is the window, decided here:

- "seconds": from when the statistics are read, for N seconds;
- "between": from T1 to T2 (ISO 8601 with a zone, or epoch seconds), on the controller's clock;
- "marker": until a path the job's checkpoint hook touches exists, checked on every client by the
  client itself; always bounded by max_seconds, and a window that reached it is flagged.

The achieved figure of a capture rests on mountstats alone: the bytes the clients sent in WRITE RPCs
over the window (the per-mount `bytes:` line's serverwritebytes, the counter the diagnosis already
uses) over the window's length on the controller's clock. Nothing says which of those bytes were the
checkpoint's: the figure and its flags say so (achieved()). Pure logic, no I/O.
"""

from __future__ import annotations

import datetime
import math

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import clock
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.stats_delta import mountstats_delta

KINDS = ("seconds", "between", "marker")
DEFAULT_MAX_SECONDS = 3600.0
DEFAULT_MAX_LEAD_SECONDS = 3600.0
# Every sample is one pass over /proc/PID/stat (and wchan): below 0.1 s the sampler itself would
# be a measurable load on a host with thousands of tasks.
MIN_DSTATE_INTERVAL = 0.1
# The async job outlives the window by this much: Ansible's start-up on the host and the last
# sample; the job is bounded, never left running.
ASYNC_MARGIN_SECONDS = 120
# The written bytes are compared with the operator's checkpoint size within this share: rewrites
# of a few metadata blocks and RPC rounding should not raise a flag.
BYTES_TOLERANCE = 0.05
OPTION = "checkpoint_capture_%s"
NO_CANARY = ("no canary ranks: the throughput is the mount's write traffic over the whole window, not a checkpoint's "
             "own start and end")
SOURCE = ("capture, no canary ranks: bytes the clients sent to the server in WRITE RPCs over the window (mountstats "
          "`bytes:` serverwritebytes delta, every client, this mount only) / the window's seconds (latest end - "
          "earliest start of the clients' statistics reads, on the controller's clock)")


PROMETHEUS_SOURCE = ("series from Prometheus, no canary ranks: the increase of ckptio_nfs_client_bytes_total{direction=write} "
                     "(mountstats serverwritebytes as the textfile collector exported it), every client, this mount only, "
                     "from each host's collector run at or before the window's start to its run at or after its end / the window's "
                     "seconds (without the collector's run series: from the window's first grid point to its last / the mount "
                     "age's rise, the longest of the clients')")


def prometheus_note(window, not_in_series):
    """What a figure from Prometheus rests on and what the series do not hold (unmeasured, never assumed)."""
    note = "%s; window: %s" % (NO_CANARY, window.get("rests_on") or "%s s" % window.get("seconds"))
    if not_in_series:
        note += "; not in the series (unmeasured, never assumed): %s" % ", ".join(str(item) for item in not_in_series)
    return note


class CaptureError(ValueError):
    """A window option is wrong; the message names the role option."""


def _option(name):
    return OPTION % name


def _positive(value, name, minimum=0.0):
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise CaptureError("%s must be a number of seconds, got %r" % (_option(name), value))
    if not math.isfinite(number) or number <= minimum:
        raise CaptureError("%s must be greater than %g, got %r" % (_option(name), minimum, value))
    return number


def _is_set(value):
    return value not in (None, "", 0, 0.0, "0")


def parse_time(value, name):
    """Epoch seconds from epoch seconds (number or text) or ISO 8601 with a zone; the message names the option."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip()
    try:
        return float(text)
    except ValueError:
        pass
    # datetime.fromisoformat takes "Z" only from Python 3.11; the controller may run 3.9.
    iso = text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text
    try:
        moment = datetime.datetime.fromisoformat(iso)
    except ValueError:
        raise CaptureError("%s must be epoch seconds or ISO 8601 with a zone (2026-12-01T15:03:00Z), got %r"
                           % (_option(name), value))
    if moment.tzinfo is None:
        # A time without a zone is read differently on the controller and on every host.
        raise CaptureError("%s must carry a zone (Z or +HH:MM), got %r" % (_option(name), value))
    return moment.timestamp()


def _marker(value):
    marker = str(value)
    if not marker.startswith("/"):
        raise CaptureError("%s must be an absolute path, got %r" % (_option("marker"), value))
    if any(char in marker for char in "\n\r\0"):
        raise CaptureError("%s must not hold a newline or NUL, got %r" % (_option("marker"), value))
    return marker


def plan_window(seconds=None, start=None, end=None, marker=None, max_seconds=DEFAULT_MAX_SECONDS,
                max_lead_seconds=DEFAULT_MAX_LEAD_SECONDS, dstate_interval=1.0, now=None):
    """The capture window from the role's options, or CaptureError naming the option at fault.

    Exactly one form: seconds, start and end, or marker. now is the controller's epoch time.
    Returns {kind, seconds, start_at, end_at, marker, marker_on, max_seconds, dstate_interval}: for
    "seconds" start_at is None (the window starts when the statistics are read); for "marker"
    seconds is None (it ends when the marker exists on every client, or at max_seconds).
    """
    max_seconds = _positive(max_seconds, "max_seconds")
    max_lead_seconds = _positive(max_lead_seconds, "max_lead_seconds")
    interval = _positive(dstate_interval, "dstate_interval")
    if interval < MIN_DSTATE_INTERVAL:
        raise CaptureError("%s must be at least %g s (each sample reads every task's /proc/PID/stat), got %r"
                           % (_option("dstate_interval"), MIN_DSTATE_INTERVAL, dstate_interval))
    forms = [name for name, value in (("seconds", seconds), ("start", start), ("end", end), ("marker", marker)) if _is_set(value)]
    if not forms:
        raise CaptureError("set one window: %s (now for N seconds), %s and %s (from T1 to T2) or %s (until the path exists)"
                           % (_option("seconds"), _option("start"), _option("end"), _option("marker")))
    kinds = set("between" if name in ("start", "end") else name for name in forms)
    if len(kinds) > 1:
        raise CaptureError("set only one window form, got %s" % " and ".join(_option(name) for name in forms))
    result = {"kind": kinds.pop(), "seconds": None, "start_at": None, "end_at": None, "marker": None,
              "marker_on": None, "max_seconds": max_seconds, "dstate_interval": interval}
    if result["kind"] == "seconds":
        result["seconds"] = _positive(seconds, "seconds")
    elif result["kind"] == "marker":
        result["marker"] = _marker(marker)
        # Each client checks the path itself (wait_for and the sampler): a path on local tmpfs
        # that the hook touches on every node, or a file on the shared mount (docs/capture-bundle.md).
        result["marker_on"] = "every_client"
        return result
    else:
        result.update(_between(start, end, now, max_lead_seconds))
    planned = float(result["seconds"])
    if planned > max_seconds:
        raise CaptureError("the window is %g s, longer than %s=%g: raise the maximum or shorten the window"
                           % (planned, _option("max_seconds"), max_seconds))
    return result


def _between(start, end, now, max_lead_seconds):
    if not _is_set(start):
        raise CaptureError("%s is needed with %s" % (_option("start"), _option("end")))
    if not _is_set(end):
        raise CaptureError("%s is needed with %s" % (_option("end"), _option("start")))
    start_at = parse_time(start, "start")
    end_at = parse_time(end, "end")
    if now is not None and start_at < now:
        raise CaptureError("%s is %.0f s in the past (%r): the statistics at the window's start cannot be read any more"
                           % (_option("start"), now - start_at, start))
    if end_at <= start_at:
        raise CaptureError("%s (%r) must be after %s (%r)" % (_option("end"), end, _option("start"), start))
    if now is not None and start_at - now > max_lead_seconds:
        raise CaptureError("%s is %.0f s ahead, more than %s=%g" % (_option("start"), start_at - now,
                                                                    _option("max_lead_seconds"), max_lead_seconds))
    return {"start_at": start_at, "end_at": end_at, "seconds": end_at - start_at}


def sampling(window, now):
    """The one D-state sampler per client, launched at now (controller clock) right after the statistics at the start.

    Returns {samples, interval, seconds, until, stop_path, async_seconds}: samples cover the window
    once per interval (the first at once); until is the planned end on the controller's clock;
    stop_path is the marker (the sampler stops when it exists), None otherwise.
    """
    now = float(now)
    if window["kind"] == "seconds":
        seconds = window["seconds"]
    elif window["kind"] == "between":
        seconds = window["end_at"] - now
        if seconds <= 0:
            raise CaptureError("%s passed (%.0f s ago) before the statistics at the start were read"
                               % (_option("end"), -seconds))
    else:
        seconds = window["max_seconds"]
    interval = window["dstate_interval"]
    return {"samples": int(seconds // interval) + 1, "interval": interval, "seconds": round(seconds, 3),
            "until": round(now + seconds, 3), "stop_path": window["marker"],
            "async_seconds": int(math.ceil(seconds)) + ASYNC_MARGIN_SECONDS}


def window_block(window, clients):
    """The `capture` block of context.yml: the window as measured, on the controller's clock.

    clients: {host: {start, end (the host's clock: the time of its host samples at the start and the
    end), clock (its clock_offset result or None), marker_seen (marker windows: True, False when
    the wait reached max_seconds)}}. The window runs from the earliest start to the latest end,
    like MLPerf's rule over ranks; a host whose clock was not measured keeps its own times and is named.
    """
    if not clients:
        raise CaptureError("no client returned statistics at both ends of the window")
    starts, ends, unmeasured, seen, missing = [], [], [], [], []
    for host, entry in sorted(clients.items()):
        offset = clock.offset_of(entry.get("clock"))
        if offset is None:
            unmeasured.append(host)
        starts.append(clock.to_controller_time(float(entry["start"]), offset))
        ends.append(clock.to_controller_time(float(entry["end"]), offset))
        if window["kind"] == "marker":
            (seen if entry.get("marker_seen") else missing).append(host)
    start_at, end_at = min(starts), max(ends)
    block = {
        "kind": window["kind"],
        "requested": {"seconds": window["seconds"], "start_at": window["start_at"], "end_at": window["end_at"],
                      "marker": window["marker"], "max_seconds": window["max_seconds"]},
        "start_at": round(start_at, 6), "end_at": round(end_at, 6), "seconds": round(end_at - start_at, 3),
        # A marker window that ended without its marker on some client ran to max_seconds.
        "hit_max": bool(missing),
        "clients": len(clients), "clocks_measured": not unmeasured, "unmeasured_clocks": unmeasured,
        "dstate_interval": window["dstate_interval"],
    }
    if window["kind"] == "marker":
        block.update({"marker_on": window["marker_on"], "marker_seen_on": seen, "marker_missing_on": missing})
    return block


def written_bytes(deltas):
    """Bytes written over the window from the mount deltas (stats_delta.mount_delta) of every usable client.

    server_write_bytes: serverwritebytes, what WRITE RPCs carried to the server (the wire, the figure);
    application_write_bytes: normalwritebytes + directwritebytes, what write() calls handed the
    client (nfs(5) / fs/nfs/iostat.h); more of it than reached the server means data still in the page cache.
    """
    usable = [delta for delta in deltas if delta.get("usable", True)]
    server = sum(int((delta.get("bytes") or {}).get("serverwritebytes", 0)) for delta in usable)
    application = sum(int((delta.get("bytes") or {}).get("normalwritebytes", 0))
                      + int((delta.get("bytes") or {}).get("directwritebytes", 0)) for delta in usable)
    return {"server_write_bytes": server, "application_write_bytes": application, "clients": len(usable)}


def flag(kind, message):
    return {"kind": kind, "message": message}


def achieved(window, deltas, checkpoint_bytes=0):
    """{bytes_per_second, source, written, seconds, flags}: the capture's achieved figure and what it rests on.

    flags (each {kind, message}) say what the window cannot tell apart: hit_max (the marker never
    came), no_writes, other_writes (more bytes than the operator's checkpoint: other writers or
    rewrites, so the bytes are an upper bound on the checkpoint's), missed_checkpoint (fewer:
    the window missed part of it, or it was still in the page cache), unflushed (write() bytes
    the server had not received when the window ended).
    """
    written = written_bytes(deltas)
    seconds = float(window.get("seconds") or 0.0)
    server = written["server_write_bytes"]
    flags = []
    if window.get("hit_max"):
        flags.append(flag("hit_max", "the window reached %s (%g s) before the marker existed on %s"
                          % (_option("max_seconds"), seconds, ", ".join(window.get("marker_missing_on") or []) or "every client")))
    if server <= 0:
        flags.append(flag("no_writes", "no WRITE bytes reached the server over the window: no checkpoint was written in it"))
    checkpoint_bytes = int(checkpoint_bytes or 0)
    if checkpoint_bytes and server > checkpoint_bytes * (1 + BYTES_TOLERANCE):
        flags.append(flag("other_writes", "%d bytes written beyond the stated checkpoint of %d bytes (other writers on the mount "
                                          "or rewrites): the written bytes, and the throughput, are an upper bound on the "
                                          "checkpoint's share" % (server - checkpoint_bytes, checkpoint_bytes)))
    elif checkpoint_bytes and 0 < server < checkpoint_bytes * (1 - BYTES_TOLERANCE):
        flags.append(flag("missed_checkpoint", "only %d of the stated checkpoint's %d bytes reached the server in the window: "
                                               "it missed part of the checkpoint, or the checkpoint was still in the page cache"
                          % (server, checkpoint_bytes)))
    unflushed = written["application_write_bytes"] - server
    if unflushed > max(1, server) * BYTES_TOLERANCE:
        flags.append(flag("unflushed", "applications wrote %d bytes more than reached the server: still in the client's page "
                                       "cache when the window ended (no fsync in the window)" % unflushed))
    return {"bytes_per_second": server / seconds if seconds > 0 else 0.0, "source": SOURCE, "written": written,
            "seconds": seconds, "flags": flags, "note": NO_CANARY}


def context_document(mount_point, label, target_checkpoint_bytes, target_window_seconds, network, window, written):
    """context.yml of a capture bundle: `source: capture`, the target, and the `capture` block (window_block()).

    target_checkpoint_bytes or target_window_seconds 0 (or None) means not given: null in the target
    (CONTRACT 2), never the bytes written over the window, which judged the window against itself.
    A key whose value is None or {} is left out.
    """
    checkpoint_bytes = int(target_checkpoint_bytes or 0)
    block = dict(window)
    if written is not None:
        block.update({"server_write_bytes": written["server_write_bytes"],
                      "application_write_bytes": written["application_write_bytes"]})
    document = {
        "source": "capture",
        "mount_point": mount_point,
        "label": label,
        "target": dict({"checkpoint_bytes": checkpoint_bytes or None,
                        "window_seconds": float(target_window_seconds) if target_window_seconds else None},
                       **({"checkpoint_bytes_from": "operator"} if checkpoint_bytes else {})),
        "network": network,
        "capture": block,
    }
    return dict((key, value) for key, value in document.items() if value is not None and value != {})


# What a client's capture.json keeps of its clock_offset result (the canary's canary.json keeps the same).
CLOCK_KEYS = ("offset_seconds", "uncertainty_seconds", "samples", "bound_seconds", "within_bound", "message", "reader", "readings")


def client_record(mount_point, before, after, clock_result=None, sampler=None, marker_seen=None):
    """A client's capture.json from its two nfs_client_stats reads, its clock and its D-state sampler.

    start and end are the times of the host samples read with mountstats at each end (this host's
    clock; window_block() moves them onto the controller's); written is written_bytes() of its
    mount's delta (the last block on mount_point, the mount on top, as the diagnosis reads it);
    problems name a delta that cannot be used (stats_delta decides).
    """
    deltas = mountstats_delta(after.get("raw_mountstats") or "", before.get("raw_mountstats") or "", mount_points=[mount_point])
    problems = []
    if not deltas:
        problems.append("no NFS mount on %s in the statistics after the window" % mount_point)
    elif not deltas[-1]["usable"]:
        problems.extend(deltas[-1]["problem_details"] or deltas[-1]["problems"])
    sampler = sampler or {}
    clock_result = clock_result if isinstance(clock_result, dict) else None
    return {
        "start": (before.get("host_sample") or {}).get("time"),
        "end": (after.get("host_sample") or {}).get("time"),
        "clock": None if clock_result is None else dict((key, clock_result.get(key)) for key in CLOCK_KEYS if key in clock_result),
        "written": written_bytes(deltas[-1:] if deltas and deltas[-1]["usable"] else []),
        "dstate_samples": len(sampler.get("dstate") or []),
        "dstate_stop": sampler.get("dstate_stop"),
        "marker_seen": marker_seen,
        "problems": problems,
        "msg": sampler.get("msg") if sampler.get("failed") else "",
    }


def context_from_records(window, records, mount_point, label, target_checkpoint_bytes, target_window_seconds, network):
    """context.yml of a capture bundle from every client's client_record() ({host: record})."""
    timed = dict((host, record) for host, record in records.items()
                 if record.get("start") is not None and record.get("end") is not None)
    written = {"server_write_bytes": sum(record["written"]["server_write_bytes"] for record in timed.values()),
               "application_write_bytes": sum(record["written"]["application_write_bytes"] for record in timed.values()),
               "clients": sum(record["written"]["clients"] for record in timed.values())}
    return context_document(mount_point, label, target_checkpoint_bytes, target_window_seconds, network,
                            window_block(window, timed), written)
