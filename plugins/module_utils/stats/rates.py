# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The arithmetic every path shares, written once (issue 43): the target rate, the quantile, the restore verdict.

A bundle's diagnosis, a paste's partial reading, report.md, compare.md and the restore all call
these; before, the target rate was computed in six places and report.md and diagnosis.md gave two
p10s of the same hosts.
"""

from __future__ import annotations

import math


def _finite(value):
    """value as a float when it is a finite number, else None (a missing or broken figure is not a rate)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def target_rate(checkpoint_bytes, window_seconds):
    """Bytes per second the checkpoint needs (its bytes over its window), or None without both or with a window of 0.

    The seed: 2.4e12 B in 300 s = 8 GB/s.
    """
    size, window = _finite(checkpoint_bytes), _finite(window_seconds)
    if size is None or window is None or size <= 0 or window <= 0:
        return None
    return size / window


def nearest_rank(sorted_values, share):
    """The nearest-rank quantile of an already sorted, non-empty list: the value at rank ceil(share x n), at least 1.

    The textbook rule (NIST; Hyndman & Fan's definition 1): p10 of ten values is the first, the median of ten
    the fifth. share is 0.0 ... 1.0.
    """
    count = len(sorted_values)
    rank = max(1, int(math.ceil(round(share * count, 9))))
    return sorted_values[min(count, rank) - 1]


def meets(achieved, target):
    """Whether an achieved rate meets its target; None when either is unknown."""
    if achieved is None or target is None:
        return None
    return achieved >= target


def restore_verdict(achieved, target, bad_blocks):
    """The restore (read-back) verdict: failed_verification, unmeasured, no_target, meets_target or below_target."""
    if bad_blocks:
        return "failed_verification"
    if achieved is None:
        return "unmeasured"
    if target is None:
        return "no_target"
    return "meets_target" if meets(achieved, target) else "below_target"
