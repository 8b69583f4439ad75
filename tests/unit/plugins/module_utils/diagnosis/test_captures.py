"""The diagnosis on real lab captures with link, CPU and probe evidence (tests/fixtures/captures).

Each bundle was taken by `scripts/lab-captures.sh OUTDIR SCENARIO` on the QEMU lab (NOTES.txt in
each says what was set). Every case is diagnosed twice: as captured, with the TCP probe, and with
the probe's files taken away, as a run without `canary_validation_probe` would have left it.
"""
from __future__ import annotations

import copy

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.markdown import render_markdown
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path


def capture(name, probe=True):
    bundle = load_bundle(sample_path("..", "captures", name))
    if not probe:
        bundle = copy.deepcopy(bundle)
        for files in bundle["clients"].values():
            files.pop("probe", None)
    return bundle


def signal(result, prefix):
    return [item for item in result["evidence"] if item["signal"].startswith(prefix)]


@pytest.mark.parametrize("probe", [True, False], ids=["probe", "no-probe"])
def test_seed_like_v41_baseline_is_the_session_slots(probe):
    result = diagnose(capture("seed_like_v41", probe))
    assert result["limiting_layer"] == "client_rpc_slots" and result["verdict"] == "tune"
    assert signal(result, "queue time with zero backlog")[0]["crossed"]
    if probe:
        # The probe carried ~10x what NFS moved: the network is ruled out, with the figure.
        assert result["network"]["state"] == "clear" and result["network"]["probe_share"] < 0.5
        assert "network" not in result["unmeasured"]
        # The first screen names the measurement (CONTRACT 3); no stutter ("Links: links").
        assert result["headline"]["links_text"].startswith("links: NFS at ")
        assert any(line.startswith("Links: NFS at ") for line in render_markdown(result).splitlines()[:25])
    else:
        assert result["network"]["state"] == "unmeasured" and "network" in result["unmeasured"]
    assert "network" not in result["contributing"]


@pytest.mark.parametrize("probe", [True, False], ids=["probe", "no-probe"])
def test_healthy_tuned_lab_is_cpu_bound_not_the_network(probe):
    """Tuned, one vCPU per VM under TCG: the server's CPU, never the (virtual, unmeasured) link."""
    result = diagnose(capture("healthy", probe))
    assert result["limiting_layer"] == "server_cpu"
    assert result["confidence"] == "medium"  # the server share is an upper estimate, and says so
    assert any("upper estimate" in reason for reason in result["confidence_reasons"])
    assert "network" not in result["contributing"]
    assert result["network"]["state"] == ("clear" if probe else "unmeasured")


@pytest.mark.parametrize("probe", [True, False], ids=["probe", "no-probe"])
def test_one_thread_server_is_starved_threads_never_the_network(probe):
    bundle = capture("one_thread", probe)
    # On one vCPU one nfsd thread met the lab's small target (docs/lab.md: 1 thread ran faster
    # than 8 there); the starvation still shows.
    result = diagnose(bundle)
    assert result["verdict"] == "meets_target"
    starved = signal(result, "packets that found no idle nfsd thread")[0]
    assert starved["crossed"] and starved["value"] >= 0.5
    # Ask for four times the throughput: the starved threads are the limit, not the network.
    bundle["context"]["target"]["window_seconds"] = bundle["context"]["target"]["window_seconds"] / 4.0
    result = diagnose(bundle)
    assert result["limiting_layer"] == "server_threads"
    if probe:
        # NFS moved ~70 % of what the probe carried on each path while the send side backed up:
        # the link is measured "busy", so it contributes - it is not the limit.
        assert result["network"]["state"] == "busy" and "network" in result["contributing"]
    else:
        assert "network" not in result["contributing"] and "network" in result["unmeasured"]
    rec = [rec for rec in result["recommendations"] if rec["setting"] == "nfsd threads"][0]
    assert "more threads cannot run" in rec["reason"]  # the CPU was busy too, and the advice says so


@pytest.mark.parametrize("probe", [True, False], ids=["probe", "no-probe"])
def test_slow_storage_with_idle_threads_is_the_storage(probe):
    result = diagnose(capture("slow_storage", probe))
    assert result["limiting_layer"] == "server_storage" and result["verdict"] == "rearchitect"
    disk = signal(result, "busiest disk on nfs1 (dm-0)")[0]
    assert disk["crossed"] and disk["value"] >= 0.8
    assert signal(result, "packets that found no idle nfsd thread")[0]["value"] < 0.1
    assert "network" not in result["contributing"]
    if probe:
        # The two clients' probes started 4 s apart (slow launches under TCG): flagged, not summed,
        # and a path that looks far from full then proves nothing: the network stays partial.
        assert signal(result, "TCP probe start spread")[0]["crossed"]
        assert result["network"]["state"] == "partial" and "network" in result["unmeasured"]


@pytest.mark.parametrize("probe", [True, False], ids=["probe", "no-probe"])
def test_shaped_link_is_the_network_only_with_the_probe(probe):
    """Each client's link shaped to 24 Mbit/s: the probe shows NFS carrying ~87 % of what raw TCP
    carried on the same path (interface bytes during the ranks vs iperf3), so the network is the
    limit. Without the probe nothing measures the virtio link: the network is unmeasured, never
    named, and the verdict says it rests on less (medium confidence)."""
    result = diagnose(capture("shaped_link", probe))
    if probe:
        assert result["limiting_layer"] == "network" and result["verdict"] == "rearchitect"
        assert result["confidence"] == "high"
        per_path = signal(result, "NFS link traffic / TCP capacity of the path on client")
        assert len(per_path) == 2 and all(item["crossed"] and item["value"] >= 0.8 for item in per_path)
        assert "NFS at 8" in result["headline"]["links_text"] and "the network is the limit" in result["headline"]["links_text"]
        # A full network: the network's own actions first, never nfsd threads (issue 23 item 4).
        assert [rec["layer"] for rec in result["recommendations"][:3]] == ["network"] * 3
        assert "nfsd threads" not in result["headline"]["actions"][0]
        assert "still tune" not in result["headline"]["verdict_text"]
    else:
        assert result["limiting_layer"] != "network" and "network" in result["unmeasured"]
        assert result["confidence"] == "medium"
        assert "measure the network" in [rec["setting"] for rec in result["recommendations"]]


def test_a_client_clock_3_s_ahead_still_starts_together_on_the_controllers_clock():
    """clock_step: nfs3's clock stepped 3 s ahead before the run (molecule/lab/evidence.yml)."""
    bundle = capture("clock_step")
    offsets = dict((host, files["canary"]["clock"]["offset_seconds"]) for host, files in bundle["clients"].items())
    assert offsets["nfs3"] - offsets["nfs2"] == pytest.approx(2.06, abs=0.05)
    ranks = canary.combine_hosts(dict((host, files["canary"]["ranks"]) for host, files in bundle["clients"].items()),
                                 dict((host, files["canary"]["clock"]) for host, files in bundle["clients"].items()))
    corrected = canary.cluster_aggregate(ranks)
    raw = canary.cluster_aggregate(canary.combine_hosts(dict((host, files["canary"]["ranks"]) for host, files in bundle["clients"].items())))
    # On each host's own clock the ranks look 2 s apart; on the controller's they started together,
    # as far as clocks bracketed to +/- 0.25 s each can tell.
    assert raw["start_spread_seconds"] > 2.0 and raw["synchronized"] is False
    assert corrected["start_spread_seconds"] < 0.05
    assert corrected["start_spread_uncertainty_seconds"] == pytest.approx(0.247217 + 0.225316)
    assert corrected["synchronized"] is True
    result = diagnose(bundle)
    assert result["achieved_source"] == ("canary: total bytes / (latest end - earliest start), the rule MLPerf Storage states, "
                                         "not the figure it publishes (size / rank 0's own time)")
    # The probes too: started_at 2.06 s apart on the host clocks, together once corrected.
    assert not signal(result, "TCP probe start spread")
    assert "network" not in result["unmeasured"]


def test_every_capture_names_the_links_and_cpus_it_measured():
    for name in ("seed_like_v41", "healthy", "one_thread", "slow_storage", "shaped_link", "clock_step"):
        result = diagnose(capture(name))
        assert sorted(result["cpu"]) == ["nfs1", "nfs2", "nfs3"], name
        assert result["cpu"]["nfs1"]["measured_over"] == "the server's samples at the ranks' start and after the last rank ended"
        sides = sorted((row["side"], row["host"], row["interface"]) for row in result["network"]["links"])
        assert sides == [("client", "nfs2", "lab0"), ("client", "nfs3", "lab0"), ("server", "nfs1", "lab0")], name


# --- issue 16: a real restore and a real job's capture from the lab (NOTES.txt in each) ---

def test_a_real_fadvise_restore_read_every_byte_from_the_server():
    """On Debian 12's 6.1 NFS client, POSIX_FADV_DONTNEED after fsync emptied the page cache: the
    clients' serverreadbytes delta equals the bytes read back (the issue asked to check it)."""
    result = diagnose(load_bundle(sample_path("..", "captures", "restore_fadvise")))
    restore = result["restore"]
    assert restore["verdict"] == "no_target" and restore["restore_cache"] == "fadvise"
    assert restore["cold_cache"]["cold"] is True
    assert restore["cold_cache"]["server_read_bytes"] == restore["cold_cache"]["restore_bytes"] == 16777216
    assert restore["ops"]["READ"]["ops"] == 16  # 16 MiB in 1 MiB READs (rsize=1048576)
    assert restore["verify_error_count"] == 0 and restore["synchronized"] is not False


def test_a_real_capture_of_a_dd_outside_ansible_counts_exactly_its_bytes():
    bundle = load_bundle(sample_path("..", "captures", "capture_dd"))
    assert bundle["context"]["source"] == "capture" and bundle["context"]["capture"]["kind"] == "between"
    result = diagnose(bundle)
    window = bundle["context"]["capture"]
    assert window["server_write_bytes"] == 2 * 16 * 1048576
    assert result["achieved_bytes_per_second"] == pytest.approx(window["server_write_bytes"] / window["seconds"], rel=1e-3)
    assert "no canary ranks" in result["achieved_source"]
    assert all("canary" not in files for files in bundle["clients"].values())


def test_a_warm_read_of_a_shared_file_two_clients_wrote_is_cold_anyway():
    """restore_cache=none on the lab's shared file: close-to-open made every read go to the server,
    and the measurement says so instead of trusting the method's name."""
    result = diagnose(load_bundle(sample_path("..", "captures", "restore_none_shared")))
    cold = result["restore"]["cold_cache"]
    assert result["restore"]["restore_cache"] == "none"
    assert cold["cold"] is True and cold["server_read_bytes"] == cold["restore_bytes"] == 16777216
    assert result["restore"]["ops"]["READ"]["ops"] == 256  # 64 KiB READs: the lab's untuned rsize


def test_a_warm_read_of_files_one_client_wrote_is_caught_as_not_cold():
    """The other half of issue 16's cold/warm proof: no READ reached the server, and the diagnosis
    says the restore was not from a cold cache."""
    result = diagnose(load_bundle(sample_path("..", "captures", "restore_none_per_rank")))
    cold = result["restore"]["cold_cache"]
    assert cold["cold"] is False and cold["server_read_bytes"] == 0 and cold["restore_bytes"] == 16777216
    assert result["restore"]["ops"]["READ"]["ops"] == 0
    assert "NOT cold" in render_markdown(result)
