"""checkpoint_report through its real main() on copies of the lab's capture bundles."""
from __future__ import annotations

import builtins
import json
import os
import shutil
import stat

import pytest

from ansible_collections.ckptio.nfs.plugins.modules import checkpoint_report
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module, sample_path, tree_checksums


def _copy(name, tmp_path):
    dest = tmp_path / name
    shutil.copytree(sample_path("bundles", name), str(dest))
    for root, dirs, files in os.walk(str(dest)):
        for entry in dirs + files:
            path = os.path.join(root, entry)
            os.chmod(path, os.stat(path).st_mode | stat.S_IWUSR)
    os.chmod(str(dest), 0o755)
    return dest


@pytest.fixture
def baseline(tmp_path):
    return _copy("seed_like_baseline", tmp_path)


@pytest.fixture
def tuned(tmp_path):
    return _copy("shared_vs_perrank_5b_per_rank", tmp_path)


def test_writes_md_json_png_from_a_real_bundle(baseline):
    result = run_module(checkpoint_report, {"bundle": str(baseline)})
    assert result["changed"] is True and result["png_written"] is True
    assert sorted(os.path.basename(f) for f in result["files"]) == ["report.json", "report.md", "report.png"]
    with open(str(baseline / "report.png"), "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
    metrics = json.loads((baseline / "report.json").read_text())["metrics"]
    # NOTES.txt of this capture: 268435456 B in 13.402 s; WRITE 4477 ops, avg RTT 72.527 ms.
    assert metrics["achieved_bytes_per_second"] == pytest.approx(268435456 / 13.402)
    assert metrics["ops"]["WRITE"]["ops"] == 4477
    assert metrics["ops"]["WRITE"]["avg_rtt_ms"] == pytest.approx(72.527, abs=0.001)
    assert metrics["dstate_peak"] == 4
    assert metrics["server_threads"] == 8
    assert metrics["slot_cap_setting"] == "max_session_slots" and metrics["slot_cap"] == 64
    markdown = (baseline / "report.md").read_text()
    assert "| limiting layer | %s |" % metrics["limiting_layer"] in markdown
    assert "| WRITE | 4,477 |" in markdown


def test_second_run_is_idempotent(baseline):
    run_module(checkpoint_report, {"bundle": str(baseline)})
    before = tree_checksums(str(baseline))
    result = run_module(checkpoint_report, {"bundle": str(baseline)})
    assert result["changed"] is False
    assert tree_checksums(str(baseline)) == before


def test_compare_to_gives_before_after_and_ratio(baseline, tuned):
    result = run_module(checkpoint_report, {"bundle": str(tuned), "compare_to": str(baseline), "label": "tuned"})
    rows = {row["metric"]: row for row in result["comparison"]}
    throughput = rows["throughput"]
    assert throughput["before"] == pytest.approx(268435456 / 13.402 / 1e6)
    assert throughput["after"] == pytest.approx(536870912 / 21.660 / 1e6)
    assert throughput["ratio"] == pytest.approx(throughput["after"] / throughput["before"], rel=1e-3)
    assert throughput["improved"] is True
    assert rows["WRITE avg RTT"]["before"] == pytest.approx(72.527, abs=0.001)
    assert rows["WRITE avg RTT"]["after"] == pytest.approx(475.843, abs=0.001)
    assert rows["WRITE avg RTT"]["improved"] is False
    for name in ("duration / window", "COMMIT avg queue", "backlog per send", "max_slots reached", "slot cap",
                 "D-state peak", "server threads", "sockets-enqueued"):
        assert name in rows
    markdown = (tuned / "report.md").read_text()
    assert "## Compared with seed_like_baseline" in markdown
    assert "Limiting layer before: %s" % result["baseline"]["limiting_layer"] in markdown


def test_without_matplotlib_md_and_json_still_come_out(baseline, monkeypatch):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    result = run_module(checkpoint_report, {"bundle": str(baseline)})
    assert result["png_written"] is False
    assert not (baseline / "report.png").exists()
    assert (baseline / "report.md").exists() and (baseline / "report.json").exists()
    assert "pip install -r requirements.txt" in result["msg"] and "matplotlib" in result["msg"]


def test_check_mode_writes_nothing(baseline):
    before = tree_checksums(str(baseline))
    result = run_module(checkpoint_report, {"bundle": str(baseline)}, check_mode=True, diff=True)
    assert result["changed"] is True
    assert tree_checksums(str(baseline)) == before
    assert "# Checkpoint validation" in result["diff"][0]["after"]
    # Nothing was written: the message says what a real run would write.
    assert result["msg"].startswith("would write report.md, report.json, report.png in "), result["msg"]


def test_missing_bundle_and_non_bundle_fail_naming_the_option(tmp_path):
    assert fail_module(checkpoint_report, {"bundle": str(tmp_path / "nope")})["msg"].startswith("bundle ")
    assert "not a capture bundle" in fail_module(checkpoint_report, {"bundle": str(tmp_path)})["msg"]
    empty = tmp_path / "b"
    empty.mkdir()
    assert fail_module(checkpoint_report, {"bundle": str(tmp_path), "compare_to": str(tmp_path / "x")})["msg"].startswith("compare_to ")


def test_canary_ranks_give_the_mlperf_aggregate(baseline):
    host_dir = baseline / "clients" / "nfs2"
    ranks = [{"rank": 0, "pid": 1, "start": 100.0, "end": 105.0, "bytes": 500, "error": None},
             {"rank": 1, "pid": 2, "start": 100.2, "end": 110.0, "bytes": 500, "error": None}]
    (host_dir / "canary.json").write_text(json.dumps({"ranks": ranks}))
    result = run_module(checkpoint_report, {"bundle": str(baseline)})
    aggregate = result["metrics"]["canary_aggregate"]
    assert aggregate["seconds"] == 10.0 and aggregate["throughput_bytes_per_second"] == 100.0
    assert result["metrics"]["canary_hosts"][0]["host"] == "nfs2"


def test_a_bundle_without_stats_still_reports_and_warns(baseline):
    # What the fanout containers produce (no NFS there): the report is still written, and the
    # missing diagnosis is a warning through module.warn, not a failure.
    for name in os.listdir(str(baseline / "clients")):
        for stats in (baseline / "clients" / name).glob("mountstats_*.txt"):
            stats.unlink()
    result = run_module(checkpoint_report, {"bundle": str(baseline)})
    assert (baseline / "report.md").exists()
    assert any(warning.startswith("no diagnosis for ") for warning in result["warnings"]), result["warnings"]


def _many_hosts(tmp_path, count):
    """A bundle of count clients, each a copy of the healthy capture's nfs2 (canary.json with a
    measured clock: 10 ms apart per host) - built here, not committed as a fixture."""
    source = sample_path("..", "captures", "healthy")
    dest = tmp_path / "many"
    shutil.copytree(source, str(dest), ignore=shutil.ignore_patterns("nfs3"))
    client = dest / "clients" / "nfs2"
    canary = json.loads((client / "canary.json").read_text())
    for index in range(count):
        copy = dict(canary, clock={"offset_seconds": 0.01 * index})
        if index == 7:
            # One host three times as slow as the others.
            copy["ranks"] = [dict(rank, end=rank["start"] + 3 * (rank["end"] - rank["start"])) for rank in canary["ranks"]]
        host = dest / "clients" / ("c%04d" % index)
        shutil.copytree(str(client), str(host))
        (host / "canary.json").write_text(json.dumps(copy))
    shutil.rmtree(str(client))
    return dest


def test_report_md_summarises_many_hosts_and_keeps_every_host_in_the_json(tmp_path):
    bundle = _many_hosts(tmp_path, 80)
    result = run_module(checkpoint_report, {"bundle": str(bundle)})
    markdown = (bundle / "report.md").read_text()
    document = json.loads((bundle / "report.json").read_text())
    assert len(document["metrics"]["canary_hosts"]) == 80
    # No line per host: the slowest five and the outliers only.
    assert sum(1 for line in markdown.splitlines() if line.startswith("| c0")) <= 6
    assert "80 hosts; per-host throughput: min " in markdown and "report.json (metrics.canary_hosts)" in markdown
    slowest = result["metrics"]["canary_host_summary"]["slowest"]
    assert slowest[0] == "c0007" and len(slowest) == 5
    assert "Slowest 5 hosts:" in markdown
    outliers = result["metrics"]["canary_host_summary"]["outliers"]
    assert [item["host"] for item in outliers] == ["c0007"]
    assert "| c0007 | " in markdown and "% of the median host" in markdown
    assert result["png_written"] is True


def test_report_md_below_the_scale_keeps_a_row_per_host(tmp_path):
    bundle = _many_hosts(tmp_path, 3)
    run_module(checkpoint_report, {"bundle": str(bundle)})
    markdown = (bundle / "report.md").read_text()
    assert all("| c%04d | " % index in markdown for index in range(3))
    assert "per-host throughput" not in markdown


def _copy_capture(name, tmp_path):
    dest = tmp_path / name
    shutil.copytree(sample_path("..", "captures", name), str(dest))
    for root, dirs, files in os.walk(str(dest)):
        for entry in dirs + files:
            path = os.path.join(root, entry)
            os.chmod(path, os.stat(path).st_mode | stat.S_IWUSR)
    return dest


def test_the_diagnosis_json_first_screen_leads_report_md_and_the_console(tmp_path):
    """CONTRACT 3: the report takes headline and first_screen from diagnosis.json, recomputing nothing."""
    from ansible_collections.ckptio.nfs.plugins.module_utils.host import bundle_reader
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import diagnose as diagnosis
    bundle_dir = _copy_capture("seed_like_v41", tmp_path)
    saved = diagnosis.diagnose(bundle_reader.load_bundle(str(bundle_dir)))
    saved["headline"] = dict(verdict="tune", verdict_text="tune: the gap is 4.9x, within the 9.4x slots can give",
                             achieved_text="1.36 MB/s", target_text="6.71 MB/s (67.1 MB in 10 s)",
                             links_text="links at 11 % of the path's TCP capacity: the bandwidth paradox",
                             link_share=0.11, link_capacity_bytes_per_second=1.56e7, confidence="high",
                             confidence_reason="slots, threads and links measured", rests_on="canary",
                             actions=["nfs max_session_slots = 160", "nconnect = 8", "nfsd threads = 64"])
    saved["first_screen"] = ["Verdict: tune (the diagnosis's own line)", "Achieved 1.36 MB/s against 6.71 MB/s"]
    (bundle_dir / "diagnosis.json").write_text(json.dumps(saved, default=str))
    result = run_module(checkpoint_report, {"bundle": str(bundle_dir)})
    markdown = (bundle_dir / "report.md").read_text().splitlines()
    assert markdown[2:6] == ["```text", "Verdict: tune (the diagnosis's own line)", "Achieved 1.36 MB/s against 6.71 MB/s", "```"]
    assert result["console_lines"][:4] == [
        "tune: the gap is 4.9x, within the 9.4x slots can give", "achieved 1.36 MB/s, target 6.71 MB/s (67.1 MB in 10 s)",
        "links at 11 % of the path's TCP capacity: the bandwidth paradox", "confidence high: slots, threads and links measured"]
    assert result["console_lines"][4:7] == ["1. nfs max_session_slots = 160", "2. nconnect = 8", "3. nfsd threads = 64"]
    assert result["png_written"] is True


def test_a_capture_bundle_reports_its_verdict_first_in_human_units(tmp_path):
    bundle_dir = _copy_capture("capture_dd", tmp_path)
    result = run_module(checkpoint_report, {"bundle": str(bundle_dir)})
    markdown = (bundle_dir / "report.md").read_text()
    head = result["metrics"]["headline"]
    first = markdown.splitlines()[:25]
    assert first[2] == "```text" and "```" in first[3:]
    assert result["console_lines"][0] == head["verdict_text"]
    assert result["console_lines"][1] == "achieved %s, target %s" % (head["achieved_text"], head["target_text"])
    for text in [markdown] + result["console_lines"]:
        assert "None" not in text and "e+0" not in text
    assert "capture (no canary ranks): between window, 93.3 s, 33.6 MB written" in "\n".join(result["console_lines"])


def test_a_read_only_bundle_is_left_alone_and_the_output_dir_gets_the_report(baseline, tmp_path):
    out = tmp_path / "reports" / "seed_like_baseline-diagnosis"
    os.chmod(str(baseline), 0o555)
    try:
        before = tree_checksums(str(baseline))
        refused = fail_module(checkpoint_report, {"bundle": str(baseline), "png": False})
        assert refused["msg"] == "report files not written: the bundle directory is read-only: nothing written; set output_dir"
        result = run_module(checkpoint_report, {"bundle": str(baseline), "png": False, "fallback_output_dir": str(out)})
        assert result["output_dir"] == str(out)
        assert sorted(os.listdir(str(out))) == ["report.json", "report.md"]
        assert result["msg"] == "wrote report.md, report.json in %s (the bundle directory is read-only)" % out
        assert tree_checksums(str(baseline)) == before
    finally:
        os.chmod(str(baseline), 0o755)


def test_a_bundle_inside_an_installed_collection_is_never_written(tmp_path):
    root = tmp_path / "collections" / "ansible_collections" / "ckptio" / "nfs"
    bundle = root / "tests" / "fixtures" / "samples" / "bundles" / "seed_like_baseline"
    bundle.parent.mkdir(parents=True)
    shutil.copytree(sample_path("bundles", "seed_like_baseline"), str(bundle))
    before = tree_checksums(str(root))
    assert "inside the installed collection ckptio.nfs" in fail_module(checkpoint_report, {"bundle": str(bundle), "png": False})["msg"]
    out = tmp_path / "project" / "reports" / "seed_like_baseline-diagnosis"
    # diagnosis.json in the output directory is read first: a marker summary shows it was used.
    out.mkdir(parents=True)
    from ansible_collections.ckptio.nfs.plugins.modules import diagnose_bundle
    run_module(diagnose_bundle, {"bundle": str(bundle), "output_dir": str(out)})
    diagnosis = json.loads((out / "diagnosis.json").read_text())
    diagnosis["headline"]["verdict_text"] = "marker: read from the output directory"
    (out / "diagnosis.json").write_text(json.dumps(diagnosis))
    result = run_module(checkpoint_report, {"bundle": str(bundle), "png": False, "output_dir": str(out)})
    assert result["console_lines"][0] == "marker: read from the output directory"
    assert sorted(os.listdir(str(out))) == ["diagnosis.json", "diagnosis.md", "report.json", "report.md"]
    assert tree_checksums(str(root)) == before


def test_report_op_latencies_are_those_of_the_clients_the_diagnosis_used(baseline):
    """Issue 27: the report's per-op figures come from the diagnosis's run, never from a client it excluded.

    nfs3 is nfs2's capture whose after sample holds a remount (age rose, counters reset): the diagnosis
    excludes it; its WRITE latencies must not reach report.md / report.json either.
    """
    from ansible_collections.ckptio.nfs.tests.unit.utils import broken_capture
    nfs3 = baseline / "clients" / "nfs3"
    shutil.copytree(str(baseline / "clients" / "nfs2"), str(nfs3))
    (nfs3 / "mountstats_before.txt").write_text((baseline / "clients" / "nfs2" / "mountstats_after.txt").read_text())
    (nfs3 / "mountstats_after.txt").write_bytes(broken_capture("mountstats_after_remounted_age_rose.txt"))
    clean = run_module(checkpoint_report, {"bundle": str(_copy("seed_like_baseline", baseline.parent / "clean"))})
    result = run_module(checkpoint_report, {"bundle": str(baseline)})
    assert "capture problem on nfs3" in (baseline / "report.md").read_text() or result["metrics"]["summary"]
    assert result["metrics"]["ops"] == clean["metrics"]["ops"]
    assert result["metrics"]["backlog_per_send"] == clean["metrics"]["backlog_per_send"]
