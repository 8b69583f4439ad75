"""nfsd_connection_need and nfsd_max_connections, as the server_tuning role calls them."""
from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.plugin_utils.nfsd_connections import STEPS
from ansible_collections.ckptio.nfs.plugins.module_utils.config import profiles

FILTERS = STEPS
NEED = FILTERS["nfsd_connection_need"]
MAX_CONNECTIONS = FILTERS["nfsd_max_connections"]


def client_profile(name):
    # The role reads client_tuning's profiles from their one source; so do the tests.
    return profiles.profile(name, "client")


PROFILES = {"checkpoint": client_profile("checkpoint"), "distro_default": client_profile("distro_default")}
# inventories/example/group_vars/nfs_clients.yml: one checkpoint mount per GPU node.
EXAMPLE_CLIENT = {"client_tuning_profile": "checkpoint",
                  "client_tuning_mounts": [{"src": "nfs01:/export/checkpoints", "path": "/mnt/checkpoints",
                                            "opts": {"_netdev": True}}],
                  "client_tuning_mount_options": {}}


def cluster(count, variables=None):
    variables = EXAMPLE_CLIENT if variables is None else variables
    hosts = ["gpu%04d" % number for number in range(1, count + 1)]
    return hosts, dict((host, dict(variables)) for host in hosts)


def test_both_filters_exposed():
    assert sorted(FILTERS) == ["nfsd_connection_need", "nfsd_max_connections"]


def test_thousand_nconnect_4_clients_need_more_than_64_threads_allow():
    hosts, hostvars = cluster(1000)
    need = NEED(hosts, hostvars, ["nfs01"], profiles=PROFILES)
    # nconnect 4 comes from client_tuning's checkpoint profile.
    assert PROFILES["checkpoint"]["mount_options"]["nconnect"] == 4
    assert (need["clients"], need["connections"], need["margin"], need["need"]) == (1000, 4000, 1000, 5000)
    assert need["per_client"][0] == {"host": "gpu0001", "connections": 4, "transports": [
        {"vers": "4.1", "proto": "tcp", "nconnect": 4, "connections": 4, "mounts": ["/mnt/checkpoints"]}]}
    plan = MAX_CONNECTIONS(need, 64)
    assert plan == {"max_connections": 5000, "default_limit": 1340, "need": 5000,
                    "reason": "the default limit (64 + 3) * 20 = 1340 is below the need 5000"}


def test_the_lab_fits_in_the_default_limit():
    hosts, hostvars = cluster(2, dict(EXAMPLE_CLIENT, client_tuning_mounts=[{"src": "nfs1:/srv/nfs", "path": "/mnt/nfs"}]))
    need = NEED(hosts, hostvars, ["nfs1", "127.0.0.1"], profiles=PROFILES)
    assert (need["connections"], need["margin"], need["need"]) == (8, 2, 10)
    assert MAX_CONNECTIONS(need, 8)["max_connections"] == 0


def test_only_mounts_of_this_server_count_by_any_of_its_names():
    variables = dict(EXAMPLE_CLIENT, client_tuning_mounts=[
        {"src": "NFS01.cluster:/a", "path": "/a"},
        {"src": "other:/b", "path": "/b"},
        {"src": "[fd00::1]:/c", "path": "/c", "opts": {"vers": "3"}},
    ])
    hosts, hostvars = cluster(1, variables)
    need = NEED(hosts, hostvars, ["nfs01.cluster", "fd00::1"], profiles=PROFILES)
    assert [transport["mounts"] for transport in need["per_client"][0]["transports"]] == [["/a"], ["/c"]]
    assert need["connections"] == 8


def test_mounts_sharing_a_transport_count_once_with_the_largest_nconnect():
    variables = dict(EXAMPLE_CLIENT, client_tuning_mounts=[
        {"src": "nfs01:/a", "path": "/a"},
        {"src": "nfs01:/b", "path": "/b", "opts": {"nconnect": 8}},
        # Another NFS version is another nfs_client: its own connections.
        {"src": "nfs01:/c", "path": "/c", "fstype": "nfs", "opts": {"vers": "3", "nconnect": 2}},
        # UDP holds no connection.
        {"src": "nfs01:/d", "path": "/d", "fstype": "nfs", "opts": {"vers": "3", "proto": "udp"}},
    ])
    hosts, hostvars = cluster(1, variables)
    transports = NEED(hosts, hostvars, ["nfs01"], profiles=PROFILES)["per_client"][0]["transports"]
    assert [(t["vers"], t["proto"], t["nconnect"], t["connections"], t["mounts"]) for t in transports] == [
        ("4.1", "tcp", 8, 8, ["/a", "/b"]), ("3", "tcp", 2, 2, ["/c"]), ("3", "udp", 4, 0, ["/d"])]


def test_overrides_merge_like_client_tuning_and_null_drops_to_the_kernel_default():
    hosts, hostvars = cluster(3)
    hostvars["gpu0001"]["client_tuning_mount_options"] = {"nconnect": 8}
    hostvars["gpu0002"]["client_tuning_mount_options"] = {"nconnect": None}
    hostvars["gpu0003"]["client_tuning_profile"] = "distro_default"
    need = NEED(hosts, hostvars, ["nfs01"], profiles=PROFILES)
    assert [client["connections"] for client in need["per_client"]] == [8, 1, 1]


def test_hosts_without_mounts_are_checked_not_counted_and_extra_is_added():
    hosts, hostvars = cluster(2)
    hostvars["login01"] = {}
    need = NEED(hosts + ["login01"], hostvars, ["nfs01"], profiles=PROFILES, margin_percent=10, extra=12)
    assert (need["hosts_checked"], need["clients"], need["connections"], need["extra"]) == (3, 2, 8, 12)
    # ceil((8 + 12) * 10 %) = 2
    assert (need["margin"], need["need"]) == (2, 22)


@pytest.mark.parametrize("nconnect, message", [
    (17, "gpu0001 mount /mnt/checkpoints: nconnect must be 1..16"),
    (0, "gpu0001 mount /mnt/checkpoints: nconnect must be 1..16"),
    (True, "gpu0001 mount /mnt/checkpoints: nconnect must be a whole number"),
    ("four", "gpu0001 mount /mnt/checkpoints: nconnect must be a whole number"),
])
def test_bad_nconnect_names_the_host_and_mount(nconnect, message):
    hosts, hostvars = cluster(1)
    hostvars["gpu0001"]["client_tuning_mount_options"] = {"nconnect": nconnect}
    with pytest.raises(AnsibleFilterError, match=message):
        NEED(hosts, hostvars, ["nfs01"], profiles=PROFILES)


def test_bad_inputs_are_refused():
    hosts, hostvars = cluster(1)
    with pytest.raises(AnsibleFilterError, match="list of client host names"):
        NEED("gpu0001", hostvars, ["nfs01"])
    with pytest.raises(AnsibleFilterError, match="not in hostvars"):
        NEED(["gpu9999"], hostvars, ["nfs01"])
    with pytest.raises(AnsibleFilterError, match="margin_percent"):
        NEED(hosts, hostvars, ["nfs01"], margin_percent=-1)
    hostvars["gpu0001"]["client_tuning_mounts"] = "nfs01:/export"
    with pytest.raises(AnsibleFilterError, match="client_tuning_mounts must be a list"):
        NEED(hosts, hostvars, ["nfs01"])


@pytest.mark.parametrize("setting, need, threads, wanted", [
    ("auto", 1340, 64, 0),     # exactly the default: covered
    ("auto", 1341, 64, 1341),
    ("AUTO", 0, 8, 0),
    (5000, 10, 8, 5000),
    ("0", 5000, 64, 0),
])
def test_max_connections_choice(setting, need, threads, wanted):
    assert MAX_CONNECTIONS(need, threads, setting)["max_connections"] == wanted


def test_an_explicit_value_below_the_need_says_so():
    assert MAX_CONNECTIONS(5000, 64, 0)["reason"] == "set to 0: the limit 1340 is below the need 5000"


@pytest.mark.parametrize("setting", ["many", True, -1, "5000;reboot", 4294967296])
def test_bad_settings_are_refused(setting):
    with pytest.raises(AnsibleFilterError, match="max_connections must be"):
        MAX_CONNECTIONS(10, 8, setting)


def test_bad_need_or_threads_are_refused():
    with pytest.raises(AnsibleFilterError, match="need must be a whole number"):
        MAX_CONNECTIONS(-1, 8)
    with pytest.raises(AnsibleFilterError, match="threads must be a whole number"):
        MAX_CONNECTIONS(10, True)


def test_margin_and_extra_as_whole_number_text_count_as_numbers():
    # ansible-core before 2.19 renders a role's `{{ x | int }}` option as text ("25"); other text is refused.
    hosts, hostvars = cluster(2, dict(EXAMPLE_CLIENT, client_tuning_mounts=[{"src": "nfs1:/srv/nfs", "path": "/mnt/nfs"}]))
    as_text = NEED(hosts, hostvars, ["nfs1"], profiles=PROFILES, margin_percent="50", extra="2")
    assert as_text == NEED(hosts, hostvars, ["nfs1"], profiles=PROFILES, margin_percent=50, extra=2)
    assert (as_text["extra"], as_text["margin_percent"], as_text["need"]) == (2, 50, 15)
    with pytest.raises(AnsibleFilterError, match="extra must be a whole number"):
        NEED(hosts, hostvars, ["nfs1"], profiles=PROFILES, extra="two")
