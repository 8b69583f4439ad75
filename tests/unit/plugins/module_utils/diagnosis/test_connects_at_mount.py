"""A mount's own transport connects (diagnosis/client.py connects_at_mount), on real xprt lines."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import client
from ansible_collections.ckptio.nfs.plugins.module_utils.stats.mountstats import iter_mountstats
from ansible_collections.ckptio.nfs.tests.unit.utils import read_sample


def _totals(text):
    return [mount.xprt_totals() for mount in iter_mountstats(text.splitlines(True))]


def test_a_fresh_tcp_mount_holds_two_connects_per_transport():
    # The lab's v4.1 nconnect=4 mount on 6.1 after a 2 GiB write, never disconnected: 4 x 2.
    (totals,) = _totals(read_sample("mountstats-v41-nconnect4-after-2GiB-write.txt"))
    assert (totals["protocols"], totals["transports"], totals["connect_count"]) == (["tcp"], 4, 8)
    assert client.connects_at_mount(totals) == 8


def test_rdma_counts_the_established_connect_only_and_udp_has_none():
    # xprt: rdma srcport bind_count connect_count ... (net/sunrpc/xprtrdma/transport.c); udp has no connect_count.
    device = "device nfs1:/srv/nfs mounted on /mnt/nfs with fstype nfs statvers=1.1\n\topts:\trw,vers=3,proto=%s\n"
    rdma = device % "rdma" + "".join("\txprt:\trdma 0 0 1 0 0 5 5 0 5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n" for _transport in range(2))
    udp = device % "udp" + "\txprt:\tudp 0 0 5 5 0 5 0 0 0 0\n"
    assert [client.connects_at_mount(totals) for totals in _totals(rdma) + _totals(udp)] == [2, 0]
