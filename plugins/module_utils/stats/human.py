# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ckptio.nfs contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Figures in the words and units a person reads: one formatter for every first screen.

Decimal units (1 GB/s = 1e9 bytes/s), as link speeds and the target (2.4 TB in 300 s = 8 GB/s)
are quoted; at most 4 significant digits and never an exponent, so "1.1 GB/s", not "1.1e+03 MB/s".
Every function takes None (not measured) and returns UNMEASURED for it, never "None".
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

UNMEASURED = "not measured"

_RATE_UNITS = ((1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s"), (1.0, "B/s"))
_SIZE_UNITS = ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1.0, "B"))


def _finite(value):
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def number(value, digits=3):
    """value with at most `digits` significant digits (never more than 4), thousands separated,
    no exponent: 12345.678 -> '12,300', 0.0123456 -> '0.0123'. A Python int is a count and keeps
    every digit: 16384 -> '16,384'."""
    if isinstance(value, int) and not isinstance(value, bool):
        return "{:,}".format(value)
    value = _finite(value)
    if value is None:
        return UNMEASURED
    digits = max(1, min(int(digits), 4))
    if value == 0:
        return "0"
    magnitude = int(math.floor(math.log10(abs(value))))
    decimals = max(0, digits - 1 - magnitude)
    rounded = round(value, decimals)
    if decimals == 0:
        # Larger than the digits allow: round to the digits, keep the thousands separators.
        scale = 10 ** max(0, magnitude + 1 - digits)
        return "{:,}".format(int(round(value / scale) * scale))
    return "{:,.{}f}".format(rounded, decimals).rstrip("0").rstrip(".")


def _scaled(value, units, digits):
    value = _finite(value)
    if value is None:
        return UNMEASURED
    for factor, unit in units:
        if abs(value) >= factor:
            return "%s %s" % (number(value / factor, digits), unit)
    return "%s %s" % (number(value, digits), units[-1][1])


def rate(bytes_per_second, digits=3):
    """8e9 -> '8 GB/s'; 1.1e9 -> '1.1 GB/s'; 458e6 -> '458 MB/s'."""
    return _scaled(bytes_per_second, _RATE_UNITS, digits)


def size(byte_count, digits=3):
    """2.4e12 -> '2.4 TB'; 268435456 -> '268 MB'."""
    return _scaled(byte_count, _SIZE_UNITS, digits)


def share(fraction, digits=2):
    """0.044 -> '4.4 %'; 0.00012 -> '0.012 %'."""
    fraction = _finite(fraction)
    if fraction is None:
        return UNMEASURED
    return "%s %%" % number(100 * fraction, digits)


def factor(value, digits=2):
    """7.27 -> '7.3x'."""
    value = _finite(value)
    if value is None:
        return UNMEASURED
    return "%sx" % number(value, digits)


def seconds(value, digits=3):
    """300 -> '300 s'; 0.0123 -> '12.3 ms'; 5400 -> '1 h 30 min'."""
    value = _finite(value)
    if value is None:
        return UNMEASURED
    if abs(value) < 1 and value != 0:
        return "%s ms" % number(value * 1000, digits)
    if abs(value) >= 3600:
        hours, rest = divmod(int(round(value)), 3600)
        return "%d h %d min" % (hours, rest // 60)
    return "%s s" % number(value, digits)
