"""The textfile collector's text: at most 30 series per mount at any nconnect, valid exposition format."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import iter_mountstats
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.nfsd_stats import parse_nfsd_stats, parse_pool_stats
from ansible_collections.ckptio.nfs.plugins.module_utils.telemetry import exposition

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "..", "fixtures", "telemetry")


def _mounts(nconnect):
    with open(os.path.join(FIXTURES, "mountstats_v41_nconnect%d.txt" % nconnect), encoding="utf-8") as stream:
        return list(iter_mountstats(stream.read()))


def _text(nconnect, slots=None, waiters=None):
    client = []
    for mount in exposition.select_mounts(_mounts(nconnect)):
        client.extend(exposition.mount_samples(mount, slots, waiters))
    return exposition.render(client=client, sources={"mountstats": True}, now=1765000000)


SLOTS = {"slots_allocated": 8, "slot_table_size": 8, "backlog_queue": 3, "pending_queue": 5}


def _series_lines(text):
    return [line for line in text.splitlines() if line and not line.startswith("#")]


@pytest.mark.parametrize("nconnect", [1, 4, 16])
def test_series_per_mount_stay_under_the_ceiling_at_any_nconnect(nconnect):
    lines = [line for line in _series_lines(_text(nconnect, SLOTS, 2)) if line.startswith("ckptio_nfs_client_")]
    assert len(lines) <= exposition.CLIENT_SERIES_PER_MOUNT
    # The same series whatever nconnect is: transports are summed, never a label.
    assert len(lines) == len([line for line in _series_lines(_text(1, SLOTS, 2)) if line.startswith("ckptio_nfs_client_")])


def test_every_client_family_fits_the_ceiling_together():
    # One series per family, and one per op / direction where labelled: the most a mount can have.
    count = 0
    for family in exposition.CLIENT.values():
        if "op" in family.labels:
            count += len(exposition.CHECKPOINT_OPS)
        elif "direction" in family.labels:
            count += 2
        else:
            count += 1
    assert count <= exposition.CLIENT_SERIES_PER_MOUNT


def test_transport_figures_are_summed_over_nconnect():
    text = _text(4)
    # The four real xprt lines' sends: 347 + 834 + 428 + 701.
    assert 'ckptio_nfs_client_rpc_sends_total{mountpoint="/mnt/nfs",export="10.0.0.1:/srv/nfs"} 2310' in text
    # req_u 1372 + 3650 + 1820 + 3114; max_slots is the highest of 12, 9, 25, 10.
    assert 'ckptio_nfs_client_rpc_slots_used_total{mountpoint="/mnt/nfs",export="10.0.0.1:/srv/nfs"} 9956' in text
    assert 'ckptio_nfs_client_rpc_slots_high_water{mountpoint="/mnt/nfs",export="10.0.0.1:/srv/nfs"} 25' in text
    assert 'ckptio_nfs_client_transports{mountpoint="/mnt/nfs",export="10.0.0.1:/srv/nfs"} 4' in text


def test_op_times_are_seconds_and_bytes_are_the_server_bytes():
    text = _text(4)
    labels = 'mountpoint="/mnt/nfs",export="10.0.0.1:/srv/nfs",op="WRITE"'
    assert "ckptio_nfs_client_requests_total{%s} 2048" % labels in text
    assert "ckptio_nfs_client_queue_seconds_total{%s} 6009.261" % labels in text
    assert "ckptio_nfs_client_rtt_seconds_total{%s} 2473.786" % labels in text
    assert ('ckptio_nfs_client_bytes_total{mountpoint="/mnt/nfs",export="10.0.0.1:/srv/nfs",direction="write"} 2147483648'
            in text)


def test_the_mount_options_that_decide_its_slots_are_labels_of_one_info_series():
    assert ('ckptio_nfs_client_mount_info{mountpoint="/mnt/nfs",export="10.0.0.1:/srv/nfs",vers="4.1",nconnect="16",'
            'proto="tcp",rsize="1048576",wsize="1048576"} 1') in _text(16)


def test_live_slot_figures_are_absent_not_zero_when_not_read():
    text = _text(4)
    assert "client_rpc_slots_allocated" not in text
    assert "client_session_slot_waiters" not in text
    with_slots = _text(4, SLOTS, 0)
    assert 'ckptio_nfs_client_rpc_slots_allocated{mountpoint="/mnt/nfs",export="10.0.0.1:/srv/nfs"} 8' in with_slots
    assert 'ckptio_nfs_client_session_slot_waiters{mountpoint="/mnt/nfs",export="10.0.0.1:/srv/nfs"} 0' in with_slots


def test_a_mount_point_mounted_twice_gives_one_set_of_series():
    # Two blocks for one mount point (a mount on top of another): duplicate series would fail the scrape.
    with open(os.path.join(FIXTURES, "mountstats_v41_nconnect1.txt"), encoding="utf-8") as stream:
        text = stream.read()
    twice = text + text.replace("10.0.0.1:/srv/nfs", "10.0.0.2:/other")
    mounts = exposition.select_mounts(list(iter_mountstats(twice)))
    assert [mount.device for mount in mounts] == ["10.0.0.2:/other"]
    series = _series_lines(exposition.render(client=exposition.mount_samples(mounts[0])))
    assert len(series) == len(set(line.rsplit(" ", 1)[0] for line in series))


def test_only_the_asked_mounts_are_exported():
    mounts = _mounts(4)
    assert exposition.select_mounts(mounts, ["/elsewhere"]) == []
    assert [mount.mount_point for mount in exposition.select_mounts(mounts, ["/mnt/nfs"])] == ["/mnt/nfs"]


def test_label_values_are_escaped():
    assert exposition.escape_label('a"b\\c\nd') == 'a\\"b\\\\c\\nd'


def test_an_rdma_mount_has_no_slot_high_water_series():
    # xprtrdma's xprt_rdma_print_stats prints no max_slots: the series is left out, never 0.
    with open(os.path.join(FIXTURES, "mountstats_v41_nconnect1.txt"), encoding="utf-8") as stream:
        text = stream.read()
    rdma = "\n".join(
        "\txprt:\trdma 0 0 1 0 0 347 347 0 1372 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0" if line.strip().startswith("xprt:")
        else line for line in text.splitlines())
    mount = exposition.select_mounts(list(iter_mountstats(rdma)))[0]
    keys = [key for key, _labels, _value in exposition.mount_samples(mount)]
    assert "slots_high_water" not in keys
    assert "slots_used" in keys and "sends" in keys


SERVER_NFSD = """rc 0 12 34
fh 0 0 0 0 0
io 1024 4096
th 8 0 0.000 0.000 0.000 0.000 0.000 0.000 0.000 0.000 0.000 0.000
ra 0 0 0 0 0 0 0 0 0 0 0 0
net 100 0 100 4
rpc 99 0 0 0 0
"""
POOL_STATS = """# pool packets-arrived sockets-enqueued threads-woken threads-timedout
0 1000 250 740 3
1 500 50 440 1
"""


def test_server_figures_are_summed_over_pools():
    samples = exposition.server_samples(parse_nfsd_stats(SERVER_NFSD), parse_pool_stats(POOL_STATS), threads=8)
    text = exposition.render(server=samples)
    assert "ckptio_nfs_server_threads 8" in text
    assert "ckptio_nfs_server_packets_arrived_total 1500" in text
    assert "ckptio_nfs_server_sockets_enqueued_total 300" in text
    assert 'ckptio_nfs_server_io_bytes_total{direction="write"} 4096' in text
    assert "ckptio_nfs_server_rpc_calls_total 99" in text


def test_a_6x_pool_stats_without_timedout_leaves_it_out():
    pools = "# pool packets-arrived sockets-enqueued threads-woken\n0 10 2 8\n"
    text = exposition.render(server=exposition.server_samples(None, parse_pool_stats(pools), None))
    assert "threads_timedout" not in text and "ckptio_nfs_server_threads_woken_total 8" in text


def _full_text():
    client = []
    for mount in exposition.select_mounts(_mounts(16)):
        client.extend(exposition.mount_samples(mount, SLOTS, 1))
    server = exposition.server_samples(parse_nfsd_stats(SERVER_NFSD), parse_pool_stats(POOL_STATS), threads=8)
    return exposition.render(client=client, server=server, sources={"mountstats": True, "nfsd": True}, now=1765000000.5)


def test_the_text_parses_with_the_prometheus_client_library():
    parser = pytest.importorskip("prometheus_client.parser")
    families = {family.name: family for family in parser.text_string_to_metric_families(_full_text())}
    # The library strips _total from a counter's family name.
    assert "ckptio_nfs_client_requests" in families
    assert families["ckptio_nfs_client_requests"].type == "counter"
    assert all(family.documentation for family in families.values())


def promtool_path():
    """scripts/setup.sh's promtool (CKPTIO_PROMTOOL), which must then exist; else one on PATH, else skip."""
    promtool = os.environ.get("CKPTIO_PROMTOOL")
    if promtool:
        assert os.access(promtool, os.X_OK), "scripts/setup.sh named %s but it is not there" % promtool
        return promtool
    promtool = shutil.which("promtool")
    if not promtool:
        pytest.skip("promtool not installed: source scripts/activate (scripts/setup.sh fetches it)")
    return promtool


def test_promtool_check_metrics_accepts_the_text():
    promtool = promtool_path()
    result = subprocess.run([promtool, "check", "metrics"], input=_full_text(), capture_output=True, text=True,
                            check=False, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
