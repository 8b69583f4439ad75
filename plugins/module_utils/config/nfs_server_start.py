# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the thread count nfs-server starts with comes from, and the one edit of RPCNFSDCOUNT.

Pure functions on the texts the module reads (docs/kernels.md has the table, per distribution,
from the real packages kept in tests/fixtures/distro/):

- nfs-utils' rpc.nfsd (utils/nfsd/nfsd.c main()) first reads `count = conf_get_num("nfsd",
  "threads", count)` from nfs.conf, then, when a non-option argument follows the options,
  `count = atoi(argv[optind])`: a count on the command line wins over nfs.conf. nfsdctl
  autostart (nfs-utils 2.8, Debian 13) reads only nfs.conf.
- Where nfs-utils still ships /usr/lib/systemd/scripts/nfs-utils_env.sh (Debian 11 1:1.3.4-6,
  Ubuntu 20.04 1:1.3.4-2.5ubuntu3), nfs-config.service runs it; it sources
  /etc/default/nfs-kernel-server and writes `RPCNFSDARGS="$RPCNFSDOPTS ${RPCNFSDCOUNT:-8}"` to
  /run/sysconfig/nfs-utils, and nfs-server.service runs `rpc.nfsd $RPCNFSDARGS`: the count is
  RPCNFSDCOUNT, 8 when unset, at every start (those rpc.nfsd 1.3.4 binaries do not even read
  /etc/nfs.conf). Debian 12/13 and Ubuntu 22.04/24.04 ship no such script and run rpc.nfsd
  without a count: nfs.conf decides, and RPCNFSDCOUNT (still in the template on Debian 12 and
  Ubuntu 22.04) is read by nothing.

Mechanisms: NFS_CONF (nfs.conf decides), COMMAND_LINE (RPCNFSDCOUNT, or a count in
RPCNFSDOPTS, through nfs-utils_env.sh), UNIT_ARGUMENT (a count written in ExecStart itself),
UNKNOWN (with the reason).
"""

from __future__ import annotations

import json
import re
import shlex

NFS_CONF = "nfs_conf"
COMMAND_LINE = "command_line"
UNIT_ARGUMENT = "unit_argument"
UNKNOWN = "unknown"

COUNT_VARIABLE = "RPCNFSDCOUNT"
OPTS_VARIABLE = "RPCNFSDOPTS"
ARGS_VARIABLE = "RPCNFSDARGS"
RECORD_HEADER = "# Managed by ckptio.nfs.nfsd_threads: the RPCNFSDCOUNT line it replaced, for state=absent.\n"

# getopt_long of rpc.nfsd (utils/nfsd/nfsd.c): the options that take the next word as their value.
_SHORT_WITH_VALUE = frozenset("HSNVpPGL")
_LONG_WITH_VALUE = frozenset(["host", "scope", "no-nfs-version", "nfs-version", "port", "grace-time", "lease-time"])
_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


# ---- systemd units ---------------------------------------------------------------------------
def exec_starts(unit_files):
    """The ExecStart= values in effect, from [(path, text)]: the unit, then its drop-ins in order.

    systemd.service(5): ExecStart= lines add up; an empty `ExecStart=` (a drop-in's usual first
    line) clears the list before. Only the [Service] section counts; a trailing backslash joins lines.
    """
    values = []
    for path, text in unit_files:
        section = None
        logical = ""
        for raw in (text or "").splitlines():
            if logical:
                raw = logical + " " + raw.lstrip()
                logical = ""
            if raw.endswith("\\"):
                logical = raw[:-1]
                continue
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line.strip("[]").strip()
                continue
            if section != "Service" or "=" not in line:
                continue
            key, value = line.split("=", 1)
            if key.strip() != "ExecStart":
                continue
            value = value.strip()
            if not value:
                values = []
            else:
                values.append({"path": path, "value": value})
    return values


def _commands(value):
    """The argv lists an ExecStart= value runs: itself, or the commands inside `sh -c '...'`."""
    value = value.lstrip("-@:+!")
    try:
        argv = shlex.split(value)
    except ValueError:
        return None
    if argv and argv[0].rsplit("/", 1)[-1] in ("sh", "bash", "dash") and "-c" in argv[1:-1]:
        inner = argv[argv.index("-c") + 1]
        commands = []
        for part in re.split(r"\|\||&&|;", inner):
            try:
                words = shlex.split(part)
            except ValueError:
                return None
            if words:
                commands.append(words)
        return commands
    return [argv] if argv else []


def first_positional(args):
    """(index, word) of the first non-option argument as rpc.nfsd's getopt_long sees it, or None.

    glibc getopt permutes: options after a positional word are still options, so the first
    word that is neither an option nor an option's value is argv[optind] after parsing.
    """
    index = 0
    while index < len(args):
        word = args[index]
        if word == "--":
            return (index + 1, args[index + 1]) if index + 1 < len(args) else None
        if word.startswith("--"):
            if "=" not in word and word[2:] in _LONG_WITH_VALUE:
                index += 1
        elif word.startswith("-") and len(word) > 1:
            # A cluster such as -sH host: the first letter that takes a value ends it.
            for position, letter in enumerate(word[1:]):
                if letter in _SHORT_WITH_VALUE:
                    if position == len(word) - 2:
                        index += 1
                    break
        else:
            return index, word
        index += 1
    return None


def _atoi(word):
    match = re.match(r"^\s*([+-]?\d+)", word or "")
    return int(match.group(1)) if match else 0


# ---- shell assignment files (/etc/default/nfs-kernel-server) ------------------------------------
# Outside quotes these end a simple value or make it something the shell computes (POSIX 2.2, 2.6).
_OPERATORS = ";&|<>()"


def _expansion(text):
    """Why a value starting at text cannot be read without running the shell."""
    if text.startswith("$(") or text.startswith("`"):
        return "command substitution %s: its value is known only when the shell runs it" % text.split()[0]
    if text.startswith("$"):
        return "the expansion %s: its value depends on the shell's variables" % text.split()[0]
    return "a backslash escape"


def _scan_value(raw):
    """(value, problem, end) of the right-hand side of a `NAME=...` line.

    value is the word the shell assigns when it is plain text (quotes removed), else None and
    problem says why it cannot be read (a command substitution, an expansion, a word after it);
    end is where the word ends in raw (what follows is blanks and an optional `# comment`).
    """
    value, index = [], 0
    while index < len(raw):
        char = raw[index]
        if char in " \t":
            rest = raw[index:].strip()
            if rest and not rest.startswith("#"):
                return None, "%r follows the value (the shell would run it as a command)" % rest, index
            break
        if char == "'":
            close = raw.find("'", index + 1)
            if close < 0:
                return None, "an unclosed quote", index
            value.append(raw[index + 1:close])
            index = close + 1
        elif char == '"':
            close = index + 1
            while close < len(raw) and raw[close] != '"':
                if raw[close] in "$`\\":
                    return None, _expansion(raw[close:]), index
                close += 1
            if close >= len(raw):
                return None, "an unclosed quote", index
            value.append(raw[index + 1:close])
            index = close + 1
        elif char in "$`\\":
            return None, _expansion(raw[index:]), index
        elif char in _OPERATORS:
            return None, "the shell operator %r" % char, index
        else:
            value.append(char)
            index += 1
    return "".join(value), None, index


def _shell_value(raw):
    """The value of a simple `NAME=value` right-hand side, or None when the shell would compute it."""
    return _scan_value(raw)[0]


def shell_assignments(text, name):
    """Each `NAME=value` line of text for name, indented ones too (an if/else sets it on several):
    {line (1-based), value (None: not plain), problem (why not), raw}."""
    found = []
    for number, line in enumerate((text or "").splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("export "):
            stripped = stripped[len("export "):].lstrip()
        match = _NAME.match(stripped)
        if match and match.group(1) == name:
            value, problem, _end = _scan_value(match.group(2))
            found.append({"line": number, "value": value, "problem": problem, "raw": line})
    return found


def shell_value(files, name):
    """The last assignment of name across [(path, text)] sourced in order: {path, line, value, problem,
    lines (every line of that file assigning it)} or None."""
    winner = None
    for path, text in files:
        assignments = shell_assignments(text, name)
        if assignments:
            winner = {"path": path, "line": assignments[-1]["line"], "value": assignments[-1]["value"],
                      "problem": assignments[-1]["problem"], "lines": [found["line"] for found in assignments]}
    return winner


def unreadable_assignment(source, name):
    """Why the assignment shell_value() found cannot be read (None when it can): a value the shell
    computes, or more than one assignment in the file (an if/else: which one runs is the shell's call)."""
    if source is None:
        return None
    if len(source["lines"]) > 1:
        lines = ", ".join(str(line) for line in source["lines"])
        return ("%s is assigned on lines %s of %s (an if/else, or a later line overriding it): which one the shell "
                "keeps is not known without running it" % (name, lines, source["path"]))
    if source["value"] is None:
        return "%s in %s line %d is not a plain value: %s" % (name, source["path"], source["line"], source["problem"])
    return None


def set_shell_value(text, name, value):
    """text with name's one assignment set to value (quotes and a trailing comment kept), or
    `NAME=value` added at the end. Only that line changes; every other byte, and its ending, stays.

    ValueError when the file assigns name more than once or not as a plain value: which line the
    shell keeps is not known, so none is edited.
    """
    lines = (text or "").splitlines(keepends=True)
    assignments = shell_assignments(text, name)
    if not assignments:
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        return "".join(lines) + "%s=%s\n" % (name, value)
    problem = unreadable_assignment({"path": "the file", "line": assignments[-1]["line"], "value": assignments[-1]["value"],
                                     "problem": assignments[-1]["problem"],
                                     "lines": [found["line"] for found in assignments]}, name)
    if problem:
        raise ValueError(problem)
    number = assignments[-1]["line"] - 1
    line = lines[number]
    body = line.rstrip("\r\n")
    ending = line[len(body):]
    equals = body.index("=")
    rest = body[equals + 1:]
    _old, _problem, end = _scan_value(rest)
    quote = rest[:1] if rest[:1] in ("'", '"') else ""
    lines[number] = "%s=%s%s%s%s%s" % (body[:equals], quote, value, quote, rest[end:], ending)
    return "".join(lines)


def restore_line(text, name, original):
    """text with name's last assignment replaced by the original line (None: the line is removed)."""
    lines = (text or "").splitlines(keepends=True)
    assignments = shell_assignments(text, name)
    if not assignments:
        if original is None:
            return text
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        return "".join(lines) + original + "\n"
    number = assignments[-1]["line"] - 1
    ending = lines[number][len(lines[number].rstrip("\r\n")):]
    if original is None:
        del lines[number]
    else:
        lines[number] = original + ending
    return "".join(lines)


def record_text(path, original, written=None):
    """Our record of the line we replaced in path (original None: there was none) and of the line we
    wrote in its place (state=absent restores the original only while that line is still there)."""
    return RECORD_HEADER + json.dumps({"path": path, "line": original, "written": written}, sort_keys=True) + "\n"


def parse_record(text):
    """{path, line, written} from record_text(), or None when text is not ours or not readable as such
    (written None: a record from before ckptio kept the line it wrote)."""
    if not text or not text.startswith(RECORD_HEADER):
        return None
    try:
        record = json.loads(text[len(RECORD_HEADER):])
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("path"), str):
        return None
    for key in ("line", "written"):
        if record.get(key) is not None and not isinstance(record[key], str):
            return None
    return {"path": record["path"], "line": record.get("line"), "written": record.get("written")}


# ---- nfs-utils_env.sh --------------------------------------------------------------------------
def sourced_files(script):
    """The files the script sources (`. FILE`), in order, with simple `$var` names resolved."""
    variables = {}
    paths = []
    for line in (script or "").splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            continue
        match = _NAME.match(stripped)
        if match:
            variables[match.group(1)] = _shell_value(match.group(2))
        for found in re.finditer(r"(?:^|[;&|]\s*|\s)(?:\.|source)\s+(\S+)", stripped):
            word = found.group(1).rstrip(";")
            resolved = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: variables.get(m.group(1)) or m.group(0), word)
            if resolved.startswith("/") and "$" not in resolved and resolved not in paths:
                paths.append(resolved)
    return paths


def script_count_default(script):
    """The default of `${RPCNFSDCOUNT:-N}` in the script's RPCNFSDARGS line, or None when it has none."""
    match = re.search(r"\$\{%s:-(\d+)\}" % COUNT_VARIABLE, script or "")
    return int(match.group(1)) if match else None


# ---- detection ---------------------------------------------------------------------------------
def _result(mechanism, reason, exec_start=None, count=None, count_source=None, edit_path=None, unreadable=False):
    """unreadable: nfs-server may well pass a count, but it cannot be read (the reason says what and
    why); the count the next start uses is then unknown, never taken to be nfs.conf's."""
    return {"mechanism": mechanism, "reason": reason, "exec_start": exec_start, "count": count,
            "count_source": count_source, "edit_path": edit_path, "unreadable": unreadable}


def detect(unit_files, env_script_path, env_script, defaults_files, editable):
    """How nfs-server's rpc.nfsd gets its thread count on this host.

    unit_files: [(path, text)] of nfs-server.service then its drop-ins; env_script: the text of
    nfs-utils_env.sh at env_script_path (None: absent); defaults_files: [(path, text or None)] of
    every file the script sources, in its order; editable: the files ckptio may edit
    (host_root.HostRoot.editable_defaults). Returns {mechanism, reason, exec_start, count,
    count_source {path, line, value, via}, edit_path}: count is what the next start uses when the
    command line decides (None otherwise), edit_path the file whose RPCNFSDCOUNT would set it.
    """
    if not unit_files:
        return _result(UNKNOWN, "no nfs-server.service unit found")
    starts = exec_starts(unit_files)
    if not starts:
        return _result(UNKNOWN, "nfs-server.service has no ExecStart=")
    shown = [start["value"] for start in starts]
    invocations = []
    for start in starts:
        commands = _commands(start["value"])
        if commands is None:
            return _result(UNKNOWN, "cannot parse ExecStart=%s (%s)" % (start["value"], start["path"]), shown,
                           unreadable=True)
        for argv in commands:
            program = argv[0].rsplit("/", 1)[-1]
            if program in ("rpc.nfsd", "nfsdctl"):
                invocations.append((program, argv[1:], start["path"]))
    if not invocations:
        return _result(UNKNOWN, "ExecStart runs neither rpc.nfsd nor nfsdctl: %s" % "; ".join(shown), shown,
                       unreadable=True)
    for program, args, path in invocations:
        if program == "nfsdctl":
            if args[:1] == ["threads"] and len(args) > 1:
                return _result(UNIT_ARGUMENT, "%s runs nfsdctl threads %s" % (path, args[1]), shown, _atoi(args[1]),
                               {"path": path, "line": None, "value": args[1], "via": "ExecStart"})
            continue
        if any(re.search(r"\$\{?%s\}?" % ARGS_VARIABLE, arg) for arg in args):
            return _from_env_script(shown, env_script_path, env_script, defaults_files, editable)
        positional = first_positional(args)
        if positional is not None:
            return _result(UNIT_ARGUMENT, "%s runs rpc.nfsd with the count %s" % (path, positional[1]), shown,
                           _atoi(positional[1]), {"path": path, "line": None, "value": positional[1], "via": "ExecStart"})
    return _result(NFS_CONF, "nfs-server runs %s without a thread count: [nfsd] threads in nfs.conf decides"
                   % " / ".join(sorted(set(program for program, _args, _path in invocations))), shown)


def _source(found, **extra):
    """count_source {path, line, value, via} from a shell_value() result."""
    source = dict((key, found[key]) for key in ("path", "line", "value"))
    source.update(extra)
    return source


def _from_env_script(shown, env_script_path, env_script, defaults_files, editable_paths):
    if env_script is None or ARGS_VARIABLE not in env_script:
        return _result(UNKNOWN, "nfs-server passes $%s to rpc.nfsd but %s, which writes it, is %s" % (
            ARGS_VARIABLE, env_script_path, "missing" if env_script is None else "not one that sets it"), shown,
            unreadable=True)
    present = [(path, text) for path, text in defaults_files if text is not None]
    count_source = shell_value(present, COUNT_VARIABLE)
    opts_source = shell_value(present, OPTS_VARIABLE)
    editable = [path for path, _text in defaults_files if path in editable_paths]
    edit_path = count_source["path"] if count_source and count_source["path"] in editable_paths else (
        editable[-1] if editable else None)
    for source, variable in ((count_source, COUNT_VARIABLE), (opts_source, OPTS_VARIABLE)):
        problem = unreadable_assignment(source, variable)
        if problem:
            return _result(UNKNOWN, "%s; cannot tell the count rpc.nfsd gets, and ckptio edits no line of it" % problem,
                           shown, edit_path=edit_path, unreadable=True)
    opts = shlex.split(opts_source["value"]) if opts_source else []
    in_opts = first_positional(opts)
    if in_opts is not None:
        # `$RPCNFSDOPTS $RPCNFSDCOUNT`: a word of RPCNFSDOPTS comes first, so it is argv[optind].
        return _result(COMMAND_LINE, "%s passes rpc.nfsd the count %s from %s (%s line %d), before %s" % (
            env_script_path, in_opts[1], OPTS_VARIABLE, opts_source["path"], opts_source["line"], COUNT_VARIABLE),
            shown, _atoi(in_opts[1]), _source(opts_source, value=in_opts[1], via=OPTS_VARIABLE), edit_path)
    default = script_count_default(env_script)
    if count_source is not None and count_source["value"] != "":
        return _result(COMMAND_LINE, "%s passes rpc.nfsd the count %s=%s (%s line %d); nfs.conf threads= is overridden"
                       % (env_script_path, COUNT_VARIABLE, count_source["value"], count_source["path"], count_source["line"]),
                       shown, _atoi(count_source["value"]), _source(count_source, via=COUNT_VARIABLE), edit_path)
    if default is not None:
        return _result(COMMAND_LINE, "%s passes rpc.nfsd the count %d (%s unset); nfs.conf threads= is overridden"
                       % (env_script_path, default, COUNT_VARIABLE), shown, default,
                       {"path": env_script_path, "line": None, "value": str(default), "via": "default"}, edit_path)
    return _result(NFS_CONF, "%s passes no count (%s unset): [nfsd] threads in nfs.conf decides" % (
        env_script_path, COUNT_VARIABLE), shown, edit_path=edit_path)
