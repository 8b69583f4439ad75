# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NFS-Ganesha (the user-space NFS server) as people paste it: its log lines ("DATE : epoch E : host :
ganesha.nfsd-PID[thread] function :COMPONENT :LEVEL :text", or the debug layout "DATE : PID[client] [thread] function
:COMPONENT :LEVEL :text") and its dbus statistics (`dbus-send ... org.ganesha.nfsd.exportstats.Get*IO`). Recognise them
and read what they show (issue 44). Pure.

- nfs_health's "Health status is unhealthy. enq new: A, old: B; deq new: C, old: D" (src/MainNFSD/nfs_health.c) is
  logged only when no request was dequeued in a heartbeat while some were queued: the server takes no work - a hang;
- a GetNFSv3IO/GetNFSv4xIO reply is, per direction, (requested, transferred, total ops, errors, latency, queue wait);
  a latency of 0 over ops is not a fast server: with Enable_Fast_Stats (NFS_CORE_PARAM) server_stats.c counts a
  request and returns before timing it;
- "found a conflicting ... delegation" (state_deleg_conflict_impl): an operation waits (NFS4ERR_DELAY) while the
  server recalls another client's delegation - a figure; a recall that never ends loops (nfs-ganesha#1055).
"""

from __future__ import annotations

import re

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import text_figures as tf

KIND = "ganesha"
TAKEN_FOR = "NFS-Ganesha log lines or its dbus I/O statistics"
CAN_SHOW = ("whether the server stopped taking requests (nfs_health), delegation conflicts, and the exports' dbus I/O "
            "statistics (ops, bytes, latency)")

_LEVELS = r"(?:FATAL|MAJ|CRIT|WARN|EVENT|INFO|DEBUG|MID_DEBUG|FULL_DEBUG|F_DBG|M_DBG|NIV_\w{1,16})"
_LINE = re.compile(r"\bganesha\.nfsd-\d{1,10}\[|^\d\d/\d\d/\d{4} \d\d:\d\d:\d\dZ? : .{0,300}? :[A-Z0-9_]{1,32} :" + _LEVELS + " :")
_HEALTH = re.compile(r"Health status is unhealthy\. enq new: (\d{1,20}), old: (\d{1,20}); deq new: (\d{1,20}), old: (\d{1,20})")
_CONFLICT = re.compile(r"found a conflicting (\w{1,16}) delegation")
_DBUS = "org.ganesha.nfsd"
_IO_METHOD = re.compile(r"\.Get(?:NFSv\d{1,2}|Total|FULLV\d)\w{0,16}IO\b|\.Get\w{0,16}IO\b")
_UINT = re.compile(r"^\s{0,16}uint64 (\d{1,20})\b")
_IO_FIELDS = ("requested", "transferred", "ops", "errors", "latency", "queue wait")


def recognise(text):
    """True when a Ganesha log line or a dbus reply of org.ganesha.nfsd is in the text."""
    if _DBUS in text:
        return True
    if "ganesha" not in text and " :" not in text:
        return False
    return any(_LINE.search(line) for _number, line in tf.lines(text))


def read(text):
    """Findings: a stalled server (nfs_health), delegation conflicts, latency not measured in the dbus I/O stats."""
    findings = []
    stalls = []
    conflicts = []
    for number, line in tf.lines(text):
        health = _HEALTH.search(line)
        if health:
            stalls.append((number, line, [int(value) for value in health.groups()]))
        conflict = _CONFLICT.search(line)
        if conflict:
            conflicts.append((number, line))
    if stalls:
        findings.append(_stall_finding(stalls))
    if conflicts:
        number, line = conflicts[0]
        findings.append(tf.finding(
            None, "delegation conflicts (state_deleg_conflict_impl)", len(conflicts),
            "%s%s: the operation waits (NFS4ERR_DELAY) while the server recalls the other client's delegation; a "
            "recall that never completes repeats for ever (nfs-ganesha#1055; Delegations = false avoids it)" % (
                line.strip()[:200], " (%d times)" % len(conflicts) if len(conflicts) > 1 else ""), number))
    if _DBUS in text and _IO_METHOD.search(text):
        findings += _io_stats(text)
    return findings


def _stall_finding(stalls):
    number, line, (enq_new, enq_old, deq_new, deq_old) = stalls[-1]
    queued = enq_new - enq_old
    what = ("a hang: nfs-ganesha took no request in a heartbeat while %d request(s) were queued (enq %d -> %d, deq %d -> "
            "%d; %d such heartbeat(s)): its worker threads are stuck, not slow")
    fault = tf.fault(
        "ganesha_not_dequeuing", what % (queued, enq_old, enq_new, deq_old, deq_new, len(stalls)),
        "on the server: `gdb -p $(pidof ganesha.nfsd) -batch -ex 'thread apply all bt'` (where the workers wait: the "
        "FSAL's backend, a lock) before restarting nfs-ganesha, which is what recovers the clients",
        "nfs-ganesha src/MainNFSD/nfs_health.c (logged when no request was dequeued while some were queued)")
    fault["kind"] = "hang"
    return tf.finding(None, "nfs-ganesha health: requests queued, none dequeued", queued, line.strip()[:240], number,
                      "deq new = deq old", True, fault=fault)


def _io_stats(text):
    """The dbus I/O reply's per-direction blocks of six uint64: a latency of 0 over ops is not measured."""
    blocks = []
    current = None
    for number, line in tf.lines(text):
        if line.strip().startswith("struct {"):
            current = {"line": number, "values": []}
            blocks.append(current)
            continue
        found = _UINT.match(line)
        if found and current is not None:
            current["values"].append(int(found.group(1)))
        elif line.strip().startswith("}"):
            current = None
    io = [dict(zip(_IO_FIELDS, block["values"]), line=block["line"]) for block in blocks if len(block["values"]) == len(_IO_FIELDS)]
    counted = [block for block in io if block["ops"]]
    if not counted or any(block["latency"] for block in counted):
        return []
    ops = sum(block["ops"] for block in counted)
    fault = tf.fault(
        "ganesha_latency_not_measured",
        "a misconfiguration of the statistics: latency 0 over %d ops in the export's dbus I/O statistics - not a fast "
        "server: the latencies are not measured" % ops,
        "set Enable_Fast_Stats = false (the default) in NFS_CORE_PARAM: with it, server_stats.c counts each request and "
        "returns before timing it (nfs-ganesha#1191: turning fast_stats off fixed the zero latency)",
        "nfs-ganesha src/support/server_stats.c (server_stats_nfs_done), src/config_samples/config.txt")
    fault["kind"] = "misconfiguration"
    return [tf.finding(None, "nfs-ganesha dbus I/O latency", 0, "%d ops, latency 0 in every direction" % ops,
                       counted[0]["line"], "latency > 0 when ops > 0", True, fault=fault)]
