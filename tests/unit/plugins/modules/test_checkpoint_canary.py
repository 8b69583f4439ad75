"""checkpoint_canary through its real main(): real forked ranks writing into tmp_path."""
from __future__ import annotations

import errno
import json
import os
import resource
import socket
import signal
import time

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.host import processes
from ansible_collections.ckptio.nfs.plugins.module_utils.host.canary import cleanup as canary_cleanup
from ansible_collections.ckptio.nfs.plugins.module_utils.host.canary import ranks as canary_ranks
from ansible_collections.ckptio.nfs.plugins.module_utils.host.canary import run as canary_run
from ansible_collections.ckptio.nfs.plugins.modules import checkpoint_canary
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module, tree_checksums

KIB = 1024


@pytest.fixture(autouse=True)
def live_host(fake_root):
    """The fake host shows the live host's figures the ranks' window samples; a test replaces one file."""
    fake_root.link_live("/proc/self/mountinfo", "/proc/meminfo", "/proc/stat", "/proc/uptime", "/proc/diskstats",
                        "/proc/net", "/proc/sys/kernel/osrelease", "/sys/class/net")
    return fake_root


@pytest.fixture
def target(tmp_path):
    path = tmp_path / "target"
    path.mkdir()
    return path


def _args(path, **extra):
    args = {"path": str(path), "ranks": 3, "bytes_per_rank": 64 * KIB, "block_size": 16 * KIB,
            "allow_local": True, "timeout": 60}
    args.update(extra)
    return args


def _device(path):
    """MAJ:MIN of the file system holding path, as mountinfo shows it (the canary checks the opened fd's)."""
    st_dev = os.stat(path).st_dev
    return "%d:%d" % (os.major(st_dev), os.minor(st_dev))


def _workdirs(path):
    return [name for name in os.listdir(path) if name.startswith("ckptio-canary-")]


def test_shared_file_writes_ranks_times_bytes_and_cleans_up(target):
    result = run_module(checkpoint_canary, _args(target))
    assert result["changed"] is False
    assert [r["bytes"] for r in result["ranks"]] == [64 * KIB] * 3
    assert result["summary"]["total_bytes"] == 3 * 64 * KIB
    assert result["summary"]["finished_ranks"] == 3
    assert all(r["error"] is None and r["end"] >= r["start"] for r in result["ranks"])
    assert result["cleaned_up"] is True
    assert _workdirs(target) == []


def test_keep_leaves_exactly_the_planned_bytes_in_a_0700_dir(target):
    result = run_module(checkpoint_canary, _args(target, keep=True, layout="file_per_rank", files_per_rank=2),
                        diff=True)
    assert result["changed"] is True
    workdir = result["workdir"]
    assert os.path.dirname(workdir) == str(target)
    assert os.stat(workdir).st_mode & 0o777 == 0o700
    files = sorted(os.listdir(workdir))
    assert len(files) == 6
    assert sum(os.path.getsize(os.path.join(workdir, f)) for f in files) == 3 * 64 * KIB
    assert result["diff"][0]["after"].splitlines() == files


def test_shared_file_data_is_not_zeros_and_blocks_differ(target):
    result = run_module(checkpoint_canary, _args(target, keep=True, ranks=2))
    with open(os.path.join(result["workdir"], "shared.ckpt"), "rb") as handle:
        data = handle.read()
    assert len(data) == 2 * 64 * KIB
    blocks = [data[i:i + 16 * KIB] for i in range(0, len(data), 16 * KIB)]
    assert all(block.count(0) < len(block) // 2 for block in blocks)
    assert len(set(blocks)) == len(blocks)


def test_writes_nothing_outside_its_own_directory(tmp_path, target):
    (target / "existing").write_text("user data\n")
    before = tree_checksums(str(tmp_path))
    result = run_module(checkpoint_canary, _args(target, keep=True))
    after = tree_checksums(str(tmp_path))
    workdir_rel = os.path.relpath(result["workdir"], str(tmp_path))
    new = {key for key in after if key not in before}
    assert new and all(key == workdir_rel or key.startswith(workdir_rel + os.sep) for key in new)
    assert all(after[key] == value for key, value in before.items() if key != "target")


def test_symlinked_target_that_escapes_is_refused(tmp_path, target):
    outside = tmp_path / "outside"
    outside.mkdir()
    link = target / "escape"
    link.symlink_to(outside)
    before = tree_checksums(str(tmp_path))
    result = fail_module(checkpoint_canary, _args(link))
    assert "symbolic link" in result["msg"] and "path" in result["msg"]
    assert tree_checksums(str(tmp_path)) == before


def test_non_nfs_path_is_refused_unless_allowed(target):
    result = fail_module(checkpoint_canary, _args(target, allow_local=False))
    assert "not NFS" in result["msg"] and "allow_local" in result["msg"]
    assert _workdirs(target) == []


def test_nfs_mount_is_accepted_without_allow_local(fake_root, tmp_path, target):
    fake_root.write("/proc/self/mountinfo", "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
                                            "40 22 %s / %s rw - nfs4 10.0.0.1:/srv rw,vers=4.1\n" % (_device(target), target))
    result = run_module(checkpoint_canary, _args(target, allow_local=False), check_mode=True)
    assert result["mount"] == {"mount_point": str(target), "fstype": "nfs4", "source": "10.0.0.1:/srv"}


def test_host_samples_at_start_and_end_name_the_nfs_server(fake_root, tmp_path, target):
    """The canary samples CPU, disks and links over the ranks' own window, routed to the mount's server."""
    fake_root.write("/proc/self/mountinfo", "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
                                            "40 22 %s / %s rw - nfs4 nfs1:/srv rw,vers=4.1,addr=10.0.0.1\n" % (_device(target), target))
    result = run_module(checkpoint_canary, {"path": str(target), "ranks": 2, "bytes_per_rank": 65536, "block_size": 65536})
    samples = result["host_samples"]
    assert sorted(samples) == ["end", "start"]
    assert samples["start"]["nfs_server_addresses"] == ["10.0.0.1"]
    assert samples["start"]["time"] <= min(rank["start"] for rank in result["ranks"]) + 1.0
    assert samples["end"]["time"] >= max(rank["end"] for rank in result["ranks"])
    assert samples["end"]["proc_stat"].startswith("cpu ")


def test_nfs_path_is_accepted_with_a_non_utf8_mount_point_elsewhere(fake_root, tmp_path, target):
    # Another mount of the host at /data/caf\xe9 (byte 0xE9): mountinfo is bytes, not UTF-8 text.
    fake_root.write("/proc/self/mountinfo",
                    b"22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
                    b"31 22 8:17 / /data/caf\xe9 rw - ext4 /dev/sdb1 rw\n"
                    b"40 22 " + _device(target).encode() + b" / " + os.fsencode(str(target)) + b" rw - nfs4 10.0.0.1:/srv/caf\xe9 rw,vers=4.1\n")
    result = run_module(checkpoint_canary, _args(target, allow_local=False), check_mode=True)
    # The export's name is shown with the kernel's octal escape: results must be valid UTF-8.
    assert result["mount"] == {"mount_point": str(target), "fstype": "nfs4", "source": "10.0.0.1:/srv/caf\\351"}
    json.dumps(result, ensure_ascii=False).encode("utf-8")


def test_check_mode_writes_nothing(tmp_path, target):
    before = tree_checksums(str(tmp_path))
    result = run_module(checkpoint_canary, _args(target, keep=True), check_mode=True)
    assert tree_checksums(str(tmp_path)) == before
    assert len(result["plan"]) == 3 and "ranks" not in result


@pytest.mark.parametrize("extra, option", [
    ({"ranks": 0}, "ranks"),
    ({"block_size": 1000, "direct": True}, "block_size"),
    ({"block_size": 4, "bytes_per_rank": 64}, "block_size"),
    ({"files_per_rank": 2}, "files_per_rank"),
    ({"timeout": 0}, "timeout"),
    ({"kill_grace": -1}, "kill_grace"),
    ({"path": "relative/dir"}, "path"),
])
def test_bad_input_fails_naming_the_option_before_writing(tmp_path, target, extra, option):
    before = tree_checksums(str(tmp_path))
    result = fail_module(checkpoint_canary, dict(_args(target), **extra))
    assert result["msg"].startswith(option)
    assert tree_checksums(str(tmp_path)) == before


def test_missing_directory_is_refused(target):
    result = fail_module(checkpoint_canary, _args(target / "nope"))
    assert "not an existing directory" in result["msg"]


def test_start_at_holds_every_rank_until_then(target):
    start_at = time.time() + 1.5
    result = run_module(checkpoint_canary, _args(target, start_at=start_at))
    assert all(r["start"] >= start_at for r in result["ranks"])
    assert result["summary"]["max_start_delay_seconds"] < 1.0
    assert result["start_at"] == start_at


def test_rank_error_fails_and_still_cleans_up(target, monkeypatch):
    real_run_rank = canary_ranks.run_rank

    def failing_rank(dir_fd, rank_plan, *args):
        if rank_plan["rank"] == 1:
            raise OSError(28, "No space left on device")
        return real_run_rank(dir_fd, rank_plan, *args)

    def wrapped(dir_fd, rank_plan, *args):
        try:
            return failing_rank(dir_fd, rank_plan, *args)
        except OSError as exc:
            return {"rank": rank_plan["rank"], "pid": os.getpid(), "start": time.time(), "end": None,
                    "bytes": 0, "error": "ENOSPC: %s" % exc.strerror}

    monkeypatch.setattr(canary_ranks, "run_rank", wrapped)
    result = fail_module(checkpoint_canary, _args(target))
    assert "rank 1: ENOSPC" in result["msg"]
    assert result["cleaned_up"] is True and _workdirs(target) == []


def _sleep_forever_on_rank(rank, monkeypatch):
    real_run_rank = canary_ranks.run_rank

    def worker(dir_fd, rank_plan, *args):
        if rank_plan["rank"] == rank:
            while True:
                time.sleep(3600)
        return real_run_rank(dir_fd, rank_plan, *args)

    monkeypatch.setattr(canary_ranks, "run_rank", worker)


def test_timeout_names_the_stalled_rank_and_returns(target, monkeypatch):
    _sleep_forever_on_rank(2, monkeypatch)
    started = time.monotonic()
    result = fail_module(checkpoint_canary, _args(target, timeout=2, kill_grace=2))
    elapsed = time.monotonic() - started
    assert elapsed < 2 + 2 + 3  # timeout + grace + fork/cleanup slack: the module did not hang
    assert [s["rank"] for s in result["stalled"]] == [2]
    assert result["stalled"][0]["state"] == "S" and result["stalled"][0]["exited"] is True
    assert "rank 2 (pid %d) sleeping" % result["stalled"][0]["pid"] in result["msg"]
    assert result["summary"]["incomplete_ranks"] == [2]
    assert result["cleaned_up"] is True and _workdirs(target) == []


def test_unkillable_rank_is_reported_and_cleanup_is_deferred(target, monkeypatch):
    """A task in D ignores SIGKILL: simulate it by not delivering the kill."""
    _sleep_forever_on_rank(0, monkeypatch)
    monkeypatch.setattr(processes, "kill", lambda pid: None)
    result = fail_module(checkpoint_canary, _args(target, ranks=2, timeout=1, kill_grace=1))
    stalled = result["stalled"]
    assert [s["rank"] for s in stalled] == [0] and stalled[0]["exited"] is False
    assert "still alive after SIGKILL" in result["msg"]
    helper = result["cleanup_deferred_pid"]
    assert helper and "deferred to pid %d" % helper in result["msg"]
    assert _workdirs(target)  # the helper waits for the rank before deleting
    os.kill(stalled[0]["pid"], signal.SIGKILL)
    os.waitpid(stalled[0]["pid"], 0)
    for _attempt in range(100):
        if not _workdirs(target):
            break
        time.sleep(0.1)
    assert _workdirs(target) == []


def test_dstate_samples_use_the_bundle_format(fake_root, target):
    fake_root.write("/proc/77/stat", "77 (writer) D 1 77 77 0 -1 0 " + "0 " * 12 + "5\n")
    fake_root.write("/proc/77/wchan", "rpc_wait_bit_killable")
    result = run_module(checkpoint_canary, _args(target, ranks=1))
    assert result["dstate_peak"] == 1
    first = result["dstate_text"].splitlines()[0].split(" ")
    assert first[1:] == ["1", "rpc_wait_bit_killable"]


def test_a_costly_d_state_pass_stretches_the_sampling_interval(target, monkeypatch):
    """Issue 14, the harness must not load what it measures: in the lab's 1-vCPU TCG clients a pass
    over /proc took ~0.1-0.2 s of CPU, so one a second was 10-20 % of the CPU the ranks needed. A
    pass that costs more than dstate.SAMPLER_MAX_SHARE of its interval stretches the interval, and
    the result says what the sampler cost."""
    passes = []

    def slow_scan(proc):
        passes.append(time.time())
        return [], 0.25  # 0.25 s of CPU a pass: 5 s between passes keeps it at 5 %

    monkeypatch.setattr(canary_run.dstate_scan, "scan", slow_scan)
    result = run_module(checkpoint_canary, _args(target, ranks=1, bytes_per_rank=65536))
    sampler = result["harness"]["dstate_sampler"]
    assert sampler["passes"] == len(passes) >= 1
    assert sampler["cpu_seconds"] == pytest.approx(0.25 * len(passes))
    assert sampler["longest_interval_seconds"] == pytest.approx(5.0)
    assert sampler["max_share"] == 0.05


# --- resource bounds (issue 14): each is a clean error before the first byte, or works ---

MIB = 1024 * KIB


def test_block_size_above_the_bound_is_refused(tmp_path, target):
    before = tree_checksums(str(tmp_path))
    result = fail_module(checkpoint_canary, _args(target, ranks=1, block_size=128 * MIB, bytes_per_rank=128 * MIB))
    assert result["msg"].startswith("block_size must be at most 67108864")
    assert tree_checksums(str(tmp_path)) == before


def test_ranks_times_memory_above_mem_available_is_refused(fake_root, tmp_path, target):
    fake_root.write("/proc/meminfo", "MemTotal: 2097152 kB\nMemAvailable: 65536 kB\n")
    before = tree_checksums(str(tmp_path))
    result = fail_module(checkpoint_canary, _args(target, ranks=8, block_size=MIB, bytes_per_rank=MIB))
    assert result["msg"].startswith("ranks x block_size needs %d bytes (8 ranks" % (8 * 9 * MIB))
    assert "MemAvailable (%d of %d bytes)" % (32 * MIB, 64 * MIB) in result["msg"]
    assert tree_checksums(str(tmp_path)) == before


def test_bytes_that_do_not_fit_the_file_system_are_refused_naming_the_figures(tmp_path, target):
    vfs = os.statvfs(str(target))
    free = vfs.f_bavail * vfs.f_frsize
    bytes_per_rank = free // 2 + MIB
    before = tree_checksums(str(tmp_path))
    result = fail_module(checkpoint_canary, _args(target, ranks=2, bytes_per_rank=bytes_per_rank, block_size=MIB))
    assert result["msg"].startswith("ranks x bytes_per_rank is %d bytes (2 x %d)" % (2 * bytes_per_rank, bytes_per_rank))
    assert "bytes free on the file system of %s" % target in result["msg"]
    assert tree_checksums(str(tmp_path)) == before


@pytest.fixture
def low_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (40, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_low_soft_nofile_is_raised_to_what_the_ranks_need(target, low_nofile):
    result = run_module(checkpoint_canary, _args(target, ranks=8))
    assert result["summary"]["finished_ranks"] == 8 and result["cleaned_up"] is True
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= 8 + 64


def test_nofile_hard_limit_below_the_need_fails_naming_ranks(tmp_path, target, monkeypatch):
    monkeypatch.setattr(resource, "getrlimit", lambda which: (40, 40))
    before = tree_checksums(str(tmp_path))
    result = fail_module(checkpoint_canary, _args(target, ranks=8))
    assert result["msg"].startswith("ranks=8 needs ") and "nofile hard limit 40" in result["msg"]
    assert tree_checksums(str(tmp_path)) == before


def test_readable_watches_descriptors_above_fd_setsize():
    read_end, write_end = os.pipe()
    high = 1500
    try:
        os.dup2(read_end, high)
        os.write(write_end, b"x")
        assert processes.readable([high], 1.0) == [high]
    finally:
        for fd in (read_end, write_end, high):
            os.close(fd)


def test_more_ranks_than_fd_setsize_run(live_host, target):
    """1,100 ranks: each one's pipe fd is above 1024 for the last ones (select() crashed there)."""
    # The subject is the fds, not this machine's free memory: 1,100 ranks' 8 MiB overhead each passes the
    # memory guard (its own tests below) only on a host with 18.5 GB available, which a loaded CI runner
    # may not have (it failed here with 8.6 GB available while the lab's VMs ran). A 64 GiB host.
    live_host.write("/proc/meminfo", "MemTotal:       67108864 kB\nMemFree:        62914560 kB\nMemAvailable:   62914560 kB\n")
    result = run_module(checkpoint_canary, _args(target, ranks=1100, bytes_per_rank=4 * KIB, block_size=4 * KIB,
                                                 layout="file_per_rank", fsync=False))
    assert result["summary"]["finished_ranks"] == 1100
    assert result["cleaned_up"] is True and _workdirs(target) == []


def test_a_rank_whose_parent_is_already_gone_exits():
    pid = os.fork()
    if pid == 0:
        # A parent pid that is not ours: as if the module died between fork and prctl.
        processes.die_with_parent(processes.libc(), os.getppid() + 1)
        os._exit(0)
    _pid, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 1


def _children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as handle:
            return [int(child) for child in handle.read().split()]
    except OSError:
        return []


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_sigkill_of_the_module_kills_the_ranks_and_removes_the_workdir(target):
    """The module as Ansible runs it (its own process); kill -9 while the ranks wait for start_at."""
    import subprocess
    import sys
    root = os.path.dirname(checkpoint_canary.__file__)
    for _level in range(5):  # plugins/modules -> nfs -> ckptio -> ansible_collections -> root
        root = os.path.dirname(root)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    args = {"ANSIBLE_MODULE_ARGS": _args(target, ranks=4, start_at=time.time() + 60)}
    proc = subprocess.Popen([sys.executable, "-m", "ansible_collections.ckptio.nfs.plugins.modules.checkpoint_canary"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    proc.stdin.write(json.dumps(args).encode())
    proc.stdin.close()
    ranks = []
    for _attempt in range(300):
        ranks = _children(proc.pid)
        if len(ranks) == 4 and _workdirs(target):
            break
        time.sleep(0.05)
    assert len(ranks) == 4 and _workdirs(target)
    proc.kill()
    proc.wait()
    for _attempt in range(100):
        if not any(_alive(pid) for pid in ranks) and not _workdirs(target):
            break
        time.sleep(0.1)
    assert [pid for pid in ranks if _alive(pid)] == []
    assert _workdirs(target) == []


def test_a_parent_swapped_for_a_symlink_after_validation_is_not_followed(tmp_path, target, monkeypatch):
    """realpath passed (the swap came after it): the walk with O_NOFOLLOW refuses the link."""
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (target / "link").symlink_to(outside)
    monkeypatch.setattr(os.path, "realpath", os.path.normpath)
    before = tree_checksums(str(tmp_path))
    result = fail_module(checkpoint_canary, _args(target / "link" / "sub"))
    # O_PATH|O_DIRECTORY|O_NOFOLLOW on a symlink is ENOTDIR (ELOOP without O_DIRECTORY).
    assert "cannot be opened without following a symbolic link (ENOTDIR" in result["msg"]
    assert tree_checksums(str(tmp_path)) == before


def test_path_swapped_after_it_was_opened_writes_into_the_opened_directory(tmp_path, target, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    real_make_workdir = canary_cleanup.Workdir.make

    def swap_then_make(self):
        os.rename(str(target), str(tmp_path / "opened"))
        os.symlink(str(outside), str(target))
        return real_make_workdir(self)

    monkeypatch.setattr(canary_cleanup.Workdir, "make", swap_then_make)
    result = run_module(checkpoint_canary, _args(target, keep=True))
    assert os.listdir(str(outside)) == []
    assert _workdirs(tmp_path / "opened") == [os.path.basename(result["workdir"])]


def test_nfs_path_whose_opened_directory_is_on_another_device_is_refused(fake_root, tmp_path, target):
    fake_root.write("/proc/self/mountinfo", "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
                                            "40 22 0:4095 / %s rw - nfs4 10.0.0.1:/srv rw,vers=4.1\n" % target)
    result = fail_module(checkpoint_canary, _args(target, allow_local=False))
    assert "the path changed while it was checked" in result["msg"] and "0:4095" in result["msg"]
    assert _workdirs(target) == []


def _tokens(monkeypatch, tokens):
    real_urandom = os.urandom
    queue = list(tokens)

    def urandom(size):
        if size == 4 and queue:
            return queue.pop(0) if len(queue) > 1 else queue[0]
        return real_urandom(size)

    monkeypatch.setattr(os, "urandom", urandom)


def test_taken_workdir_names_are_retried_and_left_alone(target, monkeypatch):
    host = socket.gethostname().split(".")[0] or "host"
    taken = ["ckptio-canary-%s-%d-%s" % (host, os.getpid(), token) for token in ("00000000", "11111111")]
    (target / taken[0]).write_text("someone's file\n")
    (target / taken[1]).symlink_to("/etc")
    _tokens(monkeypatch, [b"\0\0\0\0", b"\x11\x11\x11\x11", b"\x22\x22\x22\x22"])
    result = run_module(checkpoint_canary, _args(target))
    assert result["workdir"].endswith("-22222222") and result["cleaned_up"] is True
    assert (target / taken[0]).read_text() == "someone's file\n" and os.readlink(str(target / taken[1])) == "/etc"


def test_a_workdir_name_taken_every_time_fails_cleanly(target, monkeypatch):
    host = socket.gethostname().split(".")[0] or "host"
    (target / ("ckptio-canary-%s-%d-00000000" % (host, os.getpid()))).mkdir()
    _tokens(monkeypatch, [b"\0\0\0\0"])
    result = fail_module(checkpoint_canary, _args(target))
    assert result["msg"].startswith("could not create a work directory in %s: 8 random names" % target)


# --- two-phase start (barrier_dir) -------------------------------------------------------------

def _controller(barrier_dir, write, delay=0.0):
    """A thread playing the controller: waits for ready.json, then writes go/abort via write(dir)."""
    import threading

    def play():
        deadline = time.time() + 30
        while not (barrier_dir / "ready.json").exists() and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(delay)
        write(barrier_dir)

    thread = threading.Thread(target=play, daemon=True)
    thread.start()
    return thread


def _write_json(path, document):
    """Write a barrier file as the controller does: go.json / read_go.json echo the run id of ready.json."""
    if path.name in ("go.json", "read_go.json") and "run_id" not in document:
        document = dict(document, run_id=json.loads((path.parent / "ready.json").read_text())["run_id"])
    temp = path.with_name("." + path.name + ".tmp")
    temp.write_text(json.dumps(document))
    os.rename(str(temp), str(path))


def test_barrier_ranks_start_at_go_written_after_ready(tmp_path, target):
    barrier_dir = tmp_path / "barrier"
    seen = {}

    def go(directory):
        seen["ready"] = json.loads((directory / "ready.json").read_text())
        seen["go"] = time.time() + 0.5
        _write_json(directory / "go.json", {"go_at": seen["go"]})

    _controller(barrier_dir, go)
    result = run_module(checkpoint_canary, _args(target, barrier_dir=str(barrier_dir), start_at=1.0))
    # Ready came after the ranks were forked (the workdir exists then), and ranks waited for go.
    assert seen["ready"]["ranks"] == 3 and seen["ready"]["workdir"] == result["workdir"]
    assert result["start_at"] == seen["go"] and result["barrier"]["signal"] == "go"
    assert result["barrier"]["go_late_seconds"] == 0.0
    assert all(seen["go"] <= r["start"] < seen["go"] + 0.3 for r in result["ranks"])
    assert result["summary"]["max_start_delay_seconds"] < 0.3
    assert json.loads((barrier_dir / "done.json").read_text())["failed"] is False
    assert result["cleaned_up"] and _workdirs(target) == []
    assert set(result["harness"]) == {"canary_cpu_seconds", "ranks_cpu_seconds", "host_busy_cpu_seconds",
                                      "other_cpu_seconds", "dstate_sampler"}


def test_barrier_go_arriving_late_starts_at_once_and_says_so(tmp_path, target):
    barrier_dir = tmp_path / "barrier"
    stamp = {}

    def late(directory):
        stamp["go"] = time.time() - 2.0
        _write_json(directory / "go.json", {"go_at": stamp["go"]})

    _controller(barrier_dir, late)
    result = run_module(checkpoint_canary, _args(target, barrier_dir=str(barrier_dir)))
    assert result["barrier"]["go_late_seconds"] >= 2.0
    assert any("go arrived" in w for w in result.get("warnings", []))
    assert result["summary"]["max_start_delay_seconds"] >= 2.0


def test_barrier_abort_cleans_up_writes_nothing_and_fails_naming_it(tmp_path, target):
    barrier_dir = tmp_path / "barrier"
    _controller(barrier_dir, lambda d: _write_json(d / "abort.json", {"abort": "not ready within 30 s"}))
    result = fail_module(checkpoint_canary, _args(target, barrier_dir=str(barrier_dir)))
    assert "aborted" in result["msg"] and "not ready within 30 s" in result["msg"]
    assert result["ranks"] == [] and result["cleaned_up"]
    assert _workdirs(target) == []
    assert json.loads((barrier_dir / "done.json").read_text())["failed"] is True


def test_barrier_without_go_gives_up_after_barrier_timeout(tmp_path, target):
    barrier_dir = tmp_path / "barrier"
    began = time.time()
    result = fail_module(checkpoint_canary, _args(target, barrier_dir=str(barrier_dir), barrier_timeout=0.5))
    assert time.time() - began < 10
    assert "barrier_timeout" in result["msg"] and _workdirs(target) == []


def test_barrier_check_mode_creates_no_barrier_dir(tmp_path, target):
    before = tree_checksums(str(tmp_path))
    run_module(checkpoint_canary, _args(target, barrier_dir=str(tmp_path / "barrier")), check_mode=True)
    assert tree_checksums(str(tmp_path)) == before and not (tmp_path / "barrier").exists()


def test_barrier_dir_reused_from_an_earlier_run_is_refused(tmp_path, target):
    barrier_dir = tmp_path / "barrier"
    barrier_dir.mkdir(mode=0o700)
    (barrier_dir / "ready.json").write_text("{}")
    result = fail_module(checkpoint_canary, _args(target, barrier_dir=str(barrier_dir)))
    assert "already holds ready.json" in result["msg"] and _workdirs(target) == []


# --- restore (read-back) phase (issue 16) ------------------------------------------------------

def _read_fields_ok(rank, expected_bytes):
    return (rank["read_error"] is None and rank["verify_errors"] == [] and rank["verify_error_count"] == 0
            and rank["read_bytes"] == expected_bytes == rank["bytes"] and rank["read_end"] >= rank["read_start"])


def test_restore_off_leaves_the_result_as_it_was(target):
    result = run_module(checkpoint_canary, _args(target, ranks=1))
    assert "restore" not in result and "restore" not in result["summary"]
    assert sorted(result["ranks"][0]) == ["bytes", "end", "error", "pid", "rank", "start"]


def test_restore_reads_back_every_byte_after_the_last_write(target):
    result = run_module(checkpoint_canary, _args(target, restore=True))
    ranks = result["ranks"]
    assert all(_read_fields_ok(rank, 64 * KIB) for rank in ranks)
    # Two phases: no rank reads before every rank of the host has written.
    assert min(r["read_start"] for r in ranks) >= max(r["end"] for r in ranks)
    restored = result["summary"]["restore"]
    assert restored["total_bytes"] == 3 * 64 * KIB and restored["finished_ranks"] == 3
    assert restored["restore_cache"] == "fadvise" and restored["skipped"] is None
    assert restored["seconds"] == round(restored["latest_end"] - restored["earliest_start"], 6)
    assert restored["earliest_start"] == min(r["read_start"] for r in ranks)
    assert result["summary"]["total_bytes"] == 3 * 64 * KIB  # the write's aggregate is the write's
    assert result["restore"]["total_read_bytes"] == 3 * 64 * KIB and result["restore"]["blocks"] == 12
    assert sorted(result["restore_host_samples"]) == ["end", "start"]
    # The ranks were alive after the writes: their CPU came from their own getrusage, not RUSAGE_CHILDREN.
    assert result["harness"]["ranks_cpu_seconds"] > 0
    assert all("write_cpu_seconds" not in rank for rank in ranks)
    assert result["cleaned_up"] is True and _workdirs(target) == []


def test_restore_none_reads_warm_without_dropping_pages(target, monkeypatch):
    """restore_cache=none is the control (issue 16, "cold and warm cache"): no posix_fadvise, no
    O_DIRECT, every block still verified, and the result names the method and what it guarantees."""
    calls = []
    monkeypatch.setattr(os, "posix_fadvise", lambda *args: calls.append(args))
    result = run_module(checkpoint_canary, _args(target, restore=True, restore_cache="none"))
    assert calls == []
    assert result["summary"]["restore"]["restore_cache"] == "none"
    assert result["summary"]["restore"]["verify_error_count"] == 0
    assert result["restore"]["guarantee"].startswith("nothing emptied")


def test_restore_file_per_rank_with_two_files_each(target):
    result = run_module(checkpoint_canary, _args(target, restore=True, layout="file_per_rank", files_per_rank=2,
                                                 bytes_per_rank=80 * KIB))
    assert all(_read_fields_ok(rank, 80 * KIB) for rank in result["ranks"])
    assert result["summary"]["restore"]["total_bytes"] == 3 * 80 * KIB
    assert result["restore"]["files"] == 6


def test_restore_short_last_block_is_verified(target):
    """bytes_per_rank not a multiple of block_size: the last block is short (3 bytes, under the 8-byte stamp)."""
    result = run_module(checkpoint_canary, _args(target, ranks=2, restore=True, bytes_per_rank=32 * KIB + 3))
    assert all(_read_fields_ok(rank, 32 * KIB + 3) for rank in result["ranks"])


@pytest.fixture
def direct_dir():
    """A directory on a file system with O_DIRECT (/var/tmp is ext4 here; tmpfs has none: skip)."""
    import mmap
    import shutil
    import tempfile
    base = "/var/tmp" if os.path.isdir("/var/tmp") else tempfile.gettempdir()
    path = tempfile.mkdtemp(prefix="ckptio-direct-", dir=base)
    buffer = mmap.mmap(-1, 4096)
    try:
        fd = os.open(os.path.join(path, "probe"), os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600)
        try:
            os.write(fd, buffer)
        finally:
            os.close(fd)
        os.unlink(os.path.join(path, "probe"))
    except OSError as exc:
        shutil.rmtree(path)
        pytest.skip("no O_DIRECT on the file system of %s: %s" % (base, exc))
    yield path
    shutil.rmtree(path)


def test_restore_direct_reads_with_o_direct(direct_dir, monkeypatch):
    real_open = os.open

    def only_direct_reads(name, flags, *args, **kwargs):
        # Runs in the forked ranks: a read-only open of a checkpoint file without O_DIRECT fails the read.
        if str(name).endswith(".ckpt") and flags & os.O_ACCMODE == os.O_RDONLY and not flags & os.O_DIRECT:
            raise OSError(errno.EPERM, "read without O_DIRECT")
        return real_open(name, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", only_direct_reads)
    result = run_module(checkpoint_canary, _args(direct_dir, ranks=2, restore=True, restore_cache="direct",
                                                 block_size=16 * KIB, layout="file_per_rank"))
    assert all(_read_fields_ok(rank, 64 * KIB) for rank in result["ranks"])
    assert result["summary"]["restore"]["restore_cache"] == "direct"
    assert result["restore"]["guarantee"].startswith("O_DIRECT")


def test_restore_direct_on_a_file_system_without_o_direct_fails_naming_the_read(target, monkeypatch):
    """tmpfs has no O_DIRECT (EINVAL at open): simulated, so the test runs on any file system."""
    real_open = os.open

    def no_direct(name, flags, *args, **kwargs):
        if flags & os.O_DIRECT and flags & os.O_ACCMODE == os.O_RDONLY:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_open(name, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_direct)
    result = fail_module(checkpoint_canary, _args(target, ranks=2, restore=True, restore_cache="direct"))
    assert "canary restore failed: rank 0: read shared.ckpt: EINVAL" in result["msg"]
    assert result["summary"]["restore"]["finished_ranks"] == 0 and result["summary"]["finished_ranks"] == 2


def _restore_controller(barrier_dir, between, read_delay=0.3):
    """A controller thread: go after ready.json; after written.json run between(workdir), then read_go.json."""
    import threading
    seen = {}

    def wait_for(name):
        deadline = time.time() + 60
        while not (barrier_dir / name).exists():
            if time.time() > deadline:
                raise SystemExit()  # the module under test gave up first: end the thread quietly
            time.sleep(0.01)
        return json.loads((barrier_dir / name).read_text())

    def play():
        wait_for("ready.json")
        _write_json(barrier_dir / "go.json", {"go_at": time.time() + 0.2})
        seen["written"] = wait_for("written.json")
        seen["written_seen_at"] = time.time()
        if between(seen["written"]["workdir"]) is not False:
            seen["read_go"] = time.time() + read_delay
            _write_json(barrier_dir / "read_go.json", {"go_at": seen["read_go"]})

    thread = threading.Thread(target=play, daemon=True)
    thread.start()
    return seen


def _patch(path, offset, data):
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(data)


def test_restore_barrier_written_then_read_go(tmp_path, target):
    barrier_dir = tmp_path / "barrier"
    seen = _restore_controller(barrier_dir, lambda workdir: None)
    result = run_module(checkpoint_canary, _args(target, restore=True, barrier_dir=str(barrier_dir)))
    ranks = result["ranks"]
    assert seen["written"]["ranks"] == 3 and seen["written"]["workdir"] == result["workdir"]
    assert seen["written"]["read_ready"] is True and seen["written"]["skipped"] is None
    # written.json came after every rank wrote; every read waited for read_go.json's go_at.
    assert seen["written"]["written_at"] >= max(r["end"] for r in ranks)
    assert all(seen["read_go"] <= r["read_start"] < seen["read_go"] + 0.3 for r in ranks)
    assert all(_read_fields_ok(rank, 64 * KIB) for rank in ranks)
    read_barrier = result["barrier"]["read"]
    assert read_barrier["signal"] == "go" and read_barrier["go_at"] == seen["read_go"]
    assert result["summary"]["restore"]["read_go_at"] == seen["read_go"]
    assert result["summary"]["restore"]["max_start_delay_seconds"] < 0.3
    assert json.loads((barrier_dir / "done.json").read_text())["failed"] is False


def test_restore_names_rank_file_and_offset_of_each_bad_block(tmp_path, target):
    """Corrupted between the phases (after written.json): torn, stale and missing data, one per rank."""
    barrier_dir = tmp_path / "barrier"
    block = 16 * KIB

    def corrupt(workdir):
        _patch(os.path.join(workdir, "__0_0.ckpt"), block + 100, b"\xff\x00\xff")          # torn
        with open(os.path.join(workdir, "__1_0.ckpt"), "r+b") as handle:                   # stale
            first = handle.read(block)
            handle.seek(2 * block)
            handle.write(first)
        os.truncate(os.path.join(workdir, "__2_0.ckpt"), 2 * block + 8 * KIB)             # short

    _restore_controller(barrier_dir, corrupt)
    result = fail_module(checkpoint_canary, _args(target, restore=True, layout="file_per_rank",
                                                  barrier_dir=str(barrier_dir)))
    msg = result["msg"]
    assert msg.startswith("canary restore failed: ")
    assert "rank 0: __0_0.ckpt offset 16384: torn block" in msg and "from byte +100 on" in msg
    assert "rank 1: __1_0.ckpt offset 32768: stale block: it holds the data written at offset 0" in msg
    assert "rank 2: __2_0.ckpt offset 32768: short read: 8192 of 16384 bytes" in msg
    ranks = result["ranks"]
    assert [r["verify_error_count"] for r in ranks] == [1, 1, 1]
    assert ranks[1]["verify_errors"] == [{"file": "__1_0.ckpt", "offset": 32768,
                                          "problem": "stale block: it holds the data written at offset 0"}]
    assert ranks[2]["read_bytes"] == 2 * block + 8 * KIB
    assert result["summary"]["restore"]["incomplete_ranks"] == [0, 1, 2]
    assert result["summary"]["restore"]["verify_error_count"] == 3
    assert result["summary"]["finished_ranks"] == 3  # the writes were fine
    assert result["cleaned_up"] is True and _workdirs(target) == []


def test_restore_shared_file_hole_is_named(tmp_path, target):
    barrier_dir = tmp_path / "barrier"
    _restore_controller(barrier_dir, lambda workdir: _patch(os.path.join(workdir, "shared.ckpt"), 64 * KIB, bytes(16 * KIB)))
    result = fail_module(checkpoint_canary, _args(target, restore=True, barrier_dir=str(barrier_dir)))
    assert result["msg"] == ("canary restore failed: rank 1: shared.ckpt offset 65536: block of zeros where data"
                             " was written (a hole: the write never reached the file)")


def test_restore_aborted_at_the_read_barrier_fails_and_cleans_up(tmp_path, target):
    barrier_dir = tmp_path / "barrier"

    def abort(_workdir):
        _write_json(barrier_dir / "abort.json", {"abort": "another host failed writing"})
        return False

    _restore_controller(barrier_dir, abort)
    result = fail_module(checkpoint_canary, _args(target, restore=True, barrier_dir=str(barrier_dir)))
    assert result["msg"] == "canary restore not run: aborted: another host failed writing"
    assert result["barrier"]["read"]["signal"] == "abort"
    assert all(r["read_start"] is None and r["read_error"] is None for r in result["ranks"])
    assert result["summary"]["restore"]["skipped"] == "not run: aborted: another host failed writing"
    assert result["summary"]["finished_ranks"] == 3
    assert result["cleaned_up"] is True and _workdirs(target) == []
    assert json.loads((barrier_dir / "done.json").read_text())["failed"] is True


def test_restore_without_read_go_gives_up_after_barrier_timeout(tmp_path, target):
    barrier_dir = tmp_path / "barrier"
    _restore_controller(barrier_dir, lambda workdir: False)
    began = time.time()
    result = fail_module(checkpoint_canary, _args(target, restore=True, barrier_dir=str(barrier_dir), barrier_timeout=3))
    assert time.time() - began < 20
    assert result["msg"] == "canary restore not run: aborted: no read go within barrier_timeout=3.0s"
    assert _workdirs(target) == []


def test_restore_is_skipped_when_a_write_failed(tmp_path, target, monkeypatch):
    real_run_rank = canary_ranks.run_rank

    def failing(dir_fd, rank_plan, *args):
        if rank_plan["rank"] == 2:
            return {"rank": 2, "pid": os.getpid(), "start": time.time(), "end": None, "bytes": 0, "error": "EIO: boom"}
        return real_run_rank(dir_fd, rank_plan, *args)

    monkeypatch.setattr(canary_ranks, "run_rank", failing)
    barrier_dir = tmp_path / "barrier"
    _controller(barrier_dir, lambda d: _write_json(d / "go.json", {"go_at": time.time() + 0.2}))
    result = fail_module(checkpoint_canary, _args(target, restore=True, barrier_dir=str(barrier_dir)))
    assert result["msg"] == "canary ranks failed: rank 2: EIO: boom"
    assert result["summary"]["restore"]["skipped"] == "not run: the write phase failed (ranks 2)"
    # written.json says it will not read (the controller's wait ends on it), and nothing waited for read_go.json.
    written = json.loads((barrier_dir / "written.json").read_text())
    assert written["read_ready"] is False and written["skipped"] == "not run: the write phase failed (ranks 2)"
    assert "read" not in result["barrier"] and (barrier_dir / "done.json").exists()
    assert result["cleaned_up"] is True and _workdirs(target) == []


def test_restore_read_stall_is_named_as_the_read_phase(target, monkeypatch):
    real_run_read = canary_ranks.run_read

    def slow(dir_fd, rank_plan, *args):
        if rank_plan["rank"] == 1:
            while True:
                time.sleep(3600)
        return real_run_read(dir_fd, rank_plan, *args)

    monkeypatch.setattr(canary_ranks, "run_read", slow)
    started = time.monotonic()
    result = fail_module(checkpoint_canary, _args(target, restore=True, timeout=2, kill_grace=2))
    assert time.monotonic() - started < 2 * 2 + 2 + 4
    assert result["msg"].startswith("canary restore (read phase): canary ranks did not finish within timeout=2.0s: rank 1")
    assert [(s["rank"], s["phase"]) for s in result["stalled"]] == [(1, "read")]
    rank1 = result["ranks"][1]
    assert rank1["read_error"] == "stalled: no read result within timeout" and rank1["bytes"] == 64 * KIB
    assert result["summary"]["restore"]["incomplete_ranks"] == [1] and result["summary"]["finished_ranks"] == 3
    assert result["cleaned_up"] is True and _workdirs(target) == []


def test_restore_check_mode_writes_and_reads_nothing_and_says_what_it_would_do(tmp_path, target):
    before = tree_checksums(str(tmp_path))
    result = run_module(checkpoint_canary, _args(target, restore=True, restore_cache="direct",
                                                 barrier_dir=str(tmp_path / "barrier")), check_mode=True)
    assert tree_checksums(str(tmp_path)) == before and "ranks" not in result
    assert result["restore"]["restore_cache"] == "direct" and result["restore"]["total_read_bytes"] == 3 * 64 * KIB
    assert "read_go.json" in result["restore"]["start"]


@pytest.mark.parametrize("extra, option", [
    ({"restore": True, "fsync": False}, "restore=true needs fsync=true"),
    ({"restore": True, "restore_cache": "direct", "block_size": 1000, "bytes_per_rank": 8000},
     "block_size must be a multiple of 4096 with restore_cache=direct"),
    ({"restore": True, "restore_cache": "direct", "block_size": 4096, "bytes_per_rank": 8192 + 100},
     "bytes_per_rank must be a multiple of block_size with restore_cache=direct"),
])
def test_restore_bad_input_fails_naming_the_option_before_writing(tmp_path, target, extra, option):
    before = tree_checksums(str(tmp_path))
    result = fail_module(checkpoint_canary, dict(_args(target), **extra))
    assert result["msg"].startswith(option)
    assert tree_checksums(str(tmp_path)) == before


def test_restore_counts_a_second_block_per_rank_in_the_memory_bound(fake_root, tmp_path, target):
    # Half of 150 MiB is 75 MiB: 8 ranks x (1 MiB + 8 MiB overhead) = 72 MiB fit, 8 x (2 x 1 MiB + 8 MiB) = 80 MiB do not.
    fake_root.write("/proc/meminfo", "MemTotal: 2097152 kB\nMemAvailable: %d kB\n" % (150 * 1024))
    run_module(checkpoint_canary, _args(target, ranks=8, block_size=MIB, bytes_per_rank=MIB), check_mode=True)
    result = fail_module(checkpoint_canary, _args(target, ranks=8, block_size=MIB, bytes_per_rank=MIB, restore=True))
    assert result["msg"].startswith("ranks x block_size needs %d bytes (8 ranks x (2 x %d + %d overhead))"
                                    " (restore=true holds a second block per rank" % (8 * 10 * MIB, MIB, 8 * MIB))
