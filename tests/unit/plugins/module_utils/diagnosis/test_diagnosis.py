"""Diagnosis: the seed arithmetic, both lab bundles, and the decision rules on edited bundles."""
from __future__ import annotations

import copy
import re

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle_values import BundleError
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.run import checkpoint_capacity
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.markdown import render_markdown
from ansible_collections.ckptio.nfs.tests.unit.utils import broken_capture, sample_path


def load(name):
    """A lab bundle, read by the one bundle reader (diagnose_bundle and checkpoint_report use it)."""
    return load_bundle(sample_path("bundles", name))


def crossed(result, layer):
    return [item["signal"] for item in result["evidence"] if item["layer"] == layer and item["crossed"]]


def test_seed_arithmetic():
    capacity = checkpoint_capacity(2.4e12, 300, server_link_gbps=200, client_link_gbps=200, clients=64, observed_bytes_per_second=1.1e9)
    assert capacity["target_bytes_per_second"] == pytest.approx(8e9)
    assert capacity["raw_link_bytes_per_second"] == pytest.approx(25e9)
    assert capacity["practical_link_bytes_per_second"] == pytest.approx(20e9)
    assert capacity["narrowest_link"] == "server_links"
    assert capacity["observed_link_utilisation"] == pytest.approx(0.044)
    assert capacity["network_is_limit"] is False and capacity["network_can_carry_target"] is True
    assert capacity["gap_factor"] == pytest.approx(7.27, abs=0.01)
    assert capacity["per_client_target_bytes_per_second"] == pytest.approx(125e6)
    # Little's law: 8 GB/s of 1 MiB WRITEs ~ 7,600 ops/s, ~76 in flight at 10 ms.
    assert capacity["write_ops_per_second_needed"] == pytest.approx(7629, abs=1)
    assert capacity["requests_in_flight_needed"] == pytest.approx(76.3, abs=0.1)


def test_capacity_without_links_and_bad_input():
    capacity = checkpoint_capacity(1e9, 10)
    assert capacity["raw_link_bytes_per_second"] is None and capacity["network_can_carry_target"] is None
    assert checkpoint_capacity(1e12, 10, server_link_gbps=10)["network_can_carry_target"] is False
    with pytest.raises(BundleError, match="window_seconds"):
        checkpoint_capacity(1e9, 0)
    with pytest.raises(BundleError, match="checkpoint_bytes"):
        checkpoint_capacity("lots", 10)


def test_seed_like_baseline_session_slots_limit():
    result = diagnose(load("seed_like_baseline"))
    assert result["target_bytes_per_second"] == pytest.approx(268435456 / 5.0)
    assert result["achieved_bytes_per_second"] == pytest.approx(268435456 / 13.402)
    assert result["gap_factor"] == pytest.approx(2.68, abs=0.01)
    assert result["limiting_layer"] == "client_rpc_slots"
    assert result["verdict"] == "tune"
    assert "access_pattern" in result["contributing"]
    signals = crossed(result, "client_rpc_slots")
    assert any("zero backlog" in signal for signal in signals)
    assert not crossed(result, "network") or "link saturated (RTT inflated while requests wait to transmit)" not in crossed(result, "network")
    settings = [rec["setting"] for rec in result["recommendations"]]
    assert settings[0] == "nfs max_session_slots"
    assert "wsize" in settings and "nconnect" in settings and "file_per_rank" in settings
    assert "sunrpc tcp_max_slot_table_entries / tcp_slot_table_entries" not in settings
    assert result["clients"]["nfs2"]["max_slots"] == [32]


def test_per_rank_bundle_without_link_evidence_never_names_the_network():
    """RTT 59x idle with requests waiting to send: a full link *or* a slow server. This bundle has no
    interface speed, probe or declared link speed, so the network is unmeasured, never the limit (#11)."""
    result = diagnose(load("shared_vs_perrank_5b_per_rank"))
    assert result["limiting_layer"] == "server_storage"
    assert result["verdict"] == "rearchitect"
    assert result["network"]["state"] == "unmeasured" and "network" in result["unmeasured"]
    assert result["confidence"] == "medium"
    assert any("full link was not ruled out" in reason for reason in result["confidence_reasons"])
    assert not crossed(result, "network")
    symptom = [item for item in result["evidence"] if item["signal"].startswith("send side backs up")][0]
    assert symptom["crossed"] and "not (fully) measured" in symptom["explanation"]
    assert "client_rpc_slots" not in result["contributing"]
    assert "access_pattern" not in result["contributing"]
    settings = [rec["setting"] for rec in result["recommendations"]]
    assert "measure the network" in settings
    assert "more_servers_or_pnfs" in settings and "file_per_rank" not in settings
    assert "unmeasured: network" in result["summary"]


def test_seed_case_not_the_network_and_rearchitect():
    bundle = load("seed_like_baseline")
    bundle["context"] = {"mount_point": "/mnt/nfs", "target": {"checkpoint_bytes": 2.4e12, "window_seconds": 300},
                         "network": {"server_link_gbps": 200, "client_link_gbps": 200, "clients": 64},
                         "canary": {"layout": "shared_file", "ranks": 512, "bytes": 2.4e12, "seconds": 2.4e12 / 1.1e9}}
    result = diagnose(bundle)
    assert result["gap_factor"] == pytest.approx(7.27, abs=0.01)
    network = [item for item in result["evidence"] if item["signal"] == "achieved share of practical link capacity"][0]
    assert network["crossed"] is False and network["value"] == pytest.approx(0.055, abs=1e-3)
    assert result["limiting_layer"] == "client_rpc_slots"
    assert result["verdict"] == "rearchitect"
    settings = [rec["setting"] for rec in result["recommendations"]]
    for alternative in ("file_per_rank", "parallel_fs_or_object_store", "more_servers_or_pnfs", "async_or_burst_buffer"):
        assert alternative in settings
    assert "nfs max_session_slots" in settings


def test_target_met():
    bundle = load("seed_like_baseline")
    bundle["context"]["target"]["window_seconds"] = 60
    result = diagnose(bundle)
    assert result["verdict"] == "meets_target" and result["limiting_layer"] == "none"


def test_v40_backlog_and_tiny_cap_is_tunable():
    bundle = load("seed_like_baseline")
    files = bundle["clients"]["nfs2"]
    for name in ("mountstats_before", "mountstats_after"):
        files[name] = files[name].replace("vers=4.1", "vers=4.0")
    files["mountstats_before"] = files["mountstats_before"].replace("xprt:\ttcp 0 0 2 0 8 30 30 0 30 0 2 0 0", "xprt:\ttcp 0 0 2 0 8 30 30 0 30 0 2 0 0")
    files["mountstats_after"] = files["mountstats_after"].replace("tcp 0 0 2 0 1 4527 4527 0 97268 0 32 17005 88876",
                                                                  "tcp 0 0 2 0 1 4527 4527 0 9000 3500000 2 10 4400")
    files["mountstats_after"] = files["mountstats_after"].replace("WRITE: 4477 4477 0 269402488 823768 21168733 324704 21495131 0",
                                                                  "WRITE: 4477 4477 0 269402488 823768 21168733 124704 21295131 0")
    bundle["context"]["canary"]["layout"] = "file_per_rank"
    bundle["context"]["target"]["window_seconds"] = 1
    result = diagnose(bundle)
    assert result["limiting_layer"] == "client_rpc_slots"
    assert "transport backlog per send (bklog_u/sends, all transports)" in crossed(result, "client_rpc_slots")
    assert result["verdict"] == "tune"
    assert result["tuning_headroom_factor"] > 100
    assert result["recommendations"][0]["setting"].startswith("sunrpc tcp_max_slot_table_entries")


def test_starved_server_threads():
    bundle = load("shared_vs_perrank_5b_per_rank")
    bundle["servers"]["nfs1"]["pool_stats_after"] = "# pool packets-arrived sockets-enqueued threads-woken threads-timedout\n0 89888 89888 85554 0\n"
    bundle["servers"]["nfs1"]["threads"] = "1\n"
    # Fast link: take out the RTT inflation so only the server signal remains.
    bundle["context"]["network"] = {"idle_rtt_ms": 400}
    result = diagnose(bundle)
    assert result["limiting_layer"] == "server_threads"
    rec = [rec for rec in result["recommendations"] if rec["setting"] == "nfsd threads"][0]
    # The shipped checkpoint profile's value (roles/server_tuning, module_utils/config/profiles.py), not a second figure.
    assert rec["value"] == 64


def test_bundle_errors_name_the_problem():
    bundle = load("seed_like_baseline")
    broken = copy.deepcopy(bundle)
    del broken["context"]["target"]["window_seconds"]
    # A target without its window is no target (CONTRACT 2): no verdict against it, every figure still given.
    result = diagnose(broken)
    assert result["verdict"] == "no_target" and result["gap_factor"] is None and result["achieved_bytes_per_second"] > 0
    broken = copy.deepcopy(bundle)
    broken["context"]["target"]["window_seconds"] = "soon"
    with pytest.raises(BundleError, match="target.window_seconds"):
        diagnose(broken)
    broken = copy.deepcopy(bundle)
    broken["context"]["mount_point"] = "/elsewhere"
    with pytest.raises(BundleError, match="no NFS mount on /elsewhere"):
        diagnose(broken)
    broken = copy.deepcopy(bundle)
    del broken["clients"]["nfs2"]["mountstats_before"]
    with pytest.raises(BundleError, match="mountstats_before"):
        diagnose(broken)
    with pytest.raises(BundleError, match="no clients"):
        diagnose({"context": bundle["context"], "clients": {}})


def test_markdown_shows_verdict_evidence_and_recommendations():
    text = render_markdown(diagnose(load("seed_like_baseline")))
    assert text.startswith("```text\nCheckpoint diagnosis of /mnt/nfs\nTune: the gap is 2.7x and tuning client RPC slots ")
    assert "**tune: achieved 20 MB/s of 53.7 MB/s target (gap 2.7x); limiting layer: client_rpc_slots" in text
    assert "| client_rpc_slots | queue time with zero backlog on NFSv4.1 (session slots full) | 4,728 |" in text
    # The checkpoint profile's value (roles/client_tuning), the one source.
    assert "- **nfs max_session_slots = 160**" in text


# ---- link and CPU evidence (#11), on a real lab capture with host samples ----------------------
def load_capture(name, probe=False):
    """A real lab capture; without its probe files unless asked (these tests add their own evidence)."""
    from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
    bundle = load_bundle(sample_path("..", "captures", name))
    for files in bundle["clients"].values():
        if not probe:
            files.pop("probe", None)
    return bundle


def _set_speed(bundle, kind, host, interface, mbps):
    files = bundle[kind][host]
    samples = [files.get("host_before"), files.get("host_after")]
    if kind == "clients":
        samples += list((files["canary"].get("host_samples") or {}).values())
    for sample in samples:
        for name in [interface] + sample["interfaces"][interface]["lower"]:
            sample["interfaces"][name]["speed_mbps"] = mbps


def _speeds(bundle, mbps):
    for host in bundle["clients"]:
        _set_speed(bundle, "clients", host, "lab0", mbps)
    server = bundle["servers"]["nfs1"]
    for port in ("labp2", "labp3"):
        for key in ("host_before", "host_after", "host_start", "host_end"):
            if server.get(key):
                server[key]["interfaces"][port]["speed_mbps"] = mbps


def test_capture_without_speeds_says_the_network_is_unmeasured():
    result = diagnose(load_capture("seed_like_v41"))
    assert result["network"]["state"] == "unmeasured"
    assert "network" in result["unmeasured"] and "server_cpu" not in result["unmeasured"]
    assert [row["interface"] for row in result["network"]["links"]] == ["lab0", "lab0", "lab0"]
    assert "measure the network" in [rec["setting"] for rec in result["recommendations"]]
    assert result["headline"]["links_text"].startswith("links not measured: ")
    assert "Links not measured: no interface speed, probe or declared link speed (run" in render_markdown(result).splitlines()


def test_links_measured_far_from_full_rule_the_network_out_with_the_figure():
    bundle = load_capture("seed_like_v41")
    _speeds(bundle, 10000)
    result = diagnose(bundle)
    assert result["network"]["state"] == "clear" and "network" not in result["unmeasured"]
    ruled_out = [item for item in result["evidence"] if item["signal"] == "links far from full (network ruled out)"][0]
    assert ruled_out["value"] < 0.01
    assert re.search(r"client nfs2 lab0 at \d+\.\d % of 10000 Mb/s", ruled_out["explanation"])
    # the server's bridge carries what its two ports carry: 2 x 10000 Mb/s
    assert re.search(r"server nfs1 lab0 at \d+\.\d % of 20000 Mb/s", ruled_out["explanation"])
    assert result["limiting_layer"] == "client_rpc_slots"
    assert "measure the network" not in [rec["setting"] for rec in result["recommendations"]]
    # The headline names which link its share is (the busiest), with the count it was chosen from.
    assert re.match(r"links: the busiest of 3 NFS link\(s\) at \d+(\.\d+)? % of its nominal", result["headline"]["links_text"])
    assert result["headline"]["link_share"] == ruled_out["value"]


def test_a_link_measured_full_is_the_limit():
    bundle = load_capture("seed_like_v41")
    _speeds(bundle, 5)  # 5 Mb/s: the ~4.4 Mb/s each client sent fills it
    result = diagnose(bundle)
    assert result["network"]["state"] == "full"
    assert result["limiting_layer"] == "network" and result["verdict"] == "rearchitect"
    assert any(signal.startswith("NFS link utilisation on client nfs2 lab0") for signal in crossed(result, "network"))


def test_probe_near_the_nfs_throughput_names_the_network_and_far_rules_it_out():
    bundle = load_capture("seed_like_v41")
    links = dict((row["host"], row["bytes_per_second"]) for row in diagnose(bundle)["network"]["links"] if row["side"] == "client")
    for host in bundle["clients"]:
        # raw TCP carried only 10 % more than NFS put on this client's link during its ranks
        bundle["clients"][host]["probe"] = {"streams": 1, "summary": {"received_bits_per_second": links[host] * 8 * 1.1}}
    result = diagnose(bundle)
    assert result["limiting_layer"] == "network" and result["network"]["probe_share"] == pytest.approx(1 / 1.1, abs=1e-3)
    assert result["tuning_headroom_factor"] == pytest.approx(1.1, abs=1e-3)
    per_path = [item for item in result["evidence"] if item["signal"].startswith("NFS link traffic / TCP capacity of the path")]
    assert len(per_path) == 2 and all(item["crossed"] for item in per_path)
    for host in bundle["clients"]:
        bundle["clients"][host]["probe"]["summary"]["received_bits_per_second"] = links[host] * 8 * 50
    result = diagnose(bundle)
    # The probe measures the whole path: it rules the network out though no interface speed is known.
    assert result["network"]["state"] == "clear" and "network" not in result["unmeasured"]
    assert result["limiting_layer"] == "client_rpc_slots"
    assert result["network"]["probe_share"] == pytest.approx(0.02, abs=1e-3)


def test_a_server_without_idle_cpu_limits_before_the_slots_it_starves():
    bundle = load_capture("seed_like_v41")
    server = bundle["servers"]["nfs1"]
    start, end = server["host_start"], server["host_end"]
    end["time"] = start["time"] + bundle["context"]["canary"]["seconds"]  # sampled right at the last rank's end
    end["sampler_cpu_seconds"] = 0.0
    ticks = int((end["time"] - start["time"]) * 100)
    words = start["proc_stat"].splitlines()[0].split()
    busy = [int(word) for word in words[1:]]
    busy[2] += ticks  # all the checkpoint's ticks went to system time
    line = "cpu  " + " ".join(str(value) for value in busy)
    end["proc_stat"] = line + "\n" + line.replace("cpu  ", "cpu0 ") + "\n"
    result = diagnose(bundle)
    assert result["limiting_layer"] == "server_cpu" and result["verdict"] == "rearchitect"
    # The network is not measured in this bundle (no probe, no speeds): high confidence never rests
    # on "not measured" (issue 23 item 10), and the deciding reason says so.
    assert result["confidence"] == "medium"
    assert result["headline"]["confidence_reason"].startswith("the network was not measured")
    assert "client_rpc_slots" in result["contributing"]
    assert "server CPUs" in [rec["setting"] for rec in result["recommendations"]]


def test_starved_threads_outrank_an_inferred_network():
    """The 1-thread server of #11: RTT inflated with requests waiting to send, 85 % of packets
    without an idle thread, links unmeasured -> server_threads, never network."""
    bundle = load("shared_vs_perrank_5b_per_rank")
    bundle["servers"]["nfs1"]["pool_stats_after"] = "# pool packets-arrived sockets-enqueued threads-woken threads-timedout\n0 89888 89888 13483 0\n"
    bundle["servers"]["nfs1"]["threads"] = "1\n"
    result = diagnose(bundle)
    assert result["limiting_layer"] == "server_threads" and result["verdict"] == "tune"
    assert "network" not in result["contributing"] and "network" in result["unmeasured"]


def test_reconnects_in_the_window_are_flagged_with_the_connection_limit():
    bundle = load("seed_like_baseline")
    files = bundle["clients"]["nfs2"]
    assert "xprt:\ttcp 0 0 2 0 1 4527 " in files["mountstats_after"]
    files["mountstats_after"] = files["mountstats_after"].replace("xprt:\ttcp 0 0 2 0 1 4527 ", "xprt:\ttcp 0 0 5 0 1 4527 ")
    result = diagnose(bundle)
    churn = [item for item in result["evidence"] if item["signal"].startswith("transport connects during the window")][0]
    assert churn["crossed"] is True and churn["value"] == 3
    rec = [rec for rec in result["recommendations"] if rec["setting"] == "nfsd max_connections"][0]
    # connect_count counts a connect's start and its establishment: a rise of 3 is not 3 reconnects.
    assert "connect_count rose by 3 during the checkpoint" in rec["reason"] and "3 transport reconnect(s)" not in rec["reason"]
    assert not [rec for rec in diagnose(load("seed_like_baseline"))["recommendations"] if rec["setting"] == "nfsd max_connections"]


def read_broken(name):
    """A broken capture (tests/fixtures/samples/broken/NOTES.txt), decoded as the modules read files."""
    return broken_capture(name).decode("utf-8", "surrogateescape")


def with_second_client(bundle, **files):
    """The seed bundle plus client nfs3: a copy of nfs2 with some files replaced."""
    bundle["clients"]["nfs3"] = dict(bundle["clients"]["nfs2"], **files)
    return bundle


def capture_problems(result):
    return [item for item in result["evidence"] if item["signal"].startswith("capture problem on ")]


def test_client_whose_after_sample_is_cut_is_excluded_and_named():
    clean = diagnose(load("seed_like_baseline"))
    result = diagnose(with_second_client(load("seed_like_baseline"), mountstats_after=read_broken("mountstats_after_cut_in_write.txt")))
    # The cut WRITE line used to turn tune / client_rpc_slots into rearchitect / access_pattern.
    assert (result["verdict"], result["limiting_layer"]) == (clean["verdict"], clean["limiting_layer"]) == ("tune", "client_rpc_slots")
    assert sorted(result["clients"]) == ["nfs2"]
    assert [(item["host"], item["mount_point"], item["problems"]) for item in result["excluded_clients"]] == [("nfs3", "/mnt/nfs", ["truncated"])]
    [problem] = capture_problems(result)
    assert problem["layer"] is None and problem["signal"] == "capture problem on nfs3" and problem["crossed"] is True
    assert "truncated" in problem["explanation"] and "WRITE" in problem["explanation"] and "excluded" in problem["explanation"]
    assert clean["excluded_clients"] == [] and capture_problems(clean) == []
    assert "capture problem on nfs3" in render_markdown(result)


def test_client_remounted_between_samples_is_excluded_and_achieved_never_negative():
    bundle = with_second_client(load("seed_like_baseline"), mountstats_after=read_broken("mountstats_after_remounted_age_rose.txt"),
                                mountstats_before=load("seed_like_baseline")["clients"]["nfs2"]["mountstats_after"])
    # Without the canary's figure the achieved throughput comes from the mountstats deltas.
    del bundle["context"]["canary"]["bytes"]
    result = diagnose(bundle)
    assert [(item["host"], item["problems"]) for item in result["excluded_clients"]] == [("nfs3", ["reset"])]
    assert result["achieved_bytes_per_second"] == pytest.approx(268435456 / 18.0)
    assert "went backwards" in capture_problems(result)[0]["explanation"]


def test_client_with_a_new_mount_is_excluded():
    bundle = with_second_client(load("seed_like_baseline"), mountstats_before="device proc mounted on /proc with fstype proc\n")
    result = diagnose(bundle)
    assert [(item["host"], item["problems"]) for item in result["excluded_clients"]] == [("nfs3", ["new_mount"])]
    assert sorted(result["clients"]) == ["nfs2"]


def test_no_usable_client_left_is_a_bundle_error_naming_hosts_and_problems():
    bundle = load("seed_like_baseline")
    bundle["clients"]["nfs2"]["mountstats_after"] = read_broken("mountstats_after_cut_in_write.txt")
    with pytest.raises(BundleError, match=r"no usable client.*nfs2.*truncated.*WRITE"):
        diagnose(bundle)
    bundle = with_second_client(load("seed_like_baseline"), mountstats_before="device proc mounted on /proc with fstype proc\n")
    bundle["clients"]["nfs2"]["mountstats_after"] = read_broken("mountstats_after_cut_in_write.txt")
    with pytest.raises(BundleError, match=r"nfs2.*truncated.*nfs3.*new_mount"):
        diagnose(bundle)


def test_duplicate_mounts_on_the_path_use_the_visible_one():
    # The kernel lists mounts in mount order: the last block on a path is the mount that hides the others.
    bundle = load("seed_like_baseline")
    bundle["clients"]["nfs2"]["mountstats_before"] = read_broken("mountstats_duplicates_before.txt")
    bundle["clients"]["nfs2"]["mountstats_after"] = read_broken("mountstats_duplicates_after.txt")
    result = diagnose(bundle)
    assert result["clients"]["nfs2"]["nfs_version"] == "4.2" and result["clients"]["nfs2"]["write_ops"] == 515
    assert result["excluded_clients"] == []


def test_probes_that_did_not_run_at_once_are_flagged_not_summed():
    bundle = load_capture("seed_like_v41")
    for index, host in enumerate(sorted(bundle["clients"])):
        bundle["clients"][host]["probe"] = {"streams": 1, "summary": {
            "received_bits_per_second": 1e9, "start_epoch": 1796112500.0 + 4.0 * index, "seconds": 10.0, "error": None}}
    result = diagnose(bundle)
    spread = [item for item in result["evidence"] if item["signal"] == "TCP probe start spread"][0]
    assert spread["crossed"] and spread["value"] == pytest.approx(4.0)
    # Apart, the probes only bound each path from below: far from full proves nothing.
    assert not [item for item in result["evidence"] if item["signal"] == "NFS throughput / TCP capacity of the path (probe)"]
    assert result["network"]["state"] == "partial" and "network" in result["unmeasured"]
    bundle["clients"]["nfs3"]["probe"] = {"streams": 1, "summary": None, "msg": "iperf3: connection refused"}
    result = diagnose(bundle)
    failed = [item for item in result["evidence"] if item["signal"] == "TCP probe from nfs3"][0]
    assert failed["crossed"] and "connection refused" in failed["explanation"]


@pytest.mark.parametrize("offsets, host_starts, together", [
    # The lab's drift: nfs2's clock 1.27 s behind. Its host-clock start looks 1.3 s early but, on
    # the controller's clock, both sent within 0.03 s of each other.
    ((-1.27, -0.04), (0.0, 1.3), True),
    # The same host-clock starts 0.1 s apart, but the clocks are 2.6 s apart: not at once.
    ((2.5, -0.1), (0.0, 0.1), False),
])
def test_probe_starts_are_compared_on_the_controllers_clock(offsets, host_starts, together):
    bundle = load_capture("seed_like_v41")
    for host, offset, start in zip(sorted(bundle["clients"]), offsets, host_starts):
        bundle["clients"][host]["probe"] = {
            "streams": 1, "started_at": 1796112500.0 + start, "clock": {"offset_seconds": offset},
            # iperf3's own whole-second start is only the fallback.
            "summary": {"received_bits_per_second": 1e9, "start_epoch": 1796112000, "seconds": 10.0, "error": None}}
    result = diagnose(bundle)
    spread = [item for item in result["evidence"] if item["signal"] == "TCP probe start spread"]
    assert (not spread) is together
    assert ("network" in result["unmeasured"]) is (not together)


def test_server_samples_at_the_ranks_start_and_end_replace_the_scaled_window():
    bundle = load_capture("seed_like_v41")
    server = bundle["servers"]["nfs1"]
    start, end = server.pop("host_start"), server.pop("host_end")
    assert diagnose(bundle)["cpu"]["nfs1"]["measured_over"] == "the statistics window"
    server["host_start"], server["host_end"] = start, end
    result = diagnose(bundle)
    row = result["cpu"]["nfs1"]
    assert row["measured_over"] == "the server's samples at the ranks' start and after the last rank ended"
    explanation = [item for item in result["evidence"] if item["signal"] == "CPU busy during the checkpoint on nfs1"][0]["explanation"]
    assert explanation.startswith(row["measured_over"])
    server_link = [link for link in result["network"]["links"] if link["side"] == "server"][0]
    assert server_link["measured_over"].startswith(row["measured_over"])


def test_server_samples_out_of_order_fall_back_to_the_statistics_window_and_say_why():
    # The CI rehearsal's lab, 2026-12-03: on the loaded TCG server the asynchronous sample "at go" ran
    # after the canary's 1.8 s ranks and after the end sample (window -3.927 s, counters "reset"): the
    # server's CPU went unmeasured and its link row had a negative window. A start sample that is not
    # before the end sample measures nothing; the whole statistics window still does (flagged).
    bundle = load_capture("seed_like_v41")
    server = bundle["servers"]["nfs1"]
    server["host_start"], server["host_end"] = server["host_end"], server["host_start"]
    result = diagnose(bundle)
    row = result["cpu"]["nfs1"]
    assert row["measured_over"].startswith("the statistics window")
    assert "was taken after the end sample" in row["measured_over"]
    server_link = [link for link in result["network"]["links"] if link["side"] == "server"][0]
    assert server_link["window_seconds"] > 0 and server_link["measured_over"].startswith("the statistics window")


from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import diagnose as _diagnosis  # noqa: E402


def test_start_note_flags_an_unsynchronized_start_and_unmeasured_clocks():
    assert "not a synchronized checkpoint" in _diagnosis._start_note({"synchronized": False, "start_spread_seconds": 9.35})
    assert "not all measured" in _diagnosis._start_note({"synchronized": True, "clocks_measured": False})
    assert _diagnosis._start_note({}) == ""
    assert _diagnosis._start_block({"synchronized": False, "start_spread_seconds": 2.0})["synchronized"] is False
    loose = {"synchronized": None, "start_spread_seconds": 0.004, "start_spread_uncertainty_seconds": 1.2, "clocks_measured": True}
    assert "not confirmed" in _diagnosis._start_note(loose) and "+/- 1.2 s" in _diagnosis._start_note(loose)
    assert _diagnosis._start_block(loose)["start_spread_uncertainty_seconds"] == 1.2


def _restore_capture():
    return load_bundle(sample_path("..", "captures", "restore_clock_step"))


def test_restore_with_a_target_says_whether_it_meets_it_and_from_what():
    result = diagnose(_restore_capture())
    restore = result["restore"]
    block = _restore_capture()["context"]["restore"]
    assert restore["achieved_bytes_per_second"] == pytest.approx(block["bytes"] / block["seconds"])
    assert restore["target_bytes_per_second"] == pytest.approx(16777216 / 10.0)
    assert restore["verdict"] == "meets_target" and restore["gap_factor"] < 1
    assert "total bytes / (latest end - earliest start)" in restore["achieved_source"]
    assert "meets the restore target" in restore["summary"] and "fadvise" in restore["summary"]
    # The fixture's mountstats are the write-only capture's: no READ seen, said, never invented.
    assert restore["ops"]["READ"]["ops"] == 0 and restore["ops"]["WRITE"]["ops"] > 0
    assert restore["ops"]["READ"]["avg_rtt_ms"] is None  # unmeasured, not 0 ms
    assert "no READ ops" in restore["read_ops_note"]
    markdown = render_markdown(result)
    assert "## Restore (read-back)" in markdown and "| READ | 0 | - | - | - | 0 |" in markdown and "| WRITE |" in markdown


def test_restore_below_its_target_and_without_a_target():
    loaded = _restore_capture()
    loaded["context"]["restore"]["target_window_seconds"] = 0.5
    slow = diagnose(loaded)["restore"]
    assert slow["verdict"] == "below_target" and slow["gap_factor"] > 1 and "below the restore target" in slow["summary"]
    loaded["context"]["restore"]["target_window_seconds"] = None
    none = diagnose(loaded)["restore"]
    assert none["verdict"] == "no_target" and none["target_bytes_per_second"] is None and none["gap_factor"] is None
    assert "no restore target was given" in none["summary"]
    loaded["context"]["restore"].update(verify_error_count=3, synchronized=False, spread_message="start spread 2 s exceeds 1.0 s")
    bad = diagnose(loaded)["restore"]
    assert bad["verdict"] == "failed_verification" and "3 bad blocks" in bad["summary"]
    assert "not a synchronized restore" in bad["summary"]


def test_no_restore_block_no_restore_verdict():
    assert diagnose(load_bundle(sample_path("..", "captures", "clock_step")))["restore"] is None


def test_read_ops_from_the_mountstats_deltas_beside_write():
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import restore as diagnosis
    clients = [{"delta": {"ops": {"READ": {"ops": 10, "avg_rtt_ms": 2.0, "avg_exe_ms": 5.0, "avg_queue_ms": 1.0, "bytes_sent": 1,
                                           "bytes_recv": 10, "retrans": 0, "timeouts": 0, "errors": 0}}}},
               {"delta": {"ops": {"READ": {"ops": 30, "avg_rtt_ms": 4.0, "avg_exe_ms": 9.0, "avg_queue_ms": 3.0, "bytes_sent": 1,
                                           "bytes_recv": 10, "retrans": 1, "timeouts": 0, "errors": 0}}}}]
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.run import op_totals
    ops = diagnosis.restore_op_figures(op_totals(clients))
    assert ops["READ"]["ops"] == 40 and ops["READ"]["avg_rtt_ms"] == pytest.approx((10 * 2 + 30 * 4) / 40.0)
    assert ops["READ"]["avg_queue_ms"] == pytest.approx(2.5) and ops["WRITE"]["ops"] == 0


def test_the_restore_says_from_the_server_read_bytes_whether_the_cache_was_cold():
    """Issue 16: prove the read phase really read from the server (fadvise's DONTNEED is not
    verified by the kernel's contract): the clients' serverreadbytes delta against the bytes read
    back. Every byte from the server is a cold cache; fewer came from the page cache."""
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import restore as diagnosis
    block = {"bytes": 1000, "restore_cache": "fadvise"}
    cold = diagnosis.cold_cache_evidence(block, [{"delta": {"read_bytes": 600}}, {"delta": {"read_bytes": 400}}])
    assert cold == {"server_read_bytes": 1000, "restore_bytes": 1000, "server_share": 1.0, "cold": True,
                    "rests_on": cold["rests_on"]}
    assert "serverreadbytes" in cold["rests_on"]
    warm = diagnosis.cold_cache_evidence(block, [{"delta": {"read_bytes": 100}}])
    assert warm["cold"] is False and warm["server_share"] == pytest.approx(0.1)
    assert diagnosis.cold_cache_evidence(block, [])["cold"] is None  # no client deltas: unmeasured
    assert diagnosis.cold_cache_evidence({"bytes": 0}, [{"delta": {"read_bytes": 5}}])["cold"] is None
    restore = diagnose(_restore_capture())["restore"]
    # The hand-built fixture's mountstats hold no READ: not a cold cache, and said so.
    assert restore["cold_cache"]["cold"] is False and restore["cold_cache"]["server_read_bytes"] == 0


def test_a_burst_buffers_diagnosis_judges_the_drain_to_nfs_not_the_local_write():
    bundle = load("seed_like_baseline")
    canary = bundle["context"]["canary"]
    # The ranks wrote locally in a tenth of the time; the NFS mount took the bytes over the drain's 10x longer span.
    canary["drain"] = {"bytes": canary["bytes"], "seconds": canary["seconds"] * 10, "start": 0.0, "end": canary["seconds"] * 10}
    canary["seconds"] = canary["seconds"] / 10.0
    result = diagnose(bundle)
    assert result["achieved_bytes_per_second"] == pytest.approx(canary["bytes"] / canary["drain"]["seconds"], rel=1e-3)
    assert "drain" in result["achieved_source"]


# A per-op time counter the kernel printed from a negative value: the per-op times are signed ktime
# sums printed unsigned (net/sunrpc/stats.c), so a sum below zero reads 2^64 - x. Such a line was
# captured in the wild: prometheus/procfs's fixture proc/26231/mountstats, ACCESS queue 18446743919241604546.
WRAPPED_MS = "18446743919241604546"


def _with_wrapped_write_time(bundle, host, field):
    files = bundle["clients"][host]
    line = [line for line in files["mountstats_after"].split("\n") if line.strip().startswith("WRITE:")][0]
    values = line.split()
    values[1 + field] = WRAPPED_MS
    files["mountstats_after"] = files["mountstats_after"].replace(line, line[:line.index("WRITE:")] + " ".join(values))
    return bundle


def test_a_negative_time_printed_unsigned_excludes_the_client_and_never_carries_a_verdict():
    clean = diagnose(load("seed_like_baseline"))
    for field in (5, 6, 7):  # queue, RTT, execute
        result = diagnose(_with_wrapped_write_time(with_second_client(load("seed_like_baseline")), "nfs3", field))
        assert sorted(result["clients"]) == ["nfs2"] and (result["verdict"], result["limiting_layer"]) == (clean["verdict"], clean["limiting_layer"])
        (excluded,) = result["excluded_clients"]
        assert excluded["host"] == "nfs3" and excluded["problems"] == ["negative_time"]
        assert WRAPPED_MS in excluded["problem_details"][0] and "printed unsigned" in excluded["problem_details"][0]
        assert not [row for row in result["evidence"] if isinstance(row["value"], (int, float)) and row["value"] > 1e12]


def test_a_negative_time_on_the_only_client_leaves_no_figure_to_judge():
    with pytest.raises(BundleError, match=r"no usable client capture.*\(negative_time\): after sample: WRITE queue time %s ms" % WRAPPED_MS):
        diagnose(_with_wrapped_write_time(load("seed_like_baseline"), "nfs2", 5))
