"""Live kernel state on the lab clients after converge, rollback, a faulty rollout (nfs2 lost
power in the middle of it) and the rollout that finished the job."""
from __future__ import annotations

import os

import testinfra.utils.ansible_runner

testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(
    os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("nfs_clients")


def _int(host, path: str) -> int:
    return int(host.file(path).content_string.strip())


def _mountinfo_options(host, mount_point: str) -> dict:
    """Mount and superblock options of one mount from /proc/self/mountinfo (fields after ' - ')."""
    for line in host.file("/proc/self/mountinfo").content_string.splitlines():
        left, _sep, right = line.partition(" - ")
        fields = left.split()
        if fields[4] != mount_point:
            continue
        fstype, _source, super_options = right.split()[:3]
        options = {"fstype": fstype}
        for item in (fields[5] + "," + super_options).split(","):
            key, _sep, value = item.partition("=")
            options[key] = value if value else True
        return options
    raise AssertionError(f"{mount_point} is not mounted")


def _xprt_lines(host, mount_point: str) -> int:
    """How many `xprt:` lines the mount's mountstats entry has (one per nconnect transport)."""
    count = 0
    inside = False
    for line in host.file("/proc/self/mountstats").content_string.splitlines():
        if line.startswith("device "):
            inside = f" mounted on {mount_point} " in line
        elif inside and line.strip().startswith("xprt:"):
            count += 1
    return count


def test_sunrpc_slot_tables_are_live(host, client_expected):
    sunrpc = client_expected["sunrpc"]
    assert _int(host, "/proc/sys/sunrpc/tcp_max_slot_table_entries") == sunrpc["tcp_max_slot_table_entries"]
    assert _int(host, "/proc/sys/sunrpc/tcp_slot_table_entries") == sunrpc["tcp_slot_table_entries"]


def test_session_slots_are_live(host, client_expected):
    assert _int(host, "/sys/module/nfs/parameters/max_session_slots") == client_expected["sunrpc"]["nfs_max_session_slots"]


def test_mount_has_the_tuned_options_live(host, client_expected):
    wanted = client_expected["mount_options"]
    for mount in client_expected["mounts"]:
        live = _mountinfo_options(host, mount["path"])
        assert live["fstype"] == "nfs4"
        assert live["vers"] == str(wanted["vers"])
        assert live["nconnect"] == str(wanted["nconnect"])
        assert live["rsize"] == str(wanted["rsize"])
        assert live["wsize"] == str(wanted["wsize"])
        assert "hard" in live


def test_one_transport_per_nconnect(host, client_expected):
    for mount in client_expected["mounts"]:
        assert _xprt_lines(host, mount["path"]) == client_expected["mount_options"]["nconnect"]


def test_fstab_carries_the_tuned_options(host, client_expected):
    wanted = client_expected["mount_options"]
    for mount in client_expected["mounts"]:
        lines = [line.split() for line in host.file("/etc/fstab").content_string.splitlines()
                 if line.split()[1:2] == [mount["path"]]]
        assert len(lines) == 1, lines
        options = lines[0][3].split(",")
        assert f"nconnect={wanted['nconnect']}" in options
        assert f"wsize={wanted['wsize']}" in options


def test_rebooted_client_came_back_with_persisted_values(host, client_expected):
    if host.backend.get_hostname() != "nfs2":
        return
    marker = host.file("/root/ckptio-lab-boot-id-before-reboot")
    # side_effect cut nfs2's power in the middle of a rollout (rollout-faults.yml) and finished
    # the rollout after it came back: a new boot id proves this is the boot after the crash.
    assert marker.exists
    assert marker.content_string.strip() != host.file("/proc/sys/kernel/random/boot_id").content_string.strip()
