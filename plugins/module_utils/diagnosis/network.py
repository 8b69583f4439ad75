# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The network layer group: links, the TCP probe, declared link speeds, loss (network_loss.py) and the send side.
"""

from __future__ import annotations

import dataclasses

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import host_evidence
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import clock
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import network_loss
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.run import NETWORK_BUSY_SHARE, probe_rate, server_samples
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals


# Measured link utilisation (bytes on the NFS interfaces / (nominal speed x time)). At 70 % of
# nominal averaged over a checkpoint a link is full: TCP goodput over Ethernet tops out at
# ~94 % of line rate and a checkpoint's bursts queue well before the average gets there. Below
# 30 % the link has room for 3x more: it cannot be what limits (the seed's links ran at 4.4 %).
LINK_FULL_SHARE = signals.LINK_FULL_SHARE.threshold


LINK_CLEAR_SHARE = signals.LINK_CLEAR_SHARE.threshold


# The probe (iperf3, same path, streams = nconnect): NFS moving 80 % of what raw TCP carried is
# at the path's ceiling (the same 80 % protocol allowance as PRACTICAL_LINK_EFFICIENCY); below
# 50 % the path had room.
PROBE_FULL_SHARE = signals.PROBE_FULL_SHARE.threshold


PROBE_CLEAR_SHARE = signals.PROBE_CLEAR_SHARE.threshold


# The probe's clients must send at once for their sum to be the server's capacity: 2 s, or a
# quarter of the run, is the most the starts may differ before the sum overstates the path.
# The starts compared are each client's started_at (fractional, right before iperf3) put on the
# controller's clock with its measured offset (the lab's VMs differed by up to 1.3 s); a bundle
# from before has only iperf3's own start, in whole seconds, on the host's clock.
PROBE_START_SPREAD = signals.PROBE_START_SPREAD.threshold


PROBE_START_SPREAD_SHARE = signals.PROBE_START_SPREAD_SHARE.threshold


# Link saturation: the WRITE RTT is this many times the idle RTT while requests queue to send
# (sending_u per send >= 1). Session-slot waits leave the RTT near idle (lab: 2.9x with 30
# slots in use vs 59x with a saturated emulated link).
RTT_INFLATION_LIMIT = signals.RTT_INFLATION.threshold


SENDING_PER_SEND_LIMIT = signals.SENDING_PER_SEND.threshold


@dataclasses.dataclass(frozen=True)
class SendFinding:
    """The send side: WRITE RTT over the idle RTT, and whether requests back up to transmit (a symptom, no layer)."""
    rtt_inflation: object
    backed_up: bool


def _host_link_rows(host, side, before, after, addresses, busy_seconds, how):
    rows = []
    for row in host_evidence.link_rows(before, after, addresses, side, busy_seconds=busy_seconds):
        row = dict(row, host=host, side=side, measured_over=how)
        rows.append(row)
    return rows


def _link_rows(client_evidence, servers, checkpoint_seconds):
    """Every NFS link with bytes moved and, where its speed is known, its utilisation."""
    rows = []
    addresses = set()
    for _host, figures in sorted(client_evidence.items()):
        # Each client's rows and the servers' addresses its samples name (client_evidence.py).
        addresses.update(figures.addresses)
        rows += figures.links
    for server in servers:
        before, after, busy_seconds, how = server_samples(server, checkpoint_seconds)
        if before and after:
            rows += _host_link_rows(server["host"], "server", before, after, sorted(addresses), busy_seconds,
                                    how + ", scaled to the checkpoint's duration")
    return rows


def _probe_start(probe, summary):
    """A client's probe start on the controller's clock when its clock was measured, else as the host read it."""
    start = probe.get("started_at")
    if start is None:
        start = summary.get("start_epoch")
    if start is None:
        return None
    return clock.to_controller_time(float(start), clock.offset_of(probe.get("clock")))


def _probe_capacity(client_evidence, evidence):
    """Sum over clients of what raw TCP carried to the server in the same window (the probe), or None.

    The sum is a capacity only when the clients sent at once: starts further apart than
    PROBE_START_SPREAD (or a quarter of the run) mean each ran partly alone and faster, so the
    probe is flagged and not used.
    """
    total = 0.0
    hosts = []
    starts = []
    seconds = []
    per_host = {}
    # Each host's rate as text, for its path's row in _probe_shares too (16,384 human.rate calls fewer: 0.08 s).
    per_host_text = {}
    for host, figures in sorted(client_evidence.items()):
        probe = figures.probe
        summary = probe.get("summary") if isinstance(probe, dict) else None
        rate = probe_rate(probe)
        if rate is None:
            if isinstance(probe, dict):
                evidence.add("network", "TCP probe from %s" % host, None, "a result", True,
                             "no usable iperf3 result: %s" % ((summary or {}).get("error") or probe.get("msg") or "no summary"))
            continue
        total += rate
        per_host[host] = rate
        per_host_text[host] = human.rate(rate)
        hosts.append("%s %s (%s stream(s))" % (host, per_host_text[host], probe.get("streams", "?")))
        start = _probe_start(probe, summary)
        if start is not None:
            starts.append(start)
        if summary.get("seconds"):
            seconds.append(float(summary["seconds"]))
    if not hosts:
        return None
    spread = max(starts) - min(starts) if len(starts) > 1 else 0.0
    bound = max(PROBE_START_SPREAD, PROBE_START_SPREAD_SHARE * min(seconds)) if seconds else PROBE_START_SPREAD
    together = spread <= bound
    if not together:
        evidence.add("network", "TCP probe start spread", spread, "<= %.1f s" % bound, True,
                     "the clients' probes did not run at once (%s): their sum is no capacity and a path that looks far "
                     "from full may not be; only a path measured full still counts" % "; ".join(hosts))
    return {"bytes_per_second": total if together else None, "hosts": hosts, "start_spread_seconds": spread,
            "together": together, "per_host": per_host, "per_host_text": per_host_text}


def _network_layer(evidence, capacity, achieved, target_bps, links, probe):
    """Is a link full? Only measurements decide: nominal speeds with interface counters, the probe,
    or the link speeds the operator gave in context.yml. Returns the state and its figure."""
    # What each measurement found, in the order of the evidence: full (any measured full),
    # measured (one phrase each), clear (the measurements far from full), unknown (links
    # without a known speed).
    seen = {"full": False, "measured": [], "clear": [], "unknown": [], "full_hosts": [], "cluster_full": False}
    _declared_links(evidence, capacity, achieved, target_bps, seen)
    _interface_links(evidence, links, seen)
    probe_share = _probe_shares(evidence, links, probe, achieved, seen)
    state = _network_state(evidence, links, probe_share, seen)
    measured, unknown = seen["measured"], seen["unknown"]
    if state == "unmeasured":
        summary = "links: unmeasured (no interface speed, no probe, no link speeds in context.yml)"
    else:
        summary = "links: " + "; ".join(measured) + ("" if not unknown else "; capacity unknown for " + "; ".join(unknown))
    headline = "network %s: %s" % (state, measured[0] if len(measured) == 1 else "; ".join(measured[:2])) if measured else \
        "network unmeasured: no interface speed, probe or declared link speed"
    return {"state": state, "full": seen["full"], "summary": summary, "headline": headline, "probe_share": probe_share,
            "unknown": unknown, "full_hosts": sorted(set(seen["full_hosts"])), "cluster_full": seen["cluster_full"]}


def _declared_links(evidence, capacity, achieved, target_bps, seen):
    """The link speeds declared in context.yml against the achieved throughput."""
    if capacity.get("network_is_limit") is None:
        return
    share = achieved / capacity["practical_link_bytes_per_second"]
    seen["full"] = seen["cluster_full"] = evidence.add(
        "network", "achieved share of practical link capacity", share, ">= %.2f" % NETWORK_BUSY_SHARE,
        capacity["network_is_limit"], "%s achieved (all clients summed) of %s practical (%s raw, %s, from context.yml network)" % (
            human.rate(achieved), human.rate(capacity["practical_link_bytes_per_second"]),
            human.rate(capacity["raw_link_bytes_per_second"]), capacity["narrowest_link"]))
    if target_bps:
        evidence.add("network", "target share of practical link capacity", target_bps / capacity["practical_link_bytes_per_second"],
                     "> 1.0", not capacity["network_can_carry_target"],
                     "the links can%s carry the target" % ("" if capacity["network_can_carry_target"] else "not"))
    seen["measured"].append("%s of the declared link capacity (all clients summed, context.yml network)" % (
        human.share(capacity["observed_link_utilisation"])))
    seen["declared_share"] = capacity["observed_link_utilisation"]
    if share < LINK_CLEAR_SHARE:
        seen["clear"].append("declared links")


def _interface_links(evidence, links, seen):
    """Each NFS interface's bytes against its nominal speed."""
    for row in links:
        where = "%s %s %s" % (row["side"], row["host"], row["interface"])
        if row["reset"]:
            evidence.add("network", "interface counters on %s" % where, None, "no reset", True,
                         "a counter went backwards between the samples (interface re-created or driver reset): not used")
            continue
        if row["utilisation_during"] is None:
            seen["unknown"].append("%s (%s)" % (where, row["speed_source"]))
            continue
        is_full = row["utilisation_during"] >= LINK_FULL_SHARE
        evidence.add("network", "NFS link utilisation on %s" % where, row["utilisation_during"], ">= %.2f of nominal" % LINK_FULL_SHARE,
                     is_full, "%s over %s on a %s Mb/s link (%s; measured over %s)%s" % (
                         human.rate(row["bytes_per_second"] * row["window_seconds"] / row["busy_seconds"]),
                         human.seconds(row["busy_seconds"]),
                         row["speed_mbps"], row["speed_source"], row["measured_over"],
                         "; %d dropped, %d errors" % (row["dropped"], row["errors"]) if row["dropped"] or row["errors"] else ""))
        seen["full"] = seen["full"] or is_full
        # A client's own link full is that client's path; the server's is every client's.
        if is_full and row["side"] == "client":
            seen["full_hosts"].append(row["host"])
        elif is_full:
            seen["cluster_full"] = True
        seen["measured"].append("%s at %.1f %% of %s Mb/s" % (where, 100 * row["utilisation_during"], row["speed_mbps"]))
        if row["utilisation_during"] < LINK_CLEAR_SHARE:
            seen["clear"].append(where)


def _probe_shares(evidence, links, probe, achieved, seen):
    """NFS throughput against the probe's TCP capacity: summed over the clients, and per path.
    Returns the share the network verdict uses (the worst path when there is one), or None."""
    probe_share = None
    if probe and probe.get("lossy"):
        seen["measured"].append("the probe ran through a lossy path (%s retransmitted): no ceiling" % ", ".join(probe["lossy"]))
        return None
    if probe and probe["bytes_per_second"]:
        probe_share = achieved / probe["bytes_per_second"]
        evidence.add("network", "NFS throughput / TCP capacity of the path (probe)", probe_share, ">= %.2f" % PROBE_FULL_SHARE,
                     probe_share >= PROBE_FULL_SHARE,
                     "%s achieved (canary: bytes / (latest end - earliest start)) vs %s raw TCP summed over the clients (iperf3: %s)" % (
                         human.rate(achieved), human.rate(probe["bytes_per_second"]), "; ".join(probe["hosts"])))
    # Per path: the bytes on each client's NFS interface while its own ranks ran, against what
    # raw TCP carried on that same path. The MLPerf aggregate is diluted by the start spread and
    # the fsync tail; the interface's rate is what the link itself carried.
    shares = []
    for row in links:
        rate = (probe or {}).get("per_host", {}).get(row["host"]) if row["side"] == "client" else None
        if not rate or row["reset"] or row.get("bytes_per_second") is None or not row["measured_over"].startswith("the canary's own"):
            continue
        share = row["bytes_per_second"] / rate
        shares.append(share)
        if share >= PROBE_FULL_SHARE:
            seen["full_hosts"].append(row["host"])
        evidence.add("network", "NFS link traffic / TCP capacity of the path on client %s (probe)" % row["host"], share,
                     ">= %.2f" % PROBE_FULL_SHARE, share >= PROBE_FULL_SHARE,
                     "%s on %s during the ranks vs %s of raw TCP on the same path" % (
                         human.rate(row["bytes_per_second"]), row["interface"], probe["per_host_text"][row["host"]]))
    if not shares and probe_share is None:
        return None
    worst = max(shares) if shares else probe_share
    if worst >= PROBE_FULL_SHARE or (probe_share or 0) >= PROBE_FULL_SHARE:
        seen["full"] = True
    if (probe_share or 0) >= PROBE_FULL_SHARE:
        # The clients' summed capacity reached: the server's side of the path is full, whichever host.
        seen["cluster_full"] = True
    probe_share = worst if shares else probe_share
    seen["measured"].append("NFS at %.0f %% of the path's TCP capacity (probe%s)" % (
        100 * probe_share, ", %s summed" % human.rate(probe["bytes_per_second"]) if probe["bytes_per_second"] else
        ", clients not at once"))
    if probe_share < PROBE_CLEAR_SHARE and probe["together"]:
        seen["clear"].append("probe")
    elif not seen["full"] and not probe["together"]:
        # Probes not at once only bound the path from below: inconclusive, neither busy nor clear.
        seen["clear"].append("probe (not at once)")
    return probe_share


def _network_state(evidence, links, probe_share, seen):
    """full, clear, busy, partial or unmeasured, from what the measurements found."""
    clear, measured, unknown = seen["clear"], seen["measured"], seen["unknown"]
    # The probe measures the whole path (every hop, whatever their speeds), and declared link
    # speeds cover the server's links: either rules the network out alone. Interface counters do
    # only when every NFS link, the server's included, has a known speed.
    covered = "probe" in clear or "declared links" in clear
    interfaces_clear = bool(clear) and not unknown and any(
        row["side"] == "server" and row["utilisation_during"] is not None for row in links)
    if seen["full"]:
        state = "full"
    elif covered or interfaces_clear:
        state = "clear"
    elif len(clear) < len(measured):
        # Measured, neither full nor far from it (e.g. NFS at 53 % of the probe's capacity).
        state = "busy"
    elif measured:
        state = "partial"
    else:
        state = "unmeasured"
    if state == "clear":
        evidence.add("network", "links far from full (network ruled out)", max(
            [row["utilisation_during"] for row in links if row["utilisation_during"] is not None]
            + [share for share in (probe_share, seen.get("declared_share")) if share is not None]),
            "< %.2f of nominal, < %.2f of the probe" % (LINK_CLEAR_SHARE, PROBE_CLEAR_SHARE), False, "; ".join(measured))
    if unknown and state not in ("full", "clear", "busy"):
        evidence.add("network", "links without a known capacity", len(unknown), "speed or probe needed", False,
                     "not measured: %s; run the probe (canary_validation_probe=true) or give network.server_link_gbps" % "; ".join(unknown))
    return state


def network_evidence(evidence, run, figures):
    """network: a measured layer (links, probe, declared speeds, loss); symptoms alone never name it.
    Returns (the network layer's result, the link rows)."""
    links = _link_rows(run["client_evidence"], run["servers"], run["checkpoint_seconds"])
    probe = _probe_capacity(run["client_evidence"], evidence)
    loss = network_loss.assess(evidence, _host_windows(run["client_evidence"], run["servers"], run["checkpoint_seconds"]), links,
                               dict((host, figures.probe) for host, figures in run["client_evidence"].items()),
                               figures["idle_rtt"], dict((client["host"], client["delta"]["nconnect"]) for client in run["clients"]))
    if probe and loss["probe_lossy"]:
        # iperf3 through a lossy path measures the damage: no ceiling, and never a reason to rule the network out.
        probe = dict(probe, lossy=loss["probe_lossy"])
    net = _network_layer(evidence, run["capacity"], run["achieved"], run["target_bps"], links, probe)
    net["loss"] = loss
    # Each client's probe rate as _probe_capacity read it (the pace comparison takes these, never re-reads the probe).
    net["probe_per_host"] = (probe or {}).get("per_host") or {}
    net["lossy"] = loss["lossy"]
    if loss["lossy"]:
        # Lossy is not full: the fix is the path, not more bandwidth (network_loss.py).
        net.update(state="lossy", summary=net["summary"] + "; " + loss["summary"], headline="network lossy: " + loss["summary"][len("loss: lossy - "):])
    elif loss["state"] != "unmeasured":
        net["summary"] += "; " + loss["summary"]
    return net, links


def _host_windows(client_evidence, servers, checkpoint_seconds):
    """Each host's TCP window over the checkpoint (the canary's own samples when taken), as network_loss.assess reads
    them: the clients' from their ClientEvidence, the servers' from their samples."""
    hosts = [{"host": host, "side": "client", "window": figures.tcp, "how": figures.tcp_how}
             for host, figures in sorted(client_evidence.items())]
    for server in servers:
        before, after, _busy, how = server_samples(server, checkpoint_seconds)
        hosts.append({"host": server["host"], "side": "server", "window": network_loss.tcp_window(before, after), "how": how})
    return hosts


def send_side_evidence(evidence, clients, figures, net):
    """Does the send side back up (WRITE RTT inflated while requests wait to transmit)? A symptom
    shared by a full link and a slow server, so it names no layer itself."""
    write = figures["write"]
    idle_rtt = figures["idle_rtt"]
    rtt_inflation = write["avg_rtt_ms"] / idle_rtt if idle_rtt and write["ops"] else None
    send_backed_up = False
    if rtt_inflation is not None:
        inflated = evidence.add(None, "WRITE avg RTT / idle RTT", rtt_inflation, ">= %.1f" % RTT_INFLATION_LIMIT,
                                rtt_inflation >= RTT_INFLATION_LIMIT,
                                "WRITE avg RTT %.1f ms vs idle RTT %.1f ms (%s)" % (write["avg_rtt_ms"], idle_rtt, figures["idle_rtt_source"]))
        sending_per_send = figures["sending_per_send"]
        queued_to_send = evidence.add(None, "sending_u per send (requests waiting to transmit)", sending_per_send,
                                      ">= %.1f" % SENDING_PER_SEND_LIMIT, sending_per_send >= SENDING_PER_SEND_LIMIT,
                                      "summed over %d transport(s)" % sum(client["delta"]["rpc"]["transports"] for client in clients))
        send_backed_up = inflated and queued_to_send
        if send_backed_up:
            # A full link and a server that does not drain its sockets (TCP's receive window
            # closes) give the same two signals: only link evidence tells them apart.
            evidence.add(None, "send side backs up (RTT inflated while requests wait to transmit)", rtt_inflation,
                         "both signals above", True,
                         "a full link or a slow server: %s" % (
                             "the link is measured full" if net["full"] else
                             "the links are measured far from full, so the server is slow to take requests" if net["state"] == "clear"
                             else "the links are not (fully) measured - %s" % net["summary"]))
    return SendFinding(rtt_inflation, send_backed_up)
