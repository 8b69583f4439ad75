# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tasks in uninterruptible sleep (D state) and what they wait on: pure logic and the
capture-bundle line format `EPOCH COUNT wchan1,wchan2,...` (COUNT 0 is written `EPOCH 0 -`).

Why: a rank stuck writing to NFS sits in D; its /proc/PID/wchan says where. Measured in the
lab (kernel 6.1): RPC waits show as rpc_wait_bit_killable, page-cache throttling as
balance_dirty_pages / folio_wait_bit_common, ranks serialised on one shared file's lock as
nfs_start_io_write, and a server outage as wait_on_commit.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.numbers import kernel_number

# Where a D-state task waits, grouped by what it tells the diagnosis.
WCHAN_GROUPS = (
    ("shared_file_lock", ("nfs_start_io_write", "nfs_start_io_direct")),
    ("rpc_wait", ("rpc_wait_bit_killable", "rpc_")),
    ("commit_wait", ("wait_on_commit", "nfs_commit")),
    ("dirty_page_throttle", ("balance_dirty_pages",)),
    ("page_writeback", ("folio_wait_bit_common", "wait_on_page_bit", "folio_wait_writeback")),
    ("nfs_other", ("nfs_", "nfs4_")),
)


# The D-state sampler's own cost (issue 14: the harness must not load what it measures): its
# passes over /proc may take at most this share of one CPU; a slower pass stretches the interval
# instead (a 1-vCPU TCG guest: ~0.1 s a pass, so one every 2 s), never beyond the cap, so a run
# always has samples.
SAMPLER_MAX_SHARE = 0.05
MAX_SAMPLING_INTERVAL = 10.0


def sampling_interval(base_seconds, scan_cpu_seconds, max_share=SAMPLER_MAX_SHARE):
    """Seconds to the next D-state pass: base_seconds, or longer when the last pass cost more
    than max_share of it (scan_cpu_seconds / interval <= max_share), at most MAX_SAMPLING_INTERVAL."""
    if not scan_cpu_seconds or scan_cpu_seconds <= 0:
        return float(base_seconds)
    return min(MAX_SAMPLING_INTERVAL, max(float(base_seconds), scan_cpu_seconds / max_share))


# Frames of /proc/PID/stack that say *how* a task sleeps, not where: scheduler entry points and
# the sleeping lock and wait primitives (the kernel's __sched functions, which get_wchan() skips
# through in_sched_functions() where it works). Names, or prefixes ending in "_".
SCHED_FRAMES = ("__schedule", "schedule", "schedule_", "io_schedule", "io_schedule_", "preempt_schedule", "preempt_schedule_",
                "__cond_resched", "bit_wait", "bit_wait_", "__wait_on_bit", "__wait_on_bit_", "out_of_line_wait_on_bit",
                "out_of_line_wait_on_bit_", "wait_for_completion", "wait_for_completion_", "__wait_for_common",
                "wait_for_common", "wait_for_common_", "__mutex_lock", "__mutex_lock_", "mutex_lock", "mutex_lock_", "down",
                "down_", "__down", "__down_", "rwsem_down_", "__rwsem_", "percpu_rwsem_", "__percpu_down_", "rt_mutex_",
                "__rt_mutex_", "do_nanosleep", "hrtimer_nanosleep", "usleep_range", "usleep_range_", "msleep",
                "schedule_hrtimeout", "schedule_hrtimeout_")


def _sched_frame(name):
    return any(name == frame or (frame.endswith("_") and name.startswith(frame)) for frame in SCHED_FRAMES)


def stack_wait_site(stack_text):
    """The wait site in /proc/PID/stack text: the first frame that is no scheduler or lock
    primitive ("[<0>] rpc_wait_bit_killable+0x1e/0x90 [sunrpc]" -> "rpc_wait_bit_killable"),
    or None. Used where /proc/PID/wchan says "0" (x86 kernels before 5.16 with the ORC unwinder)."""
    for line in (stack_text or "").splitlines():
        _address, _sep, frame = line.strip().partition("] ")
        name = frame.split("+", 1)[0].strip()
        if name and not _sched_frame(name):
            return name
    return None


def wchan_group(wchan):
    for group, prefixes in WCHAN_GROUPS:
        for prefix in prefixes:
            if wchan == prefix or wchan.startswith(prefix):
                return group
    return "other"


def task_state(stat_text):
    """Field 3 of /proc/PID/stat. The command (field 2) may hold spaces and ')', so split
    after the last ')' as proc(5) advises."""
    close = stat_text.rfind(")")
    if close < 0:
        return None
    rest = stat_text[close + 1:].split()
    return rest[0] if rest else None


def wchan_unknown(wchan_text):
    """True when /proc/PID/wchan names no site: unreadable, empty or "0"."""
    return (wchan_text or "").strip() in ("", "0")


def dstate_task(pid, stat_text, wchan_text, stack_text=None):
    """{pid, wchan} when the task is in D state, else None. Where wchan names no site ("0": the
    task runs in the kernel, or a pre-5.16 x86 kernel with ORC that cannot say), the wait site
    comes from /proc/PID/stack when given; with neither it is kept as "0", as the lab captures."""
    if task_state(stat_text) != "D":
        return None
    wchan = (wchan_text or "").strip() or "0"
    if wchan_unknown(wchan):
        wchan = stack_wait_site(stack_text) or "0"
    return {"pid": int(pid), "wchan": wchan}


def format_sample(epoch, wchans):
    """One dstate.txt line."""
    wchans = [wchan.replace(",", "_").replace(" ", "_") for wchan in wchans]
    return "%.3f %d %s" % (float(epoch), len(wchans), ",".join(wchans) if wchans else "-")


def parse_dstate(text):
    """dstate.txt -> list of {epoch, count, wchans}; malformed lines (a number that is none: numbers.py) are skipped."""
    samples = []
    for line in (text or "").splitlines():
        words = line.split()
        if len(words) < 2:
            continue
        try:
            # numbers.py's rule: a time or count no clock or kernel gives (nan, inf, 1e400, -3) is a malformed line.
            epoch = float(kernel_number(words[0], "epoch"))
            count = kernel_number(words[1], "count", integer=True)
        except ValueError:
            continue
        wchans = [] if len(words) < 3 or words[2] == "-" else words[2].split(",")
        samples.append({"epoch": epoch, "count": count, "wchans": wchans})
    return samples


def summarize_dstate(samples):
    """Counts the diagnosis uses: how often and how many ranks sat in D, and where."""
    wchan_counts = {}
    group_counts = {}
    for sample in samples:
        for wchan in sample["wchans"]:
            wchan_counts[wchan] = wchan_counts.get(wchan, 0) + 1
    # Grouped once per distinct site, not per sighting (a few sites, thousands of sightings).
    for wchan, count in wchan_counts.items():
        group = wchan_group(wchan)
        group_counts[group] = group_counts.get(group, 0) + count
    with_d = [sample for sample in samples if sample["count"] > 0]
    # Longest run of consecutive samples with a task in D: "sustained" in the validation sense.
    longest = run = 0
    for sample in samples:
        run = run + 1 if sample["count"] > 0 else 0
        longest = max(longest, run)
    return {
        "samples": len(samples),
        "samples_with_dstate": len(with_d),
        "max_count": max([sample["count"] for sample in samples] or [0]),
        "longest_run": longest,
        "wchan_counts": wchan_counts,
        "group_counts": group_counts,
    }
