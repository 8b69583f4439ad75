"""What xprt connect_count says (kernel_text/mountstats.py CONNECTS_PER_CONNECT, IDLE_CLOSE_SECONDS), on real xprt lines."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import mountstats
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import iter_mountstats
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.stats_delta import mountstats_delta
from ansible_collections.ckptio.nfs.tests.unit.utils import read_sample

DEVICE = "device nfs1:/srv/nfs mounted on /mnt/nfs with fstype nfs statvers=1.1\n\topts:\trw,vers=3,proto=%s\n"


def _totals(text):
    return [mount.xprt_totals() for mount in iter_mountstats(text.splitlines(True))]


def _unexplained(totals, seconds):
    return mountstats.connects_since_mount_unexplained(totals["connect_count"], totals["protocols"], totals["transports"], seconds)


def test_a_fresh_tcp_mount_holds_two_connects_per_transport_and_nothing_unexplained():
    # The lab's v4.1 nconnect=4 mount on 6.1 after a 2 GiB write, never disconnected: 4 x 2.
    (totals,) = _totals(read_sample("mountstats-v41-nconnect4-after-2GiB-write.txt"))
    assert (totals["protocols"], totals["transports"], totals["connect_count"]) == (["tcp"], 4, 8)
    assert _unexplained(totals, 178) == 0
    assert _unexplained(dict(totals, connect_count=11), 178) == 3


def test_one_reopening_per_five_unused_minutes_is_a_healthy_mounts():
    # A v3 mount reopened once after 5 min unused holds 4 (lab, 6.1): healthy once it is 300 s old.
    (totals,) = _totals(DEVICE % "tcp" + "\txprt:\ttcp 949 1 4 0 0 16 16 0 16 0 2 0 0\n")
    assert [_unexplained(totals, seconds) for seconds in (299, 300, 900)] == [2, 0, 0]
    assert _unexplained(dict(totals, connect_count=100), 900) == 100 - 2 * 4


def test_rdma_counts_the_established_connect_only_and_udp_has_none():
    # xprt: rdma srcport bind_count connect_count ... (net/sunrpc/xprtrdma/transport.c); udp has no connect_count.
    rdma = DEVICE % "rdma" + "".join("\txprt:\trdma 0 0 1 0 0 5 5 0 5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n" for _transport in range(2))
    udp = DEVICE % "udp" + "\txprt:\tudp 0 0 5 5 0 5 0 0 0 0\n"
    assert [mountstats.connects_per_connect(totals["protocols"]) for totals in _totals(rdma) + _totals(udp)] == [1, 0]
    assert [_unexplained(totals, 0) for totals in _totals(rdma)] == [0]


def _idle_reopen(name):
    return read_sample("idle_reopen", name)


def test_a_transport_closed_for_idleness_and_opened_by_the_write_is_a_reopening():
    # The lab (6.1, tests/fixtures/samples/idle_reopen/NOTES.txt): the v3 mount's transport closed after
    # 5 min unused (idle_time 0, no socket), then a 4 MiB write opened it again: connect_count 4 -> 6.
    after, before = _idle_reopen("mountstats_after.txt"), _idle_reopen("mountstats_before.txt")
    assert "10.0.0.2:949" not in _idle_reopen("ss_before.txt") and "10.0.0.2:949" in _idle_reopen("ss_after.txt")
    (v3,) = mountstats_delta(after, before, mount_points=["/mnt/nfs3"])
    assert (v3["rpc"]["connect_count"], v3["rpc"]["reopen_connects"]) == (2, 2)
    (v41,) = mountstats_delta(after, before, mount_points=["/mnt/nfs"])
    assert (v41["rpc"]["connect_count"], v41["rpc"]["reopen_connects"]) == (0, 0)


def test_a_transport_open_before_the_window_that_connects_again_is_not_a_reopening():
    # The same pair with the before sample's idle_time 12 (open, used 12 s earlier): the rise is churn.
    before = _idle_reopen("mountstats_before.txt").replace("xprt:\ttcp 949 1 4 0 0 16 ", "xprt:\ttcp 949 1 4 0 12 16 ")
    (v3,) = mountstats_delta(_idle_reopen("mountstats_after.txt"), before, mount_points=["/mnt/nfs3"])
    assert (v3["rpc"]["connect_count"], v3["rpc"]["reopen_connects"]) == (2, 0)
    # Two connects of a transport shown closed: one reopening does not explain them.
    after = _idle_reopen("mountstats_after.txt").replace("xprt:\ttcp 949 1 6 0 0 24 ", "xprt:\ttcp 949 1 8 0 0 24 ")
    (v3,) = mountstats_delta(after, _idle_reopen("mountstats_before.txt"), mount_points=["/mnt/nfs3"])
    assert (v3["rpc"]["connect_count"], v3["rpc"]["reopen_connects"]) == (4, 0)


def test_since_its_mount_the_v3_transport_made_its_own_connect_and_two_reopenings():
    (totals,) = [mount.xprt_totals() for mount in iter_mountstats(_idle_reopen("mountstats_after.txt").splitlines(True))
                 if mount.mount_point == "/mnt/nfs3"]
    assert (totals["connect_count"], _unexplained(totals, 671)) == (6, 0)
