"""Pure parts of the TCP probe: iperf3 argv, the -J summary, LISTEN sockets, our-process matching."""
from __future__ import annotations

import copy
import json

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import probe as tcp_probe
from ansible_collections.ckptio.nfs.tests.unit.utils import read_sample


def iperf3_sample(name):
    return json.loads(read_sample("iperf3", name))


# Captured on this project's test host (iperf 3.12, Debian 12): `iperf3 -c 127.0.0.1 -P 2 -t 1 -J`.
OK_3_12 = "iperf3-3.12-client-P2-t1-loopback.json"
# Same iperf3 with nobody listening.
REFUSED_3_12 = "iperf3-3.12-client-connection-refused.json"

# /proc/net/tcp header and lines as the kernel prints them (captured here, kernel 6.18, x86_64).
TCP_HEADER = ("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n")
TCP_LISTEN_LOOPBACK_22312 = ("   1: 0100007F:5728 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
                             "37773 1 00000000f6117b4f 100 0 0 10 0\n")
TCP_LISTEN_ANY_2024 = ("   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
                       "573 1 00000000a748d473 100 0 0 10 0\n")
# An established connection (st 01) on a port we want: not a listener.
TCP_ESTABLISHED_5201 = ("   2: 0100000A:1451 0200000A:C350 01 00000000:00000000 00:00000000 00000000     0        0 "
                        "1 1 0000000000000000 20 4 30 10 -1\n")
TCP6_HEADER = ("  sl  local_address                         remote_address                        st tx_queue rx_queue "
               "tr tm->when retrnsmt   uid  timeout inode\n")
# ::1 port 5201, and ::ffff:10.0.0.1 port 5202 (a v4 address on a dual-stack socket), little-endian words.
TCP6_LISTEN = ("   0: 00000000000000000000000001000000:1451 00000000000000000000000000000000:0000 0A 00000000:00000000 "
               "00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0\n"
               "   1: 0000000000000000FFFF00000100000A:1452 00000000000000000000000000000000:0000 0A 00000000:00000000 "
               "00:00000000 00000000     0        0 2 1 0000000000000000 100 0 0 10 0\n")


def test_listen_argv_is_a_one_off_server_under_a_hard_time_limit():
    argv = tcp_probe.listen_argv("/usr/bin/timeout", "/usr/bin/iperf3", "10.0.0.1", 5201, 75)
    assert argv == ["/usr/bin/timeout", "-k", "5", "75", "/usr/bin/iperf3", "-s", "-1", "-B", "10.0.0.1", "-p", "5201"]
    assert tcp_probe.listener_child_argv(argv) == ["/usr/bin/iperf3", "-s", "-1", "-B", "10.0.0.1", "-p", "5201"]


def test_send_argv_uses_streams_seconds_json_and_its_own_limit():
    argv = tcp_probe.send_argv("/usr/bin/timeout", "/usr/bin/iperf3", "10.0.0.1", 5202, 4, 10)
    assert argv == ["/usr/bin/timeout", "-k", "5", str(10 + tcp_probe.SEND_MARGIN_SECONDS), "/usr/bin/iperf3",
                    "-c", "10.0.0.1", "-p", "5202", "-P", "4", "-t", "10", "-J"]


def test_summary_of_a_real_3_12_result():
    summary = tcp_probe.summarize_iperf3(iperf3_sample(OK_3_12))
    assert summary == {
        "sent_bits_per_second": 17640319189.45151,
        "received_bits_per_second": 17638961544.68928,
        "retransmits": 26,
        "streams": 2,
        "seconds": 1.000486,
        "start_epoch": 1796111965,
        "error": None,
    }


def test_summary_of_a_real_3_12_connection_refused():
    summary = tcp_probe.summarize_iperf3(iperf3_sample(REFUSED_3_12))
    assert summary["error"] == "unable to connect to server: Connection refused"
    assert summary["received_bits_per_second"] is None
    assert summary["streams"] is None


def test_summary_of_a_bare_error_object():
    assert tcp_probe.summarize_iperf3({"error": "error - the server is busy running a test. try again later"})["error"] == \
        "error - the server is busy running a test. try again later"


def test_summary_without_sender_flags_like_3_9():
    # Reconstructed, not captured: 3.9 prints the same sums without the "sender" key (added in 3.10).
    obj = iperf3_sample(OK_3_12)
    for key in ("sum_sent", "sum_received"):
        obj["end"][key].pop("sender")
    for stream in obj["end"]["streams"]:
        for side in ("sender", "receiver"):
            stream[side].pop("sender")
    assert tcp_probe.summarize_iperf3(obj) == tcp_probe.summarize_iperf3(iperf3_sample(OK_3_12))


def test_summary_with_bidir_sums_of_3_17_keeps_the_forward_direction():
    # 3.17+ adds *_bidir_reverse sums (only with --bidir); they must not replace the forward figures.
    obj = iperf3_sample(OK_3_12)
    obj["end"]["sum_sent_bidir_reverse"] = {"bits_per_second": 1.0, "retransmits": 99}
    obj["end"]["sum_received_bidir_reverse"] = {"bits_per_second": 2.0}
    assert tcp_probe.summarize_iperf3(obj)["received_bits_per_second"] == 17638961544.68928
    assert tcp_probe.summarize_iperf3(obj)["retransmits"] == 26


def test_summary_falls_back_to_the_streams_when_the_sums_are_missing():
    obj = iperf3_sample(OK_3_12)
    del obj["end"]["sum_sent"], obj["end"]["sum_received"]
    del obj["start"]["test_start"]
    summary = tcp_probe.summarize_iperf3(obj)
    streams = obj["end"]["streams"]
    assert summary["received_bits_per_second"] == sum(s["receiver"]["bits_per_second"] for s in streams)
    assert summary["sent_bits_per_second"] == sum(s["sender"]["bits_per_second"] for s in streams)
    assert summary["retransmits"] == 26
    assert summary["streams"] == 2
    assert summary["error"] is None


def test_summary_of_a_result_that_never_finished_is_an_error():
    obj = iperf3_sample(OK_3_12)
    obj["end"] = {}
    summary = tcp_probe.summarize_iperf3(obj)
    assert summary["received_bits_per_second"] is None
    assert "did not finish" in summary["error"]


@pytest.mark.parametrize("junk", [None, [], "text", 3])
def test_summary_of_something_else_is_an_error_not_a_crash(junk):
    assert "not an iperf3 JSON result" in tcp_probe.summarize_iperf3(junk)["error"]


def test_summary_ignores_values_of_the_wrong_type():
    obj = copy.deepcopy(iperf3_sample(OK_3_12))
    obj["end"]["sum_received"]["bits_per_second"] = "fast"
    obj["end"]["sum_sent"]["retransmits"] = True
    summary = tcp_probe.summarize_iperf3(obj)
    # The per-stream figures stand in for the unusable sums.
    assert summary["received_bits_per_second"] == sum(s["receiver"]["bits_per_second"] for s in obj["end"]["streams"])
    assert summary["retransmits"] == 26


def test_listening_sockets_reads_only_listen_state_little_endian():
    text = TCP_HEADER + TCP_LISTEN_ANY_2024 + TCP_LISTEN_LOOPBACK_22312 + TCP_ESTABLISHED_5201
    assert tcp_probe.listening_sockets(text, "little") == {("0.0.0.0", 2024), ("127.0.0.1", 22312)}


def test_listening_sockets_big_endian_host_prints_the_address_the_other_way():
    text = TCP_HEADER + "   0: 7F000001:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 1 1 0 100 0 0 10 0\n"
    assert tcp_probe.listening_sockets(text, "big") == {("127.0.0.1", 5201)}


def test_listening_sockets_tcp6_and_v4_mapped():
    assert tcp_probe.listening_sockets(TCP6_HEADER + TCP6_LISTEN, "little") == {("::1", 5201), ("10.0.0.1", 5202)}


@pytest.mark.parametrize("text", [None, "", TCP_HEADER, TCP_HEADER + "garbage line\n", TCP_HEADER + "  0: ZZZ:1 0:0 0A\n",
                                  TCP_HEADER + "  0: 0100007F:XYZ 0:0 0A\n"])
def test_listening_sockets_skips_what_does_not_parse(text):
    assert tcp_probe.listening_sockets(text, "little") == set()


def test_port_conflicts_same_address_or_wildcard_only():
    sockets = {("10.0.0.1", 5201), ("0.0.0.0", 5202), ("10.0.0.9", 5203), ("::", 5204), ("10.0.0.1", 80)}
    assert tcp_probe.port_conflicts(sockets, ["10.0.0.1"], [5201, 5202, 5203, 5204]) == [
        ("0.0.0.0", 5202), ("10.0.0.1", 5201), ("::", 5204)]


def test_not_listening_names_the_missing_pairs():
    assert tcp_probe.not_listening({("10.0.0.1", 5201)}, [("10.0.0.1", 5201), ("10.0.0.1", 5202)]) == [("10.0.0.1", 5202)]


def test_is_our_process_matches_exact_argv_only():
    argv = tcp_probe.listen_argv("/usr/bin/timeout", "/usr/bin/iperf3", "10.0.0.1", 5201, 75)
    assert tcp_probe.is_our_process("\0".join(argv) + "\0", argv)
    assert tcp_probe.is_our_process("\0".join(argv[4:]) + "\0", argv)
    # Another iperf3 server on the same port, a different limit, an unrelated recycled pid, a zombie.
    assert not tcp_probe.is_our_process("/usr/bin/iperf3\0-s\0-p\0005201\0", argv)
    assert not tcp_probe.is_our_process("\0".join(tcp_probe.listen_argv("/usr/bin/timeout", "/usr/bin/iperf3", "10.0.0.1", 5201, 76)), argv)
    assert not tcp_probe.is_our_process("/usr/sbin/sshd\0-D\0", argv)
    assert not tcp_probe.is_our_process("", argv)
    assert not tcp_probe.is_our_process(None, argv)


def test_stat_process_group_with_spaces_and_parens_in_comm():
    assert tcp_probe.stat_process_group("4712 (iperf3) S 4711 4711 4711 0 -1 4194560 ...") == 4711
    assert tcp_probe.stat_process_group("99 (a) b (c)) R 1 77 77 0") == 77
    assert tcp_probe.stat_process_group("garbage") is None
    assert tcp_probe.stat_process_group(None) is None


def test_canonical_address_and_state_file_names():
    assert tcp_probe.canonical_address("fe80:0:0::1") == "fe80::1"
    assert tcp_probe.canonical_address("fe80::1%eth1") == "fe80::1"
    with pytest.raises(ValueError):
        tcp_probe.canonical_address("nfs1.example")
    assert tcp_probe.state_file_name("fe80::1", 5201) == "listener-fe80__1-5201.json"
    assert tcp_probe.is_state_file("listener-10.0.0.1-5201.json")
    assert not tcp_probe.is_state_file("listener-10.0.0.1-5201.log")


@pytest.mark.parametrize("text", ["10.0.0.1", "fe80::1", "fe80::1%eth1", "nfs1", "nfs1.example.com", "nfs-1.example."])
def test_server_names_and_addresses_pass(text):
    assert tcp_probe.is_host_name_or_address(text)


@pytest.mark.parametrize("text", ["", "-oremount", "--logfile=/etc/passwd", "nfs1;reboot", "nfs 1", "nfs1\nx", "$(reboot)",
                                  "`reboot`", "a|b", "fe80::1%", "fe80::1%eth 1", "x" * 254, None, 5])
def test_server_values_that_could_mean_something_else_are_refused(text):
    assert not tcp_probe.is_host_name_or_address(text)
