# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NFS configuration as people paste it: mount commands, `mount` and /proc/mounts lines, fstab, an option string
alone, nfsmount.conf / nfs.conf sections, /etc/default RPCNFSDCOUNT, modprobe.d and sysctl sunrpc/nfs settings,
udev rules and `blockdev --setra` for read-ahead, /etc/exports and `exportfs -v`. Recognise them; read the options
that matter for a checkpoint and the misconfigurations, each with its fix and source. Pure.

An export's `sync` is the default and costs nothing for the UNSTABLE WRITE + COMMIT a Linux client sends (fs/nfsd/
vfs.c nfsd_vfs_write honours the client's stable_how on a sync export; only `async` downgrades it), so it is shown,
not faulted; a client mounted `sync` waits for every write instead, and that is a fault.
"""

from __future__ import annotations

import re

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals
from ansible_collections.ckptio.nfs.plugins.module_utils.paste import text_figures as tf

KIND = "config_texts"
TAKEN_FOR = "NFS configuration (mount options, nfs.conf, modprobe/sysctl, udev read-ahead, exports)"
CAN_SHOW = ("the mount and server settings that matter for checkpoints and misconfigurations among them (soft, short "
            "timeo, no attribute cache, sync, small rsize/wsize, UDP, tiny slot tables, few nfsd threads, read-ahead "
            "rules for every device)")

NFS_MAN = "https://man7.org/linux/man-pages/man5/nfs.5.html"
_SHOWN = ("vers", "nfsvers", "proto", "nconnect", "rsize", "wsize", "hard", "soft", "softerr", "timeo", "retrans",
          "actimeo", "noac", "sync", "async", "lookupcache", "max_connect", "udp", "tcp")
_NFS_KEYS = ("vers", "nfsvers", "rsize", "wsize", "nconnect", "timeo", "retrans", "proto", "hard", "soft", "actimeo",
             "noac", "lookupcache", "sec")
_MOUNT_OUTPUT = re.compile(r"^\s*(\S{1,300}) on (\S{1,300}) type (nfs4?) \(([^)]{1,2000})\)")
_MOUNTS_LINE = re.compile(r"^\s*([^\s:]{1,300}:\S{0,300})\s+(\S{1,300})\s+(nfs4?)\s+(\S{1,2000})(?:\s+\d\s+\d)?\s*$")
_MOUNT_COMMAND = re.compile(r"\bmount(?:\.nfs4?)?\s.{0,300}?-o\s?(\S{1,2000})")
_OPTION_STRING = re.compile(r"^\s*([\w.=,/-]{3,2000})\s*$")
_SECTION = re.compile(r"^\s*\[\s*([^\]]{1,100}?)\s*\]\s*$")
_KEY_VALUE = re.compile(r"^\s*([\w.-]{1,64})\s*=\s*\"?([^\s\"#]{0,200})\"?\s*(?:#.*)?$")
_BARE_KEY = re.compile(r"^\s*([a-z][a-z_]{1,30})\s*$")
_MODPROBE = re.compile(r"^\s*options\s+(sunrpc|nfs|nfsd|nfsv4|lockd)\s+(.{1,1000})$")
_SYSCTL = re.compile(r"^\s*((?:sunrpc|fs\.nfs)\.[\w.]{1,64})\s*=\s*(\d{1,12})\s*$")
_SETRA = re.compile(r"\bblockdev\s+--setra\s+(\d{1,12})\s+(\S{1,200})")
_ECHO_RA = re.compile(r"\becho\s+(\d{1,12})\s*>\s*(\S{0,200}read_ahead_kb)")
# A bdi's read-ahead as shown (nfs-readahead show, `grep . /sys/class/bdi/*/read_ahead_kb`): "0:40/read_ahead_kb = 128".
_BDI_RA = re.compile(r"/sys/class/bdi/(\d{1,4}:\d{1,7})/read_ahead_kb\s{0,8}[=:]\s{0,8}(\d{1,12})\b")
# What says a text is about an NFS mount (an anonymous bdi 0:NN is any non-block file system's: NFS, Lustre, FUSE).
_NFS_MOUNT_MARKS = ("type nfs", "-t nfs", "nfs-readahead", "nfsrahead", " nfs4 ", " nfs ", "nfsvers=", "vers=4")
_RA_ATTR = re.compile(r"ATTRS?\{read_ahead_kb\}\s*=\s*\"(\d{1,12})\"")
# A key starts after a non-word character (the lookbehind fails at once inside a word, so a run of word characters
# costs one try a character, not 32) and its {attribute} holds no brace.
_UDEV_MATCH = re.compile(r"(?<![\w{])(\w{1,32}(?:\{[^{}]{0,64}\})?)\s*(==|!=)\s*\"([^\"]{0,300})\"|\bPROGRAM\s*=")
# The options hold no parenthesis: excluding "(" keeps a run of them linear (tests/.../test_regex_linear.py).
_EXPORT_CLIENT = re.compile(r"([^\s()]{0,300})\(([^()]{0,1000})\)")
_THREADS = re.compile(r"^\s*(?:RPCNFSDCOUNT|NFSD_THREADS|RPCNFSDARGS)\s*=\s*\"?(\d{1,6})")

SOFT = tf.fault(
    "soft_mount", "The mount is soft: after retrans timeouts a request fails with EIO instead of being retried, so a "
    "checkpoint write during a server pause is lost or half-written (nfs(5): 'silent data corruption').",
    "Mount with hard (the default); bound a hang with timeo/retrans and monitoring, not soft.", NFS_MAN)
SHORT_TIMEO = tf.fault(
    "short_timeo", "timeo below 60 s over TCP: the client retransmits requests TCP already carries and, with "
    "retrans, gives up or reconnects under ordinary load.", "timeo=600,retrans=2 (nfs(5) defaults for TCP).", NFS_MAN)
NO_ATTRIBUTE_CACHE = tf.fault(
    "no_attribute_cache", "noac or actimeo=0: every write is synchronous and every access revalidates attributes with "
    "a GETATTR round trip.", "Remove noac/actimeo=0 (keep the defaults, or lookupcache/actimeo tuned per need).",
    NFS_MAN)
SYNC_MOUNT = tf.fault(
    "sync_mount", "The client is mounted sync: each write waits for the server's stable storage before the next, "
    "wsize at a time.", "Remove sync from the mount options (a checkpoint's fsync still makes its data durable).",
    NFS_MAN)
UDP_MOUNT = tf.fault(
    "udp_mount", "NFS over UDP: a lost fragment loses the whole request until timeo, and on fast links IP ID "
    "wrap-around can corrupt data silently (nfs(5)).", "proto=tcp.", NFS_MAN)
SMALL_IO = tf.fault(
    "small_io_size", "rsize/wsize below 1 MiB on a bulk write path: more WRITE RPCs for the same bytes, each a slot "
    "and a round trip.", "Remount with rsize=1048576,wsize=1048576 (or drop them: the server's maximum is "
    "negotiated).", NFS_MAN)
SMALL_NFS_READAHEAD = dict(tf.fault(
    "small_nfs_readahead", "An NFS mount reads ahead %s KiB (its bdi's read_ahead_kb): below one 1 MiB READ, a "
    "sequential reader (a checkpoint restore) waits a round trip per small window.",
    "Raise it on the NFS bdi only: nfsrahead (nfs-utils >= 2.6, /etc/nfs.conf [nfsrahead]) or a udev rule on "
    "SUBSYSTEM==\"bdi\" matching NFS (amazon-ec2-utils#7), e.g. 1024-15360 KiB; measure, larger is not always faster "
    "(home-ops#5862).", "https://github.com/amazonlinux/amazon-ec2-utils/pull/7"), kind="misconfiguration")
READAHEAD_RULE = tf.fault(
    "readahead_rule_every_device", "A udev rule sets read_ahead_kb with no match that limits it to NFS: it applies "
    "to every device it sees (a rule is one line; a rule split over lines without '\\' loses its matches).",
    "Match the NFS bdi only (SUBSYSTEM==\"bdi\" with a PROGRAM or ENV match on NFS), keep the rule on one line, "
    "and reset read_ahead_kb on the other devices.", "https://github.com/Azure/azhpc-images/issues/293")


_MARKS = ("nfs", "mount", "options", "sunrpc", "read_ahead_kb", "setra", "rsize", "wsize", "vers", "timeo",
          "RPCNFSDCOUNT", "NFSD_THREADS")
# An exports line (a path, then a client with its options) over the whole text at once: cheap on 8 MiB.
_EXPORT_ANYWHERE = re.compile(r"^/\S{0,300}[ \t]+[^\s(]{0,300}\(", re.M)


def recognise(text):
    """True when a line of any of the configuration kinds above is in the text."""
    if not any(mark in text for mark in _MARKS) and not _EXPORT_ANYWHERE.search(text):
        return False
    for number, line in tf.lines(text):
        if _MOUNT_OUTPUT.match(line) or _MOUNTS_LINE.match(line) or _nfs_command(line) or _modprobe(line) \
                or _SYSCTL.match(line) or _SETRA.search(line) or "read_ahead_kb" in line or _option_string(line) \
                or _THREADS.match(line) or (_SECTION.match(line) and _section_name(line)):
            return True
        if line.startswith("/") and _EXPORT_CLIENT.search(line) and " on " not in line:
            return True
    return False


def _nfs_command(line):
    found = _MOUNT_COMMAND.search(line)
    if found and ("nfs" in line or re.search(r"\S:/", line)):
        return found.group(1)
    return None


def _modprobe(line):
    return _MODPROBE.match(line)


def _section_name(line):
    name = _SECTION.match(line).group(1).lower()
    return name if name in ("nfsd", "nfsmount_global_options", "nfsrahead", "mountd") or name.startswith(
        ("server ", "mountpoint ")) else None


def _option_string(line):
    found = _OPTION_STRING.match(line)
    if not found or "," not in line:
        return None
    options = _options(found.group(1))
    return options if len([key for key in options if key in _NFS_KEYS]) >= 2 else None


def _options(text):
    options = {}
    for item in text.strip(",").split(","):
        key, _sep, value = item.partition("=")
        key = key.strip()
        if re.match(r"^v[234](?:\.[0-2])?$", key) and not _sep:
            # mount.nfs takes "v4.2" for vers=4.2 (nfs(5) "vers=n ... also accepts ... v4.2")
            key, value, _sep = "vers", key[1:], "="
        if key:
            options[key] = value.strip() if _sep else True
    return options


def read(text):
    findings = []
    section = None
    section_options = {}
    export = None
    for number, line in tf.lines(text):
        stripped = line.strip()
        if stripped.startswith("#"):
            continue
        if _SECTION.match(line):
            section = _section_name(line)
            if section and section not in ("nfsd", "mountd", "nfsrahead"):
                section_options[section] = ({}, number)
            continue
        mount = _mount(line)
        if mount:
            _read_mount(findings, mount[0], mount[1], number)
            continue
        if section and section in section_options:
            pair = _KEY_VALUE.match(line) or _BARE_KEY.match(line)
            if pair:
                section_options[section][0][pair.group(1)] = pair.group(2) if pair.lastindex > 1 else True
            continue
        if line.startswith("/") or (export and line[:1] in (" ", "\t")):
            clients = _EXPORT_CLIENT.findall(line)
            if clients:
                export = line.split()[0] if line.startswith("/") else export
                _read_export(findings, export, clients, number)
                continue
            export = line.split()[0] if line.startswith("/") else None
        _read_setting(findings, section, line, number)
    for name, (options, number) in sorted(section_options.items(), key=lambda item: item[1][1]):
        if options:
            _read_mount(findings, "nfsmount.conf [%s]" % name, options, number)
    _read_udev(findings, text)
    _read_bdi(findings, text)
    return findings


def _mount(line):
    found = _MOUNT_OUTPUT.match(line)
    if found:
        return "%s on %s" % (found.group(1), found.group(2)), dict(_options(found.group(4)), type=found.group(3))
    found = _MOUNTS_LINE.match(line)
    if found:
        return "%s on %s" % (found.group(1), found.group(2)), dict(_options(found.group(4)), type=found.group(3))
    command = _nfs_command(line)
    if command:
        options = _options(command)
        if re.search(r"-t\s?nfs4\b", line):
            options.setdefault("type", "nfs4")
        if re.search(r"(?:^|\s)(?:-o\s?\S*\b)?udp\b", line):
            options.setdefault("udp", True)
        return "mount command", options
    options = _option_string(line)
    if options:
        return "mount options", options
    return None


def _read_export(findings, path, clients, number):
    for client, text in clients:
        if client == path:
            continue
        options = _options(text)
        mode = "async" if "async" in options else "sync"
        note = ("async: the server acknowledges writes before they are stable - a server crash loses them"
                if mode == "async" else "sync (the default): a Linux client's UNSTABLE writes and COMMIT cost the same")
        findings.append(tf.finding(None, "NFS export options", None, "%s to %s: %s; %s" % (
            path, client or "everyone", text, note), number))


def _read_mount(findings, where, options, number):
    shown = " ".join("%s=%s" % (key, value) if value is not True else key for key, value in options.items()
                     if key in _SHOWN) or "no option that matters set (defaults)"
    findings.append(tf.finding(None, "NFS mount options", None, "%s: %s" % (where, shown), number))
    udp = options.get("proto") in ("udp", "udp6") or "udp" in options
    if "soft" in options or "softerr" in options:
        findings.append(tf.finding(None, "soft mount", None, "%s: soft - a checkpoint write fails with EIO after "
                                   "retrans timeouts instead of waiting for the server" % where, number, weight=1,
                                   fault=SOFT))
    timeo = tf.number(options.get("timeo")) if isinstance(options.get("timeo"), str) else None
    if timeo is not None and not udp and signals.TCP_TIMEO_DECISECONDS.crossed(timeo):
        findings.append(tf.finding(
            "network", "timeo over TCP", timeo, "%s: timeo=%g (%.1f s) over TCP, nfs(5)'s default is 600 (60 s)" % (
                where, timeo, timeo / 10.0), number, tf.threshold_text(signals.TCP_TIMEO_DECISECONDS), True, 1,
            SHORT_TIMEO))
    if "noac" in options or options.get("actimeo") == "0":
        findings.append(tf.finding(None, "attribute cache off", None, "%s: %s" % (
            where, "noac" if "noac" in options else "actimeo=0"), number, weight=1, fault=NO_ATTRIBUTE_CACHE))
    if "sync" in options:
        findings.append(tf.finding(None, "sync mount", None, "%s: sync - every write waits for stable storage" % where,
                                   number, weight=1, fault=SYNC_MOUNT))
    if udp:
        findings.append(tf.finding("network", "NFS over UDP", None, "%s: UDP transport" % where, number, weight=1,
                                   fault=UDP_MOUNT))
    _io_size(findings, where, options, number)


def _io_size(findings, where, options, number):
    small = []
    for key in ("wsize", "rsize"):
        size = tf.number(options[key]) if isinstance(options.get(key), str) else None
        if size is not None and signals.BULK_IO_SIZE_BYTES.crossed(size):
            small.append("%s=%d" % (key, size))
    if small:
        findings.append(tf.finding(
            "client_rpc_slots", "rsize/wsize below 1 MiB", None, "%s: %s, under the 1 MiB Linux sends at most" % (
                where, " ".join(small)), number, tf.threshold_text(signals.BULK_IO_SIZE_BYTES), True, 1, SMALL_IO))


def _read_setting(findings, section, line, number):
    settings = []
    module = _modprobe(line)
    if module:
        for key, value in _options(module.group(2).replace(" ", ",")).items():
            settings.append(("%s.%s" % (module.group(1), key), value))
    sysctl = _SYSCTL.match(line)
    if sysctl:
        settings.append((sysctl.group(1), sysctl.group(2)))
    pair = _KEY_VALUE.match(line)
    if section == "nfsd" and pair and "." not in pair.group(1):
        settings.append(("nfsd.%s" % pair.group(1), pair.group(2)))
    threads = _THREADS.match(line)
    if threads:
        settings.append(("nfsd.threads", threads.group(1)))
    for name, value in settings:
        _read_one(findings, name, value, number)
    _read_ahead(findings, line, number)


def _read_one(findings, name, value, number):
    figure = tf.number(value) if isinstance(value, str) else None
    key = name.rsplit(".", 1)[-1]
    if figure is None:
        return
    if key in ("tcp_max_slot_table_entries", "max_session_slots"):
        crossed = signals.TINY_SLOT_CAP.crossed(figure)
        findings.append(tf.finding(
            "client_rpc_slots", "%s" % name, figure, "%s = %g%s" % (
                name, figure, ": requests in flight per transport/session capped this low" if crossed else ""),
            number, tf.threshold_text(signals.TINY_SLOT_CAP), crossed, 2 if crossed else 0))
    elif key == "tcp_slot_table_entries":
        findings.append(tf.finding(
            "client_rpc_slots", name, figure, "%s = %g: the slots a transport starts with; a cap only on kernels "
            "before dynamic slot allocation (3.1), later ones grow up to tcp_max_slot_table_entries" % (name, figure),
            number))
    elif key == "threads" and name.startswith("nfsd"):
        crossed = signals.FEW_THREADS.crossed(figure)
        findings.append(tf.finding(
            "server_threads", "nfsd threads configured", figure, "%d nfsd threads%s" % (
                figure, ": a server this thin runs out of threads under parallel writers" if crossed else ""),
            number, tf.threshold_text(signals.FEW_THREADS), crossed, 1 if crossed else 0))


def _read_ahead(findings, line, number):
    setra = _SETRA.search(line)
    if setra:
        findings.append(tf.finding(None, "read-ahead set with blockdev --setra", int(setra.group(1)) / 2.0,
                                   "%s: --setra %s sectors = %g KiB read-ahead" % (
                                       setra.group(2), setra.group(1), int(setra.group(1)) / 2.0), number))
    echo = _ECHO_RA.search(line)
    if echo:
        findings.append(tf.finding(None, "read_ahead_kb written", float(echo.group(1)), "%s = %s KiB" % (
            echo.group(2), echo.group(1)), number))


def _read_bdi(findings, text):
    """A bdi's read_ahead_kb as shown; below nfs_readahead_kib in a text about an NFS mount: a misconfiguration."""
    nfs = any(mark in text for mark in _NFS_MOUNT_MARKS)
    for number, line in tf.lines(text):
        shown = _BDI_RA.search(line)
        if not shown:
            continue
        kib = float(shown.group(2))
        crossed = nfs and signals.NFS_READAHEAD_KIB.crossed(kib)
        fault = dict(SMALL_NFS_READAHEAD, what=SMALL_NFS_READAHEAD["what"] % shown.group(2)) if crossed else None
        findings.append(tf.finding(None, "read_ahead_kb of a bdi", kib, "bdi %s: read_ahead_kb = %s KiB%s" % (
            shown.group(1), shown.group(2), "" if nfs else " (the text names no NFS mount: a figure only)"), number,
            tf.threshold_text(signals.NFS_READAHEAD_KIB), crossed, fault=fault))


def _read_udev(findings, text):
    for number, line in tf.lines(text):
        value = _RA_ATTR.search(line)
        if not value or line.strip().startswith("#") or line.strip().startswith("cat "):
            continue
        matches = _UDEV_MATCH.findall(line)
        limits = [match for match in matches if match[0] not in ("SUBSYSTEM", "ACTION") or not match[0]]
        if limits:
            findings.append(tf.finding(None, "udev read_ahead_kb rule", float(value.group(1)), "a rule sets "
                                       "read_ahead_kb=%s KiB on the devices it matches" % value.group(1), number))
            continue
        findings.append(tf.finding(None, "udev read_ahead_kb rule with no device match", float(value.group(1)),
                                   "read_ahead_kb=%s KiB set by a rule that matches %s: every such device, not only "
                                   "NFS" % (value.group(1), "only its subsystem/action" if matches else "nothing"),
                                   number, weight=1, fault=READAHEAD_RULE))
