# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The first screen of report.md, report.png's title and the play's last lines, from the diagnosis.

The diagnosis decides (diagnosis.json `headline` and `first_screen`); this file only takes them.
A diagnosis.json from before those keys gets a headline built here from the fields it has - the
verdict, achieved and target, the network state, the confidence and the first recommendations -
in the same human units (module_utils/stats/human.py), so an old bundle reads like a new one.
"""

from __future__ import annotations

import textwrap

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import headline as diagnosis_headline
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human

# The diagnosis's own screen width and no-target text (diagnosis/headline.py); report.md's first
# screen may hold 25 lines (CONTRACT 3), the diagnosis's 23 sit in a fenced block.
WIDTH = diagnosis_headline.SCREEN_COLUMNS
MAX_LINES = 25
NO_TARGET = diagnosis_headline.NO_TARGET_TEXT
VERDICT_WORDS = {"meets_target": "meets the target", "tune": "tune", "rearchitect": "re-architect",
                 "no_target": "no target given", "no_window": "no checkpoint window"}
# Network states (diagnosis.json network.state) in words, for a headline built here.
LINK_STATES = {"full": "links full", "clear": "links far from full", "partial": "links partly measured"}


def headline(diagnosis, metrics):
    """diagnosis.json's `headline`, or one built from an older diagnosis's fields (same keys)."""
    given = (diagnosis or {}).get("headline")
    if isinstance(given, dict) and given.get("verdict_text"):
        return given
    return _built_headline(diagnosis or {}, metrics)


def first_screen(diagnosis, head):
    """diagnosis.json's `first_screen` lines, or lines built from the headline: at most 25 lines of
    at most 80 columns."""
    given = (diagnosis or {}).get("first_screen")
    if isinstance(given, list) and given:
        return [str(line) for line in given[:MAX_LINES]]
    return _built_screen(head)


def console_head(head):
    """The play's first lines, one fact each: verdict, achieved vs target, links, confidence, actions."""
    lines = [head.get("verdict_text") or "no diagnosis (statistics not collected)",
             "achieved %s, target %s" % (head.get("achieved_text") or human.UNMEASURED, head.get("target_text") or NO_TARGET),
             head.get("links_text") or "links not measured",
             "confidence %s: %s" % (head.get("confidence") or human.UNMEASURED, head.get("confidence_reason") or "-")]
    return lines + ["%d. %s" % (index, action) for index, action in enumerate(head.get("actions") or [], 1)]


def _built_headline(diagnosis, metrics):
    network = diagnosis.get("network") or {}
    capacity = diagnosis.get("capacity") or {}
    link_capacity = capacity.get("practical_link_bytes_per_second") or capacity.get("raw_link_bytes_per_second")
    share, share_basis = _link_share(metrics)
    return {
        "verdict": diagnosis.get("verdict"),
        "verdict_text": _verdict_text(diagnosis),
        "achieved_text": human.rate(metrics.get("achieved_bytes_per_second")),
        "target_text": _target_text(metrics),
        "links_text": _links_text(network.get("state"), share, share_basis, diagnosis.get("verdict")),
        "link_share": share,
        "link_capacity_bytes_per_second": link_capacity,
        "confidence": diagnosis.get("confidence"),
        "confidence_reason": _confidence_reason(diagnosis),
        "actions": [_action(item) for item in (diagnosis.get("recommendations") or [])[:3]],
        "rests_on": diagnosis.get("achieved_source") or metrics.get("capture_basis") or human.UNMEASURED,
    }


def _verdict_text(diagnosis):
    verdict = diagnosis.get("verdict")
    if verdict is None:
        return "no diagnosis (statistics not collected)"
    words = VERDICT_WORDS.get(verdict, verdict)
    limiting = diagnosis.get("limiting_layer")
    limit = "%s: %s" % (diagnosis_headline.limit_label(verdict), limiting) if limiting and limiting != "none" else ""
    if verdict == "meets_target":
        limits = [layer for layer in [limiting] + list(diagnosis.get("contributing") or []) if layer and layer != "none"]
        return words + ("; what limits headroom: %s" % ", ".join(limits[:2]) if limits else "")
    if diagnosis.get("gap_factor") is None:
        return "%s: no verdict on throughput%s" % (words, "; " + limit if limit else "")
    text = "%s: the gap is %s" % (words, human.factor(diagnosis["gap_factor"]))
    if diagnosis.get("tuning_headroom_factor") is not None:
        text += ", tuning alone can give up to %s (estimated for the limiting layer, capped by the measured path)" % (
            human.factor(diagnosis["tuning_headroom_factor"]))
    return text + ("; " + limit if limit else "")


def _target_text(metrics):
    target = metrics.get("target_bytes_per_second")
    if not target:
        return NO_TARGET
    window = metrics.get("window_seconds")
    checkpoint = metrics.get("target_checkpoint_bytes")
    if checkpoint and window:
        return "%s (%s in %s)" % (human.rate(target), human.size(checkpoint), human.seconds(window))
    return human.rate(target)


def _link_share(metrics):
    """The links' share of capacity the report shows: the busiest link against its nominal speed,
    else NFS against the path's TCP capacity (the probe, summed over the clients)."""
    if metrics.get("link_utilisation_max") is not None:
        return metrics["link_utilisation_max"], "busiest NFS link, of its nominal speed"
    if metrics.get("probe_share") is not None:
        return metrics["probe_share"], "NFS of the path's TCP capacity, probe summed over the clients"
    return None, None


def _links_text(state, share, basis, verdict):
    if share is None or state in (None, "unmeasured"):
        return "links not measured: no interface speed, probe or declared link speed in this bundle"
    text = "%s: %s (%s)" % (LINK_STATES.get(state, "links " + str(state)), human.share(share), basis)
    if state == "clear" and verdict not in ("meets_target", None):
        text += "; short of the target with links far from full: the bandwidth paradox"
    return text


def _confidence_reason(diagnosis):
    reasons = list(diagnosis.get("confidence_reasons") or [])
    unmeasured = diagnosis.get("unmeasured") or []
    if not reasons and unmeasured:
        reasons.append("not measured: %s" % ", ".join(unmeasured))
    return "; ".join(reasons) if reasons else "every layer it rests on was measured"


def _action(recommendation):
    setting, value, how = recommendation.get("setting"), recommendation.get("value"), recommendation.get("how")
    if value is None:
        return "%s: %s" % (setting, how) if how else str(setting)
    # A setting's value as the user types it (1048576, not 1,048,576).
    text = "%s = %s" % (setting, value if isinstance(value, (int, str)) else human.number(value))
    return text + (": %s" % how if how else "")


def _wrap(text, max_lines, indent=""):
    return textwrap.wrap(text, WIDTH, subsequent_indent=indent + "  ", initial_indent=indent,
                         max_lines=max_lines, placeholder=" ...") or [indent.rstrip()]


def _built_screen(head):
    lines = _wrap(head.get("verdict_text") or "no diagnosis", 3)
    lines += _wrap("Achieved %s against the target %s" % (
        head.get("achieved_text") or human.UNMEASURED, head.get("target_text") or NO_TARGET), 3)
    lines += _wrap("rests on: %s" % (head.get("rests_on") or human.UNMEASURED), 2, "  ")
    lines += _wrap(diagnosis_headline.capital(head.get("links_text") or "links not measured"), 3)
    lines += _wrap("Confidence %s: %s" % (head.get("confidence") or human.UNMEASURED,
                                          head.get("confidence_reason") or "-"), 3)
    actions = head.get("actions") or []
    if actions:
        lines.append("Next:")
        for index, action in enumerate(actions[:3], 1):
            lines += _wrap("%d. %s" % (index, action), 3, "  ")
    return lines[:MAX_LINES]
