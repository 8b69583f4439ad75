# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Edit `options <module> name=value` lines of modprobe.d(5) files and modules-load.d(5) lists.

Pure functions on text. Every edit changes only the bytes that must change: one value, one
appended token or one appended line; comments, blank lines, tabs, duplicates and a missing
final newline elsewhere stay as they were.

Semantics followed (kmod libkmod-config.c, kernel/params.c): files are read in basename order
across the configuration directories, a basename in an earlier directory hides the same name in
later ones, all `options` lines of a module are concatenated in that order, and when a parameter
appears more than once the kernel applies each in turn, so the last one wins. Module and
parameter names treat `-` and `_` alike.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\S+")
CONFIG_SUFFIX = ".conf"


def normalise_name(name):
    """kmod and the kernel treat '-' and '_' in module and parameter names as the same."""
    return name.replace("-", "_")


def _physical_lines(text):
    return text.splitlines(keepends=True)


def _body(line):
    """A line without its line ending."""
    return line.rstrip("\r\n")


def _continued(line):
    return _body(line).endswith("\\")


def _logical_lines(text):
    """(first physical line index, physical line count, logical text) with backslash continuations joined."""
    lines = _physical_lines(text)
    index = 0
    while index < len(lines):
        first = index
        logical = _body(lines[index])
        while _continued(lines[index]) and index + 1 < len(lines):
            index += 1
            logical = logical[:-1] + " " + _body(lines[index])
        index += 1
        yield first, index - first, logical


def options_entries(text, module):
    """Every `name=value` for module in text, in order: dicts {line, name, value, start, end}.

    start/end are offsets of the value inside that physical line. Lines joined with a trailing
    backslash are read but reported with line=None: they are never edited in place.
    """
    entries = []
    wanted_module = normalise_name(module)
    for first, count, logical in _logical_lines(text):
        tokens = list(_TOKEN.finditer(logical))
        if len(tokens) < 3 or tokens[0].group() != "options" or normalise_name(tokens[1].group()) != wanted_module:
            continue
        editable = count == 1
        for token in tokens[2:]:
            name, sep, value = token.group().partition("=")
            if not sep:
                continue
            value_start = token.start() + len(name) + 1
            entries.append({
                "line": first if editable else None,
                "name": normalise_name(name),
                "value": value,
                "start": value_start,
                "end": token.end(),
            })
    return entries


def _last_editable_options_line(text, module):
    lines = _physical_lines(text)
    wanted_module = normalise_name(module)
    last = None
    for number, line in enumerate(lines):
        if _continued(line) or (number > 0 and _continued(lines[number - 1])):
            continue
        tokens = _body(line).split()
        if len(tokens) >= 2 and tokens[0] == "options" and normalise_name(tokens[1]) == wanted_module:
            last = number
    return last


def _append_line(text, line):
    if text and not text.endswith("\n"):
        # Without this newline the new line would be glued to the old last line.
        text += "\n"
    return text + line


def _append_token(line, token):
    body = _body(line)
    return body + " " + token + line[len(body):]


def set_options(text, module, wanted):
    """Return text with module's parameters set to wanted ({name: value}), changing the minimum.

    The last occurrence of a parameter is the one the kernel applies, so only that one is
    rewritten; a parameter not present is appended to the module's last `options` line, or a new
    `options` line is added at the end.
    """
    lines = _physical_lines(text)
    entries = options_entries(text, module)
    missing = []
    replacements = {}
    for name, value in wanted.items():
        name = normalise_name(name)
        value = str(value)
        matches = [entry for entry in entries if entry["name"] == name]
        if not matches:
            missing.append("%s=%s" % (name, value))
            continue
        last = matches[-1]
        if last["value"] == value:
            continue
        if last["line"] is None:
            # A continued line is not edited in place; a later assignment overrides it.
            missing.append("%s=%s" % (name, value))
            continue
        replacements.setdefault(last["line"], []).append((last["start"], last["end"], value))
    for number, edits in replacements.items():
        line = lines[number]
        for start, end, value in sorted(edits, reverse=True):
            line = line[:start] + value + line[end:]
        lines[number] = line
    if missing:
        target = _last_editable_options_line("".join(lines), module)
        if target is not None:
            for token in missing:
                lines[target] = _append_token(lines[target], token)
        else:
            return _append_line("".join(lines), "options %s %s\n" % (module, " ".join(missing)))
    return "".join(lines)


def remove_options(text, module, names):
    """Return text without module's parameters in names; an `options` line left empty goes."""
    drop = set(normalise_name(name) for name in names)
    wanted_module = normalise_name(module)
    result = []
    lines = _physical_lines(text)
    for number, line in enumerate(lines):
        previous_continued = number > 0 and _continued(lines[number - 1])
        body = _body(line)
        tokens = list(_TOKEN.finditer(body))
        if (previous_continued or _continued(line) or len(tokens) < 2 or tokens[0].group() != "options"
                or normalise_name(tokens[1].group()) != wanted_module):
            result.append(line)
            continue
        kept = body
        removed_any = False
        for token in reversed(tokens[2:]):
            name = token.group().partition("=")[0]
            if normalise_name(name) in drop:
                removed_any = True
                # Take the whitespace before the token with it so the rest keeps its spacing.
                start = token.start()
                while start > 0 and body[start - 1] in " \t":
                    start -= 1
                kept = kept[:start] + kept[token.end():]
        if not removed_any:
            result.append(line)
            continue
        if len(kept.split()) <= 2:
            continue
        result.append(kept + line[len(body):])
    return "".join(result)


def has_directives(text):
    """True when text holds anything but comments and blank lines."""
    for line in _physical_lines(text):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return True
    return False


def config_order(listing):
    """Order modprobe.d files the way kmod reads them.

    listing: [(directory, [file names])] in kmod's directory precedence (/etc/modprobe.d first).
    Returns paths sorted by basename; a basename seen in an earlier directory hides later ones;
    only names ending in .conf count.
    """
    chosen = {}
    for directory, names in listing:
        for name in names:
            if not name.endswith(CONFIG_SUFFIX) or name.startswith(".") or name in chosen:
                continue
            chosen[name] = directory.rstrip("/") + "/" + name
    return [chosen[name] for name in sorted(chosen)]


# An install command is run by a shell (kmod libkmod-module.c, command_do()); these end one
# command of it, so parameters after them belong to another program.
_SHELL_SEPARATOR = re.compile(r";|&&|\|\||\|")
_PARAMETER = re.compile(r"^([A-Za-z0-9_-]+)=(.*)$")


def install_commands(text, module):
    """Every `install <module> <command>` line in text: dicts {line, command, options}.

    line is the 1-based number of the line. options ({name: value}) are the `name=value`
    arguments the command itself passes after the module's name, as in
    `install sunrpc /sbin/modprobe --ignore-install sunrpc $CMDLINE_OPTS tcp_slot_table_entries=4`.
    """
    found = []
    wanted_module = normalise_name(module)
    for first, _count, logical in _logical_lines(text):
        tokens = logical.split()
        if len(tokens) < 3 or tokens[0] != "install" or normalise_name(tokens[1]) != wanted_module:
            continue
        command = logical.split(None, 2)[2]
        options = {}
        for segment in _SHELL_SEPARATOR.split(command):
            words = segment.split()
            names = [normalise_name(word) for word in words]
            if wanted_module not in names:
                continue
            for word in words[names.index(wanted_module) + 1:]:
                match = _PARAMETER.match(word)
                if match:
                    options[normalise_name(match.group(1))] = match.group(2)
        found.append({"line": first + 1, "command": command, "options": options})
    return found


def first_install_command(files, module):
    """(path, install command) that modprobe runs for module, or (None, None).

    kmod uses the first matching install command in configuration order and ignores the rest
    (kmod_module_get_install_commands(): "find only the first command").
    """
    for path, text in files:
        commands = install_commands(text, module)
        if commands:
            return path, commands[0]
    return None, None


def effective_options(files, module):
    """{parameter: {value, path}} that loading module applies, from [(path, text)] in kmod order.

    All `options` lines count, the last assignment winning; then the parameters the module's
    install command passes itself, because modprobe appends command-line parameters after the
    configured ones and the kernel applies each in turn (kernel/params.c parse_args()).
    """
    effective = {}
    for path, text in files:
        for entry in options_entries(text, module):
            effective[entry["name"]] = {"value": entry["value"], "path": path}
    path, command = first_install_command(files, module)
    if command is not None:
        for name, value in command["options"].items():
            effective[name] = {"value": value, "path": path}
    return effective


def listed_modules(text):
    """Module names a modules-load.d file lists (comments start with '#' or ';')."""
    names = []
    for line in _physical_lines(text):
        stripped = line.strip()
        if stripped and stripped[0] not in "#;":
            names.append(normalise_name(stripped))
    return names


def ensure_listed(text, module):
    """Return text with module listed in a modules-load.d file (unchanged if it already is)."""
    if normalise_name(module) in listed_modules(text):
        return text
    return _append_line(text, module + "\n")


def remove_listed(text, module):
    """Return text without the lines that list module."""
    wanted = normalise_name(module)
    return "".join(line for line in _physical_lines(text) if normalise_name(line.strip()) != wanted)
