"""nfs_client_stats through its real main() on a fake /proc and /sys tree."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from ansible_collections.ckptio.nfs.plugins.modules import nfs_client_stats
from ansible_collections.ckptio.nfs.tests.unit.utils import broken_capture, fail_module, read_sample, run_module, sample_path, tree_checksums

NCONNECT4 = "mountstats-v41-nconnect4-after-2GiB-write.txt"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


@pytest.fixture
def fake_host(fake_root):
    proc = fake_root.path("/proc")
    write(str(proc / "self" / "mountstats"), read_sample(NCONNECT4))
    write(str(proc / "101" / "stat"), "101 (python3 rank) D 1 101 101 0 -1 0")
    write(str(proc / "101" / "wchan"), "rpc_wait_bit_killable")
    write(str(proc / "102" / "stat"), "102 (bash) S 1 102 102 0 -1 0")
    write(str(proc / "102" / "wchan"), "do_wait")
    write(str(proc / "103" / "stat"), "103 (writer) D 1 103 103 0 -1 0")
    write(str(proc / "103" / "wchan"), "nfs_start_io_write")
    write(str(proc / "sys" / "sunrpc" / "tcp_slot_table_entries"), "2\n")
    write(str(proc / "sys" / "sunrpc" / "tcp_max_slot_table_entries"), "65536\n")
    write(str(fake_root.path("/sys/module") / "nfs" / "parameters" / "max_session_slots"), "64\n")
    return fake_root.root


def test_reads_everything_and_changes_nothing(fake_host):
    before = tree_checksums(str(fake_host))
    result = run_module(nfs_client_stats, {"dstate_samples": 1}, check_mode=True)
    assert tree_checksums(str(fake_host)) == before
    assert result["changed"] is False
    assert result["raw_mountstats"] == read_sample(NCONNECT4)
    mount = result["mounts"][0]
    assert mount["mount_point"] == "/mnt/nfs" and mount["xprt_totals"]["max_slots"] == [12, 9, 25, 10]
    sample = result["dstate"][0]
    assert sample["count"] == 2 and sample["wchans"] == ["rpc_wait_bit_killable", "nfs_start_io_write"]
    assert result["dstate_text"].split(" ", 1)[1] == "2 rpc_wait_bit_killable,nfs_start_io_write\n"
    assert result["sunrpc"] == {"tcp_max_slot_table_entries": "65536", "tcp_slot_table_entries": "2", "max_session_slots": "64"}
    assert result["sunrpc_text"].splitlines() == ["tcp_max_slot_table_entries 65536", "tcp_slot_table_entries 2",
                                                  "# /sys/module/nfs/parameters", "max_session_slots 64"]


def test_mount_point_filter_warns_about_missing(fake_host):
    result = run_module(nfs_client_stats, {"mount_points": ["/mnt/other place"], "dstate_samples": 0})
    assert result["mounts"] == [] and result["dstate"] == [] and result["dstate_text"] == ""
    assert result["missing_mount_points"] == ["/mnt/other place"]


def test_host_without_nfs(fake_host):
    write(str(fake_host / "proc" / "self" / "mountstats"), "device proc mounted on /proc with fstype proc\n")
    shutil.rmtree(str(fake_host / "proc" / "sys" / "sunrpc"))
    shutil.rmtree(str(fake_host / "sys" / "module"))
    result = run_module(nfs_client_stats, {"dstate_samples": 0})
    assert result["mounts"] == [] and result["sunrpc"] == {} and result["sunrpc_text"] == ""


def test_validation_names_the_option(fake_host):
    assert "dstate_samples" in fail_module(nfs_client_stats, {"dstate_samples": -1})["msg"]
    assert "dstate_interval" in fail_module(nfs_client_stats, {"dstate_interval": -0.5})["msg"]


def test_relative_mount_point_is_refused_not_reported_missing(fake_host):
    # "mnt/nfs" names the sample's /mnt/nfs without its slash; it must not silently match nothing.
    message = fail_module(nfs_client_stats, {"mount_points": ["/mnt/nfs", "mnt/nfs"], "dstate_samples": 0})["msg"]
    assert message.startswith("mount_points:") and "'mnt/nfs'" in message and "'/mnt/nfs'" not in message


def test_unreadable_mountstats_fails_clearly(fake_host):
    os.remove(str(fake_host / "proc" / "self" / "mountstats"))
    assert "cannot read" in fail_module(nfs_client_stats, {"dstate_samples": 0})["msg"]


def strict_json(result):
    """The result as Ansible's controller must re-encode it: UTF-8 without lone surrogates."""
    return json.dumps(result, ensure_ascii=False).encode("utf-8")


def test_non_utf8_mount_points_elsewhere_do_not_crash_and_are_shown_escaped(fake_host):
    # A real /proc/self/mountstats line for /data/caf\xe9 (byte 0xE9, not UTF-8): mount points are bytes.
    with open(str(fake_host / "proc" / "self" / "mountstats"), "wb") as handle:
        handle.write(broken_capture("mountstats_non_utf8_mount_points.escaped.txt"))
    # A task whose name (comm, field 2 of stat) is not UTF-8 either.
    os.makedirs(str(fake_host / "proc" / "104"))
    with open(str(fake_host / "proc" / "104" / "stat"), "wb") as handle:
        handle.write(b"104 (caf\xe9 rank) D 1 104 104 0 -1 0")
    write(str(fake_host / "proc" / "104" / "wchan"), "rpc_wait_bit_killable")
    result = run_module(nfs_client_stats, {"dstate_samples": 1})
    strict_json(result)
    assert [mount["mount_point"] for mount in result["mounts"]] == ["/mnt/nfs", "/data/caf\\351"]
    assert result["mounts"][1]["device"] == "10.0.0.1:/srv/caf\\351" and result["mounts"][1]["ops"]["WRITE"]["ops"] == 2048
    assert "device /dev/vdb1 mounted on /data/caf\\351-local with fstype ext4\n" in result["raw_mountstats"]
    assert result["dstate"][0]["count"] == 3
    # The escaped form is what a user can give back in mount_points.
    only = run_module(nfs_client_stats, {"mount_points": ["/data/caf\\351"], "dstate_samples": 0})
    assert [mount["mount_point"] for mount in only["mounts"]] == ["/data/caf\\351"] and only["missing_mount_points"] == []


def test_truncated_block_is_marked(fake_host):
    shutil.copy(sample_path("broken", "mountstats_after_cut_in_write.txt"), str(fake_host / "proc" / "self" / "mountstats"))
    mount = run_module(nfs_client_stats, {"dstate_samples": 0})["mounts"][0]
    assert "WRITE" in mount["truncated"]


def test_dstate_stop_path_ends_sampling_once_the_path_exists(fake_host, monkeypatch):
    marker = fake_host / "shm" / "ckpt-done"
    sleeps = []

    def sleep(seconds):
        # The checkpoint hook touches the marker while the sampler sleeps before its third sample.
        sleeps.append(seconds)
        if len(sleeps) == 2:
            write(str(marker), "")
    monkeypatch.setattr(nfs_client_stats.time, "sleep", sleep)
    result = run_module(nfs_client_stats, {"dstate_samples": 100, "dstate_interval": 0.5, "dstate_stop_path": str(marker)},
                        check_mode=True)
    assert len(result["dstate"]) == 2 and len(result["dstate_text"].splitlines()) == 2
    assert result["dstate_stop"]["path"] == str(marker) and result["dstate_stop"]["seen"] is True
    assert result["dstate_stop"]["seen_at"] >= result["dstate"][-1]["epoch"]
    assert result["changed"] is False


def test_dstate_stop_path_missing_samples_to_the_maximum(fake_host, monkeypatch):
    monkeypatch.setattr(nfs_client_stats.time, "sleep", lambda seconds: None)
    before = tree_checksums(str(fake_host))
    result = run_module(nfs_client_stats, {"dstate_samples": 3, "dstate_interval": 0, "dstate_stop_path": str(fake_host / "absent")},
                        check_mode=True)
    assert tree_checksums(str(fake_host)) == before
    assert len(result["dstate"]) == 3 and result["dstate_stop"] == {"path": str(fake_host / "absent"), "seen": False, "seen_at": None}


def test_dstate_stop_path_present_at_the_start_takes_no_sample(fake_host):
    marker = fake_host / "old-marker"
    write(str(marker), "")
    result = run_module(nfs_client_stats, {"dstate_samples": 5, "dstate_stop_path": str(marker)})
    assert result["dstate"] == [] and result["dstate_stop"]["seen"] is True


def test_without_a_stop_path_dstate_stop_is_null(fake_host):
    assert run_module(nfs_client_stats, {"dstate_samples": 0})["dstate_stop"] is None


def test_samples_keep_their_schedule_whatever_a_pass_costs(fake_host, monkeypatch):
    # Sample i is due interval * i after the first: a slow pass over /proc shortens the next sleep
    # instead of stretching a window planned to end at a given time.
    clock = [1000.0]
    sleeps = []
    monkeypatch.setattr(nfs_client_stats.time, "monotonic", lambda: clock[0])

    def sleep(seconds):
        sleeps.append(round(seconds, 3))
        clock[0] += seconds
    real_scan = nfs_client_stats.dstate_scan.scan

    def slow_scan(proc):
        clock[0] += 0.25
        return real_scan(proc)
    monkeypatch.setattr(nfs_client_stats.time, "sleep", sleep)
    monkeypatch.setattr(nfs_client_stats.dstate_scan, "scan", slow_scan)
    run_module(nfs_client_stats, {"dstate_samples": 3, "dstate_interval": 1.0})
    assert sleeps == [0.75, 0.75]


def test_relative_dstate_stop_path_is_refused(fake_host):
    result = fail_module(nfs_client_stats, {"dstate_samples": 2, "dstate_stop_path": "shm/done"})
    assert "dstate_stop_path" in result["msg"]
