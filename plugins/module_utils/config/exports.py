# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""exports(5): which clients get which export options, read the way nfs-utils' exportfs reads it.

Pure functions on text; the caller reads /etc/exports and /etc/exports.d/*.exports. The rules
follow nfs-utils itself (support/nfs/xio.c xgetc/xskip/xgettok and support/nfs/exports.c
getexportent), not only the manual page:

- Fields are separated by whitespace. A backslash before a newline continues the line: the pair
  and the next line's leading blanks read as one space.
- Double quotes toggle quoting anywhere in a field and are dropped; quoted whitespace is part of
  the field. A backslash and three octal digits (``\\040``) stand for that character.
- ``#`` starts a comment only where a field would start; inside a field it is a character.
- A line is a path, then clients. A field starting with ``-`` sets default options for the
  clients after it on that line; ``client(opts)`` applies its own options after the defaults,
  in order (the last of ``sync``/``async`` wins). A path with no client (or defaults as its last
  field) is exported to every host, as is ``(opts)`` with no name.
- At the first malformed entry export_read() stops: the rest of the file is not exported.

Option names are not checked here: exportfs refuses the unknown ones itself.
"""

from __future__ import annotations

# C isspace() in the "C" locale, which exportfs tokenizes with.
_SPACE = " \t\n\v\f\r"
_OCTAL = "01234567"


def _characters(text):
    """[(character, line)] as xgetc() hands them out: a backslash-newline and the blanks after it are one space."""
    chars = []
    line = 1
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and text[index + 1:index + 2] == "\n":
            index += 2
            line += 1
            while index < len(text) and text[index] in " \t":
                index += 1
            chars.append((" ", line))
            continue
        chars.append((char, line))
        if char == "\n":
            line += 1
        index += 1
    return chars


class ExportsSyntaxError(ValueError):
    """An entry exportfs refuses; it reads nothing after it."""

    def __init__(self, line, msg):
        super().__init__("line %d: %s" % (line, msg))
        self.line = line
        self.msg = msg


class _Fields:
    """The field reader of getexportent(): xskip() then xgettok() over xgetc()'s characters."""

    def __init__(self, text):
        self.chars = _characters(text)
        self.index = 0

    def peek(self):
        return self.chars[self.index][0] if self.index < len(self.chars) else None

    @property
    def line(self):
        if self.index < len(self.chars):
            return self.chars[self.index][1]
        return self.chars[-1][1] if self.chars else 1

    def skip(self, blanks):
        """xskip(): step over blanks and comments; a comment runs to the newline, which counts as a blank only when listed."""
        while True:
            char = self.peek()
            if char == "#":
                while self.peek() not in (None, "\n"):
                    self.index += 1
                char = self.peek()
            if char is None or char not in blanks:
                return
            self.index += 1

    def field(self):
        """xgettok(): the next field, or None at the end of the line (the newline is left to read)."""
        start = self.line
        text = []
        quoted = False
        while True:
            char = self.peek()
            if char is None or (not quoted and char in _SPACE):
                if char is not None and char != "\n":
                    self.index += 1
                break
            self.index += 1
            if char == '"':
                quoted = not quoted
                continue
            text.append(char)
            if len(text) >= 4 and text[-4] == "\\" and all(digit in _OCTAL for digit in text[-3:]) \
                    and int("".join(text[-3:]), 8) < 256:
                text[-4:] = [chr(int("".join(text[-3:]), 8))]
        if quoted:
            # exportfs would read the rest of the file into this field.
            raise ExportsSyntaxError(start, "unterminated quote")
        return "".join(text) if text else None

    def client_field(self):
        """getexport(): the next client field of this line (None: the line has no more)."""
        self.skip(" \t")
        return self.field()


def split_options(text):
    """The comma-separated options of a client or of a ``-`` defaults field, empty items dropped."""
    return [option.strip() for option in text.split(",") if option.strip()]


def client_kind(client):
    """What a client field names, as support/export/client.c client_gettype() tells them apart."""
    if client in ("", "*"):
        return "any"
    if client.startswith("gss/"):
        return "gss"
    if client.startswith("@"):
        return "netgroup"
    index = 0
    while index < len(client):
        char = client[index]
        if char in "*?[":
            return "wildcard"
        if char == "/":
            return "subnet"
        if char == "\\":
            index += 1
        index += 1
    return "host"


def _client(field, line):
    """(name, own options) of a ``client(opts)`` field."""
    if "(" not in field:
        return field, []
    name, _paren, rest = field.partition("(")
    if not rest.endswith(")") or ")" in rest[:-1]:
        raise ExportsSyntaxError(line, "bad option list in %r" % field)
    return name, split_options(rest[:-1])


def _read_line(fields, path, line, entries):
    """Append the entries of one line: getexportent() called until the line has no client field left.

    Each entry is appended as it is read: exportfs exported the clients before a malformed one.
    """
    defaults = []
    field = fields.client_field()
    while True:
        # getexportent() looks for one defaults field before each client.
        if field is not None and field.startswith("-"):
            defaults = defaults + split_options(field[1:])
            field = fields.client_field()
        name, own = _client(field or "", line)
        entries.append({"line": line, "path": path, "client": name or "*", "kind": client_kind(name),
                        "default_options": list(defaults), "options": defaults + own})
        field = fields.client_field()
        if field is None:
            return


def parse(text):
    """(entries, error) for the text of an exports file.

    entries: {line, path, client, kind, default_options, options} per client, in file order;
    options are the defaults then the client's own, in the order exportfs applies them.
    error: None, or {line, msg} for the entry at which exportfs stops reading (entries holds
    what it exported before it).
    """
    fields = _Fields(text)
    entries = []
    try:
        while True:
            # getpath(): only blanks and newlines are skipped before a path.
            fields.skip(" \t\n")
            line = fields.line
            if fields.peek() is None:
                return entries, None
            path = fields.field()
            if path is None:
                # An empty field here ("", or a blank line ending in \r) ends getexportent() as
                # the end of the file does: nothing after it is exported.
                raise ExportsSyntaxError(line, "no export path (exportfs reads nothing after this)")
            _read_line(fields, path, line, entries)
    except ExportsSyntaxError as exc:
        return entries, {"line": exc.line, "msg": exc.msg}


def write_mode(options):
    """'sync', 'async' or None (neither given: sync, the default since nfs-utils 1.0.0), the last one winning."""
    mode = None
    for option in options:
        if option in ("sync", "async"):
            mode = option
    return mode
