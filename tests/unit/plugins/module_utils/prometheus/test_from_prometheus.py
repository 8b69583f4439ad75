# -*- coding: utf-8 -*-
"""A verdict from Prometheus is the bundle's verdict (issue 48): real Prometheus answers, the one engine.

A TSDB is made by promtool from OpenMetrics text our own exposition code writes of the fixture captures' real
before/after mountstats (openmetrics_fixture.py), a Prometheus server (Debian's 2.42, $CKPTIO_PROMETHEUS from
scripts/setup.sh) serves it, host/http_get reads its query_range answers, and the bundle they make is diagnosed by
the same diagnose() as the capture itself. The answers are kept in tests/fixtures/prometheus/<case>/ (NOTES.txt),
so the offline half runs without the binary; CKPTIO_WRITE_PROMETHEUS_FIXTURES=1 writes them again.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time

import pytest
import yaml

from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle_part
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
from ansible_collections.ckptio.nfs.plugins.module_utils.host import http_get
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.prometheus import queries, source

from . import openmetrics_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "fixtures"))
SAVED = os.path.join(FIXTURES, "prometheus")
MOUNT = "/mnt/nfs"
# seed_like_v41 is a canary run, capture_dd a real job's window without a canary: with two samples a host (before and
# after, as the fixtures hold) the window is the samples' interval, and these two diagnose the same there.
SAME = ("seed_like_v41", "capture_dd")
# Canary runs whose ranks took a quarter (healthy: 16.5 s of 62 s) or an eighth (one_thread: 7.4 s of 56 s) of the
# interval between their samples: a series with no sample near the ranks' ends dilutes their throughput and CPU over
# the interval, so the verdict from two samples is not the canary's (measured, pinned below): scrapes during the
# checkpoint are what a verdict from Prometheus needs (the lab's run, issue 48).
WIDER = {"healthy": ("server_cpu", "client_rpc_slots"), "one_thread": ("none", "server_threads")}
CASES = SAME + tuple(sorted(WIDER))
# The burst search's grid; a case's own window is asked on a grid of its two edges (each a point holding every
# sample at or before it: two points a series, small fixtures).
STEP = 1.0
PROMETHEUS = os.environ.get("CKPTIO_PROMETHEUS") or ""
PROMTOOL = os.environ.get("CKPTIO_PROMTOOL") or ""


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_ready(url, process, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if process.poll() is not None:
            raise AssertionError("prometheus exited with %s" % process.returncode)
        try:
            if http_get.get(url + "/-/ready", timeout=2)[0] == 200:
                return
        except http_get.HttpRefused:
            pass
        time.sleep(0.3)
    raise AssertionError("prometheus was not ready in %d s" % seconds)


class Servers:
    """One Prometheus a case, started when first asked for (the cases' hosts share names and lie minutes apart: in one
    TSDB one case's last samples would show in the next one's window through the lookback)."""

    def __init__(self, work):
        self.work = work
        self.running = {}

    def __call__(self, case):
        """(url, (first sample's time, last sample's time)) of the case's server."""
        if case not in self.running:
            self.running[case] = self._start(case)
        process, url, window = self.running[case]
        return url, window

    def _start(self, case):
        work = self.work / case
        work.mkdir()
        found = openmetrics_fixture.host_points(os.path.join(FIXTURES, "captures", case), MOUNT)
        text_path = work / "series.om"
        text_path.write_text(openmetrics_fixture.openmetrics(found))
        tsdb = work / "tsdb"
        subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(text_path), str(tsdb)],
                       check=True, capture_output=True, timeout=300)
        config = work / "prometheus.yml"
        config.write_text("global: {}\n")
        port = _free_port()
        process = subprocess.Popen([PROMETHEUS, "--storage.tsdb.path=%s" % tsdb, "--web.listen-address=127.0.0.1:%d" % port,
                                    "--config.file=%s" % config, "--storage.tsdb.retention.time=100y"],
                                   cwd=str(work), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = "http://127.0.0.1:%d" % port
        self.running[case] = (process, url, None)
        _wait_ready(url, process)
        return process, url, openmetrics_fixture.window(found)

    def stop(self):
        for process, _url, _window in self.running.values():
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    if not (PROMETHEUS and os.access(PROMETHEUS, os.X_OK) and PROMTOOL and os.access(PROMTOOL, os.X_OK)):
        pytest.skip("no Prometheus server or promtool: source scripts/activate after scripts/setup.sh "
                    "(CKPTIO_PROMETHEUS, CKPTIO_PROMTOOL from Debian's prometheus package)")
    started = Servers(tmp_path_factory.mktemp("prometheus"))
    try:
        yield started
    finally:
        started.stop()


def fetcher(url):
    def fetch(selector, start, end, step):
        params = {"query": selector, "start": "%.3f" % start, "end": "%.3f" % end, "step": "%g" % step}
        status, text = http_get.get(url + "/api/v1/query_range", params)
        assert status == 200, text
        return text
    return fetch


def _target(case):
    """The capture's own target (context.yml), given to the Prometheus bundle as an operator would."""
    with open(os.path.join(FIXTURES, "captures", case, "context.yml"), encoding="utf-8") as handle:
        target = yaml.safe_load(handle)["target"]
    return target["checkpoint_bytes"], target["window_seconds"]


def write_bundle(directory, url, start, end, label):
    """The bundle prometheus_bundle writes (the same calls: source.request, windows, answers, context_of)."""
    fetch = fetcher(url)
    checkpoint_bytes, window_seconds = _target(label)
    req = source.request(url, MOUNT, start=str(start), end=str(end), step=str(end - start), label=label,
                         checkpoint_bytes=checkpoint_bytes, window_seconds=window_seconds)
    (window,) = source.windows(req, fetch)
    asked, texts = source.answers(req, window, fetch)
    context = source.context_of(req, window, asked)
    os.makedirs(os.path.join(directory, queries.RESPONSES_DIR), exist_ok=True)
    with open(os.path.join(directory, "context.yml"), "w", encoding="utf-8") as handle:
        handle.write(bundle_part.context_text(context))
    for name, _selector in asked:
        with open(os.path.join(directory, queries.RESPONSES_DIR, "%s.json" % name), "w", encoding="utf-8") as handle:
            handle.write(texts[name])
    return context


def _window(pair):
    return pair


def pace_hosts(diagnosis):
    return [item["host"] for item in diagnosis["pace"]["pace"]]


def mountstats_figure(bundle_dir):
    """Write bytes over the longest mount-age interval of the capture's clients: the figure of the same window."""
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.run import read_run
    run = read_run(load_bundle(bundle_dir))
    return (sum(client["delta"]["write_bytes"] for client in run["clients"])
            / max(client["delta"]["interval_seconds"] for client in run["clients"]))


def check_case(case, directory):
    """SAME: the capture's limiting layer and pace-setting hosts; WIDER: the layers measured (canary's, ours). Every
    case: the figure of the same samples' interval (the same bytes over the same seconds)."""
    ours, theirs, same_window = compare(case, directory)
    if case in SAME:
        assert ours["limiting_layer"] == theirs["limiting_layer"]
        assert pace_hosts(ours) == pace_hosts(theirs)
    else:
        assert (theirs["limiting_layer"], ours["limiting_layer"]) == WIDER[case]
    assert abs(ours["achieved_bytes_per_second"] / same_window - 1) < 0.001
    assert ours["capture"]["source"].startswith("series from Prometheus")
    # Two samples a host place no host's end: the pace is not measured, never read off the samples' times.
    assert not ours["pace"]["measured"]
    return ours, theirs


def compare(case, prometheus_dir):
    capture_dir = os.path.join(FIXTURES, "captures", case)
    ours, theirs = diagnose(load_bundle(prometheus_dir)), diagnose(load_bundle(capture_dir))
    return ours, theirs, mountstats_figure(capture_dir)


@pytest.mark.parametrize("case", CASES)
def test_prometheus_answers_make_a_bundle(servers, tmp_path, case):
    url, window = servers(case)
    start, end = _window(window)
    directory = str(tmp_path / case)
    context = write_bundle(directory, url, start, end, case)
    assert context["source"] == "prometheus" and context["prometheus"]["window"]["step"] == end - start
    check_case(case, directory)
    if os.environ.get("CKPTIO_WRITE_PROMETHEUS_FIXTURES") == "1":
        shutil.rmtree(os.path.join(SAVED, case), ignore_errors=True)
        shutil.copytree(directory, os.path.join(SAVED, case), ignore=shutil.ignore_patterns("diagnosis.*"))


def test_a_capture_window_gives_the_captures_throughput(servers, tmp_path):
    """A real job's window (capture_dd, no canary): the figure within 10 % of the capture bundle's own."""
    url, window = servers("capture_dd")
    start, end = _window(window)
    directory = str(tmp_path / "capture_dd")
    write_bundle(directory, url, start, end, "capture_dd")
    ours, theirs, _same = compare("capture_dd", directory)
    assert abs(ours["achieved_bytes_per_second"] / theirs["achieved_bytes_per_second"] - 1) < 0.10


def test_the_last_checkpoint_is_found_as_a_write_burst(servers):
    url, window = servers("healthy")
    start, end = _window(window)
    fetch = fetcher(url)
    req = source.request(url, MOUNT, last=1, range_text="%gs" % (end - start + 60), step="1", now=end + 30)
    (window,) = source.windows(req, fetch)
    assert window["kind"] == "burst"
    # The writes show at the clients' after samples: the burst's edges are the grid points around them.
    assert start <= window["start_at"] < window["end_at"] <= end + 30
    assert "grid" in window["rests_on"]


@pytest.mark.parametrize("case", CASES)
def test_the_saved_answers_diagnose_offline_as_the_capture(case):
    """tests/fixtures/prometheus/<case>: the answers Prometheus gave, diagnosed without it."""
    directory = os.path.join(SAVED, case)
    ours, _theirs = check_case(case, directory)
    with open(os.path.join(directory, "context.yml"), encoding="utf-8") as handle:
        assert "source: prometheus" in handle.read()
    json.dumps(ours)


def playbook(project, *extra):
    """(returncode, stdout and stderr) of playbooks/diagnose.yml run from project, as test_diagnose_playbook_output runs it."""
    from ansible_collections.ckptio.nfs.tests.unit.test_diagnose_playbook_output import run_diagnose_playbook
    done = run_diagnose_playbook(project, *extra)
    return done.returncode, done.stdout + done.stderr


def test_the_playbook_bundles_diagnoses_and_the_bundle_rediagnoses_offline(servers, tmp_path):
    """ckptio.nfs.diagnose -e ckptio_prometheus_url=...: a bundle under the output directory, diagnosed there; the
    same bundle given back with -e ckptio_bundle gives the same diagnosis.json; check mode writes nothing."""
    url, (start, end) = servers("capture_dd")
    project, out = tmp_path / "project", tmp_path / "out"
    project.mkdir()
    options = ["-e", "ckptio_prometheus_url=%s" % url, "-e", "ckptio_checkpoint_mount=%s" % MOUNT,
               "-e", "ckptio_prometheus_start=%d" % start, "-e", "ckptio_prometheus_end=%d" % end,
               "-e", "ckptio_prometheus_step=%d" % (end - start), "-e", "ckptio_output_dir=%s" % out]
    code, text = playbook(project, "--check", *options)
    assert code == 0, text[-3000:]
    assert not out.exists() or not os.listdir(str(out))
    code, text = playbook(project, *options)
    assert code == 0, text[-3000:]
    (label,) = os.listdir(str(out))
    bundle = out / label
    assert sorted(os.listdir(str(bundle))) == ["context.yml", "diagnosis.json", "diagnosis.md", "prometheus"]
    assert "Limiting layer" in text or "Meets the target" in text or "limiting" in text.lower()
    with open(str(bundle / "diagnosis.json"), encoding="utf-8") as handle:
        first = json.load(handle)
    assert first["capture"]["source"].startswith("series from Prometheus")
    again = tmp_path / "again"
    again.mkdir()
    code, text = playbook(project, "-e", "ckptio_bundle=%s" % bundle, "-e", "ckptio_output_dir=%s" % again)
    assert code == 0, text[-3000:]
    with open(str(again / "diagnosis.json"), encoding="utf-8") as handle:
        assert json.load(handle) == first


def test_the_playbook_refuses_a_wrong_option_before_any_request(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    code, text = playbook(project, "-e", "ckptio_prometheus_url=http://127.0.0.1:1", "-e", "ckptio_checkpoint_mount=/mnt/nfs",
                          "-e", "ckptio_prometheus_last=0", "-e", "ckptio_output_dir=%s" % (tmp_path / "out"))
    assert code != 0 and "ckptio_prometheus_last must be 1 to 100" in text
    code, text = playbook(project, "-e", "ckptio_prometheus_url=http://127.0.0.1:1", "-e", "ckptio_output_dir=%s" % tmp_path)
    assert code != 0 and "ckptio_checkpoint_mount" in text


def _saved_diagnosis(name):
    with open(os.path.join(SAVED, name, "diagnosis.json"), encoding="utf-8") as handle:
        return json.load(handle)


# (bundle, the canary's own diagnosis, achieved within, pace measured): bundles ckptio.nfs.diagnose saved of the lab's
# TSDBs (NOTES.txt) over the canary's window, and over the last write burst of the hour before (the grid's edges).
LAB = [("lab_seed_like_v41", "lab_seed_like_v41_canary", 0.10, False), ("lab_healthy", "lab_healthy_canary", 0.10, False),
       ("lab_seed_like_v41_last", "lab_seed_like_v41_canary", 0.15, True)]


@pytest.mark.parametrize("name, canary_name, within, pace_measured", LAB)
def test_the_lab_canary_and_prometheus_on_the_same_checkpoint(name, canary_name, within, pace_measured):
    """The lab's runs (issue 48's "Done when"): a canary while Prometheus scraped every VM every 5 s. The canary's own
    diagnosis.json against the answers ckptio.nfs.diagnose saved for the canary's window: the collector's runs around
    its edges (collector_last_run) give 1.568 MB/s on seed_like_v41 (canary 1.568; 1.52 before, from the grid's edges)
    and 3.870 MB/s on healthy (canary 3.870; 2.13 before: the mount age's 222 s rise divided 268 MB a client, and the
    grid's last point missed the last 2.4 MB). Both runs' edges lie outside the window by more than a tenth of it
    (healthy: nfs2 ran 97.9 s before the start, 49.6 s after the end): distorted_edges, no verdict, and no pace (a
    write span's first or last step wider than a tenth of it). The last write burst of the hour before
    (lab_seed_like_v41_last, the grid's edges): 1.36 MB/s, 13.3 % below - the collectors, starved of their one TCG
    vCPU, published the last 10 MB 12-30 s late, so the burst is 148 s where the ranks took 128 s."""
    canary = _saved_diagnosis(canary_name)
    ours = diagnose(load_bundle(os.path.join(SAVED, name)))
    assert ours["limiting_layer"] == canary["limiting_layer"] == "server_cpu"
    assert pace_hosts(ours) == pace_hosts(canary) == []
    assert canary["pace"]["measured"] and ours["pace"]["measured"] == pace_measured
    assert abs(ours["achieved_bytes_per_second"] / canary["achieved_bytes_per_second"] - 1) < within
    flags = [flag["kind"] for flag in ours["capture"]["flags"]]
    assert ("distorted_edges" in flags) == (not pace_measured) and (ours["verdict"] == "no_target") == (not pace_measured)
    # nfs2 and nfs3 export the server families at 0 threads (nfsd module loaded): clients, not servers
    assert sorted(ours["servers"]) == ["nfs1"]
    # What the series do not count is not measured, never 0: no row on transport connects or metadata ops' share.
    signals = [row["signal"] for row in ours["evidence"]]
    assert not [signal for signal in signals if "connect_count" in signal or signal.startswith("metadata ops' share")]
    assert [signal for signal in signals if signal.startswith("metadata ops' share")] == [] != [
        row for row in canary["evidence"] if row["signal"].startswith("metadata ops' share")]


def test_the_healthy_runs_edges_are_the_collectors_runs():
    """lab_healthy: nfs2's collector did not run from 97.9 s before the window to 49.3 s into it; its last run inside
    was 0.2 s before the end, short of the last 2,359,296 bytes. The edges are said per client."""
    bundle = load_bundle(os.path.join(SAVED, "lab_healthy"))
    deltas = dict((host, bundle["clients"][host][0]["delta"]) for host in bundle["clients"])
    assert [deltas[host]["write_bytes"] for host in ("nfs2", "nfs3")] == [268435456, 268435456]
    edges = deltas["nfs2"]["edges"]
    assert edges["measured_by"] == "collector runs" and not edges["end_missing"]
    assert round(edges["before_start_seconds"], 1) == 97.9 and round(edges["after_end_seconds"], 1) == 49.6


def test_per_op_figures_the_series_lack_are_unmeasured_not_zero():
    """The series count no per-op timeouts or bytes on the wire: diagnosis.json says null for them, where the
    canary's own bundle (mountstats) says 0 timeouts - before, the Prometheus bundle said 0 too, a figure no one
    measured."""
    canary = _saved_diagnosis("lab_seed_like_v41_canary")
    ours = diagnose(load_bundle(os.path.join(SAVED, "lab_seed_like_v41")))
    assert [mount["write_timeouts"] for mount in canary["clients"].values()] == [0, 0]
    assert [mount["write_timeouts"] for mount in ours["clients"].values()] == [None, None]


def test_the_lab_run_with_the_collector_at_the_workload_s_priority():
    """The lab's 2-slot baseline again (2026-12-06 10:53Z, scripts/lab-prometheus.sh, collector without Nice=19): its
    runs lay 0.3-1.6 s before the canary's window and 1.9-3.8 s after it, so the figure carries a verdict - the same
    as the canary's own bundle (v48_bookworm_seed_like_v41_nice0): tune, client RPC slots, 2.33 MB/s both. The pace
    is not measured from the series: a client's first rising step spans 9-11 s of an 80-90 s write span, more than
    signals.EDGE_WIDEN_SHARE of it."""
    ours = diagnose(load_bundle(os.path.join(SAVED, "lab_seed_like_v41_nice0")))
    canary = diagnose(load_bundle(os.path.join(SAVED, "..", "captures", "v48_bookworm_seed_like_v41_nice0")))
    assert (ours["verdict"], ours["limiting_layer"]) == (canary["verdict"], canary["limiting_layer"]) == ("tune", "client_rpc_slots")
    assert abs(ours["achieved_bytes_per_second"] / canary["achieved_bytes_per_second"] - 1) < 0.10
    assert not ours["capture"]["flags"]
    edges = [client["edges"] for client in ours["clients"].values()]
    assert all(edge["measured_by"] == "collector runs" and edge["before_start_seconds"] + edge["after_end_seconds"] < 6
               for edge in edges)
    assert pace_hosts(canary) == [] and not ours["pace"]["measured"]
