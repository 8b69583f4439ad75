# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The RPC slot table seen while a checkpoint runs: raw samples of the kernel's sunrpc views (issue 47).

checkpoint_canary's monitor (host/canary/run.py) wakes for this sampler's own cadence during the write window
(due_at), apart from the D-state pass: on the lab's loaded TCG clients a D-state pass cost ~0.45 s of CPU and
stretched its own interval to 10 s, and a sampler read only inside it got 3-4 samples in 25-30 s
(tests/fixtures/captures/v47_bookworm_tuned/NOTES.txt). A pass every INTERVAL, as long as the CPU it has spent in
the window (measured, process_time) stays within BUDGET_SHARE of one CPU over the window's seconds (a pass of the
2-slot baseline's task lists took ~0.2 s of CPU there, so ~4 s apart; tests/bench/bench_rpc_sampling.py).
This file only reads and keeps text verbatim, in the capture bundle's formats
(docs/capture-bundle.md): the parsers are module_utils/kernel_text's (one per format).

- sunrpc_xprt.txt: every transport's /sys/kernel/sunrpc/xprt-switches/*/xprt-*/xprt_info and
  xprt_state and dstaddr (sysfs, kernels 5.14 and later; measured on 6.1 and 6.12, absent on 5.10:
  docs/kernels.md), all transports of the host (the parser keeps the mount's by dst_addr);
- rpc_tasks.txt: every /sys/kernel/debug/sunrpc/rpc_clnt/*/tasks (and info where the kernel has
  one), where debugfs is mounted (Debian mounts it at boot; root only): each RPC and the queue
  it sleeps on;
- rpc_latency.txt (rpc_sampling=trace only): the lines of the sunrpc:rpc_stats_latency and
  nfs4:nfs4_sequence_done tracepoints for the window, from a tracefs instance of our own (INSTANCE)
  with a bounded buffer, filtered in the kernel (TRACE_FILTERS). What costs is done outside the
  write window: the instance is made, sized and filtered before the go (prepare), only the events'
  switches are flipped at the window's edges, and the buffer is read once after the window (the
  kernel's lost events counted and said). On the tuned lab (tests/bench/README.md) trace cost 9.0 %
  of one CPU over the window against queues' 2.8 %: the instance's set-up and removal (a tracefs
  directory per kernel event on 6.1) and the drains were paid inside it. The instance is removed
  at the end (finally), by a detached watchdog when the module dies (its pipe reaches EOF, even
  after SIGKILL), and by the next run (clear_left_instance) should both have failed.

Each sample starts with `=== sample t=SECONDS ===` (seconds since the window start), each file with
`--- PATH ---` (relative to /sys/kernel/sunrpc or to debugfs' sunrpc). Reads are bounded
(file_read through HostRoot.read); what a kernel lacks is said in notes, never made up.
"""

from __future__ import annotations

import errno
import os
import time

from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.host import processes
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import dstate

# checkpoint_canary's rpc_sampling: nothing; sysfs + debugfs queues; queues and the tracepoints.
MODES = ("off", "queues", "trace")
# dstaddr: the server address, a file of its own on 6.1 (xprt_info has only dst_port): how a transport is tied to a mount.
XPRT_FILES = ("xprt_info", "xprt_state", "dstaddr")
CLIENT_FILES = ("tasks", "info")
# xprt_info is ~220 bytes (sysfs says 4096); a tasks file is one ~110-byte line per RPC: 4 MiB is
# ~38,000 RPCs of one client (the lab's 2-slot baseline held ~450).
XPRT_LIMIT = 64 * 1024
TASKS_LIMIT = 4 * 1024 * 1024
# Directories walked per sample at most (a host with thousands of mounts stays bounded).
MAX_ENTRIES = 512
# The tracefs instance of ours: its own ring buffer and event switches, so a user's tracing is untouched.
INSTANCE = "ckptio-canary"
# Only what kernel_text/rpc_latency reads (nfs4_setup_sequence was traced until 0.6.0 and never read).
TRACE_EVENTS = ("sunrpc/rpc_stats_latency", "nfs4/nfs4_sequence_done")
# Filters the kernel applies before an event reaches the buffer (tracefs `filter`; fields from the events' format on
# 5.10, 6.1 and 6.12, tests/fixtures/kernels/*/sunrpc/tracefs): only the NFS program's RPCs (the diagnosis keeps no
# other), and of the SEQUENCE replies those on slot 0 or failed - the diagnosis reads only the server's highest_slotid,
# which every reply carries, and slot 0 is the first a client takes (nfs4_alloc_slot: the lowest free one).
TRACE_FILTERS = (("sunrpc/rpc_stats_latency", 'progname == "nfs"'), ("nfs4/nfs4_sequence_done", "slot_nr == 0 || error != 0"))
# The instance's ring buffer over all CPUs (buffer_size_kb is per CPU), and the most trace text kept.
TRACE_BUFFER_TOTAL_KB = 16 * 1024
TRACE_BUFFER_MIN_KB = 256
TRACE_TEXT_LIMIT = 64 * 1024 * 1024
_TRACE_CHUNK = 1024 * 1024
# The most sample text kept per file over a window (it travels in the module's result): past it,
# later samples are left out and a note says from when.
SAMPLES_TEXT_LIMIT = 32 * 1024 * 1024

TEXT_KEYS = ("sunrpc_xprt", "rpc_tasks", "rpc_latency")
# The sampler's own cadence in the window (host/canary/run.py's monitor wakes for it, apart from the D-state pass):
# a pass every INTERVAL seconds while its CPU so far stays within BUDGET_SHARE of the window's seconds (the D-state
# pass's budget, dstate.SAMPLER_MAX_SHARE); a costly pass pushes the next one out until the share is back within it.
INTERVAL = 1.0
BUDGET_SHARE = dstate.SAMPLER_MAX_SHARE
# tracefs makes an instance's files on mkdir and drops them on rmdir; a test's fake tracefs replaces both.
MKDIR = os.mkdir
RMDIR = os.rmdir


def _entries(directory, prefix):
    """Names in directory starting with prefix, real directories only (no link followed), sorted, bounded."""
    try:
        with os.scandir(directory) as scan:
            names = [entry.name for entry in scan if entry.name.startswith(prefix) and entry.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    return sorted(names, key=lambda name: (len(name), name))[:MAX_ENTRIES]


def tracefs_dir(host):
    """The mounted tracefs of host: /sys/kernel/tracing, else debugfs' tracing; None when neither has instances/."""
    for path in (host.tracefs, host.debugfs_tracing):
        if os.path.isdir(os.path.join(path, "instances")):
            return path
    return None


def _write(path, value):
    """Write a tracefs control file (no create, no link followed); False on any OSError."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        os.write(fd, value.encode())
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def remove_instance(instance):
    """Switch our instance's events and tracing off, then remove it (rmdir frees its buffer). True when it is gone."""
    _write(os.path.join(instance, "events", "enable"), "0")
    for event in TRACE_EVENTS:
        _write(os.path.join(instance, "events", event, "enable"), "0")
    _write(os.path.join(instance, "tracing_on"), "0")
    try:
        RMDIR(instance)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            return False
    return not os.path.lexists(instance)


def clear_left_instance(host):
    """A note when a run before left our instance (killed, and its watchdog too): it is switched off and removed."""
    tracing = tracefs_dir(host)
    instance = None if tracing is None else os.path.join(tracing, "instances", INSTANCE)
    if instance is None or not os.path.isdir(instance):
        return None
    if remove_instance(instance):
        return "a previous run's tracing instance %s was still there: its events were switched off and it was removed" % instance
    return "a previous run's tracing instance %s is still there and could not be removed" % instance


def start_watchdog(instance):
    """A detached process that removes instance once the write end returned here is closed (by
    stop(), or by the kernel when this process dies, SIGKILL included). Returns that write end."""
    read_end, write_end = os.pipe()

    def watch():
        processes.quiet_stdio()
        os.closerange(3, read_end)
        os.closerange(read_end + 1, 65536)
        while True:
            try:
                if not os.read(read_end, 64):
                    break
            except InterruptedError:
                continue
            except OSError:
                break
        remove_instance(instance)

    try:
        processes.detach(watch)
    finally:
        os.close(read_end)
    return write_end


class Tracer:
    """The tracepoints of the window in our tracefs instance: prepare() before the window, start() and stop() at its
    edges; the buffer is read once, in stop()."""

    def __init__(self, tracing, cpus):
        self.instance = os.path.join(tracing, "instances", INSTANCE)
        self.cpus = max(1, cpus or 1)
        self.watchdog_fd = None
        self.events = []
        self.enabled = False
        self.chunks = []
        self.size = 0
        self.truncated = False

    def buffer_kb(self):
        return max(TRACE_BUFFER_MIN_KB, TRACE_BUFFER_TOTAL_KB // self.cpus)

    def prepare(self, notes):
        """Make the instance, size its buffer and filter its events, all still off; False (and a note) when it cannot."""
        try:
            MKDIR(self.instance)
        except OSError as exc:
            notes.append("tracing: could not make %s: %s" % (self.instance, file_read.describe_error(exc)))
            return False
        self.watchdog_fd = start_watchdog(self.instance)
        if not _write(os.path.join(self.instance, "buffer_size_kb"), "%d" % self.buffer_kb()):
            notes.append("tracing: could not size the buffer of %s; not traced" % self.instance)
            self.stop()
            return False
        for event in TRACE_EVENTS:
            if os.path.isfile(os.path.join(self.instance, "events", event, "enable")):
                self.events.append(event)
            else:
                notes.append("tracing: the kernel has no %s event: not traced" % event.replace("/", ":"))
        for event, condition in TRACE_FILTERS:
            if event in self.events and not _write(os.path.join(self.instance, "events", event, "filter"), condition):
                notes.append("tracing: the kernel refused the filter '%s' on %s: its events are kept unfiltered"
                             % (condition, event.replace("/", ":")))
        if not self.events:
            self.stop()
            return False
        return True

    def start(self, notes):
        """Switch the events on (the window opens); those that refuse are named in notes. False when none is on."""
        for event in list(self.events):
            if not _write(os.path.join(self.instance, "events", event, "enable"), "1"):
                notes.append("tracing: %s could not be enabled: not traced" % event.replace("/", ":"))
                self.events.remove(event)
        self.enabled = bool(self.events)
        return self.enabled

    def drain(self):
        """Read what the buffer holds (trace_pipe, non-blocking: consumed, at most TRACE_TEXT_LIMIT kept)."""
        try:
            fd = os.open(os.path.join(self.instance, "trace_pipe"), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            return file_read.describe_error(exc)
        try:
            while not self.truncated:
                try:
                    chunk = os.read(fd, _TRACE_CHUNK)
                except BlockingIOError:
                    return None
                except InterruptedError:
                    continue
                except OSError as exc:
                    return file_read.describe_error(exc)
                if not chunk:
                    return None
                if self.size + len(chunk) > TRACE_TEXT_LIMIT:
                    self.truncated = True
                    return None
                self.chunks.append(chunk)
                self.size += len(chunk)
        finally:
            os.close(fd)
        return None

    def overruns(self):
        """Events the kernel dropped or overwrote, summed from per_cpu/cpu*/stats; None when unreadable."""
        total = None
        for cpu in _entries(os.path.join(self.instance, "per_cpu"), "cpu"):
            text = file_read.read(os.path.join(self.instance, "per_cpu", cpu, "stats"), XPRT_LIMIT, kernel=True) or ""
            for line in text.splitlines():
                name, _sep, value = line.partition(":")
                if name.strip() in ("overrun", "dropped events") and value.strip().isdigit():
                    total = (total or 0) + int(value)
        return total

    def stop(self, notes=None):
        """Switch the events off, read the buffer once, then remove the instance. Always safe to call again."""
        if self.enabled:
            self.enabled = False
            for event in self.events:
                _write(os.path.join(self.instance, "events", event, "enable"), "0")
            error = self.drain()
            lost = self.overruns()
            if notes is not None and error:
                notes.append("tracing: could not read %s/trace_pipe: %s" % (self.instance, error))
            if notes is not None and lost:
                notes.append("tracing: the kernel lost %d events (its buffer of %d KiB a CPU, read once after the window, "
                             "was full)" % (lost, self.buffer_kb()))
        gone = remove_instance(self.instance)
        if notes is not None and not gone:
            notes.append("tracing: %s could not be removed; the next run removes it" % self.instance)
        if notes is not None and self.truncated:
            notes.append("tracing: more than %d MiB of trace text: the rest of the window was not kept" % (TRACE_TEXT_LIMIT // 1048576))
            self.truncated = False
        if self.watchdog_fd is not None:
            os.close(self.watchdog_fd)
            self.watchdog_fd = None

    def text(self):
        return b"".join(self.chunks).decode("utf-8", "surrogateescape")


class RpcSampler:
    """The sunrpc views of one canary's write window; mode is checkpoint_canary's rpc_sampling (MODES)."""

    def __init__(self, host, mode="queues"):
        self.host = host
        self.mode = mode
        self.started = None
        self.prepared = False
        self.xprt = []
        self.tasks = []
        self.notes = []
        self.passes = 0
        self.cpu_seconds = 0.0
        self.tracer = None
        # The tracing's CPU: in the window (the events' switches), before it (prepare) and after it (the read, removal).
        self.trace_cpu_seconds = 0.0
        self.trace_setup_cpu_seconds = 0.0
        self.trace_teardown_cpu_seconds = 0.0
        self.has_xprt = self.has_tasks = False
        self.closed = False
        self.has_views = False
        self.next_at = None
        self.longest_interval_seconds = 0.0
        self.sizes = {"sunrpc_xprt": 0, "rpc_tasks": 0}

    def prepare(self):
        """Before the window (the ranks wait for their go): say what the kernel lacks; with mode trace, make the
        tracing instance with its events off. Never raises on a kernel's lack; end() undoes it."""
        if self.prepared:
            return
        self.prepared = True
        left = clear_left_instance(self.host)
        if left:
            self.notes.append(left)
        if self.mode == "off":
            return
        self.has_views = (os.path.isdir(os.path.join(self.host.sunrpc_sysfs, "xprt-switches"))
                          or os.path.isdir(os.path.join(self.host.sunrpc_debugfs, "rpc_clnt")))
        if not os.path.isdir(os.path.join(self.host.sunrpc_sysfs, "xprt-switches")):
            self.notes.append("sunrpc_xprt: no %s/xprt-switches (the kernel predates sunrpc sysfs, 5.14): not sampled"
                              % self.host.sunrpc_sysfs)
        if not os.path.isdir(os.path.join(self.host.sunrpc_debugfs, "rpc_clnt")):
            self.notes.append("rpc_tasks: no %s/rpc_clnt (debugfs not mounted, or not readable): not sampled" % self.host.sunrpc_debugfs)
        if self.mode != "trace":
            return
        tracing = tracefs_dir(self.host)
        if tracing is None:
            self.notes.append("rpc_latency: no tracefs with instances/ at %s: not traced" % self.host.tracefs)
            return
        spent = time.process_time()
        tracer = Tracer(tracing, os.cpu_count())
        if tracer.prepare(self.notes):
            self.tracer = tracer
        self.trace_setup_cpu_seconds += time.process_time() - spent

    def begin(self, window_start):
        """Open the window at window_start (epoch): the tracepoints on (prepare() first, when it was not called)."""
        self.prepare()
        if self.mode == "off" or self.closed:
            return
        self.started = window_start
        if self.tracer is not None:
            spent = time.process_time()
            if not self.tracer.start(self.notes):
                self.tracer.stop()
                self.tracer = None
            self.trace_cpu_seconds += time.process_time() - spent

    def sample(self, now=None):
        """One pass over the transports and the RPC clients when due; its CPU seconds (0.0 when not due, outside the
        window, or with nothing to read). The trace is not read here (once, after the window: end())."""
        now = time.time() if now is None else now
        if self.started is None or self.closed or now < self.started or not self.has_views:
            return 0.0
        if self.next_at is not None and now < self.next_at:
            return 0.0
        spent = time.process_time()
        header = "=== sample t=%.3f ===\n" % (now - self.started)
        xprt = self._xprt_text()
        if xprt is not None:
            self.has_xprt = True
            self._keep("sunrpc_xprt", self.xprt, header + xprt, now)
        tasks = self._tasks_text()
        if tasks is not None:
            self.has_tasks = True
            self._keep("rpc_tasks", self.tasks, header + tasks, now)
        self.passes += 1
        cost = time.process_time() - spent
        self.cpu_seconds += cost
        self.next_at = self._next_at(now)
        self.longest_interval_seconds = max(self.longest_interval_seconds, self.next_at - now)
        return cost

    def _next_at(self, now):
        """When the next pass is due: INTERVAL after this one, or later while the CPU spent so far in the window
        (passes and the tracepoints' switches, measured with process_time) is over BUDGET_SHARE of the window's seconds."""
        spent = self.cpu_seconds + self.trace_cpu_seconds
        return max(now + INTERVAL, self.started + spent / BUDGET_SHARE)

    def due_at(self):
        """The epoch of the next pass while the window is open (the canary's monitor wakes for it), else None."""
        if self.started is None or self.closed or not self.has_views:
            return None
        return self.started if self.next_at is None else self.next_at

    def _keep(self, key, samples, text, now):
        if self.sizes[key] + len(text) > SAMPLES_TEXT_LIMIT:
            if self.sizes[key] <= SAMPLES_TEXT_LIMIT:
                self.notes.append("%s: over %d MiB of samples: none kept after t=%.3f" % (key, SAMPLES_TEXT_LIMIT // 1048576, now - self.started))
                self.sizes[key] = SAMPLES_TEXT_LIMIT + 1
            return
        samples.append(text)
        self.sizes[key] += len(text)

    def _xprt_text(self):
        return xprt_text(self.host)

    def _tasks_text(self):
        return tasks_text(self.host, self.notes)

    def end(self):
        """Close the window: the tracepoints off, their buffer read, their instance gone (safe to call twice, and
        without begin(): a run called off before its go)."""
        self.closed = True
        if self.tracer is not None:
            spent = time.process_time()
            self.tracer.stop(self.notes)
            self.trace_teardown_cpu_seconds += time.process_time() - spent

    def result(self):
        """{sunrpc_xprt, rpc_tasks, rpc_latency: text or None (not sampled), mode, notes, cost}. cost: the passes' CPU
        (cpu_seconds) and the tracing's (trace_cpu_seconds, all of it), and of these what was spent in the write
        window (window_cpu_seconds, the share BUDGET_SHARE bounds) and before and after it."""
        texts = {
            "sunrpc_xprt": "".join(self.xprt) if self.has_xprt else None,
            "rpc_tasks": "".join(self.tasks) if self.has_tasks else None,
            "rpc_latency": self.tracer.text() if self.tracer is not None else None,
        }
        trace_total = self.trace_cpu_seconds + self.trace_setup_cpu_seconds + self.trace_teardown_cpu_seconds
        return dict(texts, mode=self.mode, notes=list(self.notes),
                    cost={"passes": self.passes, "cpu_seconds": round(self.cpu_seconds, 4),
                          "longest_interval_seconds": round(self.longest_interval_seconds, 3),
                          "trace_cpu_seconds": round(trace_total, 4),
                          "window_cpu_seconds": round(self.cpu_seconds + self.trace_cpu_seconds, 4),
                          "before_window_cpu_seconds": round(self.trace_setup_cpu_seconds, 4),
                          "after_window_cpu_seconds": round(self.trace_teardown_cpu_seconds, 4),
                          "budget_share": BUDGET_SHARE,
                          "trace_events": list(self.tracer.events) if self.tracer is not None else []})


def _ended(text):
    return text if text.endswith("\n") or not text else text + "\n"


def xprt_text(host):
    """One read of every transport's files (XPRT_FILES) as the sample container's sections, or None without sunrpc sysfs."""
    switches = os.path.join(host.sunrpc_sysfs, "xprt-switches")
    if not os.path.isdir(switches):
        return None
    parts = []
    for switch in _entries(switches, "switch-"):
        for xprt in _entries(os.path.join(switches, switch), "xprt-"):
            for name in XPRT_FILES:
                text = file_read.read(os.path.join(switches, switch, xprt, name), XPRT_LIMIT, kernel=True)
                if text is not None:
                    parts.append("--- xprt-switches/%s/%s/%s ---\n%s" % (switch, xprt, name, _ended(text)))
    return "".join(parts)


def tasks_text(host, notes):
    """One read of every RPC client's debugfs files (CLIENT_FILES) as sections, or None without debugfs; what could
    not be read is added to notes once."""
    clients = os.path.join(host.sunrpc_debugfs, "rpc_clnt")
    if not os.path.isdir(clients):
        return None
    parts = []
    for client in _entries(clients, ""):
        for name in CLIENT_FILES:
            path = os.path.join(clients, client, name)
            text = file_read.read(path, TASKS_LIMIT, kernel=True)
            if text is not None:
                parts.append("--- rpc_clnt/%s/%s ---\n%s" % (client, name, _ended(text)))
            elif name == "tasks" and os.path.exists(path):
                note = "rpc_tasks: rpc_clnt/%s/tasks unreadable or over %d MiB in a sample: left out" % (client, TASKS_LIMIT // 1048576)
                if note not in notes:
                    notes.append(note)
    return "".join(parts)
