"""Pure parts of the checkpoint canary: plans, offsets, aggregation, D-state lines, messages."""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import probe
from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import parse_mountinfo

MIB = 1024 * 1024


def test_shared_file_ranges_are_disjoint_and_contiguous():
    plan = canary.plan_ranks(4, 3 * MIB, MIB, "shared_file")
    ranges = [(r["files"][0]["offset"], r["files"][0]["length"]) for r in plan]
    assert ranges == [(0, 3 * MIB), (3 * MIB, 3 * MIB), (6 * MIB, 3 * MIB), (9 * MIB, 3 * MIB)]
    assert {r["files"][0]["name"] for r in plan} == {canary.SHARED_FILE_NAME}
    assert not any(r["files"][0]["create"] for r in plan)


def test_file_per_rank_splits_on_block_boundaries():
    plan = canary.plan_ranks(2, 10 * MIB, MIB, "file_per_rank", files_per_rank=3)
    files = plan[1]["files"]
    assert [f["name"] for f in files] == ["__1_0.ckpt", "__1_1.ckpt", "__1_2.ckpt"]
    assert [f["length"] for f in files] == [3 * MIB, 3 * MIB, 4 * MIB]
    assert all(f["offset"] == 0 and f["create"] for f in files)
    assert sum(f["length"] for f in files) == 10 * MIB


def test_file_per_rank_names_are_unique_across_ranks():
    plan = canary.plan_ranks(8, 4 * MIB, MIB, "file_per_rank", files_per_rank=2)
    names = [f["name"] for r in plan for f in r["files"]]
    assert len(names) == len(set(names)) == 16


def test_write_chunks_cover_range_with_short_last_block():
    chunks = list(canary.write_chunks(100, 2500, 1000))
    assert chunks == [(100, 1000), (1100, 1000), (2100, 500)]


def test_write_chunks_of_shared_plan_cover_file_exactly_once():
    plan = canary.plan_ranks(3, 5000, 1024, "shared_file")
    covered = []
    for rank in plan:
        item = rank["files"][0]
        covered.extend(canary.write_chunks(item["offset"], item["length"], 1024))
    covered.sort()
    position = 0
    for offset, size in covered:
        assert offset == position
        position += size
    assert position == 15000


@pytest.mark.parametrize("args, option", [
    ((0, MIB, MIB, "shared_file", 1, False), "ranks"),
    ((4097, MIB, MIB, "shared_file", 1, False), "ranks"),
    ((1, 0, MIB, "shared_file", 1, False), "bytes_per_rank"),
    ((1, MIB, 0, "shared_file", 1, False), "block_size"),
    ((1, MIB, 7, "shared_file", 1, False), "block_size"),
    ((1, MIB, MIB, "striped", 1, False), "layout"),
    ((1, MIB, MIB, "file_per_rank", 0, False), "files_per_rank"),
    ((1, 4 * MIB, MIB, "shared_file", 2, False), "files_per_rank"),
    ((1, MIB, MIB, "file_per_rank", 2, False), "bytes_per_rank"),
    ((1, MIB, 1000, "shared_file", 1, True), "block_size"),
    ((1, MIB + 4096, MIB, "shared_file", 1, True), "bytes_per_rank"),
])
def test_validate_plan_names_the_option(args, option):
    errors = canary.validate_plan(*args)
    assert errors and errors[0].startswith(option)


def test_validate_plan_accepts_sane_values():
    assert canary.validate_plan(8, 64 * MIB, MIB, "file_per_rank", 4, True) == []


def test_aggregate_is_total_bytes_over_latest_end_minus_earliest_start():
    results = [
        {"rank": 0, "start": 100.0, "end": 104.0, "bytes": 400, "error": None},
        {"rank": 1, "start": 100.5, "end": 110.0, "bytes": 600, "error": None},
    ]
    summary = canary.aggregate(results, start_at=100.0)
    assert summary["seconds"] == 10.0
    assert summary["throughput_bytes_per_second"] == 100.0
    assert summary["max_rank_seconds"] == 9.5
    assert summary["start_spread_seconds"] == 0.5
    assert summary["max_start_delay_seconds"] == 0.5
    assert summary["incomplete_ranks"] == []


def test_aggregate_leaves_failed_ranks_out_of_the_span():
    results = [
        {"rank": 0, "start": 10.0, "end": 12.0, "bytes": 100, "error": None},
        {"rank": 1, "start": None, "end": None, "bytes": 0, "error": "stalled"},
    ]
    summary = canary.aggregate(results)
    assert summary["finished_ranks"] == 1
    assert summary["incomplete_ranks"] == [1]
    assert summary["seconds"] == 2.0
    assert summary["max_start_delay_seconds"] is None


def test_aggregate_without_finished_ranks_has_no_throughput():
    summary = canary.aggregate([{"rank": 0, "start": None, "end": None, "bytes": 0, "error": "x"}])
    assert summary["throughput_bytes_per_second"] is None and summary["seconds"] is None


def test_combine_hosts_tags_every_rank_with_its_host():
    ranks = canary.combine_hosts({"b": [{"rank": 0}], "a": [{"rank": 0}, {"rank": 1}]})
    assert [(r["host"], r["rank"]) for r in ranks] == [("a", 0), ("a", 1), ("b", 0)]


def test_parse_stat_starttime_after_a_comm_with_spaces_and_parentheses():
    # One reader of /proc/PID/stat's start time for the canary's ranks and the probe's listeners.
    text = "4711 (my (odd) name) D 1 4711 4711 0 -1 4194560 " + " ".join(["0"] * 12) + " 98765 0 0"
    assert probe.stat_start_time(text) == 98765
    assert probe.stat_start_time("garbage") is None
    assert probe.stat_start_time("1 (x) S 1") is None


def test_stall_message_names_ranks_state_and_wchan():
    message = canary.stall_message(
        [{"rank": 3, "pid": 99, "state": "D", "wchan": "rpc_wait_bit_killable", "exited": False},
         {"rank": 1, "pid": 98, "state": "S", "wchan": "hrtimer_nanosleep", "exited": True}],
        30, "/mnt/x/ckptio-canary-a", cleanup_deferred_pid=1234)
    assert "rank 3 (pid 99) uninterruptible (D), wchan rpc_wait_bit_killable, still alive after SIGKILL" in message
    assert "rank 1 (pid 98) sleeping, wchan hrtimer_nanosleep;" not in message
    assert "rank 1 (pid 98) sleeping, wchan hrtimer_nanosleep." in message
    assert "cannot be killed" in message and "pid 1234" in message and "timeout=30s" in message


def test_stall_message_without_d_state_does_not_claim_unkillable():
    message = canary.stall_message([{"rank": 0, "pid": 5, "state": "S", "wchan": None, "exited": True}], 2, "/w")
    assert "cannot be killed" not in message and "wchan -" in message


MOUNTINFO = (
    "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
    "40 22 0:50 / /mnt/nfs rw,relatime - nfs4 10.0.0.1:/srv/nfs rw,vers=4.1,addr=10.0.0.1\n"
    "41 40 0:51 / /mnt/nfs/scratch rw - tmpfs tmpfs rw\n"
    "42 22 0:52 / /mnt/nfs2 rw - nfs 10.0.0.2:/x rw,vers=3\n"
)


@pytest.mark.parametrize("path, mount_point", [
    ("/mnt/nfs", "/mnt/nfs"),
    ("/mnt/nfs/run/a", "/mnt/nfs"),
    ("/mnt/nfs/scratch/x", "/mnt/nfs/scratch"),
    ("/mnt/nfs2", "/mnt/nfs2"),
    ("/mnt/nfs20", "/"),
    ("/tmp", "/"),
])
def test_mount_for_path_picks_the_deepest_mount(path, mount_point):
    assert canary.mount_for_path(parse_mountinfo(MOUNTINFO), path)["mount_point"] == mount_point


def test_is_inside():
    assert canary.is_inside("/a/b/c", "/a/b")
    assert canary.is_inside("/a/b", "/a/b")
    assert not canary.is_inside("/a/bc", "/a/b")


def _lab_hosts():
    # The lab's case (issue 14): nfs2's clock 1.27 s behind the controller, nfs3's 0.04 s behind.
    # On the controller's clock both started at 100.0; nfs2 wrote 4 s, nfs3 5 s.
    return ({"nfs2": [{"rank": 0, "start": 100.0 - 1.27, "end": 104.0 - 1.27, "bytes": 400, "error": None}],
             "nfs3": [{"rank": 0, "start": 100.0 - 0.04, "end": 105.0 - 0.04, "bytes": 500, "error": None}]},
            {"nfs2": {"offset_seconds": -1.27}, "nfs3": {"offset_seconds": -0.04}})


def test_cluster_aggregate_puts_every_host_on_the_controller_clock():
    ranks, offsets = _lab_hosts()
    summary = canary.cluster_aggregate(canary.combine_hosts(ranks, offsets), go_at=100.0)
    assert summary["seconds"] == pytest.approx(5.0)
    assert summary["throughput_bytes_per_second"] == pytest.approx(900 / 5.0)
    assert summary["start_spread_seconds"] == pytest.approx(0.0, abs=1e-6)
    assert summary["synchronized"] is True and summary["clocks_measured"] is True
    # Mixed clocks (no offsets) would have said 1.23 s of spread and 6.23 s of checkpoint.
    mixed = canary.cluster_aggregate(canary.combine_hosts(ranks))
    assert mixed["seconds"] == pytest.approx(6.23) and mixed["clocks_measured"] is False
    assert mixed["unmeasured_clocks"] == ["nfs2", "nfs3"] and "not measured" in mixed["spread_message"]


def test_cluster_aggregate_flags_a_spread_over_the_bound():
    ranks = canary.combine_hosts({"a": [{"rank": 0, "start": 10.0, "end": 12.0, "bytes": 1, "error": None}],
                                  "b": [{"rank": 0, "start": 19.35, "end": 21.0, "bytes": 1, "error": None}]},
                                 {"a": 0.0, "b": 0.0})
    summary = canary.cluster_aggregate(ranks, go_at=10.0)
    assert summary["synchronized"] is False and "not a synchronized start" in summary["spread_message"]
    assert summary["max_start_delay_seconds"] == pytest.approx(9.35)


def test_context_block_with_clocks_carries_the_spread_verdict():
    ranks, offsets = _lab_hosts()
    results = [{"ranks": ranks["nfs2"]}, {"ranks": ranks["nfs3"]}]
    block = canary.context_block(results, "shared_file", 100.0, [offsets["nfs2"], offsets["nfs3"]], ["nfs2", "nfs3"])
    assert block["seconds"] == 5.0 and block["synchronized"] is True and block["clocks_measured"] is True
    assert "synchronized" not in canary.context_block(results, "shared_file", 100.0)


def test_aggregate_over_read_fields_is_the_same_rule_on_read_start_end_bytes():
    results = [
        {"rank": 0, "start": 1.0, "end": 2.0, "bytes": 10, "error": None,
         "read_start": 5.0, "read_end": 7.0, "read_bytes": 400, "read_error": None, "verify_errors": []},
        {"rank": 1, "start": 1.0, "end": 3.0, "bytes": 10, "error": None,
         "read_start": 5.5, "read_end": 9.0, "read_bytes": 400, "read_error": None, "verify_errors": []},
        {"rank": 2, "start": 1.0, "end": 2.5, "bytes": 10, "error": None,
         "read_start": 5.0, "read_end": 20.0, "read_bytes": 200, "read_error": None,
         "verify_errors": [{"file": "f", "offset": 0, "problem": "torn"}]},
    ]
    restored = canary.aggregate(results, 5.0, canary.READ_FIELDS)
    # Rank 2 read bad data: out of the span (like a failed write), its bytes still counted.
    assert restored["finished_ranks"] == 2 and restored["incomplete_ranks"] == [2]
    assert restored["total_bytes"] == 1000 and restored["seconds"] == 4.0
    assert restored["throughput_bytes_per_second"] == 250.0 and restored["max_start_delay_seconds"] == 0.5
    written = canary.aggregate(results)
    assert written["finished_ranks"] == 3 and written["total_bytes"] == 30 and written["seconds"] == 2.0


def test_a_failed_write_also_leaves_the_rank_out_of_the_read_span():
    results = [{"rank": 0, "start": 1.0, "end": None, "bytes": 0, "error": "EIO",
                "read_start": 5.0, "read_end": 6.0, "read_bytes": 0}]
    assert canary.aggregate(results, fields=canary.READ_FIELDS)["finished_ranks"] == 0


def test_cluster_aggregate_of_the_reads_moves_read_times_to_the_controller_clock():
    hosts = {"a": [{"rank": 0, "start": 1.0, "end": 2.0, "bytes": 1, "error": None,
                    "read_start": 10.0, "read_end": 12.0, "read_bytes": 100}],
             "b": [{"rank": 0, "start": 2.0, "end": 3.0, "bytes": 1, "error": None,
                    "read_start": 11.0, "read_end": 13.0, "read_bytes": 100}]}
    ranks = canary.combine_hosts(hosts, {"a": 0.0, "b": -1.0})
    assert [r["read_start"] for r in ranks] == [10.0, 12.0]
    summary = canary.cluster_aggregate(ranks, go_at=10.0, fields=canary.READ_FIELDS)
    assert summary["seconds"] == 4.0 and summary["start_spread_seconds"] == 2.0
    assert summary["synchronized"] is False and summary["max_start_delay_seconds"] == 2.0
    # Results without read fields get none added.
    assert "read_start" not in canary.combine_hosts({"a": [{"rank": 0, "start": 1.0}]})[0]


def test_block_stamp_is_the_offset_little_endian():
    assert canary.block_stamp(65536) == b"\x00\x00\x01\x00\x00\x00\x00\x00"
    assert len(canary.block_stamp(0)) == canary.STAMP_BYTES


@pytest.mark.parametrize("shape, layout", [("torch_dcp", "file_per_rank"), ("megatron", "file_per_rank"),
                                           ("mlperf_llama3_8b", "file_per_rank"), ("shared_file", "shared_file"),
                                           ("file_per_rank", "file_per_rank")])
def test_context_block_layout_is_what_the_canary_wrote_when_it_ran_a_shape(shape, layout):
    # The lab's torch_dcp run (2026-12-02) was diagnosed with "one file per rank instead of one shared
    # file" as its next action: context.yml carried the inventory's layout (shared_file), not the shape's.
    ranks, _offsets = _lab_hosts()
    results = [{"ranks": ranks["nfs2"], "shape": {"name": shape}}, {"ranks": ranks["nfs3"], "shape": {"name": shape}}]
    assert canary.context_block(results, "shared_file", 100.0)["layout"] == layout
    assert canary.context_block([{"ranks": ranks["nfs2"]}], "shared_file", 100.0)["layout"] == "shared_file"


def test_context_block_of_a_burst_buffer_carries_the_drain_to_nfs_and_the_shape():
    # The async option's ranks write to the local path: what the NFS mount took is the drain, on the controller's clock.
    results = [{"ranks": [{"rank": 0, "start": 100.0, "end": 101.0, "bytes": 8, "error": None}], "shape": {"name": "torch_dcp"},
                "drain": {"start": 101.0, "end": 109.0, "bytes": 10, "seconds": 8.0}},
               {"ranks": [{"rank": 0, "start": 100.0, "end": 101.5, "bytes": 8, "error": None}], "shape": {"name": "torch_dcp"},
                "drain": {"start": 102.0, "end": 111.0, "bytes": 10, "seconds": 9.0}}]
    block = canary.context_block(results, "shared_file", 100.0, [{"offset_seconds": 0.0}, {"offset_seconds": 1.0}], ["a", "b"])
    assert block["shape"] == "torch_dcp"
    # b's clock is 1 s ahead: its drain is 101.0-110.0 on the controller's clock.
    assert block["drain"] == {"bytes": 20, "seconds": 9.0, "start": 101.0, "end": 110.0}
    assert "drain" not in canary.context_block([{"ranks": results[0]["ranks"]}], "shared_file", 100.0)


def test_context_block_names_every_mount_of_several_paths_once():
    mounts = [{"mount_point": "/mnt/nfs"}, {"mount_point": "/mnt/nfs-b"}]
    results = [{"ranks": [], "mounts": mounts}, {"ranks": [], "mounts": mounts}]
    assert canary.context_block(results, "file_per_rank")["mount_points"] == ["/mnt/nfs", "/mnt/nfs-b"]
    assert "mount_points" not in canary.context_block([{"ranks": [], "mounts": mounts[:1]}], "file_per_rank")
