"""The nfs_stats filters, as Jinja would call them."""
from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.filter.nfs_stats import FilterModule
from ansible_collections.ckptio.nfs.tests.unit.utils import read_sample

FILTERS = FilterModule().filters()
SEED = ("bundles", "seed_like_baseline")


def test_all_filters_exposed():
    assert sorted(FILTERS) == ["checkpoint_capacity", "mountstats_delta", "nfs_diagnosis", "nfsd_delta"]


def test_mountstats_delta_on_text_and_module_results():
    after = read_sample(*SEED, "clients", "nfs2", "mountstats_after.txt")
    before = read_sample(*SEED, "clients", "nfs2", "mountstats_before.txt")
    from_text = FILTERS["mountstats_delta"](after, before)
    from_results = FILTERS["mountstats_delta"]({"raw_mountstats": after}, {"raw_mountstats": before}, mount_points=["/mnt/nfs"])
    assert from_text == from_results
    assert from_text[0]["ops"]["WRITE"]["ops"] == 4477
    with pytest.raises(AnsibleFilterError, match="raw_mountstats"):
        FILTERS["mountstats_delta"]({"mounts": []})
    with pytest.raises(AnsibleFilterError, match="interval_seconds"):
        FILTERS["mountstats_delta"](after, before, interval_seconds=0)


def test_nfsd_delta_with_pool_stats_from_results():
    def read(name):
        return read_sample(*SEED, "servers", "nfs1", name)
    result = FILTERS["nfsd_delta"]({"raw_nfsd": read("nfsd_after.txt"), "raw_pool_stats": read("pool_stats_after.txt")},
                                   {"raw_nfsd": read("nfsd_before.txt"), "raw_pool_stats": read("pool_stats_before.txt")})
    assert result["io_bytes_written"] == 268435456
    assert result["pool_stats"]["totals"]["packets-arrived"] == 7068
    assert FILTERS["nfsd_delta"](read("nfsd_after.txt"), read("nfsd_before.txt"))["pool_stats"] is None


def test_checkpoint_capacity_seed():
    result = FILTERS["checkpoint_capacity"](2.4e12, 300, server_link_gbps=200, observed_bytes_per_second=1.1e9)
    assert result["target_bytes_per_second"] == pytest.approx(8e9)
    assert result["practical_link_bytes_per_second"] == pytest.approx(20e9)
    assert result["network_is_limit"] is False
    with pytest.raises(AnsibleFilterError, match="window_seconds"):
        FILTERS["checkpoint_capacity"](2.4e12, -1)


def test_nfs_diagnosis_from_memory():
    bundle = {"context": {"mount_point": "/mnt/nfs", "target": {"checkpoint_bytes": 268435456, "window_seconds": 5}},
              "clients": {"nfs2": {"mountstats_before": read_sample(*SEED, "clients", "nfs2", "mountstats_before.txt"),
                                   "mountstats_after": read_sample(*SEED, "clients", "nfs2", "mountstats_after.txt")}}}
    result = FILTERS["nfs_diagnosis"](bundle)
    # Without a canary the achieved rate is NFS WRITE bytes over the mount age delta (18 s).
    assert result["achieved_bytes_per_second"] == pytest.approx(268435456 / 18.0)
    assert result["achieved_source"].startswith("NFS WRITE bytes")
    assert result["limiting_layer"] == "client_rpc_slots"
    with pytest.raises(AnsibleFilterError, match="mount_point"):
        FILTERS["nfs_diagnosis"]({"context": {"target": {"checkpoint_bytes": 1, "window_seconds": 1}}, "clients": {"a": {}}})
    with pytest.raises(AnsibleFilterError, match="expected a dict"):
        FILTERS["nfs_diagnosis"]("text")


@pytest.mark.parametrize("context, probe, words", [
    ({"mount_point": "/mnt/nfs", "target": {"checkpoint_bytes": 1, "window_seconds": float("nan")}}, None,
     ["context.yml", "target.window_seconds"]),
    ({"mount_point": ["/a"], "target": {"checkpoint_bytes": 1, "window_seconds": 1}}, None, ["context.yml", "mount_point"]),
    ({"mount_point": "/mnt/nfs", "target": {"checkpoint_bytes": 1, "window_seconds": 1}}, {"summary": "fast"},
     ["clients/nfs2/probe.json", "summary"]),
], ids=["nan", "list-for-a-string", "probe-summary-string"])
def test_nfs_diagnosis_checks_the_same_schema_as_a_bundle_on_disk(context, probe, words):
    """Issue 24 item 6: an in-memory bundle is held to the schema bundle/bundle_values.py applies to files."""
    files = {"mountstats_before": read_sample(*SEED, "clients", "nfs2", "mountstats_before.txt"),
             "mountstats_after": read_sample(*SEED, "clients", "nfs2", "mountstats_after.txt")}
    if probe is not None:
        files["probe"] = probe
    with pytest.raises(AnsibleFilterError) as raised:
        FILTERS["nfs_diagnosis"]({"context": context, "clients": {"nfs2": files}})
    for word in words:
        assert word in str(raised.value)
