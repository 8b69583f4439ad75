"""diagnose_bundle and checkpoint_report on a capture bundle (a real checkpoint observed, no canary).

tests/fixtures/captures/capture_clock_step is the lab's clock_step bundle without its canary's
ranks (NOTES.txt there): the statistics around the window, the clients' capture.json and a
context.yml with `source: capture`, as roles/checkpoint_capture writes them.
"""
from __future__ import annotations

import copy
import json
import os
import shutil

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.report import report
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose, diagnose_run
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.run import read_run
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.markdown import render_markdown
from ansible_collections.ckptio.nfs.plugins.modules import checkpoint_report, diagnose_bundle
from ansible_collections.ckptio.nfs.tests.unit.utils import run_module, sample_path

NAME = "capture_clock_step"
WRITTEN = 16777216
SECONDS = 116.015


@pytest.fixture
def bundle():
    return load_bundle(sample_path("..", "captures", NAME))


def changed(bundle, **capture):
    bundle = copy.deepcopy(bundle)
    bundle["context"]["capture"].update(capture)
    return bundle


def test_the_fixture_has_no_canary(bundle):
    assert bundle["context"]["source"] == "capture" and "canary" not in bundle["context"]
    assert all("canary" not in files and "capture" in files for files in bundle["clients"].values())


def test_achieved_is_the_written_bytes_over_the_window_and_says_what_it_rests_on(bundle):
    result = diagnose(bundle)
    assert result["achieved_bytes_per_second"] == pytest.approx(WRITTEN / SECONDS)
    assert "no canary ranks" in result["achieved_source"] and "serverwritebytes" in result["achieved_source"]
    assert "controller's clock" in result["achieved_source"]
    assert result["capture"]["kind"] == "seconds" and result["capture"]["seconds"] == SECONDS
    assert result["capture"]["written"]["server_write_bytes"] == WRITTEN and result["capture"]["flags"] == []
    assert "No canary ranks" in result["summary"]
    row = [item for item in result["evidence"] if item["signal"] == "capture window (no canary)"][0]
    assert row["value"] == SECONDS and "not a checkpoint's own start and end" in row["explanation"]
    # No canary: no start spread to judge, and nothing pretends there was one.
    assert result["start"] == {"start_spread_seconds": None, "start_spread_uncertainty_seconds": None,
                               "synchronized": None, "clocks_measured": None}


def test_the_diagnosis_still_names_a_layer_from_the_statistics(bundle):
    result = diagnose(bundle)
    assert result["limiting_layer"] and result["verdict"] in ("tune", "rearchitect", "meets_target")
    assert result["network"]["state"] in ("clear", "unmeasured", "full", "busy")


def test_bytes_beyond_the_checkpoint_are_flagged_in_the_evidence_and_the_summary(bundle):
    bundle["context"]["target"]["checkpoint_bytes"] = WRITTEN // 2
    result = diagnose(bundle)
    assert [flag["kind"] for flag in result["capture"]["flags"]] == ["other_writes"]
    flagged = [item for item in result["evidence"] if item["signal"] == "capture: other_writes"]
    assert flagged and flagged[0]["crossed"] and "upper bound" in flagged[0]["explanation"]
    assert "upper bound" in result["summary"]


def test_a_measured_checkpoint_size_is_not_compared_with_itself(bundle):
    bundle["context"]["target"].update(checkpoint_bytes=WRITTEN * 4, checkpoint_bytes_from="measured")
    assert diagnose(bundle)["capture"]["flags"] == []


def test_a_marker_window_that_hit_its_maximum_is_flagged(bundle):
    result = diagnose(changed(bundle, kind="marker", hit_max=True, marker_missing_on=["nfs3"], marker_seen_on=["nfs2"]))
    assert "hit_max" in [flag["kind"] for flag in result["capture"]["flags"]]
    assert "nfs3" in result["summary"]


def test_a_window_without_seconds_is_refused_naming_the_key(bundle):
    with pytest.raises(ValueError, match="capture.seconds"):
        diagnose(changed(bundle, seconds=0))


def test_diagnosis_markdown_says_there_was_no_canary(bundle):
    markdown = render_markdown(diagnose(bundle))
    assert "no canary ranks" in markdown and "capture window (no canary)" in markdown


def metrics_of(bundle):
    run = read_run(bundle)
    return report.bundle_metrics(bundle["context"], diagnose_run(run), run, None, "capture")


def test_report_metrics_carry_the_capture_and_no_canary_figures(bundle):
    metrics = metrics_of(bundle)
    assert metrics["source"] == "capture" and metrics["canary_bytes"] is None and metrics["canary_seconds"] is None
    assert metrics["capture_seconds"] == SECONDS and metrics["capture_bytes"] == WRITTEN
    assert metrics["achieved_bytes_per_second"] == pytest.approx(WRITTEN / SECONDS)


def test_report_markdown_says_what_the_figure_rests_on(bundle):
    bundle["context"]["target"]["checkpoint_bytes"] = WRITTEN // 2
    markdown = report.render_markdown(metrics_of(bundle))
    assert "## Capture (no canary)" in markdown and "no canary ranks" in markdown
    assert "upper bound" in markdown and "| canary |" not in markdown
    assert "| capture window (target window) | 116 s (10 s) |" in markdown


@pytest.fixture
def bundle_copy(tmp_path):
    dest = str(tmp_path / NAME)
    shutil.copytree(sample_path("..", "captures", NAME), dest)
    return dest


def test_the_modules_diagnose_and_report_a_capture_bundle(bundle_copy):
    diagnosis = run_module(diagnose_bundle, {"bundle": bundle_copy})
    assert "no canary ranks" in diagnosis["diagnosis"]["achieved_source"]
    result = run_module(checkpoint_report, {"bundle": bundle_copy, "png": False})
    assert result["metrics"]["source"] == "capture"
    with open(os.path.join(bundle_copy, "report.md")) as handle:
        assert "## Capture (no canary)" in handle.read()
    with open(os.path.join(bundle_copy, "report.json")) as handle:
        assert json.load(handle)["metrics"]["capture_bytes"] == WRITTEN
