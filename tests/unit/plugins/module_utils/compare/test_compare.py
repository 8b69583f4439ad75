"""The architecture comparison: both throughput figures, ranking against the target, flags, unmeasured figures."""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.compare import option, plan, ranking, throughput

GIB = 1024 ** 3
MIB = 1024 ** 2


def _rank(host, rank, start, end, nbytes=GIB, **extra):
    return dict({"host": host, "rank": rank, "start": start, "end": end, "bytes": nbytes, "error": None}, **extra)


def test_both_figures_differ_when_rank_zero_finishes_first():
    # rank 0 (first host, rank 0) is done in 2 s, the slowest rank in 8 s: 4 GiB in all.
    ranks = [_rank("a", 0, 100.0, 102.0), _rank("a", 1, 100.0, 104.0), _rank("b", 0, 100.5, 108.0), _rank("b", 1, 100.0, 106.0)]
    figures = throughput.two_figures(ranks)
    assert figures["ours"]["bytes"] == 4 * GIB
    assert figures["ours"]["seconds"] == pytest.approx(8.0)
    assert figures["ours"]["bytes_per_second"] == pytest.approx(4 * GIB / 8.0)
    # DLIO: checkpoint size in GiB over rank 0's own 2 s.
    assert figures["mlperf_published"]["gib_per_second"] == pytest.approx(2.0)
    assert figures["mlperf_published"]["checkpoints"][0]["rank0_host"] == "a"
    assert figures["published_over_ours"] == pytest.approx(4.0)


def test_global_rank_names_rank_zero_and_checkpoints_are_averaged_the_dlio_way():
    ranks = [
        _rank("b", 0, 0.0, 1.0, global_rank=0, checkpoint=0), _rank("a", 0, 0.0, 4.0, global_rank=1, checkpoint=0),
        _rank("b", 0, 10.0, 14.0, global_rank=0, checkpoint=1), _rank("a", 0, 10.0, 14.0, global_rank=1, checkpoint=1),
    ]
    figures = throughput.two_figures(ranks)
    # rank 0 is on host b: 2 GiB / 1 s and 2 GiB / 4 s, mean 1.25 GiB/s.
    assert figures["mlperf_published"]["gib_per_second"] == pytest.approx((2.0 + 0.5) / 2)
    # ours: 4 GiB over the two checkpoints' own spans (4 s + 4 s), not the pause between them.
    assert figures["ours"]["seconds"] == pytest.approx(8.0)
    assert figures["ours"]["checkpoints"] == 2


def test_a_rank_zero_that_did_not_finish_leaves_the_published_figure_unmeasured():
    ranks = [_rank("a", 0, 0.0, None), _rank("a", 1, 0.0, 2.0)]
    figures = throughput.two_figures(ranks)
    assert figures["mlperf_published"]["gib_per_second"] is None
    assert "rank 0 did not finish" in figures["mlperf_published"]["problem"]
    assert figures["ours"]["incomplete_ranks"] == ["a/0"]


def test_no_ranks_is_unmeasured_not_zero():
    figures = throughput.two_figures([])
    assert figures["ours"]["bytes_per_second"] is None and figures["ours"]["problem"] == "no rank records"
    assert figures["mlperf_published"]["gib_per_second"] is None


def _delta(**ops):
    return {"usable": True, "problems": [], "ops": dict((name, {"ops": count}) for name, count in ops.items())}


CONTEXT = {"mount_point": "/mnt/nfs", "target": {"checkpoint_bytes": 4 * GIB, "window_seconds": 4.0}, "canary": {"layout": "file_per_rank"}}
DIAGNOSIS = {"limiting_layer": "network", "verdict": "rearchitect"}


def _row(name, seconds, nbytes=GIB, spec=None, canaries=None, deltas=None, no_diagnosis=False):
    ranks = [_rank("a", 0, 0.0, seconds, nbytes), _rank("b", 0, 0.0, seconds, nbytes)]
    deltas = [_delta(OPEN=8, RENAME=2, COMMIT=4)] if deltas is None else deltas
    return option.option_row(name, spec or {}, CONTEXT, None if no_diagnosis else DIAGNOSIS, ranks, deltas, canaries or {})


def test_options_are_ranked_against_the_target_and_the_conclusion_names_who_meets_it():
    document = ranking.compare([_row("slow", 4.0), _row("fast", 1.0), _row("middle", 2.0)])
    assert [row["name"] for row in document["options"]] == ["fast", "middle", "slow"]
    assert [row["rank"] for row in document["options"]] == [1, 2, 3]
    # target 1 GiB/s: fast 2 GiB/s meets, middle exactly 1 GiB/s meets, slow 0.5 GiB/s misses.
    assert document["options"][0]["verdict"].startswith("meets")
    assert document["options"][2]["verdict"].startswith("misses")
    assert document["conclusion"] == "Measured options that meet the target: fast, middle (best: fast)."


def test_none_meets_the_target():
    document = ranking.compare([_row("a", 8.0), _row("b", 16.0)])
    assert document["conclusion"] == "None of the measured options met the target; the best, a, reached 0.25x of it."


def test_different_total_bytes_are_flagged_not_ranked_together():
    document = ranking.compare([_row("reference", 4.0), _row("bigger", 1.0, nbytes=2 * GIB)])
    bigger = [row for row in document["options"] if row["name"] == "bigger"][0]
    assert bigger["rank"] is None and "different total bytes" in bigger["flag"]
    assert document["options"][0]["name"] == "reference" and document["options"][0]["rank"] == 1
    assert "bigger" not in document["conclusion"]
    assert "not ranked" in ranking.render_markdown(document)


def test_unmeasured_figures_say_so():
    row = _row("no_stats", 2.0, deltas=[], no_diagnosis=True)
    assert row["metadata_ops"]["RENAME"]["value"] is None
    assert row["metadata_ops"]["RENAME"]["rests_on"].startswith("unmeasured")
    assert row["limiting_layer"]["value"] is None
    assert row["restore"]["value"] is None
    markdown = ranking.render_markdown(ranking.compare([row]))
    line = [text for text in markdown.splitlines() if "| no_stats |" in text][0]
    assert line.count("unmeasured") >= 4  # restore, metadata ops, limiting layer, diagnosis


def test_distorted_counters_carry_no_figure():
    deltas = [_delta(OPEN=3), {"usable": False, "problems": ["reset"], "ops": {"OPEN": {"ops": 1000000}}}]
    row = _row("remounted", 2.0, deltas=deltas)
    assert row["metadata_ops"]["CREATE/OPEN"]["value"] is None
    assert "distorted" in row["metadata_ops"]["CREATE/OPEN"]["rests_on"]


def test_metadata_ops_are_summed_over_the_clients_op_mix():
    row = _row("dcp", 2.0, deltas=[_delta(OPEN=4, RENAME=1, GETATTR=7), _delta(CREATE=2, OPEN=4, SETATTR=3, COMMIT=5)])
    values = dict((name, item["value"]) for name, item in row["metadata_ops"].items())
    assert values == {"CREATE/OPEN": 10, "SETATTR": 3, "RENAME": 1, "GETATTR": 7, "COMMIT": 5}


def test_async_is_judged_by_blocking_seconds_only_when_the_drain_fits():
    spec = {"local_path": "/local/nvme"}
    canaries = {"a": {"blocking_seconds": 0.5, "drain": {"start": 1.0, "end": 9.0, "fits_interval": True, "rate_limit": 0}},
                "b": {"blocking_seconds": 1.0, "drain": {"start": 1.5, "end": 11.0, "fits_interval": True, "rate_limit": 0}}}
    row = _row("async", 10.0, spec=spec, canaries=canaries)
    assert row["blocking_seconds"]["value"] == 1.0
    assert row["drain_seconds"]["value"] == pytest.approx(10.0)
    assert row["judged"]["value"] == pytest.approx(2 * GIB / 1.0)
    canaries["b"]["drain"]["fits_interval"] = False
    late = _row("async_late", 10.0, spec=spec, canaries=canaries)
    assert late["judged"]["value"] is None and "does not fit" in late["judged"]["rests_on"]
    assert ranking.compare([late])["options"][0]["verdict"] == "unmeasured"


def test_direct_writes_block_for_the_whole_checkpoint_and_have_no_drain():
    row = _row("direct", 3.0)
    assert row["blocking_seconds"]["value"] == pytest.approx(3.0)
    assert row["drain_seconds"]["value"] is None
    assert ranking.NO_DRAIN in ranking.render_markdown(ranking.compare([row]))


def test_no_target_ranks_without_judging():
    context = dict(CONTEXT, target={"checkpoint_bytes": 0, "window_seconds": 0})
    row = option.option_row("x", {}, context, None, [_rank("a", 0, 0.0, 1.0)], [], {})
    document = ranking.compare([row])
    assert document["options"][0]["verdict"] == "no target"
    assert document["conclusion"].startswith("No target given")


def test_default_options_follow_the_mounts_and_the_local_path():
    names = [item["name"] for item in plan.compare_options(None, "/mnt/a")]
    assert names == ["shared_file", "file_per_rank"]
    options = plan.compare_options(None, "/mnt/a", paths=["/mnt/a", "/mnt/b"], local_path="/local")
    assert [item["name"] for item in options] == ["shared_file", "file_per_rank", "file_per_rank_2_paths", "file_per_rank_async"]
    assert options[2]["paths"] == ["/mnt/a", "/mnt/b"] and options[3]["local_path"] == "/local"
    assert options[0]["layout"] == "shared_file" and options[1]["layout"] == "file_per_rank"


@pytest.mark.parametrize("options, message", [
    ([{"name": "a b"}], "name must be"),
    ([{"name": "a"}, {"name": "a"}], "each name once"),
    ([{"name": "a", "paths": ["relative"]}], "absolute"),
    ([{"name": "a", "colour": "red"}], "unknown key"),
    ([{"name": "n%d" % index} for index in range(7)], "at most 6"),
    # Named before any option runs, not by the role's argument check once the first run has begun.
    ([{"name": "a", "shape": "bogus"}], r"ckptio_compare_options\[0\]\.shape must be one of shared_file, file_per_rank, torch_dcp"),
    ([{"name": "a", "shape": None}], r"\.shape must be one of"),
])
def test_bad_options_are_refused_naming_them(options, message):
    with pytest.raises(plan.PlanError, match=message):
        plan.compare_options(options, "/mnt/a")


def test_option_bundles_pick_each_options_newest_bundle_of_this_run():
    options = plan.compare_options(None, "/mnt/a")
    found = ["/r/20260101T000000-shared_file/context.yml", "/r/20260101T000100-shared_file/context.yml",
             "/r/20260101T000200-other/context.yml", "/r/20251231T235959-file_per_rank/context.yml",
             "/r/sub/20260101T000300-shared_file/context.yml", "/r/x-shared_file/context.yml"]
    bundles = plan.option_bundles(options, found, "/r/", since="20260101T000000")
    # file_per_rank's only bundle predates this comparison: another run's, left out.
    assert bundles == [{"name": "shared_file", "bundle": "/r/20260101T000100-shared_file", "shape": "shared_file",
                        "paths": ["/mnt/a"], "local_path": None}]


def test_a_records_own_checkpoints_are_split_and_moved_to_the_controllers_clock():
    # host b's clock runs 100 s ahead (offset +100): its checkpoint times read 100 s late.
    ranks = [
        _rank("a", 0, 0.0, 12.0, nbytes=2 * GIB, clock_offset_seconds=0.0,
              checkpoints=[{"checkpoint": 0, "start": 0.0, "end": 1.0, "bytes": GIB}, {"checkpoint": 1, "start": 10.0, "end": 12.0, "bytes": GIB}]),
        _rank("b", 0, 0.0, 13.0, nbytes=2 * GIB, clock_offset_seconds=100.0,
              checkpoints=[{"checkpoint": 0, "start": 100.0, "end": 104.0, "bytes": GIB}, {"checkpoint": 1, "start": 110.0, "end": 113.0, "bytes": GIB}]),
    ]
    figures = throughput.two_figures(ranks)
    # ours: checkpoint 0 spans 0..4 s, checkpoint 1 10..13 s on the controller's clock: 4 GiB in 7 s.
    assert figures["ours"]["seconds"] == pytest.approx(7.0) and figures["ours"]["checkpoints"] == 2
    # published: rank 0 is a/0: 2 GiB / 1 s and 2 GiB / 2 s, mean 1.5 GiB/s.
    assert figures["mlperf_published"]["gib_per_second"] == pytest.approx(1.5)


def test_totals_that_differ_below_the_shown_digits_are_flagged_with_their_exact_bytes():
    # The lab, 2026-12-03: mlperf_70b scaled to 8 MiB a rank wrote a few bytes fewer than file_per_rank, and the
    # flag read "different total bytes (67.1 MB against 67.1 MB of file_per_rank)".
    document = ranking.compare([_row("file_per_rank", 4.0, nbytes=33554432), _row("mlperf_70b", 4.0, nbytes=33554400)])
    flagged = [row for row in document["options"] if row["name"] == "mlperf_70b"][0]
    assert flagged["flag"] == ("different total bytes (67,108,800 B against 67,108,864 B of file_per_rank): "
                               "not ranked with the others")


def _with_diagnosis(row, verdict, limiting):
    row = dict(row)
    row["diagnosis_verdict"] = {"value": verdict, "rests_on": "diagnosis.json verdict"}
    row["limiting_layer"] = {"value": limiting, "rests_on": "diagnosis.json limiting_layer"}
    return row


def test_a_diagnosis_that_says_rearchitect_is_answered_by_the_measured_options():
    # issue 28: the diagnosis's "re-architect" points at the measured option that meets the target.
    today = _with_diagnosis(_row("shared_file", 8.0), "rearchitect", "access_pattern")
    per_rank = _with_diagnosis(_row("file_per_rank", 1.0), "meets_target", None)
    two = _with_diagnosis(_row("two_exports", 4.0), "rearchitect", "server_cpu")
    document = ranking.compare([today, per_rank, two])
    answers = dict((item["option"], item["text"]) for item in document["rearchitect_answers"])
    assert answers["shared_file"] == ("shared_file's diagnosis says re-architect (limiting layer access_pattern); "
                                      "measured here, file_per_rank meets the target (2x).")
    assert answers["two_exports"].startswith("two_exports's diagnosis says re-architect (limiting layer server_cpu); "
                                             "measured here, file_per_rank meets the target")
    assert "file_per_rank" not in answers
    assert answers["shared_file"] in ranking.render_markdown(document)


def test_a_rearchitect_no_measured_option_answers_says_so():
    today = _with_diagnosis(_row("shared_file", 8.0), "rearchitect", "server_storage")
    other = _with_diagnosis(_row("file_per_rank", 6.0), "rearchitect", "server_storage")
    answers = dict((item["option"], item["text"]) for item in ranking.compare([today, other])["rearchitect_answers"])
    assert answers["shared_file"] == ("shared_file's diagnosis says re-architect (limiting layer server_storage); "
                                      "none of the measured options met the target (the best, file_per_rank, reached 0.33x): "
                                      "measure another architecture (several servers, a parallel file system, a burst buffer).")


def test_an_option_whose_diagnosis_says_rearchitect_but_meets_the_target_itself_is_not_told_none_met():
    # The lab, 2026-12-03 (scripts/lab-compare.sh, five options): async_local met the target at 2.9x (bytes /
    # blocking seconds), its own diagnosis said re-architect, and its answer read "none of the measured options
    # met the target (the best, async_local, reached 2.9x)".
    burst = dict(_with_diagnosis(_row("async_local", 0.5), "rearchitect", "server_cpu"),
                 diagnosis_judged="drain to NFS: bytes / (latest drain end - earliest drain start); the ranks wrote to a local path")
    today = _with_diagnosis(_row("shared_file", 8.0), "rearchitect", "server_cpu")
    answers = dict((item["option"], item) for item in ranking.compare([today, burst])["rearchitect_answers"])
    assert answers["async_local"]["text"] == (
        "async_local's diagnosis says re-architect (limiting layer server_cpu); measured here, async_local itself "
        "meets the target (4x, judged on ours (write throughput)), while its diagnosis judged drain to NFS: bytes / "
        "(latest drain end - earliest drain start); the ranks wrote to a local path.")
    assert answers["async_local"]["meets"] == ["async_local"]
    assert answers["shared_file"]["text"] == ("shared_file's diagnosis says re-architect (limiting layer server_cpu); "
                                              "measured here, async_local meets the target (4x).")


def _read(host, rank, global_rank, start, end):
    return _rank(host, rank, 0.0, 1.0, global_rank=global_rank, read_start=start, read_end=end, read_bytes=GIB,
                 read_error=None, verify_error_count=0)


def _read_from(other, risk=None):
    return {"summary": {"restore": {"read_from": {"recovery_rank_shift": 2 if other else 0, "other_host": other, "cache_risk": risk}}}}


def test_restore_both_ways_of_counting_with_the_readers_on_other_hosts():
    # rank 0 reads 1 GiB in 1 s, the slowest rank ends 4 s after the first read start: 4 GiB in all.
    ranks = [_read("a", 0, 0, 10.0, 11.0), _read("a", 1, 1, 10.0, 12.0), _read("b", 0, 2, 10.0, 14.0), _read("b", 1, 3, 10.0, 13.0)]
    row = option.option_row("mlperf", {"shape": "mlperf_llama3_8b"}, CONTEXT, None, ranks, [], {"a": _read_from(True), "b": _read_from(True)})
    assert row["restore"]["value"] == pytest.approx(4 * GIB / 4.0)
    assert "another host's files (recovery_rank_shift 2" in row["restore"]["rests_on"]
    assert row["restore_published"]["gib_per_second"] == pytest.approx(4.0)
    assert row["restore_cache_flag"] is None


def test_a_restore_a_cache_could_serve_is_flagged_not_averaged():
    ranks = [_read("a", 0, 0, 10.0, 11.0), _read("b", 0, 1, 10.0, 12.0)]
    canaries = {"a": _read_from(True), "b": _read_from(False, "warm read: this host's own files with restore_cache=none")}
    row = option.option_row("warm", {"shape": "file_per_rank"}, CONTEXT, None, ranks, [], canaries)
    assert row["restore"]["value"] == pytest.approx(2 * GIB / 2.0)
    assert row["restore_cache_flag"].startswith("could be served by a cache - b: warm read")
    assert "FLAGGED" in row["restore"]["rests_on"] and "its own host's files" in row["restore"]["rests_on"]
    document = {"options": [dict(row, rank=None, verdict="unranked", flag=None)]}
    assert "FLAG: a cache could serve it" in ranking.table_rows(document)[0][9]


def test_a_failed_option_is_reported_failed_with_its_error_and_the_others_still_rank():
    failed = _row("broken", 0.5, nbytes=GIB // 2, canaries={"a": {"msg": "canary restore failed: rank 0: read x: ENOENT"}, "b": {"msg": ""}})
    assert failed["error"] == "a: canary restore failed: rank 0: read x: ENOENT"
    document = ranking.compare([failed, _row("slow", 4.0), _row("fast", 1.0)])
    assert [(row["name"], row["rank"]) for row in document["options"]] == [("fast", 1), ("slow", 2), ("broken", None)]
    broken = document["options"][2]
    assert broken["verdict"] == "FAILED: a: canary restore failed: rank 0: read x: ENOENT"
    # Its other bytes do not flag the others: the reference is the first option that ran.
    assert document["options"][0]["flag"] is None and broken["flag"] == "failed: not ranked"
    assert document["conclusion"] == "Measured options that meet the target: fast (best: fast)."
    assert "FAILED: a: canary restore failed" in ranking.table_rows(document)[2][-1]
    markdown = ranking.render_markdown(document)
    assert "broken" in markdown and "FAILED" in markdown


def test_an_option_may_read_back_and_a_bad_restore_is_refused():
    options = plan.compare_options([{"name": "m", "shape": "mlperf_llama3_8b", "restore": True}, {"name": "f"}], "/mnt/a")
    assert [option["restore"] for option in options] == [True, False]
    with pytest.raises(plan.PlanError, match=r"ckptio_compare_options\[0\].restore must be true or false"):
        plan.compare_options([{"name": "m", "restore": "yes"}], "/mnt/a")


def _panel_texts(axes):
    return [text.get_text() for text in axes.texts]


def test_the_figure_shows_restore_both_ways_of_counting_as_the_table_does():
    """compare.png has a restore panel: ours and MLPerf's published figure for an option that read back, the cache
    flag on a read a cache could serve, and "unmeasured" where an option did not read back."""
    pyplot = pytest.importorskip("matplotlib.pyplot")
    from ansible_collections.ckptio.nfs.plugins.module_utils.compare import figure as compare_figure
    cold = [_read("a", 0, 0, 10.0, 11.0), _read("a", 1, 1, 10.0, 12.0), _read("b", 0, 2, 10.0, 14.0), _read("b", 1, 3, 10.0, 13.0)]
    rows = [option.option_row("cold", {"shape": "mlperf_llama3_8b"}, CONTEXT, DIAGNOSIS, cold, [], {"a": _read_from(True), "b": _read_from(True)}),
            option.option_row("warm", {"shape": "file_per_rank"}, CONTEXT, DIAGNOSIS, cold, [],
                              {"a": _read_from(True), "b": _read_from(False, "warm read")}),
            _row("writes only", 1.0, nbytes=2 * GIB)]
    document = ranking.compare(rows)
    figure = compare_figure.draw_figure(pyplot, document)
    try:
        figure.canvas.draw()
        titles = [axes.get_title() for axes in figure.axes]
        assert "Restore (read-back), both ways of counting" in titles
        panel = figure.axes[titles.index("Restore (read-back), both ways of counting")]
        texts = _panel_texts(panel)
        assert "1.07 GB/s" in texts and texts.count("unmeasured: no read-back") == 2
        assert any(text.startswith("4.29 GB/s") for text in texts)
        labels = [label.get_text() for label in panel.get_yticklabels()]
        assert any("FLAG: a cache could serve it" in label for label in labels)
        assert [text.get_text() for text in panel.get_legend().get_texts()][:2] == [
            "ours: read bytes / (latest end - earliest start)", "MLPerf published: size / rank 0's read time"]
    finally:
        pyplot.close(figure)


def test_the_target_line_stays_inside_the_write_panel_when_every_option_misses_it():
    # Lab run of 2026-12-03: both options under 3 MB/s, target 6.71 MB/s - the panel ended at 4.8 MB/s, the line outside it.
    pyplot = pytest.importorskip("matplotlib.pyplot")
    from ansible_collections.ckptio.nfs.plugins.module_utils.compare import figure as compare_figure
    document = ranking.compare([_row("slow", 8.0), _row("slower", 16.0)])
    figure = compare_figure.draw_figure(pyplot, document)
    try:
        panel = [axes for axes in figure.axes if axes.get_title() == "Write throughput, both ways of counting"][0]
        assert panel.get_xlim()[1] > document["target_bytes_per_second"] / 1e6
    finally:
        pyplot.close(figure)


def test_a_rank_that_ends_before_it_starts_is_refused_never_ranked_first():
    # 4 GiB: host b's rank "ends" 9 s before it starts, which made the span 1 s and the option first.
    forged = option.option_row("forged", {}, CONTEXT, DIAGNOSIS, [_rank("a", 0, 10.0, 11.0), _rank("b", 0, 20.0, 11.0)],
                               [_delta(OPEN=8)], {})
    document = ranking.compare([_row("honest", 2.0), forged])
    assert [(row["name"], row["rank"]) for row in document["options"]] == [("honest", 1), ("forged", None)]
    refused = document["options"][1]
    assert refused["verdict"] == "unmeasured" and refused["judged"]["value"] is None
    assert refused["throughput"]["ours"]["problem"] == "refused: b rank 0 ends 9 s before it starts (start 20.0, end 11.0)"
    assert refused["throughput"]["mlperf_published"]["gib_per_second"] is None


@pytest.mark.parametrize("ranks, named", [
    ([_rank("a", 0, 0.0, 1.0, checkpoints=[{"checkpoint": 1, "start": 5.0, "end": 4.0, "bytes": GIB}])], "a rank 0 checkpoint 1 ends 1 s"),
    ([_rank("a", 0, 0.0, float("inf"))], "a rank 0: start 0.0 / end inf is no time"),
    ([_rank("a", 0, float("nan"), 1.0)], "a rank 0: start nan / end 1.0 is no time"),
])
def test_a_record_that_is_no_span_leaves_both_figures_unmeasured_naming_it(ranks, named):
    figures = throughput.two_figures(ranks)
    assert figures["ours"]["bytes_per_second"] is None and figures["mlperf_published"]["bytes_per_second"] is None
    assert named in figures["ours"]["problem"] and named in figures["mlperf_published"]["problem"]


def test_a_drain_restore_or_blocking_time_that_is_no_span_is_refused():
    spec = {"local_path": "/local/nvme"}
    canaries = {"a": {"blocking_seconds": -5.0, "drain": {"start": 9.0, "end": 1.0, "fits_interval": True, "rate_limit": 0}}}
    row = _row("async", 10.0, spec=spec, canaries=canaries)
    assert row["blocking_seconds"]["value"] is None and "refused: blocking_seconds" in row["blocking_seconds"]["rests_on"]
    assert row["drain_seconds"]["value"] is None and row["drain_seconds"]["rests_on"].startswith("refused: a rank drain ends 8 s")
    assert row["judged"]["value"] is None
    reads = [dict(_rank("a", 0, 0.0, 1.0), read_start=5.0, read_end=2.0, read_bytes=GIB)]
    restore = option.option_row("r", {}, CONTEXT, DIAGNOSIS, reads, [], {})
    assert restore["restore"]["value"] is None and restore["restore"]["rests_on"].startswith("refused: a rank 0 ends 3 s")
    assert restore["restore_published"]["problem"].startswith("refused: a rank 0 ends 3 s")


def test_option_names_layers_and_errors_never_add_headings_or_rows_to_compare_md():
    injected = "x\n## injected\n| a | b |"
    plain = ranking.render_markdown(ranking.compare([_row("fast", 1.0), _row("slow", 4.0)]))
    hostile_row = _row(injected, 1.0)
    hostile_row["limiting_layer"]["value"] = injected
    failed = option.option_row("bad", {"shape": injected}, CONTEXT, None, [], [], {"a": {"msg": injected}})
    text = ranking.render_markdown(ranking.compare([hostile_row, _row("slow", 4.0)]))
    lines = text.split("\n")
    assert not any(line.startswith("## injected") or line.startswith("| a | b |") for line in lines)
    assert sum(line.startswith("|") for line in lines) == sum(line.startswith("|") for line in plain.split("\n"))
    assert [line for line in lines if line.startswith("#")] == ["# Architectures side by side"]
    assert "| 1 | x ## injected \\| a \\| b \\| |" in text and "- **x ## injected \\| a \\| b \\|**:" in text
    failed_text = ranking.render_markdown(ranking.compare([_row("fast", 1.0), failed]))
    assert [line for line in failed_text.split("\n") if line.startswith("#")] == ["# Architectures side by side"]
    assert "FAILED: a: x ## injected \\| a \\| b \\|" in failed_text
