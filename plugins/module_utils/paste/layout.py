# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layout of a paste, undone before any format is recognised: pure, text in, text out.

What mail clients, chat tools, tickets and terminals do to a copy of kernel or nfs-utils output,
seen in the pastes of issue 25: CRLF (or lone CR) line ends, no-break spaces (U+00A0, and the
narrow U+202F / figure U+2007 spaces some editors substitute) where the tool printed blanks, a
byte order mark, every line indented by the same spaces (a quote, a code block in a ticket), and
no newline after the last line. None of these carries meaning in any format read here, so they
are removed once, here; the recognisers and parsers then see the tool's own layout (apart from
indentation that differs between lines, which every parser here tolerates by splitting words).
"""

from __future__ import annotations

from collections import namedtuple

# The longest line looked at (issue 45): longer lines are cut to it and the repairs say how many. No line of a
# format read here comes near: a mountstats opts: line is about 500 characters, a device line two paths (each at
# most PATH_MAX 4096 only in theory), a kernel log line at most 1024 (LOG_LINE_MAX, kernel/printk). Every parser is
# linear in its input anyway (test_hostile_paste.py); the cut keeps a pasted blob's line from dominating the time
# and the texts a reading keeps. What is read at all is bounded before this: file_read.INPUT_LIMIT, 16 MiB a file.
LINE_LIMIT = 4096
# Blanks that are not ASCII spaces but stand for them in a paste.
_SPACE_LIKE = {"\u00a0": " ", "\u2007": " ", "\u202f": " ", "\u2009": " ", "\ufeff": ""}

Cleaned = namedtuple("Cleaned", "text repairs")


def clean(text):
    """Cleaned(text, repairs): the paste with the layout damage above undone, and a list naming each repair.

    The text always ends with a newline (an empty paste stays empty). The common indentation
    (spaces or tabs shared by every non-blank line) is removed; lines indented more keep the rest.
    """
    repairs = []
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        repairs.append("CR/CRLF line ends")
    if any(char in text for char in _SPACE_LIKE):
        for char, replacement in _SPACE_LIKE.items():
            text = text.replace(char, replacement)
        repairs.append("no-break spaces or a byte order mark")
    text = _cut_long_lines(text, repairs)
    # Only the CRs go: the kernel's own trailing blanks stay (mountstats' events: and bytes: lines end in a space).
    lines = text.split("\n")
    indent = _common_indent(lines)
    if indent:
        lines = [line[len(indent):] if line.strip() else "" for line in lines]
        repairs.append("every line indented by %r" % indent)
    else:
        lines = _below_label(lines, repairs)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return Cleaned("", repairs)
    if not text.rstrip(" \t").endswith("\n"):
        repairs.append("no newline after the last line")
    if not repairs:
        # Nothing to undo: the tool's own bytes, verbatim (a bundle keeps the file as saved).
        return Cleaned(text, repairs)
    return Cleaned("\n".join(lines) + "\n", repairs)


def _cut_long_lines(text, repairs):
    """text with every line longer than LINE_LIMIT cut to LINE_LIMIT characters, and a repair counting them."""
    if len(text) <= LINE_LIMIT or max(len(line) for line in text.split("\n")) <= LINE_LIMIT:
        return text
    lines = text.split("\n")
    long_lines = sum(1 for line in lines if len(line) > LINE_LIMIT)
    repairs.append("%d line%s longer than %d characters cut to %d" % (long_lines, "" if long_lines == 1 else "s", LINE_LIMIT, LINE_LIMIT))
    return "\n".join(line[:LINE_LIMIT] for line in lines)


def _below_label(lines, repairs):
    """A label line at column 0 ("client gpu017:", "pool_stats at 10:02") above a block indented as a whole:
    the block's shared indentation removed, the label kept."""
    filled = [index for index, line in enumerate(lines) if line.strip()]
    if len(filled) < 2:
        return lines
    indent = _common_indent(lines[filled[0] + 1:])
    # Spaces only: a tool's own indentation below a first line is a tab (mountstats' one mount
    # block) or columns of its own, and stays; a paste's quote or code block is spaces.
    if len(indent) < 2 or indent.strip(" "):
        return lines
    repairs.append("the lines below the first indented by %r" % indent)
    return lines[:filled[0] + 1] + [line[len(indent):] if line.strip() else "" for line in lines[filled[0] + 1:]]


def _common_indent(lines):
    """The leading blanks every non-blank line shares ('' when one starts at column 0)."""
    indent = None
    for line in lines:
        if not line.strip():
            continue
        own = line[:len(line) - len(line.lstrip(" \t"))]
        if indent is None:
            indent = own
        else:
            shared = 0
            for left, right in zip(indent, own):
                if left != right:
                    break
                shared += 1
            indent = indent[:shared]
        if not indent:
            return ""
    return indent or ""
