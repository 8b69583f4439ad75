"""Deltas against the hand-computed reference numbers in the bundles' NOTES.txt and against
nfs-utils' mountstats on the same files."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.nfsd_stats import parse_nfsd_stats, parse_pool_stats
from ansible_collections.ckptio.nfs.plugins.module_utils.stats_delta import mountstats_delta, nfsd_delta, pool_stats_delta
from ansible_collections.ckptio.nfs.tests.unit.utils import read_sample, sample_path

SEED = ("bundles", "seed_like_baseline")
PERRANK = ("bundles", "shared_vs_perrank_5b_per_rank")
MOUNTSTATS = shutil.which("mountstats") or ("/usr/sbin/mountstats" if os.path.exists("/usr/sbin/mountstats") else None)


def client_delta(bundle):
    after = read_sample(*bundle, "clients", "nfs2", "mountstats_after.txt")
    before = read_sample(*bundle, "clients", "nfs2", "mountstats_before.txt")
    deltas = mountstats_delta(after.splitlines(), before.splitlines())
    assert len(deltas) == 1
    return deltas[0]


def server_delta(bundle):
    def read(name):
        return read_sample(*bundle, "servers", "nfs1", name)
    return (nfsd_delta(parse_nfsd_stats(read("nfsd_after.txt")), parse_nfsd_stats(read("nfsd_before.txt"))),
            pool_stats_delta(parse_pool_stats(read("pool_stats_after.txt")), parse_pool_stats(read("pool_stats_before.txt"))))


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
    assert not delta["reset"] and not delta["new_mount"]
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


def test_remount_between_samples_resets_like_nfs_utils():
    after = read_sample(*SEED, "clients", "nfs2", "mountstats_before.txt")
    before = read_sample(*SEED, "clients", "nfs2", "mountstats_after.txt")
    delta = mountstats_delta(after.splitlines(), before.splitlines())[0]
    assert delta["reset"] is True
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
