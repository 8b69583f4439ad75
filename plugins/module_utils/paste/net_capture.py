# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tcpdump and tshark/Wireshark text summaries of an NFS path: recognise them and read what they show. Pure.

What the text carries (Wireshark's TCP analysis flags, epan/dissectors/packet-tcp.c, printed in the Info column as
"[TCP Retransmission]", "[TCP Dup ACK 13710#1]", "[TCP ZeroWindow]"; tcpdump's "Flags [P.], seq ..., win 0"):
- segments shown (a packet line of either tool) and how many are retransmissions: the network's loss, read against
  the table's lossy share and only over enough segments (a paste is an excerpt chosen around the trouble);
- duplicate ACKs: the receiver saw a hole (loss or reordering);
- zero windows / window full: a receiver that did not take data off its socket (the server's nfsd threads, or CPU);
- IP fragments: NFS over UDP (or a path MTU smaller than the sender's), where one lost fragment loses the datagram;
- NFS replies with an error: NFS4ERR_DELAY / NFS3ERR_JUKEBOX are the server asking the client to retry later
  (RFC 8881 15.1.1.3: a delegation recall in progress, or the storage not ready), a fault no client tuning fixes;
- tshark -z expert summaries ("N  Sequence  TCP  This frame is a (suspected) retransmission").
"""

from __future__ import annotations

import re

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals
from ansible_collections.ckptio.nfs.plugins.module_utils.paste import text_figures as tf

KIND = "net_capture"
TAKEN_FOR = "a tcpdump or tshark/Wireshark text summary of packets"
CAN_SHOW = ("retransmitted and duplicate-acknowledged segments, zero windows, IP fragments and NFS replies asking the "
            "client to retry (NFS4ERR_DELAY/JUKEBOX) among the packets shown")

_RETRANS = re.compile(r"\[TCP (Fast |Spurious )?Retransmission\]")
_DUP_ACK = re.compile(r"\[TCP Dup ACK \d{1,12}#\d{1,12}\]")
_ZERO = re.compile(r"\[TCP (ZeroWindow|Window Full)\]")
# tcpdump advertises the window as "win N" (after "ack N,"); win 0 is a zero window.
_TCPDUMP_ZERO = re.compile(r"Flags \[[^\]]{0,12}\].{0,200}?, win 0,")
_SEGMENT = re.compile(r"\bSeq=\d|Flags \[[^\]]{0,12}\]")
_FRAGMENT = re.compile(r"Fragmented IP protocol|\bIP fragment|\(frag \d|flags \[\+\]|offset [1-9]\d{0,5}, flags")
_NFS_ERROR = re.compile(r"\b(NFS4ERR_[A-Z_]{1,30}|NFS3ERR_[A-Z_]{1,30}|NFSERR_[A-Z_]{1,30})\b")
_EXPERT = re.compile(r"^\s*(\d{1,12})\s+Sequence\s+TCP\s+(.{1,200})$")
_ARROW = re.compile(r"(?:^|\s)(\S{1,80})\s+(?:>|\u2192)\s+(\S{1,80})")
_DELAY = ("NFS4ERR_DELAY", "NFS3ERR_JUKEBOX", "NFSERR_JUKEBOX")
_NFS_PORTS = ("nfs", "2049")
_MARKS = ("[TCP ", "Flags [", "NFS4ERR_", "NFS3ERR_", "NFSERR_", "Sequence", "Fragmented IP", "(frag ", "IP fragment")

SERVER_DELAY = tf.fault(
    "server_delay", "The server answered requests with NFS4ERR_DELAY / NFS3ERR_JUKEBOX: it asked the client to retry "
    "later, because a delegation recall is in progress or the storage could not serve the request yet.",
    "Find what the server waits on: a delegation held by another client (disable delegations or the conflicting "
    "access), an HSM/tiered store recalling data, or a busy backing store; no client tuning shortens the retry wait.",
    "https://www.rfc-editor.org/rfc/rfc8881#section-15.1.1.3")


def recognise(text):
    """True when a packet line of tcpdump or tshark (or a tshark -z expert row) is anywhere in the text."""
    if not any(mark in text for mark in _MARKS):
        return False
    for _number, line in tf.lines(text):
        if _RETRANS.search(line) or _DUP_ACK.search(line) or _ZERO.search(line) or _SEGMENT.search(line) \
                or _EXPERT.match(line) or (_NFS_ERROR.search(line) and ("reply" in line.lower() or "Status" in line)):
            return True
    return False


def _side(line):
    """'server' when the packet comes from the NFS port, 'client' when it goes to it, None when the text cannot say."""
    for found in _ARROW.finditer(line):
        left, right = found.group(1).rstrip(":,"), found.group(2).rstrip(":,")
        if left.rsplit(".", 1)[-1] in _NFS_PORTS:
            return "server"
        if right.rsplit(".", 1)[-1] in _NFS_PORTS:
            return "client"
    return None


def _count(text):
    counts = {"segments": 0, "retrans": 0, "spurious": 0, "dup_acks": 0, "zero": {"server": 0, "client": 0, None: 0},
              "fragments": 0, "errors": {}, "expert_retrans": 0, "first": {}}
    for number, line in tf.lines(text):
        expert = _EXPERT.match(line)
        if expert:
            if "retransmission" in expert.group(2).lower():
                counts["expert_retrans"] += int(expert.group(1))
                counts["first"].setdefault("expert", number)
            continue
        if _SEGMENT.search(line):
            counts["segments"] += 1
            counts["first"].setdefault("segment", number)
        retrans = _RETRANS.search(line)
        if retrans:
            counts["retrans"] += 1
            counts["spurious"] += 1 if retrans.group(1) == "Spurious " else 0
            counts["first"].setdefault("retrans", number)
        if _DUP_ACK.search(line):
            counts["dup_acks"] += 1
            counts["first"].setdefault("dup_acks", number)
        zero = _ZERO.search(line)
        if zero or _TCPDUMP_ZERO.search(line):
            side = _side(line)
            # A Window Full segment is sent by the sender towards the receiver that is full: the other side.
            if zero and zero.group(1) == "Window Full" and side is not None:
                side = "client" if side == "server" else "server"
            counts["zero"][side] += 1
            counts["first"].setdefault("zero_%s" % side, number)
        if _FRAGMENT.search(line):
            counts["fragments"] += 1
            counts["first"].setdefault("fragments", number)
        for error in _NFS_ERROR.findall(line):
            counts["errors"][error] = counts["errors"].get(error, 0) + 1
            counts["first"].setdefault(error, number)
    return counts


def read(text):
    """Findings from the packets shown (see the module's docstring); [] when none of them is there."""
    counts = _count(text)
    findings = []
    _loss(findings, counts)
    first = counts["first"]
    if counts["dup_acks"]:
        findings.append(tf.finding(
            "network", "duplicate ACKs among the packets shown", counts["dup_acks"],
            "%d duplicate ACK(s): the receiver saw a hole in the stream (a segment lost or reordered)" % counts["dup_acks"],
            first["dup_acks"], weight=1))
    _zero_windows(findings, counts)
    if counts["fragments"]:
        findings.append(tf.finding(
            "network", "IP fragments among the packets shown", counts["fragments"],
            "%d IP fragment(s): NFS over UDP or a smaller path MTU; one fragment lost loses the whole datagram, which "
            "waits for the RPC timeout" % counts["fragments"], first["fragments"], weight=1))
    _errors(findings, counts)
    return findings


def _loss(findings, counts):
    segments, retrans = counts["segments"], counts["retrans"]
    if retrans and segments:
        share = retrans / float(segments)
        crossed = signals.lossy_share(share, segments)
        near = signals.LOSSY_RETRANS_SHARE.crossed(share)
        few = "" if segments >= signals.LOSS_MIN_SEGMENTS.threshold else (
            "; only %d segments shown, fewer than %d: an excerpt chosen around the trouble, consistent with loss but not "
            "its rate" % (segments, signals.LOSS_MIN_SEGMENTS.threshold))
        spurious = " (%d spurious: sent again although the first arrived)" % counts["spurious"] if counts["spurious"] else ""
        findings.append(tf.finding(
            "network", "retransmitted share of the TCP segments shown", share,
            "%d of %d TCP segments shown are retransmissions (%.2f %%)%s%s" % (
                retrans, segments, share * 100, spurious, few),
            counts["first"]["retrans"], tf.threshold_text(signals.LOSSY_RETRANS_SHARE), crossed,
            2 if crossed else (1 if near else 0)))
    elif segments:
        findings.append(tf.finding(
            "network", "retransmitted share of the TCP segments shown", 0.0,
            "none of the %d TCP segments shown is a retransmission" % segments, counts["first"]["segment"],
            tf.threshold_text(signals.LOSSY_RETRANS_SHARE)))
    elif counts["expert_retrans"]:
        findings.append(tf.finding(
            "network", "retransmissions counted by tshark -z expert", counts["expert_retrans"],
            "tshark's expert summary counts %d suspected retransmission(s); the segments sent are not in the text, so "
            "no share" % counts["expert_retrans"], counts["first"]["expert"], weight=1))


def _zero_windows(findings, counts):
    first = counts["first"]
    zero = counts["zero"]
    if zero["server"]:
        findings.append(tf.finding(
            "server_threads", "zero windows advertised by the NFS server", zero["server"],
            "%d zero-window / window-full segment(s) on the server's side: the server did not take requests off its "
            "socket in time (nfsd threads all busy, or its CPU)" % zero["server"], first["zero_server"], weight=1))
    if zero["client"]:
        findings.append(tf.finding(
            "client_cpu", "zero windows advertised by the NFS client", zero["client"],
            "%d zero-window / window-full segment(s) on the client's side: the client did not read replies off its "
            "socket in time" % zero["client"], first["zero_client"], weight=1))
    if zero[None]:
        findings.append(tf.finding(
            None, "zero windows (side not shown)", zero[None],
            "%d zero-window / window-full segment(s); the ports do not say which side was full (a receiver that did "
            "not take data off its socket)" % zero[None], first["zero_None"]))


def _errors(findings, counts):
    errors = counts["errors"]
    delays = dict((name, errors[name]) for name in _DELAY if name in errors)
    if delays:
        total = sum(delays.values())
        line = min(counts["first"][name] for name in delays)
        findings.append(tf.finding(
            None, "NFS replies asking the client to retry", total,
            "%s: the server told the client to wait and retry (the client backs off, NFS4ERR_DELAY from 100 ms up to "
            "15 s, fs/nfs/nfs4proc.c nfs4_delay)" % ", ".join("%s x%d" % item for item in sorted(delays.items())),
            line, weight=1, fault=SERVER_DELAY))
    others = dict((name, count) for name, count in errors.items() if name not in _DELAY)
    if others:
        findings.append(tf.finding(
            None, "other NFS errors in replies", sum(others.values()),
            "; ".join("%s x%d" % item for item in sorted(others.items())),
            min(counts["first"][name] for name in others)))
