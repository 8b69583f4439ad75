# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The canary's two-phase start: file formats, the go time, the ready/not-ready split, the spread.

Pure: no I/O. The module (plugins/modules/checkpoint_canary.py) writes the ready and done files
and reads the go and abort files through module_utils/host/file_read.py and file_write.py; the role
(roles/canary_validation/tasks/clients.yml) waits for the ready files and writes go/abort
through the step canary_barrier (plugins/plugin_utils/canary_steps.py, behind ckptio.nfs.internal).

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

import binascii
import json
import math
import os
import re

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
# This run's id: the host writes it into ready.json (and written.json), the controller echoes it in
# go.json / read_go.json (wait_for's match_groupdict gives it, step canary_barrier passes it on),
# and a go without this run's id is not obeyed: a go file left from an earlier run is not a go.
RUN_ID_PATTERN = r'"run_id": "(?P<run_id>[0-9a-f]{8,64})"'
# Both in one search_regex for written.json: its keys are written in this order.
WRITTEN_PATTERN = WRITTEN_READY_PATTERN + ".*" + RUN_ID_PATTERN

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


def new_run_id():
    """A random id for one run of a module at a barrier (16 hex digits)."""
    return binascii.hexlify(os.urandom(8)).decode()


def ready_document(host_time, pid, ranks, workdir, run_id=None):
    """ready.json: the canary has prepared (directory, files, buffers, ranks forked) at host_time."""
    document = {"ready_at": round(float(host_time), 6), "pid": int(pid), "ranks": int(ranks), "workdir": workdir}
    if run_id is not None:
        document["run_id"] = run_id
    return document


def written_document(host_time, pid, ranks, workdir, skipped=None, run_id=None):
    """written.json: every rank of the canary has written and fsynced at host_time; its reads wait for read_go.json.

    skipped (restore.skip_reason: the write failed or stalled) makes it read_ready false: the canary
    will not read and does not wait, and the controller leaves the host out of the read go.
    """
    document = {"written_at": round(float(host_time), 6), "pid": int(pid), "ranks": int(ranks), "workdir": workdir,
                "read_ready": skipped is None, "skipped": skipped}
    if run_id is not None:
        document["run_id"] = run_id
    return document


def go_document(go_controller, offset, run_id=None):
    """go.json for one host: go on that host's clock (go_at), and on the controller's, with the offset used,
    and the run id the host wrote into its ready file (echoed: only this run's go is obeyed)."""
    offset = 0.0 if offset is None else float(offset)
    document = {"go_at": round(go_controller + offset, 6), "go_controller": round(go_controller, 6),
                "offset_seconds": round(offset, 6)}
    if run_id is not None:
        document["run_id"] = run_id
    return document


def run_id_of(match_groupdict):
    """The run id in a wait_for result's match_groupdict (RUN_ID_PATTERN), or None."""
    value = match_groupdict.get("run_id") if hasattr(match_groupdict, "get") else None
    return value if isinstance(value, str) and re.match(r"^[0-9a-f]{8,64}$", value) else None


def go_time_error(go_at, now, timeout, what="go_at"):
    """Why a go time cannot be obeyed (None when it can): it must be finite and within timeout of now.

    A go is handed out a margin ahead of the controller's now and read within the barrier's
    timeout, so one further ahead than the timeout (a year: the host would sleep it out) or past
    by more than it (a go file left from an earlier run) is not this run's go. Non-finite values
    are refused before any arithmetic (inf would end in OverflowError in time.sleep).
    """
    try:
        value = _finite(go_at, what)
        limit = _finite(timeout, "timeout")
    except ValueError as exc:
        return str(exc)
    if value > now + limit:
        return "%s is %.0f s ahead, more than the %g s allowed: refusing to wait for it" % (what, value - now, limit)
    if value < now - limit:
        return "%s is %.0f s in the past, more than the %g s allowed: not a go of this run" % (what, now - value, limit)
    return None


def abort_document(reason):
    """abort.json: the controller gave up on this host; the canary cleans up and exits."""
    return {"abort": str(reason)}


def parse_signal(go_text, abort_text, run_id=None, now=None, timeout=None):
    """("abort", reason), ("go", host epoch) or (None, None) from the two files' texts (None = absent).

    Abort wins: a host that was told to abort must not start writing even if a go is there. A file
    that does not parse is a failure of the controller, reported as an abort naming it. With
    run_id, a go must echo it; with now and timeout, its go_at must pass go_time_error: a go of
    another run, or one that is not finite or not within timeout of now, is an abort naming why.
    """
    if abort_text is not None:
        try:
            return "abort", str(json.loads(abort_text).get("abort") or "aborted by the controller")
        except (ValueError, AttributeError):
            return "abort", "aborted by the controller (abort file not JSON)"
    if go_text is None:
        return None, None
    try:
        document = json.loads(go_text)
        go_at = _finite(document.get("go_at"), "go_at")
    except (ValueError, AttributeError, RecursionError) as exc:
        return "abort", "go file unreadable: %s" % exc
    if run_id is not None and document.get("run_id") != run_id:
        return "abort", ("go file is not for this run (run_id %r, this run is %r): left from an earlier run?"
                         % (document.get("run_id"), run_id))
    if now is not None and timeout is not None:
        error = go_time_error(go_at, now, timeout)
        if error:
            return "abort", "go file refused: %s" % error
    return "go", go_at


def go_controller_of(go_text):
    """The go on the controller's clock a go file holds (go_document's go_controller), None when absent or not finite:
    the one time every host of a run shares (a job's done markers carry it, canary/shapes.run_token)."""
    try:
        return _finite(json.loads(go_text).get("go_controller"), "go_controller")
    except (ValueError, AttributeError, TypeError, RecursionError):
        return None


def go_margin(fanout_seconds):
    """Seconds from now to go: GO_MARGIN_FACTOR x the measured fan-out, at least GO_MARGIN_MIN_SECONDS."""
    fanout = max(0.0, _finite(fanout_seconds, "fanout_seconds"))
    return round(max(GO_MARGIN_MIN_SECONDS, GO_MARGIN_FACTOR * fanout), 3)


def plan_go(ready, offsets, fanout_seconds, now, abort_reason=None, run_ids=None):
    """Who goes, who is aborted, and the go time.

    ready: {host: True when its ready file appeared within the bound}; offsets: {host: the host's
    clock offset in seconds, None when unmeasured}; fanout_seconds: controller seconds from the
    launch to the last ready file; now: the controller's time. Returns {go_at (controller clock),
    margin_seconds, fanout_seconds, ready: [hosts], not_ready: [hosts], go: {host: go.json},
    abort: {host: abort.json}}; go_at is None when no host is ready. abort_reason replaces the
    write start's reason in the abort documents (the read go: the host's writes failed or its
    written.json did not come). run_ids: {host: the run id its ready file holds}, echoed in its go.
    """
    run_ids = run_ids or {}
    ready_hosts = sorted(host for host, flag in ready.items() if flag)
    not_ready = sorted(host for host, flag in ready.items() if not flag)
    margin = go_margin(fanout_seconds)
    go_at = round(_finite(now, "now") + margin, 6) if ready_hosts else None
    reason = abort_reason or "not ready within the barrier bound (%.1f s after launch)" % max(0.0, float(fanout_seconds))
    return {
        "go_at": go_at, "margin_seconds": margin, "fanout_seconds": round(float(fanout_seconds), 3),
        "ready": ready_hosts, "not_ready": not_ready,
        "go": dict((host, go_document(go_at, offsets.get(host), run_ids.get(host))) for host in ready_hosts),
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
        result["message"] = ("start spread %.3f s exceeds %.1f s: the aggregate is not a synchronized start "
                             "(the first ranks ran alone for part of it)" % (value, bound))
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


# After the barrier, the host's own bound covers the controller's wait for every ready.json and 2 min
# for handing out go; Ansible's async job outlives the writes and the reads (each up to the
# timeout, each killed after kill_grace) by 10 min (roles/canary_validation/tasks/clients.yml).
HOST_BARRIER_EXTRA_SECONDS = 120
READ_WAIT_EXTRA_SECONDS = 30
JOB_EXTRA_SECONDS = 600


def waits(barrier_timeout, timeout, kill_grace, restore):
    """The role's waits, in seconds, from its options.

    read_wait: with restore, how long the controller waits after go for every written.json: the
    write's timeout, the kill grace twice (a stalled write is killed, then written.json says it will
    not read) and 30 s for the module to get there; 0 without restore.
    host_barrier_timeout: the host's own bound on its wait for go (and, with restore, read go: the
    read wait plus the largest read go margin, GO_MARGIN_FACTOR x a fan-out of at most barrier_timeout).
    job_seconds: the async bound of the canary's job and of the wait for its done.json.
    Whole seconds are taken of timeout and kill_grace, as the role always did (Jinja's int)."""
    timeout, kill_grace = int(float(timeout)), int(float(kill_grace))
    read_wait = timeout + 2 * kill_grace + READ_WAIT_EXTRA_SECONDS if restore else 0
    host_barrier_timeout = float(barrier_timeout) + HOST_BARRIER_EXTRA_SECONDS + (
        read_wait + GO_MARGIN_FACTOR * float(barrier_timeout) if restore else 0)
    return {"read_wait": read_wait, "host_barrier_timeout": host_barrier_timeout,
            "job_seconds": int(host_barrier_timeout) + 2 * timeout + 2 * kill_grace + JOB_EXTRA_SECONDS}
