"""Issue 24 items 1-5: nothing written, read or killed outside our own files, no hang.

Each test attacks one class through the real module (or the one helper every module uses) and
failed before the fix: a write through a link planted in a bundle, another user's directory
trusted, a process killed for its command line alone, a go time obeyed a year ahead or a day
late, a FIFO or a 17 MiB file read. docs/safety.md "Never outside our own place" lists them.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import threading
import time

import pytest

from ansible.module_utils import basic

from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_write
from ansible_collections.ckptio.nfs.plugins.module_utils.host import barrier_files
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import barrier
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import probe as probe_utils
from ansible_collections.ckptio.nfs.plugins.modules import checkpoint_canary, checkpoint_report, diagnose_bundle
from ansible_collections.ckptio.nfs.plugins.modules import saved_stats_bundle, tcp_probe, tcp_probe_listener
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_tcp_probe import _module_and_args
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, patch_module_args, run_module, sample_path

SECRET = b"root:secret-hash:19000:0:99999:7:::\n"
OTHER_UID = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
MIB = 1024 * 1024


@pytest.fixture
def module():
    with patch_module_args({}):
        return basic.AnsibleModule(argument_spec={}, supports_check_mode=True)


def copy_bundle(tmp_path, name="seed_like_baseline"):
    dest = tmp_path / name
    shutil.copytree(sample_path("bundles", name), str(dest))
    for dirpath, _dirnames, filenames in os.walk(str(dest)):
        os.chmod(dirpath, 0o755)
        for file_name in filenames:
            os.chmod(os.path.join(dirpath, file_name), 0o644)
    return dest


def secret_file(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "shadow"
    secret.write_bytes(SECRET)
    secret.chmod(0o600)
    return secret


def assert_secret_intact(secret):
    assert secret.read_bytes() == SECRET
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600


def no_secret_in(result):
    return SECRET.decode().strip() not in json.dumps(result)


# ---------------------------------------------------------------- 1. writes never follow a link

@pytest.mark.parametrize("name", ["diagnosis.md", "diagnosis.json"])
def test_diagnose_bundle_refuses_an_output_linked_out_of_the_bundle(tmp_path, name):
    bundle = copy_bundle(tmp_path)
    secret = secret_file(tmp_path)
    os.symlink(str(secret), str(bundle / name))
    result = fail_module(diagnose_bundle, {"bundle": str(bundle)}, diff=True)
    assert str(bundle / name) in result["msg"] and "symbolic link" in result["msg"]
    assert_secret_intact(secret)
    assert os.path.islink(str(bundle / name)) and no_secret_in(result)
    assert not (bundle / "diagnosis.json").exists() or os.path.islink(str(bundle / "diagnosis.json"))


@pytest.mark.parametrize("name", ["report.md", "report.json"])
def test_checkpoint_report_refuses_an_output_linked_out_of_the_bundle(tmp_path, name):
    bundle = copy_bundle(tmp_path)
    secret = secret_file(tmp_path)
    os.symlink(str(secret), str(bundle / name))
    result = fail_module(checkpoint_report, {"bundle": str(bundle), "png": False}, diff=True)
    assert str(bundle / name) in result["msg"] and "symbolic link" in result["msg"]
    assert_secret_intact(secret)
    assert no_secret_in(result)


def test_outputs_are_still_written_and_diffed_when_nothing_is_linked(tmp_path):
    bundle = copy_bundle(tmp_path)
    (bundle / "diagnosis.md").write_text("old diagnosis\n")
    result = run_module(diagnose_bundle, {"bundle": str(bundle)}, diff=True)
    assert result["changed"] and result["diff"][0]["before"] == "old diagnosis\n"
    assert not os.path.islink(str(bundle / "diagnosis.md"))


SEED = os.path.join(os.path.dirname(__file__), "..", "fixtures", "captures", "seed_like_v41")
SAVED = {"before.txt": "clients/nfs2/mountstats_before.txt", "after.txt": "clients/nfs2/mountstats_after.txt"}


def saved_args(tmp_path, dest):
    src = tmp_path / "saved"
    if not src.exists():
        src.mkdir()
        for name, relative in SAVED.items():
            shutil.copyfile(os.path.join(SEED, relative), str(src / name))
    return {"src": str(src), "dest": str(dest), "checkpoint_bytes": 2400000000, "window_seconds": 300,
            "client": "nfs2", "server": "nfs1"}


def test_saved_stats_bundle_rerun_refuses_a_linked_file_in_dest(tmp_path):
    dest = tmp_path / "bundle"
    run_module(saved_stats_bundle, saved_args(tmp_path, dest))
    secret = secret_file(tmp_path)
    linked = dest / "clients" / "nfs2" / "mountstats_after.txt"
    linked.unlink()
    os.symlink(str(secret), str(linked))
    result = fail_module(saved_stats_bundle, saved_args(tmp_path, dest), diff=True)
    assert str(linked) in result["msg"] and "symbolic link" in result["msg"]
    assert_secret_intact(secret)
    assert no_secret_in(result)


def test_saved_stats_bundle_rerun_refuses_a_linked_host_directory(tmp_path):
    dest = tmp_path / "bundle"
    run_module(saved_stats_bundle, saved_args(tmp_path, dest))
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(str(dest / "clients" / "nfs2"), str(elsewhere))
    before = dict((name, (elsewhere / name).read_bytes()) for name in os.listdir(str(elsewhere)))
    shutil.rmtree(str(dest / "clients" / "nfs2"))
    os.symlink(str(elsewhere), str(dest / "clients" / "nfs2"))
    # Another client name: the old client's files are stale and would be removed (through the link).
    args = saved_args(tmp_path, dest)
    args["client"] = "nfs3"
    result = fail_module(saved_stats_bundle, args)
    assert str(dest / "clients" / "nfs2") in result["msg"] and "symbolic link" in result["msg"]
    assert dict((name, (elsewhere / name).read_bytes()) for name in os.listdir(str(elsewhere))) == before


def test_write_file_never_follows_a_link_unless_asked(module, tmp_path):
    secret = secret_file(tmp_path)
    link = tmp_path / "done.json"
    os.symlink(str(secret), str(link))
    with pytest.raises(file_read.FileRefused) as raised:
        file_write.write_file(module, str(link), "{}\n")
    assert raised.value.filename == str(link) and "symbolic link" in str(raised.value)
    with pytest.raises(file_read.FileRefused):
        file_write.write_if_changed(module, str(link), "{}\n")
    assert_secret_intact(secret)
    # A directory between `inside` and the file that is a link is refused too.
    os.symlink(str(secret.parent), str(tmp_path / "host"))
    with pytest.raises(file_read.FileRefused):
        file_write.write_file(module, str(tmp_path / "host" / "x.txt"), "x\n", inside=str(tmp_path))
    assert sorted(os.listdir(str(secret.parent))) == ["shadow"]
    # The documented case (an admin's fstab) still writes through its link.
    target = tmp_path / "real-fstab"
    target.write_text("old\n")
    os.symlink(str(target), str(tmp_path / "fstab"))
    file_write.write_file(module, str(tmp_path / "fstab"), "new\n", follow_links=True)
    assert target.read_text() == "new\n" and os.path.islink(str(tmp_path / "fstab"))


# ---------------------------------------------------------------- 2. state and barrier directories are ours and private

@pytest.mark.parametrize("mode", ["listen", "stop"])
def test_tcp_probe_refuses_a_world_writable_state_dir(tmp_path, mode):
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o777)
    args = {"mode": mode, "state_dir": str(state), "addresses": ["127.0.0.1"], "ports": [5299]}
    result = fail_module(*_module_and_args(args))
    assert "state_dir" in result["msg"] and "writable by group or others" in result["msg"]
    assert stat.S_IMODE(state.stat().st_mode) == 0o777, "refused, never chmod'ed into use"


@needs_root
@pytest.mark.parametrize("mode", ["listen", "stop"])
def test_tcp_probe_refuses_a_state_dir_of_another_user(tmp_path, mode):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.chown(str(state), OTHER_UID, OTHER_UID)
    (state / probe_utils.state_file_name("127.0.0.1", 5299)).write_text(json.dumps(
        {"address": "127.0.0.1", "port": 5299, "pid": os.getpid(), "argv": ["x"]}))
    result = fail_module(*_module_and_args({"mode": mode, "state_dir": str(state), "addresses": ["127.0.0.1"], "ports": [5299]}))
    assert "state_dir %s is owned by uid %d" % (state, OTHER_UID) in result["msg"]
    assert stat.S_IMODE(state.stat().st_mode) == 0o700 and state.stat().st_uid == OTHER_UID


def test_tcp_probe_stop_refuses_a_symlinked_state_dir(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    os.symlink(str(real), str(tmp_path / "state"))
    result = fail_module(tcp_probe_listener, {"state": "stopped", "state_dir": str(tmp_path / "state")})
    assert "state_dir" in result["msg"] and "symbolic link" in result["msg"]


@pytest.fixture
def sender(tmp_path, monkeypatch):
    """tcp_probe mode=send with iperf3 found and run_command answering iperf3's result."""
    calls = []
    programs = {"iperf3": "/usr/bin/iperf3", "timeout": "/usr/bin/timeout"}
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: programs.get(name))

    def run(self, argv, **kwargs):
        calls.append(list(argv))
        with open(sample_path("iperf3", "iperf3-3.12-client-P2-t1-loopback.json")) as handle:
            return 0, handle.read(), ""
    monkeypatch.setattr(basic.AnsibleModule, "run_command", run)
    return calls


@pytest.mark.parametrize("attack", ["world_writable", "other_user"])
def test_barrier_dir_must_be_ours_and_private(tmp_path, sender, attack):
    if attack == "other_user" and os.geteuid() != 0:
        pytest.skip("chown to another user needs root")
    directory = tmp_path / "barrier"
    directory.mkdir(mode=0o700)
    if attack == "world_writable":
        directory.chmod(0o777)
    else:
        os.chown(str(directory), OTHER_UID, OTHER_UID)
    result = fail_module(tcp_probe, {"mode": "send", "server": "127.0.0.1", "barrier_dir": str(directory),
                                     "barrier_timeout": 2})
    assert result["msg"].startswith("barrier_dir %s " % directory)
    assert os.listdir(str(directory)) == [] and sender == []


# ---------------------------------------------------------------- 3. stop kills only what it started

def test_stop_leaves_alone_a_process_with_our_exact_command_line_that_we_did_not_start(tmp_path):
    """Someone runs a program with exactly the recorded command line: it is not ours, stop says so."""
    timeout_bin = shutil.which("timeout")
    fake = tmp_path / "iperf3"
    fake.write_text("#!/bin/sh\nexec sleep 60\n")
    fake.chmod(0o755)
    argv = probe_utils.listen_argv(timeout_bin, str(fake), "127.0.0.1", 5299, 60)
    stranger = subprocess.Popen(argv, start_new_session=True)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    try:
        time.sleep(0.2)
        # A record as main wrote it (pid + argv), and one with a start time that is not the process's.
        (state / probe_utils.state_file_name("127.0.0.1", 5299)).write_text(json.dumps(
            {"address": "127.0.0.1", "port": 5299, "pid": stranger.pid, "argv": argv}))
        result = run_module(tcp_probe_listener, {"state": "stopped", "state_dir": str(state)})
        assert stranger.poll() is None, "a process we did not prove ours was killed"
        assert result["stopped"][0]["pids"] == [] and result["stopped"][0]["left_alone"]
        assert "not signalled (not proven ours)" in result["msg"]
        state.mkdir(mode=0o700, exist_ok=True)
        (state / probe_utils.state_file_name("127.0.0.1", 5299)).write_text(json.dumps(
            {"address": "127.0.0.1", "port": 5299, "pid": stranger.pid, "argv": argv, "starttime": 1,
             "exe": os.path.realpath(timeout_bin), "child_exe": "/bin/sleep"}))
        result = run_module(tcp_probe_listener, {"state": "stopped", "state_dir": str(state)})
        assert stranger.poll() is None
        assert "started at tick" in result["stopped"][0]["left_alone"][0]
    finally:
        os.killpg(stranger.pid, 9)
        stranger.wait()


def test_identity_needs_start_time_executable_and_argv():
    argv = probe_utils.listen_argv("/usr/bin/timeout", "/usr/bin/iperf3", "10.0.0.1", 5201, 60)
    record = {"pid": 100, "argv": argv, "starttime": 5000, "exe": "/usr/bin/timeout", "child_exe": "/usr/bin/iperf3",
              "address": "10.0.0.1", "port": 5201}
    stat_text = "100 (timeout) S 1 100 100 0 -1 4194560 " + " ".join(["0"] * 12) + " 5000 0 0"
    child_stat = "101 (iperf3) S 100 100 100 0 -1 4194560 " + " ".join(["0"] * 12) + " 5001 0 0"
    cmdline = "\0".join(argv) + "\0"
    child_cmdline = "\0".join(argv[4:]) + "\0"
    assert probe_utils.stat_start_time(stat_text) == 5000
    assert probe_utils.identity_problem(record, 100, stat_text, "/usr/bin/timeout", cmdline) is None
    assert probe_utils.identity_problem(record, 101, child_stat, "/usr/bin/iperf3", child_cmdline) is None
    assert "another process now has the pid" in probe_utils.identity_problem(
        record, 100, stat_text.replace(" 5000 ", " 7000 "), "/usr/bin/timeout", cmdline)
    assert "runs /usr/bin/python3" in probe_utils.identity_problem(record, 100, stat_text, "/usr/bin/python3", cmdline)
    assert "runs /usr/bin/evil" in probe_utils.identity_problem(record, 101, child_stat, "/usr/bin/evil", child_cmdline)
    assert "no start time" in probe_utils.identity_problem(dict(record, starttime=None), 100, stat_text,
                                                           "/usr/bin/timeout", cmdline)


# ---------------------------------------------------------------- 4. go times are bounded and belong to this run

@pytest.fixture
def no_long_sleep(monkeypatch):
    """Any sleep longer than 5 s fails the test at once (the module would hold the play)."""
    real_sleep = time.sleep

    def sleep(seconds):
        assert seconds <= 5, "the module went to sleep for %s s" % seconds
        real_sleep(seconds)
    monkeypatch.setattr(time, "sleep", sleep)


# Explicit ids: a test's name must not carry the clock (pytest-xdist's workers collect the same names).
@pytest.mark.parametrize("start_at", [time.time() + 365 * 86400, float("inf"), float("nan"), time.time() - 86400],
                         ids=["a-year-ahead", "inf", "nan", "a-day-ago"])
def test_tcp_probe_start_at_outside_the_bound_fails_naming_it(sender, no_long_sleep, start_at):
    result = fail_module(tcp_probe, {"mode": "send", "server": "127.0.0.1", "start_at": start_at})
    assert "start_at" in result["msg"] and sender == []


@pytest.mark.parametrize("start_at", [time.time() + 365 * 86400, float("inf")], ids=["a-year-ahead", "inf"])
def test_canary_start_at_outside_the_bound_fails_naming_it(tmp_path, no_long_sleep, start_at):
    result = fail_module(checkpoint_canary, {"path": str(tmp_path), "allow_local": True, "ranks": 1,
                                             "bytes_per_rank": 4096, "block_size": 4096, "start_at": start_at},
                         check_mode=True)
    assert "start_at" in result["msg"]


def release(directory, name, document, delay=0.0):
    """The controller in a thread: after ready.json, write `name` (document, run_id taken from ready unless given)."""
    def play():
        deadline = time.time() + 10
        while not (directory / barrier.READY_FILE).exists() and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(delay)
        doc = dict(document)
        if doc.get("run_id") == "echo":
            doc["run_id"] = json.loads((directory / barrier.READY_FILE).read_text())["run_id"]
        (directory / (name + ".tmp")).write_text(json.dumps(doc))
        os.rename(str(directory / (name + ".tmp")), str(directory / name))
    thread = threading.Thread(target=play, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("go_at, run_id, why", [
    (time.time() + 365 * 86400, "echo", "ahead"),
    (float("inf"), "echo", "finite"),
    (time.time() + 0.3, "0123456789abcdef", "not for this run"),
    (time.time() + 0.3, None, "not for this run"),
], ids=["a-year-ahead", "inf", "another-run-id", "no-run-id"])
def test_tcp_probe_go_that_is_not_this_runs_or_too_far_is_an_abort(tmp_path, sender, no_long_sleep, go_at, run_id, why):
    directory = tmp_path / "barrier"
    document = {"go_at": go_at} if run_id is None else {"go_at": go_at, "run_id": run_id}
    thread = release(directory, barrier.GO_FILE, document)
    started = time.monotonic()
    result = fail_module(tcp_probe, {"mode": "send", "server": "127.0.0.1", "barrier_dir": str(directory),
                                     "barrier_timeout": 30})
    thread.join()
    assert time.monotonic() - started < 5
    assert result["msg"].startswith("probe aborted before sending") and why in result["msg"] and sender == []


def test_a_day_old_go_left_from_an_earlier_run_is_not_obeyed(tmp_path, sender, no_long_sleep):
    directory = tmp_path / "barrier"
    directory.mkdir(mode=0o700)
    (directory / barrier.GO_FILE).write_text(json.dumps(barrier.go_document(time.time() - 86400, 0.0)))
    result = fail_module(tcp_probe, {"mode": "send", "server": "127.0.0.1", "barrier_dir": str(directory),
                                     "barrier_timeout": 2})
    assert result["msg"].startswith("probe aborted before sending") and sender == []


def test_an_hour_old_read_go_is_not_obeyed(module, tmp_path):
    directory = tmp_path / "barrier"
    assert barrier_files.prepare_dir(str(directory)) is None
    go_at, _info = barrier_files.wait_for_go(module, str(directory), barrier.ready_document(time.time(), 1, 1, "/w"), 5)
    assert go_at is None
    run = barrier_files.run_id(str(directory))
    (directory / barrier.READ_GO_FILE).write_text(json.dumps(barrier.go_document(time.time() - 3600, 0.0, run)))
    go_at, info = barrier_files.wait_for_read_go(module, str(directory),
                                                 barrier.written_document(time.time(), 1, 1, "/w"), 1)
    assert go_at is None and "in the past" in info["abort"]
    # The same run's read go within the bound is obeyed; written.json carries the run id to echo.
    (directory / barrier.READ_GO_FILE).write_text(json.dumps(barrier.go_document(time.time() + 0.1, 0.0, run)))
    (directory / barrier.WRITTEN_FILE).unlink()
    go_at, info = barrier_files.wait_for_read_go(module, str(directory),
                                                 barrier.written_document(time.time(), 1, 1, "/w"), 5)
    assert go_at is not None and info["signal"] == "go"
    assert json.loads((directory / barrier.WRITTEN_FILE).read_text())["run_id"] == run


# ---------------------------------------------------------------- 5. special files and bounded reads

def test_a_fifo_named_go_json_does_not_block_past_the_barrier(tmp_path, sender):
    directory = tmp_path / "barrier"
    directory.mkdir(mode=0o700)
    fifo = directory / barrier.GO_FILE
    os.mkfifo(str(fifo))

    def unblock():
        # Before the fix the reader blocked in open(); a writer after 8 s lets such a test end (and fail).
        time.sleep(8)
        try:
            os.close(os.open(str(fifo), os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
    threading.Thread(target=unblock, daemon=True).start()
    started = time.monotonic()
    result = fail_module(tcp_probe, {"mode": "send", "server": "127.0.0.1", "barrier_dir": str(directory),
                                     "barrier_timeout": 0.5})
    assert time.monotonic() - started < 5
    assert "go.json" in result["msg"] and "FIFO" in result["msg"] and sender == []


def test_a_go_json_linked_elsewhere_is_refused_not_read(tmp_path, sender):
    directory = tmp_path / "barrier"
    directory.mkdir(mode=0o700)
    elsewhere = tmp_path / "go-elsewhere.json"
    elsewhere.write_text(json.dumps({"go_at": time.time()}))
    os.symlink(str(elsewhere), str(directory / barrier.GO_FILE))
    result = fail_module(tcp_probe, {"mode": "send", "server": "127.0.0.1", "barrier_dir": str(directory),
                                     "barrier_timeout": 2})
    assert "go.json" in result["msg"] and "symbolic link" in result["msg"] and sender == []


def sparse(path, size):
    with open(str(path), "wb") as handle:
        handle.truncate(size)


def test_read_input_refuses_links_special_files_and_files_over_the_cap(tmp_path):
    os.symlink("/dev/zero", str(tmp_path / "zero"))
    os.mkfifo(str(tmp_path / "fifo"))
    sparse(tmp_path / "big", 17 * MIB)
    (tmp_path / "small").write_text("ok\n")
    cases = {"zero": "symbolic link", "fifo": "FIFO", "big": "larger than the 16 MiB cap"}
    for name, why in cases.items():
        with pytest.raises(file_read.FileRefused) as raised:
            file_read.read(str(tmp_path / name))
        assert why in str(raised.value) and str(tmp_path / name) in str(raised.value)
    with pytest.raises(file_read.FileRefused):
        file_read.read(str(tmp_path), 10)
    assert file_read.read(str(tmp_path / "small")) == "ok\n"
    assert file_read.read(str(tmp_path / "absent")) is None
    # /proc files say size 0: the cap holds by reading at most cap + 1 bytes.
    with pytest.raises(file_read.FileRefused):
        file_read.read("/proc/self/maps", 10, follow_links=True, binary=True)
    # Kernel files (kernel=True): bounded, and a device is None, never read whole.
    assert file_read.read("/dev/zero", kernel=True) is None
    assert file_read.read(str(tmp_path / "fifo"), kernel=True) is None


def test_saved_stats_bundle_names_a_src_file_over_the_cap(tmp_path):
    dest = tmp_path / "bundle"
    args = saved_args(tmp_path, dest)
    sparse(tmp_path / "saved" / "huge.txt", 17 * MIB)
    os.mkfifo(str(tmp_path / "saved" / "pipe"))
    result = fail_module(saved_stats_bundle, args)
    assert "huge.txt" in result["msg"] and "16 MiB cap" in result["msg"]
    assert not dest.exists()


def test_saved_stats_bundle_does_not_read_a_src_file_through_a_link(tmp_path):
    dest = tmp_path / "bundle"
    args = saved_args(tmp_path, dest)
    secret = secret_file(tmp_path)
    os.symlink(str(secret), str(tmp_path / "saved" / "linked.txt"))
    result = fail_module(saved_stats_bundle, args)
    assert "linked.txt" in result["msg"] and "symbolic link" in result["msg"] and no_secret_in(result)


@pytest.mark.parametrize("name", ["clients/nfs2/dstate.txt", "context.yml"])
def test_diagnose_bundle_names_a_bundle_file_over_the_cap(tmp_path, name):
    bundle = copy_bundle(tmp_path)
    hosts = os.listdir(str(bundle / "clients"))
    path = bundle / name.replace("nfs2", hosts[0])
    sparse(path, 17 * MIB)
    result = fail_module(diagnose_bundle, {"bundle": str(bundle)})
    assert str(path) in result["msg"] and "16 MiB cap" in result["msg"]
    assert not (bundle / "diagnosis.json").exists()
