# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One D-state scanner for every module (checkpoint_canary, nfs_client_stats), and the rule that
keeps its own cost bounded (issue 14: the harness must not load what it measures)."""

from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.host import dstate_scan
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import dstate


def _task(proc, pid, comm, state, wchan=None):
    (proc / str(pid)).mkdir(parents=True)
    (proc / str(pid) / "stat").write_bytes(("%d (%s) %s 1 %d %d 0 -1 0 " % (pid, comm, state, pid, pid)).encode() + b"0 " * 12 + b"5\n")
    if wchan is not None:
        (proc / str(pid) / "wchan").write_text(wchan)


def test_scan_returns_the_tasks_in_d_with_their_wchan(tmp_path):
    proc = tmp_path / "proc"
    _task(proc, 77, "writer", "D", "rpc_wait_bit_killable")
    _task(proc, 78, "idle", "S", "do_select")
    # A command holding ") D " must not read as D: the state is after the LAST ')' (proc(5)).
    _task(proc, 79, "x) D (y", "R")
    _task(proc, 80, "flush", "D")  # no wchan file: kept as "0", as the lab captures do
    (proc / "self").mkdir()
    tasks, cpu_seconds = dstate_scan.scan(str(proc))
    assert tasks == [{"pid": 77, "wchan": "rpc_wait_bit_killable"}, {"pid": 80, "wchan": "0"}]
    assert cpu_seconds >= 0


def test_scan_reads_wchan_only_for_tasks_in_d(tmp_path, monkeypatch):
    """wchan costs a syscall round per task; a host has hundreds of tasks and few in D."""
    proc = tmp_path / "proc"
    for pid in range(100, 140):
        _task(proc, pid, "sleeper", "S", "do_select")
    _task(proc, 200, "writer", "D", "nfs_start_io_write")
    opened = []
    real_open = dstate_scan.os.open

    def counting_open(path, flags, *args):
        opened.append(path)
        return real_open(path, flags, *args)

    monkeypatch.setattr(dstate_scan.os, "open", counting_open)
    tasks, _cpu = dstate_scan.scan(str(proc))
    assert tasks == [{"pid": 200, "wchan": "nfs_start_io_write"}]
    assert [path for path in opened if path.endswith("wchan")] == [str(proc / "200" / "wchan")]


def test_scan_of_an_unreadable_proc_is_empty(tmp_path):
    assert dstate_scan.scan(str(tmp_path / "missing"))[0] == []


def test_tasks_that_vanish_between_listing_and_reading_are_skipped(tmp_path):
    proc = tmp_path / "proc"
    (proc / "90").mkdir(parents=True)  # listed, but its stat is gone (the task exited)
    _task(proc, 91, "writer", "D", "wait_on_commit")
    assert dstate_scan.scan(str(proc))[0] == [{"pid": 91, "wchan": "wait_on_commit"}]


@pytest.mark.parametrize("scan_seconds, expected", [
    (0.003, 1.0),   # a real host: 3 ms per scan, the base interval holds
    (0.1, 2.0),     # a 1-vCPU TCG guest (measured 97-200 ms per scan of 93 tasks): stretched to 5 %
    (0.0, 1.0),
    (None, 1.0),    # not measured: the base interval
])
def test_sampling_interval_keeps_the_scan_within_its_share_of_one_cpu(scan_seconds, expected):
    assert dstate.sampling_interval(1.0, scan_seconds) == pytest.approx(expected)


def test_sampling_interval_is_capped():
    """A pathological scan (seconds each) still samples, at most every MAX_SAMPLING_INTERVAL."""
    assert dstate.sampling_interval(1.0, 10.0) == dstate.MAX_SAMPLING_INTERVAL


# Kernel 5.10 (Debian 11, lab matrix 2026-12-01): x86's get_wchan() walked frame pointers until
# 5.16, and Debian's kernels use the ORC unwinder, so /proc/PID/wchan is "0" for every task in D
# (tests/fixtures/kernels/bullseye/bundle/clients/nfs2/dstate.txt). /proc/PID/stack still names the
# frames; the wait site is the first one that is not a scheduler or lock primitive, as get_wchan()
# skips in_sched_functions() on newer kernels.
STACK_510_RPC = """[<0>] __schedule+0x282/0x870
[<0>] schedule+0x46/0xb0
[<0>] rpc_wait_bit_killable+0x1e/0x90 [sunrpc]
[<0>] __wait_on_bit+0x2e/0x90
[<0>] out_of_line_wait_on_bit+0x91/0xb0
[<0>] __rpc_execute+0x129/0x3f0 [sunrpc]
[<0>] rpc_run_task+0x12b/0x170 [sunrpc]
[<0>] nfs4_do_call_sync+0x6c/0xa0 [nfsv4]
"""
STACK_510_SHARED_FILE = """[<0>] __schedule+0x282/0x870
[<0>] schedule+0x46/0xb0
[<0>] rwsem_down_write_slowpath+0x246/0x4d0
[<0>] nfs_start_io_write+0x1a/0x60 [nfs]
[<0>] nfs_file_write+0x87/0x2a0 [nfs]
[<0>] new_sync_write+0x11c/0x1b0
"""
STACK_510_PAGE = """[<0>] __schedule+0x282/0x870
[<0>] io_schedule+0x42/0x70
[<0>] wait_on_page_bit_common+0x111/0x3a0
[<0>] wait_on_page_writeback+0x25/0x70
"""


@pytest.mark.parametrize("stack, site", [
    (STACK_510_RPC, "rpc_wait_bit_killable"), (STACK_510_SHARED_FILE, "nfs_start_io_write"),
    (STACK_510_PAGE, "wait_on_page_bit_common"), ("[<0>] __schedule+0x1/0x2\n[<0>] schedule+0x1/0x2\n", None), ("", None),
])
def test_stack_wait_site_skips_scheduler_and_lock_frames(stack, site):
    assert dstate.stack_wait_site(stack) == site


def test_scan_takes_the_wait_site_from_the_stack_where_wchan_says_0(tmp_path):
    proc = tmp_path / "proc"
    _task(proc, 301, "rank0", "D", "0")
    (proc / "301" / "stack").write_text(STACK_510_SHARED_FILE)
    _task(proc, 302, "rank1", "D", "0")  # no readable stack (not root, or no CONFIG_STACKTRACE): stays "0"
    _task(proc, 303, "rank2", "D", "rpc_wait_bit_killable")
    (proc / "303" / "stack").write_text(STACK_510_PAGE)  # never read: wchan named the site
    tasks, _cpu = dstate_scan.scan(str(proc))
    assert tasks == [{"pid": 301, "wchan": "nfs_start_io_write"}, {"pid": 302, "wchan": "0"},
                     {"pid": 303, "wchan": "rpc_wait_bit_killable"}]
    assert dstate.wchan_group(tasks[0]["wchan"]) == "shared_file_lock"


def test_wait_site_of_one_task(tmp_path):
    proc = tmp_path / "proc"
    _task(proc, 401, "rank0", "D", "0")
    (proc / "401" / "stack").write_text(STACK_510_RPC)
    _task(proc, 402, "rank1", "D", "0\n")
    _task(proc, 403, "rank2", "D", "wait_on_commit")
    assert dstate_scan.wait_site(str(proc), 401) == "rpc_wait_bit_killable"
    assert dstate_scan.wait_site(str(proc), 402) == "0"
    assert dstate_scan.wait_site(str(proc), 403) == "wait_on_commit"
    assert dstate_scan.wait_site(str(proc), 404) is None
