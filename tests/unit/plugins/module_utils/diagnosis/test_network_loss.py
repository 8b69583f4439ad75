"""network_loss: TCP's retransmits and timeouts, interface errors and the probe's retransmits (issue 26).

Synthetic samples cut from the real /proc/net/snmp and /proc/net/netstat format (kernel 6.x
column names and order, trimmed), and the shaped_link lab capture with such counters put in:
loss makes its own network state, "lossy", with the repair as the action.
"""
from __future__ import annotations

import copy

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import network_loss
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path

SNMP_NAMES = ("Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs "
              "OutSegs RetransSegs InErrs OutRsts InCsumErrors\n")
NETSTAT_NAMES = ("TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPLostRetransmit TCPFastRetrans TCPSlowStartRetrans "
                 "TCPTimeouts TCPLossProbes TCPSpuriousRTOs TCPBacklogDrop TCPRcvQDrop\n")


def tcp(out_segs, retrans, timeouts=0, backlog_drop=0, fast=0):
    return {"snmp": SNMP_NAMES + "Tcp: 1 200 120000 -1 30 8 5 0 9 6405 %d %d 0 15 0\n" % (out_segs, retrans),
            "netstat": NETSTAT_NAMES + "TcpExt: 0 0 0 0 %d 0 %d 4 0 %d 0\n" % (fast, timeouts, backlog_drop)}


def sample(time, out_segs, retrans, timeouts=0, **kwargs):
    return {"format": 1, "time": time, "tcp": tcp(out_segs, retrans, timeouts, **kwargs)}


def test_parse_counters_pairs_names_and_values_per_prefix():
    counters = network_loss.parse_counters(SNMP_NAMES + "Tcp: 1 200 120000 -1 30 8 5 0 9 6405 3543 12 0 15 0\n"
                                           "Udp: InDatagrams NoPorts\nUdp: 5 0\n")
    assert counters["Tcp"]["OutSegs"] == 3543 and counters["Tcp"]["RetransSegs"] == 12 and counters["Udp"]["NoPorts"] == 0
    assert counters["Tcp"]["MaxConn"] == -1


def test_window_share_and_timeouts_per_second():
    window = network_loss.tcp_window(sample(100.0, 1000, 0), sample(110.0, 101000, 2100, timeouts=30))
    assert window["retrans_share"] == pytest.approx(0.021) and window["timeouts_per_second"] == pytest.approx(3.0)
    assert network_loss.lossy(window) == (True, True)


def test_a_counter_the_kernel_lacks_is_named_and_the_rest_still_counts():
    before, after = sample(0.0, 0, 0), sample(10.0, 50000, 10)
    for item in (before, after):
        item["tcp"]["netstat"] = "TcpExt: TCPTimeouts\nTcpExt: 0\n"
    window = network_loss.tcp_window(before, after)
    assert "TCPLossProbes" in window["missing"] and "TCPRcvQDrop" in window["missing"]
    assert window["retrans_share"] == pytest.approx(0.0002) and network_loss.lossy(window) == (False, False)


def test_old_samples_without_tcp_are_unmeasured_not_clean():
    window = network_loss.tcp_window({"format": 1, "time": 0}, {"format": 1, "time": 10})
    assert window["measured"] is False and "before they were collected" in window["why"]


def test_few_segments_make_no_share_and_a_reset_no_verdict():
    few = network_loss.tcp_window(sample(0.0, 0, 0), sample(10.0, 200, 20))
    assert network_loss.lossy(few) == (False, False)
    reset = network_loss.tcp_window(sample(0.0, 5000, 50), sample(10.0, 100, 0))
    assert reset["reset"] and network_loss.lossy(reset) == (False, False)


def test_mathis_ceiling():
    # 1448-byte MSS, 20 ms, 2 % loss: 1.22 x 1448 / (0.02 x 0.1414) = 0.63 MB/s per connection.
    assert network_loss.mathis_ceiling(1448, 20.0, 0.02) == pytest.approx(626700, rel=0.01)
    assert network_loss.mathis_ceiling(1448, 20.0, 0.02, connections=4) == pytest.approx(4 * 626700, rel=0.01)
    assert network_loss.mathis_ceiling(1448, 20.0, 0.0) is None


def test_probe_retransmits_against_its_segments():
    lossy = network_loss.probe_loss({"retransmits": 340, "sent_bits_per_second": 4e6, "seconds": 10.0}, mtu=1500)
    assert lossy["segments"] == 3453 and lossy["lossy"]
    clean = network_loss.probe_loss({"retransmits": 0, "sent_bits_per_second": 24e6, "seconds": 10.0})
    assert clean["share"] == 0 and not clean["lossy"]
    assert network_loss.probe_loss({"retransmits": None})["share"] is None


def _bundle_with_loss(client_retrans, server_drop=0, probe_retransmits=None, name="shaped_link"):
    bundle = copy.deepcopy(load_bundle(sample_path("..", "captures", name)))
    for host, files in bundle["clients"].items():
        retrans = client_retrans.get(host, 0)
        samples = files["canary"].get("host_samples") or {}
        for key, value in (("host_before", 0), ("host_after", 1)):
            files[key]["tcp"] = tcp(value * 100000, value * int(retrans * 100000), timeouts=value * 5)
        for key, value in (("start", 0), ("end", 1)):
            if samples.get(key):
                samples[key]["tcp"] = tcp(value * 100000, value * int(retrans * 100000), timeouts=value * 5)
        if probe_retransmits is not None:
            files["probe"]["summary"]["retransmits"] = probe_retransmits
    for files in bundle["servers"].values():
        for key, value in (("host_before", 0), ("host_after", 1), ("host_start", 0), ("host_end", 1)):
            if files.get(key):
                files[key]["tcp"] = tcp(value * 50000, 0, backlog_drop=value * server_drop)
    return bundle


def test_lossy_clients_make_the_network_limit_with_repair_actions_not_rearchitect():
    result = diagnose(_bundle_with_loss({"nfs2": 0.021, "nfs3": 0.023}, probe_retransmits=340))
    assert result["network"]["state"] == "lossy" and result["limiting_layer"] == "network"
    assert result["verdict"] == "tune" and "repair it" in result["summary"]
    assert sorted(result["network"]["loss"]["lossy_hosts"]) == ["nfs2", "nfs3"]
    actions = " ".join(rec["action"] for rec in result["recommendations"])
    assert "repair the path of nfs2" in actions and "several clients lose at once" in actions
    assert not any(rec["layer"] in ("client_rpc_slots", "server_threads", "architecture") for rec in result["recommendations"])
    # The probe through the same lossy path is no ceiling.
    probe_rows = [item for item in result["evidence"] if item["signal"].startswith("TCP probe retransmits")]
    assert probe_rows and all(item["crossed"] for item in probe_rows) and result["network"]["probe_share"] is None


def test_one_lossy_client_names_that_host_only():
    result = diagnose(_bundle_with_loss({"nfs3": 0.05}))
    assert result["network"]["loss"]["lossy_hosts"] == ["nfs3"] and result["limiting_layer"] == "network"
    hosts = [rec.get("host") for rec in result["recommendations"] if rec["setting"] == "repair the lossy path"]
    assert hosts == ["nfs3"]
    assert not result["network"]["loss"]["incast"]


def test_incast_is_several_lossy_clients_and_a_server_that_drops():
    result = diagnose(_bundle_with_loss({"nfs2": 0.03, "nfs3": 0.03}, server_drop=500))
    assert result["network"]["loss"]["incast"] and "incast" in result["network"]["summary"]
    assert "incast" in " ".join(rec["action"] for rec in result["recommendations"])


def test_a_clean_path_leaves_the_diagnosis_as_it_was():
    plain = diagnose(load_bundle(sample_path("..", "captures", "shaped_link")))
    clean = diagnose(_bundle_with_loss({"nfs2": 0.0001}))
    assert clean["network"]["loss"]["state"] == "clean" and clean["limiting_layer"] == plain["limiting_layer"]
    assert "network_loss" in plain["unmeasured"] and "network_loss" not in clean["unmeasured"]
    assert "loss unmeasured" in " ".join(item["explanation"] for item in plain["evidence"])
