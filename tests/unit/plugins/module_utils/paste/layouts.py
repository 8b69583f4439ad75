"""The layouts a paste arrives in, made from a real output (issue 25): each a function text -> text.

Every test that reads a pasted format runs it in each of these, so "tolerated" is measured, not claimed.
"""
from __future__ import annotations

import os
import re

FIXTURES = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures", "paste"))


def indented(text):
    """A ticket's code block or a mail quote: every line indented by four spaces."""
    return "".join("    " + line + "\n" if line else "\n" for line in text.split("\n")[:-1])


def crlf(text):
    return text.replace("\n", "\r\n")


def no_break_spaces(text):
    """A chat tool's no-break spaces where the tool printed blanks."""
    return text.replace(" ", "\u00a0")


def label_line(text):
    """What the user typed above the paste."""
    return "output from gpu017 at 10:02 during the stall:\n" + text


def label_then_indented(text):
    return "gpu017 10:02\n" + indented(text)


def no_final_newline(text):
    return text.rstrip("\r\n")


def everything(text):
    """All of it at once, as the worst paste."""
    return no_final_newline(crlf(no_break_spaces(label_then_indented(text))))


LAYOUTS = {"as_saved": lambda text: text, "indented": indented, "crlf": crlf, "no_break_spaces": no_break_spaces,
           "label_line": label_line, "label_then_indented": label_then_indented, "no_final_newline": no_final_newline,
           "everything": everything}


def broken_columns(text):
    """nfsiostat's value lines broken one value per line, as a mail client with a narrow width does."""
    out = []
    for line in text.split("\n"):
        if re.match(r"^\s+[0-9]", line):
            out.extend(value for value in re.split(r"\s{2,}", line.strip()))
        else:
            out.append(line)
    return "\n".join(out)


def redacted_header(text):
    """The mount line redacted without its trailing colon."""
    return re.sub(r"^(\S+) mounted on (\S+):$", r"<redacted> mounted on \2", text, flags=re.M)


def no_header(text):
    return re.sub(r"^\S+ mounted on \S+:\n", "", text, flags=re.M)


def fixture_files():
    """(relative path, text) of every real capture and built file under tests/fixtures/paste (NOTES.txt left out)."""
    found = []
    for root, _dirs, names in sorted(os.walk(FIXTURES)):
        for name in sorted(names):
            if name.endswith(".txt") and name != "NOTES.txt":
                path = os.path.join(root, name)
                with open(path, encoding="utf-8", errors="surrogateescape") as handle:
                    found.append((os.path.relpath(path, FIXTURES), handle.read()))
    return found


def read(relative):
    with open(os.path.join(FIXTURES, relative), encoding="utf-8", errors="surrogateescape") as handle:
        return handle.read()


# The kind each capture is, by the name the coordinator gave it on the lab (NOTES.txt).
KIND_BY_PREFIX = (("nfsstat_m", "nfsstat_mounts"), ("threads", "unknown"), ("empty", "empty"),
                  ("mountstats_cmd", "mountstats_report"), ("mountstats_lines", "mountstats_lines"), ("mountstats", "mountstats"),
                  ("nfsd", "nfsd"), ("nfsiostat", "nfsiostat"), ("nfsstat_c", "nfsstat_client"), ("nfsstat_s", "nfsstat_server"),
                  ("pool_stats", "pool_stats"), ("rpc_nfs", "rpc_nfs"), ("dmesg", "kernel_log"), ("journal", "kernel_log"),
                  ("console", "kernel_log"), ("kernel", "kernel_log"), ("hung", "kernel_log"))


def expected_kind(relative):
    name = os.path.basename(relative)
    for prefix, kind in KIND_BY_PREFIX:
        if name.startswith(prefix):
            return kind
    raise AssertionError("no expected kind for %s: name it by KIND_BY_PREFIX" % relative)
