# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the readers of incident texts share (net_capture, disk_stats, server_stats, benchmarks, config_texts). Pure.

A finding is the dict paste_iface describes; lines are cut at MAX_LINE characters before any regex sees them, so a
1 MB line costs one slice; numbers are read from words of at most MAX_NUMBER characters, so a 60,000-digit figure is
refused rather than converted (int() refuses past 4300 digits in 3.11, float() would give inf).
"""

from __future__ import annotations

import math
import re

MAX_LINE = 4096
MAX_NUMBER = 40
# Units of a rate as the tools print them (dd: kB/MB/GB decimal; fio, IOR: KiB/MiB/GiB and KB meaning KiB in old fio).
UNIT_BYTES = {"B": 1, "kB": 1e3, "KB": 1024, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 1024, "MiB": 1024 ** 2,
              "GiB": 1024 ** 3, "TiB": 1024 ** 4, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
_TIME = re.compile(r"^\d{1,2}:\d{2}(?::\d{2})?$")


def lines(text):
    """(1-based number, line cut at MAX_LINE) of every line."""
    for number, line in enumerate(text.split("\n"), 1):
        yield number, line[:MAX_LINE]


def number(word, decimal_comma=False):
    """A finite float from a word ('12.5', '12,5' where a comma is the decimal point, '100.00%'), else None."""
    if not word or len(word) > MAX_NUMBER:
        return None
    word = word.rstrip("%")
    if "," in word:
        if not decimal_comma and "." in word:
            return None
        word = word.replace(",", ".") if word.count(",") == 1 and "." not in word else None
        if word is None:
            return None
    try:
        value = float(word)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def is_time(word):
    return bool(_TIME.match(word))


def finding(layer, signal, value, explanation, line, threshold=None, crossed=False, weight=0, fault=None):
    """One finding, the shape readings.add_findings maps to evidence rows, suspects and faults."""
    return {"layer": layer, "fault": fault, "signal": signal, "value": value,
            "threshold": threshold, "crossed": bool(crossed), "weight": weight, "explanation": explanation, "line": line}


def fault(name, what, fix, source):
    return {"name": name, "what": what, "tuning_fixes": False, "fix": fix, "source": source}


def threshold_text(signal, unit=None, scale=1.0):
    """'>= 0.8 share (disk_busy)': the row of diagnosis/signals.py a finding was read against."""
    value = signal.threshold * scale
    shown = ("%g" % value)
    return "%s %s %s (%s)" % (signal.comparison, shown, unit or signal.unit, signal.name)


def columns_from_right(header_words, row_words):
    """{column name: word} aligning a row to its header from the right: the device or time columns on the left
    may take one word more or less (sar's 'AM', 'Average:'), the figures on the right never do."""
    shift = len(row_words) - len(header_words)
    values = {}
    for index, name in enumerate(header_words):
        position = index + shift
        if 0 <= position < len(row_words):
            values[name] = row_words[position]
    return values


def rate_in_bytes(value, unit):
    """value in unit ('MB', 'MiB', 'KiB'...) per second as bytes per second, or None for an unknown unit."""
    if value is None:
        return None
    factor = UNIT_BYTES.get(unit)
    return value * factor if factor else None


def human_rate(bytes_per_second):
    if bytes_per_second is None:
        return "-"
    for unit, size in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bytes_per_second >= size:
            return "%.1f %s" % (bytes_per_second / size, unit)
    return "%.0f B/s" % bytes_per_second
