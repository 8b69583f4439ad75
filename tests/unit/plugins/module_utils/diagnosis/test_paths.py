"""Several NFS paths (diagnosis/paths.py, run.py): every path's mountstats read, judged together, figures per path and in total."""
from __future__ import annotations

import copy

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import paths
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.markdown import render_markdown
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle_values import BundleError
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.stats_delta import mountstats_delta
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path


def _second_mount(text, point="/mnt/nfs-b", device="10.0.0.1:/srv/nfs-b"):
    """The file's /mnt/nfs block again as a second mount (a second export): the same counters on another path."""
    block = text[text.index("device "):]
    return text + "\n" + block.replace(" on /mnt/nfs ", " on %s " % point).replace("10.0.0.1:/srv/nfs ", device + " ")


def _two_path_bundle():
    bundle = load_bundle(sample_path("bundles", "seed_like_baseline"))
    for files in bundle["clients"].values():
        for name in ("mountstats_before", "mountstats_after"):
            files[name] = _second_mount(files[name])
    return bundle


def test_merged_delta_sums_ops_and_bytes_and_reweights_the_averages():
    bundle = _two_path_bundle()
    files = next(iter(bundle["clients"].values()))
    one, two = mountstats_delta(files["mountstats_after"], files["mountstats_before"], mount_points=["/mnt/nfs", "/mnt/nfs-b"])
    merged = paths.merge_deltas([one, two])
    assert merged["write_bytes"] == 2 * one["write_bytes"]
    assert merged["ops"]["WRITE"]["ops"] == 2 * one["ops"]["WRITE"]["ops"]
    assert merged["ops"]["WRITE"]["avg_rtt_ms"] == pytest.approx(one["ops"]["WRITE"]["avg_rtt_ms"])
    # The transport is the first path's (two exports of one server share one client): never counted twice.
    assert merged["rpc"] == one["rpc"] and merged["mount_point"] == "/mnt/nfs, /mnt/nfs-b"


def test_the_diagnosis_reads_every_path_and_gives_figures_per_path_and_in_total():
    one_path = diagnose(load_bundle(sample_path("bundles", "seed_like_baseline")))
    bundle = _two_path_bundle()
    bundle["context"]["canary"]["mount_points"] = ["/mnt/nfs", "/mnt/nfs-b"]
    result = diagnose(bundle)
    rows = dict((row["mount_point"], row) for row in result["paths"]["paths"])
    assert sorted(rows) == ["/mnt/nfs", "/mnt/nfs-b"]
    total = result["paths"]["total"]
    assert total["write_bytes"] == rows["/mnt/nfs"]["write_bytes"] * 2 and total["write_ops"] == rows["/mnt/nfs-b"]["write_ops"] * 2
    assert rows["/mnt/nfs"]["write_avg_rtt_ms"] > 0 and total["clients"] == rows["/mnt/nfs"]["clients"]
    # Only the first path's statistics were read before: one path's figures stay as they were.
    assert "paths" not in one_path
    assert "## Per NFS path" in render_markdown(result) and "| total |" in render_markdown(result)


def test_an_unusable_second_path_excludes_the_client_naming_that_path():
    bundle = _two_path_bundle()
    bundle["context"]["canary"]["mount_points"] = ["/mnt/nfs", "/mnt/nfs-b"]
    host = sorted(bundle["clients"])[0]
    files = bundle["clients"][host]
    # The second mount's block missing from the before sample: mounted during the window.
    files["mountstats_before"] = files["mountstats_before"][:files["mountstats_before"].rindex("\ndevice ")] + "\n"
    # The seed bundle's one client: excluded, nothing is left to diagnose, and the error names the path.
    with pytest.raises(BundleError, match=r"%s /mnt/nfs-b \(new_mount\)" % host):
        diagnose(copy.deepcopy(bundle))
