"""paste/mount_errors.py: mount.nfs's errors (a shell, kubelet's FailedMount events, a CSI driver's log), on real pastes."""
from __future__ import annotations

import os

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import mount_errors, partial, readings
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path

KINDS = sample_path("..", "paste_kinds", "mount_errors")


def _read(name):
    with open(os.path.join(KINDS, name), encoding="utf-8") as handle:
        reading = readings.read_file(name, handle.read())
    return reading, partial.partial_diagnosis([reading])


def test_a_mount_that_timed_out_is_the_path_to_the_server():
    # vagrant-winnfsd#103 ("My firewall blocked the traffic") and dataset-viewer#270 (kubelet's FailedMount events).
    for name in ("vagrant_winnfsd_103_connection_timed_out.txt", "dataset_viewer_270_kubelet_events.txt"):
        reading, result = _read(name)
        fault = result["faults"][0]
        assert fault["name"] == "mount_timed_out" and fault["kind"] == "path", name
        assert "firewall" in fault["what"] and "rpcinfo" in fault["fix"], name
        assert result["partial"]["capture_next"]


def test_a_refused_mount_is_no_service_on_the_port():
    reading, result = _read("ganesha_399_kubelet_connection_refused.txt")
    assert reading["kind"] == "mount_errors"
    assert result["faults"][0]["name"] == "mount_refused" and result["faults"][0]["kind"] == "other"


def test_a_denied_mount_is_the_exports_and_a_missing_helper_the_nodes_packages():
    text = ("mount.nfs: access denied by server while mounting 10.0.0.5:/srv/ckpt\n"
            "mount: wrong fs type, bad option, bad superblock on 10.0.0.5:/srv/ckpt,\n"
            "       (for several filesystems (e.g. nfs, cifs) you might need a /sbin/mount.<type> helper program)\n")
    names = [(finding["fault"]["name"], finding["fault"]["kind"]) for finding in mount_errors.read(text)]
    assert names == [("mount_access_denied", "misconfiguration"), ("mount_helper_missing", "misconfiguration")]
    assert not mount_errors.recognise("mount: /dev/sda1 mounted on /boot.\n")
