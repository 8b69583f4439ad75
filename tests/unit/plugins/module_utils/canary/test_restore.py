"""restore.py: the canary's read-back phase - options, plan, block verification, results, messages."""
from __future__ import annotations

import os

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import restore

KIB = 1024
BLOCK = 16 * KIB


def _written(block, offset, size=None):
    """What the write path puts at offset: the stamp over the rank's block, size bytes of it."""
    data = bytearray(block)
    data[0:8] = canary.block_stamp(offset)
    return memoryview(bytes(data[:len(block) if size is None else size]))


@pytest.fixture
def block():
    return os.urandom(BLOCK)


def test_a_block_read_back_as_written_verifies(block):
    expected = bytearray(block)
    for offset in (0, BLOCK, 7 * BLOCK):
        assert restore.verify_block(expected, _written(block, offset), offset, BLOCK) is None


def test_short_blocks_verify_even_below_the_stamp(block):
    expected = bytearray(block)
    assert restore.verify_block(expected, _written(block, 3 * BLOCK, 100), 3 * BLOCK, 100) is None
    assert restore.verify_block(expected, _written(block, 3 * BLOCK, 3), 3 * BLOCK, 3) is None


def test_a_block_from_another_offset_is_stale_and_says_which(block):
    problem = restore.verify_block(bytearray(block), _written(block, BLOCK), 4 * BLOCK, BLOCK)
    assert problem == "stale block: it holds the data written at offset %d" % BLOCK


def test_a_torn_block_names_the_first_differing_byte(block):
    data = bytearray(_written(block, 2 * BLOCK))
    data[5000] ^= 0xFF
    problem = restore.verify_block(bytearray(block), memoryview(bytes(data)), 2 * BLOCK, BLOCK)
    assert problem.startswith("torn block: the offset stamp is right") and "from byte +5000 on" in problem


def test_a_hole_is_a_block_of_zeros(block):
    problem = restore.verify_block(bytearray(block), memoryview(bytes(BLOCK)), BLOCK, BLOCK)
    assert problem.startswith("block of zeros where data was written")


def test_data_of_another_run_is_foreign(block):
    problem = restore.verify_block(bytearray(block), memoryview(os.urandom(BLOCK)), BLOCK, BLOCK)
    assert problem.startswith("foreign data: neither this block nor another block of this rank")


def test_a_short_read_says_how_much_came(block):
    problem = restore.verify_block(bytearray(block), _written(block, 0, 4000), 0, BLOCK)
    assert problem == "short read: 4000 of %d bytes (the file ends early)" % BLOCK


def test_first_difference():
    assert restore.first_difference(b"abcd" * 3000, b"abcd" * 3000) is None
    assert restore.first_difference(b"a" * 9000, b"a" * 8999 + b"b") == 8999
    assert restore.first_difference(b"aaa", b"aa") == 2


@pytest.mark.parametrize("args, message", [
    ((True, "fadvise", False, 4096, 8192), "restore=true needs fsync=true"),
    ((True, "direct", True, 1000, 8000), "block_size must be a multiple of 4096 with restore_cache=direct"),
    ((True, "direct", True, 4096, 4096 * 3 + 1), "bytes_per_rank must be a multiple of block_size with restore_cache=direct"),
    ((True, "warm", True, 4096, 8192), "restore_cache must be one of fadvise, direct, none"),
])
def test_validate_restore_names_the_option(args, message):
    errors = restore.validate_restore(*args)
    assert len(errors) == 1 and errors[0].startswith(message)


def test_validate_restore_accepts_sane_values_and_ignores_options_when_off():
    assert restore.validate_restore(True, "direct", True, 4096, 8192) == []
    assert restore.validate_restore(True, "fadvise", True, 1000, 8001) == []
    assert restore.validate_restore(False, "direct", False, 1000, 8001) == []


def test_plan_restore_reads_every_planned_byte_once():
    plan = canary.plan_ranks(3, 10 * KIB, 4 * KIB, "file_per_rank", files_per_rank=2)
    described = restore.plan_restore(plan, 4 * KIB, "fadvise")
    # 10 KiB per rank split 4 + 6 KiB: one and two blocks per file.
    assert described["total_read_bytes"] == 30 * KIB and described["blocks"] == 9 and described["files"] == 6
    assert described["start"] == "when the last rank of this host has written"
    assert "read_go.json" in restore.plan_restore(plan, 4 * KIB, "direct", "/dev/shm/x")["start"]


def test_verify_errors_are_counted_all_and_named_up_to_the_bound():
    result = restore.empty_read()
    for index in range(restore.MAX_VERIFY_ERRORS + 3):
        restore.add_verify_error(result, "f", index * BLOCK, "torn")
    assert result["verify_error_count"] == restore.MAX_VERIFY_ERRORS + 3
    assert len(result["verify_errors"]) == restore.MAX_VERIFY_ERRORS
    assert restore.failure_message([dict(result, rank=4)]).endswith("torn (%d bad blocks in all)" % (restore.MAX_VERIFY_ERRORS + 3))


def test_complete_read_fills_what_a_rank_never_sent():
    written = {"rank": 0, "start": 1.0, "end": 2.0, "bytes": 5, "error": None}
    assert restore.complete_read(written)["read_error"] is None
    assert restore.complete_read(written, "rank exited")["read_error"] == "rank exited"
    full = dict(written, **restore.empty_read())
    assert restore.complete_read(full, "rank exited")["read_error"] is None


def test_skip_reason_names_the_ranks_that_did_not_write():
    ok = {"rank": 0, "end": 2.0, "error": None}
    assert restore.skip_reason([ok], []) is None
    assert restore.skip_reason([ok, {"rank": 1, "end": None, "error": "EIO"}], []) == \
        "not run: the write phase failed (ranks 1)"
    assert restore.skip_reason([ok], [{"rank": 3}]) == "not run: the write phase stalled (ranks 3)"


def test_summary_is_the_write_aggregate_over_read_fields_plus_the_method():
    results = [dict({"rank": 0, "start": 1.0, "end": 2.0, "bytes": 8, "error": None}, **restore.empty_read())]
    results[0].update(read_start=3.0, read_end=5.0, read_bytes=8)
    block = restore.summary(results, 3.0, "direct")
    assert block == dict(canary.aggregate(results, 3.0, canary.READ_FIELDS), restore_cache="direct",
                         read_go_at=3.0, skipped=None, verify_error_count=0)


def test_failure_message_names_rank_file_and_offset_and_bounds_its_length():
    results = [{"rank": rank, "read_error": None, "verify_error_count": 1,
                "verify_errors": [{"file": "shared.ckpt", "offset": rank * BLOCK, "problem": "torn block"}]}
               for rank in range(10)]
    message = restore.failure_message(results)
    assert message.startswith("canary restore failed: rank 0: shared.ckpt offset 0: torn block; rank 1: ")
    assert message.endswith("torn block (2 more not shown, 10 bad blocks in all)")
    assert restore.failure_message([{"rank": 0, "read_error": "read: EIO: x"}]) == "canary restore failed: rank 0: read: EIO: x"
    assert restore.failure_message([], "not run: aborted: x") == "canary restore not run: aborted: x"
    assert restore.failure_message([{"rank": 0}]) is None


def _host(offset, go_controller, read_starts, read_seconds=2.0, cache="fadvise", skipped=None, bad_blocks=0):
    """One client's canary result with a read phase on that host's own clock (offset: host - controller)."""
    ranks = []
    for rank, start in enumerate(read_starts):
        host_start = None if start is None else go_controller + offset + start
        ranks.append({"rank": rank, "start": 1.0 + offset, "end": 5.0 + offset, "bytes": 100, "error": None,
                      "read_start": host_start, "read_end": None if start is None else host_start + read_seconds,
                      "read_bytes": 0 if start is None else 100, "read_error": None,
                      "verify_errors": [{"file": "f", "offset": 0, "problem": "torn"}] if bad_blocks and rank == 0 else [],
                      "verify_error_count": bad_blocks if rank == 0 else 0})
    return {"ranks": ranks, "summary": {"restore": {"restore_cache": cache, "skipped": skipped,
                                                    "verify_error_count": bad_blocks}}}


def test_restore_context_block_puts_reads_on_the_controllers_clock_and_flags_a_spread_over_the_bound():
    go = 1000.0
    # b's clock runs 3 s ahead: on its own clock its reads start 3 s after a's, on the controller's together.
    results = [_host(0.0, go, [0.01, 0.02]), _host(3.0, go, [0.0, 0.03])]
    clocks = [{"offset_seconds": 0.0, "uncertainty_seconds": 0.01}, {"offset_seconds": 3.0, "uncertainty_seconds": 0.02}]
    block = restore.context_restore_block(results, go, clocks, ["a", "b"], window_seconds=10)
    assert block["bytes"] == 400 and block["seconds"] == 2.03 and block["read_go_at"] == go
    assert block["start_spread_seconds"] == 0.03 and block["synchronized"] is True and block["clocks_measured"] is True
    assert block["restore_cache"] == "fadvise" and "measured by the diagnosis" in block["guarantee"]
    assert block["verify_error_count"] == 0 and block["finished_ranks"] == 4 and block["ranks"] == 4
    assert block["target_window_seconds"] == 10.0 and block["skipped"] == {}
    # Without the offsets the 3 s step would be read as a 3 s spread: flagged, and the time span not averaged.
    late = restore.context_restore_block([_host(0.0, go, [0.0]), _host(0.0, go, [1.5])], go, clocks, ["a", "b"], 0)
    assert late["synchronized"] is False and late["seconds"] == 3.5
    assert "exceeds" in late["spread_message"] and late["target_window_seconds"] is None


def test_restore_context_block_names_skipped_clients_and_bad_blocks_and_is_none_without_a_read_phase():
    go = 50.0
    results = [_host(0.0, go, [0.0], cache="direct", bad_blocks=2),
               _host(0.0, go, [None], cache="direct", skipped="not run: the write phase failed (ranks 0)")]
    block = restore.context_restore_block(results, go, None, ["a", "b"], None)
    assert block["skipped"] == {"b": "not run: the write phase failed (ranks 0)"}
    assert block["verify_error_count"] == 2 and block["finished_ranks"] == 0
    assert block["restore_cache"] == "direct" and block["guarantee"].startswith("O_DIRECT")
    assert block["clocks_measured"] is False
    assert restore.context_restore_block([{"ranks": [{"rank": 0, "start": 1, "end": 2, "bytes": 1, "error": None}],
                                           "summary": {}}], None, None, ["a"], 0) is None


def _read_params(**extra):
    params = {"ranks": 4, "first_rank": 0, "restore_cache": "fadvise", "recovery_rank_shift": 4, "job_ranks": 8}
    params.update(extra)
    return params


def test_read_back_of_another_hosts_files_cannot_be_served_by_this_clients_cache():
    assert restore.read_from(_read_params()) == {"recovery_rank_shift": 4, "other_host": True, "cache_risk": None}


@pytest.mark.parametrize("extra, risk", [
    ({"recovery_rank_shift": 0}, "fadvise"),
    ({"recovery_rank_shift": 8}, "fadvise"),
    ({"job_ranks": 4}, "fadvise"),
    ({"recovery_rank_shift": 0, "restore_cache": "none"}, "warm read"),
    ({"recovery_rank_shift": 0, "restore_cache": "direct"}, None),
])
def test_a_read_back_of_own_files_is_flagged_when_a_cache_could_serve_it(extra, risk):
    found = restore.read_from(_read_params(**extra))
    assert found["other_host"] is False
    assert (found["cache_risk"] is None) if risk is None else (risk in found["cache_risk"])
