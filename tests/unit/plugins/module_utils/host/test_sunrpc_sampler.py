"""sunrpc_sampler on fake roots built from the bookworm lab client's verbatim files (tests/fixtures/kernels/bookworm/sunrpc)."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root, sunrpc_sampler, sunrpc_views
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle_part

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures", "kernels", "bookworm", "sunrpc")
XPRT = "xprt-switches/switch-0/xprt-0-tcp"


def _kernel_host(root):
    """A host with 6.1's sunrpc sysfs and debugfs files, copied verbatim from the lab client."""
    shutil.copytree(os.path.join(FIXTURE, "sysfs"), os.path.join(root, "sys/kernel/sunrpc"))
    shutil.copytree(os.path.join(FIXTURE, "debugfs/sunrpc"), os.path.join(root, "sys/kernel/debug/sunrpc"))
    return host_root.HostRoot(str(root))


def _fixture(rel):
    with open(os.path.join(FIXTURE, rel)) as handle:
        return handle.read()


def test_samples_are_the_kernel_files_verbatim_under_the_bundle_headers(tmp_path):
    host = _kernel_host(tmp_path)
    # A task list as the lab's baseline showed it (one sample of the load fixture), not the idle one.
    tasks = _fixture("load/rpc_tasks.txt").split("--- rpc_clnt/4/tasks ---\n")[2].split("=== sample")[0]
    with open(os.path.join(tmp_path, "sys/kernel/debug/sunrpc/rpc_clnt/4/tasks"), "w") as handle:
        handle.write(tasks)
    sampler = sunrpc_sampler.RpcSampler(host, "queues")
    sampler.begin(1000.0)
    assert sampler.sample(now=999.0) == 0.0  # before the window: nothing read
    sampler.sample(now=1000.5)
    sampler.sample(now=1001.75)
    sampler.end()
    assert sampler.sample(now=1002.0) == 0.0  # after the window: nothing read
    result = sampler.result()
    expected_xprt = "".join("--- %s/%s ---\n%s" % (XPRT, name, _fixture("sysfs/%s/%s" % (XPRT, name)))
                            for name in ("xprt_info", "xprt_state", "dstaddr"))
    assert result["sunrpc_xprt"] == "=== sample t=0.500 ===\n" + expected_xprt + "=== sample t=1.750 ===\n" + expected_xprt
    first = result["rpc_tasks"].split("=== sample t=1.750 ===\n")[0]
    assert first == "=== sample t=0.500 ===\n--- rpc_clnt/0/tasks ---\n--- rpc_clnt/4/tasks ---\n" + tasks
    assert tasks.count("q:ForeChannel Slot table") > 100
    # rpc_xprt/ (not a client) and the rpc-clients links are not read; tracing was not asked for.
    assert "rpc_xprt" not in result["rpc_tasks"] and result["rpc_latency"] is None
    assert result["notes"] == [] and result["cost"]["passes"] == 2 and result["mode"] == "queues"


def test_a_kernel_without_the_views_writes_no_file_and_says_what_was_not_seen(tmp_path):
    host = host_root.HostRoot(str(tmp_path))
    sampler = sunrpc_sampler.RpcSampler(host, "trace")
    sampler.begin(0.0)
    sampler.sample(now=1.0)
    sampler.end()
    result = sampler.result()
    assert (result["sunrpc_xprt"], result["rpc_tasks"], result["rpc_latency"]) == (None, None, None)
    assert [note.split(":")[0] for note in result["notes"]] == ["sunrpc_xprt", "rpc_tasks", "rpc_latency"]
    assert "5.14" in result["notes"][0] and "debugfs not mounted" in result["notes"][1]
    files = bundle_part.host_files("clients", dstate_text="", samples=result)
    assert [item["name"] for item in files] == ["dstate.txt"]


def test_the_bundle_writer_puts_each_text_in_its_file_verbatim():
    samples = {"sunrpc_xprt": "=== sample t=0.000 ===\n", "rpc_tasks": None, "rpc_latency": "", "notes": ["x"], "mode": "trace"}
    files = bundle_part.host_files("clients", dstate_text="1 0 \n", samples=samples)
    assert files == [{"name": "dstate.txt", "content": "1 0 \n"}, {"name": "sunrpc_xprt.txt", "content": "=== sample t=0.000 ===\n"},
                     {"name": "rpc_latency.txt", "content": ""}]
    assert bundle_part.host_files("servers", samples=samples) == []
    record = bundle_part.canary_record({"rpc_samples": dict(samples, cost={"passes": 1})}, "nfs2", 1.0,
                                       dict.fromkeys(bundle_part.CLOCK_KEYS), dict.fromkeys(bundle_part.PLAN_KEYS))
    assert record["rpc_sampling"] == {"mode": "trace", "notes": ["x"], "cost": {"passes": 1}}


def test_links_are_not_followed_and_an_oversized_task_list_is_left_out_with_a_note(tmp_path, monkeypatch):
    host = _kernel_host(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "xprt_info").write_text("num_reqs=99\n")
    os.symlink(str(elsewhere), os.path.join(tmp_path, "sys/kernel/sunrpc/xprt-switches/switch-0/xprt-1-tcp"))
    with open(os.path.join(tmp_path, "sys/kernel/debug/sunrpc/rpc_clnt/4/tasks"), "w") as handle:
        handle.write("x" * 200)
    monkeypatch.setattr(sunrpc_views, "TASKS_LIMIT", 100)
    sampler = sunrpc_sampler.RpcSampler(host, "queues")
    sampler.begin(0.0)
    sampler.sample(now=1.0)
    sampler.sample(now=2.0)
    result = sampler.result()
    assert "num_reqs=99" not in result["sunrpc_xprt"] and "xprt-1-tcp" not in result["sunrpc_xprt"]
    assert "rpc_clnt/4/tasks" not in result["rpc_tasks"] and "rpc_clnt/0/tasks" in result["rpc_tasks"]
    assert result["notes"] == ["rpc_tasks: rpc_clnt/4/tasks unreadable or over 0 MiB in a sample: left out"]


def test_samples_past_the_text_limit_are_dropped_and_said(tmp_path, monkeypatch):
    host = _kernel_host(tmp_path)
    monkeypatch.setattr(sunrpc_sampler, "SAMPLES_TEXT_LIMIT", 600)
    sampler = sunrpc_sampler.RpcSampler(host, "queues")
    sampler.begin(0.0)
    for second in range(1, 6):
        sampler.sample(now=float(second))
    result = sampler.result()
    assert result["sunrpc_xprt"].count("=== sample") == 1
    assert "sunrpc_xprt: over 0 MiB of samples: none kept after t=2.000" in result["notes"]


def test_off_reads_nothing():
    sampler = sunrpc_sampler.RpcSampler(host_root.HostRoot(FIXTURE), "off")
    sampler.begin(0.0)
    assert sampler.sample(now=1.0) == 0.0
    assert sampler.result()["sunrpc_xprt"] is None and sampler.result()["notes"] == []


# --- tracing on a fake tracefs ------------------------------------------------------------------

EVENTS = ("sunrpc/rpc_stats_latency", "nfs4/nfs4_sequence_done")


def _trace_lines():
    return "".join(line for line in _fixture("load/rpc_latency.txt").splitlines(True)[:40])


def _fake_tracefs(root, events=EVENTS, filters=EVENTS):
    """tracefs as the kernel shows it: instances/ exists, mkdir makes an instance's files, rmdir drops them
    (events: those the kernel has; filters: those whose filter file takes a filter)."""
    tracing = os.path.join(root, "sys/kernel/tracing")
    os.makedirs(os.path.join(tracing, "instances"))

    def mkdir(path):
        os.makedirs(os.path.join(path, "events"))
        with open(os.path.join(path, "events", "enable"), "w") as handle:
            handle.write("0")
        for event in events:
            os.makedirs(os.path.join(path, "events", event))
            with open(os.path.join(path, "events", event, "enable"), "w") as handle:
                handle.write("0")
            if event in filters:
                with open(os.path.join(path, "events", event, "filter"), "w") as handle:
                    handle.write("none\n")
        for name, text in (("buffer_size_kb", "7\n"), ("tracing_on", "1"), ("trace_pipe", _trace_lines())):
            with open(os.path.join(path, name), "w") as handle:
                handle.write(text)
        os.makedirs(os.path.join(path, "per_cpu", "cpu0"))
        with open(os.path.join(path, "per_cpu", "cpu0", "stats"), "w") as handle:
            handle.write("entries: 0\noverrun: 3\ncommit overrun: 0\ndropped events: 2\n")

    return tracing, mkdir


def _enabled(instance, name="enable"):
    values = {}
    for event in EVENTS:
        with open(os.path.join(instance, "events", event, name)) as handle:
            values[event] = handle.read()
    return values


@pytest.fixture
def tracefs(tmp_path, monkeypatch):
    tracing, mkdir = _fake_tracefs(str(tmp_path))
    monkeypatch.setattr(sunrpc_sampler, "MKDIR", mkdir)
    monkeypatch.setattr(sunrpc_sampler, "RMDIR", shutil.rmtree)
    return os.path.join(tracing, "instances", sunrpc_sampler.INSTANCE)


def test_trace_is_set_up_before_the_window_switched_at_its_edges_and_read_once_after_it(tmp_path, tracefs):
    host = _kernel_host(tmp_path)
    sampler = sunrpc_sampler.RpcSampler(host, "trace")
    sampler.prepare()
    # Before the go: the instance is made, sized and filtered in the kernel, its events still off.
    assert _enabled(tracefs) == {"sunrpc/rpc_stats_latency": "0", "nfs4/nfs4_sequence_done": "0"}
    assert _enabled(tracefs, "filter") == {"sunrpc/rpc_stats_latency": 'progname == "nfs"',
                                           "nfs4/nfs4_sequence_done": "slot_nr == 0 || error != 0"}
    with open(os.path.join(tracefs, "buffer_size_kb")) as handle:
        assert int(handle.read()) == max(256, 16384 // os.cpu_count())
    sampler.begin(0.0)
    assert _enabled(tracefs) == {"sunrpc/rpc_stats_latency": "1", "nfs4/nfs4_sequence_done": "1"}
    sampler.sample(now=1.0)
    sampler.sample(now=2.0)
    # The passes read the queues only; the trace stays in the kernel's buffer until the window ends.
    assert sampler.tracer.chunks == [] and os.path.getsize(os.path.join(tracefs, "trace_pipe")) > 0
    sampler.end()
    result = sampler.result()
    assert not os.path.exists(tracefs)
    assert result["rpc_latency"] == _trace_lines() and result["sunrpc_xprt"].count("=== sample") == 2
    assert result["cost"]["trace_events"] == list(EVENTS)
    assert result["notes"] == ["tracing: the kernel lost 5 events (its buffer of %d KiB a CPU, read once after the window, "
                               "was full)" % max(256, 16384 // os.cpu_count())]
    cost = result["cost"]
    assert cost["window_cpu_seconds"] <= cost["cpu_seconds"] + cost["trace_cpu_seconds"]
    # Each figure is rounded to 0.1 ms on its own (sunrpc_sampler's cost): the parts' sum may exceed the rounded total by
    # one unit of that rounding, no more (the compat stage failed on 0.0125 + 0.0011 > 0.0136 in floating point).
    parts = cost["before_window_cpu_seconds"] + cost["after_window_cpu_seconds"]
    assert round(parts - cost["trace_cpu_seconds"], 4) <= 0.0001 and parts > 0
    sampler.end()  # twice is harmless


def test_a_missing_event_and_a_refused_filter_are_said_and_the_rest_traced(tmp_path, monkeypatch):
    tracing, mkdir = _fake_tracefs(str(tmp_path), events=EVENTS[:1], filters=())
    monkeypatch.setattr(sunrpc_sampler, "MKDIR", mkdir)
    monkeypatch.setattr(sunrpc_sampler, "RMDIR", shutil.rmtree)
    sampler = sunrpc_sampler.RpcSampler(_kernel_host(tmp_path), "trace")
    sampler.begin(0.0)
    sampler.end()
    result = sampler.result()
    assert result["cost"]["trace_events"] == ["sunrpc/rpc_stats_latency"] and result["rpc_latency"] == _trace_lines()
    assert result["notes"][:2] == [
        "tracing: the kernel has no nfs4:nfs4_sequence_done event: not traced",
        "tracing: the kernel refused the filter 'progname == \"nfs\"' on sunrpc:rpc_stats_latency: its events are kept unfiltered"]


def test_a_run_called_off_before_its_go_removes_the_prepared_instance(tmp_path, tracefs):
    sampler = sunrpc_sampler.RpcSampler(_kernel_host(tmp_path), "trace")
    sampler.prepare()
    assert os.path.isdir(tracefs)
    sampler.end()
    assert not os.path.exists(tracefs) and sampler.result()["rpc_latency"] == ""
    sampler.begin(1.0)  # after end(): nothing is opened again
    assert not os.path.exists(tracefs) and sampler.due_at() is None


def test_a_failing_window_still_removes_the_instance(tmp_path, tracefs):
    sampler = sunrpc_sampler.RpcSampler(_kernel_host(tmp_path), "trace")
    sampler.begin(0.0)
    with pytest.raises(RuntimeError):
        try:
            raise RuntimeError("a rank broke")
        finally:
            sampler.end()
    assert not os.path.exists(tracefs)


def test_the_next_run_removes_an_instance_a_killed_run_left_and_says_so(tmp_path, tracefs):
    sunrpc_sampler.MKDIR(tracefs)  # as a run killed together with its watchdog leaves it
    with open(os.path.join(tracefs, "events/sunrpc/rpc_stats_latency/enable"), "w") as handle:
        handle.write("1")
    sampler = sunrpc_sampler.RpcSampler(_kernel_host(tmp_path), "off")
    sampler.begin(0.0)
    assert not os.path.exists(tracefs)
    assert sampler.result()["notes"] == [
        "a previous run's tracing instance %s was still there: its events were switched off and it was removed" % tracefs]


KILLED_RUN = textwrap.dedent("""
    import shutil, sys, time
    sys.path[:0] = %(path)r
    from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root, sunrpc_sampler
    from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.host import test_sunrpc_sampler as t
    tracing, mkdir = t._fake_tracefs(sys.argv[1])
    sunrpc_sampler.MKDIR, sunrpc_sampler.RMDIR = mkdir, shutil.rmtree
    sampler = sunrpc_sampler.RpcSampler(host_root.HostRoot(sys.argv[1]), "trace")
    sampler.begin(time.time())
    print("tracing", flush=True)
    time.sleep(600)
""")


def test_a_killed_run_leaves_tracing_off(tmp_path):
    """SIGKILL runs no finally: the detached watchdog sees its pipe close and removes the instance."""
    script = KILLED_RUN % {"path": [p for p in sys.path if p]}
    run = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, universal_newlines=True)
    try:
        assert run.stdout.readline() == "tracing\n"
        instance = os.path.join(str(tmp_path), "sys/kernel/tracing/instances", sunrpc_sampler.INSTANCE)
        assert _enabled(instance)["sunrpc/rpc_stats_latency"] == "1"
        run.send_signal(signal.SIGKILL)
        run.wait(10)
        deadline = time.time() + 10
        while os.path.exists(instance) and time.time() < deadline:
            time.sleep(0.05)
        assert not os.path.exists(instance)
    finally:
        if run.poll() is None:
            run.kill()
        run.stdout.close()


class _FakeCpu:
    """process_time() for the sampler: each read of the views costs what the test says."""

    def __init__(self):
        self.seconds = 0.0

    def process_time(self):
        return self.seconds

    def time(self):
        return 0.0


def test_the_window_s_cpu_stays_within_the_budget_a_costly_pass_pushes_the_next_out(tmp_path, monkeypatch):
    cpu = _FakeCpu()
    monkeypatch.setattr(sunrpc_sampler, "time", cpu)
    sampler = sunrpc_sampler.RpcSampler(_kernel_host(tmp_path), "queues")
    xprt_text = sampler._xprt_text

    def costly():
        cpu.seconds += 0.25  # a pass of the 2-slot baseline's task lists on a TCG client
        return xprt_text()

    sampler._xprt_text = costly
    sampler.begin(0.0)
    assert sampler.due_at() == 0.0
    assert sampler.sample(now=0.0) == 0.25
    # 0.25 s of CPU is 5 % of 5 s: nothing before t=5, at t=5 the next pass (then 0.5 s over 10 s).
    assert sampler.due_at() == 5.0
    assert sampler.sample(now=1.0) == 0.0 and sampler.sample(now=4.9) == 0.0
    assert sampler.sample(now=5.0) == 0.25 and sampler.due_at() == 10.0
    sampler._xprt_text = xprt_text  # cheap passes again: every INTERVAL once the share is back within the budget
    sampler.sample(now=10.0)
    assert sampler.due_at() == 11.0
    sampler.end()
    result = sampler.result()
    assert result["cost"]["passes"] == 3 and result["sunrpc_xprt"].count("=== sample") == 3
    assert result["cost"]["cpu_seconds"] == 0.5 and result["cost"]["longest_interval_seconds"] == 5.0
    assert sampler.due_at() is None  # the window is closed: the monitor no longer wakes for it


# --- rpc_mount_debugfs on a fake mount table ----------------------------------------------------------------------

class _FakeMounts:
    """mount(2)/umount(2) of debugfs on a fake root: mounting puts the lab's sunrpc debugfs files there, unmounting
    takes them away; calls are recorded."""

    def __init__(self, monkeypatch, mounted=(), error=""):
        self.mounted = set(mounted)
        self.calls = []
        self.error = error
        monkeypatch.setattr(sunrpc_sampler, "MOUNT", self.mount)
        monkeypatch.setattr(sunrpc_sampler, "UMOUNT", self.umount)
        monkeypatch.setattr(sunrpc_sampler, "ISMOUNT", lambda path: path in self.mounted)

    def mount(self, path):
        self.calls.append(("mount", path))
        if self.error:
            return self.error
        shutil.copytree(os.path.join(FIXTURE, "debugfs/sunrpc"), os.path.join(path, "sunrpc"))
        self.mounted.add(path)
        return ""

    def umount(self, path):
        self.calls.append(("umount", path))
        shutil.rmtree(os.path.join(path, "sunrpc"))
        self.mounted.discard(path)
        return ""


def _host_without_debugfs(root):
    host = host_root.HostRoot(str(root))
    shutil.copytree(os.path.join(FIXTURE, "sysfs"), os.path.join(str(root), "sys/kernel/sunrpc"))
    os.makedirs(os.path.join(str(root), "sys/kernel/debug"))
    return host


def test_without_the_option_and_without_debugfs_the_tasks_are_unmeasured_and_nothing_is_mounted(tmp_path, monkeypatch):
    mounts = _FakeMounts(monkeypatch)
    sampler = sunrpc_sampler.RpcSampler(_host_without_debugfs(tmp_path), "queues")
    sampler.begin(0.0)
    sampler.sample(now=0.0)
    sampler.end()
    result = sampler.result()
    assert mounts.calls == [] and result["rpc_tasks"] is None and result["sunrpc_xprt"]
    assert result["notes"] == ["rpc_tasks: unmeasured: no %s/sys/kernel/debug/sunrpc/rpc_clnt (debugfs not mounted, or not readable; "
                               "rpc_mount_debugfs=true mounts it for the window)" % tmp_path]


def test_the_option_mounts_debugfs_for_the_window_and_unmounts_what_it_mounted(tmp_path, monkeypatch):
    mounts = _FakeMounts(monkeypatch)
    debug = os.path.join(str(tmp_path), "sys/kernel/debug")
    sampler = sunrpc_sampler.RpcSampler(_host_without_debugfs(tmp_path), "queues", mount_debugfs=True)
    sampler.prepare()
    assert mounts.calls == [("mount", debug)]
    sampler.begin(0.0)
    sampler.sample(now=0.0)
    sampler.end()
    sampler.end()
    result = sampler.result()
    assert mounts.calls == [("mount", debug), ("umount", debug)] and mounts.mounted == set()
    assert "--- rpc_clnt/4/tasks ---" in result["rpc_tasks"]
    assert result["notes"] == ["rpc_tasks: debugfs was not mounted: mounted at %s for the window (rpc_mount_debugfs) and "
                               "unmounted after it" % debug]
    # Its watchdog was told the unmount was done: a debugfs mounted later by someone else stays.
    os.makedirs(os.path.join(debug, "sunrpc"))
    time.sleep(0.5)
    assert os.path.isdir(os.path.join(debug, "sunrpc"))


def test_the_option_leaves_a_debugfs_mounted_by_someone_else_alone(tmp_path, monkeypatch):
    debug = os.path.join(str(tmp_path), "sys/kernel/debug")
    mounts = _FakeMounts(monkeypatch, mounted=[debug])  # mounted, but without sunrpc (say the module is not loaded)
    sampler = sunrpc_sampler.RpcSampler(_host_without_debugfs(tmp_path), "queues", mount_debugfs=True)
    sampler.begin(0.0)
    sampler.end()
    assert mounts.calls == [] and mounts.mounted == {debug}
    mounts = _FakeMounts(monkeypatch)
    sampler = sunrpc_sampler.RpcSampler(_kernel_host(tmp_path / "with"), "queues", mount_debugfs=True)
    sampler.begin(0.0)
    sampler.end()
    assert mounts.calls == [] and sampler.result()["notes"] == []


def test_a_failed_mount_is_said_and_the_tasks_are_unmeasured(tmp_path, monkeypatch):
    _FakeMounts(monkeypatch, error="Operation not permitted")
    sampler = sunrpc_sampler.RpcSampler(_host_without_debugfs(tmp_path), "queues", mount_debugfs=True)
    sampler.begin(0.0)
    sampler.end()
    notes = sampler.result()["notes"]
    assert notes[0] == "rpc_tasks: rpc_mount_debugfs: could not mount debugfs at %s/sys/kernel/debug: Operation not permitted" % tmp_path
    assert notes[1].startswith("rpc_tasks: unmeasured: no ") and sampler.result()["rpc_tasks"] is None


def test_a_killed_run_s_watchdog_unmounts_the_debugfs_it_mounted(tmp_path, monkeypatch):
    """The watchdog is forked with the fake umount: closing its pipe without DONE is the module's death."""
    _FakeMounts(monkeypatch)
    debug = os.path.join(str(tmp_path), "sys/kernel/debug")
    sampler = sunrpc_sampler.RpcSampler(_host_without_debugfs(tmp_path), "queues", mount_debugfs=True)
    sampler.prepare()
    assert os.path.isdir(os.path.join(debug, "sunrpc"))
    os.close(sampler.debugfs.watchdog_fd)
    deadline = time.time() + 10
    while os.path.exists(os.path.join(debug, "sunrpc")) and time.time() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(os.path.join(debug, "sunrpc"))
