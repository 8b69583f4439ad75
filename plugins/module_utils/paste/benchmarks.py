# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark results as people paste them: fio (text output, new and old), dd, mdtest, IOR and `time` of a
command. Recognise them and read their rates. Pure.

Each rate is a figure (weight 0) in bytes per second - dd's from its own byte count and seconds, not its rounded
rate; fio's and IOR's binary units (KiB/MiB, and old fio's "KB/s" meaning KiB) converted as printed - or, for
mdtest, in operations per second (its SUMMARY table: Max Min Mean Std Dev, printed "%.3f", so a comma there is a
decimal comma). One judgement only, and only from what the text shows: when a paste holds both a file-create rate
and a write rate, creating the files more slowly than writing them at 1 MiB each points at metadata
(access_pattern, weight 1).
"""

from __future__ import annotations

import re

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals
from ansible_collections.ckptio.nfs.plugins.module_utils.paste import text_figures as tf

KIND = "benchmarks"
TAKEN_FOR = "benchmark results (fio, dd, mdtest, IOR, time)"
CAN_SHOW = ("the read and write rates a benchmark reached, its completion latency percentiles, and file create/stat "
            "rates against the write rate")

MIB = 1024.0 ** 2
_NUM = r"(\d{1,15}(?:[.,]\d{1,9})?)"
_DD = re.compile(r"(\d{1,20}) bytes\b.{0,80}?copied, " + _NUM + r" s(?:econds)?, " + _NUM + r" ([kKMGT]?i?B)/s")
_FIO_GROUP = re.compile(r"^\s*(READ|WRITE):\s+(?:bw|io=\S{1,30},\s+aggrb)=" + _NUM + r"([KMGT]i?B)/s")
_FIO_JOB = re.compile(r"^\s*(read|write)\s*:\s+(?:IOPS=" + _NUM + r"([kM]?), BW=|io=\S{1,30},\s+bw=)" + _NUM +
                      r"([KMGT]i?B)/s")
_PERCENTILES = re.compile(r"^\s*clat percentiles \((nsec|usec|msec)\)")
_P99 = re.compile(r"\b99\.00th=\[\s{0,12}(\d{1,15})\]")
_MDTEST = re.compile(r"^\s*(File creation|File stat|File read|File removal|Directory creation|Directory stat|"
                     r"Directory removal|Tree creation|Tree removal)\s*(?::\s*)?" + _NUM + r"(?:\s+" + _NUM + r"\s+" +
                     _NUM + r")?")
_OPS_PER_SEC = re.compile(_NUM + r" ops/sec")
_IOR_MAX = re.compile(r"^\s*Max (Write|Read):\s+" + _NUM + r" MiB/sec")
_REAL = re.compile(r"^\s*real\s+(\d{1,6})m(\d{1,3}(?:[.,]\d{1,3})?)s\s*$")
_TIME_COMMAND = re.compile(r"(?:^|[\s$#>])time\s+(\S.{0,120})$")
_SCALE = {"": 1.0, "k": 1e3, "M": 1e6}
_LATENCY_MS = {"nsec": 1e-6, "usec": 1e-3, "msec": 1.0}


def recognise(text):
    """True when a dd summary, fio result, mdtest or IOR result or a `time` report is anywhere in the text."""
    if not any(mark in text for mark in ("copied", "bw=", "BW=", "aggrb=", "File creation", "File stat", "Max Write",
                                         "Max Read", "real")):
        return False
    for _number, line in tf.lines(text):
        if _DD.search(line) or _FIO_GROUP.match(line) or _FIO_JOB.match(line) or _MDTEST.match(line) \
                or _IOR_MAX.match(line) or _REAL.match(line):
            return True
    return False


def read(text):
    findings = []
    rates = []
    creates = []
    group_seen = any(_FIO_GROUP.match(line) for _number, line in tf.lines(text))
    last_command = None
    last_direction = None
    percentile_unit = None
    for number, line in tf.lines(text):
        if "dd " in line and ("if=" in line or "of=" in line):
            last_command = line.strip()
        command = _TIME_COMMAND.search(line)
        if command:
            last_command = command.group(1).strip()
        for reader in (_dd, _fio_group if group_seen else _fio_job, _ior, _real):
            found = reader(line, number, last_command)
            if found:
                findings.append(found)
                if found["value"] is not None and found["signal"].endswith("write rate"):
                    rates.append(found)
        job = _FIO_JOB.match(line)
        if job:
            last_direction = job.group(1)
        unit = _PERCENTILES.match(line)
        if unit:
            percentile_unit = unit.group(1)
        p99 = _P99.search(line)
        if p99 and percentile_unit:
            latency = tf.number(p99.group(1))
            if latency is not None:
                findings.append(tf.finding(
                    None, "fio %s completion latency, 99th percentile" % (last_direction or "I/O"),
                    latency * _LATENCY_MS[percentile_unit], "99 %% of %s I/Os completed within %s %s" % (
                        last_direction or "the", p99.group(1), percentile_unit), number))
            percentile_unit = None
        created = _mdtest(line, number)
        if created:
            findings.append(created)
            if created["signal"].startswith("mdtest File creation"):
                creates.append(created)
    _creates_against_writes(findings, creates, rates)
    return findings


def _dd(line, number, command):
    found = _DD.search(line)
    if not found:
        return None
    size, seconds = int(found.group(1)), tf.number(found.group(2), True)
    printed = tf.number(found.group(3), True)
    rate = size / seconds if seconds else tf.rate_in_bytes(printed, found.group(4))
    direction = "read" if command and "of=/dev/null" in command else (
        "write" if command and ("if=/dev/zero" in command or "if=/dev/urandom" in command) else "copy")
    return tf.finding(None, "dd %s rate" % direction, rate, "%d bytes in %s s: %s (dd printed %s %s/s)%s" % (
        size, found.group(2), tf.human_rate(rate), found.group(3), found.group(4),
        "; %s" % command if command else ""), number)


def _fio_group(line, number, _command):
    found = _FIO_GROUP.match(line)
    if not found:
        return None
    rate = tf.rate_in_bytes(tf.number(found.group(2), True), _binary(found.group(3)))
    return tf.finding(None, "fio %s rate" % found.group(1).lower(), rate, "fio run status: %s bw=%s%s/s (%s)" % (
        found.group(1), found.group(2), found.group(3), tf.human_rate(rate)), number)


def _fio_job(line, number, _command):
    found = _FIO_JOB.match(line)
    if not found:
        return None
    rate = tf.rate_in_bytes(tf.number(found.group(4), True), _binary(found.group(5)))
    iops = tf.number(found.group(2), True) if found.group(2) else None
    iops_text = "" if iops is None else ", %g IOPS" % (iops * _SCALE[found.group(3)])
    return tf.finding(None, "fio %s rate" % found.group(1), rate, "fio job: %s BW=%s%s/s (%s)%s" % (
        found.group(1), found.group(4), found.group(5), tf.human_rate(rate), iops_text), number)


def _binary(unit):
    # fio before 3.x printed KB/MB meaning KiB/MiB (its kb_base=1024 default).
    return unit if "i" in unit or unit == "B" else unit[0] + "iB"


def _ior(line, number, _command):
    found = _IOR_MAX.match(line)
    if not found:
        return None
    rate = tf.rate_in_bytes(tf.number(found.group(2)), "MiB")
    return tf.finding(None, "IOR %s rate" % found.group(1).lower(), rate, "IOR Max %s: %s MiB/sec (%s)" % (
        found.group(1), found.group(2), tf.human_rate(rate)), number)


def _real(line, number, command):
    found = _REAL.match(line)
    if not found:
        return None
    seconds = int(found.group(1)) * 60 + (tf.number(found.group(2), True) or 0.0)
    return tf.finding(None, "elapsed time of a command", seconds, "real %sm%ss = %.3f s%s" % (
        found.group(1), found.group(2), seconds, "; time %s" % command if command else ""), number)


def _mdtest(line, number):
    found = _MDTEST.match(line)
    if not found:
        return None
    per_second = _OPS_PER_SEC.search(line)
    if per_second:
        rate, which = tf.number(per_second.group(1), True), "ops/sec"
    elif found.group(4) is not None:
        rate, which = tf.number(found.group(4), True), "Mean of Max/Min/Mean"
    else:
        rate, which = tf.number(found.group(2), True), "rate"
    if rate is None:
        return None
    return tf.finding(None, "mdtest %s rate" % found.group(1), rate, "mdtest %s: %.3f ops/s (%s)" % (
        found.group(1), rate, which), number)


def _creates_against_writes(findings, creates, rates):
    if not creates or not rates:
        return
    create = min(creates, key=lambda item: item["value"])
    write = max(rates, key=lambda item: item["value"])
    if not write["value"]:
        return
    ratio = create["value"] / (write["value"] / MIB)
    crossed = signals.CREATES_PER_WRITTEN_MIB.crossed(ratio)
    findings.append(tf.finding(
        "access_pattern", "files created per second over MiB written per second", ratio,
        "%.1f creates/s against %.1f MiB/s written: %.2f files per MiB%s" % (
            create["value"], write["value"] / MIB, ratio,
            " - files of 1 MiB or less are created more slowly than they are written" if crossed else ""),
        create["line"], tf.threshold_text(signals.CREATES_PER_WRITTEN_MIB), crossed, 1 if crossed else 0))
