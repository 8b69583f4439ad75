"""paste/ss_sockets.py: ss (and netstat) socket lines of NFS's port 2049, on real pastes."""
from __future__ import annotations

import os

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import partial, readings, ss_sockets
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path

CORPUS = sample_path("..", "paste_corpus")
KINDS = sample_path("..", "paste_kinds", "ss_sockets")


def _read(path):
    with open(path, encoding="utf-8") as handle:
        reading = readings.read_file(os.path.basename(path), handle.read())
    return reading, partial.partial_diagnosis([reading])


def test_one_connection_the_server_stopped_reading_is_a_hang():
    # nfs-ganesha#1374: with nconnect=16 one server socket holds 3767744 unread bytes while its siblings hold none.
    reading, result = _read(os.path.join(CORPUS, "041_ganesha_1374_ss_recvq_nconnect16", "paste.txt"))
    assert reading["kind"] == "ss_sockets"
    fault = result["faults"][0]
    assert fault["kind"] == "hang" and fault["name"] == "nfs_connection_not_read"
    assert "3767744" in fault["what"] and "1 of 6" in fault["what"]
    assert result["partial"]["capture_next"]


def test_an_accept_queue_at_its_backlog_on_port_2049_is_a_hang():
    # nfs-ganesha#1037: "LISTEN 129 128 [::]:2049": the accept queue over its backlog, new mounts are not accepted.
    _reading, result = _read(os.path.join(KINDS, "ganesha_1037_listen_overflow.txt"))
    fault = result["faults"][0]
    assert fault["kind"] == "hang" and fault["name"] == "nfs_accept_queue_full" and "129" in fault["what"]


def test_every_connection_backed_up_points_at_the_servers_threads_not_a_hang():
    text = "\n".join("ESTAB 4194304 0 10.0.0.1:2049 10.0.0.%d:%d" % (host, 700 + host) for host in range(2, 6))
    reading = readings.read_file("ss.txt", text)
    assert not reading["faults"]
    assert [suspect["layer"] for suspect in reading["suspects"]] == ["server_threads"]


def test_retransmitted_bytes_on_an_nfs_connection_point_at_the_network():
    # ss -tin's info line (iproute2 ss.c tcp_show_info): bytes_retrans over bytes_sent on the client's NFS connection.
    text = ("State Recv-Q Send-Q Local Address:Port Peer Address:Port\n"
            "ESTAB 0 1048576 10.0.0.7:812 10.0.0.1:2049\n"
            "\t cubic wscale:7,7 rto:412 rtt:210.5/12.1 mss:8948 cwnd:10 bytes_sent:900000000 bytes_retrans:45000000 "
            "bytes_acked:850000000 segs_out:120000 segs_in:60000 data_segs_out:110000 retrans:0/5200\n")
    reading = readings.read_file("ss.txt", text)
    row = next(row for row in reading["evidence"] if row["signal"].startswith("retransmitted bytes"))
    assert row["crossed"] and abs(row["value"] - 0.05) < 1e-9
    assert partial.partial_diagnosis([reading])["limiting_layer"] == "network"


def test_sockets_of_other_ports_are_not_nfs():
    assert not ss_sockets.recognise("ESTAB 0 0 10.0.0.1:443 10.0.0.2:51234\nESTAB 0 0 10.0.0.1:22 10.0.0.3:40000\n")
