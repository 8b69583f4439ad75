"""barrier.py: the two-phase start's formats, go margin, ready split, spread and harness cost."""
from __future__ import annotations

import json
import re

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import barrier


def test_go_is_now_plus_a_margin_from_the_measured_fanout_on_each_hosts_clock():
    plan = barrier.plan_go({"a": True, "b": True}, {"a": 0.0, "b": -1.27}, fanout_seconds=10.0, now=1000.0)
    assert plan["margin_seconds"] == 15.0 and plan["go_at"] == 1015.0
    assert plan["ready"] == ["a", "b"] and plan["not_ready"] == [] and plan["abort"] == {}
    # b's clock is 1.27 s behind: its go file says 1013.73 on its own clock.
    assert plan["go"]["b"] == {"go_at": 1013.73, "go_controller": 1015.0, "offset_seconds": -1.27}
    assert plan["go"]["a"]["go_at"] == 1015.0


def test_a_fast_fanout_still_gets_the_minimum_margin_and_an_unmeasured_clock_goes_on_the_controllers():
    plan = barrier.plan_go({"a": True}, {"a": None}, fanout_seconds=0.2, now=50.0)
    assert plan["margin_seconds"] == barrier.GO_MARGIN_MIN_SECONDS
    assert plan["go"]["a"]["go_at"] == 50.0 + barrier.GO_MARGIN_MIN_SECONDS


def test_a_host_that_never_got_ready_is_named_and_aborted_while_the_others_go():
    plan = barrier.plan_go({"a": True, "slow": False, "c": True}, {}, fanout_seconds=300.0, now=10.0)
    assert plan["not_ready"] == ["slow"] and plan["ready"] == ["a", "c"]
    assert set(plan["go"]) == {"a", "c"} and list(plan["abort"]) == ["slow"]
    assert "not ready" in plan["abort"]["slow"]["abort"]


def test_no_host_ready_gives_no_go():
    plan = barrier.plan_go({"a": False}, {}, 5.0, 1.0)
    assert plan["go_at"] is None and plan["go"] == {} and plan["not_ready"] == ["a"]


def test_parse_signal_abort_wins_and_a_bad_go_file_is_an_abort():
    go = json.dumps({"go_at": 12.5})
    assert barrier.parse_signal(go, None) == ("go", 12.5)
    assert barrier.parse_signal(None, None) == (None, None)
    assert barrier.parse_signal(go, json.dumps({"abort": "x"})) == ("abort", "x")
    kind, reason = barrier.parse_signal("{not json", None)
    assert kind == "abort" and "go file unreadable" in reason
    assert barrier.parse_signal(json.dumps({"go_at": "nan"}), None)[0] == "abort"


def test_ready_document_round_trips():
    document = barrier.ready_document(10.123456789, 42, 8, "/mnt/x")
    assert json.loads(json.dumps(document)) == {"ready_at": 10.123457, "pid": 42, "ranks": 8, "workdir": "/mnt/x"}


def test_written_document_and_the_read_barrier_file_names():
    document = barrier.written_document(20.5, 42, 8, "/mnt/x")
    assert json.loads(json.dumps(document)) == {"written_at": 20.5, "pid": 42, "ranks": 8, "workdir": "/mnt/x",
                                                "read_ready": True, "skipped": None}
    assert (barrier.WRITTEN_FILE, barrier.READ_GO_FILE) == ("written.json", "read_go.json")
    # read_go.json has go.json's format: the controller's go_document parses the same way.
    assert barrier.parse_signal(json.dumps(barrier.go_document(30.0, -1.0)), None) == ("go", 29.0)


@pytest.mark.parametrize("starts, synchronized", [([10.0, 10.4, 10.99], True), ([10.0, 11.5], False)])
def test_spread_against_the_bound(starts, synchronized):
    result = barrier.spread(starts, go_at=10.0)
    assert result["synchronized"] is synchronized
    assert result["start_spread_seconds"] == pytest.approx(max(starts) - min(starts))
    assert result["max_start_delay_seconds"] == pytest.approx(max(starts) - 10.0)
    assert ("not a synchronized start" in result["message"]) is (not synchronized)


@pytest.mark.parametrize("starts, uncertainty, synchronized, words", [
    ([10.0, 10.004], 0.47, True, "known to +/- 0.470 s), within the 1.0 s bound"),
    # The corrected clocks agree, but they may still be 1.2 s apart: not confirmed, not false.
    ([10.0, 10.004], 1.2, None, "not confirmed"),
    ([10.0, 11.5], 0.1, False, "not a synchronized start"),
])
def test_spread_counts_what_the_clocks_cannot_tell(starts, uncertainty, synchronized, words):
    result = barrier.spread(starts, uncertainty=uncertainty)
    assert result["synchronized"] is synchronized
    assert result["uncertainty_seconds"] == uncertainty
    assert words in result["message"]


def test_spread_without_starts_is_unknown():
    assert barrier.spread([None])["synchronized"] is None


def test_harness_cost_is_host_busy_minus_ranks_minus_canary():
    start = {"proc_stat": "cpu  100 0 100 5000 0 0 0 0\ncpu0 100 0 100 5000 0 0 0 0\n"}
    end = {"proc_stat": "cpu  400 0 300 6000 50 0 0 0\n"}
    cost = barrier.harness_cost(0.2, 3.0, start, end)
    # busy ticks: (400+300) - (100+100) = 500 ticks = 5 s; 5 - 3 - 0.2 = 1.8 s by others.
    assert cost == {"canary_cpu_seconds": 0.2, "ranks_cpu_seconds": 3.0, "host_busy_cpu_seconds": 5.0,
                    "other_cpu_seconds": 1.8}
    assert barrier.harness_cost(0.1, 1.0, None, end)["other_cpu_seconds"] is None


def test_a_failed_write_still_writes_written_json_saying_it_will_not_read():
    """The controller's one wait per client ends on written.json; a host whose write failed says so
    in it instead of leaving the controller to sit out the whole bound (docs/validation.md)."""
    document = barrier.written_document(20.5, 42, 8, "/mnt/x", skipped="not run: the write phase failed (ranks 2)")
    assert document["read_ready"] is False and document["skipped"] == "not run: the write phase failed (ranks 2)"
    for flag, text in ((True, json.dumps(barrier.written_document(1.0, 1, 1, "/w"))), (False, json.dumps(document))):
        match = re.search(barrier.WRITTEN_READY_PATTERN, text)
        assert match.groupdict() == {"read_ready": "true" if flag else "false"}


def test_the_read_go_plan_takes_its_margin_from_the_given_fanout_and_names_why_a_host_does_not_read():
    plan = barrier.plan_go({"a": True, "b": False}, {"a": 0.25, "b": None}, fanout_seconds=4.0, now=500.0,
                           abort_reason="its writes failed or written.json did not come")
    assert plan["go_at"] == 506.0 and plan["margin_seconds"] == 6.0
    assert plan["go"] == {"a": {"go_at": 506.25, "go_controller": 506.0, "offset_seconds": 0.25}}
    assert plan["abort"] == {"b": {"abort": "its writes failed or written.json did not come"}}
