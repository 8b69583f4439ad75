"""Every recogniser and parser a paste reaches, on the hostile pastes of issue 45: each runs in time linear in its
input, under 2 s (the figures measured are in docs/safety.md and beside each input below).

Before the fix (224965e) kernel_log.recognise and .parse, recognise.kind_of, readings.read_file and
saved_files.classify ran for minutes on the "RPC: " line (> 15 s cut off by the test harness) and 7-14 s on the
"task " line; mountstats_report.parse and read_file for minutes on the digit runs; kind_of, read_file and classify for
minutes on 60,000 blank lines between two lines of text.
"""
from __future__ import annotations

import signal
import time

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import kernel_log, layout, mountstats_report, nfsiostat, nfsstat_mounts
from ansible_collections.ckptio.nfs.plugins.module_utils.paste import readings, recognise
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import mountstats, nfsd_stats
from ansible_collections.ckptio.nfs.plugins.module_utils.paste import saved_files

LIMIT_SECONDS = 2.0
# Stop a run that backtracks (sre checks for signals while it matches) instead of waiting minutes for it.
HARD_STOP_SECONDS = 20

# The slowest figure measured after the fix for each input, over every function below (best of 2 on the shared
# 2-core machine, 2026-12, other workers running); docs/safety.md has the whole table.
HOSTILE = {
    # One 80 kB line of "RPC: " (16,384 repeats): 0.05 s at most (kernel_log.recognise).
    "rpc_line": "RPC: " * 16384,
    # One 80 kB line of "task ": 0.07 s at most (kernel_log.parse).
    "task_line": "task " * 16384,
    # A 60,000-digit run after the mountstats command's header: 0.03 s at most.
    "digits_after_mountstats_header": "Stats for srv:/export mounted on /mnt:\n" + "7" * 60000 + "\n",
    # The same run inside an op's block (the per-op figures' patterns): 0.04 s at most.
    "digits_in_op_block": "Stats for srv:/export mounted on /mnt:\nRPC statistics:\nWRITE:\n" + "7" * 60000 + "\n",
    # The same run after /proc/self/mountstats' device line: 0.03 s at most.
    "digits_after_device_line": "device srv:/export mounted on /mnt with fstype nfs4 statvers=1.1\n\t" + "7" * 60000 + "\n",
    # 60,000 blank lines between two lines of text (blank lines alone are cleaned away): 0.11 s at most (read_file).
    "blank_lines": "nfs: server srv not responding, still trying\n" + "\n" * 60000 + "the end\n",
    # 60,000 lines of one tab: 0.12 s at most (kernel_log.recognise).
    "tab_lines": "\t\n" * 60000 + "the end\n",
    # 1 MB of "xprt:\ttcp " repeats on one line: 0.47 s at most (kernel_log.parse; read_file cuts the line first: 0.001 s).
    "xprt_repeats": "xprt:\ttcp " * (1048576 // 10),
}


def _mountstats_blocks(text):
    return list(mountstats.iter_mountstats(text))


FUNCTIONS = {
    "layout.clean": layout.clean,
    "recognise.kind_of": recognise.kind_of,
    "kernel_log.recognise": kernel_log.recognise,
    "kernel_log.parse": kernel_log.parse,
    "mountstats_report.recognise": mountstats_report.recognise,
    "mountstats_report.parse": mountstats_report.parse,
    "nfsiostat.recognise": nfsiostat.recognise,
    "nfsiostat.parse": nfsiostat.parse,
    "nfsstat_mounts.recognise": nfsstat_mounts.recognise,
    "nfsstat_mounts.parse": nfsstat_mounts.parse,
    "mountstats.iter_mountstats": _mountstats_blocks,
    "mountstats.parse_mount_lines": mountstats.parse_mount_lines,
    "nfsd_stats.parse_nfsd_stats": nfsd_stats.parse_nfsd_stats,
    "nfsd_stats.parse_pool_stats": nfsd_stats.parse_pool_stats,
    "nfsd_stats.nfsstat_tables": nfsd_stats.nfsstat_tables,
    "readings.read_file": lambda text: readings.read_file("pasted.txt", text),
    "saved_files.classify": saved_files.classify,
}


class _TooSlow(Exception):
    pass


def _stop(_signum, _frame):
    raise _TooSlow()


def timed(function, text):
    """Seconds function(text) took; HARD_STOP_SECONDS when it had to be stopped. A parser may refuse (ValueError)."""
    previous = signal.signal(signal.SIGALRM, _stop)
    signal.setitimer(signal.ITIMER_REAL, HARD_STOP_SECONDS)
    started = time.perf_counter()
    try:
        function(text)
    except _TooSlow:
        return float(HARD_STOP_SECONDS)
    except ValueError:
        pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return time.perf_counter() - started


@pytest.mark.parametrize("hostile", sorted(HOSTILE))
@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_each_recogniser_and_parser_is_linear_on_hostile_pastes(function, hostile):
    seconds = timed(FUNCTIONS[function], HOSTILE[hostile])
    assert seconds < LIMIT_SECONDS, "%s on %s: %.2f s" % (function, hostile, seconds)


def test_a_line_over_the_cap_is_cut_and_the_reading_says_so():
    reading = readings.read_file("dmesg.txt", "[ 1.000000] nfs: server srv not responding, still trying\n" + "RPC: " * 16384 + "\n")
    assert reading["kind"] == "kernel_log"
    assert "1 line longer than 4096 characters cut to 4096" in reading["repairs"]
    assert max(len(line) for line in reading["text"].split("\n")) == layout.LINE_LIMIT


def test_digit_runs_are_no_figure_and_raise_nothing():
    """A number longer than any kernel counter (20 digits, 2**64) is no figure, and never int()'s 4300-digit refusal."""
    text = "Stats for srv:/export mounted on /mnt:\n  %s RPC requests sent, 3 RPC replies received\nWRITE:\n  %s ops (94%%)\n" % (
        "7" * 60000, "7" * 60000)
    [mount] = mountstats_report.parse(text) or [None]
    assert mount is None or (mount["requests_sent"] is None and "WRITE" not in mount["ops"])
    assert kernel_log.parse("INFO: task a:%s blocked for more than 120 seconds.\n" % ("9" * 5000))["hung_tasks"] == []


def test_many_distinct_hung_tasks_are_read_in_linear_time():
    text = "".join("INFO: task w%d:%d blocked for more than 120 seconds.\n" % (pid, pid) for pid in range(30000))
    seconds = timed(kernel_log.parse, text)
    assert seconds < LIMIT_SECONDS, "%.2f s" % seconds
    assert len(kernel_log.parse(text)["hung_tasks"]) == 30000
