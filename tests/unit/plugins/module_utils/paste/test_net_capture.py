"""paste/net_capture.py on real tcpdump/tshark texts (tests/fixtures/paste_kinds/net_capture) and constructed ones."""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import net_capture
from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.paste import kinds

TSHARK = "%5d   0.%06d 10.0.0.1 \u2192 10.0.0.2 TCP 1514 812 \u2192 2049 [ACK] Seq=%d Ack=1 Win=501 Len=1448\n"


def test_mirage_tshark_text_is_found_inside_other_text_and_gives_its_dup_acks():
    text = kinds.around(kinds.sample("net_capture", "mirage_tcpip_140_tshark_dup_ack"))
    assert net_capture.recognise(text)
    findings = net_capture.read(text)
    share = kinds.by_signal(findings, "retransmitted share of the TCP segments shown")[0]
    assert (share["value"], share["weight"], share["crossed"]) == (0.0, 0, False)
    assert "none of the 5 TCP segments" in share["explanation"]
    dup = kinds.by_signal(findings, "duplicate ACKs among the packets shown")[0]
    assert (dup["layer"], dup["value"], dup["weight"], dup["line"]) == ("network", 2, 1, 6)


def test_ganesha_tcpdump_shows_three_segments_and_nothing_wrong():
    text = kinds.sample("net_capture", "ganesha_452_tcpdump_nfs_reply")
    assert net_capture.recognise(text)
    findings = net_capture.read(text)
    assert [(item["signal"], item["value"], item["weight"]) for item in findings] == [
        ("retransmitted share of the TCP segments shown", 0.0, 0)]


def test_a_lossy_capture_over_enough_segments_points_at_the_network():
    lines = [TSHARK % (index, index, index * 1448) for index in range(1, 1001)]
    for index in range(0, 1000, 50):  # 20 of 1000: 2 %
        lines[index] = lines[index].replace("[ACK]", "[TCP Retransmission] [ACK]")
    findings = net_capture.read("".join(lines))
    share = kinds.by_signal(findings, "retransmitted share of the TCP segments shown")[0]
    assert (share["value"], share["crossed"], share["weight"], share["line"]) == (0.02, True, 2, 1)


def test_a_short_excerpt_with_a_retransmission_is_consistent_not_decisive():
    text = TSHARK % (1, 1, 1) + (TSHARK % (2, 2, 1)).replace("[ACK]", "[TCP Fast Retransmission] [ACK]")
    share = net_capture.read(text)[0]
    assert (share["value"], share["crossed"], share["weight"]) == (0.5, False, 1)
    assert "only 2 segments shown" in share["explanation"]


def test_zero_windows_are_put_on_the_side_that_advertised_them():
    server = "7 0.1 10.0.0.2 \u2192 10.0.0.1 TCP 66 2049 \u2192 812 [TCP ZeroWindow] [ACK] Seq=1 Ack=9 Win=0 Len=0\n"
    full = "8 0.2 10.0.0.1 \u2192 10.0.0.2 TCP 1514 812 \u2192 2049 [TCP Window Full] [ACK] Seq=9 Ack=1 Len=1448\n"
    tcpdump = "10:00:00.1 IP cli.812 > srv.nfs: Flags [.], ack 5, win 0, length 0\n"
    findings = net_capture.read(server + full + tcpdump)
    assert [(item["layer"], item["value"]) for item in findings if "zero windows" in item["signal"]] == [
        ("server_threads", 2), ("client_cpu", 1)]


def test_nfs4err_delay_is_the_server_asking_to_retry():
    text = ("12 0.3 10.0.0.2 \u2192 10.0.0.1 NFS 174 V4 Reply (Call In 11) OPEN Status: NFS4ERR_DELAY\n"
            "    Status: NFS4ERR_DELAY (10008)\n13 0.4 10.0.0.2 \u2192 10.0.0.1 NFS 174 V3 WRITE Reply "
            "(Call In 10) Error: NFS3ERR_JUKEBOX\n")
    assert net_capture.recognise(kinds.around(text))
    delay = kinds.by_signal(net_capture.read(text), "NFS replies asking the client to retry")[0]
    assert (delay["value"], delay["fault"]["name"], delay["fault"]["tuning_fixes"], delay["line"]) == (
        3, "server_delay", False, 1)
    assert delay["fault"]["source"].startswith("https://www.rfc-editor.org/rfc/rfc8881")


def test_fragments_and_a_tshark_expert_summary():
    text = ("1 0.0 10.0.0.1 \u2192 10.0.0.2 IPv4 1514 Fragmented IP protocol (proto=UDP 17, off=0, ID=1a2b)\n"
            "   Frequency      Group           Protocol  Summary\n"
            "          37   Sequence             TCP  This frame is a (suspected) retransmission\n")
    findings = net_capture.read(text)
    assert [(item["signal"], item["value"], item["weight"]) for item in findings] == [
        ("retransmissions counted by tshark -z expert", 37, 1), ("IP fragments among the packets shown", 1, 1)]


def test_other_text_is_not_a_capture():
    assert not net_capture.recognise("Seq of events\nFlags were raised\nnothing here\n")
    assert net_capture.read("plain words\n") == []


@pytest.mark.parametrize("name, text", sorted(kinds.hostile(
    "1 0.1 a \u2192 b TCP 66 NUMBER \u2192 2049 [TCP ZeroWindow] [TCP Dup ACK NUMBER#1] Seq=NUMBER Win=0\n").items()))
def test_hostile_input_is_read_in_under_a_second(name, text):
    (_found, seconds_recognise), (_read, seconds_read) = kinds.timed(net_capture.recognise, text), kinds.timed(
        net_capture.read, text)
    assert seconds_recognise + seconds_read < 1.0, name
