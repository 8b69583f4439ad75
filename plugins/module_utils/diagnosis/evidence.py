# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The evidence rows every layer adds to: one list, in the order of diagnosis.md.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.run import SAVED_SINCE_MOUNT, SINCE_MOUNT_NOTE, capture_problem_text, seconds_text


def add_capture_problems(evidence, excluded):
    """Each excluded client is named in the evidence: its figures are in no other row."""
    for problem in excluded:
        evidence.add(None, "capture problem on %s" % problem["host"], ", ".join(problem["problems"]), "a usable before/after pair", True,
                     "excluded from every figure: %s" % capture_problem_text(problem))


class Evidence:
    def __init__(self):
        self.items = []

    def add(self, layer, signal, value, threshold, crossed, explanation):
        self.items.append({"layer": layer, "signal": signal, "value": rounded(value), "threshold": threshold,
                           "crossed": bool(crossed), "explanation": explanation})
        return bool(crossed)

    def crossed(self, layer):
        return [item for item in self.items if item["layer"] == layer and item["crossed"]]


# The decimals diagnosis.json keeps of a float figure.
ROUNDED_DIGITS = 4


def rounded(value):
    if isinstance(value, float):
        return round(value, ROUNDED_DIGITS)
    return value


def rounded_row(row):
    """row with each value rounded(): a comprehension, not a call per value (the per-host link,
    loss and mount rows of 16,384 clients hold 900,000 values: 0.55 s -> 0.2 s)."""
    return {key: round(value, ROUNDED_DIGITS) if isinstance(value, float) else value for key, value in row.items()}


def scaled_share(share, window, busy_seconds):
    """A share over the sample window, scaled to the checkpoint inside it (nothing else ran then)."""
    if share is None:
        return None
    if busy_seconds and window and 0 < busy_seconds < window:
        return min(1.0, share * window / busy_seconds)
    return share


def add_capture_evidence(evidence, capture_view):
    """What a capture's figure rests on, once, and each of its flags as a crossed row."""
    if capture_view is None:
        return
    evidence.add(None, "capture window (no canary)", capture_view["seconds"], "a canary's ranks", False,
                 "%s; achieved = %s" % (capture_view["note"], capture_view["source"]))
    for flag in capture_view["flags"]:
        evidence.add(None, "capture: %s" % flag["kind"], None, "-", True, flag["message"])


def add_window_evidence(evidence, window):
    """A since-mount average is said once, where every figure is read: it is not a checkpoint window."""
    if window and window["kind"] == SAVED_SINCE_MOUNT:
        evidence.add(None, "statistics window: since the mount", window["seconds"], "a before/after pair around the checkpoint", True,
                     SINCE_MOUNT_NOTE % seconds_text(window["seconds"]))
