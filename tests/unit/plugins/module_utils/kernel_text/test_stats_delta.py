"""Deltas against the hand-computed reference numbers in the bundles' NOTES.txt and against
nfs-utils' mountstats on the same files."""
from __future__ import annotations

import math
import os
import re
import shutil
import subprocess

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.nfsd_stats import parse_nfsd_stats, parse_pool_stats
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.stats_delta import mountstats_delta, nfsd_delta, pool_stats_delta
from ansible_collections.ckptio.nfs.tests.unit.utils import broken_capture, read_sample, sample_path

SEED = ("bundles", "seed_like_baseline")
PERRANK = ("bundles", "shared_vs_perrank_5b_per_rank")
MOUNTSTATS = shutil.which("mountstats") or ("/usr/sbin/mountstats" if os.path.exists("/usr/sbin/mountstats") else None)


def client_delta(bundle):
    files = load_bundle(sample_path(*bundle))["clients"]["nfs2"]
    deltas = mountstats_delta(files["mountstats_after"].splitlines(), files["mountstats_before"].splitlines())
    assert len(deltas) == 1
    return deltas[0]


def server_delta(bundle):
    files = load_bundle(sample_path(*bundle))["servers"]["nfs1"]
    return (nfsd_delta(parse_nfsd_stats(files["nfsd_after"]), parse_nfsd_stats(files["nfsd_before"])),
            pool_stats_delta(parse_pool_stats(files["pool_stats_after"]), parse_pool_stats(files["pool_stats_before"])))


def test_seed_like_baseline_matches_notes():
    delta = client_delta(SEED)
    write = delta["ops"]["WRITE"]
    assert (write["ops"], write["retrans"], write["timeouts"], write["errors"]) == (4477, 0, 0, 0)
    assert write["avg_rtt_ms"] == pytest.approx(72.527, abs=1e-3)
    assert write["avg_exe_ms"] == pytest.approx(4801.235, abs=1e-3)
    assert write["avg_queue_ms"] == pytest.approx(4728.33, abs=1e-2)
    assert write["bytes_sent_per_op"] == pytest.approx(60174.8, abs=0.1)
    rpc = delta["rpc"]
    assert rpc["transports"] == 1 and rpc["max_slots"] == [32] and rpc["max_slots_before"] == [2]
    assert rpc["sends"] == 4497 and rpc["bklog_u"] == 0 and rpc["backlog_per_send"] == 0.0 and rpc["connect_count"] == 0
    assert delta["interval_seconds"] == 18.0 and delta["write_bytes"] == 268435456
    assert delta["nfs_version"] == "4.1" and delta["nconnect"] == 1 and delta["wsize"] == 65536
    assert not delta["reset"] and not delta["new_mount"] and not delta["truncated"]
    assert delta["usable"] is True and delta["problems"] == [] and delta["problem_details"] == []
    # Ops whose line did not change are left out entirely.
    assert "READ" not in delta["ops"] and "GETATTR" not in delta["ops"]


def test_per_rank_bundle_sums_four_transports():
    delta = client_delta(PERRANK)
    write = delta["ops"]["WRITE"]
    assert write["ops"] == 515
    assert write["avg_rtt_ms"] == pytest.approx(475.843, abs=1e-3)
    assert write["avg_exe_ms"] == pytest.approx(3639.717, abs=1e-3)
    assert write["avg_queue_ms"] == pytest.approx(3161.79, abs=1e-2)
    rpc = delta["rpc"]
    assert rpc["transports"] == 4 and rpc["max_slots"] == [128, 128, 128, 128]
    # NOTES: sum dsends=543; nfs-utils would show only the last line's 120.
    assert rpc["sends"] == 543 and rpc["bklog_u"] == 0
    assert rpc["backlog_per_send_per_transport"] == [0.0, 0.0, 0.0, 0.0]
    assert rpc["sending_u"] == (947 + 189 + 231 + 428)


def test_server_deltas_match_notes():
    nfsd, pool = server_delta(SEED)
    assert nfsd["io_bytes_written"] == 268435456 and nfsd["rpc_calls"] == 4497
    assert nfsd["proc4ops"]["WRITE"] == 4477 and nfsd["proc4ops"]["COMMIT"] == 11
    assert nfsd["proc3"] == {} and nfsd["threads"] == 8 and not nfsd["reset"]
    assert pool["totals"]["packets-arrived"] == 7068 and pool["totals"]["threads-woken"] == 5706
    assert pool["sockets_enqueued_per_packet"] == 1.0
    assert pool["packets_without_idle_thread"] == pytest.approx(1 - 5706 / 7068.0)
    nfsd, pool = server_delta(PERRANK)
    assert nfsd["io_bytes_written"] == 536870912 and nfsd["rpc_calls"] == 543 and nfsd["proc4ops"]["WRITE"] == 515


def test_pool_stats_going_backwards_after_nfsd_restart():
    header = "# pool packets-arrived sockets-enqueued threads-woken threads-timedout\n"
    before = parse_pool_stats(header + "0 88343 88343 85320 0\n")
    after = parse_pool_stats(header + "0 1545 1545 234 0\n")
    delta = pool_stats_delta(after, before)
    assert delta["reset"] is True
    assert delta["totals"]["packets-arrived"] == 1545 and delta["totals"]["threads-woken"] == 234
    assert delta["packets_without_idle_thread"] == pytest.approx(1 - 234 / 1545.0)
    assert pool_stats_delta(after, None)["totals"]["packets-arrived"] == 1545
    assert pool_stats_delta(parse_pool_stats(""), None)["packets_without_idle_thread"] is None


def test_nfsd_counter_going_backwards_is_flagged():
    before = parse_nfsd_stats("io 0 500\nrpc 100 0 0 0 0\nth 8 0\n")
    after = parse_nfsd_stats("io 0 200\nrpc 150 0 0 0 0\nth 16 0\n")
    delta = nfsd_delta(after, before)
    assert delta["reset"] is True and delta["io_bytes_written"] == 200 and delta["rpc_calls"] == 50
    assert delta["threads"] == 16 and delta["threads_before"] == 8


def test_remount_between_samples_counts_since_mount_like_nfs_utils():
    # age went back: a new mount. Like nfs-utils the after counters are reported alone (since that
    # mount), and the delta says it is not a window of the before sample.
    after = read_sample(*SEED, "clients", "nfs2", "mountstats_before.txt")
    before = read_sample(*SEED, "clients", "nfs2", "mountstats_after.txt")
    delta = mountstats_delta(after.splitlines(), before.splitlines())[0]
    assert delta["new_mount"] is True and delta["reset"] is False
    assert delta["usable"] is False and delta["problems"] == ["new_mount"]
    assert "age went back from 26 to 8" in delta["problem_details"][0]
    assert delta["rpc"]["sends"] == 30 and delta["interval_seconds"] == 8.0


def test_mount_only_in_after_and_explicit_interval():
    after = read_sample(*SEED, "clients", "nfs2", "mountstats_after.txt")
    delta = mountstats_delta(after.splitlines(), ["device proc mounted on /proc with fstype proc"], interval_seconds=13.402)[0]
    assert delta["new_mount"] is True
    assert delta["ops"]["WRITE"]["ops_per_second"] == pytest.approx(4477 / 13.402)
    assert mountstats_delta(after.splitlines(), mount_points=["/elsewhere"]) == []


def _nfs_utils_ops(output):
    """Per-op blocks of `mountstats -f AFTER -S BEFORE`."""
    ops = {}
    for match in re.finditer(r"^(\w+):\n\s+(\d+) ops.*?\n.*?\n\s+backlog wait: ([\d.]+)\s+RTT: ([\d.]+)\s+total execute time: ([\d.]+)",
                             output, re.M):
        ops[match.group(1)] = tuple([int(match.group(2))] + [float(value) for value in match.group(3, 4, 5)])
    return ops


@pytest.mark.skipif(MOUNTSTATS is None, reason="nfs-utils mountstats is not installed (Debian package nfs-common)")
@pytest.mark.parametrize("bundle", [SEED, PERRANK])
def test_agrees_with_nfs_utils_mountstats(bundle):
    after = sample_path(*bundle, "clients", "nfs2", "mountstats_after.txt")
    before = sample_path(*bundle, "clients", "nfs2", "mountstats_before.txt")
    output = subprocess.run([MOUNTSTATS, "-f", after, "-S", before], check=True, capture_output=True, text=True).stdout
    theirs = _nfs_utils_ops(output)
    assert "WRITE" in theirs
    ours = client_delta(bundle)["ops"]
    for name, (ops, queue, rtt, exe) in theirs.items():
        assert ours[name]["ops"] == ops, name
        assert ours[name]["avg_queue_ms"] == pytest.approx(queue, abs=1e-5), name
        assert ours[name]["avg_rtt_ms"] == pytest.approx(rtt, abs=1e-5), name
        assert ours[name]["avg_exe_ms"] == pytest.approx(exe, abs=1e-5), name
    iostat = subprocess.run([MOUNTSTATS, "iostat", "-f", after, "-S", before], check=True, capture_output=True, text=True).stdout
    write_line = iostat.split("write:")[1].splitlines()[1].split()
    assert ours["WRITE"]["ops_per_second"] == pytest.approx(float(write_line[0]), abs=1e-3)
    assert ours["WRITE"]["kib_per_second"] == pytest.approx(float(write_line[1]), abs=1e-3)


def _two_mounts(first, second, writes):
    def block(mount_point, ops):
        return ("device srv:/x mounted on %s with fstype nfs statvers=1.1\n\topts:\trw,vers=3\n\tage:\t%d\n"
                "\tRPC iostats version: 1.1  p/v: 100003/3 (nfs)\n\txprt:\ttcp 0 0 1 0 0 %d %d 0 0 0 2 0 0\n"
                "\tper-op statistics\n\t       WRITE: %d %d 0 0 0 0 %d %d 0\n" % (mount_point, 10 + ops, ops, ops, ops, ops, ops, ops))
    return [line for text in (block(first, writes[0]), block(second, writes[1])) for line in text.splitlines()]


def test_mounts_in_a_different_order_and_vanished_mounts_still_match():
    before = _two_mounts("/b", "/a", (5, 1)) + ["device srv:/x mounted on /gone with fstype nfs"]
    after = _two_mounts("/a", "/b", (3, 9))
    deltas = dict((delta["mount_point"], delta) for delta in mountstats_delta(after, before))
    assert deltas["/a"]["ops"]["WRITE"]["ops"] == 2 and deltas["/b"]["ops"]["WRITE"]["ops"] == 4
    assert not deltas["/a"]["new_mount"] and not deltas["/b"]["new_mount"]
    assert deltas["/a"]["rpc"]["sends"] == 2 and deltas["/a"]["interval_seconds"] == 2.0


def read_broken(name):
    """A broken capture (tests/fixtures/samples/broken/NOTES.txt), decoded as the modules read /proc."""
    return broken_capture(name).decode("utf-8", "surrogateescape")


def negative_numbers(value, path="delta"):
    """Every negative number anywhere in a delta, with where it is."""
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in negative_numbers(item, "%s.%s" % (path, key))]
    if isinstance(value, (list, tuple)):
        return [found for index, item in enumerate(value) for found in negative_numbers(item, "%s[%d]" % (path, index))]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return [(path, value)]
    return []


SEED_BEFORE = read_sample(*SEED, "clients", "nfs2", "mountstats_before.txt")
SEED_AFTER = read_sample(*SEED, "clients", "nfs2", "mountstats_after.txt")


@pytest.mark.parametrize("as_lines", [False, True])
def test_after_sample_cut_inside_the_write_line_is_truncated_and_not_usable(as_lines):
    after = read_broken("mountstats_after_cut_in_write.txt")
    delta = mountstats_delta(after.splitlines() if as_lines else after, SEED_BEFORE.splitlines())[0]
    assert delta["truncated"] is True and delta["usable"] is False and delta["problems"] == ["truncated"]
    assert "after sample" in delta["problem_details"][0] and "WRITE" in delta["problem_details"][0]
    assert negative_numbers(delta) == []


def test_before_sample_cut_at_a_line_end_is_truncated():
    # Every line whole, the op list shorter than the after sample's: only the pair shows the cut.
    before = SEED_BEFORE[:SEED_BEFORE.index("\t      COMMIT:")]
    delta = mountstats_delta(SEED_AFTER, before)[0]
    assert delta["truncated"] is True and delta["usable"] is False
    assert "before sample" in delta["problem_details"][0] and "COMMIT" in delta["problem_details"][0]


def test_counters_going_backwards_while_age_rose_is_a_reset_with_no_negative_rate():
    after = read_broken("mountstats_after_remounted_age_rose.txt")
    delta = mountstats_delta(after, SEED_AFTER)[0]
    assert delta["reset"] is True and delta["new_mount"] is False and delta["usable"] is False
    assert delta["problems"] == ["reset"]
    assert "went backwards" in delta["problem_details"][0] and "age rose from 26 to 40" in delta["problem_details"][0]
    assert negative_numbers(delta) == []
    # Counted from the remount, as pool_stats after an nfsd restart: the after counters over its age.
    assert delta["rpc"]["sends"] == 30 and delta["interval_seconds"] == 40.0 and delta["write_mb_per_second"] == 0.0


def test_mount_missing_from_the_before_sample_is_new_and_not_usable():
    delta = mountstats_delta(SEED_AFTER, "device proc mounted on /proc with fstype proc\n")[0]
    assert delta["new_mount"] is True and delta["usable"] is False and delta["problems"] == ["new_mount"]
    assert "no block" in delta["problem_details"][0]
    # Without a before sample the caller asked for "since mount": nothing is wrong with that.
    since_mount = mountstats_delta(SEED_AFTER)[0]
    assert since_mount["usable"] is True and since_mount["new_mount"] is False


def test_duplicate_mounts_are_paired_with_their_own_before_block():
    before = read_broken("mountstats_duplicates_before.txt")
    deltas = mountstats_delta(read_broken("mountstats_duplicates_after.txt"), before)
    assert [(delta["nfs_version"], delta["ops"].get("WRITE", {}).get("ops")) for delta in deltas] == [("4.1", None), ("4.2", 515)]
    assert all(delta["usable"] and delta["interval_seconds"] == 26.0 for delta in deltas)
    assert deltas[1]["rpc"]["sends"] == 543 and deltas[1]["write_bytes"] == 536870912


def test_duplicate_left_alone_when_the_other_was_unmounted_is_not_paired_with_it():
    before = read_broken("mountstats_duplicates_before.txt")
    deltas = mountstats_delta(read_broken("mountstats_duplicates_after_first_unmounted.txt"), before)
    assert len(deltas) == 1
    delta = deltas[0]
    # Paired with the vers=4.1 block this was 515 - 4477 WRITEs over 6 s.
    assert delta["nfs_version"] == "4.2" and delta["ops"]["WRITE"]["ops"] == 515 and delta["interval_seconds"] == 26.0
    assert delta["usable"] is True and negative_numbers(delta) == []


def test_duplicates_parked_while_looking_for_another_mount_keep_their_position():
    def block(mount_point, age, writes):
        return ("device srv:/x mounted on %s with fstype nfs statvers=1.1\n\topts:\trw,vers=3\n\tage:\t%d\n"
                "\tRPC iostats version: 1.1  p/v: 100003/3 (nfs)\n\txprt:\ttcp 0 0 1 0 0 %d %d 0 0 0 2 0 0\n"
                "\tper-op statistics\n\t       WRITE: %d %d 0 0 0 0 %d %d 0\n\n" % (mount_point, age, writes, writes, writes, writes, writes, writes))
    # Two identical mounts on /a (rdma-style multi-mount), and /z listed first only in the after sample.
    before = block("/a", 100, 1000000) + block("/a", 50, 10) + block("/z", 10, 0)
    after = block("/z", 20, 5) + block("/a", 110, 1500000) + block("/a", 60, 20)
    deltas = mountstats_delta(after, before)
    assert [(delta["mount_point"], delta["ops"]["WRITE"]["ops"]) for delta in deltas] == [("/z", 5), ("/a", 500000), ("/a", 10)]
    assert all(delta["usable"] for delta in deltas)


@pytest.mark.parametrize("after_name, before_name", [
    ("mountstats_after_cut_in_write.txt", None),
    ("mountstats_after_remounted_age_rose.txt", None),
    ("mountstats_duplicates_after.txt", "mountstats_duplicates_before.txt"),
    ("mountstats_duplicates_after_first_unmounted.txt", "mountstats_duplicates_before.txt"),
    ("mountstats_duplicates_before.txt", "mountstats_duplicates_after.txt"),
    ("mountstats_duplicates_after.txt", None),
])
def test_no_delta_of_a_broken_capture_has_a_negative_number(after_name, before_name):
    before = read_broken(before_name) if before_name else SEED_AFTER
    for delta in mountstats_delta(read_broken(after_name), before):
        assert negative_numbers(delta) == []
        assert delta["usable"] is not any(delta[name] for name in ("truncated", "reset", "new_mount"))


def test_op_line_torn_in_the_middle_of_the_section_is_truncated():
    after = SEED_AFTER.replace("COMMIT: 11 11 0 1980 1144 7733 529 8265 0", "COMMIT: 11 11 0 1980")
    delta = mountstats_delta(after, SEED_BEFORE)[0]
    assert delta["truncated"] is True and delta["usable"] is False
    assert delta["problem_details"] == ["after sample: the COMMIT line has 4 counters"]


def _with_counter(text, label, index, value):
    """text with the index-th number of its first `label:` line replaced by value."""
    lines = text.split("\n")
    for position, line in enumerate(lines):
        name, sep, rest = line.partition(":")
        if sep and name.strip() == label:
            words = rest.split()
            words[index] = value
            lines[position] = "%s: %s" % (name, " ".join(words))
            return "\n".join(lines)
    raise AssertionError("no %s line" % label)


@pytest.mark.parametrize("sample, label, index, value, named", [
    ("after", "WRITE", 0, "9" * 400, "WRITE ops is 999999999999999999999999... (400 characters)"),
    ("after", "WRITE", 6, "18446744073709551616", "WRITE rtt_ms is 18446744073709551616"),
    ("before", "WRITE", 7, "1" + "0" * 30, "WRITE execute_ms is 100000000000000000000000... (31 characters)"),
    ("after", "bytes", 4, "9_" * 30 + "9", "bytes serverreadbytes"),
    ("after", "xprt", 6, "7" * 40, "xprt sends is 7777"),
    ("after", "age", 0, "9" * 400, "age is 999"),
])
def test_a_counter_above_2_64_is_refused_naming_the_field_with_no_traceback(sample, label, index, value, named):
    files = load_bundle(sample_path(*SEED))["clients"]["nfs2"]
    texts = {"after": files["mountstats_after"], "before": files["mountstats_before"]}
    texts[sample] = _with_counter(texts[sample], label, index, value)
    delta, = mountstats_delta(texts["after"].splitlines(), texts["before"].splitlines())
    assert delta["usable"] is False and "not_kernel_value" in delta["problems"]
    assert any(detail.startswith(sample + " sample: ") and named in detail and "above 2^64, not a kernel counter" in detail
               for detail in delta["problem_details"]), delta["problem_details"]
    # No figure is made of the value: every number of the delta is a finite one below 2^64.
    assert all(math.isfinite(number) and abs(number) < 2 ** 64 for number in _numbers(delta))


def _numbers(value):
    if isinstance(value, dict):
        return [number for item in value.values() for number in _numbers(item)]
    if isinstance(value, list):
        return [number for item in value for number in _numbers(item)]
    return [value] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def test_the_largest_kernel_counter_is_still_a_counter():
    files = load_bundle(sample_path(*SEED))["clients"]["nfs2"]
    after = _with_counter(files["mountstats_after"], "READ", 3, "18446744073709551615")
    before = _with_counter(files["mountstats_before"], "READ", 3, "18446744073709551615")
    delta, = mountstats_delta(after.splitlines(), before.splitlines())
    assert delta["usable"] is True and delta["problems"] == []
