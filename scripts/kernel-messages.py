# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the catalogue of NFS kernel messages from the kernel's own source (issue 44).

    scripts/kernel-messages.py --source 5.10=/path/linux.git@v5.10 \
        --source 6.1=/path/linux.git@v6.1 --source 6.12=/path/linux-6.12-tree [--check]

A source is VERSION=PATH[@REV]: PATH a git directory (bare or not; REV a tag or commit, read
with `git ls-tree`/`git cat-file`, no work tree needed) or an unpacked source tree. Every C file
under fs/nfs, fs/nfsd, fs/lockd and net/sunrpc (xprtrdma and auth_gss included) is scanned for
the calls that reach the kernel log at a default log level:

- printk / printk_ratelimited / printk_once / printk_deferred (level from the KERN_* prefix,
  none = the default, warning);
- pr_emerg .. pr_info and their _once / _ratelimited forms, pr_cont is skipped (it continues
  another line and carries no text of its own worth matching);
- net_{emerg,alert,crit,err,warn,notice,info}_ratelimited, dev_/ibdev_{err,warn,info,notice,...};
- WARN / WARN_ONCE / WARN_RATELIMIT with a format (WARN_ON has none: its "WARNING: ... at
  FILE:LINE" line is matched by a hand entry);
- errorf / warnf / invalf / infof (include/linux/fs_context.h logfc: printed to the kernel log
  when the mount has no fs_context log, i.e. every mount(2) call).
Skipped, and counted: dprintk / dfprintk / dprintk_rcu / dprintk_cont / pr_debug / pr_devel /
dev_dbg / net_dbg_ratelimited (debug only: compiled out without CONFIG_SUNRPC_DEBUG or
DYNAMIC_DEBUG and off by default even with it, rpcdebug(8) turns them on), svc_printk and the
nfs_errorf family (fs/nfs/internal.h, net/sunrpc/svc.c: dprintk unless the caller opened the
mount with fsopen(2) and reads its log), TP_printk (tracepoints, never in dmesg), formats that are
not a string literal, and formats with too little literal text to be recognised (under 6
letters, or no word of 3 characters that the format fixes).

Writes plugins/module_utils/paste/kernel_messages*.py (one module per directory group, each under
800 lines) and merges scripts/kernel-messages-annotations.yml, the hand-written meanings, by
format string; an annotation that matches no format fails the build, so a rebuild cannot drop one
silently. --check compares instead of writing (exit 1 on a difference).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

import yaml

DIRS = ("fs/nfs", "fs/nfsd", "fs/lockd", "net/sunrpc")
GROUPS = (("nfs", "fs/nfs/"), ("nfsd", "fs/nfsd/"), ("lockd", "fs/lockd/"), ("sunrpc", "net/sunrpc/"))
LEVELS = {"0": "emerg", "1": "alert", "2": "crit", "3": "err", "4": "warning", "5": "notice", "6": "info", "7": "debug",
          "c": "cont", "d": "warning"}
KERN = {"KERN_EMERG": "0", "KERN_ALERT": "1", "KERN_CRIT": "2", "KERN_ERR": "3", "KERN_WARNING": "4", "KERN_NOTICE": "5",
        "KERN_INFO": "6", "KERN_DEBUG": "7", "KERN_CONT": "c", "KERN_DEFAULT": "d"}
PR_LEVELS = {"emerg": "emerg", "alert": "alert", "crit": "crit", "err": "err", "warn": "warning", "warning": "warning",
             "notice": "notice", "info": "info"}
LAYERS = ("network", "network_loss", "client_rpc_slots", "server_threads", "server_cpu", "server_storage", "access_pattern",
          "client_cpu", "fault_hang", "fault_bug", "misconfiguration", "informational")
SKIPPED = ("dprintk", "dfprintk", "dprintk_rcu", "dprintk_cont", "pr_debug", "pr_devel", "dev_dbg", "net_dbg_ratelimited",
           "svc_printk", "nfs_errorf", "nfs_ferrorf", "nfs_invalf", "nfs_finvalf", "nfs_warnf", "nfs_fwarnf", "pr_cont",
           "TP_printk", "pr_debug_ratelimited", "pr_debug_once")
MAX_LINES = 780


def printer(name):
    """(index of the format argument, level or None for the KERN_ prefix) of a call that prints, else None."""
    if name in ("printk", "printk_ratelimited", "printk_once", "printk_deferred", "printk_deferred_once"):
        return 0, None
    match = re.fullmatch(r"pr_(emerg|alert|crit|err|warn|warning|notice|info)(_once|_ratelimited)?", name)
    if match:
        return 0, PR_LEVELS[match.group(1)]
    match = re.fullmatch(r"net_(emerg|alert|crit|err|warn|notice|info)_ratelimited", name)
    if match:
        return 0, PR_LEVELS[match.group(1)]
    match = re.fullmatch(r"(?:ib)?dev_(emerg|alert|crit|err|warn|notice|info)(_once|_ratelimited)?", name)
    if match:
        return 1, PR_LEVELS[match.group(1)]
    if name in ("WARN", "WARN_ONCE", "WARN_RATELIMIT"):
        return 1, "warning"
    if name in ("errorf", "invalf"):
        return 1, "err"
    if name == "warnf":
        return 1, "warning"
    if name == "infof":
        return 1, "info"
    return None


TOKEN = re.compile(r"""
    (?P<comment>/\*.*?\*/|//[^\n]*)
  | (?P<pp>^[ \t]*\#(?:[^\n\\]|\\.)*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<char>'(?:[^'\\\n]|\\.)*')
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<number>\d[\w.]*)
  | (?P<punct>\S)
""", re.S | re.M | re.X)
DEFINE = re.compile(r'#\s*define\s+(\w+)\s+((?:"(?:[^"\\]|\\.)*"\s*)+)$')


def tokens(text):
    """(kind, text, line) of C tokens; string macros found on the way are yielded as ("define", name, value)."""
    line = 1
    pos = 0
    for match in TOKEN.finditer(text):
        line += text.count("\n", pos, match.start())
        pos = match.start()
        kind = match.lastgroup
        if kind == "pp":
            define = DEFINE.match(match.group().strip().replace("\\\n", " "))
            if define:
                yield "define", define.group(1), c_strings(re.findall(r'"(?:[^"\\]|\\.)*"', define.group(2)))
        elif kind != "comment":
            yield kind, match.group(), line


def c_strings(literals):
    """The bytes of adjacent C string literals, decoded as the compiler would (escapes, octal)."""
    out = []
    for literal in literals:
        body = literal[1:-1]
        i = 0
        while i < len(body):
            char = body[i]
            if char != "\\":
                out.append(char)
                i += 1
                continue
            nxt = body[i + 1]
            if nxt in "01234567":
                digits = re.match(r"[0-7]{1,3}", body[i + 1:]).group()
                out.append(chr(int(digits, 8)))
                i += 1 + len(digits)
            else:
                out.append({"n": "\n", "t": "\t", "r": "\r", "a": "\a", "e": "\x1b"}.get(nxt, nxt))
                i += 2
    return "".join(out)


def calls(text, macros):
    """(function, call name, format tokens, line) of every call named like a printer, with the enclosing function."""
    toks = list(tokens(text))
    function = candidate = ""
    depth = 0
    i = 0
    while i < len(toks):
        kind, value, line = toks[i]
        if kind == "define":
            macros[value] = line
        elif value == "{":
            if depth == 0:
                function = candidate
            depth += 1
        elif value == "}":
            depth = max(depth - 1, 0)
        elif kind == "ident" and i + 1 < len(toks) and toks[i + 1][1] == "(":
            if depth == 0:
                candidate = value
            elif printer(value) or value in SKIPPED:
                args, i = arguments(toks, i + 2)
                yield function, value, args, line
                continue
        i += 1


def arguments(toks, i):
    """The call's top-level arguments (lists of tokens) and the index after its closing parenthesis."""
    args = [[]]
    depth = 0
    while i < len(toks):
        value = toks[i][1]
        if toks[i][0] == "define":
            i += 1
            continue
        if value in "([{" and toks[i][0] == "punct":
            depth += 1
        elif value in ")]}" and toks[i][0] == "punct":
            if depth == 0:
                return args, i + 1
            depth -= 1
        elif value == "," and depth == 0:
            args.append([])
            i += 1
            continue
        args[-1].append(toks[i])
        i += 1
    return args, i


def format_of(arg, macros):
    """(level digit or None, format text) of a format argument, or None when it is not built of literals."""
    parts = []
    level = None
    for kind, value, _line in arg:
        if kind == "string":
            parts.append(c_strings([value]))
        elif kind == "ident" and value in KERN:
            level = KERN[value] if level is None and not parts else level
            parts.append("\x01" + KERN[value])
        elif kind == "ident" and value in macros:
            parts.append(macros[value])
        elif kind == "ident" and value.isupper():
            parts.append("%s")  # a string macro from outside the four directories: a hole
        else:
            return None
    if not any(kind == "string" for kind, _v, _l in arg):
        return None
    text = "".join(parts)
    while text.startswith("\x01"):
        level = level if level is not None else text[1]
        text = text[2:]
    return level, text.replace("\x01", "")


SPEC = re.compile(r"%(?:%|[-+ 0#]*(?:\*|\d+)?(?:\.(?:\*|\d+))?(?:hh|h|ll|l|z|t|j|L|q)?(?:p[A-Za-z0-9]*|[diouxXcsn]))")


def pieces(fmt):
    """The format as alternating literal text and holes ("%d", "%x", "%s"); adjacent holes merged into one "%s"."""
    out = [""]
    pos = 0
    for match in SPEC.finditer(fmt):
        out[-1] += fmt[pos:match.start()]
        pos = match.end()
        spec = match.group()
        if spec == "%%":
            out[-1] += "%"
            continue
        conversion = re.sub(r"^%[-+ 0#]*(?:\*|\d+)?(?:\.(?:\*|\d+))?(?:hh|h|ll|l|z|t|j|L|q)?", "", spec)
        hole = "%d" if conversion in ("d", "i", "u") else "%x" if conversion in ("x", "X", "o") else "%s"
        if out[-1] == "" and len(out) > 1:
            out[-2] = "%s"
        else:
            out.extend([hole, ""])
    out[-1] += fmt[pos:]
    return tuple(out)


def first_line(text):
    """The format's first printed line: dmesg shows a line at a time, and a recogniser reads lines."""
    text = text.lstrip("\n")
    return text.split("\n", 1)[0].strip()


def recognisable(parts):
    literal = "".join(parts[0::2])
    words = [w for p in parts[0::2] for w in inner_words(p)]
    return sum(c.isalpha() for c in literal) >= 6 and any(len(w) >= 3 for w in words)


def inner_words(literal):
    """Words of a literal piece a line will show whole: not the first or last word when it touches a hole."""
    return [w for w in re.split(r"\W+", literal) if w]


def read_tree(spec):
    """{path: text} of the four directories' .c and .h files at a source (git directory at a revision, or a tree)."""
    path, _at, rev = spec.partition("@")
    files = {}
    if os.path.isdir(os.path.join(path, "objects")) or os.path.isdir(os.path.join(path, ".git")):
        listing = subprocess.run(["git", "-C", path, "ls-tree", "-r", rev or "HEAD", "--", *DIRS],
                                 check=True, capture_output=True, text=True).stdout
        blobs = [(line.split()[2], line.split("\t", 1)[1]) for line in listing.splitlines()
                 if line.endswith((".c", ".h"))]
        batch = subprocess.run(["git", "-C", path, "cat-file", "--batch"], input=("\n".join(blob for blob, _name in blobs) + "\n").encode(),
                               check=True, capture_output=True).stdout
        pos = 0
        for _blob, name in blobs:
            header_end = batch.index(b"\n", pos)
            size = int(batch[pos:header_end].split()[2])
            files[name] = batch[header_end + 1:header_end + 1 + size].decode("utf-8", "replace")
            pos = header_end + 2 + size
        return files
    for top in DIRS:
        for root, _dirs, names in os.walk(os.path.join(path, top)):
            for name in names:
                if name.endswith((".c", ".h")):
                    full = os.path.join(root, name)
                    with open(full, encoding="utf-8", errors="replace") as handle:
                        files[os.path.relpath(full, path)] = handle.read()
    return files


def extract(files):
    """(sites, skipped counts): sites are (format, level, path, line, function, call) of every printing call."""
    macros = {}
    for name in sorted(files):
        if name.endswith(".h"):
            for kind, value, text in tokens(files[name]):
                if kind == "define":
                    macros[value] = text
    sites = []
    skipped = {}
    for name in sorted(files):
        if not name.endswith(".c"):
            continue
        local = dict(macros)
        for function, call, args, line in calls(files[name], local):
            group = name.split("/")[1] if name.startswith("fs/") else "sunrpc"
            if call in SKIPPED:
                skipped[(group, "debug or not printed")] = skipped.get((group, "debug or not printed"), 0) + 1
                continue
            index, level = printer(call)
            found = format_of(args[index], local) if len(args) > index else None
            if found is None:
                skipped[(group, "format not a literal")] = skipped.get((group, "format not a literal"), 0) + 1
                continue
            kern, fmt = found
            if kern == "c":
                skipped[(group, "continuation")] = skipped.get((group, "continuation"), 0) + 1
                continue
            text = first_line(fmt)
            if not recognisable(pieces(text)):
                skipped[(group, "too little literal text")] = skipped.get((group, "too little literal text"), 0) + 1
                continue
            level = level or LEVELS[kern or "d"]
            sites.append((text, level, name, line, function, call))
    return sites, skipped


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--source", action="append", required=True, help="VERSION=PATH[@REV]")
    parser.add_argument("--annotations", default=os.path.join(os.path.dirname(__file__), "kernel-messages-annotations.yml"))
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "plugins", "module_utils", "paste"))
    parser.add_argument("--check", action="store_true", help="compare with the files in --out instead of writing them")
    options = parser.parse_args()
    versions = []
    catalogue = {}
    counts = {}
    for source in options.source:
        version, _equals, spec = source.partition("=")
        versions.append((version, spec))
        sites, skipped = extract(read_tree(spec))
        for text, level, path, line, function, _call in sites:
            # Formats that print the same text (%u in one version, %d in another) are one entry, named
            # by the newest version's format.
            entry = catalogue.setdefault(pieces(text), {"level": level, "sites": [], "formats": []})
            entry["sites"].append((version, "%s:%d" % (path, line), function))
            entry["format"] = text
            if text not in entry["formats"]:
                entry["formats"].append(text)
        for (group, why), number in skipped.items():
            counts.setdefault(version, {}).setdefault(group, {}).setdefault("skipped: " + why, 0)
            counts[version][group]["skipped: " + why] += number
        for text, level, path, line, function, _call in sites:
            group = path.split("/")[1] if path.startswith("fs/") else "sunrpc"
            counts.setdefault(version, {}).setdefault(group, {}).setdefault("sites", 0)
            counts[version][group]["sites"] += 1
    with open(options.annotations, encoding="utf-8") as handle:
        annotations = yaml.safe_load(handle)
    merge(catalogue, annotations["messages"])
    for version in counts:
        for group in counts[version]:
            counts[version][group]["formats"] = len({k for k, e in catalogue.items() if any(
                s[0] == version and group_of(s[1]) == group for s in e["sites"])})
    files = render(catalogue, versions, counts)
    return write(files, options.out, options.check)


def group_of(site):
    return site.split("/")[1] if site.startswith("fs/") else "sunrpc"


def merge(catalogue, annotations):
    """Hand meanings onto their formats; every annotation must name a format some version prints."""
    by_format = {text: key for key, entry in catalogue.items() for text in entry["formats"]}
    missing = [a["format"] for a in annotations if a["format"] not in by_format]
    if missing:
        sys.exit("annotations that match no extracted format (fix the annotation file):\n  " + "\n  ".join(missing))
    for annotation in annotations:
        if annotation["layer"] not in LAYERS:
            sys.exit("annotation %r: layer %r is not one of %s" % (annotation["format"], annotation["layer"], LAYERS))
        catalogue[by_format[annotation["format"]]].update(layer=annotation["layer"], meaning=annotation["meaning"].strip(),
                                                          fix=annotation["fix"].strip(), hand=True)


def render(catalogue, versions, counts):
    """{file name: text} of the generated modules: one per directory group, split to stay under 800 lines."""
    header = ('# -*- coding: utf-8 -*-\n# Copyright: ckptio.nfs contributors\n'
              '# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)\n'
              '# GENERATED by scripts/kernel-messages.py from the kernel source: do not edit by hand;\n'
              '# hand meanings live in scripts/kernel-messages-annotations.yml.\n')
    by_group = {name: [] for name, _prefix in GROUPS}
    for entry in sorted(catalogue.values(), key=lambda entry: entry["format"]):
        first = entry["sites"][0][1]
        by_group[group_of(first)].append(entry_lines(entry["format"], entry))
    files = {}
    modules = []
    for name, prefix in GROUPS:
        chunks = [[]]
        for lines in by_group[name]:
            if len(chunks[-1]) + len(lines) > MAX_LINES - 12:
                chunks.append([])
            chunks[-1].extend(lines)
        for part, chunk in enumerate(chunks, 1):
            module = "kernel_messages_%s%s" % (name, "" if len(chunks) == 1 else "_%d" % part)
            files[module + ".py"] = (header + '"""Catalogued kernel messages first printed under %s (generated)."""\n\n'
                                     'ENTRIES = (\n%s)\n' % (prefix, "".join(chunk)))
            modules.append(module)
    index = [header, '"""Index of the generated catalogue: the kernel versions read, counts, and the entries of every part.\n\n'
             'An entry is (format, pieces, level, sites, layer_or_fault, meaning, fix, hand): pieces alternate literal\n'
             'text and holes (%d, %x, %s); sites are (version, file:line, function) where the kernel prints it."""\n\n',
             "from ansible_collections.ckptio.nfs.plugins.module_utils.paste import (  # noqa: F401\n"]
    index += ["    %s,\n" % module for module in modules]
    index.append(")\n\nVERSIONS = (\n")
    index += ["    (%r, %r),\n" % (version, "/".join(spec.split("@")[0].rstrip("/").split("/")[-2:]) + spec[len(spec.split("@")[0]):])
              for version, spec in versions]
    index.append(")\nCOUNTS = {\n")
    for version in counts:
        index.append("    %r: {\n" % version)
        index += ["        %r: %r,\n" % (group, dict(sorted(counts[version][group].items()))) for group in sorted(counts[version])]
        index.append("    },\n")
    index.append("}\nENTRIES = (\n    " + "\n    + ".join("%s.ENTRIES" % m for m in modules) + "\n)\n")
    files["kernel_messages.py"] = "".join(index)
    return files


def entry_lines(text, entry):
    """The lines of one entry in a generated module, none over 160 characters."""
    sites = tuple(entry["sites"])
    first = entry["sites"][0]
    meaning = entry.get("meaning") or "message from %s %s" % (first[1].rsplit(":", 1)[0], first[2])
    fields = [text, pieces(text), entry["level"], sites, entry.get("layer", "informational"), meaning,
              entry.get("fix", ""), bool(entry.get("hand"))]
    out = ["    (\n"]
    for field in fields:
        out.extend(wrap(field))
    out.append("    ),\n")
    return out


def wrap(value, indent=8):
    """repr of a field as lines under 160 characters: long strings split into adjacent literals."""
    pad = " " * indent
    text = repr(value)
    if len(text) + indent + 1 <= 150:
        return [pad + text + ",\n"]
    if isinstance(value, str):
        chunks = [value[i:i + 100] for i in range(0, len(value), 100)]
        return [pad + "(\n"] + [pad + "    " + repr(c) + "\n" for c in chunks] + [pad + "),\n"]
    out = [pad + "(\n"]
    for item in value:
        out.extend(wrap(item, indent + 4))
    return out + [pad + "),\n"]


def write(files, out, check):
    differ = []
    for name, text in sorted(files.items()):
        path = os.path.join(out, name)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old != text:
            differ.append(name)
            if not check:
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(text)
    stale = [n for n in os.listdir(out) if n.startswith("kernel_messages") and n.endswith(".py") and n not in files]
    for name in stale:
        differ.append(name + " (stale)")
        if not check:
            os.remove(os.path.join(out, name))
    print(("differs: " if check else "written: ") + (", ".join(differ) or "nothing"))
    return 1 if check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
