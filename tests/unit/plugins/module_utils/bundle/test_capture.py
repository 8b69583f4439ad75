"""Capture of a real checkpoint (no canary): the window plan, the sampler, context.yml and the achieved figure."""
from __future__ import annotations

import json

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import capture
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.capture import CaptureError
from ansible_collections.ckptio.nfs.tests.unit.utils import read_sample

NOW = 1796137300.0


def plan(**options):
    options.setdefault("now", NOW)
    return capture.plan_window(**options)


def test_seconds_window_starts_now_and_lasts_n_seconds():
    result = plan(seconds=30)
    assert result["kind"] == "seconds" and result["seconds"] == 30.0
    assert result["start_at"] is None and result["end_at"] is None and result["marker"] is None
    assert result["max_seconds"] == capture.DEFAULT_MAX_SECONDS


@pytest.mark.parametrize("start, end", [
    ("2026-12-01T15:03:00Z", "2026-12-01T15:08:00+00:00"),
    (str(NOW + 60), NOW + 360),
    ("2026-12-01T16:03:00+01:00", "2026-12-01T16:08:00+01:00"),
])
def test_between_window_takes_iso_8601_with_zone_or_epoch(start, end):
    now = capture.parse_time("2026-12-01T15:02:00Z", "x") if "T" in str(start) else NOW
    result = plan(start=start, end=end, now=now)
    assert result["kind"] == "between" and result["seconds"] == 300.0
    assert result["start_at"] == pytest.approx(now + 60)
    assert result["end_at"] == pytest.approx(now + 360)


def test_marker_window_is_bounded_by_the_maximum_and_checked_on_every_client():
    result = plan(marker="/dev/shm/ckpt-done", max_seconds=900)
    assert result["kind"] == "marker" and result["seconds"] is None
    assert result["max_seconds"] == 900.0 and result["marker_on"] == "every_client"


@pytest.mark.parametrize("options, option", [
    ({}, "checkpoint_capture_seconds"),
    ({"seconds": 30, "marker": "/run/m"}, "checkpoint_capture_marker"),
    ({"seconds": 30, "start": NOW + 10, "end": NOW + 20}, "checkpoint_capture_start"),
    ({"seconds": -1}, "checkpoint_capture_seconds"),
    ({"seconds": "soon"}, "checkpoint_capture_seconds"),
    ({"seconds": 7200, "max_seconds": 3600}, "checkpoint_capture_max_seconds"),
    ({"start": NOW + 10}, "checkpoint_capture_end"),
    ({"end": NOW + 10}, "checkpoint_capture_start"),
    ({"start": NOW - 5, "end": NOW + 100}, "checkpoint_capture_start"),
    ({"start": NOW + 100, "end": NOW + 100}, "checkpoint_capture_end"),
    ({"start": NOW + 100, "end": NOW + 50}, "checkpoint_capture_end"),
    ({"start": "2026-12-01T15:03:00", "end": "2026-12-01T15:08:00Z"}, "checkpoint_capture_start"),
    ({"start": "tomorrow", "end": NOW + 50}, "checkpoint_capture_start"),
    ({"start": NOW + 7200, "end": NOW + 7300}, "checkpoint_capture_max_lead_seconds"),
    ({"start": NOW + 10, "end": NOW + 5000}, "checkpoint_capture_max_seconds"),
    ({"marker": "relative/path"}, "checkpoint_capture_marker"),
    ({"marker": "/run/m\nx"}, "checkpoint_capture_marker"),
    ({"seconds": 30, "max_seconds": 0}, "checkpoint_capture_max_seconds"),
    ({"seconds": 30, "dstate_interval": 0}, "checkpoint_capture_dstate_interval"),
    ({"seconds": 30, "dstate_interval": 0.01}, "checkpoint_capture_dstate_interval"),
])
def test_a_bad_window_is_refused_naming_the_option(options, option):
    with pytest.raises(CaptureError) as error:
        plan(**options)
    assert option in str(error.value)


def test_a_past_start_says_how_far_in_the_past():
    with pytest.raises(CaptureError, match=r"checkpoint_capture_start .* 5 s in the past"):
        plan(start=NOW - 5, end=NOW + 100)


def test_sampling_covers_the_window_once_per_interval():
    sampling = capture.sampling(plan(seconds=30, dstate_interval=2), NOW)
    assert sampling["samples"] == 16 and sampling["interval"] == 2.0 and sampling["seconds"] == 30.0
    assert sampling["until"] == NOW + 30 and sampling["stop_path"] is None
    assert sampling["async_seconds"] >= 30 + capture.ASYNC_MARGIN_SECONDS


def test_sampling_of_a_between_window_runs_to_its_end_from_the_launch():
    window = plan(start=NOW + 10, end=NOW + 70)
    sampling = capture.sampling(window, NOW + 12.5)
    assert sampling["seconds"] == 57.5 and sampling["until"] == NOW + 70 and sampling["samples"] == 58


def test_sampling_of_a_between_window_whose_end_passed_is_refused():
    window = plan(start=NOW + 10, end=NOW + 70)
    with pytest.raises(CaptureError, match="checkpoint_capture_end"):
        capture.sampling(window, NOW + 71)


def test_sampling_of_a_marker_window_stops_at_the_marker_or_the_maximum():
    sampling = capture.sampling(plan(marker="/dev/shm/done", max_seconds=600), NOW)
    assert sampling["stop_path"] == "/dev/shm/done" and sampling["seconds"] == 600.0 and sampling["samples"] == 601


def client(start, end, offset=None, marker_seen=None, uncertainty=0.01):
    clock = None if offset is None else {"offset_seconds": offset, "uncertainty_seconds": uncertainty}
    return {"start": start, "end": end, "clock": clock, "marker_seen": marker_seen}


def test_window_is_earliest_start_to_latest_end_on_the_controllers_clock():
    block = capture.window_block(plan(seconds=30), {
        "gpu01": client(NOW + 1.0, NOW + 31.0, offset=0.5),
        "gpu02": client(NOW + 3.0, NOW + 32.0, offset=2.0)})
    # gpu02's clock runs 2 s ahead: its start is NOW + 1.0 and its end NOW + 30.0 on the controller's clock.
    assert block["start_at"] == pytest.approx(NOW + 0.5) and block["end_at"] == pytest.approx(NOW + 30.5)
    assert block["seconds"] == pytest.approx(30.0) and block["clocks_measured"] is True
    assert block["hit_max"] is False and block["clients"] == 2 and block["kind"] == "seconds"
    assert block["requested"] == {"seconds": 30.0, "start_at": None, "end_at": None, "marker": None, "max_seconds": 3600.0}


def test_window_names_the_clients_whose_clock_was_not_measured():
    block = capture.window_block(plan(seconds=30), {"gpu01": client(NOW, NOW + 30, offset=0.1), "gpu02": client(NOW, NOW + 30)})
    assert block["clocks_measured"] is False and block["unmeasured_clocks"] == ["gpu02"]


def test_marker_window_that_hit_the_maximum_is_flagged_with_the_clients():
    block = capture.window_block(plan(marker="/dev/shm/done", max_seconds=60), {
        "gpu01": client(NOW, NOW + 20, offset=0.0, marker_seen=True),
        "gpu02": client(NOW, NOW + 61, offset=0.0, marker_seen=False)})
    assert block["hit_max"] is True and block["marker_missing_on"] == ["gpu02"] and block["marker_seen_on"] == ["gpu01"]


def test_a_planned_window_as_long_as_the_maximum_did_not_hit_it():
    # Only a marker window can end at the maximum; a planned one lasts what it was asked to.
    block = capture.window_block(plan(seconds=60, max_seconds=60), {"gpu01": client(NOW, NOW + 61.5, offset=0.0)})
    assert block["hit_max"] is False


def test_window_without_a_client_is_refused():
    with pytest.raises(CaptureError, match="no client"):
        capture.window_block(plan(seconds=30), {})


def delta(server_write, normal_write=0, direct_write=0):
    return {"usable": True, "bytes": {"serverwritebytes": server_write, "normalwritebytes": normal_write,
                                      "directwritebytes": direct_write}, "write_bytes": server_write}


def test_written_bytes_sum_the_server_write_bytes_of_every_client():
    written = capture.written_bytes([delta(100, 100), delta(50, 40, 10)])
    assert written == {"server_write_bytes": 150, "application_write_bytes": 150, "clients": 2}


def window(seconds=10.0, hit_max=False, kind="seconds"):
    return {"kind": kind, "seconds": seconds, "hit_max": hit_max, "start_at": NOW, "end_at": NOW + seconds,
            "clocks_measured": True, "unmeasured_clocks": [], "clients": 2}


def test_achieved_is_server_write_bytes_over_the_window_and_says_so():
    result = capture.achieved(window(10.0), [delta(600), delta(400)], checkpoint_bytes=1000)
    assert result["bytes_per_second"] == 100.0 and result["written"]["server_write_bytes"] == 1000
    assert "no canary ranks" in result["source"] and "serverwritebytes" in result["source"]
    assert "controller's clock" in result["source"]
    assert [flag["kind"] for flag in result["flags"]] == []


def test_bytes_beyond_the_stated_checkpoint_are_flagged_as_an_upper_bound():
    result = capture.achieved(window(10.0), [delta(1500)], checkpoint_bytes=1000)
    assert [flag["kind"] for flag in result["flags"]] == ["other_writes"]
    assert "500 bytes" in result["flags"][0]["message"] and "upper bound" in result["flags"][0]["message"]


def test_fewer_bytes_than_the_checkpoint_say_the_window_missed_part_of_it():
    result = capture.achieved(window(10.0), [delta(500)], checkpoint_bytes=1000)
    assert [flag["kind"] for flag in result["flags"]] == ["missed_checkpoint"]


def test_bytes_still_in_the_page_cache_and_a_window_at_its_maximum_are_flagged():
    result = capture.achieved(window(10.0, hit_max=True, kind="marker"), [delta(800, normal_write=1000)], checkpoint_bytes=0)
    assert [flag["kind"] for flag in result["flags"]] == ["hit_max", "unflushed"]


def test_no_bytes_written_is_zero_throughput_flagged():
    result = capture.achieved(window(10.0), [delta(0)], checkpoint_bytes=1000)
    assert result["bytes_per_second"] == 0.0
    assert "no_writes" in [flag["kind"] for flag in result["flags"]]


def test_context_document_says_capture_and_leaves_a_size_not_given_null():
    """CONTRACT 2: the written bytes are never the target (the window judged against itself met it)."""
    block = window(10.0)
    written = {"server_write_bytes": 4096, "application_write_bytes": 4096, "clients": 2}
    document = capture.context_document("/mnt/nfs", "prod", 0, 300, {}, block, written)
    assert list(document) == ["source", "mount_point", "label", "target", "capture"]
    assert document["source"] == "capture"
    assert document["target"] == {"checkpoint_bytes": None, "window_seconds": 300.0}
    assert document["capture"]["server_write_bytes"] == 4096
    document = capture.context_document("/mnt/nfs", "prod", 0, 0, {}, block, None)
    assert document["target"] == {"checkpoint_bytes": None, "window_seconds": None}


def test_context_document_keeps_the_operators_checkpoint_size():
    document = capture.context_document("/mnt/nfs", "prod", 2400000000000, 300, {"server_link_gbps": 200}, window(), None)
    assert document["target"] == {"checkpoint_bytes": 2400000000000, "window_seconds": 300.0, "checkpoint_bytes_from": "operator"}
    assert document["network"] == {"server_link_gbps": 200}


# -- the clients' records and context.yml from them, on a real lab capture's statistics ------------

CLOCK_STEP = ("..", "captures", "clock_step", "clients")


def stats(host, phase):
    return {"raw_mountstats": read_sample(*(CLOCK_STEP + (host, "mountstats_%s.txt" % phase))),
            "host_sample": json.loads(read_sample(*(CLOCK_STEP + (host, "host_%s.json" % phase))))}


def test_client_record_takes_the_window_ends_from_the_host_samples_and_the_written_bytes_from_mountstats():
    clock = {"offset_seconds": 0.320459, "uncertainty_seconds": 0.247, "within_bound": False, "message": "m",
             "samples": 5, "bound_seconds": 0.1, "reader": "date +%s.%N", "readings": []}
    sampler = {"dstate": [{"epoch": 1.0}, {"epoch": 2.0}], "dstate_stop": None}
    record = capture.client_record("/mnt/nfs", stats("nfs2", "before"), stats("nfs2", "after"), clock, sampler)
    assert record["start"] == 1796137314.669 and record["end"] == 1796137428.055
    assert record["clock"]["offset_seconds"] == 0.320459 and "readings" in record["clock"]
    # bytes: 0 8388608 0 0 0 8388608 0 2048 after, zeros before: 8 MiB through write() and on the wire.
    assert record["written"] == {"server_write_bytes": 8388608, "application_write_bytes": 8388608, "clients": 1}
    assert record["dstate_samples"] == 2 and record["marker_seen"] is None and record["problems"] == []


def test_client_record_of_a_mount_missing_after_the_window_names_it():
    after = dict(stats("nfs2", "after"), raw_mountstats="")
    record = capture.client_record("/mnt/nfs", stats("nfs2", "before"), after, None, None)
    assert record["written"]["clients"] == 0 and "no NFS mount on /mnt/nfs" in record["problems"][0]


def test_context_from_the_records_sums_the_clients_on_the_controllers_clock():
    records = {}
    for host, offset in (("nfs2", 0.320459), ("nfs3", 2.382669)):
        records[host] = capture.client_record("/mnt/nfs", stats(host, "before"), stats(host, "after"),
                                              {"offset_seconds": offset, "uncertainty_seconds": 0.25}, None)
    window = plan(seconds=100)
    document = capture.context_from_records(window, records, "/mnt/nfs", "prod", 0, 10, {})
    assert document["source"] == "capture" and document["target"]["checkpoint_bytes"] is None  # not given: no target
    block = document["capture"]
    assert block["server_write_bytes"] == 16777216 and block["clients"] == 2 and block["clocks_measured"] is True
    # nfs3 ran 2.38 s ahead: its before (1796137314.102) is 1796137311.719 on the controller's clock.
    assert block["start_at"] == pytest.approx(1796137311.719331) and block["end_at"] == pytest.approx(1796137427.734541)
