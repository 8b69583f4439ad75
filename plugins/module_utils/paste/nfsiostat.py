# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nfsiostat output (nfs-utils tools/nfs-iostat/nfs-iostat.py): recognise it and read its reports. Pure.

What nfsiostat prints per mount and report (display_iostats, __print_rpc_op_stats):

    SERVER:/export mounted on /mnt:
               ops/s       rpc bklog
               1.951           0.000
    write:     ops/s  kB/s  kB/op  retrans  avg RTT (ms)  avg exe (ms)  [avg queue (ms)]  [errors]
               1.804  103.426  57.329  0 (0.0%)  112.157  17029.389  [16916.051]  [0 (0.0%)]

`avg queue (ms)` is printed from nfs-utils 2.3.x on (1.3.4, Debian 11's, has none: there the
queue is exe - RTT, the same definition), `errors` where the kernel counts them (iostats 1.1). Every
figure is a rate or an average over nfsiostat's interval; the first report of a run is since the
mount (sample_time = the mount's age). Read here as a stream of words, so a mail client that broke
the columns one value per line, or a header redacted or cut, changes nothing: the op header names
its columns, and the values follow in that order.
"""

from __future__ import annotations

import math
import re

# Column names as nfsiostat prints them, each as the words it splits into.
COLUMNS = (("ops/s",), ("kB/s",), ("kB/op",), ("retrans",), ("avg", "RTT", "(ms)"), ("avg", "exe", "(ms)"),
           ("avg", "queue", "(ms)"), ("errors",))
_KEYS = {"ops/s": "ops_per_second", "kB/s": "kb_per_second", "kB/op": "kb_per_op", "retrans": "retrans",
         "avg RTT (ms)": "avg_rtt_ms", "avg exe (ms)": "avg_exe_ms", "avg queue (ms)": "avg_queue_ms", "errors": "errors"}
# "retrans" and "errors" print a count then "(P%)".
_COUNTED = ("retrans", "errors")
# "SERVER:/export mounted on /mnt:" - also redacted ("<hidden> mounted on /mnt", colon dropped).
# Bounded and [ \t] only, so a search runs in time linear in the line (issue 45, test_regex_linear.py).
_MOUNT_LINE = re.compile(r"^[ \t]{0,64}(?P<export>\S{1,4096})[ \t]{1,64}mounted on[ \t]{1,64}(?P<mount_point>\S{1,4096}?):?[ \t]*$")
_OP_HEADER = re.compile(r"^[a-z][a-z0-9_]{0,63}:$")


def recognise(text):
    """True when the text holds an nfsiostat report (the `ops/s rpc bklog` line or an op header `write: ops/s kB/s`)."""
    words = text.split()
    for index, word in enumerate(words[:-2]):
        if word == "ops/s" and (words[index + 1:index + 3] == ["rpc", "bklog"]
                                or (index and _OP_HEADER.match(words[index - 1]) and words[index + 1] == "kB/s")):
            return True
    return False


def parse(text):
    """[{"export", "mount_point", "ops_per_second", "rpc_backlog", "ops": {"write": {...}, ...}}], one per report.

    A report starts at a mount line or at `ops/s rpc bklog`, whichever comes first; an op's
    figures are floats keyed by _KEYS (avg_queue_ms None when the version prints none).
    """
    reports = []
    tokens = _tokens(text)
    index = 0
    current = None
    while index < len(tokens):
        token = tokens[index]
        if isinstance(token, tuple):
            current = _new_report(reports, token[0], token[1])
            index += 1
        elif token == "ops/s" and tokens[index + 1:index + 3] == ["rpc", "bklog"]:
            if current is None or current["ops_per_second"] is not None or current["ops"]:
                current = _new_report(reports, current["export"] if current else None, current["mount_point"] if current else None)
            values, index = _numbers(tokens, index + 3, 2)
            current["ops_per_second"], current["rpc_backlog"] = (values + [None, None])[:2]
        elif isinstance(token, str) and _OP_HEADER.match(token) and tokens[index + 1:index + 2] == ["ops/s"]:
            if current is None:
                current = _new_report(reports, None, None)
            op, index = _op(tokens, index + 1)
            if op is not None and op.get("negative"):
                current.setdefault("refused", []).append("%s %s: not read" % (token[:-1], ", ".join(op["negative"])))
            elif op is not None:
                current["ops"][token[:-1]] = op
        else:
            index += 1
    return [report for report in reports if report["ops"] or report["ops_per_second"] is not None or report.get("refused")]


def _new_report(reports, export, mount_point):
    report = {"export": export, "mount_point": mount_point, "ops_per_second": None, "rpc_backlog": None, "ops": {}}
    reports.append(report)
    return report


def _tokens(text):
    """The words of the text, a mount line as one (export, mount point) tuple."""
    tokens = []
    for line in text.split("\n"):
        found = _MOUNT_LINE.match(line)
        if found and "ops/s" not in line:
            tokens.append((found.group("export"), found.group("mount_point")))
        else:
            tokens.extend(line.split())
    return tokens


def _op(tokens, index):
    """(figures of one op, index after them) from the column names at index; (None, index) when they do not follow."""
    columns = []
    while index < len(tokens):
        column = _column_at(tokens, index)
        if column is None:
            break
        columns.append(" ".join(column))
        index += len(column)
    figures = dict((key, None) for key in _KEYS.values())
    negative = []
    for column in columns:
        value, index = _value(tokens, index, column in _COUNTED)
        if value is None:
            return None, index
        if value < 0:
            # nfsiostat prints rates, sizes, counts and averages of non-negative kernel sums: a negative one is no
            # nfsiostat figure (an edited paste, a broken counter), and its op is not read (issue 45).
            negative.append("%s is %s" % (column, tokens[index - 1] if value == float(tokens[index - 1]) else value))
        figures[_KEYS[column]] = value
    if negative:
        figures["negative"] = negative
    return figures, index


def _column_at(tokens, index):
    for column in COLUMNS:
        if tuple(tokens[index:index + len(column)]) == column:
            return column
    return None


def _value(tokens, index, counted):
    """(number, next index): a float; a count followed by its "(P%)" word(s) when counted."""
    if index >= len(tokens) or not isinstance(tokens[index], str):
        return None, index
    number = _float(tokens[index])
    if number is None:
        return None, index
    index += 1
    if counted and index < len(tokens) and isinstance(tokens[index], str) and tokens[index].startswith("("):
        # "(0.0%)", or "(" "0.0%)" when a column width left a blank inside.
        while index < len(tokens) and isinstance(tokens[index], str) and not tokens[index].endswith(")"):
            index += 1
        index += 1
    return number, index


def _numbers(tokens, index, count):
    values = []
    while len(values) < count and index < len(tokens):
        number = _float(tokens[index]) if isinstance(tokens[index], str) else None
        if number is None:
            break
        values.append(number)
        index += 1
    return values, index


def _float(word):
    try:
        number = float(word)
    except ValueError:
        return None
    # float() takes "nan" and "inf", which nfsiostat never prints.
    return number if math.isfinite(number) else None
