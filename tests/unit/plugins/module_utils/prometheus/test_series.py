# -*- coding: utf-8 -*-
"""The query_range parser's refusals, counter resets and remounts, the burst finder (issue 48).

The answers here are cut from a real one (tests/fixtures/prometheus/healthy/prometheus/client_bytes.json, Prometheus
2.42's own answer) and changed where a test needs another value: a parser test needs the bad answer it refuses.
"""

from __future__ import annotations

import copy
import json
import os

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.prometheus import queries, rows, series, source

HERE = os.path.dirname(os.path.abspath(__file__))
SAVED = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "fixtures", "prometheus"))


def real(name="client_bytes", case="healthy"):
    with open(os.path.join(SAVED, case, "prometheus", "%s.json" % name), encoding="utf-8") as handle:
        return json.load(handle)


def write_series(document):
    return [item for item in document["data"]["result"] if item["metric"].get("direction") == "write"]


def test_a_real_answer_is_read_with_its_labels_and_points():
    found = series.parse(json.dumps(real()), "client_bytes")
    writes = [one for one in found if one.labels["direction"] == "write"]
    assert sorted(one.labels["instance"] for one in writes) == ["nfs2:9100", "nfs3:9100"]
    assert all(len(one.points) == 2 and one.points[1][1] - one.points[0][1] == 33554432 for one in writes)


def _first_value(doc, value):
    doc["data"]["result"][0]["values"][0][1] = value
    return doc


def _first_time(doc, value):
    doc["data"]["result"][0]["values"][0][0] = value
    return doc


def _reversed_times(doc):
    doc["data"]["result"][0]["values"].reverse()
    return doc


@pytest.mark.parametrize("change, why", [
    (lambda doc: dict(doc, status="error", errorType="bad_data", error="parse error"), "status 'error': bad_data parse error"),
    (lambda doc: dict(doc, data=dict(doc["data"], resultType="vector")), "not a range query's matrix"),
    (lambda doc: _first_value(doc, "NaN"), "a value is NaN"),
    (lambda doc: _first_value(doc, "+Inf"), "a value is +Inf"),
    (lambda doc: _first_value(doc, "lots"), "a value is not a number"),
    (lambda doc: _first_time(doc, "1796115941"), "a point is not [time"),
    (_reversed_times, "the points' times do not rise"),
    (lambda doc: [doc], "not a JSON object"),
])
def test_what_the_parser_cannot_read_is_refused_naming_the_query(change, why):
    with pytest.raises(series.SeriesError) as raised:
        series.parse(json.dumps(change(copy.deepcopy(real()))), "client_bytes")
    assert str(raised.value).startswith("Prometheus answer to client_bytes: ") and why in str(raised.value)


def test_text_that_is_no_json_or_too_large_is_refused(monkeypatch):
    with pytest.raises(series.SeriesError, match="not JSON"):
        series.parse('{"status": "success", "data": ', "q")
    monkeypatch.setattr(series, "MAX_BYTES", 100)
    with pytest.raises(series.SeriesError, match="more than the 100 this reader takes"):
        series.parse(json.dumps(real()), "q")


def test_a_counter_that_went_down_is_a_reset_never_an_increase():
    moved = series.change(((0.0, 100.0), (15.0, 40.0), (30.0, 90.0)))
    assert moved.reset and moved.increase is None
    assert series.change(((0.0, 100.0), (30.0, 160.0))).increase == 60.0
    assert series.change(((0.0, 100.0),)) is None


def _answers(case="healthy"):
    folder = os.path.join(SAVED, case, "prometheus")
    return queries.parse_answers(dict((name[:-5], open(os.path.join(folder, name), encoding="utf-8").read())
                                      for name in os.listdir(folder)))


def _with_points(answers, name, host, values):
    """answers with one series of host in answer name given these values (times kept)."""
    changed = dict(answers)
    changed[name] = [one._replace(points=tuple((point[0], value) for point, value in zip(one.points, values)))
                     if one.labels.get("instance", "").startswith(host + ":") else one for one in answers[name]]
    return changed


def test_a_remount_excludes_the_client_as_new_mount():
    answers = _answers()
    age = [one for one in answers["client_age"] if one.labels["instance"] == "nfs2:9100"][0]
    fallen = _with_points(answers, "client_age", "nfs2", (age.points[0][1], 3.0))
    clients = rows.ClientRows(fallen, "/mnt/nfs")
    view, excluded, _canary, _evidence = clients.row("nfs2")
    assert view is None and excluded["problems"] == ["new_mount"]
    assert clients.row("nfs3")[1] is None


def test_a_counter_reset_excludes_the_client_and_names_the_series():
    answers = _answers()
    dropped = _with_points(answers, "client_sends", "nfs3", (5000.0, 10.0))
    view, excluded, _canary, _evidence = rows.ClientRows(dropped, "/mnt/nfs").row("nfs3")
    assert view is None and excluded["problems"] == ["reset"]
    assert "client_sends{export=nfs1:/srv/nfs,instance=nfs3:9100,mountpoint=/mnt/nfs} went down" in excluded["problem_details"][0]


def test_the_row_holds_what_the_series_measured_and_nothing_assumed():
    view, excluded, canary, evidence = rows.ClientRows(_answers(), "/mnt/nfs").row("nfs2")
    assert excluded is None and canary is None  # two points: the writes' end is not placed, no span
    assert view["delta"]["write_bytes"] == 33554432 and view["dstate"] is None and view["sunrpc"] == {}
    assert set(view["delta"]["ops"]) <= {"WRITE", "COMMIT", "READ"} and view["delta"]["rpc"]["connect_count"] is None
    assert evidence.probe is None and evidence.cpu[2].startswith("node_exporter's series")


def _burst_answer(values, step=15.0, hosts=("nfs2", "nfs3")):
    base = real()["data"]["result"][1]
    items = []
    for host in hosts:
        item = copy.deepcopy(base)
        item["metric"]["instance"] = "%s:9100" % host
        item["values"] = [[1000.0 + index * step, str(value)] for index, value in enumerate(values)]
        items.append(item)
    return series.parse(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": items}}), "burst")


def test_bursts_are_runs_of_writing_steps_with_grid_edges():
    # idle, a checkpoint of 3 steps, idle 4 steps with a log line, a second checkpoint with one idle step inside, idle
    values = [0, 0, 100, 300, 400, 400, 401, 401, 401, 401, 501, 501, 600, 600]
    found = queries.bursts(_burst_answer(values))
    assert [(burst["start_at"], burst["end_at"], burst["bytes"], burst["steps"]) for burst in found] == [
        (1015.0, 1060.0, 800.0, 3), (1135.0, 1180.0, 398.0, 2)]
    assert all(burst["complete"] for burst in found)
    assert [burst["start_at"] for burst in queries.last_bursts(_burst_answer(values), 1)] == [1135.0]
    # up to MERGE_GAP_STEPS idle steps are one burst (a collector's timer against the scrapes'), more are two
    assert len(queries.bursts(_burst_answer([0, 0, 100, 100, 100, 100, 200, 200]))) == 1
    assert len(queries.bursts(_burst_answer([0, 0, 100, 100, 100, 100, 100, 200, 200]))) == 2


def test_a_burst_at_the_range_edge_is_not_complete_and_a_remount_counts_from_zero():
    found = queries.bursts(_burst_answer([0, 100, 200, 200, 200, 200, 200, 50, 150]))
    assert [(burst["start_at"], burst["complete"]) for burst in found] == [(1000.0, False), (1090.0, False)]
    with pytest.raises(queries.QueryError, match="no complete write burst"):
        queries.last_bursts(_burst_answer([0, 100, 200]), 1)


def test_the_options_are_checked_before_any_request():
    with pytest.raises(queries.QueryError, match="ckptio_prometheus_url must be an http"):
        source.request("ftp://x", "/mnt/nfs", last=1)
    with pytest.raises(queries.QueryError, match="either ckptio_prometheus_start and ckptio_prometheus_end, or ckptio_prometheus_last"):
        source.request("http://x:9090", "/mnt/nfs", start="1", end="2", last=3)
    with pytest.raises(queries.QueryError, match="ckptio_prometheus_end .* must be after ckptio_prometheus_start"):
        source.request("http://x:9090", "/mnt/nfs", start="2026-12-01T03:00:00Z", end="2026-12-01T02:00:00Z")
    with pytest.raises(queries.QueryError, match="ckptio_prometheus_start must carry a zone"):
        source.request("http://x:9090", "/mnt/nfs", start="2026-12-01T03:00:00", end="2026-12-01T04:00:00Z")
    with pytest.raises(queries.QueryError, match="ckptio_prometheus_last must be 1 to 100"):
        source.request("http://x:9090", "/mnt/nfs", last=0)
    with pytest.raises(queries.QueryError, match="ckptio_prometheus_range must be"):
        source.request("http://x:9090", "/mnt/nfs", last=2, range_text="-6h")
    with pytest.raises(queries.QueryError, match="more than the 11000 Prometheus answers"):
        source.request("http://x:9090", "/mnt/nfs", last=2, range_text="2d", step="1s")
    req = source.request("http://x:9090/", "/mnt/nfs", start="2026-12-01T03:00:00Z", end="1796101200", step="15s")
    assert (req.url, req.end - req.start, req.step) == ("http://x:9090", 0.0 + 1796101200 - 1796094000, 15.0)


def test_a_saved_bundle_names_only_files_this_collection_writes():
    with pytest.raises(Exception, match="not a query this collection writes"):
        source.response_files({"prometheus": {"queries": [{"name": "x", "file": "../../etc/passwd"}]}})


def test_selectors_are_raw_and_quote_the_mount_point():
    names = dict(queries.client_selectors('/mnt/a"b'))
    assert names["client_bytes"] == 'ckptio_nfs_client_bytes_total{mountpoint="/mnt/a\\"b"}'
    assert all("(" not in selector for _name, selector in queries.client_selectors("/m") + queries.node_selectors(["a:9100"]))
    assert dict(queries.node_selectors(["nfs2:9100", "a.b:9100"]))["node_cpu"] == 'node_cpu_seconds_total{instance=~"a\\\\.b:9100|nfs2:9100"}'


def _stale_runs_answers(runs, bytes_at, age_at, step=5.0, start=940.0, end=1160.0):
    """{name: [Series]} of one client nfs2 whose collector ran at `runs` only: every grid point holds the values of the
    newest run at or before it (what node_exporter serves between runs), as on the lab's starved 1-vCPU VMs."""
    grid = [start + index * step for index in range(int((end - start) / step) + 1)]
    newest = [max(run for run in runs if run <= at) for at in grid]
    labels = {"instance": "nfs2:9100", "mountpoint": "/mnt/nfs", "export": "nfs1:/srv/nfs"}

    def one(name, values, **extra):
        return series.Series(name, dict(labels, **extra), tuple(zip(grid, values)))
    return {
        "client_bytes": [one("client_bytes", [bytes_at[run] for run in newest], direction="write"),
                         one("client_bytes", [0.0 for _run in newest], direction="read")],
        "client_age": [one("client_age", [age_at + run for run in newest])],
        "collector_last_run": [series.Series("collector_last_run", {"instance": "nfs2:9100"}, tuple(zip(grid, newest)))],
    }


def test_the_window_edges_are_the_collector_runs_around_it_not_the_grid_points():
    """Window 1000..1100, runs at 900, 1050, 1098 and 1130 (none from 100 s before the start to 50 s after it, the last
    inside 2 s before the end: the lab's healthy run). The bytes at the start are the run at 900's, at the end the run
    at 1130's (the run at 1098 had not seen the last 10 MB); the seconds are the window's 100, not the mount age's
    rise between the grid points (198 s before) - the edges are said, and they are far outside the window."""
    runs = (880.0, 900.0, 1050.0, 1098.0, 1130.0, 1150.0)
    bytes_at = {880.0: 0.0, 900.0: 0.0, 1050.0: 50e6, 1098.0: 90e6, 1130.0: 100e6, 1150.0: 100e6}
    view, excluded, _canary, _evidence = rows.ClientRows(_stale_runs_answers(runs, bytes_at, 5000.0), "/mnt/nfs",
                                                         (1000.0, 1100.0)).row("nfs2")
    assert excluded is None
    delta = view["delta"]
    assert delta["write_bytes"] == 100000000
    assert delta["interval_seconds"] == 100.0 and delta["write_mb_per_second"] == 1.0
    assert delta["edges"] == {"measured_by": "collector runs", "start_run_at": 900.0, "end_run_at": 1130.0,
                              "before_start_seconds": 100.0, "after_end_seconds": 30.0,
                              "start_missing": False, "end_missing": False}
    # Its writes began somewhere in 150 s without a run: no span is placed (the pace is not measured on it).
    assert rows.write_span(rows._Host("nfs2", _stale_runs_answers(runs, bytes_at, 5000.0), (1000.0, 1100.0))) is None


def test_a_write_span_is_placed_on_the_runs_times_not_the_grid_points():
    """Runs every 7 s on a 5 s grid, writes from 1000 to 1095: the span is the runs' 996..1101, no grid point's."""
    runs = tuple(940.0 + 7 * index for index in range(32))
    bytes_at = dict((run, min(max(run - 1000.0, 0.0), 95.0) * 1e6) for run in runs)
    one = rows._Host("nfs2", _stale_runs_answers(runs, bytes_at, 5000.0), (1000.0, 1100.0))
    assert rows.write_span(one) == (996.0, 1101.0)


def test_without_a_run_after_the_end_the_newest_run_is_taken_and_said():
    runs = (900.0, 1050.0, 1098.0)
    bytes_at = {900.0: 0.0, 1050.0: 50e6, 1098.0: 90e6}
    view, _excluded, _canary, _evidence = rows.ClientRows(_stale_runs_answers(runs, bytes_at, 5000.0), "/mnt/nfs",
                                                          (1000.0, 1100.0)).row("nfs2")
    assert view["delta"]["write_bytes"] == 90000000
    assert view["delta"]["edges"]["end_missing"] and view["delta"]["edges"]["end_run_at"] == 1098.0


def test_without_the_run_series_the_edges_are_the_grid_points_inside_the_window():
    runs = (900.0, 1050.0, 1098.0, 1130.0)
    bytes_at = {900.0: 0.0, 1050.0: 50e6, 1098.0: 90e6, 1130.0: 100e6}
    answers = _stale_runs_answers(runs, bytes_at, 5000.0)
    del answers["collector_last_run"]
    view, _excluded, _canary, _evidence = rows.ClientRows(answers, "/mnt/nfs", (1000.0, 1100.0)).row("nfs2")
    assert view["delta"]["write_bytes"] == 90000000 and view["delta"]["interval_seconds"] == 198.0
    assert view["delta"]["edges"]["measured_by"] == "grid"


def test_the_margin_is_four_steps_or_a_minute_in_whole_steps():
    assert queries.edge_margin(5.0) == 60.0 and queries.edge_margin(15.0) == 60.0 and queries.edge_margin(30.0) == 120.0
    assert queries.edge_margin(7.0) == 63.0


def _runs_answer(runs_of, step=15.0, count=14):
    """The collector_last_run answer: each host's grid point holds its newest run at or before it."""
    items = []
    for host, runs in runs_of.items():
        grid = [1000.0 + index * step for index in range(count)]
        items.append({"metric": {"__name__": "ckptio_nfs_collector_last_run_timestamp_seconds", "instance": "%s:9100" % host},
                      "values": [[at, repr(max(run for run in runs if run <= at))] for at in grid]})
    return series.parse(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": items}}), "runs")


def test_a_bursts_edges_are_the_collectors_runs_around_its_writes():
    """The grid finds the burst (1015..1060); its edges are then the runs whose values the grid points hold: the newest
    run before the writes (nfs2's at 1002, nfs3's at 1011: the earliest) and the first run holding the last bytes
    (nfs2's at 1057, nfs3's at 1048: the latest), with the runs' gaps around them said (the resolution)."""
    values = [0, 0, 100, 300, 400, 400, 401, 401, 401, 401, 501, 501, 600, 600]
    runs = {"nfs2": (990.0, 1002.0, 1022.0, 1040.0, 1057.0, 1200.0), "nfs3": (990.0, 1011.0, 1024.0, 1048.0, 1080.0, 1200.0)}
    burst = queries.bursts(_burst_answer(values))[0]
    edged = queries.run_edged(burst, _runs_answer(runs))
    assert (edged["start_at"], edged["end_at"]) == (1002.0, 1057.0)
    assert (edged["grid_start_at"], edged["grid_end_at"]) == (1015.0, 1060.0)
    assert edged["edges"] == "collector runs" and edged["resolution_seconds"] == {"start": 20.0, "end": 24.0}
    # without the run series (an older collector) the grid's edges stay, and say so
    assert queries.run_edged(burst, [])["edges"] == "grid"


def test_edges_wider_than_a_tenth_of_the_window_flag_the_figure_as_distorted():
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import run

    def client(host, before, after, end_missing=False):
        return {"host": host, "delta": {"edges": {"measured_by": "collector runs", "before_start_seconds": before,
                                                  "after_end_seconds": after, "end_missing": end_missing}}}
    window = {"seconds": 100.0}
    assert run._edge_flags(window, [client("nfs2", 4.0, 5.0), client("nfs3", 1.0, 1.0)]) == []
    flags = run._edge_flags(window, [client("nfs2", 4.0, 5.0), client("nfs3", 9.0, 2.0, True)])
    assert [flag["kind"] for flag in flags] == ["distorted_edges", "no_run_after_end"] and "on nfs3" in flags[0]["message"]
    assert run.distorted({"flags": flags}) and not run.distorted({"flags": flags[1:]})
    burst = dict(window, burst={"resolution_seconds": {"start": 8.0, "end": 5.0}})
    assert [flag["kind"] for flag in run._edge_flags(burst, [])] == ["distorted_edges"]
    # grid edges (an older collector): nothing to flag on
    assert run._edge_flags(window, [{"host": "nfs2", "delta": {"edges": {"measured_by": "grid"}}}]) == []
