"""Live nfsd state on the lab server after converge, a manual drift, audit and re-converge."""
from __future__ import annotations

import os

import testinfra.utils.ansible_runner

testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(
    os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("nfs_servers")


def test_nfsd_threads_are_live(host, server_expected):
    assert int(host.file("/proc/fs/nfsd/threads").content_string.strip()) == server_expected["threads"]


def test_nfsd_threads_are_persisted_where_nfs_server_reads_them(host, server_expected):
    conf = host.file("/etc/nfs.conf.d/ckptio-nfsd.conf").content_string
    assert f"threads={server_expected['threads']}" in conf.replace(" ", "")


def test_max_block_size_allows_1mib_io(host):
    # Set by the lab's nfs-server drop-in before nfsd starts (EBUSY once it runs).
    assert int(host.file("/proc/fs/nfsd/max_block_size").content_string.strip()) == 1048576


def test_lab_link_keeps_its_latency(host):
    # The 20 ms on the server's lab link is the lab's distance, not something the roles tune.
    assert "netem" in host.check_output("tc qdisc show dev lab0")
