# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Text of /proc files and capture files, which are bytes, and how results show undecodable bytes.

Pure functions. Paths on Linux are bytes: /proc/self/mountstats and mountinfo print a mount point
as its bytes (the kernel escapes only space, tab, newline and backslash: fs/proc_namespace.c
mangle(), fs/nfs/super.c seq_escape), so a mount at /data/caf\\xe9 puts the lone byte 0xE9 in
the file. Reading is therefore done as UTF-8 with surrogateescape (what os.fsdecode does on
Linux): every byte survives, and paths compare equal to Python's own str paths.

A result sent back to Ansible must not hold the lone surrogates that stand for such bytes:
the controller re-encodes module results as strict UTF-8 and fails on them. Results show each
undecodable byte as the kernel's own octal escape, a backslash and three octal digits
(\\351 for 0xE9), so the text stays readable and says which byte it was.
"""

from __future__ import annotations

import re

# surrogateescape maps an undecodable byte 0xXY to the code point U+DCXY (PEP 383).
_SURROGATE = re.compile("[\udc80-\udcff]")


def decode(data):
    """bytes -> str, keeping every byte (undecodable ones become U+DC80..U+DCFF)."""
    return data.decode("utf-8", "surrogateescape")


def show_undecodable(text):
    """text with each byte that was not UTF-8 written as a backslash and three octal digits."""
    if text.isascii():
        return text
    return _SURROGATE.sub(lambda match: "\\%03o" % (ord(match.group()) - 0xDC00), text)


def json_safe(value):
    """value (dicts, lists, tuples, strings, numbers) with show_undecodable() on every string, keys too."""
    if isinstance(value, str):
        return show_undecodable(value)
    if isinstance(value, dict):
        return dict((json_safe(key), json_safe(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


# How json.dumps (ensure_ascii, its default) writes a code point U+DC00..U+DCFF: every lone
# surrogate that stands for an undecodable byte (U+DC80..U+DCFF) is written so.
_SURROGATE_ESCAPE = "\\udc"


def json_safe_text(value, dumps):
    """(json_safe(value), dumps of it): dumps must write every non-ASCII character as a \\u escape
    (json.dumps's default ensure_ascii). The text is made first: when it holds no escaped low
    surrogate, no string in value (keys too) holds one and value is returned as it is (a tuple
    stays a tuple, which JSON writes as a list): one walk in C instead of a Python call per value
    (json_safe over a 16,384-client diagnosis made ~4 million calls, tests/bench/README.md).
    Otherwise json_safe(value) and its text (a surrogate pair of a character above U+FFFF takes
    this path too: it is only slower)."""
    text = dumps(value)
    if _SURROGATE_ESCAPE not in text:
        return value, text
    value = json_safe(value)
    return value, dumps(value)
