"""Host evidence: /proc/stat, /proc/diskstats, /proc/net tables and sysfs links, on real lab text."""
from __future__ import annotations

import copy

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import host_evidence
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path

CAPTURE = "seed_like_v41"


def host_file(kind, host, name, capture=CAPTURE):
    """A host sample of a lab capture, as the one bundle reader loads it (its key is the file name without .json)."""
    return load_bundle(sample_path("..", "captures", capture))[kind][host][name[:-len(".json")]]


@pytest.fixture
def server():
    return host_file("servers", "nfs1", "host_before.json"), host_file("servers", "nfs1", "host_after.json")


@pytest.fixture
def client():
    return host_file("clients", "nfs2", "host_before.json"), host_file("clients", "nfs2", "host_after.json")


def test_proc_stat_shares_add_up_and_a_reboot_is_flagged(server):
    before, after = server
    window = host_evidence.cpu_window(before["proc_stat"], after["proc_stat"])
    assert window["reset"] is False and window["cpus"] == 1
    parts = window["user"] + window["system"] + window["softirq"] + window["iowait"] + window["steal"] + window["idle"]
    assert parts == pytest.approx(1.0)
    assert window["busy"] == pytest.approx(1.0 - window["idle"] - window["iowait"])
    assert window["busiest_cpu"]["name"] == "cpu0"
    # after and before swapped: the ticks went backwards, as after a reboot
    assert host_evidence.cpu_window(after["proc_stat"], before["proc_stat"]) == {"reset": True, "cpus": 1}
    assert host_evidence.cpu_window("", after["proc_stat"]) is None


def test_diskstats_busy_share_skips_loop_devices(server):
    before, after = server
    seconds = after["time"] - before["time"]
    rows = host_evidence.disk_window(before["diskstats"], after["diskstats"], seconds)
    assert [row["device"] for row in rows] == ["vda"]
    assert 0 <= rows[0]["busy"] <= 1 and rows[0]["writes"] > 0 and rows[0]["bytes_written"] % 512 == 0


def test_route_and_address_tables_of_the_lab(server, client):
    # The client reaches the server 10.0.0.1 over lab0 (connected route 10.0.0.0/24, no gateway);
    # the default route leaves by mgmt0 through 10.0.2.2.
    assert host_evidence.route_to(client[1], "10.0.0.1") == ("lab0", None)
    assert host_evidence.route_to(client[1], "192.0.2.9") == ("mgmt0", "10.0.2.2")
    # The server holds 10.0.0.1 on its bridge lab0 (fib_trie LOCAL + the connected route).
    assert host_evidence.holder_of(server[1], "10.0.0.1") == "lab0"
    assert host_evidence.holder_of(server[1], "10.0.0.2") is None
    assert host_evidence.parse_fib_trie_locals(server[1]["net"]["fib_trie"]) == {"10.0.0.1", "10.0.2.15", "127.0.0.1"}
    # IPv6: the link-local address of lab0 is held by lab0, and a route to the fe80::/64 goes there too.
    held = host_evidence.parse_if_inet6(server[1]["net"]["if_inet6"])
    lab0_v6 = [address for address, name in held.items() if name == "lab0"][0]
    assert host_evidence.holder_of(server[1], lab0_v6) == "lab0"
    assert host_evidence.route_to(server[1], "fec0::9")[0] == "mgmt0"
    assert host_evidence.route_to(server[1], "not-an-address") == (None, None)


def test_the_servers_bridge_and_its_ports_carry_the_nfs_bytes(server):
    before, after = server
    rows = host_evidence.link_rows(before, after, ["10.0.0.1"], "server", busy_seconds=60.0)
    assert [row["interface"] for row in rows] == ["lab0"]
    row = rows[0]
    assert row["kind"] == "bridge" and row["members"] == ["labp2", "labp3"]
    # virtio reports speed -1: unknown, never 0, so no utilisation is claimed
    assert row["speed_mbps"] is None and row["utilisation"] is None
    assert row["speed_source"] == "lab0 members without a known speed: labp2, labp3"
    assert row["rx_bytes"] > 64 * 2 ** 20  # the 64 MiB checkpoint crossed it


def _with_speeds(sample, speeds):
    sample = copy.deepcopy(sample)
    for name, speed in speeds.items():
        sample["interfaces"][name]["speed_mbps"] = speed
    return sample


def test_capacity_of_a_bridge_is_its_ports_and_unknown_members_say_so(server):
    after = server[1]
    assert host_evidence.capacity_mbps(_with_speeds(after, {"labp2": 100000, "labp3": 100000}), "lab0")[0] == 200000
    speed, how = host_evidence.capacity_mbps(_with_speeds(after, {"labp2": 100000}), "lab0")
    assert speed is None and "labp3" in how
    # the interface's own speed wins (bonding reports the sum of its active slaves itself)
    assert host_evidence.capacity_mbps(_with_speeds(after, {"lab0": 25000, "labp2": 100000}), "lab0")[0] == 25000


def test_vlan_takes_its_parents_speed(server):
    after = copy.deepcopy(server[1])
    after["interfaces"]["lab0.7"] = dict(after["interfaces"]["labp2"], kind="vlan", lower=["labp2"], speed_mbps=None)
    after["interfaces"]["labp2"]["speed_mbps"] = 10000
    speed, how = host_evidence.capacity_mbps(after, "lab0.7")
    assert speed == 10000 and "labp2" in how
    assert host_evidence.members(after, "lab0.7") == ["labp2"]


def test_utilisation_over_the_checkpoint_and_a_reset_counter(server):
    before, after = server
    before, after = _with_speeds(before, {"lab0": 1000}), _with_speeds(after, {"lab0": 1000})
    seconds = after["time"] - before["time"]
    row = host_evidence.link_rows(before, after, ["10.0.0.1"], "server", busy_seconds=seconds / 4)[0]
    moved = max(row["rx_bytes"], row["tx_bytes"])
    assert row["utilisation"] == pytest.approx(moved / (1000e6 / 8 * seconds))
    assert row["utilisation_during"] == pytest.approx(4 * row["utilisation"])
    after["interfaces"]["lab0"]["statistics"]["rx_bytes"] = 5
    row = host_evidence.link_rows(before, after, ["10.0.0.1"], "server")[0]
    assert row["reset"] is True and row["rx_bytes"] is None and row["utilisation"] is None


def test_a_host_sample_line_with_a_number_no_kernel_prints_is_skipped():
    stat = host_evidence.parse_proc_stat("cpu  1 2 3 4 5 6 7 8\ncpu0 %s 0 0 0 0 0 0 0\ncpu1 1 -2 3 4 5 6 7 8\n" % ("9" * 400))
    assert stat["cpu"]["user"] == 1 and stat["cpus"] == {}
    disks = host_evidence.parse_diskstats("8 0 sda 1 0 8 1 %s 0 64 5 0 10 12\n8 1 sdb 1 0 8 1 2 0 64 5 0 10 12\n" % ("9" * 400))
    assert list(disks) == ["sdb"]
    assert host_evidence.disk_window("8 0 sda 1 0 8 1 2 0 64 5 0 10 12\n", "8 0 sda 1 0 8 1 %s 0 64 5 0 10 12\n" % ("9" * 400), 10) == []
