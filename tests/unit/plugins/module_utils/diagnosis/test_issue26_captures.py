"""Issue 26 on real lab bundles (tests/fixtures/captures/<case>/NOTES.txt says how each was made):
a lossy path, a mount that missed the tuning, a metadata storm and the host that sets the pace."""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.report import report
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle import canary_ranks
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path


def capture(name):
    return load_bundle(sample_path("..", "captures", name))


def rows(result, prefix):
    return [item for item in result["evidence"] if item["signal"].startswith(prefix)]


def test_loss_2pct_is_a_lossy_network_to_repair_not_rearchitect():
    result = diagnose(capture("loss_2pct"))
    assert result["limiting_layer"] == "network" and result["network"]["state"] == "lossy"
    assert result["verdict"] == "tune" and "rearchitect" not in result["summary"]
    loss = result["network"]["loss"]
    assert sorted(loss["lossy_hosts"]) == ["nfs2", "nfs3"] and not loss["incast"]
    shares = dict((row["host"], row["retrans_share"]) for row in loss["hosts"])
    assert 0.015 < shares["nfs2"] < 0.04 and 0.015 < shares["nfs3"] < 0.04 and shares["nfs1"] < 0.001
    # The probe ran through the same lossy path: its retransmits are counted, it is no ceiling.
    assert loss["probe_lossy"] == ["nfs2", "nfs3"] and result["network"]["probe_share"] is None
    assert all(item["crossed"] for item in rows(result, "TCP probe retransmits"))
    layers = [rec["layer"] for rec in result["recommendations"]]
    assert layers[:3] == ["network"] * 3 and "client_rpc_slots" not in layers and "server_threads" not in layers
    assert "architecture" not in layers
    assert result["first_screen"][1].startswith("Tune: the gap is 3.7x and the path is lossy: repair it")


def test_old_bundles_without_tcp_counters_still_diagnose_and_say_loss_was_unmeasured():
    result = diagnose(capture("shaped_link"))
    assert result["network"]["loss"]["state"] == "unmeasured" and "network_loss" in result["unmeasured"]
    assert result["limiting_layer"] == "network" and result["network"]["state"] == "full"
    assert "loss unmeasured" in rows(result, "TCP loss counters")[0]["explanation"]


def test_the_report_shows_the_retransmitted_share_beside_the_link_share():
    bundle = capture("loss_2pct")
    diagnosis = diagnose(bundle)
    metrics = report.bundle_metrics(bundle["context"], diagnosis, [], canary_ranks(bundle), label="loss_2pct")
    assert metrics["loss_state"] == "lossy" and metrics["retrans_share_max"] == pytest.approx(0.0242, abs=0.001)
    text = report.render_markdown(metrics)
    assert "| TCP segments retransmitted, worst host (loss) | 2.4 % (lossy) |" in text
    footer = report.figure_series(metrics)["links"][0]
    assert "TCP retransmitted 2.4 % (worst host, lossy)" in footer
    before = report.bundle_metrics(capture("shaped_link")["context"], diagnose(capture("shaped_link")), [], label="shaped")
    compared = [row for row in report.comparison_rows(before, metrics) if row["metric"] == "TCP segments retransmitted, worst host"]
    assert compared[0]["before"] is None and compared[0]["after"] == pytest.approx(0.0242, abs=0.001)


def test_old_mount_is_tune_remount_that_host_not_rearchitect():
    result = diagnose(capture("old_mount"))
    assert result["limiting_layer"] == "client_rpc_slots" and result["verdict"] == "tune"
    assert result["mounts"]["nfs3"]["missed_tuning"] and not result["mounts"]["nfs2"]["missed_tuning"]
    assert result["mounts"]["nfs3"]["nconnect"] == 1 and result["mounts"]["nfs3"]["wsize"] == 65536
    assert result["mounts"]["nfs3"]["slot_setting"] == 160 and result["mounts"]["nfs3"]["requests_in_flight"] < 2
    first = result["recommendations"][0]
    assert first["action"] == "remount nfs3: its mount predates the tuning" and "drain" in first["how"]
    # The headroom is the slow host's, not the healthy one's link: it ends with the others.
    assert 2.0 < result["tuning_headroom_factor"] < 2.6 and "nfs3" in result["tuning_headroom_why"]
    assert "nfs max_session_slots" not in [rec["setting"] for rec in result["recommendations"]]


def test_old_mount_names_the_pace_setting_host_and_what_differs():
    result = diagnose(capture("old_mount"))
    pace = result["pace"]["pace"]
    assert [item["host"] for item in pace] == ["nfs3"] and pace[0]["lag_seconds"] > 20
    assert "nconnect 1 vs 4" in pace[0]["differences"] and "wsize 64 KiB vs 1024 KiB" in pace[0]["differences"]
    assert any(line.startswith("Pace set by nfs3 ended") for line in result["first_screen"])


def test_small_files_is_the_access_pattern_with_the_shape_to_change_not_server_storage():
    # 4 ranks per client x 256 files x 4 KiB on the tuned lab (tests/fixtures/captures/small_files/NOTES.txt)
    result = diagnose(capture("small_files"))
    assert result["limiting_layer"] == "access_pattern" and result["limiting_layer"] != "server_storage"
    first = result["recommendations"][0]
    assert first["layer"] == "access_pattern" and first["setting"] == "checkpoint shape"
    # context.yml's canary.ranks counts every rank of every client: 2,048 files over 8 ranks
    assert first["action"].startswith("fewer, larger files per rank: 256 per rank, files of 4 KiB each now")
    assert "own directory" in first["how"]
    # the second way out: the round trips off the ranks' critical path (a burst buffer or an async writer)
    assert result["recommendations"][1]["setting"] == "checkpoint staging"
    assert "drain it to NFS in the background" in result["recommendations"][1]["action"]
    assert "nfs max_session_slots" not in [rec["setting"] for rec in result["recommendations"]]


def test_one_shaped_client_is_named_as_the_pace_setter_with_its_slower_path():
    # only nfs3's lab link shaped to 16 Mbit/s (tests/fixtures/captures/one_shaped/NOTES.txt)
    result = diagnose(capture("one_shaped"))
    assert result["limiting_layer"] == "network"
    pace = result["pace"]["pace"]
    assert [item["host"] for item in pace] == ["nfs3"] and pace[0]["lag_seconds"] > 2
    assert any(text.startswith("its path's TCP capacity (probe)") for text in pace[0]["differences"])
    screen = " ".join(line.strip() for line in result["first_screen"])
    assert "Pace set by nfs3 ended" in screen and "nothing measured differs" not in screen


def test_loss_5pct_is_lossy_not_a_full_link():
    # netem loss 5 % on both clients' lab egress, tuned (tests/fixtures/captures/loss_5pct/NOTES.txt): once called
    # a *full* network, NFS at 70-81 % of the (equally lossy) probe's capacity, with bandwidth advice
    result = diagnose(capture("loss_5pct"))
    assert result["limiting_layer"] == "network" and result["network"]["state"] == "lossy"
    assert result["verdict"] == "tune"
    loss = result["network"]["loss"]
    shares = dict((row["host"], row["retrans_share"]) for row in loss["hosts"])
    assert 0.04 < shares["nfs2"] < 0.07 and 0.04 < shares["nfs3"] < 0.07
    assert loss["probe_lossy"] == ["nfs2", "nfs3"] and result["network"]["probe_share"] is None
    layers = [rec["layer"] for rec in result["recommendations"]]
    assert layers[:3] == ["network"] * 3 and "client_rpc_slots" not in layers and "architecture" not in layers
    assert "faster or more links" not in " ".join(rec.get("action") or "" for rec in result["recommendations"])


def test_one_shaped_first_action_targets_the_shaped_hosts_path_not_every_host():
    # Issue 27: only nfs3's path was shaped (16 Mbit/s, NOTES.txt); nfs2's path had room. Wider links for
    # every host do not make nfs3 end with the others: the first action is nfs3's own path.
    result = diagnose(capture("one_shaped"))
    first = result["recommendations"][0]
    assert (first["layer"], first["host"]) == ("network", "nfs3")
    assert "1.82 MB/s" in first["action"] and "9.93 MB/s" in first["action"]
    assert result["headline"]["actions"][0].startswith("nfs3's network path") and result["headline"]["actions"][0].endswith("on nfs3")
    # A path that is no slower than the others' gets no such action (every host's links are then the network's).
    assert not [rec for rec in diagnose(capture("shaped_link"))["recommendations"] if rec["setting"].endswith("network path")]
