# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Is the path lossy? TCP's retransmits and timeouts, the interfaces' drops and errors, the
probe's own retransmits. Pure logic on two host samples (host_reader's "tcp" block and the
interfaces' statistics, docs/capture-bundle.md) and the probe's summary.

A lossy path is not a full one: TCP backs off on every loss, so the links look half empty
while the throughput collapses. Mathis et al. ("The Macroscopic Behavior of the TCP Congestion
Avoidance Algorithm", CCR 1997): one connection carries at most
    rate <= MSS / (RTT * sqrt(p)) * C,    C = sqrt(3/2) ~ 1.22
for a loss probability p. The fix is the path (cable, optic, port, switch buffers), never slot
or thread tuning, never a new architecture.

Thresholds (one place; docs/capture-bundle.md "Loss"):
- LOSSY_RETRANS_SHARE 1 % of the segments sent: Mathis caps one connection at ~12 MSS per RTT
  there (1.22 / sqrt(0.01)); on a 1 ms data-centre path that is ~17 MB/s per connection, a small
  share of any 10 Gb/s+ link. Lab (kernel 6.1, tuned, tests/fixtures/captures/loss_2pct):
  netem loss 2 % gave 2.1 % retransmitted and 2.5x less throughput than the run without loss.
- LOSS_NOTICEABLE_SHARE 0.1 %: a healthy LAN retransmits well below it (lab control runs: under
  0.05 %); between the two the loss contributes, it is not named as the limit.
- LOSSY_TIMEOUTS_PER_SECOND 1: every retransmission timeout stalls its connection for at least
  TCP_RTO_MIN (200 ms, include/net/tcp.h) and drops its window to one segment; fast retransmit
  recovers without one, so timeouts mean losses TCP could not repair in flight.
- MIN_SEGMENTS 1000: fewer segments sent make the share noise (one retransmit of 100 is 1 %).
"""

from __future__ import annotations

import math
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals

LOSSY_RETRANS_SHARE = signals.LOSSY_RETRANS_SHARE.threshold
LOSS_NOTICEABLE_SHARE = signals.LOSS_NOTICEABLE_SHARE.threshold
LOSSY_TIMEOUTS_PER_SECOND = signals.LOSSY_TIMEOUTS_PER_SECOND.threshold
MIN_SEGMENTS = signals.LOSS_MIN_SEGMENTS.threshold
MATHIS_C = math.sqrt(1.5)
# TCP payload per segment when only the MTU is known: IPv4 (20) + TCP (20) + timestamps (12).
HEADER_BYTES = 52
DEFAULT_MTU = 1500

# (line prefix, counter): the kernel's names (net/ipv4/proc.c snmp4_tcp_list, snmp4_net_list).
TCP_COUNTERS = (
    ("Tcp", "RetransSegs"), ("Tcp", "OutSegs"), ("Tcp", "InErrs"), ("Tcp", "OutRsts"),
    ("TcpExt", "TCPTimeouts"), ("TcpExt", "TCPLostRetransmit"), ("TcpExt", "TCPFastRetrans"),
    ("TcpExt", "TCPSlowStartRetrans"), ("TcpExt", "TCPLossProbes"), ("TcpExt", "TCPSpuriousRTOs"),
    ("TcpExt", "TCPBacklogDrop"), ("TcpExt", "TCPRcvQDrop"), ("TcpExt", "ListenDrops"),
)
# A receiver that could not take what arrived: the server's side of incast.
RECEIVER_DROPS = ("InErrs", "TCPBacklogDrop", "TCPRcvQDrop", "ListenDrops")
INTERFACE_RECEIVE_DROPS = ("rx_dropped", "rx_missed_errors", "rx_fifo_errors")


def parse_counters(text):
    """{prefix: {name: int}} from /proc/net/snmp or /proc/net/netstat text (name line, value line)."""
    counters = {}
    names = {}
    for line in (text or "").splitlines():
        prefix, _colon, rest = line.partition(":")
        words = rest.split()
        if not _colon or not words:
            continue
        if prefix not in names:
            names[prefix] = words
            continue
        values = {}
        for name, word in zip(names.pop(prefix), words):
            try:
                values[name] = int(word)
            except ValueError:
                continue
        counters.setdefault(prefix, {}).update(values)
    return counters


def tcp_counters(sample):
    """The sample's TCP counters {prefix: {name: int}}, or None when the sample has none (before issue 26)."""
    block = (sample or {}).get("tcp")
    if not isinstance(block, dict):
        return None
    counters = {}
    for name in ("snmp", "netstat"):
        for prefix, values in parse_counters(block.get(name)).items():
            counters.setdefault(prefix, {}).update(values)
    return counters


def tcp_window(before, after):
    """TCP loss counters over two samples of one host.

    {"measured": False, "why"} without counters; else {"measured": True, "reset", "seconds",
    "counters": {name: delta}, "missing": [names this kernel does not print], "segments",
    "retrans_share", "timeouts_per_second"}.
    """
    first, last = tcp_counters(before), tcp_counters(after)
    if first is None or last is None:
        return {"measured": False, "why": "no TCP counters in the host samples (taken before they were collected)"}
    if not last:
        return {"measured": False, "why": "the TCP counters were unreadable (%s)" % "; ".join((after or {}).get("errors") or ["empty"])}
    seconds = (after.get("time") or 0) - (before.get("time") or 0)
    counters, missing = {}, []
    for prefix, name in TCP_COUNTERS:
        if name in last.get(prefix, {}) and name in first.get(prefix, {}):
            counters[name] = last[prefix][name] - first[prefix][name]
        else:
            missing.append(name)
    reset = any(value < 0 for value in counters.values())
    window = {"measured": True, "reset": reset, "seconds": seconds, "counters": counters, "missing": missing,
              "segments": counters.get("OutSegs"), "retrans_share": None, "timeouts_per_second": None}
    if reset:
        return window
    if counters.get("OutSegs") and "RetransSegs" in counters:
        window["retrans_share"] = counters["RetransSegs"] / float(counters["OutSegs"])
    if seconds > 0 and "TCPTimeouts" in counters:
        window["timeouts_per_second"] = counters["TCPTimeouts"] / float(seconds)
    return window


def lossy(window):
    """(lossy, contributing) for one host's tcp_window."""
    if not window.get("measured") or window.get("reset"):
        return False, False
    share = window["retrans_share"] if (window["segments"] or 0) >= MIN_SEGMENTS else None
    timeouts = window["timeouts_per_second"]
    is_lossy = (share is not None and share >= LOSSY_RETRANS_SHARE) or (timeouts is not None and timeouts >= LOSSY_TIMEOUTS_PER_SECOND)
    return is_lossy, is_lossy or (share is not None and share >= LOSS_NOTICEABLE_SHARE)


def mss_of(mtu):
    return max(536, (mtu or DEFAULT_MTU) - HEADER_BYTES)


def mathis_ceiling(mss, rtt_ms, share, connections=1):
    """Bytes per second TCP can carry under loss (Mathis et al. 1997), or None without loss or RTT."""
    if not share or share <= 0 or not rtt_ms or rtt_ms <= 0:
        return None
    return connections * MATHIS_C * mss / ((rtt_ms / 1000.0) * math.sqrt(share))


def probe_loss(summary, mtu=None):
    """The iperf3 probe's own retransmits against the segments it sent: {"retransmits", "segments", "share", "lossy"}.

    iperf3 counts retransmits from TCP_INFO (tcpi_total_retrans) on the sender; segments are the
    bytes it sent over the MSS (an estimate: the true count is a little higher with small writes).
    """
    summary = summary if isinstance(summary, dict) else {}
    retransmits = summary.get("retransmits")
    sent = summary.get("sent_bits_per_second")
    seconds = summary.get("seconds")
    if retransmits is None or not sent or not seconds:
        return {"retransmits": retransmits, "segments": None, "share": None, "lossy": False}
    segments = float(sent) * float(seconds) / 8.0 / mss_of(mtu)
    share = float(retransmits) / segments if segments else None
    return {"retransmits": int(retransmits), "segments": int(segments), "share": share,
            "lossy": bool(share is not None and share >= LOSSY_RETRANS_SHARE)}


def _share_text(window):
    share = window["retrans_share"]
    return "%s of %d segments retransmitted" % ("%.2f %%" % (100 * share) if share is not None else "-", window["segments"] or 0)


def _host_row(evidence, host, window, host_links, rtt_ms, connections):
    """One host's loss row: its TCP window, its NFS interfaces' drops and errors (host_links: its own link rows), the Mathis ceiling."""
    where = "%s %s" % (host["side"], host["host"])
    if not window["measured"]:
        return {"host": host["host"], "side": host["side"], "measured": False, "why": window["why"]}
    if window["reset"]:
        evidence.add("network", "TCP counters on %s" % where, None, "no reset", True,
                     "a TCP counter went backwards between the samples (reboot): loss not measured there")
        return {"host": host["host"], "side": host["side"], "measured": False, "why": "counters reset"}
    is_lossy, contributing = lossy(window)
    interfaces = [(row["interface"], row.get("loss_counters") or {}, row.get("mtu")) for row in host_links]
    errors = dict(("%s %s" % (name, counter), value) for name, statistics, _mtu in interfaces
                  for counter, value in sorted(statistics.items()) if value)
    mtu = next((mtu for _name, _counters, mtu in interfaces if mtu), None)
    ceiling = mathis_ceiling(mss_of(mtu), rtt_ms, window["retrans_share"], connections) if contributing else None
    counters = window["counters"]
    evidence.add("network", "TCP retransmitted share of segments on %s" % where, window["retrans_share"],
                 ">= %.2f (or >= %.0f timeouts/s)" % (LOSSY_RETRANS_SHARE, LOSSY_TIMEOUTS_PER_SECOND), is_lossy,
                 "%s (/proc/net/snmp RetransSegs/OutSegs over %.0f s, %s); TCPTimeouts %s (%s/s), fast retransmits %s, "
                 "loss probes %s, lost retransmits %s%s%s%s" % (
                     _share_text(window), window["seconds"], host["how"], counters.get("TCPTimeouts", "-"),
                     "%.2f" % window["timeouts_per_second"] if window["timeouts_per_second"] is not None else "-",
                     counters.get("TCPFastRetrans", "-"), counters.get("TCPLossProbes", "-"), counters.get("TCPLostRetransmit", "-"),
                     "; interface " + ", ".join("%s %d" % item for item in sorted(errors.items())) if errors else
                     "; no drops or errors on its NFS interface(s)" if interfaces else "",
                     "; Mathis: at this loss and %.1f ms RTT, %d connection(s) carry at most %.2f MB/s" % (
                         rtt_ms, connections, ceiling / 1e6) if ceiling else "",
                     "; not printed by this kernel: %s" % ", ".join(window["missing"]) if window["missing"] else ""))
    receiver_drops = sum(counters.get(name, 0) for name in RECEIVER_DROPS) + sum(
        statistics.get(name, 0) for _name, statistics, _mtu in interfaces for name in INTERFACE_RECEIVE_DROPS)
    return {"host": host["host"], "side": host["side"], "measured": True, "lossy": is_lossy, "contributing": contributing,
            "retrans_share": window["retrans_share"], "segments": window["segments"], "timeouts": counters.get("TCPTimeouts"),
            "timeouts_per_second": window["timeouts_per_second"], "interfaces": [name for name, _c, _m in interfaces],
            "interface_errors": errors, "receiver_drops": receiver_drops, "mathis_bytes_per_second": ceiling,
            "missing": window["missing"]}


def _links_by_host(links):
    """{(host, side): its link rows, in the order of links}: each host's rows found once (a scan of every
    link per measured host was quadratic: 4,096 clients with TCP counters took 17 s)."""
    links_of = {}
    for row in links:
        links_of.setdefault((row["host"], row["side"]), []).append(row)
    return links_of


def _probe_rows(evidence, probes, links):
    """Each client's probe: its own retransmits; a probe through a lossy path measured the damage, not the capacity."""
    rows = {}
    # Each client's first link with a known MTU, found once (a search per probe is quadratic at thousands of clients).
    mtus = {}
    for row in links:
        if row["side"] == "client" and row.get("mtu"):
            mtus.setdefault(row["host"], row["mtu"])
    for host, probe in sorted(probes.items()):
        if not isinstance(probe, dict) or not isinstance(probe.get("summary"), dict):
            continue
        mtu = mtus.get(host)
        row = probe_loss(probe["summary"], mtu)
        if row["share"] is None:
            continue
        rows[host] = row
        evidence.add("network", "TCP probe retransmits from %s" % host, row["share"], "< %.2f of segments" % LOSSY_RETRANS_SHARE,
                     row["lossy"], "iperf3 retransmitted %d of ~%d segments%s" % (
                         row["retransmits"], row["segments"],
                         ": the probe ran through a lossy path, so it measured the damage, not the capacity - it is no "
                         "ceiling and rules nothing out" if row["lossy"] else ""))
    return rows


def _probe_loss_rows(evidence, rows, probe, links_of, rtt_ms, connections):
    """The host rows, with a client whose host counters are missing read from its probe's own retransmits.

    A bundle taken before the host TCP counters existed (or a host whose counters were unreadable) still
    holds each client's iperf3 retransmits over the same path: a lossy probe names the path lossy there,
    so loss is put before the server's storage or CPU (issue 43). A client whose own counters were read
    over the checkpoint keeps them: they measured the checkpoint itself, the probe ran beside it.
    """
    by_host = dict(((row["host"], row["side"]), index) for index, row in enumerate(rows))
    rows = list(rows)
    for host, item in sorted(probe.items()):
        index = by_host.get((host, "client"))
        if index is not None and rows[index]["measured"]:
            continue
        if not item["lossy"]:
            continue
        interfaces = [row["interface"] for row in links_of.get((host, "client"), [])]
        mtu = next((row.get("mtu") for row in links_of.get((host, "client"), []) if row.get("mtu")), None)
        ceiling = mathis_ceiling(mss_of(mtu), rtt_ms, item["share"], connections.get(host, 1))
        evidence.add("network", "TCP retransmitted share of segments on client %s (its probe: no host TCP counters)" % host,
                     item["share"], ">= %.2f" % LOSSY_RETRANS_SHARE, True,
                     "iperf3 retransmitted %d of ~%d segments over the path the checkpoint took; the host samples hold no TCP "
                     "counters (a bundle from before they were collected), so the probe's loss stands for the path's%s" % (
                         item["retransmits"], item["segments"],
                         "; Mathis: at this loss and %.1f ms RTT, %d connection(s) carry at most %.2f MB/s" % (
                             rtt_ms, connections.get(host, 1), ceiling / 1e6) if ceiling else ""))
        row = {"host": host, "side": "client", "measured": True, "source": "probe", "lossy": True, "contributing": True,
               "retrans_share": item["share"], "segments": item["segments"], "timeouts": None, "timeouts_per_second": None,
               "interfaces": interfaces, "interface_errors": {}, "receiver_drops": 0, "mathis_bytes_per_second": ceiling,
               "missing": []}
        if index is None:
            rows.append(row)
        else:
            rows[index] = row
    return rows


def assess(evidence, hosts, links, probes, rtt_ms, connections):
    """The loss state of the checkpoint's paths.

    hosts: [{"host", "side", "before", "after", "how"}] (each host's samples over the checkpoint), or with
    "window" (their tcp_window, worked out where the host was read) instead of the samples;
    links: host_evidence.link_rows rows (with "host", "side" and "loss_counters");
    probes: {client: probe.json}; rtt_ms: the idle RTT; connections: {client: nconnect}.
    Returns {"state": lossy|contributing|clean|unmeasured, "lossy", "hosts": [...], "lossy_hosts",
    "probe": {host: probe_loss}, "probe_lossy": [host], "incast", "summary"}.
    """
    links_of = _links_by_host(links)
    rows = [_host_row(evidence, host, host["window"] if "window" in host else tcp_window(host["before"], host["after"]),
                      links_of.get((host["host"], host["side"]), []), rtt_ms, connections.get(host["host"], 1)) for host in hosts]
    probe = _probe_rows(evidence, probes, links)
    rows = _probe_loss_rows(evidence, rows, probe, links_of, rtt_ms, connections)
    measured = [row for row in rows if row["measured"]]
    lossy_rows = [row for row in measured if row["lossy"]]
    lossy_clients = [row for row in lossy_rows if row["side"] == "client"]
    # Incast: loss where many senders meet one receiver - several clients lose while the server
    # (or its interface) drops what arrives. A loss on one client alone is that client's path.
    server_drops = [row for row in measured if row["side"] == "server" and row["receiver_drops"]]
    incast = len(lossy_clients) >= 2 and bool(server_drops)
    if lossy_rows or any(item["lossy"] for item in probe.values()):
        state = "lossy" if lossy_rows else "contributing"
    elif any(row["contributing"] for row in measured):
        state = "contributing"
    elif measured:
        state = "clean"
    else:
        state = "unmeasured"
    unmeasured = [row for row in rows if not row["measured"]]
    if state == "unmeasured":
        evidence.add("network", "TCP loss counters", None, "host samples with /proc/net/snmp", False,
                     "loss unmeasured: %s" % ("; ".join(sorted(set(row["why"] for row in unmeasured))) or "no host samples"))
    summary = _summary(state, lossy_rows, measured, incast, probe)
    return {"state": state, "lossy": bool(lossy_rows), "hosts": rows, "lossy_hosts": [row["host"] for row in lossy_rows],
            "probe": probe, "probe_lossy": sorted(host for host, item in probe.items() if item["lossy"]), "incast": incast,
            "server_drops": [row["host"] for row in server_drops], "summary": summary}


def _summary(state, lossy_rows, measured, incast, probe):
    if state == "unmeasured":
        return "loss: unmeasured (no TCP counters in the host samples)"
    worst = max(measured, key=lambda row: row["retrans_share"] or 0) if measured else None
    text = "loss: %s" % state
    if lossy_rows:
        text += " - " + "; ".join("%s %s retransmitted%s%s" % (
            row["host"], "%.1f %%" % (100 * row["retrans_share"]) if row["retrans_share"] is not None else "-",
            ", %d timeouts" % row["timeouts"] if row["timeouts"] else "",
            " (its probe)" if row.get("source") == "probe" else "") for row in lossy_rows[:5])
        if len(lossy_rows) > 5:
            text += "; and %d more host(s)" % (len(lossy_rows) - 5)
    elif worst is not None and worst["retrans_share"] is not None:
        text += " - worst %s %.2f %% retransmitted" % (worst["host"], 100 * worst["retrans_share"])
    if incast:
        text += "; incast-like (several clients lose while the server drops what arrives)"
    lossy_probes = sorted(host for host, item in probe.items() if item["lossy"])
    if lossy_probes:
        text += "; the probe retransmitted too (%s): no ceiling" % ", ".join(lossy_probes)
    return text


def recommendations(loss):
    """The network's repair actions for a lossy path, per host and counter; never slot or thread tuning."""
    recs = []
    for row in loss["hosts"]:
        if not row.get("lossy"):
            continue
        where = "%s %s" % (row["host"], "/".join(row["interfaces"]) or "its NFS interface")
        share = "%.1f %%" % (100 * row["retrans_share"]) if row["retrans_share"] is not None else "-"
        if row["interface_errors"]:
            counters = ", ".join("%s %d" % item for item in sorted(row["interface_errors"].items()))
            action = "repair the path at %s: %s - check the cable/optic and the switch port (ethtool -S, the port's error counters)" % (
                where, counters)
        else:
            action = ("repair the path of %s: %s of its segments were retransmitted with no error on its own NIC - check the "
                      "switch port's discards and errors, the optics and the links between it and the server" % (row["host"], share))
        recs.append({"layer": "network", "setting": "repair the lossy path", "value": None, "host": row["host"], "action": action,
                     "how": "read the NIC's counters (ethtool -S %s) and the switch port's error/discard counters; replace the "
                            "cable or optic that counts CRC errors; then capture again" % (row["interfaces"] or ["IF"])[0],
                     "reason": "TCP retransmitted %s of the segments (%s timeouts): every loss halves the window, so the "
                               "links look half empty while the throughput collapses (Mathis et al.: rate ~ MSS / (RTT x sqrt(p)))"
                               % (share, row["timeouts"] if row["timeouts"] is not None else "-")})
    if loss["incast"] or len(loss["lossy_hosts"]) >= 2:
        recs.append({"layer": "network", "setting": "switch buffers and senders", "value": None,
                     "action": ("loss where many senders meet one receiver (incast)" if loss["incast"] else
                                "several clients lose at once (a shared switch path or buffer)")
                     + ": fewer concurrent senders or paced senders (fq qdisc), and flow control or ECN on the switch path",
                     "how": "enable 802.3x/PFC flow control or ECN (net.ipv4.tcp_ecn=1 with ECN marking on the switch) end to "
                            "end; stagger the ranks' writes or pace them (tc qdisc fq maxrate) so fewer flows burst into one port",
                     "reason": "several clients lose segments at once%s: a switch buffer overruns where their flows meet" % (
                         " while the server drops what arrives (%s)" % ", ".join(loss["server_drops"]) if loss["server_drops"] else "")})
    return recs
