"""host_reader.read_host_sample: the kernel release rides in every host sample."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.host.host_reader import read_host_sample


def _proc(tmp_path, release):
    proc = tmp_path / "proc"
    (proc / "sys" / "kernel").mkdir(parents=True)
    (proc / "stat").write_text("cpu  1 2 3 4 5 6 7 0 0 0\nintr 1 2 3\n")
    (proc / "uptime").write_text("12.5 3.0\n")
    if release is not None:
        (proc / "sys" / "kernel" / "osrelease").write_text(release)
    (tmp_path / "net").mkdir()
    return str(proc), str(tmp_path / "net")


def test_sample_names_the_kernel_release(tmp_path):
    proc, net = _proc(tmp_path, "5.10.0-46-amd64\n")
    sample = read_host_sample(root=net, proc=proc)
    assert sample["kernel_release"] == "5.10.0-46-amd64"
    assert sample["proc_stat"] == "cpu  1 2 3 4 5 6 7 0 0 0\n" and sample["uptime"] == 12.5


def test_missing_release_is_none_not_a_guess(tmp_path):
    proc, net = _proc(tmp_path, None)
    assert read_host_sample(root=net, proc=proc)["kernel_release"] is None


# The Tcp: and TcpExt: pairs as a 6.x kernel prints them (trimmed columns, real names and order).
SNMP = ("Ip: Forwarding DefaultTTL InReceives\nIp: 1 64 9000\n"
        "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs "
        "OutSegs RetransSegs InErrs OutRsts InCsumErrors\nTcp: 1 200 120000 -1 30 8 5 0 9 6405 3543 12 0 15 0\n"
        "Udp: InDatagrams NoPorts\nUdp: 5 0\n")
NETSTAT = ("TcpExt: ListenDrops TCPLossProbes TCPTimeouts\nTcpExt: 0 4 2\n"
           "IpExt: InNoRoutes InTruncatedPkts\nIpExt: 0 0\n")


def test_sample_keeps_only_the_tcp_counter_lines(tmp_path):
    proc, net = _proc(tmp_path, "6.1.0-57-amd64\n")
    (tmp_path / "proc" / "net").mkdir()
    (tmp_path / "proc" / "net" / "snmp").write_text(SNMP)
    (tmp_path / "proc" / "net" / "netstat").write_text(NETSTAT)
    sample = read_host_sample(root=net, proc=proc)
    assert sample["tcp"]["snmp"].splitlines() == SNMP.splitlines()[2:4]
    assert sample["tcp"]["netstat"] == "TcpExt: ListenDrops TCPLossProbes TCPTimeouts\nTcpExt: 0 4 2\n"


def test_missing_tcp_files_are_named_and_the_sample_carries_on(tmp_path):
    proc, net = _proc(tmp_path, "6.1.0-57-amd64\n")
    sample = read_host_sample(root=net, proc=proc)
    assert sample["tcp"] == {"snmp": "", "netstat": ""}
    assert "cannot read %s/net/snmp" % proc in sample["errors"]
    assert sample["proc_stat"]


def test_interface_loss_counters_where_the_driver_has_them(tmp_path):
    proc, net = _proc(tmp_path, "6.1.0-57-amd64\n")
    stats = tmp_path / "net" / "eth0" / "statistics"
    stats.mkdir(parents=True)
    for name, value in (("rx_bytes", 10), ("rx_crc_errors", 7), ("rx_dropped", 3)):
        (stats / name).write_text("%d\n" % value)
    interface = read_host_sample(root=net, proc=proc)["interfaces"]["eth0"]
    assert interface["statistics"] == {"rx_bytes": 10, "rx_crc_errors": 7, "rx_dropped": 3}
