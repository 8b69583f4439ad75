# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The first screen of a diagnosis (CONTRACT 3): the verdict in words, achieved against target, the
links' share of capacity, the confidence with the reason that decides it, and the first three actions.

headline() builds diagnosis.json's `headline` from the rest of the diagnosis; first_screen() lays it
out in at most SCREEN_LINES lines of at most SCREEN_COLUMNS characters. diagnosis.md, report.md and
the play's last lines lead with those lines; nothing here decides anything diagnose() did not.
Every figure goes through stats/human.py: no exponent, no None, at most 4 significant digits.
"""

from __future__ import annotations

import textwrap

from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import pace_host

# CONTRACT 3 allows 25 lines; diagnosis.md puts the screen in a text block, whose two fences count too.
SCREEN_LINES = 23
SCREEN_COLUMNS = 80
# Links below this share of capacity while the target is missed: the bandwidth paradox (the seed's
# links ran at 4.4 % with throughput 7.3x short). The same bound as network.LINK_CLEAR_SHARE.
PARADOX_SHARE = 0.3
ACTIONS = 3
# A bundle without a target (context.yml target.checkpoint_bytes null, CONTRACT 2): what to set.
NO_TARGET_TEXT = ("no target given: set ckptio_checkpoint_bytes (your checkpoint's bytes) and "
                  "ckptio_checkpoint_window_seconds (the seconds it may take)")
NO_TARGET_SAVED = " (for files saved by hand: checkpoint_bytes and window_seconds of ckptio.nfs.saved_stats_bundle)"

# The layers in words; the first mention on the screen carries the gloss (issue 23 item 12).
LAYER_WORDS = {
    "network": "the network", "server_cpu": "the server's CPUs", "client_rpc_slots": "client RPC slots",
    "server_threads": "nfsd threads", "server_storage": "the server's storage", "access_pattern": "the access pattern",
    "client_cpu": "the clients' CPUs", "none": "nothing",
}
GLOSS = {
    "client_rpc_slots": "the requests a client may have in flight: transport slots on NFSv3/4.0, session slots "
                        "the server grants on NFSv4.1+",
    "server_threads": "the server's worker threads, one per request in service",
    "access_pattern": "how the ranks lay the checkpoint out in files",
}
# The layers tuning acts on (the "still tune" of a re-architect verdict).
TUNABLE = ("client_rpc_slots", "server_threads")
VERDICT_WORDS = {"meets_target": "meets the target", "tune": "tune", "rearchitect": "re-architect",
                 "no_target": "no verdict against a target", "no_window": "no verdict on throughput"}


def pace_text(result):
    """The pace-setting host(s) in one sentence (pace_host.py), or None when the ranks ended together or were not timed."""
    pace = result.get("pace") or {}
    return pace.get("text") if pace.get("pace") else None


# The differences of a pace-setting host the first screen names (diagnosis.md and pace.text name them all).
SCREEN_DIFFERENCES = 2


def _pace_screen_text(result):
    """pace_text with at most SCREEN_DIFFERENCES differences a host, so the sentence ends on the screen (issue 43:
    five differences of one host pushed the actions off it and cut the sentence)."""
    pace = result["pace"]
    if len(_wrap(capital(pace["text"]))) <= 3:
        return pace["text"]
    short = dict(pace, pace=[dict(item, differences=item["differences"][:SCREEN_DIFFERENCES] + (
        ["%d more in diagnosis.md" % (len(item["differences"]) - SCREEN_DIFFERENCES)]
        if len(item["differences"]) > SCREEN_DIFFERENCES else [])) for item in pace["pace"]])
    return pace_host.screen_text(short)


def headline(result, figures=None):
    """diagnosis.json `headline` (CONTRACT 3) from diagnose()'s result; figures: the client totals (snapshot line)."""
    links = _links(result)
    actions = _first_actions(result)
    level, reason = _confidence(result)
    head = {
        "verdict": result["verdict"],
        "verdict_text": _verdict_text(result, actions),
        "achieved_text": human.rate(result["achieved_bytes_per_second"]),
        "target_text": _target_text(result),
        "links_text": links["text"],
        "link_share": links["share"],
        "link_capacity_bytes_per_second": links["capacity"],
        "confidence": level,
        "confidence_reason": reason,
        "actions": actions[:ACTIONS],
        "rests_on": result["achieved_source"],
        "limiting_text": _limiting_text(result),
        "snapshot_text": _snapshot_text(result, figures) if result["verdict"] == "no_window" else None,
    }
    if result.get("slot_table"):
        # The slot table seen fill, in the seed's words (diagnosis/slot_table.py); absent without its files.
        head["slot_table_text"] = result["slot_table"]["text"]
    return head


def _layer(layer, glossed=False):
    words = LAYER_WORDS.get(layer, layer)
    return "%s (%s)" % (words, GLOSS[layer]) if glossed and layer in GLOSS else words


def layer_text(layer):
    """A layer in words with its gloss (a partial diagnosis from a paste words its suspected layer so)."""
    return _layer(layer, True)


def _headroom_clause(result):
    return "tuning alone can give up to %s (%s)" % (
        human.factor(result["tuning_headroom_factor"]), result.get("tuning_headroom_why") or "what one tuned layer buys")


def _verdict_text(result, actions):
    verdict = result["verdict"]
    gap = human.factor(result["gap_factor"])
    if verdict == "rearchitect":
        tune = [action for action, layer in _actions_with_layers(result["recommendations"]) if layer in TUNABLE]
        text = "re-architect: %s, the gap is %s" % (_headroom_clause(result), gap)
        if result["limiting_layer"] not in TUNABLE:
            text = "re-architect: the limit is %s, which tuning cannot widen; the gap is %s" % (
                _layer(result["limiting_layer"]), gap)
        # A full network: its own actions come first; no "still tune" that reads like nfsd or client tuning first.
        return text + ("; still tune: %s" % tune[0] if tune and result["limiting_layer"] != "network" else "")
    where = result.get("scope") or {}
    if verdict == "tune" and where.get("kind") == "host" and result["limiting_layer"] != "client_rpc_slots":
        return _host_scope_text(result, where, gap)
    if verdict == "tune" and (result.get("network") or {}).get("state") == "lossy" and result["limiting_layer"] == "network":
        return "tune: the gap is %s and the path is lossy: repair it, %s; no slot, thread or architecture change wins back what loss takes" % (
            gap, result.get("tuning_headroom_why") or "what the loss took comes back once the path is repaired")
    if verdict == "tune":
        return "tune: the gap is %s and %s" % (gap, _headroom_clause(result).replace("tuning alone", "tuning " + _layer(
            result["limiting_layer"])))
    if verdict == "meets_target":
        spare = result["achieved_bytes_per_second"] / result["target_bytes_per_second"]
        return "meets the target with %s to spare" % human.factor(spare)
    if verdict == "no_target" and result.get("target_bytes_per_second"):
        # A distorted figure (capture flags, diagnosis/run.DISTORTED_FLAGS) is judged against no target.
        return "no verdict against the target: the achieved figure is distorted (%s)" % ", ".join(
            flag["kind"] for flag in (result.get("capture") or {}).get("flags") or ())
    if verdict == "no_target":
        return "no verdict against a target: no target was given, so nothing is short or enough"
    return ("no verdict on throughput: one mountstats snapshot is an average since the mount (%s), not a checkpoint window"
            % human.seconds((result.get("window") or {}).get("seconds")))


# What a host-scoped limit is, in words (verdict.scope).
_HOST_FAULT = {"network": "path", "client_cpu": "CPUs"}


def _host_scope_text(result, where, gap):
    """The verdict when one host (or a few) set the pace: repair that host, not the architecture (issue 43)."""
    hosts = where["hosts"]
    what = _HOST_FAULT.get(result["limiting_layer"], "setting")
    if (result.get("network") or {}).get("state") == "lossy" and result["limiting_layer"] == "network":
        what = "lossy path"
    text = "tune: the gap is %s and %s set the pace: repair %s %s, not the architecture" % (
        gap, " and ".join(hosts[:3]) + (" and %d more" % (len(hosts) - 3) if len(hosts) > 3 else ""),
        "its" if len(hosts) == 1 else "their", what)
    without = where.get("without_bytes_per_second")
    target = result.get("target_bytes_per_second")
    if without and target:
        text += "; ending with the other hosts, the checkpoint would run at %s (%s)" % (
            human.rate(without), "meets the target" if without >= target else "still %s short" % human.factor(target / without))
    elif without:
        text += "; ending with the other hosts, the checkpoint would run at %s" % human.rate(without)
    return text


def _target_text(result):
    target = result["target_bytes_per_second"]
    if not target:
        return NO_TARGET_TEXT + NO_TARGET_SAVED
    capacity = result.get("capacity") or {}
    if capacity.get("checkpoint_bytes") and capacity.get("window_seconds"):
        return "%s (%s in %s)" % (human.rate(target), human.size(capacity["checkpoint_bytes"]),
                                  human.seconds(capacity["window_seconds"]))
    return human.rate(target)


def _links(result):
    """The links' share of capacity in one line, what it is measured as, and the capacity for the figure."""
    capacity = result.get("capacity") or {}
    network = result.get("network") or {}
    rows = [row for row in network.get("links") or [] if row.get("utilisation_during") is not None and not row.get("reset")]
    if capacity.get("raw_link_bytes_per_second"):
        share = capacity.get("observed_link_utilisation")
        text = "links at %s of their declared capacity (%s achieved, all clients summed, of %s raw, %s practical)" % (
            human.share(share), human.rate(result["achieved_bytes_per_second"]),
            human.rate(capacity["raw_link_bytes_per_second"]), human.rate(capacity["practical_link_bytes_per_second"]))
        found = {"share": share, "capacity": capacity["raw_link_bytes_per_second"], "text": text}
    elif rows:
        found = _busiest_link(rows)
    elif network.get("probe_share"):
        share = network["probe_share"]
        found = {"share": share, "capacity": result["achieved_bytes_per_second"] / share,
                 "text": "links: NFS at %s of the path's TCP capacity (iperf3 probe)" % human.share(share)}
    elif network.get("state") == "lossy":
        return {"share": None, "capacity": None,
                "text": "links not measured as a capacity (no interface speed; a probe through a lossy path is none)" + _loss_text(network)}
    else:
        return {"share": None, "capacity": None,
                "text": "links not measured: no interface speed, probe or declared link speed (run "
                        "ckptio.nfs.validate_checkpoint with -e canary_validation_probe=true, or give "
                        "network.server_link_gbps in context.yml)" + _loss_text(network)}
    found["text"] += _paradox(result, found["share"], network) + _loss_text(network)
    return found


def _loss_text(network):
    """Loss beside the links' share: a lossy path looks half empty (network_loss.py)."""
    loss = network.get("loss") or {}
    if network.get("state") == "lossy":
        return "; but the path is lossy (%s)" % loss.get("summary", "loss: lossy")[len("loss: lossy - "):]
    if loss.get("state") == "unmeasured" and network.get("links") is not None:
        return "; loss unmeasured"
    return ""


def _busiest_link(rows):
    busiest = max(rows, key=lambda row: row["utilisation_during"])
    servers = [row for row in rows if row["side"] == "server" and row.get("speed_mbps")]
    capacity = sum(float(row["speed_mbps"]) for row in servers) * 1e6 / 8 if servers else \
        float(busiest["speed_mbps"]) * 1e6 / 8
    return {"share": busiest["utilisation_during"], "capacity": capacity,
            "text": "links: the busiest of %d NFS link(s) at %s of its nominal %s (%s %s %s, interface counters)" % (
                len(rows), human.share(busiest["utilisation_during"]), human.rate(float(busiest["speed_mbps"]) * 1e6 / 8),
                busiest["side"], busiest["host"], busiest["interface"])}


def _paradox(result, share, network):
    where = result.get("scope") or {}
    if network.get("state") == "full" and where.get("kind") == "host" and result["limiting_layer"] == "network":
        return ": full on %s's own path, the other hosts' had room" % " and ".join(where["hosts"][:3])
    if network.get("state") == "full":
        return ": full, the network is the limit"
    if network.get("state") == "lossy":
        return ""
    if share is not None and share < PARADOX_SHARE and result["verdict"] in ("tune", "rearchitect"):
        return "; the bandwidth paradox: the links are far from full while throughput is %s short of the target" % (
            human.factor(result["gap_factor"]))
    return ""


def limit_label(verdict):
    """What the limiting layer is called where it is shown. Averages over the mount's life can show where
    requests wait, never which layer limited a checkpoint: a no_window diagnosis names what they point
    at, not the limit (a distorted figure carries no verdict)."""
    return "points at (since-mount averages, not a verdict)" if verdict == "no_window" else "limiting layer"


def _limiting_text(result):
    verdict = result["verdict"]
    if verdict == "meets_target":
        limits = result.get("contributing") or []
        return "what limits headroom: %s" % (_layer(limits[0], True) if limits else "no signal crossed its threshold")
    # A since-mount average names its layer plainly; a verdict's layer carries its detail.
    text = "%s: %s" % (limit_label(verdict), _layer(result["limiting_layer"], verdict != "no_window"))
    if result.get("contributing"):
        text += "; also: %s" % ", ".join(_layer(layer) for layer in result["contributing"])
    return text


def _snapshot_text(result, figures):
    """What one since-mount snapshot does show: per-op queue against RTT, backlog, retransmissions."""
    write = (figures or {}).get("write") or {}
    if not write.get("ops"):
        return "the snapshot shows no WRITE since the mount"
    return ("the snapshot shows, averaged since the mount: WRITE waited %s in the queue vs %s on the wire, "
            "%s request(s) in backlog per send, %s WRITE retransmission(s)" % (
                human.seconds(write["avg_queue_ms"] / 1000.0), human.seconds(write["avg_rtt_ms"] / 1000.0),
                human.number((figures or {}).get("backlog_per_send")), human.number(int(write.get("retrans") or 0))))


def _confidence(result):
    """(level, the reason that decides it)."""
    level = result["confidence"]
    reasons = result.get("confidence_reasons") or []
    if level == "high" and result["verdict"] == "meets_target":
        return level, "the achieved throughput is measured against the target"
    if level == "high":
        return level, "the limit (%s) crossed its threshold, and every other layer that could explain it was measured" % (
            _layer(result["limiting_layer"]))
    return level, reasons[0] if reasons else "from the evidence table below"


def _actions_with_layers(recommendations):
    """[(action text, layer)], one per distinct setting, hosts counted."""
    seen = {}
    order = []
    for rec in recommendations:
        key = (rec["setting"], "%s" % (rec["value"],))
        if key in seen:
            seen[key]["hosts"] += [rec["host"]] if rec.get("host") else []
            continue
        seen[key] = {"rec": rec, "hosts": [rec["host"]] if rec.get("host") else []}
        order.append(key)
    return [(_action_text(seen[key]["rec"], seen[key]["hosts"]), seen[key]["rec"]["layer"]) for key in order]


def _first_actions(result):
    """The first ACTIONS actions in the recommendations' order; a re-architect verdict shows its first
    re-architecture action second (after the limiting layer's), so the screen holds what the verdict says."""
    pairs = _actions_with_layers(result["recommendations"])
    architecture = [pair for pair in pairs if pair[1] in ("access_pattern", "architecture")]
    if result["verdict"] == "rearchitect" and architecture and architecture[0] not in pairs[:ACTIONS]:
        pairs.remove(architecture[0])
        pairs.insert(1, architecture[0])
    return [text for text, _layer_name in pairs[:ACTIONS]]


def _action_text(rec, hosts):
    """The recommendation's short action (its `how` says the rest), and where."""
    action = rec.get("action")
    if not action:
        value = rec.get("value_text") or human.number(rec["value"])
        action = rec["setting"] if rec["value"] is None else "%s = %s" % (rec["setting"], value)
    where = "" if not hosts else " - on %s" % hosts[0] if len(hosts) == 1 else " - on %d hosts" % len(hosts)
    return action + where


def first_screen(result):
    """At most SCREEN_LINES lines of at most SCREEN_COLUMNS: what diagnosis.md, report.md and the console lead with."""
    head = result["headline"]
    lines = _wrap("Checkpoint diagnosis of %s" % _paths_text(result))
    lines += _wrap(capital(head["verdict_text"]))
    if result.get("partial") and (result.get("window") or {}).get("kind") == "training_log" and result["verdict"] != "no_window":
        # A pasted training log's checkpoint saves are a window: the slowest one's time (and rate, with its size).
        lines += _wrap("Measured in the training log: %s%s" % (result["achieved_source"][len("training log: "):], (
            "; target %s" % head["target_text"]) if result.get("target_bytes_per_second") else ""))
    elif result.get("partial"):
        # A paste (module_utils/paste/partial.py): no window, so no throughput at all.
        lines += _wrap("Suspected from what was pasted, no throughput measured%s" % (
            "; target %s" % head["target_text"] if result.get("target_bytes_per_second") else ""))
    elif result["verdict"] == "no_window":
        lines += _wrap("Averaged since the mount: %s (no checkpoint's rate); target: %s" % (
            head["achieved_text"], head["target_text"]))
    elif result.get("target_bytes_per_second"):
        lines += _wrap("Achieved %s of the %s target" % (head["achieved_text"], head["target_text"]))
    else:
        lines += _wrap("Achieved %s; %s" % (head["achieved_text"], head["target_text"]))
    if head.get("suspected_because"):
        # A paste's suspicion leads with the figure it rests on (evidence before verdicts).
        lines += _wrap("  because " + head["suspected_because"])
    elif result.get("partial") and (result.get("window") or {}).get("kind") == "training_log":
        pass  # the training log's line above says what the figure rests on
    else:
        lines += _wrap("  measured as " + head["rests_on"])
    lines += _wrap(capital(head["links_text"]))
    lines += _wrap(capital(head["limiting_text"]))
    slot_at, slot_lines = len(lines), []
    if head.get("slot_table_text"):
        slot_lines = _wrap(capital(head["slot_table_text"]))[:3]
        lines += slot_lines
    if pace_text(result):
        lines += _wrap(capital(_pace_screen_text(result)))[:3]
    if head.get("snapshot_text"):
        lines += _wrap(capital(head["snapshot_text"]))
    lines += _wrap("Confidence: %s - %s" % (head["confidence"], head["confidence_reason"]))
    room = SCREEN_LINES - len(lines) - 1
    while slot_lines and room < len(head["actions"]) * 2:
        # The slot table's line gives way to the actions: cut short, and left out when even one line is too many
        # (diagnosis.md's evidence and diagnosis.json's slot_table keep it whole).
        shorter = slot_lines[:-1]
        if shorter:
            shorter[-1] = shorter[-1][:SCREEN_COLUMNS - 4].rstrip() + " ..."
        lines[slot_at:slot_at + len(slot_lines)] = shorter
        slot_lines = shorter
        room += 1
    actions = _action_lines(head["actions"], room)
    if actions:
        lines += ["Next:"] + actions
    else:
        lines.append("Next: see the Recommendations below" if head["actions"] else "Next: nothing to change")
    return lines[:SCREEN_LINES]


def _paths_text(result):
    """The mount point, or every NFS path the canary wrote to (diagnosis/paths.py rows), in their order."""
    rows = (result.get("paths") or {}).get("paths") or []
    points = [row["mount_point"] for row in rows] or [result["mount_point"]]
    return points[0] if len(points) == 1 else ", ".join(points[:-1]) + " and " + points[-1]


def _action_lines(actions, room):
    """The actions numbered, each cut to the room left (the rest of each is in the Recommendations)."""
    if not actions or room < len(actions):
        return []
    per_action = max(1, room // len(actions))
    lines = []
    for number, action in enumerate(actions, 1):
        wrapped = _wrap("%d. %s" % (number, action), indent="   ")
        if len(wrapped) > per_action:
            wrapped = wrapped[:per_action]
            wrapped[-1] = wrapped[-1][:SCREEN_COLUMNS - 4].rstrip() + " ..."
        lines += wrapped
    return lines


def capital(text):
    return text[:1].upper() + text[1:]


def _wrap(text, indent="  "):
    return textwrap.wrap(text, width=SCREEN_COLUMNS, subsequent_indent=indent, break_on_hyphens=False) or [""]
