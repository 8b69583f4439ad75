"""Pure report logic: metrics from a diagnosis and deltas, comparison rows, Markdown, figure data."""
from __future__ import annotations

import re

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import run as diagnosis_run
from ansible_collections.ckptio.nfs.plugins.module_utils.report import report

CONTEXT = {"mount_point": "/mnt/nfs", "target": {"checkpoint_bytes": 1000000000, "window_seconds": 10},
           "canary": {"layout": "shared_file", "ranks": 4, "bytes": 200000000, "seconds": 20.0}}


def _delta(write_ops, rtt, exe, queue, bklog, sends, commit_ops=0):
    counts = {"bytes_sent": 0, "retrans": 0, "timeouts": 0, "errors": 0}
    ops = {"WRITE": dict(counts, ops=write_ops, avg_rtt_ms=rtt, avg_exe_ms=exe, avg_queue_ms=queue)}
    if commit_ops:
        ops["COMMIT"] = dict(counts, ops=commit_ops, avg_rtt_ms=5.0, avg_exe_ms=6.0, avg_queue_ms=0.5)
    return {"ops": ops, "rpc": {"bklog_u": bklog, "sends": sends}}


def _run(*deltas):
    """What the report reads of a run (diagnosis/run.py read_run): per-op totals and transport figures of these clients."""
    clients = [{"delta": delta} for delta in deltas]
    sends = sum(delta["rpc"]["sends"] for delta in deltas)
    return {"ops": diagnosis_run.op_totals(clients),
            "figures": {"sends": sends, "backlog_per_send": sum(delta["rpc"]["bklog_u"] for delta in deltas) / float(sends) if sends else 0.0}}


DIAGNOSIS = {
    "target_bytes_per_second": 1e8, "achieved_bytes_per_second": 1e7, "gap_factor": 10.0,
    "limiting_layer": "client_rpc_slots", "contributing": ["access_pattern"], "verdict": "rearchitect", "summary": "s",
    "clients": {"a": {"nfs_version": "4.0", "proto": "tcp", "max_slots": [2, 2],
                      "sunrpc": {"tcp_max_slot_table_entries": 2, "max_session_slots": 64}, "dstate": {"max_count": 3}},
                "b": {"nfs_version": "4.0", "proto": "tcp", "max_slots": [2],
                      "sunrpc": {"tcp_max_slot_table_entries": 2}, "dstate": {"max_count": 7}}},
    "servers": {"s1": {"threads": 8, "pool_stats": {"sockets-enqueued": 100}, "packets_without_idle_thread": 0.2},
                "s2": {"threads": 16, "pool_stats": {"sockets-enqueued": 50}, "packets_without_idle_thread": 0.05}},
}


# The cluster: 64 nodes, 2.4 TB in 300 s = 8 GB/s, the seed's 1.1 GB/s (gap 7.3x).
BIG_CONTEXT = {"mount_point": "/mnt/checkpoints", "target": {"checkpoint_bytes": 2400000000000, "window_seconds": 300},
               "canary": {"layout": "shared_file", "ranks": 512, "bytes": 137438953472, "seconds": 125.0}}
RECOMMENDATIONS = [
    {"layer": "client_rpc_slots", "setting": "nfs max_session_slots", "value": 160,
     "how": "ckptio.nfs.sunrpc_slot_table nfs_max_session_slots=160"},
    {"layer": "client_rpc_slots", "setting": "nconnect", "value": 8, "how": "ckptio.nfs.nfs_mount opts.nconnect=8"},
    {"layer": "server_threads", "setting": "nfsd threads", "value": 64, "how": "ckptio.nfs.nfsd_threads threads=64"},
    {"layer": "access_pattern", "setting": "file per rank", "value": None, "how": "one file per rank"}]
# A diagnosis.json from before CONTRACT 3: no headline, no first_screen.
OLD_DIAGNOSIS = {
    "target_bytes_per_second": 8e9, "achieved_bytes_per_second": 1.0958e9, "gap_factor": 7.3006,
    "limiting_layer": "client_rpc_slots", "contributing": ["server_threads"], "verdict": "rearchitect",
    "tuning_headroom_factor": 3.0, "confidence": "high", "confidence_reasons": [], "unmeasured": [],
    "summary": "rearchitect: achieved 1.1e+03 MB/s of 8e+03 MB/s target",
    "achieved_source": "canary: total bytes / (latest end - earliest start), MLPerf rule",
    "network": {"state": "clear", "probe_share": 0.087, "summary": "links: busiest client at 11 %",
                "headline": "network clear: busiest client at 11 %",
                "links": [{"host": "c1", "utilisation_during": 0.1131}, {"host": "c2", "utilisation_during": 0.09}]},
    "capacity": {"practical_link_bytes_per_second": 2.5e10}, "recommendations": RECOMMENDATIONS,
}
HEADLINE = {
    "verdict": "rearchitect",
    "verdict_text": "re-architect: tuning alone can give up to 3x (ending the slot wait at best), the gap is 7.3x;"
                    " still tune: max_session_slots = 160",
    "achieved_text": "1.1 GB/s", "target_text": "8 GB/s (2.4 TB in 300 s)",
    "links_text": "links at 4.4 % of capacity, 7.3x short of the target: the bandwidth paradox",
    "link_share": 0.044, "link_capacity_bytes_per_second": 2.5e10, "confidence": "high",
    "confidence_reason": "every layer was measured over the checkpoint's window",
    "actions": ["nfs max_session_slots = 160", "nconnect = 8", "nfsd threads = 64"],
    "rests_on": "canary: total bytes / (latest end - earliest start), MLPerf rule",
}
FIRST_SCREEN = ["Verdict: re-architect - tuning alone can give up to 3x, the gap is 7.3x",
                "Achieved 1.1 GB/s against the target 8 GB/s (2.4 TB in 300 s)",
                "Links: 4.4 % of capacity - the bandwidth paradox",
                "Confidence high: every layer was measured over the checkpoint's window",
                "1. nfs max_session_slots = 160", "2. nconnect = 8", "3. nfsd threads = 64"]
NEW_DIAGNOSIS = dict(OLD_DIAGNOSIS, headline=HEADLINE, first_screen=FIRST_SCREEN)
# A number a person reads: not part of a name (nfs2), a setting (=1048576, "= 1048576") or a version.
NUMBER = re.compile(r"(?<![\w.,=/-])(?<!= )\d[\d,]*(?:\.\d+)?")


def _significant_digits(token):
    digits = token.replace(",", "").replace(".", "").lstrip("0")
    return len(digits if "." in token else digits.rstrip("0"))


def assert_readable(lines, digits=True):
    """No None, no exponent, and (digits) no figure with more than 4 significant digits."""
    for line in lines:
        assert "None" not in line, line
        assert not re.search(r"\de[+-]\d", line), line
        if digits:
            assert all(_significant_digits(token) <= 4 for token in NUMBER.findall(line)), line


def test_ops_are_reaveraged_by_op_count_not_mean_of_means():
    metrics = report.bundle_metrics(CONTEXT, DIAGNOSIS, _run(_delta(100, 10.0, 30.0, 15.0, 50, 100),
                                                             _delta(300, 20.0, 40.0, 5.0, 0, 300)))
    write = metrics["ops"]["WRITE"]
    assert write["ops"] == 400
    assert write["avg_rtt_ms"] == pytest.approx((100 * 10 + 300 * 20) / 400.0)
    assert write["avg_queue_ms"] == pytest.approx((100 * 15 + 300 * 5) / 400.0)
    assert metrics["backlog_per_send"] == pytest.approx(50 / 400.0)


def test_headline_numbers_from_diagnosis_and_context():
    metrics = report.bundle_metrics(CONTEXT, DIAGNOSIS, [], label="baseline")
    assert metrics["label"] == "baseline"
    assert metrics["duration_vs_window"] == 2.0
    assert metrics["max_slots_reached"] == 2 and metrics["slot_cap"] == 2
    assert metrics["slot_cap_setting"] == "tcp_max_slot_table_entries"
    assert metrics["dstate_peak"] == 7
    assert metrics["server_threads"] == 24 and metrics["sockets_enqueued"] == 150
    assert metrics["packets_without_idle_thread"] == 0.2
    assert metrics["backlog_per_send"] is None


def test_v41_cap_is_the_session_slot_count():
    diagnosis = {"clients": {"a": {"nfs_version": "4.1", "proto": "tcp", "max_slots": [30],
                                   "sunrpc": {"tcp_max_slot_table_entries": 65536, "max_session_slots": 64}}}}
    metrics = report.bundle_metrics(CONTEXT, diagnosis, [])
    assert (metrics["slot_cap"], metrics["slot_cap_setting"]) == (64, "max_session_slots")


def test_without_diagnosis_falls_back_to_context_arithmetic():
    metrics = report.bundle_metrics(CONTEXT)
    assert metrics["target_bytes_per_second"] == 1e8
    assert metrics["achieved_bytes_per_second"] == 1e7
    assert metrics["limiting_layer"] is None and metrics["ops"] == {}


def test_canary_ranks_over_all_hosts_use_the_mlperf_rule():
    ranks = [{"host": "a", "rank": 0, "start": 10.0, "end": 14.0, "bytes": 100, "error": None},
             {"host": "b", "rank": 0, "start": 10.5, "end": 20.0, "bytes": 300, "error": None}]
    metrics = report.bundle_metrics(dict(CONTEXT, canary=dict(CONTEXT["canary"], start_at=10.0)), None, [], ranks)
    assert metrics["canary_aggregate"]["throughput_bytes_per_second"] == 40.0
    assert metrics["canary_aggregate"]["max_start_delay_seconds"] == 0.5
    assert [(row["host"], row["seconds"]) for row in metrics["canary_hosts"]] == [("a", 4.0), ("b", 9.5)]


def test_comparison_rows_ratio_and_direction():
    before = report.bundle_metrics(CONTEXT, DIAGNOSIS, _run(_delta(100, 10.0, 30.0, 15.0, 50, 100, commit_ops=4)), label="b")
    tuned = dict(DIAGNOSIS, achieved_bytes_per_second=3e7)
    after = report.bundle_metrics(dict(CONTEXT, canary=dict(CONTEXT["canary"], seconds=8.0)), tuned,
                                  _run(_delta(100, 8.0, 12.0, 2.0, 0, 100)), label="a")
    rows = {row["metric"]: row for row in report.comparison_rows(before, after)}
    assert rows["throughput"]["before"] == 10.0 and rows["throughput"]["after"] == 30.0
    assert rows["throughput"]["ratio"] == 3.0 and rows["throughput"]["improved"] is True
    assert rows["duration"]["ratio"] == 0.4 and rows["duration"]["improved"] is True
    assert rows["WRITE avg queue"]["after"] == 2.0 and rows["WRITE avg queue"]["improved"] is True
    assert rows["COMMIT avg RTT"]["before"] == 5.0 and rows["COMMIT avg RTT"]["after"] is None
    assert rows["COMMIT avg RTT"]["ratio"] is None and rows["COMMIT avg RTT"]["improved"] is None
    assert rows["server threads"]["improved"] is None
    assert rows["backlog per send"]["before"] == 0.5 and rows["backlog per send"]["ratio"] == 0.0


def test_markdown_has_verdict_tables_and_comparison():
    before = report.bundle_metrics(CONTEXT, DIAGNOSIS, _run(_delta(100, 10.0, 30.0, 15.0, 50, 100)), label="baseline")
    after = report.bundle_metrics(CONTEXT, dict(DIAGNOSIS, limiting_layer="none", verdict="meets_target"),
                                  _run(_delta(100, 8.0, 12.0, 2.0, 0, 100)), label="tuned")
    text = report.render_markdown(after, before, report.comparison_rows(before, after))
    assert text.startswith("# Checkpoint validation: tuned (shared_file)\n")
    assert "| verdict | meets_target |" in text
    assert ("| max_slots reached / slot cap | 2 per connection / 2 per connection (tcp_max_slot_table_entries) |"
            in text)
    assert "| WRITE | 100 | 2 | 8 | 12 |" in text
    assert "Limiting layer before: client_rpc_slots (rearchitect); after: none (meets_target)." in text
    assert "| throughput | MB/s | 10 | 10 | 1x | - |" in text


def test_figure_series_splits_exe_into_queue_rtt_rest():
    before = report.bundle_metrics(CONTEXT, DIAGNOSIS, _run(_delta(100, 10.0, 30.0, 15.0, 0, 100, commit_ops=2)), label="b")
    after = report.bundle_metrics(CONTEXT, DIAGNOSIS, _run(_delta(100, 8.0, 7.0, 2.0, 0, 100)), label="a")
    series = report.figure_series(after, before)
    assert [(t["label"], t["limiting_layer"]) for t in series["throughput"]] == [("b", "client_rpc_slots")] * 1 + [("a", "client_rpc_slots")]
    assert series["target_mb_per_second"] == 100.0
    bars = {(item["op"], item["label"]): item for item in series["latency"]}
    assert bars[("WRITE", "b")] == {"op": "WRITE", "label": "b", "queue_ms": 15.0, "rtt_ms": 10.0, "other_ms": 5.0}
    # exe below queue + RTT (counter rounding) never draws a negative segment.
    assert bars[("WRITE", "a")]["other_ms"] == 0.0
    assert bars[("COMMIT", "a")]["queue_ms"] == 0.0


def test_report_says_when_the_aggregate_is_not_a_synchronized_checkpoint():
    ranks = [{"host": "a", "rank": 0, "start": 10.0, "end": 14.0, "bytes": 100, "error": None, "clock_offset_seconds": 0.0},
             {"host": "b", "rank": 0, "start": 19.35, "end": 20.0, "bytes": 300, "error": None, "clock_offset_seconds": -1.27}]
    harness = {"a": {"canary_cpu_seconds": 0.05, "other_cpu_seconds": 0.4}}
    metrics = report.bundle_metrics(dict(CONTEXT, canary=dict(CONTEXT["canary"], start_at=10.0)), None, [], ranks,
                                    harness=harness)
    assert metrics["canary_aggregate"]["synchronized"] is False
    text = report.render_markdown(metrics)
    assert "**Not a synchronized checkpoint: start spread 9.350 s exceeds 1.0 s" in text
    rows = dict((row["host"], row) for row in metrics["canary_hosts"])
    assert rows["b"]["clock_offset_seconds"] == -1.27 and rows["a"]["harness_cpu_seconds"] == 0.05
    assert "| a | 1 | 100 B | 4 s | 25 B/s | - | 10.000 | 0 s | 50 ms / 400 ms |" in text


def test_report_says_when_loosely_known_clocks_cannot_confirm_a_synchronized_start():
    ranks = [dict(host=host, rank=0, start=10.0 + shift, end=14.0, bytes=100, error=None, clock_offset_seconds=0.0,
                  clock_uncertainty_seconds=0.6) for host, shift in (("a", 0.0), ("b", 0.004))]
    metrics = report.bundle_metrics(dict(CONTEXT, canary=dict(CONTEXT["canary"], start_at=10.0)), None, [], ranks)
    assert metrics["canary_aggregate"]["synchronized"] is None
    assert metrics["canary_aggregate"]["start_spread_uncertainty_seconds"] == pytest.approx(1.2)
    assert "**Synchronized start not confirmed: ranks started within 0.004 s" in report.render_markdown(metrics)


def test_report_of_an_old_bundle_says_the_clocks_were_not_measured():
    ranks = [{"host": "a", "rank": 0, "start": 10.0, "end": 14.0, "bytes": 100, "error": None}]
    text = report.render_markdown(report.bundle_metrics(CONTEXT, None, [], ranks))
    assert "Clocks were not measured on a" in text


def test_slot_cap_of_a_v41_session_is_labelled_per_session_next_to_the_per_connection_peak():
    # max_slots is per transport (xprt) in mountstats; max_session_slots bounds the whole session.
    diagnosis = {"clients": {"a": {"nfs_version": "4.1", "proto": "tcp", "max_slots": [128],
                                   "sunrpc": {"tcp_max_slot_table_entries": 65536, "max_session_slots": 64}}}}
    metrics = report.bundle_metrics(CONTEXT, diagnosis, [])
    text = report.render_markdown(metrics)
    assert "| max_slots reached / slot cap | 128 per connection / 64 per session (max_session_slots) |" in text
    rows = {row["metric"]: row for row in report.comparison_rows(metrics, metrics)}
    assert rows["max_slots reached"]["unit"] == "per connection"
    assert rows["slot cap"]["unit"] == "per session"


def test_duration_of_bundles_that_wrote_different_bytes_is_a_warning_not_worse():
    before = report.bundle_metrics(CONTEXT, DIAGNOSIS, [], label="b")
    after = report.bundle_metrics(dict(CONTEXT, canary=dict(CONTEXT["canary"], bytes=400000000, seconds=30.0)),
                                  dict(DIAGNOSIS, achieved_bytes_per_second=1.3e7), [], label="a")
    rows = {row["metric"]: row for row in report.comparison_rows(before, after)}
    for name in ("duration", "duration / window"):
        assert rows[name]["improved"] is None, name
        assert rows[name]["warning"] == "the bundles wrote different bytes (200 MB vs 400 MB)"
    # A rate stays comparable.
    assert rows["throughput"]["improved"] is True and rows["throughput"].get("warning") is None
    text = report.render_markdown(after, before, report.comparison_rows(before, after))
    assert "| duration | s | 20 | 30 | 1.5x | not comparable: different bytes |" in text
    assert ("**Warning: the bundles wrote different bytes (200 MB vs 400 MB): compare throughput, "
            "not duration.**") in text
    assert "worse" not in text.split("## Compared with", 1)[1].split("| duration")[1].split("\n")[0]


def test_timeline_is_per_host_after_the_go_on_the_controller_clock_sorted_by_first_start():
    ranks = [{"host": "a", "rank": 0, "start": 10.2, "end": 14.0, "bytes": 100, "error": None, "clock_offset_seconds": 0.0},
             {"host": "a", "rank": 1, "start": 10.4, "end": 13.0, "bytes": 100, "error": None, "clock_offset_seconds": 0.0},
             {"host": "b", "rank": 0, "start": 10.1, "end": 20.0, "bytes": 300, "error": None, "clock_offset_seconds": -1.27},
             {"host": "b", "rank": 1, "start": None, "end": None, "bytes": 0, "error": "stalled", "clock_offset_seconds": -1.27}]
    metrics = report.bundle_metrics(dict(CONTEXT, canary=dict(CONTEXT["canary"], start_at=10.0)), None, [], ranks, label="t")
    line = report.figure_series(metrics)["timeline"][0]
    assert line["zero"] == "go" and line["unmeasured_clocks"] == []
    assert [host["host"] for host in line["hosts"]] == ["b", "a"]
    assert line["hosts"][1] == {"host": "a", "first_start": pytest.approx(0.2), "last_start": pytest.approx(0.4),
                                "first_end": pytest.approx(3.0), "last_end": pytest.approx(4.0), "incomplete_ranks": 0}
    assert line["hosts"][0]["incomplete_ranks"] == 1 and line["hosts"][0]["last_end"] == pytest.approx(10.0)


def test_timeline_without_measured_clocks_starts_at_the_earliest_start_not_the_go():
    ranks = [{"host": "a", "rank": 0, "start": 40.0, "end": 44.0, "bytes": 100, "error": None},
             {"host": "b", "rank": 0, "start": 42.5, "end": 45.0, "bytes": 100, "error": None}]
    metrics = report.bundle_metrics(dict(CONTEXT, canary=dict(CONTEXT["canary"], start_at=10.0)), None, [], ranks)
    line = report.figure_series(metrics)["timeline"][0]
    assert line["zero"] == "earliest start" and line["unmeasured_clocks"] == ["a", "b"]
    assert [(host["host"], host["first_start"]) for host in line["hosts"]] == [("a", 0.0), ("b", 2.5)]
    assert report.figure_series(report.bundle_metrics(CONTEXT, None, []))["timeline"] == []


def _restore_bundle():
    from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle
    from ansible_collections.ckptio.nfs.plugins.module_utils.host import bundle_reader
    from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path
    loaded = bundle_reader.load_bundle(sample_path("..", "captures", "restore_clock_step"))
    return loaded, report.bundle_metrics(loaded["context"], None, [], bundle.canary_ranks(loaded), label="restore")


def test_restore_throughput_by_the_writes_rule_on_the_controllers_clock():
    loaded, metrics = _restore_bundle()
    restore = metrics["restore"]
    block = loaded["context"]["restore"]
    aggregate = restore["aggregate"]
    # total bytes / (latest end - earliest start) over the read spans, after the clock offsets (nfs3 2.38 s ahead).
    assert aggregate["total_bytes"] == block["bytes"] == 16777216
    assert aggregate["seconds"] == pytest.approx(block["seconds"], abs=5e-4)
    assert metrics["restore_bytes_per_second"] == pytest.approx(aggregate["total_bytes"] / aggregate["seconds"])
    assert aggregate["start_spread_seconds"] < 0.01 and aggregate["synchronized"] is True
    assert restore["restore_cache"] == "fadvise" and restore["verify_error_count"] == 0
    assert restore["target_window_seconds"] == 10.0
    assert restore["target_bytes_per_second"] == pytest.approx(16777216 / 10.0)
    markdown = report.render_markdown(metrics)
    assert "## Restore (read-back)" in markdown
    assert "total bytes / (latest end - earliest start)" in markdown.split("## Restore (read-back)")[1]
    assert "fadvise" in markdown and "every block verified: no bad block" in markdown


def test_no_restore_says_so_and_a_missing_restore_target_is_not_assumed():
    metrics = report.bundle_metrics(CONTEXT, DIAGNOSIS, [])
    assert metrics["restore"] is None and metrics["restore_bytes_per_second"] is None
    assert "Restore" not in report.render_markdown(metrics)
    _loaded, restored = _restore_bundle()
    restored["restore"]["target_window_seconds"] = None
    restored["restore"]["target_bytes_per_second"] = None
    assert "no restore target was given" in report.render_markdown(restored)


def test_the_comparison_gets_a_restore_row_only_when_both_bundles_have_one():
    _loaded, after = _restore_bundle()
    _loaded, before = _restore_bundle()
    before["restore_bytes_per_second"] = after["restore_bytes_per_second"] / 2
    rows = dict((row["metric"], row) for row in report.comparison_rows(before, after))
    row = rows["restore throughput"]
    assert row["ratio"] == 2.0 and row["improved"] is True and row["unit"] == "MB/s"
    plain = report.bundle_metrics(CONTEXT, DIAGNOSIS, [], label="baseline")
    one_side = dict((row["metric"], row) for row in report.comparison_rows(plain, after))["restore throughput"]
    assert one_side["before"] is None and one_side["improved"] is None
    assert one_side["warning"] == "no restore in the before bundle (baseline)"
    assert "no restore in the before bundle (baseline)" in report.render_markdown(after, plain, report.comparison_rows(plain, after))
    assert "restore throughput" not in [row["metric"] for row in report.comparison_rows(plain, plain)]


def test_figure_series_gets_a_restore_bar_and_read_spans_only_with_a_restore():
    _loaded, metrics = _restore_bundle()
    series = report.figure_series(metrics)
    bars = series["throughput"]
    assert [entry.get("phase", "checkpoint") for entry in bars] == ["checkpoint", "restore"]
    assert bars[1]["mb_per_second"] == pytest.approx(metrics["restore_bytes_per_second"] / report.MB)
    assert bars[1]["target_mb_per_second"] == pytest.approx(16777216 / 10.0 / report.MB)
    hosts = series["timeline"][0]["hosts"]
    assert all(host["read_first_start"] > host["last_end"] for host in hosts)
    assert all(host["read_last_end"] > host["read_first_start"] for host in hosts)
    plain = report.figure_series(report.bundle_metrics(CONTEXT, DIAGNOSIS, []))
    assert [entry.get("phase", "checkpoint") for entry in plain["throughput"]] == ["checkpoint"]


def test_console_lines_say_the_verdict_the_canary_the_restore_and_the_comparison():
    """The play's last words are decided in Python (the task only prints them)."""
    metrics = {"headline": HEADLINE, "canary_ranks": 8, "canary_hosts": [{}, {}],
               "canary_aggregate": {"total_bytes": 100, "seconds": 2.0, "start_spread_seconds": 0.01,
                                    "spread_message": "within 1.0 s"},
               "restore": {"aggregate": {"total_bytes": 100, "seconds": 1.0, "start_spread_seconds": 0.02},
                           "restore_cache": "fadvise", "verify_error_count": 0},
               "restore_bytes_per_second": 100.0}
    rows = [{"metric": "throughput", "unit": "MB/s", "before": 1.0, "after": 2.0, "ratio": 2.0}]
    lines = report.console_lines(metrics, rows, "/r/b", "wrote report.md")
    assert lines[:7] == [HEADLINE["verdict_text"], "achieved 1.1 GB/s, target 8 GB/s (2.4 TB in 300 s)",
                         HEADLINE["links_text"], "confidence high: " + HEADLINE["confidence_reason"]] + [
        "%d. %s" % (index, action) for index, action in enumerate(HEADLINE["actions"], 1)]
    assert lines[7] == "canary: 8 ranks on 2 clients, 100 B in 2 s, start spread 10 ms (within 1.0 s)"
    assert lines[8].startswith("restore: 100 B read back in 1 s") and "(fadvise)" in lines[8] and lines[8].endswith("0 bad blocks")
    assert lines[9:] == ["bundle: /r/b", "wrote report.md", "throughput (MB/s): 1 -> 2 (2x)"]
    bare = report.console_lines({}, [], "/r/b", "m")
    assert bare[0] == "no diagnosis (statistics not collected)" and not any(line.startswith("restore") for line in bare)
    assert not any("None" in line for line in bare)


def test_console_lines_of_a_capture_say_there_were_no_canary_ranks():
    metrics = {"headline": HEADLINE, "source": "capture", "capture_kind": "between", "capture_seconds": 50.0,
               "capture_bytes": 33554432, "capture_hit_max": False, "capture_basis": "mountstats serverwritebytes"}
    lines = report.console_lines(metrics, [], "/r/b", "m")
    assert lines[7] == "capture (no canary ranks): between window, 50 s, 33.6 MB written; achieved from mountstats serverwritebytes"
    assert not any(line.startswith("canary:") for line in lines)
    assert "(hit the maximum)" in report.console_lines(dict(metrics, capture_hit_max=True), [], "/r/b", "m")[7]


def test_report_md_says_whether_the_restore_cache_was_measured_cold():
    """The method's promise (the guarantee) and the measurement (the diagnosis's cold_cache) are both said."""
    from ansible_collections.ckptio.nfs.plugins.module_utils.report import report as report_utils
    from ansible_collections.ckptio.nfs.plugins.modules import checkpoint_report
    from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path
    metrics = checkpoint_report.bundle_metrics(sample_path("..", "captures", "restore_fadvise"), None, [])
    markdown = report_utils.render_markdown(metrics)
    assert "Measured: a cold cache - the server sent 16.8 MB of the 16.8 MB read back (100 %" in markdown
    hand_built = checkpoint_report.bundle_metrics(sample_path("..", "captures", "restore_clock_step"), None, [])
    assert "**not a cold cache**" in report_utils.render_markdown(hand_built)  # its mountstats hold no READ


def test_report_md_leads_with_the_diagnosis_first_screen_then_the_comparison():
    """CONTRACT 3: the report takes the diagnosis's lines, recomputes nothing, then compares, then the rest."""
    before = report.bundle_metrics(BIG_CONTEXT, OLD_DIAGNOSIS, [], label="baseline")
    after = report.bundle_metrics(BIG_CONTEXT, NEW_DIAGNOSIS, _run(_delta(100, 8.0, 12.0, 2.0, 0, 100)), label="tuned")
    assert after["headline"] == HEADLINE and after["first_screen"] == FIRST_SCREEN
    lines = report.render_markdown(after, before, report.comparison_rows(before, after)).splitlines()
    assert lines[:4] == ["# Checkpoint validation: tuned (shared_file)", "", "```text", FIRST_SCREEN[0]]
    assert lines[3:3 + len(FIRST_SCREEN)] == FIRST_SCREEN and lines[3 + len(FIRST_SCREEN)] == "```"
    assert lines.index("## Compared with baseline") < lines.index("## Figures")
    assert "| target | 8 GB/s |" in lines and "| achieved | 1.1 GB/s |" in lines and "| gap factor | 7.3x |" in lines
    # The old summary's exponents are not repeated anywhere.
    assert_readable(lines, digits=False)


def test_console_lines_lead_with_the_headline_of_the_diagnosis():
    metrics = report.bundle_metrics(BIG_CONTEXT, NEW_DIAGNOSIS, [])
    lines = report.console_lines(metrics, [], "/r/b", "wrote")
    assert lines[:7] == [HEADLINE["verdict_text"], "achieved 1.1 GB/s, target 8 GB/s (2.4 TB in 300 s)",
                         HEADLINE["links_text"], "confidence high: " + HEADLINE["confidence_reason"],
                         "1. nfs max_session_slots = 160", "2. nconnect = 8", "3. nfsd threads = 64"]
    assert lines[7] == "canary: 512 ranks, 137 GB in 125 s (no per-rank results)"
    assert_readable(lines)


def test_an_old_diagnosis_gets_a_first_screen_in_human_units():
    metrics = report.bundle_metrics(BIG_CONTEXT, OLD_DIAGNOSIS, [], label="seed")
    head, screen = metrics["headline"], metrics["first_screen"]
    assert head["achieved_text"] == "1.1 GB/s" and head["target_text"] == "8 GB/s (2.4 TB in 300 s)"
    assert head["verdict_text"].startswith("re-architect: the gap is 7.3x, tuning alone can give up to 3x")
    # The busiest link (11 %), named as such, not the probe's 8.7 % summed over the clients.
    assert head["links_text"].startswith("links far from full: 11 % (busiest NFS link, of its nominal speed)")
    assert "the bandwidth paradox" in head["links_text"] and head["link_share"] == 0.1131
    assert head["link_capacity_bytes_per_second"] == 2.5e10
    assert head["actions"] == ["nfs max_session_slots = 160: ckptio.nfs.sunrpc_slot_table nfs_max_session_slots=160",
                               "nconnect = 8: ckptio.nfs.nfs_mount opts.nconnect=8",
                               "nfsd threads = 64: ckptio.nfs.nfsd_threads threads=64"]
    assert len(screen) <= 25 and all(len(line) <= 80 for line in screen)
    text = "\n".join(screen)
    for expected in ("re-architect", "Achieved 1.1 GB/s against the target 8 GB/s (2.4 TB in 300 s)", "11 %",
                     "Confidence high: every layer it rests on was measured", "  1. nfs max_session_slots = 160",
                     "  3. nfsd threads = 64"):
        assert expected in text, expected
    assert "file per rank" not in text
    assert_readable(screen)
    markdown = report.render_markdown(metrics).splitlines()
    assert markdown[3:3 + len(screen)] == screen and len(screen) + 4 <= 25
    assert_readable(markdown, digits=False)


def test_an_old_diagnosis_without_a_target_or_links_says_so_in_words():
    context = dict(BIG_CONTEXT, target={"checkpoint_bytes": None, "window_seconds": 300})
    diagnosis = dict(OLD_DIAGNOSIS, target_bytes_per_second=None, gap_factor=None, verdict="no_target",
                     network={"state": "unmeasured"}, unmeasured=["network"], capacity={})
    head = report.bundle_metrics(context, diagnosis, [])["headline"]
    assert head["target_text"].startswith("no target given: set ckptio_checkpoint_bytes")
    assert head["links_text"].startswith("links not measured")
    assert head["confidence_reason"] == "not measured: network" and head["link_capacity_bytes_per_second"] is None
    lines = report.console_lines(report.bundle_metrics(context, diagnosis, []), [], "/r/b", "m")
    assert lines[0] == "no target given: no verdict on throughput; limiting layer: client_rpc_slots"
    assert_readable(lines)


@pytest.mark.parametrize("name", ["seed_like_v41", "healthy", "shaped_link", "capture_dd"])
def test_first_screen_of_the_sample_bundles(name):
    """The first 25 lines of report.md hold the verdict, achieved vs target in units, the links,
    the confidence and the actions; nothing a person reads shows None or an exponent."""
    from ansible_collections.ckptio.nfs.plugins.modules import checkpoint_report
    from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path
    metrics = checkpoint_report.bundle_metrics(sample_path("..", "captures", name), None, [])
    markdown = report.render_markdown(metrics).splitlines()
    first = "\n".join(markdown[:25])
    assert "```" in markdown[24:] or markdown.index("```") < 25
    # The diagnosis's own first screen (diagnosis_markdown) or, for an old diagnosis.json, the report's.
    for expected in ("Achieved ", "target", "B/s", "Confidence", "Next:", "1. "):
        assert expected in first, expected
    assert re.search(r"\b(tune|re-architect|meets the target|no target given|no checkpoint window|no verdict)\b", first, re.I)
    assert re.search(r"[Ll]inks", first)
    assert_readable(markdown[:25])
    assert_readable(markdown, digits=False)
    assert_readable(report.console_lines(metrics, [], "/r/b", "m"), digits=False)


def test_the_title_names_the_shape_the_ranks_wrote_not_the_inventorys_layout():
    # The lab's torch_dcp and async runs were titled with canary_validation_layout (shared_file).
    context = dict(CONTEXT, canary=dict(CONTEXT["canary"], layout="file_per_rank", shape="torch_dcp"))
    metrics = report.bundle_metrics(context, DIAGNOSIS, _run(_delta(100, 10.0, 30.0, 15.0, 50, 100)), label="dcp_option")
    assert report.render_markdown(metrics).startswith("# Checkpoint validation: dcp_option (torch_dcp)\n")
    # A label that is the shape is not said twice.
    named = report.bundle_metrics(context, DIAGNOSIS, _run(_delta(100, 10.0, 30.0, 15.0, 50, 100)), label="torch_dcp")
    assert report.render_markdown(named).startswith("# Checkpoint validation: torch_dcp\n")


INJECTED = "x\n## injected\n| a | b |"


def _structure(text):
    """The Markdown structure of a text: its headings and the number of table rows (lines starting with "|")."""
    lines = text.split("\n")
    return [line for line in lines if line.startswith("#")], sum(1 for line in lines if line.startswith("|"))


def test_values_from_a_bundle_never_add_headings_or_rows_to_report_md():
    ranks = [{"host": INJECTED, "rank": 0, "start": 10.0, "end": 14.0, "bytes": 100, "error": None}]
    plain = report.bundle_metrics(CONTEXT, DIAGNOSIS, _run(_delta(100, 10.0, 30.0, 15.0, 50, 100)), ranks, label="baseline")
    hostile_diagnosis = dict(DIAGNOSIS, limiting_layer=INJECTED, verdict="<!-- " + INJECTED)
    hostile = report.bundle_metrics(dict(CONTEXT, canary=dict(CONTEXT["canary"], layout="`" * 5 + INJECTED)), hostile_diagnosis,
                                    _run(_delta(100, 10.0, 30.0, 15.0, 50, 100)), ranks, label=INJECTED)
    plain_text, text = report.render_markdown(plain), report.render_markdown(hostile)
    # The first screen is a fenced block (its text is literal there): the rest is what Markdown reads as structure.
    outside = _outside_fences(text)
    assert not any(line.startswith("## injected") or line.startswith("| a | b |") for line in outside.split("\n"))
    (headings, rows), (plain_headings, plain_rows) = _structure(outside), _structure(_outside_fences(plain_text))
    assert (len(headings), rows) == (len(plain_headings), plain_rows) and headings[1:] == plain_headings[1:]
    assert "| limiting layer | x ## injected \\| a \\| b \\| |" in text and "&lt;!--" in outside and "<!--" not in outside
    assert text.startswith("# Checkpoint validation: x ## injected \\| a \\| b \\| (\\`\\`\\`\\`\\`x ## injected")


def _outside_fences(text):
    kept, fence = [], None
    for line in text.split("\n"):
        if fence is None and line.startswith("```"):
            fence = line[:len(line) - len(line.lstrip("`"))]
        elif fence is not None and line == fence:
            fence = None
        elif fence is None:
            kept.append(line)
    return "\n".join(kept)


def test_the_first_screen_fence_is_longer_than_any_backticks_in_it():
    metrics = dict(report.bundle_metrics(CONTEXT, DIAGNOSIS, []), first_screen=["``````", "# not a heading"])
    lines = report.render_markdown(metrics).split("\n")
    opening = lines.index("```````text")
    assert lines[opening + 1:opening + 4] == ["``````", "# not a heading", "```````"]
