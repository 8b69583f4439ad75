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
