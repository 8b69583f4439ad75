# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one escaping of a value from outside that lands in Markdown (report.md, compare.md).

An option name, a bundle's label or limiting layer, a host name or a canary's error message comes
from a file anyone may have written: "x\\n## injected\\n| a | b |" put into a table cell as it is adds
a heading and a row. escape() makes any value one line of literal text, safe in a table cell and in
a sentence: line breaks (every one str.splitlines knows) become a blank; a backslash, `|` and
backticks are backslash-escaped (CommonMark 2.4: any ASCII punctuation may be); `&` and `<` become
entities, so no HTML tag or comment starts; a heading or quote marker (`#`, `>`) is escaped when the
value begins with one. escaped() applies it to every string of a structure, keys
too, so a renderer escapes what it was given once, at its entry, and every value it places is safe.
A fenced block takes text as it is: fence() makes a fence its text cannot close. Pure.
"""

from __future__ import annotations

import re

# A heading or a quote when a line starts with one (lists need a blank after the marker and a line of their own).
_LINE_START_MARKERS = "#>"
_LONGEST_BACKTICKS = re.compile(r"`+")


def escape(value):
    """value (any; None is "") as one line of literal Markdown text."""
    text = "" if value is None else str(value)
    lines = text.splitlines()
    if len(lines) != 1 or lines[0] != text:
        text = " ".join(lines)
    text = (text.replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;")
            .replace("|", "\\|").replace("`", "\\`"))
    stripped = text.lstrip(" ")
    if stripped[:1] and stripped[0] in _LINE_START_MARKERS:
        text = text[:len(text) - len(stripped)] + "\\" + stripped
    return text


def escaped(value):
    """value with escape() applied to every string in it (dict keys too); numbers, booleans and None kept."""
    if isinstance(value, str):
        return escape(value)
    if isinstance(value, dict):
        return dict((escaped(key), escaped(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [escaped(item) for item in value]
    return value


def fence(lines, info=""):
    """lines inside a fenced code block whose fence (backticks) is longer than any run of backticks in them
    (CommonMark 4.5: a fence closes only on one at least as long), so no line ends the block early."""
    longest = max([len(run) for line in lines for run in _LONGEST_BACKTICKS.findall(line)] or [0])
    marker = "`" * max(3, longest + 1)
    return [marker + info] + [" ".join(line.splitlines()) for line in lines] + [marker]
