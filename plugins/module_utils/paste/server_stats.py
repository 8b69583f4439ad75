# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NFS activity and kernel profiles as people paste them: sar -n NFS (client), sar -n NFSD (server), perf top /
perf report, /proc/lock_stat. Recognise them and read what they show. Pure.

sar prints rates per interval under a header naming its columns (sysstat rd_nfs.c: call/s retrans/s read/s write/s
access/s getatt/s; scall/s badcall/s packet/s udp/s tcp/s hit/s miss/s sread/s swrite/s saccess/s sgetatt/s); its
"Average:" row, when pasted, is the whole run's. read/write/access/getattr are the only ops it names: the metadata
share read here (access + getattr over all calls) is a lower bound.
perf's rows are "Overhead [Self] Command Shared-Object [k] symbol"; the hottest kernel symbols say where a server's
CPU went (a spin lock's slow path is contention, not work). lock_stat rows are "class: con-bounces contentions
waittime-min waittime-max waittime-total waittime-avg acq-bounces acquisitions holdtime-..." (lockstat.rst).
"""

from __future__ import annotations

import re

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals
from ansible_collections.ckptio.nfs.plugins.module_utils.paste import text_figures as tf

KIND = "server_stats"
TAKEN_FOR = "NFS activity or a kernel profile (sar -n NFS/NFSD, perf top/report, /proc/lock_stat)"
CAN_SHOW = ("RPCs retransmitted per call and the metadata share of calls (sar), where a server's CPU went (perf) and "
            "which kernel locks were contended (lock_stat)")

_PERF_ROW = re.compile(r"^[\s+-]{0,8}(\d{1,3}\.\d{1,2})%\s+(?:(\d{1,3}\.\d{1,2})%\s+)?(.{0,200}?)\[([k.])\]\s+(\S{1,200})")
_LOCK_ROW = re.compile(r"^\s*(\S.{0,200}?):((?:\s+\d{1,20}(?:\.\d{1,6})?){10,12})\s*$")
# Kernel symbols that put a profile's time on the server's side of NFS: contention, the NFS server, sunrpc's server,
# the journals of the exported file systems.
_SERVER_SYMBOL = re.compile(r"^(native_queued_spin_lock_slowpath|queued_spin_lock_slowpath|_raw_spin_lock\w*|osq_lock|"
                            r"mutex_spin_on_owner|rwsem_\w+|nfsd\w*|svc_\w+|svcauth\w*|nfs4_\w+|nfsd4_\w+|xfs\w*|"
                            r"jbd2\w*|ext4\w*|__ext4\w*|zfs\w*|zio\w*|dmu\w*|arc_\w+)$")
_CONTENTION = ("spin_lock", "osq_lock", "mutex_spin", "rwsem")
_INODE_LOCKS = ("i_mutex", "i_rwsem", "&sb->s_type->i_")
_SAR_CLIENT = "call/s"
_SAR_SERVER = "scall/s"


def recognise(text):
    """True when a sar -n NFS/NFSD header, a perf row with a kernel symbol or a lock_stat row is in the text."""
    if not any(mark in text for mark in ("call/s", "[k]", "[.]", "lock_stat", "contentions")):
        return False
    for _number, line in tf.lines(text):
        words = line.split()
        if (_SAR_CLIENT in words and "retrans/s" in words) or (_SAR_SERVER in words and "badcall/s" in words) \
                or (_PERF_ROW.match(line) and "[k]" in line) or line.startswith("lock_stat version"):
            return True
    return False


def read(text):
    findings = []
    for kind in (_SAR_CLIENT, _SAR_SERVER):
        rows = _sar_rows(text, kind)
        if rows:
            (_sar_client if kind == _SAR_CLIENT else _sar_server)(findings, rows)
    _perf(findings, text)
    _lock_stat(findings, text)
    return findings


def _sar_rows(text, first_column):
    """[(figures by column, line, is_average)] of the sar tables whose header has first_column."""
    rows = []
    header = None
    for number, line in tf.lines(text):
        words = line.split()
        if first_column in words:
            header = words[words.index(first_column):]
            continue
        if header is None or line.strip() in ("...", "[...]"):
            continue
        values = tf.columns_from_right(header, words)
        figures = dict((name, tf.number(values.get(name), True)) for name in header)
        if len(words) <= len(header) or any(value is None for value in figures.values()):
            header = None
            continue
        rows.append((figures, number, words[0].startswith("Average")))
    return rows


def _run(rows):
    """The Average: row when pasted, else the mean of the rows; with the line of the first row."""
    averages = [row for row in rows if row[2]]
    if averages:
        return averages[-1][0], averages[-1][1], "the Average: row"
    names = rows[0][0].keys()
    mean = dict((name, sum(row[0][name] for row in rows) / len(rows)) for name in names)
    return mean, rows[0][1], "the mean of %d rows" % len(rows)


def _sar_client(findings, rows):
    run, line, what = _run(rows)
    calls = run["call/s"]
    if not calls:
        return
    share = run["retrans/s"] / calls
    crossed = signals.RETRANS_PER_OP.crossed(share)
    findings.append(tf.finding(
        "network", "RPCs retransmitted per call (sar -n NFS)", share,
        "%.2f retrans/s over %.2f call/s (%s): %.2f %% of calls sent again" % (run["retrans/s"], calls, what, share * 100),
        line, tf.threshold_text(signals.RETRANS_PER_OP), crossed, 2 if crossed else 0))
    _metadata(findings, rows, run, line, what, "call/s", ("access/s", "getatt/s"), ("read/s", "write/s"))


def _sar_server(findings, rows):
    run, line, what = _run(rows)
    calls = run["scall/s"]
    if not calls:
        return
    if "badcall/s" in run:
        share = run["badcall/s"] / calls
        crossed = signals.BAD_CALLS_SHARE.crossed(share)
        findings.append(tf.finding(
            "server_threads", "bad calls per call (sar -n NFSD)", share,
            "%.2f badcall/s over %.2f scall/s (%s)" % (run["badcall/s"], calls, what), line,
            tf.threshold_text(signals.BAD_CALLS_SHARE), crossed, 1 if crossed else 0))
    _metadata(findings, rows, run, line, what, "scall/s", ("saccess/s", "sgetatt/s"), ("sread/s", "swrite/s"))


def _metadata(findings, rows, run, line, what, calls_column, metadata_columns, data_columns):
    if not all(name in run for name in metadata_columns + data_columns):
        return
    calls = run[calls_column]
    metadata = sum(run[name] for name in metadata_columns)
    share = metadata / calls
    # Calls seen: each row is a rate over its interval; the intervals are not in every paste, so a row counts as one
    # second (sar's shortest interval): a lower bound of the calls behind the share.
    seen = sum(row[0][calls_column] for row in rows if not row[2])
    enough = signals.OP_MIX_MIN_OPS.crossed(seen)
    crossed = enough and signals.METADATA_SHARE.crossed(share)
    findings.append(tf.finding(
        "access_pattern", "metadata share of NFS calls (%s + %s)" % metadata_columns, share,
        "%s: %.2f of %.2f calls/s are %s (%.1f %%); the other named ops %s; at least %d calls seen%s" % (
            what, metadata, calls, " and ".join(metadata_columns), share * 100,
            ", ".join("%s %.2f" % (name, run[name]) for name in data_columns), seen,
            "" if enough else ", fewer than %d: no op mix" % signals.OP_MIX_MIN_OPS.threshold),
        line, tf.threshold_text(signals.METADATA_SHARE), crossed, 2 if crossed else 0))


def _perf(findings, text):
    hot = []
    children = False
    for number, line in tf.lines(text):
        if "Children" in line and "Self" in line:
            children = True
        row = _PERF_ROW.match(line)
        if not row or row.group(4) != "k":
            continue
        # With --children the first figure includes the callees: the second is the symbol's own.
        share = float(row.group(2) if children and row.group(2) else row.group(1)) / 100.0
        symbol = row.group(5)
        if _SERVER_SYMBOL.match(symbol) and signals.PERF_HOT_SYMBOL_SHARE.crossed(share):
            hot.append((share, symbol, number))
    if not hot:
        return
    hot.sort(key=lambda item: (-item[0], item[2]))
    named = ", ".join("%s %.1f %%" % (symbol, share * 100) for share, symbol, _line in hot[:3])
    contention = any(part in hot[0][1] for part in _CONTENTION)
    findings.append(tf.finding(
        "server_cpu", "the hottest kernel symbols of a profile", hot[0][0],
        "%s of the samples%s; a profile of the NFS server's host speaks for its CPU" % (
            named, " - a lock's slow path: CPUs spinning on contention, not doing work" if contention else ""),
        hot[0][2], tf.threshold_text(signals.PERF_HOT_SYMBOL_SHARE), True, 1))


def _lock_stat(findings, text):
    if "lock_stat" not in text and "contentions" not in text:
        return
    worst = None
    for number, line in tf.lines(text):
        row = _LOCK_ROW.match(line)
        if not row:
            continue
        figures = [float(word) for word in row.group(2).split()]
        # contentions is the 2nd column, waittime-total the 5th (Documentation/locking/lockstat.rst).
        contentions, wait_total = figures[1], figures[4]
        if contentions > 0 and (worst is None or wait_total > worst[0]):
            worst = (wait_total, contentions, row.group(1).strip(), number)
    if worst is None:
        return
    wait_total, contentions, name, number = worst
    inode = any(part in name for part in _INODE_LOCKS)
    findings.append(tf.finding(
        "access_pattern" if inode else "server_cpu", "the most waited-for kernel lock (/proc/lock_stat)", wait_total,
        "%s: %d contentions, %.2f us waited in all%s" % (
            name, contentions, wait_total, " - an inode's lock: writers or lookups of one file or directory queue on it"
            if inode else " - CPUs waiting on each other"), number, weight=1))
