# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One D-state scanner for every module (checkpoint_canary, nfs_client_stats), and the rule that
keeps its own cost bounded (issue 14: the harness must not load what it measures)."""

from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.host import dstate_scan
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import dstate


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
