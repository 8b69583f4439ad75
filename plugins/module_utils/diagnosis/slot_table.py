# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slot table seen fill (issue 47): direct evidence for or against client RPC slots. Pure.

mountstats lets the diagnosis infer the slots (requests in flight by Little's law, queue time against RTT);
the host sampler's sysfs xprt_info and debugfs tasks samples show the table itself, and the sunrpc
rpc_stats_latency tracepoint each RPC's backlog, RTT and execute time. Each client's files are summed up where
they are read (diagnosis/slot_samples.py, kept in the client's row as `slot_table`); this module reads those
summaries against diagnosis/signals.py:
- full in most samples (SLOT_TABLE_FULL_SHARE), or RPCs waiting for a session slot (SESSION_SLOT_WAITERS): direct
  evidence for client RPC slots - unless a WRITE spends most of its time waiting for the reply
  (REPLY_WAIT_SHARE): then the server holds the slots, and a larger table would only queue there;
- full in fewer than SLOT_TABLE_CLEAR_SHARE of the samples, with no session-slot waits: client slots are ruled out.
A bundle without the files gives no finding (None) and changes nothing; one that holds some of them says what
was not seen, client by client.
"""

from __future__ import annotations

import dataclasses

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.markdown import PER_HOST_LINES_MAX
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.slot_samples import FILES, SHOWS
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human


@dataclasses.dataclass(frozen=True)
class HostSlots:
    """One client's mount: samples and those with the table full, the slots in use at the peak (and on average)
    against the cap (kind "session" or "transport", cap_source: where the cap comes from), the backlog and
    session-slot waiters, the WRITE's reply share (and what it was measured with), how the files were mapped to the
    mount; latency: the tracepoint's per-op and per-transport p50/p90/p99 and the WRITE's time split (None without
    it); task_split: the sampled WRITE tasks' shares waiting for a slot, to send, for the reply; agreement: the
    tracepoint's WRITE means over mountstats' averages of the same window ({queue, rtt, execute}: ratio)."""
    host: str
    samples: int
    full_samples: int
    kind: str
    peak_in_use: object
    cap: object
    cap_source: str
    max_backlog: object
    mean_waiters: object
    max_waiters: object
    reply_share: object
    reply_source: object
    mapping: tuple
    mean_in_use: object = None
    latency: object = None
    task_split: object = None
    agreement: object = None

    @property
    def full_share(self):
        return self.full_samples / self.samples if self.samples else None


@dataclasses.dataclass(frozen=True)
class SlotTableFinding:
    """The bundle's slot table: every client's HostSlots, the samples summed, whether the table was full most of the
    window (full), far from full (clear), RPCs waited for a session slot (session_waits), the reply wait dominated
    (reply_dominates); text: the first screen's sentence; not_seen: (host, file, why) of the files not seen."""
    hosts: tuple
    samples: int
    full_samples: int
    full: bool
    clear: bool
    session_waits: bool
    reply_dominates: bool
    text: str
    not_seen: tuple
    send_backed_up: bool = False

    @property
    def full_share(self):
        return self.full_samples / self.samples if self.samples else None

    @property
    def points_at_slots(self):
        """Direct evidence for client RPC slots: full (or session-slot waits), neither the reply wait dominating nor
        the send side backed up (then the slots are held by requests waiting on the server or the network)."""
        return (self.full or self.session_waits) and not self.reply_dominates and not self.send_backed_up

    def shown_hosts(self):
        """The hosts diagnosis.json lists: all, or the PER_HOST_LINES_MAX fullest (then by name)."""
        if len(self.hosts) <= PER_HOST_LINES_MAX:
            return self.hosts
        return tuple(sorted(self.hosts, key=lambda host: (-(host.full_share or 0.0), host.host))[:PER_HOST_LINES_MAX])

    def as_result(self):
        """diagnosis.json `slot_table`."""
        return {"samples": self.samples, "full_samples": self.full_samples, "full_share": _rounded(self.full_share),
                "full": self.full, "clear": self.clear, "session_waits": self.session_waits,
                "reply_dominates": self.reply_dominates, "text": self.text,
                # Above PER_HOST_LINES_MAX hosts, the fullest ones (diagnosis.json stays the size of its folding).
                "hosts": [dict(dataclasses.asdict(host), full_share=_rounded(host.full_share),
                               mapping=list(host.mapping)) for host in self.shown_hosts()],
                "hosts_not_shown": len(self.hosts) - len(self.shown_hosts()),
                "not_seen": [{"file": name, "why": why, "hosts": hosts[:PER_HOST_LINES_MAX], "count": len(hosts)}
                             for name, why, hosts in self.not_seen_groups()]}

    def not_seen_groups(self):
        """[(file, why, [hosts])] of the files not seen, one a file and reason, in the order first seen."""
        groups = {}
        for host, name, why in self.not_seen:
            groups.setdefault((name, why), []).append(host)
        return [(name, why, hosts) for (name, why), hosts in groups.items()]


def _rounded(value):
    return round(value, 4) if isinstance(value, float) else value


def assess(evidence, clients, sessions, send_backed_up=False):
    """SlotTableFinding of the clients' slot_table summaries with their evidence rows, or None when no client has one;
    send_backed_up: the send side's finding (network.send_side_evidence), which holds slots too."""
    summaries = [(client["host"], client.get("slot_table")) for client in clients if client.get("slot_table")]
    if not summaries:
        if clients:
            # An older bundle (or rpc_sampling=off): diagnosed from mountstats as before, and said so in one row.
            evidence.add(None, "slot table not seen (%s)" % ", ".join(FILES.values()), None, "-", False,
                         "no client's bundle part holds them (a canary before 0.6.0, rpc_sampling=off, or no canary): %s "
                         "were not seen; client slots are judged from mountstats alone" % ", ".join(
                             SHOWS[key] for key in FILES))
        return None
    by_host = dict((client["host"], client) for client in clients)
    hosts = tuple(_host(name, summary, sessions, by_host[name]) for name, summary in summaries)
    not_seen = tuple((name, FILES[key], why) for name, summary in summaries for key, why in sorted(summary["not_seen"].items()))
    samples = sum(host.samples for host in hosts)
    full_samples = sum(host.full_samples for host in hosts)
    enough = signals.SLOT_SAMPLES_MIN.crossed(samples)
    share = full_samples / samples if samples else None
    full = enough and signals.SLOT_TABLE_FULL_SHARE.crossed(share)
    waits = any(signals.SESSION_SLOT_WAITERS.crossed(host.mean_waiters) for host in hosts)
    reply = any(signals.REPLY_WAIT_SHARE.crossed(host.reply_share) for host in hosts if host.full_share and
                signals.SLOT_TABLE_FULL_SHARE.crossed(host.full_share))
    clear = enough and signals.SLOT_TABLE_CLEAR_SHARE.crossed(share) and not waits
    finding = SlotTableFinding(hosts, samples, full_samples, full, clear, waits, reply, "", not_seen, send_backed_up)
    finding = dataclasses.replace(finding, text=_text(finding))
    _add_evidence(evidence, finding)
    return finding


# Where a session's cap comes from when no trace showed the server's grant.
REQUESTED_SESSION_SLOTS = "nfs max_session_slots (requested)"


def server_grant(summary):
    """The v4.1 session slots the server granted a client (nfs4_sequence_done's highest_slotid + 1, slot_samples), from
    its slot-table summary (a client row's slot_table); None where the trace was not taken."""
    return ((summary or {}).get("latency") or {}).get("session_slots")


def _host(name, summary, sessions, client):
    full = summary.get("full") or {"samples": 0, "full": 0}
    settings = client.get("sunrpc") or {}
    xprt, tasks, latency = summary.get("transport") or {}, summary.get("session") or {}, summary.get("latency") or {}
    session = bool(sessions and tasks)
    if session:
        kind, peak, cap, cap_source = "session", tasks.get("peak_in_use"), server_grant(summary), "the server's grant"
        if cap is None:
            cap, cap_source = _int(settings.get("max_session_slots")), REQUESTED_SESSION_SLOTS
    else:
        kind, peak, cap, cap_source = "transport", xprt.get("peak_in_use"), xprt.get("cap"), "xprt_info max_num_slots"
    reply, source = _reply(latency, tasks)
    parts = (("xprt_info", xprt), ("tasks", tasks), ("latency", latency))
    mapping = tuple("%s: %s" % (part, block["how"]) for part, block in parts if block.get("how"))
    kept = dict((key, latency[key]) for key in ("events", "mapped", "by_op", "by_transport", "write_split", "truncated")
                if key in latency) or None
    return HostSlots(name, full["samples"], full["full"], kind, peak, cap, cap_source, xprt.get("max_backlog"),
                     tasks.get("mean_waiters"), tasks.get("max_waiters"), reply, source, mapping,
                     tasks.get("mean_in_use") if session else xprt.get("mean_in_use"), kept, tasks.get("write_split"),
                     _agreement(latency, client))


# mountstats' per-op average (stats_delta) beside the tracepoint's mean of the same time (slot_samples._percentiles).
_AGREEING = (("queue", "avg_queue_ms", "backlog"), ("rtt", "avg_rtt_ms", "rtt"), ("execute", "avg_exe_ms", "execute"))


def _agreement(latency, client):
    """{queue, rtt, execute}: the tracepoint's WRITE mean over mountstats' WRITE average, or None without both."""
    traced = ((latency.get("by_op") or {}).get("WRITE") or {})
    counted = ((client.get("delta") or {}).get("ops") or {}).get("WRITE") or {}
    if not traced or not counted.get("ops"):
        return None
    ratios = {}
    for name, average, key in _AGREEING:
        mean_us = (traced.get(key) or {}).get("mean")
        if mean_us is not None and counted.get(average):
            ratios[name] = mean_us / 1000.0 / counted[average]
    return ratios or None


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _reply(latency, tasks):
    """(share of a WRITE's time waiting for the reply, how measured): the tracepoint's rtt / execute first, else the
    share of sampled WRITE tasks on xprt_pending; (None, None) when neither."""
    split = latency.get("write_split")
    if split:
        return split["reply"], "rpc_stats_latency rtt / execute over %d WRITEs" % split["writes"]
    split = tasks.get("write_split")
    if split:
        return split["reply"], "WRITE tasks sampled on xprt_pending (%d observations)" % split["observations"]
    return None, None


def _slots_words(host, clear=False):
    """The slots in use against the cap: the peak, or on a table far from full (clear) the mean and the peak."""
    if host.peak_in_use is None:
        return "%s slots: in use unmeasured" % host.kind
    if host.cap is None:
        return "peak %s %s slots in use, cap unknown" % (human.number(host.peak_in_use), host.kind)
    requested = host.cap_source == REQUESTED_SESSION_SLOTS
    if host.peak_in_use > host.cap:
        # Task lists not mapped to the mount's RPC client count every NFS task of the host (slot_samples): more
        # holders than the cap is the host's count, never "4 of 2" slots.
        return "%s %s slots %s; %s RPCs held a slot at once, the host's NFS clients together" % (
            human.number(host.cap), host.kind, "requested" if requested else "granted", human.number(host.peak_in_use))
    if requested:
        # The client's request is no table size: the server grants fewer (30 on the lab's knfsd, docs/kernels.md).
        return "%s %s slots in use at most; %s requested, the server's grant unmeasured (rpc_sampling=trace shows it)" % (
            human.number(host.peak_in_use), host.kind, human.number(host.cap))
    if clear and host.mean_in_use is not None:
        return "%s of %s %s slots in use on average, %s at most" % (
            human.number(round(host.mean_in_use, 1)), human.number(host.cap), host.kind, human.number(host.peak_in_use))
    return "%s of %s %s slots" % (human.number(host.peak_in_use), human.number(host.cap), host.kind)


def _text(finding):
    """The first screen's sentence, in the seed's words: 'slot table full in 87 % of samples (160 of 160 session slots)'."""
    if not finding.samples:
        return "slot table not sampled: %s" % "; ".join("%s %s" % (name, why) for name, _file, why in finding.not_seen[:2])
    worst = max((host for host in finding.hosts if host.samples), key=lambda host: (host.full_share or 0.0, host.host))
    clear = finding.clear and not (finding.session_waits or finding.reply_dominates or finding.points_at_slots)
    text = "slot table full in %s of samples (%s%s)" % (
        human.share(finding.full_share), _slots_words(worst, clear), "" if len(finding.hosts) == 1 else ", on %s" % worst.host)
    if finding.session_waits:
        text += "; up to %s RPCs waited for a session slot" % human.number(worst.max_waiters)
    if finding.reply_dominates:
        text += ", but WRITEs waited %s of their time for the reply: the server holds the slots" % human.share(
            max(host.reply_share for host in finding.hosts if host.reply_share is not None))
    elif finding.points_at_slots:
        text += ": direct evidence for client RPC slots"
    elif (finding.full or finding.session_waits) and finding.send_backed_up:
        text += ", but requests also waited to be sent: not the slots alone"
    elif finding.clear:
        text = "slot table far from full: " + text[len("slot table "):] + "; client slots ruled out"
    elif not signals.SLOT_SAMPLES_MIN.crossed(finding.samples):
        text += "; too few samples to tell (< %s)" % human.number(signals.SLOT_SAMPLES_MIN.threshold)
    return text


def _add_evidence(evidence, finding):
    """One row of the table's fill, one of session-slot waits, one of the reply wait, one of what was not seen."""
    details = "; ".join(_host_detail(host) for host in finding.hosts[:8] if host.samples)
    if finding.samples:
        evidence.add("client_rpc_slots", "slot table full (share of samples: sysfs xprt_info, debugfs tasks)", finding.full_share,
                     "%s %s (%s)" % (signals.SLOT_TABLE_FULL_SHARE.comparison, human.share(signals.SLOT_TABLE_FULL_SHARE.threshold),
                                     signals.SLOT_TABLE_FULL_SHARE.name),
                     finding.full and finding.points_at_slots, "%d of %d samples full%s; %s" % (
                         finding.full_samples, finding.samples, _held_by(finding), details))
    waiting = [host for host in finding.hosts if host.mean_waiters is not None]
    if waiting:
        worst = max(waiting, key=lambda host: host.mean_waiters)
        evidence.add("client_rpc_slots", "RPCs waiting for a session slot per sample (debugfs 'ForeChannel Slot table')",
                     worst.mean_waiters, ">= %s (%s)" % (human.number(signals.SESSION_SLOT_WAITERS.threshold),
                                                         signals.SESSION_SLOT_WAITERS.name),
                     finding.session_waits and finding.points_at_slots,
                     "%s: up to %s waiting" % (worst.host, human.number(worst.max_waiters)))
    replying = [host for host in finding.hosts if host.reply_share is not None]
    if replying:
        worst = max(replying, key=lambda host: host.reply_share)
        evidence.add(None, "WRITE time waiting for the server's reply (with the table full)", worst.reply_share,
                     ">= %s (%s)" % (human.share(signals.REPLY_WAIT_SHARE.threshold), signals.REPLY_WAIT_SHARE.name),
                     finding.reply_dominates, "%s: %s" % (worst.host, worst.reply_source))
    _latency_evidence(evidence, finding)
    for name, why, hosts in finding.not_seen_groups():
        where = hosts[0] if len(hosts) == 1 else "%d hosts (%s%s)" % (len(hosts), ", ".join(hosts[:3]), ", ..." if len(hosts) > 3 else "")
        evidence.add(None, "%s not seen on %s" % (name, where), None, "-", False, "%s; it would show %s" % (
            why, SHOWS[_key(name)]))


def _held_by(finding):
    """Why a full table is not counted as the slots' (the row is then not crossed)."""
    if finding.full and finding.reply_dominates:
        return " (not counted: the WRITEs waited mostly for the server's reply)"
    if finding.full and finding.send_backed_up:
        return " (not counted: requests also waited to be sent)"
    return ""


_NOT_THE_SAME = "; they did not see the same RPCs (tracing started late, or the buffer dropped events)"


def _latency_evidence(evidence, finding):
    """The WRITE's time split and percentiles of the host that traced the most WRITEs, and the trace against
    mountstats (a figure of the window: the two count the same RPCs)."""
    traced = [host for host in finding.hosts if ((host.latency or {}).get("by_op") or {}).get("WRITE")]
    if not traced:
        return
    host = max(traced, key=lambda item: item.latency["by_op"]["WRITE"]["count"])
    write, split = host.latency["by_op"]["WRITE"], host.latency.get("write_split")
    quantiles = "; ".join("%s p50/p90/p99 %s" % (name, "/".join(human.seconds(write[name][label] / 1e6) for label in (
        "p50", "p90", "p99"))) for name in ("backlog", "rtt", "execute"))
    evidence.add(None, "WRITE time before transmission (slots and socket) vs waiting for the reply (rpc_stats_latency)",
                 split["queue"] if split else None, "-", False, "%s: %d WRITEs; %s%s" % (
                     host.host, write["count"], quantiles, "; queue %s, reply %s, other %s of their time" % (
                         human.share(split["queue"]), human.share(split["reply"]), human.share(split["other"]))
                     if split else ""))
    compared = [item for item in finding.hosts if item.agreement]
    if compared:
        worst = max(compared, key=lambda item: max(abs(ratio - 1.0) for ratio in item.agreement.values()))
        off = max(abs(ratio - 1.0) for ratio in worst.agreement.values())
        apart = signals.TRACE_AGREEMENT_SHARE.crossed(off)
        ratios = ", ".join("%s %s" % (name, human.factor(ratio)) for name, ratio in sorted(worst.agreement.items()))
        evidence.add(None, "rpc_stats_latency WRITE means against mountstats' averages (same window)", off,
                     "%s %s (%s)" % (signals.TRACE_AGREEMENT_SHARE.comparison, human.share(signals.TRACE_AGREEMENT_SHARE.threshold),
                                     signals.TRACE_AGREEMENT_SHARE.name), apart,
                     "%s: traced / counted %s%s" % (worst.host, ratios, _NOT_THE_SAME if apart else ""))


def _key(name):
    return next(key for key, file_name in FILES.items() if file_name == name)


def _host_detail(host):
    return "%s %d/%d full, %s, backlog up to %s" % (host.host, host.full_samples, host.samples, _slots_words(host),
                                                    human.number(host.max_backlog))


def why_not_text(finding):
    """The why-not line of client slots when the table was seen far from full, else None."""
    if finding is None or not finding.clear:
        return None
    return "not the client's RPC slots: %s" % finding.text
