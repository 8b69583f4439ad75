"""A client's host evidence is worked out where the client is read (diagnosis/client_evidence.py): the
figures the CPU, link and loss layers made from its host samples, and no sample goes back to the run."""
from __future__ import annotations

import dataclasses

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import client_evidence, run
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.network_loss import tcp_window
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import host_evidence
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path


def _files(name, host):
    return load_bundle(sample_path("..", "captures", name), stream=True)["clients"][host]


def test_canary_samples_give_the_layers_figures_unscaled():
    files = _files("healthy", "nfs2")
    start, end = files["canary"]["host_samples"]["start"], files["canary"]["host_samples"]["end"]
    found = client_evidence.client_evidence("nfs2", files, 5.0)
    assert found.cpu == (host_evidence.cpu_window(start["proc_stat"], end["proc_stat"]), None, client_evidence.CANARY_SAMPLES)
    addresses = end["nfs_server_addresses"]
    assert found.addresses == tuple(addresses)
    assert list(found.links) == [dict(row, host="nfs2", side="client", measured_over=client_evidence.CANARY_SAMPLES)
                                 for row in host_evidence.link_rows(start, end, addresses, "client")]
    assert found.tcp == tcp_window(start, end) and found.tcp_how == "the canary's own samples"


def test_statistics_window_links_are_scaled_to_the_checkpoint():
    files = dict(_files("healthy", "nfs2"))
    files["canary"] = dict(files["canary"], host_samples={})
    before, after = files["host_before"], files["host_after"]
    found = client_evidence.client_evidence("nfs2", files, 1.0)
    assert found.cpu[1:] == (after["time"] - before["time"], client_evidence.STATISTICS_WINDOW)
    assert [row["busy_seconds"] for row in found.links] == [row["busy_seconds"] for row in host_evidence.link_rows(
        before, after, after["nfs_server_addresses"], "client", busy_seconds=1.0)]
    assert all(row["measured_over"] == client_evidence.LINKS_SCALED for row in found.links)
    assert found.tcp_how == client_evidence.STATISTICS_WINDOW


def test_no_samples_no_figures_and_the_probe_without_iperf3_output():
    found = client_evidence.client_evidence("c1", {"probe": {"summary": {}, "iperf3": {"intervals": []}}}, None)
    assert (found.cpu, found.links, found.addresses, found.tcp["measured"]) == (None, (), (), False)
    assert found.probe == {"summary": {}}


def test_the_record_is_frozen_and_holds_no_sample():
    found = client_evidence.client_evidence("nfs2", _files("healthy", "nfs2"), 5.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.cpu = None
    assert "proc_stat" not in repr(found) and "interfaces" not in repr(found)


@pytest.mark.parametrize("context, seconds", [
    ({}, None),
    ({"canary": {"seconds": 12}}, 12.0),
    ({"canary": {"seconds": 12, "drain": {"seconds": 30}}}, 30.0),
    ({"source": "capture", "capture": {"seconds": "7.5"}}, 7.5),
    ({"source": "capture", "capture": {"seconds": "not a number"}}, None),
])
def test_the_runs_seconds_are_known_before_the_clients_are_read(context, seconds):
    assert run._context_checkpoint_seconds(context, context.get("canary") or {}) == seconds
