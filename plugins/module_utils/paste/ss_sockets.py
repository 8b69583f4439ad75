# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Socket lines of NFS's port 2049 as people paste them: ss (-t, -n, -i, with or without the State column, as
`ss state established` prints) and netstat -tn. Recognise them and read what they show (issue 44). Pure.

A line is [Netid] [State] Recv-Q Send-Q Local:Port Peer:Port [...] (ss) or Proto Recv-Q Send-Q Local Foreign State
(netstat); a socket whose local port is 2049 is the server's, one whose peer port is 2049 a client's. What the
columns mean (iproute2 misc/ss.c, the kernel's tcp_diag): on an established socket Recv-Q is bytes received and not
yet read by the application, Send-Q bytes not yet acknowledged by the peer; on a listening socket Recv-Q is the
accept queue's length and Send-Q its backlog, so Recv-Q above Send-Q means connections are being dropped. ss -i
adds a line per socket with bytes_sent, bytes_retrans, data_segs_out, rtt (tcp_show_info).

- one or a few of a server's NFS connections holding more than socket_unread_bytes unread while its others hold
  none: the server stopped reading that connection - a hang of its transport, no tuning frees it;
- most of them backed up: the server's threads do not keep up reading (server_threads);
- a listening :2049 whose accept queue reached its backlog: new connections (mounts, reconnects) are not accepted;
- retransmitted bytes over bytes sent on the NFS connections: the path's loss (the bundle's lossy share).
"""

from __future__ import annotations

import re

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals
from ansible_collections.ckptio.nfs.plugins.module_utils.paste import text_figures as tf

KIND = "ss_sockets"
TAKEN_FOR = "socket lines of NFS's port 2049 (ss -tn/-tin, netstat -tn)"
CAN_SHOW = ("bytes an NFS connection holds unread or unacknowledged, a listening port 2049 dropping connections, "
            "and (ss -i) the bytes retransmitted and the round trip of each connection")

NFS_PORTS = ("2049", "nfs")
_STATES = ("ESTAB", "ESTABLISHED", "LISTEN", "SYN-SENT", "SYN_SENT", "SYN-RECV", "SYN_RECV", "FIN-WAIT-1", "FIN_WAIT1",
           "FIN-WAIT-2", "FIN_WAIT2", "CLOSE-WAIT", "CLOSE_WAIT", "LAST-ACK", "LAST_ACK", "CLOSING", "TIME-WAIT", "TIME_WAIT",
           "UNCONN")
# Recv-Q Send-Q Local:Port Peer:Port; an address is at most an IPv6 literal in brackets with a zone, a port a number,
# "*" or a service name (ss without -n prints "nfs").
_SOCKET = re.compile(r"(?:^|\s)(\d{1,12})\s{1,32}(\d{1,12})\s{1,32}(\S{1,128}):([\w*-]{1,32})\s{1,32}(\S{1,128}):([\w*-]{1,32})(?=\s|$)")
_INFO = re.compile(r"\b(bytes_sent|bytes_retrans|data_segs_out|segs_out|rtt):(\d{1,20}(?:\.\d{1,6})?)")


def recognise(text):
    """True when a socket line with port 2049 (or "nfs") at either end is in the text."""
    if "2049" not in text and ":nfs" not in text:
        return False
    return any(_socket(line, 0) for _number, line in tf.lines(text))


def read(text):
    """Findings: unread bytes on the server's connections, a full accept queue, retransmitted bytes (ss -i)."""
    sockets = _sockets(text)
    findings = []
    server = [sock for sock in sockets if sock["server"] and sock["state"] != "LISTEN"]
    if server:
        findings += _unread(server)
    for sock in sockets:
        if sock["state"] == "LISTEN" and sock["server"] and sock["send_q"] and sock["recv_q"] >= sock["send_q"]:
            findings.append(tf.finding(None, "accept queue of a listening port 2049", sock["recv_q"], sock["text"], sock["line"],
                                       "Recv-Q >= Send-Q (the backlog)", True, fault=_accept_fault(sock)))
    client = [sock for sock in sockets if not sock["server"]]
    if client:
        most = max(client, key=lambda sock: sock["send_q"])
        findings.append(tf.finding(None, "largest Send-Q of a client's NFS connection", most["send_q"],
                                   "%s: bytes sent and not yet acknowledged by the server (or not yet sent)" % most["text"],
                                   most["line"]))
    findings += _retransmitted(sockets)
    return findings


def _sockets(text):
    """[{"state", "recv_q", "send_q", "local", "peer", "server", "text", "line", "info"}] of the NFS sockets."""
    found = []
    last = None
    for number, line in tf.lines(text):
        sock = _socket(line, number)
        if sock:
            found.append(sock)
            last = sock
            continue
        if last is not None and line[:1].isspace() and _INFO.search(line):
            last["info"].update((key, float(value)) for key, value in _INFO.findall(line))
        last = None
    return found


def _socket(line, number):
    found = _SOCKET.search(line)
    if not found or (found.group(4) not in NFS_PORTS and found.group(6) not in NFS_PORTS):
        return None
    words = line.split()
    state = next((word.upper() for word in words if word.upper() in _STATES), "ESTAB")
    state = {"ESTABLISHED": "ESTAB"}.get(state, state)
    return {"state": state, "recv_q": int(found.group(1)), "send_q": int(found.group(2)),
            "local": "%s:%s" % (found.group(3), found.group(4)), "peer": "%s:%s" % (found.group(5), found.group(6)),
            "server": found.group(4) in NFS_PORTS, "text": " ".join(words)[:200], "line": number, "info": {}}


def _unread(server):
    """The server's connections with more than socket_unread_bytes unread: a minority is a hang, most is load."""
    most = max(server, key=lambda sock: sock["recv_q"])
    unread = [sock for sock in server if signals.SOCKET_UNREAD_BYTES.crossed(sock["recv_q"])]
    threshold = tf.threshold_text(signals.SOCKET_UNREAD_BYTES)
    what = "%d of %d of the server's NFS connections hold more unread; the most, %d bytes: %s" % (
        len(unread), len(server), most["recv_q"], most["text"])
    if not unread:
        return [tf.finding(None, "largest Recv-Q of the server's NFS connections", most["recv_q"], what, most["line"], threshold)]
    if len(unread) < len(server) - len(unread):
        return [tf.finding(None, "largest Recv-Q of the server's NFS connections", most["recv_q"], what, most["line"],
                           threshold, True, fault=_not_read_fault(most, len(unread), len(server)))]
    return [tf.finding("server_threads", "largest Recv-Q of the server's NFS connections", most["recv_q"],
                       what + ": the server's threads do not keep up reading its connections", most["line"], threshold,
                       True, signals.PASTE_WEIGHT_CROSSED.threshold)]


def _not_read_fault(sock, stuck, total):
    found = tf.fault(
        "nfs_connection_not_read",
        "a hang: the server stopped reading %d of %d NFS connections (%d bytes unread on %s from %s) while the others "
        "are drained - the requests on it wait for ever, whatever the tuning" % (stuck, total, sock["recv_q"], sock["local"],
                                                                                 sock["peer"]),
        "on the server, see where the thread that owns that connection waits (knfsd: `cat /proc/fs/nfsd/pool_stats` and "
        "`echo w > /proc/sysrq-trigger`; nfs-ganesha: `gdb -p PID -batch -ex 'thread apply all bt'`); the client's "
        "remedy meanwhile is a reconnect (fewer nconnect connections were the reporter's workaround in nfs-ganesha#1374)",
        "iproute2 misc/ss.c (Recv-Q: bytes received, not read by the application)")
    found["kind"] = "hang"
    return found


def _accept_fault(sock):
    found = tf.fault(
        "nfs_accept_queue_full",
        "a hang of new connections: the listening %s holds %d connections in its accept queue against a backlog of %d - "
        "the server does not accept them, so new mounts and reconnects hang" % (sock["local"], sock["recv_q"], sock["send_q"]),
        "on the server, see why the NFS service stopped accepting (knfsd: is nfsd running, `cat /proc/fs/nfsd/threads`; "
        "nfs-ganesha: its listener thread, nfs-ganesha#1037 and #1070); restarting the service clears it",
        "iproute2 misc/ss.c (LISTEN: Recv-Q the accept queue, Send-Q the backlog)")
    found["kind"] = "hang"
    return found


def _retransmitted(sockets):
    with_info = [sock for sock in sockets if sock["info"].get("bytes_sent")]
    if not with_info:
        return []
    sent = sum(sock["info"]["bytes_sent"] for sock in with_info)
    retrans = sum(sock["info"].get("bytes_retrans", 0.0) for sock in with_info)
    segments = sum(sock["info"].get("data_segs_out") or sock["info"].get("segs_out") or 0.0 for sock in with_info)
    share = retrans / sent
    crossed = signals.lossy_share(share, segments)
    slowest = max(with_info, key=lambda sock: sock["info"].get("rtt") or 0.0)
    rtt = slowest["info"].get("rtt")
    return [tf.finding("network", "retransmitted bytes over bytes sent on the NFS connections (ss -i)", share,
                       "%d of %d bytes retransmitted over %d connection(s)%s" % (
                           retrans, sent, len(with_info), "; the longest rtt %.1f ms on %s" % (rtt, slowest["text"]) if rtt else ""),
                       with_info[0]["line"], tf.threshold_text(signals.LOSSY_RETRANS_SHARE), crossed,
                       signals.PASTE_WEIGHT_CROSSED.threshold if crossed else 0)]
