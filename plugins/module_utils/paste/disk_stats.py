# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A server's disk statistics as people paste them: iostat -x (any sysstat version), sar -d, /proc/mdstat and
/proc/diskstats. Recognise them and read what they show. Pure.

iostat and sar name their columns in a header line and changed the names over the years (avgqu-sz became aqu-sz in
sysstat 12, await split into r_await/w_await in 9.1, rkB/s or rMB/s or rsec/s by option), so columns are found by
name, and a row is aligned to its header from the right (the device and time columns on the left vary: sar's AM/PM
and "Average:"). %util is the time the device had a request in flight (/proc/diskstats io_ticks): a single disk at
100 % is saturated, but iostat(1) warns that for devices serving requests in parallel (RAID arrays, SSDs) it "does
not reflect their performance limits" - hence the await check for nvme* and md* devices.

/proc/mdstat shows an md array's members ([2/1] [_U]: one of two missing) and a resync, recovery, reshape or check
in progress with its speed and finish estimate: the array's bandwidth goes to the rebuild (md(4), speed_limit_min).
"""

from __future__ import annotations

import re

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals
from ansible_collections.ckptio.nfs.plugins.module_utils.paste import text_figures as tf

KIND = "disk_stats"
TAKEN_FOR = "disk statistics (iostat -x, sar -d, /proc/mdstat or /proc/diskstats)"
CAN_SHOW = ("how busy the busiest disk was (%util), its wait and queue, and an md array that is degraded or "
            "rebuilding")

_DEVICE_COLUMNS = ("Device:", "Device", "DEV")
_AWAIT = ("await", "w_await", "r_await")
_QUEUE = ("aqu-sz", "avgqu-sz")
_WRITE_RATE = (("wkB/s", 1024.0), ("wMB/s", 1024.0 ** 2), ("wsec/s", 512.0), ("wr_sec/s", 512.0))
_PARALLEL_PREFIXES = ("nvme", "md")
_MD_NAME = re.compile(r"^(md[\w/-]{1,32})\s*:\s*(?:active|inactive)\b")
_MEMBERS = re.compile(r"\[(\d{1,3})/(\d{1,3})\]\s*\[([U_]{1,64})\]")
_SYNC = re.compile(r"\b(resync|recovery|reshape|check|repair)\s*=\s*(\d{1,3}(?:\.\d{1,3})?)%")
_FINISH = re.compile(r"\bfinish=(\d{1,9}(?:\.\d{1,3})?)min")
_SPEED = re.compile(r"\bspeed=(\d{1,12})K/sec")
_DISKSTATS = re.compile(r"^\s*\d{1,4}\s+\d{1,7}\s+(\S{1,64})((?:\s+\d{1,20}){11,17})\s*$")

RAID_REBUILD = tf.fault(
    "raid_rebuild", "An md array was rebuilding (resync, recovery, reshape or check): the rebuild takes the array's "
    "disks' bandwidth from the NFS writes until it finishes.",
    "Let it finish outside the checkpoint window, or cap it meanwhile with /proc/sys/dev/raid/speed_limit_max "
    "(KiB/s per device; md rebuilds at speed_limit_min whatever the other load).",
    "https://docs.kernel.org/admin-guide/md.html")
RAID_DEGRADED = tf.fault(
    "raid_degraded", "An md array ran with a member missing ([n/m] with m < n, '_' in [UU_]): reads of the missing "
    "member are rebuilt from the others and one more failure loses data.",
    "Replace the failed member (mdadm --manage /dev/mdN --add /dev/sdX) and let it recover.",
    "https://man7.org/linux/man-pages/man4/md.4.html")


# The same /proc/diskstats line over the whole text at once (blanks that cannot cross a line end): cheap on 8 MiB.
_DISKSTATS_ANYWHERE = re.compile(r"^[ \t]*\d{1,4}[ \t]+\d{1,7}[ \t]+\S{1,64}(?:[ \t]+\d{1,20}){11,17}[ \t]*$", re.M)


def recognise(text):
    """True when an iostat -x / sar -d table, an mdstat array or a /proc/diskstats line is anywhere in the text."""
    if not any(mark in text for mark in ("%util", "active", "resync", "recovery", "reshape", "check", "repair")):
        return bool(_DISKSTATS_ANYWHERE.search(text))
    for _number, line in tf.lines(text):
        words = line.split()
        if ("%util" in words and any(name in words for name in _DEVICE_COLUMNS)) or _MD_NAME.match(line) \
                or _SYNC.search(line) or _DISKSTATS.match(line):
            return True
    return False


def read(text):
    """Findings: the busiest device of iostat/sar tables, md arrays degraded or rebuilding, diskstats in flight."""
    findings = []
    rows = _table_rows(text)
    if rows:
        _busiest(findings, rows)
        _queued(findings, rows)
    _mdstat(findings, text)
    if not rows:
        _diskstats(findings, text)
    return findings


def _table_rows(text):
    """[{"device", "util", "await", "queue", "write_bps", "line"}] of every iostat -x / sar -d row."""
    rows = []
    header = None
    for number, line in tf.lines(text):
        words = line.split()
        if "%util" in words and any(name in words for name in _DEVICE_COLUMNS):
            header = words
            continue
        if header is None:
            continue
        row = _row(header, words, number)
        if row is None:
            header = None
        else:
            rows.append(row)
    return rows


def _row(header, words, number):
    values = tf.columns_from_right(header, words)
    device_column = next(name for name in _DEVICE_COLUMNS if name in header)
    device = values.get(device_column)
    util = tf.number(values.get("%util"), decimal_comma=True)
    if not device or util is None or tf.number(device) is not None or device.endswith(":"):
        return None
    figures = {"device": device, "util": util / 100.0, "line": number, "await": None, "queue": None, "write_bps": None}
    figures["await"] = next((tf.number(values[name], True) for name in _AWAIT if name in values), None)
    figures["queue"] = next((tf.number(values[name], True) for name in _QUEUE if name in values), None)
    for name, scale in _WRITE_RATE:
        if name in values and tf.number(values[name], True) is not None:
            figures["write_bps"] = tf.number(values[name], True) * scale
            break
    return figures


def _busiest(findings, rows):
    row = max(rows, key=lambda item: item["util"])
    crossed = signals.DISK_BUSY.crossed(row["util"])
    parallel = row["device"].startswith(_PARALLEL_PREFIXES) and signals.PARALLEL_DEVICE_AWAIT_LOW_MS.crossed(row["await"])
    weight = (1 if parallel else 2) if crossed else 0
    wait = "" if row["await"] is None else ", await %.2f ms" % row["await"]
    queue = "" if row["queue"] is None else ", queue %.2f" % row["queue"]
    written = "" if row["write_bps"] is None else ", writing %s" % tf.human_rate(row["write_bps"])
    caveat = (": a device that serves requests in parallel with a short await is busy, not necessarily full "
              "(iostat(1))" if crossed and parallel else "")
    findings.append(tf.finding(
        "server_storage", "%util of the busiest device (time with a request in flight)", row["util"],
        "%s: %%util %.1f %% of the interval%s%s%s%s" % (row["device"], row["util"] * 100, wait, queue, written, caveat),
        row["line"], tf.threshold_text(signals.DISK_BUSY), crossed, weight))


def _queued(findings, rows):
    waiting = [row for row in rows if signals.DISK_AWAIT_HIGH_MS.crossed(row["await"])
               and signals.DISK_QUEUE_DEEP.crossed(row["queue"])]
    if not waiting:
        return
    row = max(waiting, key=lambda item: item["await"])
    findings.append(tf.finding(
        "server_storage", "a device's await with requests queued", row["await"],
        "%s: await %.2f ms with %.2f requests queued on average: requests wait at the device" % (
            row["device"], row["await"], row["queue"]),
        row["line"], "%s and %s" % (tf.threshold_text(signals.DISK_AWAIT_HIGH_MS), tf.threshold_text(signals.DISK_QUEUE_DEEP)),
        True, 1))


def _mdstat(findings, text):
    array = None
    for number, line in tf.lines(text):
        named = _MD_NAME.match(line)
        if named:
            array = named.group(1)
        members = _MEMBERS.search(line)
        if members and "_" in members.group(3):
            findings.append(tf.finding(
                "server_storage", "an md array with a member missing", int(members.group(2)),
                "%s: %s of %s members up [%s]" % (array or "an md array", members.group(2), members.group(1),
                                                  members.group(3)),
                number, weight=1, fault=RAID_DEGRADED))
        sync = _SYNC.search(line)
        if sync:
            finish, speed = _FINISH.search(line), _SPEED.search(line)
            speed_bps = int(speed.group(1)) * 1024 if speed else None
            findings.append(tf.finding(
                "server_storage", "an md array rebuilding", speed_bps,
                "%s: %s at %s %%%s%s" % (
                    array or "an md array", sync.group(1), sync.group(2),
                    ", %s" % tf.human_rate(speed_bps) if speed else "",
                    ", about %s min left" % finish.group(1) if finish else ""),
                number, weight=1, fault=RAID_REBUILD))


def _diskstats(findings, text):
    devices = []
    for number, line in tf.lines(text):
        found = _DISKSTATS.match(line)
        if found:
            fields = [int(word) for word in found.group(2).split()]
            devices.append((fields[9], fields[8], found.group(1), number))
    if not devices:
        return
    ticks, in_flight, device, number = max(devices)
    findings.append(tf.finding(
        "server_storage", "the busiest device's busy time since boot (/proc/diskstats io_ticks)", ticks / 1000.0,
        "%s: %.1f s with I/O in flight since boot, %d I/O(s) in flight now; one snapshot has no interval, so no "
        "busy share (two snapshots and their times would give it)" % (device, ticks / 1000.0, in_flight), number))
