# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read and edit nfs.conf(5) files the way nfs-utils reads them.

Pure functions on text. The reading rules follow nfs-utils support/nfs/conffile.c:
- a line is read only when it ends with a newline: conf_parse() ignores a last line without
  one ("last line non-terminated, ignored"); a backslash before the newline joins two lines;
- leading blanks are skipped; '#' or ';' first makes a comment; `[name]` or `[name "arg"]`
  starts a section (names compare case-insensitively); `tag = value` inside a section sets a
  value; an unquoted value ends at '#' or ';'; a value in "..." or '...' is taken as is;
- an empty value sets nothing; every later assignment replaces an earlier one (override), in
  the same file and across files;
- files: /etc/nfs.conf, then /etc/nfs.conf.d/*.conf in versionsort(3) order (names starting
  with '.' skipped). Where /etc/nfs.conf is absent, /usr/etc/nfs.conf and its .d come first.

Edits change only the one line that must change (or add one line, or one section), so every
other byte stays, and they end the edited line with a newline so nfs-utils does not ignore it.
"""

from __future__ import annotations

import functools

CONFIG_SUFFIX = ".conf"


def _split_physical(text):
    return text.splitlines(keepends=True)


def _parse_section(rest):
    """(section, arg) of a header line after its '['; section None when ']' is missing."""
    rest = rest.lstrip(" \t")
    close = rest.find("]")
    if close < 0:
        return None, None
    inner = rest[:close].rstrip(" \t")
    quote = inner.find('"')
    if quote < 0:
        return inner.lower(), None
    name = inner[:quote].rstrip(" \t").lower()
    closing = inner.find('"', quote + 1)
    if closing < 0:
        return name, None
    return name, inner[quote + 1:closing]


def _parse_value(raw):
    """(value, start, end) of an assignment's right-hand side; value None when unusable.

    start/end locate the value inside raw so an edit can replace just those bytes.
    """
    start = len(raw) - len(raw.lstrip(" \t"))
    body = raw[start:]
    if body[:1] in ('"', "'"):
        closing = body.find(body[0], 1)
        if closing < 0:
            return None, start, len(raw)
        return body[1:closing], start + 1, start + closing
    end = len(body)
    for marker in ("#", ";"):
        cut = body.find(marker)
        if 0 <= cut < end:
            end = cut
    value = body[:end].rstrip()
    return value, start, start + len(value)


def parse(text):
    """Every assignment and include in text, in order.

    Returns dicts {line, section, arg, tag, value, start, end, editable, effective, include}:
    line is the index of the first physical line; start/end the value's offsets in that line
    (only meaningful when editable, i.e. the assignment is one physical line); effective is
    False for what nfs-utils ignores (unterminated last line, empty value).
    """
    entries = []
    lines = _split_physical(text)
    section = arg = None
    index = 0
    while index < len(lines):
        first = index
        logical = lines[index]
        # conffile.c turns "\\\n" into two spaces and keeps reading the next physical line.
        while logical.endswith("\\\n") and index + 1 < len(lines):
            index += 1
            logical = logical[:-2] + "  " + lines[index]
        index += 1
        terminated = logical.endswith("\n")
        body = logical[:-1] if terminated else logical
        if body.endswith("\r"):
            body = body[:-1]
        offset = len(body) - len(body.lstrip())
        stripped = body[offset:]
        if not stripped or stripped[0] in "#;":
            continue
        if stripped[0] == "[":
            if terminated:
                section, arg = _parse_section(stripped[1:])
            continue
        equals = stripped.find("=")
        if equals < 0 or section is None:
            continue
        tag = stripped[:equals].rstrip(" \t")
        if not tag:
            continue
        value, start, end = _parse_value(stripped[equals + 1:])
        value_offset = offset + equals + 1
        entries.append({
            "line": first,
            "last_line": index - 1,
            "section": section,
            "arg": arg,
            "tag": tag,
            "value": value,
            "start": value_offset + start,
            "end": value_offset + end,
            "editable": first == index - 1,
            "effective": terminated and bool(value),
            "include": tag.lower() == "include",
        })
    return entries


def _matches(entry, section, tag):
    return (not entry["include"] and entry["arg"] is None and entry["section"] == section.lower()
            and entry["tag"].lower() == tag.lower())


def assignments(text, section, tag):
    """The entries of parse(text) that assign section/tag (section without an argument)."""
    return [entry for entry in parse(text) if _matches(entry, section, tag)]


def includes(text):
    """Values of `include =` lines: nfs-utils reads those files in place."""
    return [entry["value"] for entry in parse(text) if entry["include"] and entry["effective"]]


def _terminate(line):
    return line if line.endswith("\n") else line + "\n"


def set_value(text, section, tag, value):
    """Return text with section/tag = value, changing one line (or adding one or two lines)."""
    value = str(value)
    lines = _split_physical(text)
    matches = assignments(text, section, tag)
    new_line = "%s=%s\n" % (tag, value)
    if matches and matches[-1]["editable"]:
        last = matches[-1]
        line = lines[last["line"]]
        if last["value"] != value:
            line = line[:last["start"]] + value + line[last["end"]:]
        lines[last["line"]] = _terminate(line)
        return "".join(lines)
    if matches:
        # The last assignment spans joined lines: add ours right after it, so ours is read last.
        end = matches[-1]["last_line"]
        lines[end] = _terminate(lines[end])
        lines.insert(end + 1, new_line)
        return "".join(lines)
    header = _last_header_line(lines, section)
    if header is not None:
        lines[header] = _terminate(lines[header])
        lines.insert(header + 1, new_line)
        return "".join(lines)
    if text and not text.endswith("\n"):
        text += "\n"
    return text + "[%s]\n%s" % (section, new_line)


def _last_header_line(lines, section):
    found = None
    for number, line in enumerate(lines):
        stripped = line.strip()
        if not stripped.startswith("["):
            continue
        name, arg = _parse_section(stripped[1:])
        if name == section.lower() and arg is None and not (number > 0 and lines[number - 1].endswith("\\\n")):
            found = number
    return found


def remove_key(text, section, tag):
    """Return text without the one-line assignments of section/tag."""
    drop = set(entry["line"] for entry in assignments(text, section, tag) if entry["editable"])
    return "".join(line for number, line in enumerate(_split_physical(text)) if number not in drop)


def has_assignments(text):
    """True when text sets anything (a file of only comments, blanks and headers does not)."""
    return bool(parse(text))


def _version_compare(left, right):
    """strverscmp(3)-like: runs of digits compare by number, everything else byte by byte."""
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i].isdigit() and right[j].isdigit():
            i_end, j_end = i, j
            while i_end < len(left) and left[i_end].isdigit():
                i_end += 1
            while j_end < len(right) and right[j_end].isdigit():
                j_end += 1
            difference = int(left[i:i_end]) - int(right[j:j_end])
            if difference:
                return -1 if difference < 0 else 1
            i, j = i_end, j_end
            continue
        if left[i] != right[j]:
            return -1 if left[i] < right[j] else 1
        i += 1
        j += 1
    return (len(left) - i > 0) - (len(right) - j > 0)


def dropin_names(names):
    """The names conf_init_dir() reads, in its versionsort order."""
    usable = [name for name in names if not name.startswith(".") and len(name) > len(CONFIG_SUFFIX) and name.endswith(CONFIG_SUFFIX)]
    return sorted(usable, key=functools.cmp_to_key(_version_compare))


def effective(files, section, tag):
    """What nfs-utils will use for section/tag, from [(path, text)] in read order.

    Returns (winner, every) where winner is {path, line, value} or None, and every lists all
    effective assignments in read order.
    """
    every = []
    for path, text in files:
        for entry in assignments(text, section, tag):
            if entry["effective"]:
                every.append({"path": path, "line": entry["line"] + 1, "value": entry["value"]})
    return (every[-1] if every else None), every


def conflicts(every, own_path, wanted):
    """Assignments outside own_path whose value differs from wanted, and whether each wins."""
    rows = []
    winner = every[-1] if every else None
    for assignment in every:
        if assignment["path"] == own_path or assignment["value"] == str(wanted):
            continue
        rows.append(dict(assignment, overrides_ours=assignment is winner))
    return rows


def atoi(value):
    """conf_get_num() uses atoi(): leading digits count, anything else is 0."""
    if value is None:
        return None
    digits = ""
    text = value.strip()
    sign = ""
    if text[:1] in "+-":
        sign, text = text[:1], text[1:]
    for char in text:
        if not char.isdigit():
            break
        digits += char
    return int(sign + digits) if digits else 0
