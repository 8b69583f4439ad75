# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A partial diagnosis from the readings of pasted files, in diagnosis.json's shape. Pure.

What a bundle's diagnosis (module_utils/diagnosis/) says from a measured window, this
says as far as a paste allows: the layers the files speak for, the layers they cannot see
(`unmeasured`), a `suspected` limiting layer weighed from the files' signals with a confidence
(low from one kind of evidence, medium when two kinds agree; never high: no window of the whole
checkpoint was measured), and the commands that capture what would confirm it. The verdict is
never a throughput verdict: without a window (and a target) it is `no_window`. The keys
checkpoint_report, the before/after comparison and diagnosis.md read are all there, so a
partial diagnosis sits beside a bundle's in every report.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import thresholds as limits
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human, rates
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import shape, signals
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import headline as diagnosis_headline, markdown as diagnosis_markdown
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.verdict import LAYERS

PARTIAL_SOURCE = "nothing: pasted statistics hold no checkpoint window, so no throughput is measured"
# What to capture next, always: the window the paste lacks (docs/capture-bundle.md "From files saved by hand").
WINDOW_COMMANDS = [
    "on one client, during the next checkpoint: `cat /proc/self/mountstats > mountstats-1.txt`, then 60 s later "
    "`cat /proc/self/mountstats > mountstats-2.txt`",
    "on the server at the same two times: `cat /proc/net/rpc/nfsd > nfsd-N.txt` and `cat /proc/fs/nfsd/pool_stats > pool-N.txt`",
    "or run ckptio.nfs.capture around the next checkpoint (all of the above, D-state samples and host figures): "
    "`ansible-playbook -i inventory ckptio.nfs.capture -e checkpoint_capture_seconds=120`",
]
# What confirms each suspected layer, beyond the window.
CONFIRM_COMMANDS = {
    "client_rpc_slots": ["on the client: `cat /proc/sys/sunrpc/tcp_slot_table_entries /proc/sys/sunrpc/tcp_max_slot_table_entries "
                         "/sys/module/nfs/parameters/max_session_slots` (the slot caps the queue waits for)"],
    "server_threads": ["on the server: `cat /proc/fs/nfsd/threads` and `cat /proc/fs/nfsd/pool_stats` twice, 60 s apart, "
                       "during the checkpoint (packets that found no idle thread)"],
    "network": ["on the client: `nstat -az TcpRetransSegs TcpExtTCPLostRetransmit` twice during the checkpoint, or "
                "`ansible-playbook -i inventory ckptio.nfs.validate_checkpoint -e canary_validation_probe=true` (the path's TCP capacity)"],
    "server_storage": ["on the server: `cat /proc/diskstats` twice, 60 s apart, during the checkpoint (how busy its disks are)"],
    "server_cpu": ["on the server: `head -1 /proc/stat` twice, 60 s apart, during the checkpoint"],
    "access_pattern": ["on a client during the checkpoint: `ps -eo pid,stat,wchan:32,comm | awk '$2 ~ /D/'` a few times "
                       "(who waits on the file's lock), and how the ranks lay out their files"],
}


def weigh(readings):
    """{layer: {"weight", "kinds", "why", "alternatives"}} summed over the readings' suspects."""
    layers = {}
    for reading in readings:
        for suspect in reading["suspects"]:
            entry = layers.setdefault(suspect["layer"], {"weight": 0, "kinds": set(), "why": [], "alternatives": set()})
            entry["weight"] += suspect["weight"]
            entry["kinds"].add(suspect["kind"])
            entry["why"].append(suspect["why"])
            entry["alternatives"].update(suspect["alternatives"])
    return layers


def suspected(readings):
    """{"layer", "confidence", "rests_on", "alternatives", "confidence_reasons"} or None when no file points anywhere."""
    layers = weigh(readings)
    if not layers:
        return None
    ruled_out = _ruled_out(layers)
    for layer in ruled_out:
        del layers[layer]
    order = list(LAYERS)
    layer = max(layers, key=lambda name: (layers[name]["weight"], len(layers[name]["kinds"]), -order.index(name)))
    entry = layers[layer]
    kinds = sorted(entry["kinds"])
    medium = len(kinds) >= limits.MEDIUM_CONFIDENCE_KINDS and entry["weight"] >= signals.PASTE_WEIGHT_STRONG.threshold
    reasons = ["suspected from %d kind(s) of pasted evidence (%s); no checkpoint window was measured" % (len(kinds), ", ".join(kinds))]
    if not medium:
        reasons.append("one kind of evidence, or only signals consistent with the layer: low until a window confirms it")
    reasons += ["%s ruled out: %s" % (name, why) for name, why in sorted(ruled_out.items())]
    others = [name for name in layers if name != layer and layers[name]["weight"] >= entry["weight"]]
    if others:
        reasons.append("as strong: %s" % ", ".join(sorted(others)))
    alternatives = sorted(entry["alternatives"] - {layer})
    return {"layer": layer, "confidence": "medium" if medium and not others else "low", "rests_on": entry["why"],
            "alternatives": alternatives, "confidence_reasons": reasons,
            "contributing": sorted((name for name in layers if name != layer), key=lambda name: -layers[name]["weight"])}


def _ruled_out(layers):
    """{layer: why} of the suspects a stronger signal of the same paste explains, by the bundle's rules (issue 43):
    requests retransmitted (a crossed network signal) explain a slow RTT before the server's storage can."""
    network = layers.get("network")
    if network and signals.PASTE_WEIGHT_CROSSED.crossed(network["weight"]) and "server_storage" in layers \
            and layers["server_storage"]["weight"] < network["weight"]:
        return {"server_storage": "the retransmissions explain a slow RTT (a lost request waits for timeo or a reconnect) "
                                  "before the server's storage can"}
    return {}


def capture_next(suspect, target_given):
    """The commands that would confirm the suspicion (or, with none, show where the time goes)."""
    commands = list(WINDOW_COMMANDS)
    for layer in ([suspect["layer"]] + suspect["alternatives"] if suspect else []):
        commands += [command for command in CONFIRM_COMMANDS.get(layer, []) if command not in commands]
    commands.append("then give the files to `ansible-playbook ckptio.nfs.paste -e ckptio_paste=DIR%s`" % (
        "" if target_given else " -e ckptio_checkpoint_bytes=BYTES -e ckptio_checkpoint_window_seconds=SECONDS"))
    return commands


def partial_diagnosis(readings, target=None, mount_point=None):
    """diagnosis.json's shape for readings that make no bundle; None when no file tells anything (a refusal)."""
    told = [reading for reading in readings if reading["tells_nothing"] is None]
    if not told:
        return None
    suspect = suspected(told)
    spoken = sorted(set(layer for reading in told for layer in reading["layers"] if layer))
    unmeasured = [layer for layer in LAYERS if layer not in spoken and layer != "none"]
    target_given = bool(target and target.get("checkpoint_bytes") and target.get("window_seconds"))
    commands = capture_next(suspect, target_given)
    evidence = [row for reading in told for row in reading["evidence"]]
    limiting = suspect["layer"] if suspect else "none"
    target_bps = rates.target_rate(target["checkpoint_bytes"], target["window_seconds"]) if target_given else None
    saves = training_window(told, target_bps, target["checkpoint_bytes"] if target_given else None)
    result = {
        "mount_point": mount_point or "the pasted mount(s)",
        "target_bytes_per_second": target_bps,
        "achieved_bytes_per_second": saves["achieved"] if saves else None,
        "achieved_source": saves["source"] if saves else PARTIAL_SOURCE,
        "gap_factor": saves["gap"] if saves else None,
        "limiting_layer": limiting,
        "contributing": suspect["contributing"] if suspect else [],
        "confidence": suspect["confidence"] if suspect else "low",
        "confidence_reasons": suspect["confidence_reasons"] if suspect else ["no pasted signal points at a layer"],
        "unmeasured": unmeasured,
        "network": {"state": "unmeasured", "summary": "links: unmeasured (a paste holds no interface counters or probe)",
                    "headline": "unmeasured", "probe_share": None, "links": []},
        "cpu": {},
        "verdict": saves["verdict"] if saves else "no_window",
        "tuning_headroom_factor": None,
        "tuning_headroom_why": "no window: what tuning buys is not estimated from a paste",
        "evidence": evidence,
        "recommendations": _recommendations(suspect, commands),
        # The target as given: the first screen shows its bytes and window; a training log without sizes is read with its bytes.
        "capacity": {"checkpoint_bytes": float(target["checkpoint_bytes"]), "window_seconds": float(target["window_seconds"])}
        if target_given else {},
        "summary": _summary(suspect, spoken, unmeasured),
        "start": None,
        "window": {"kind": "training_log" if saves else "paste", "seconds": saves["seconds"] if saves else None,
                   "covers": sorted(set("%s: %s" % (reading["file"], reading["window"]) for reading in told if reading["window"]))},
        "capture": None,
        "clients": {},
        "excluded_clients": [],
        "servers": {},
        "restore": None,
        "faults": faults(told),
        "partial": {"suspected": suspect, "layers_seen": spoken, "capture_next": commands,
                    "files": files_table(readings), "notes": [note for reading in told for note in reading["notes"]]},
    }
    result["headline"] = _headline(result)
    result["first_screen"] = diagnosis_headline.first_screen(result)
    return shape.checked(result, partial=True)


def training_window(readings, target_bps, checkpoint_bytes=None):
    """What a training log's checkpoint saves measure, or None without one with a duration (issue 44).

    The slowest checkpoint sets the pace (the ranks wait for its last writer): its bytes over its time (the slowest
    rank's, or last end - first start, as training_log read it) is the achieved rate. A log that prints no size (most
    do not: torchtitan, Megatron-LM, Lightning) is read with the checkpoint's size the target gives: that size over
    the slowest save's time, said as such (the rate meets the target exactly when the save ends within the target's
    window); without a target, the time is the figure. {"achieved", "seconds", "gap", "verdict", "source", "checkpoint"}."""
    every = [row for reading in readings for row in ((reading.get("training") or {}).get("checkpoints") or [])]
    rows = [row for row in every if row.get("seconds")]
    if not rows and every:
        # Saves read, none with a duration (Lightning and DeepSpeed print the start only): no window, said as such.
        return {"achieved": None, "seconds": None, "gap": None, "verdict": "no_window", "checkpoint": None,
                "source": "training log: %d checkpoint save(s) read (steps %s), none with a duration in the log" % (
                    len(every), ", ".join(str(row.get("step")) for row in every[:6]))}
    if not rows:
        return None
    rated = [row for row in rows if row.get("bytes_per_second")]
    slowest = min(rated, key=lambda row: row["bytes_per_second"]) if rated else max(rows, key=lambda row: row["seconds"])
    where = "step %s" % slowest["step"] if slowest.get("step") is not None else "a checkpoint"
    pace = slowest.get("slowest") or {}
    by = " (slowest rank %s%s)" % (pace.get("rank"), " on %s" % pace["host"] if pace.get("host") else "") if pace.get("rank") is not None else ""
    if rated:
        achieved = slowest["bytes_per_second"]
        gap = target_bps / achieved if target_bps and achieved else None
        verdict = "no_target" if not target_bps else "meets_target" if achieved >= target_bps else "below_target"
        source = "training log: the slowest checkpoint's bytes over its save time, %s, %.1f s%s" % (where, slowest["seconds"], by)
    elif checkpoint_bytes:
        achieved = float(checkpoint_bytes) / slowest["seconds"]
        gap = target_bps / achieved if target_bps else None
        verdict = "meets_target" if achieved >= target_bps else "below_target"
        source = ("training log: the checkpoint's size as the target gives it (%s; the log prints none) over the slowest "
                  "save's time, %s, %.1f s%s" % (human.size(checkpoint_bytes), where, slowest["seconds"], by))
    else:
        # No size in the log and no target: the slowest save's time is the figure (a target gives both size and window).
        achieved, gap, verdict = None, None, "no_target"
        source = "training log: no checkpoint size in it, the slowest save took %.1f s (%s%s)" % (slowest["seconds"], where, by)
    return {"achieved": achieved, "seconds": slowest["seconds"], "gap": gap, "verdict": verdict, "source": source,
            "checkpoint": slowest}


def faults(readings):
    """Every fault the readings name, once each (by name), with what each rests on from every file."""
    found = {}
    for reading in readings:
        for fault in reading.get("faults") or []:
            if fault["name"] in found:
                found[fault["name"]]["rests_on"] += [item for item in fault["rests_on"] if item not in found[fault["name"]]["rests_on"]][:3]
            else:
                found[fault["name"]] = dict(fault, rests_on=list(fault["rests_on"]))
    return list(found.values())


def files_table(readings):
    """Per file: what it was taken for, what it can show, what it showed or why it tells nothing."""
    return [{"file": reading["file"], "kind": reading["kind"], "taken_for": reading["taken_for"], "can_show": reading["can_show"],
             "window": reading["window"], "layers": reading["layers"], "repairs": reading["repairs"],
             "tells_nothing": reading["tells_nothing"], "signals": len(reading["evidence"])} for reading in readings]


def file_lines(readings):
    """One line per file: what it was taken for and what it showed (its signals), or why it tells nothing."""
    lines = []
    for reading in readings:
        if reading["tells_nothing"] is not None:
            lines.append("%s: %s - tells nothing: %s" % (reading["file"], reading["taken_for"], reading["tells_nothing"]))
            continue
        crossed = [row["signal"] for row in reading["evidence"] if row["crossed"]]
        lines.append("%s: %s - speaks for %s; %s" % (
            reading["file"], reading["taken_for"], ", ".join(layer for layer in reading["layers"] if layer) or "no layer",
            "signals: %s" % "; ".join(crossed[:3]) if crossed else "no signal crossed its threshold"))
    return lines


def refusal(readings):
    """The message when nothing can be said: each file, what it was taken for and why it tells nothing."""
    return "nothing in the paste can be read: %s" % "; ".join(
        "%s: %s: %s" % (reading["file"], reading["taken_for"], reading["tells_nothing"]) for reading in readings)


def _summary(suspect, spoken, unmeasured):
    if not suspect:
        return ("Partial diagnosis from a paste: no signal points at a layer; the paste speaks for %s; unmeasured: %s."
                % (", ".join(spoken) or "no layer", ", ".join(unmeasured)))
    return ("Partial diagnosis from a paste: %s suspected (confidence %s), no verdict on throughput (no checkpoint window); "
            "the paste speaks for %s; unmeasured: %s." % (suspect["layer"], suspect["confidence"], ", ".join(spoken),
                                                          ", ".join(unmeasured) or "-"))


def _recommendations(suspect, commands):
    """The capture that confirms comes first; tuning is not recommended on a suspicion alone."""
    recs = [{"layer": "window", "setting": "capture a checkpoint window", "value": None,
             "action": "capture a window: %s" % commands[0].split(": ", 1)[-1],
             "how": "; ".join(commands[:3]),
             "reason": "a paste has no window of the checkpoint: the suspicion is confirmed or ruled out by one"}]
    if suspect:
        confirm = list(commands[3:-1])
        if confirm:
            recs.append({"layer": suspect["layer"], "setting": "confirm %s" % suspect["layer"], "value": None,
                         "action": "confirm: %s" % confirm[0], "how": "; ".join(confirm),
                         "reason": "; ".join(suspect["rests_on"][:3])})
    return recs


def _verdict_text(result, suspect):
    """A fault first (no capacity tuning fixes it), then the training log's window, then the suspected layer; never a
    throughput verdict without a window."""
    found = result["faults"]
    window = _window_text(result)
    if found:
        text = "a fault, not a capacity limit: %s - no tuning fixes it; fix: %s" % (found[0]["what"], found[0]["fix"])
        if len(found) > 1:
            text += "; and %d more fault(s): %s" % (len(found) - 1, ", ".join(fault["name"] for fault in found[1:4]))
        return text + ("; " + window if window else "")
    if window:
        return window + ("; suspected limit: %s (confidence %s)" % (
            diagnosis_headline.LAYER_WORDS.get(suspect["layer"], suspect["layer"]), suspect["confidence"]) if suspect else "")
    if suspect:
        return "no verdict on throughput: a paste holds no checkpoint window; suspected limit: %s (confidence %s)" % (
            diagnosis_headline.LAYER_WORDS.get(suspect["layer"], suspect["layer"]), suspect["confidence"])
    return "no verdict on throughput: a paste holds no checkpoint window, and no pasted signal points at a layer"


def _window_text(result):
    """The training log's checkpoint against the target, or None without one."""
    if result["window"]["kind"] != "training_log":
        return None
    achieved, target, gap = result["achieved_bytes_per_second"], result["target_bytes_per_second"], result["gap_factor"]
    verdict = result["verdict"]
    if verdict == "no_window":
        return "no verdict on throughput: %s" % result["achieved_source"][len("training log: "):]
    if achieved is not None:
        figure = "the slowest checkpoint wrote %s" % human.rate(achieved)
    else:
        figure = "the slowest checkpoint took %s" % human.seconds(result["window"]["seconds"])
    if verdict == "meets_target":
        return "%s: meets the target" % figure
    if verdict == "below_target":
        return "%s: %s short of the target" % (figure, human.factor(gap) if gap else "-")
    return "%s; no target given" % figure


def _headline(result):
    head = diagnosis_headline.headline(result)
    suspect = result["partial"]["suspected"]
    head.update({
        "verdict_text": _verdict_text(result, suspect),
        "achieved_text": (human.rate(result["achieved_bytes_per_second"]) if result["achieved_bytes_per_second"] is not None
                          else "not measured (a paste)"),
        "limiting_text": ("suspected limiting layer: %s" % diagnosis_headline.layer_text(suspect["layer"])
                          if suspect else "no suspected layer"),
        "links_text": "links not measured: a paste holds no interface counters or probe",
        "snapshot_text": "the paste speaks for %s; cannot see %s" % (
            ", ".join(result["partial"]["layers_seen"]) or "no layer", ", ".join(result["unmeasured"]) or "-"),
        "confidence_reason": result["confidence_reasons"][0],
        # the strongest pasted figure behind the suspicion, on the first screen
        "suspected_because": suspect["rests_on"][0] if suspect and suspect["rests_on"] else None,
    })
    return head


def render_markdown(result):
    """diagnosis.md of a partial diagnosis: the bundle's layout (diagnosis_markdown), then what each file was
    taken for and showed, and the commands to capture next."""
    lines = [diagnosis_markdown.render_markdown(result).rstrip("\n")]
    if result["faults"]:
        lines += ["", "## Faults (no capacity tuning fixes them)", ""]
        for fault in result["faults"]:
            lines.append("- **%s**: %s. Fix: %s (source: %s). Rests on: %s" % (
                _cell(fault["name"]), _cell(fault["what"]), _cell(fault["fix"]), _cell(fault.get("source") or "-"),
                "; ".join(_cell(item) for item in fault["rests_on"][:3])))
    lines += ["", "## What the paste holds", "",
              "| file | taken for | can show | covers | signals | tells nothing because |", "|---|---|---|---|---|---|"]
    for row in result["partial"]["files"]:
        lines.append("| %s | %s | %s | %s | %s | %s |" % tuple(_cell(value) for value in (
            row["file"], row["taken_for"] + (" (repaired: %s)" % ", ".join(row["repairs"]) if row["repairs"] else ""),
            row["can_show"], row["window"] or "-", row["signals"], row["tells_nothing"] or "-")))
    lines += ["", "## Capture next", ""] + ["%d. %s" % (number, command) for number, command in
                                            enumerate(result["partial"]["capture_next"], 1)]
    if result["partial"]["notes"]:
        lines += ["", "## Notes", ""] + ["- %s" % note for note in result["partial"]["notes"]]
    return "\n".join(lines) + "\n"


def _cell(value):
    return ("%s" % (value,)).replace("|", "\\|").replace("\n", " ")
