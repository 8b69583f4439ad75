# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The canary's two-phase start: file formats, the go time, the ready/not-ready split, the spread.

Pure: no I/O. The module (plugins/modules/checkpoint_canary.py) writes the ready and done files
and reads the go and abort files through module_utils/host/atomic_file.py; the role
(roles/canary_validation/tasks/clients.yml) waits for the ready files and writes go/abort
through the filter ckptio.nfs.canary_barrier (plugins/filter/canary.py).

Why a barrier: a start time guessed before launching ("start_at = now + lead") fails exactly where
it matters (a slow controller, many hosts, few forks): a fresh clone printed "start_at is 8.2 s in
the past" and a start spread of 9.35 s, and the MLPerf aggregate counted those 9 s as checkpoint
time (issue 14). MLPerf Storage gets a synchronized start from an MPI barrier; this is the same
guarantee without MPI: every host prepares, says ready, and only then is one go time handed out,
a margin ahead that is derived from how long the fan-out actually took.

Signalling: files in a per-run directory on the host's local tmpfs (docs/validation.md "Start
barrier"). A file survives the module being between polls, needs nothing listening on the host,
is written atomically (rename) so a half-written go is never read, and never touches the NFS
mount under test.
"""

from __future__ import annotations

import json
import math

READY_FILE = "ready.json"
GO_FILE = "go.json"
ABORT_FILE = "abort.json"
DONE_FILE = "done.json"
# The restore phase's hook (checkpoint_canary restore=true): after every rank of the host has
# written, the canary writes WRITTEN_FILE and waits for READ_GO_FILE (go_document's format, go_at
# on this host's clock) or ABORT_FILE before any rank reads, the same two steps as the write's start.
WRITTEN_FILE = "written.json"
READ_GO_FILE = "read_go.json"
# A canary whose write failed or stalled writes written.json too, with read_ready false, and exits
# without waiting: the controller's one wait per client (ansible.builtin.wait_for with this
# search_regex, whose match_groupdict says which) then ends on every host that got go, instead of
# sitting out the whole bound for a host that will never read. json.dumps writes `"key": value`.
WRITTEN_READY_PATTERN = r'"read_ready": (?P<read_ready>true|false)'

# The bound on the start spread (controller clock) above which the aggregate is not one
# synchronized checkpoint: the goal is <= 1 s at 64 hosts, and a spread above it is flagged.
SPREAD_BOUND_SECONDS = 1.0
# The go/abort files are written by one module call per host, as the launch was: the measured
# launch-to-ready fan-out bounds how long handing out go takes; 1.5x covers jitter, and 2 s is
# the floor for a single fast host (one ansible.builtin.copy over ssh takes ~0.5-1 s).
GO_MARGIN_FACTOR = 1.5
GO_MARGIN_MIN_SECONDS = 2.0
# A rank whose start is later than this after go counts as "go arrived late" on that host.
LATE_GO_SECONDS = 0.05


def _finite(value, name):
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError("%s must be a number, got %r" % (name, value))
    if not math.isfinite(number):
        raise ValueError("%s must be finite, got %r" % (name, value))
    return number


def ready_document(host_time, pid, ranks, workdir):
    """ready.json: the canary has prepared (directory, files, buffers, ranks forked) at host_time."""
    return {"ready_at": round(float(host_time), 6), "pid": int(pid), "ranks": int(ranks), "workdir": workdir}


def written_document(host_time, pid, ranks, workdir, skipped=None):
    """written.json: every rank of the canary has written and fsynced at host_time; its reads wait for read_go.json.

    skipped (restore.skip_reason: the write failed or stalled) makes it read_ready false: the canary
    will not read and does not wait, and the controller leaves the host out of the read go.
    """
    return {"written_at": round(float(host_time), 6), "pid": int(pid), "ranks": int(ranks), "workdir": workdir,
            "read_ready": skipped is None, "skipped": skipped}


def go_document(go_controller, offset):
    """go.json for one host: go on that host's clock (go_at), and on the controller's, with the offset used."""
    offset = 0.0 if offset is None else float(offset)
    return {"go_at": round(go_controller + offset, 6), "go_controller": round(go_controller, 6),
            "offset_seconds": round(offset, 6)}


def abort_document(reason):
    """abort.json: the controller gave up on this host; the canary cleans up and exits."""
    return {"abort": str(reason)}


def parse_signal(go_text, abort_text):
    """("abort", reason), ("go", host epoch) or (None, None) from the two files' texts (None = absent).

    Abort wins: a host that was told to abort must not start writing even if a go is there. A file
    that does not parse is a failure of the controller, reported as an abort naming it.
    """
    if abort_text is not None:
        try:
            return "abort", str(json.loads(abort_text).get("abort") or "aborted by the controller")
        except (ValueError, AttributeError):
            return "abort", "aborted by the controller (abort file not JSON)"
    if go_text is None:
        return None, None
    try:
        return "go", _finite(json.loads(go_text).get("go_at"), "go_at")
    except (ValueError, AttributeError) as exc:
        return "abort", "go file unreadable: %s" % exc


def go_margin(fanout_seconds):
    """Seconds from now to go: GO_MARGIN_FACTOR x the measured fan-out, at least GO_MARGIN_MIN_SECONDS."""
    fanout = max(0.0, _finite(fanout_seconds, "fanout_seconds"))
    return round(max(GO_MARGIN_MIN_SECONDS, GO_MARGIN_FACTOR * fanout), 3)


def plan_go(ready, offsets, fanout_seconds, now, abort_reason=None):
    """Who goes, who is aborted, and the go time.

    ready: {host: True when its ready file appeared within the bound}; offsets: {host: the host's
    clock offset in seconds, None when unmeasured}; fanout_seconds: controller seconds from the
    launch to the last ready file; now: the controller's time. Returns {go_at (controller clock),
    margin_seconds, fanout_seconds, ready: [hosts], not_ready: [hosts], go: {host: go.json},
    abort: {host: abort.json}}; go_at is None when no host is ready. abort_reason replaces the
    write start's reason in the abort documents (the read go: the host's writes failed or its
    written.json did not come).
    """
    ready_hosts = sorted(host for host, flag in ready.items() if flag)
    not_ready = sorted(host for host, flag in ready.items() if not flag)
    margin = go_margin(fanout_seconds)
    go_at = round(_finite(now, "now") + margin, 6) if ready_hosts else None
    reason = abort_reason or "not ready within the barrier bound (%.1f s after launch)" % max(0.0, float(fanout_seconds))
    return {
        "go_at": go_at, "margin_seconds": margin, "fanout_seconds": round(float(fanout_seconds), 3),
        "ready": ready_hosts, "not_ready": not_ready,
        "go": dict((host, go_document(go_at, offsets.get(host))) for host in ready_hosts),
        "abort": dict((host, abort_document(reason)) for host in not_ready),
    }


def spread(starts, go_at=None, bound=SPREAD_BOUND_SECONDS, uncertainty=0.0):
    """The start spread of ranks whose starts are on one clock (the controller's).

    uncertainty: how far apart the hosts' clocks may still be after the offset correction (the
    two largest clock_offset uncertainties added: the worst pair of hosts). The spread measured
    on corrected clocks cannot see an error in the offsets themselves (go is written with the
    same offsets), so the real spread is only known to be at most spread + uncertainty.

    Returns {start_spread_seconds, uncertainty_seconds, bound_seconds, synchronized,
    max_start_delay_seconds, message}: synchronized is True when spread + uncertainty is within
    the bound, False when the spread alone exceeds it (the aggregate then is not one synchronized
    checkpoint), None when the clocks are too loosely known to tell, or without starts.
    """
    starts = [float(s) for s in starts if s is not None]
    uncertainty = max(0.0, float(uncertainty or 0.0))
    result = {"start_spread_seconds": None, "uncertainty_seconds": round(uncertainty, 6), "bound_seconds": bound,
              "synchronized": None, "max_start_delay_seconds": None, "message": "no rank started"}
    if not starts:
        return result
    value = max(starts) - min(starts)
    result["start_spread_seconds"] = round(value, 6)
    if go_at is not None:
        result["max_start_delay_seconds"] = round(max(abs(s - float(go_at)) for s in starts), 6)
    clocks = " (the hosts' clocks known to +/- %.3f s)" % uncertainty if uncertainty else ""
    if value > bound:
        result["synchronized"] = False
        result["message"] = ("start spread %.3f s exceeds %.1f s: the aggregate is not a synchronized checkpoint "
                             "(the first ranks wrote alone for part of it)" % (value, bound))
    elif value + uncertainty <= bound:
        result["synchronized"] = True
        result["message"] = "ranks started within %.3f s of each other%s, within the %.1f s bound" % (value, clocks, bound)
    else:
        result["message"] = ("ranks started within %.3f s of each other on the corrected clocks, but the hosts' clocks are "
                             "only known to +/- %.3f s: a synchronized start within %.1f s is not confirmed (run chrony, "
                             "or measure the clocks from a closer controller)" % (value, uncertainty, bound))
    return result


# /proc/stat counts USER_HZ ticks, which is 100 on every Linux ABI (proc(5), sysconf(_SC_CLK_TCK)).
USER_HZ = 100.0


def _busy_ticks(proc_stat_text):
    """Busy ticks of the `cpu` line (every state but idle and iowait), or None."""
    for line in (proc_stat_text or "").splitlines():
        words = line.split()
        if words and words[0] == "cpu":
            try:
                counts = [int(word) for word in words[1:9]]
            except ValueError:
                return None
            if len(counts) < 5:
                return None
            return sum(counts) - counts[3] - counts[4]
    return None


def harness_cost(canary_cpu_seconds, ranks_cpu_seconds, start_sample, end_sample):
    """What the harness itself cost this host while the ranks ran.

    canary_cpu_seconds: the canary parent's own CPU (getrusage RUSAGE_SELF) from go to the last
    rank's end; ranks_cpu_seconds: the ranks' CPU (RUSAGE_CHILDREN once they are reaped);
    start_sample/end_sample: the host samples at go and at the end (their proc_stat text).
    other_cpu_seconds is the host's busy CPU in that window that was neither the ranks nor the
    canary: Ansible (its launch, async_status polls, a wait_for), and anything else on the host.
    Why: in the lab the clients were 75-100 % CPU busy while the ranks only slept, from Ansible's
    launch and a 2 s async_status poll (issue 14); the report states this figure so a loaded
    host is seen, not guessed.
    """
    start = _busy_ticks((start_sample or {}).get("proc_stat"))
    end = _busy_ticks((end_sample or {}).get("proc_stat"))
    host = (end - start) / USER_HZ if start is not None and end is not None and end >= start else None
    other = None
    if host is not None:
        other = round(max(0.0, host - ranks_cpu_seconds - canary_cpu_seconds), 3)
    return {"canary_cpu_seconds": round(canary_cpu_seconds, 3), "ranks_cpu_seconds": round(ranks_cpu_seconds, 3),
            "host_busy_cpu_seconds": None if host is None else round(host, 3), "other_cpu_seconds": other}
