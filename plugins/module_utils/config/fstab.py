# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Edit one fstab entry and leave every other byte of the file alone.

Pure functions on text: the caller reads the file (decoded with surrogateescape so any byte
round-trips) and writes the result.

Every line is kept as its raw text, separator whitespace and line ending included. An edit
replaces, adds or removes exactly one line; comments, blank lines, tabs, UUID=/LABEL=/bind
entries and a missing final newline are never rewritten.
"""

from __future__ import annotations

import re

from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import escape_path, normal_path, unescape_path

# libmount (and fstab(5)) split fields on blanks, space and tab: never on \v, \f, U+00A0...
_TOKENS = re.compile(r"([ \t]*)([^ \t]+)")
_FIELDS = re.compile(r"[^ \t]+")


class FstabError(ValueError):
    """The file cannot be edited safely (for example two entries for one mount point)."""


def split_lines(text):
    """Lines with their '\\n' kept; the last one has none when the file lacks a final newline."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _body_and_ending(line):
    """(line without its ending, the ending): '\\n', '\\r\\n' (a CRLF file), a last line's '\\r', or ''."""
    for ending in ("\r\n", "\n", "\r"):
        if line.endswith(ending):
            return line[:-len(ending)], ending
    return line, ""


def entry_fields(line):
    """The fields of an entry line, or None for comments, blank and malformed lines."""
    fields = _FIELDS.findall(_body_and_ending(line)[0])
    if not fields or fields[0].startswith("#"):
        return None
    # fstab(5) needs spec, file, vfstype and mntopts; freq and passno default to 0.
    if len(fields) < 4:
        return None
    return fields


def parse_entry(line):
    """A dict for an entry line (src, path, fstype, opts, dump, passno) or None."""
    fields = entry_fields(line)
    if fields is None:
        return None
    return {
        "src": unescape_path(fields[0]),
        "path": unescape_path(fields[1]),
        "fstype": fields[2],
        "opts": fields[3],
        "dump": fields[4] if len(fields) > 4 else "0",
        "passno": fields[5] if len(fields) > 5 else "0",
    }


def find_entries(lines, path):
    """Indexes of the lines whose mount point (after \\040 unescaping) is path.

    Both sides are compared in normal form (mountinfo.normal_path): `/mnt//nfs` written by hand
    is the entry for `/mnt/nfs`, not a reason to add a second one.
    """
    wanted = normal_path(path)
    found = []
    for index, line in enumerate(lines):
        entry = parse_entry(line)
        if entry is not None and normal_path(entry["path"]) == wanted:
            found.append(index)
    return found


def find_entry(lines, path):
    """Index of the one entry for path, or None; FstabError when there are several.

    mount(8) would use one of them and an edit of either leaves the other in force, so the
    file needs a human decision first.
    """
    found = find_entries(lines, path)
    if len(found) > 1:
        numbers = ", ".join(str(index + 1) for index in found)
        raise FstabError("%d fstab entries for %s (lines %s); remove the duplicates by hand first" % (len(found), path, numbers))
    return found[0] if found else None


def format_fields(src, path, fstype, opts, dump, passno):
    return [escape_path(src), escape_path(path), fstype, opts, str(dump), str(passno)]


def render_entry(fields, template=None):
    """One fstab line for fields; with a template line, reuse its separators and line ending."""
    if template is None:
        return " ".join(fields) + "\n"
    body, ending = _body_and_ending(template)
    tokens = _TOKENS.findall(body)
    if tokens:
        # Trailing blanks after the last field stay too.
        ending = body[body.rfind(tokens[-1][1]) + len(tokens[-1][1]):] + ending
    else:
        ending = ending or "\n"
    pieces = []
    for index, field in enumerate(fields):
        separator = tokens[index][0] if index < len(tokens) else (tokens[-1][0] if index else "") or " "
        pieces.append(separator + field)
    return "".join(pieces) + ending


def set_entry(text, path, fields):
    """Return text with the entry for path replaced by fields (or appended), and the line index.

    Only that one line changes. Appending to a file without a final newline adds the newline
    the old last line needs and keeps the file without one at the end.
    """
    lines = split_lines(text)
    index = find_entry(lines, path)
    if index is not None:
        lines[index] = render_entry(fields, lines[index])
        return "".join(lines), index
    line = render_entry(fields)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
        line = line[:-1]
    lines.append(line)
    return "".join(lines), len(lines) - 1


def remove_entry(text, path):
    """Return text without the entry for path, and the removed line index (None if absent)."""
    lines = split_lines(text)
    index = find_entry(lines, path)
    if index is None:
        return text, None
    removed = lines.pop(index)
    if not removed.endswith("\n") and lines and index == len(lines):
        # The file had no final newline: keep it that way.
        lines[-1] = lines[-1][:-2] if lines[-1].endswith("\r\n") else lines[-1][:-1]
    return "".join(lines), index
