"""Issue 43: a layer is named limiting only with evidence of its own resource, never against a measurement
that rules it out, and a fault on one host is that host's to repair (real lab bundles, NOTES.txt in each)."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path

CAPTURES = sample_path("..", "captures")


def _strip_tcp(value):
    """The bundle as it was before host TCP counters existed (issue 26): every sample's "tcp" block removed."""
    if isinstance(value, dict):
        return dict((key, _strip_tcp(item)) for key, item in value.items() if key != "tcp")
    if isinstance(value, list):
        return [_strip_tcp(item) for item in value]
    return value


def without_tcp_counters(name, tmp_path):
    """A copy of a capture with its host samples' TCP counters stripped and figures.json left out (it holds them too)."""
    copy = tmp_path / name
    shutil.copytree(os.path.join(CAPTURES, name), str(copy))
    for folder, _dirs, files in os.walk(str(copy)):
        for file_name in files:
            path = os.path.join(folder, file_name)
            if file_name == "figures.json":
                os.remove(path)
            elif file_name.endswith(".json"):
                with open(path) as handle:
                    data = json.load(handle)
                with open(path, "w") as handle:
                    json.dump(_strip_tcp(data), handle)
    return load_bundle(str(copy))


@pytest.mark.parametrize("name", ["loss_2pct", "loss_5pct"])
def test_the_probe_alone_puts_a_lossy_path_first_when_the_hosts_have_no_tcp_counters(name, tmp_path):
    # Seen on main (224965e): loss_5pct without the counters was "rearchitect / server_storage", because the
    # inflated RTT and slow COMMITs of the lossy path read as the disk's (its busiest disk was 2 % busy).
    result = diagnose(without_tcp_counters(name, tmp_path))
    assert result["limiting_layer"] == "network" and result["network"]["state"] == "lossy"
    assert result["verdict"] == "tune"
    assert "server_storage" not in result["contributing"] and "server_cpu" not in result["contributing"]
    loss = result["network"]["loss"]
    assert sorted(loss["lossy_hosts"]) == ["nfs2", "nfs3"]
    assert all(row.get("source") == "probe" for row in loss["hosts"] if row["host"] in ("nfs2", "nfs3"))
    assert [rec["layer"] for rec in result["recommendations"]][:2] == ["network", "network"]


@pytest.mark.parametrize("name", ["loss_2pct", "loss_5pct"])
def test_a_lossy_path_is_never_read_as_the_servers_storage(name):
    result = diagnose(load_bundle(os.path.join(CAPTURES, name)))
    assert result["limiting_layer"] == "network"
    assert "server_storage" not in result["contributing"]
    storage = [row for row in result["evidence"] if row["layer"] == "server_storage" and row["crossed"]]
    assert not storage, storage


def test_an_idle_disk_rules_the_storage_out_whatever_the_rtt():
    # slow_storage's dm-delay disk was busy: storage stays; healthy's disk was idle: storage is ruled out with its figure.
    assert diagnose(load_bundle(os.path.join(CAPTURES, "slow_storage")))["limiting_layer"] == "server_storage"
    result = diagnose(load_bundle(os.path.join(CAPTURES, "healthy")))
    assert "server_storage" not in [result["limiting_layer"]] + result["contributing"]
    why_not = dict((row["layer"], row["why"]) for row in result["why_not"])
    assert "busiest disk" in why_not["server_storage"] and "% busy" in why_not["server_storage"]


def test_one_slow_path_is_that_hosts_to_repair_not_a_rearchitecture():
    result = diagnose(load_bundle(os.path.join(CAPTURES, "one_shaped")))
    assert result["limiting_layer"] == "network"
    assert result["verdict"] == "tune"
    assert result["scope"]["kind"] == "host" and result["scope"]["hosts"] == ["nfs3"]
    # What the cluster would reach without it: the other hosts' median end instead of nfs3's.
    assert result["scope"]["without_bytes_per_second"] > result["achieved_bytes_per_second"]
    screen = "\n".join(result["first_screen"])
    assert "Re-architect" not in screen and "nfs3" in result["first_screen"][1]


def test_a_cluster_wide_full_path_is_still_a_rearchitecture():
    result = diagnose(load_bundle(os.path.join(CAPTURES, "shaped_link")))
    assert result["limiting_layer"] == "network" and result["verdict"] == "rearchitect"
    assert result["scope"]["kind"] == "cluster"


@pytest.mark.parametrize("name", sorted(os.listdir(CAPTURES)))
def test_every_fixture_names_a_layer_with_its_own_crossed_signal_and_says_why_not_for_the_others(name):
    path = os.path.join(CAPTURES, name)
    if not os.path.isdir(path):
        pytest.skip("not a bundle")
    result = diagnose(load_bundle(path))
    limiting = result["limiting_layer"]
    crossed = set(row["layer"] for row in result["evidence"] if row["crossed"])
    if limiting != "none" and result["confidence"] != "low":
        assert limiting in crossed, "%s named %s without a crossed signal of its own" % (name, limiting)
    ruled_out = dict((row["layer"], row["why"]) for row in result["why_not"])
    assert limiting not in ruled_out
    for layer in ("network", "server_cpu", "client_rpc_slots", "server_threads", "server_storage", "access_pattern", "client_cpu"):
        if layer == limiting or layer in result["contributing"] or layer in result["unmeasured"]:
            continue
        assert layer in ruled_out, "%s: no why-not line for %s" % (name, layer)
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.markdown import render_markdown
    text = render_markdown(result)
    for layer, why in ruled_out.items():
        assert why in text


# Issue 43's own lab captures (scripts/lab-captures.sh, 6.1; NOTES.txt in each has the physical state measured from the
# bundle's own counters): the layer the state explains, never storage or CPU for a lossy path, one host's path that host's.
V43_LOSS = ["v43_loss_2pct", "v43_loss_5pct", "v43_loss_2pct_one", "v43_loss_5pct_one"]


@pytest.mark.parametrize("name", V43_LOSS)
@pytest.mark.parametrize("stripped", [False, True], ids=["counters", "no_counters"])
def test_issue43_loss_captures_name_the_lossy_path_never_storage_or_cpu(name, stripped, tmp_path):
    bundle = without_tcp_counters(name, tmp_path) if stripped else load_bundle(os.path.join(CAPTURES, name))
    result = diagnose(bundle)
    assert result["limiting_layer"] == "network" and result["network"]["state"] == "lossy", result["summary"]
    assert result["verdict"] == "tune"
    named = [result["limiting_layer"]] + result["contributing"]
    assert "server_storage" not in named and "server_cpu" not in named, named


@pytest.mark.parametrize("name", ["v43_loss_2pct_one", "v43_loss_5pct_one"])
def test_issue43_loss_on_one_client_is_that_clients_path(name):
    result = diagnose(load_bundle(os.path.join(CAPTURES, name)))
    assert result["scope"]["kind"] == "host" and result["scope"]["hosts"] == ["nfs3"]
    assert result["network"]["loss"]["lossy_hosts"] == ["nfs3"]
    assert "nfs3" in result["first_screen"][1] and "Re-architect" not in "\n".join(result["first_screen"])
