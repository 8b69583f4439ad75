# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The TCP-capacity probe's pure logic: iperf3 argv, its -J summary, LISTEN sockets in /proc/net/tcp.

Why iperf3: it is what operators run by hand to ask "what can this path carry" (packaged as
`iperf3` in Debian, Ubuntu and RHEL), and its -J output reports what the receiver got, so the
aggregate at a server is the sum over the clients that sent in the same window.

Pure functions: the module reads /proc and runs the commands, then passes text and values in.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
import os
import re

# TCP state numbers printed in /proc/net/tcp's `st` column (include/net/tcp_states.h).
TCP_LISTEN = 0x0A

# iperf3 exchanges results over its control connection after the test and may take a few
# seconds to connect first; the client's own time limit is the test plus this margin.
SEND_MARGIN_SECONDS = 30
# What `timeout -k` grants a listener after SIGTERM before SIGKILL (coreutils timeout(1)).
LISTEN_KILL_AFTER_SECONDS = 5


def listen_argv(timeout_bin, iperf3_bin, address, port, limit_seconds, kill_after=LISTEN_KILL_AFTER_SECONDS):
    """A one-off iperf3 server bound to address:port that dies by itself after limit_seconds.

    `-s -1` serves one test and exits; `timeout` is the hard limit that holds even when nobody
    ever connects or stops it (SIGTERM at the limit, SIGKILL kill_after seconds later).
    """
    return [timeout_bin, "-k", str(int(kill_after)), str(int(limit_seconds)),
            iperf3_bin, "-s", "-1", "-B", address, "-p", str(int(port))]


def listener_child_argv(argv):
    """The iperf3 part of a listen_argv(): what `timeout` execs, so the child's cmdline."""
    return argv[4:]


def send_argv(timeout_bin, iperf3_bin, server, port, streams, seconds, margin=SEND_MARGIN_SECONDS):
    """iperf3 client: `streams` parallel TCP streams for `seconds`, JSON result, hard-limited."""
    limit = int(seconds) + int(margin)
    return [timeout_bin, "-k", str(LISTEN_KILL_AFTER_SECONDS), str(limit),
            iperf3_bin, "-c", server, "-p", str(int(port)), "-P", str(int(streams)), "-t", str(int(seconds)), "-J"]


def is_our_process(cmdline, argv):
    """True when a /proc/PID/cmdline text (NUL-separated) is exactly our listener or its iperf3 child.

    An exact argv match, never a name match: a recycled pid running anything else, even another
    iperf3, is not ours and is never signalled.
    """
    if not cmdline:
        return False
    words = cmdline.split("\0")
    if words and words[-1] == "":
        words.pop()
    return words == list(argv) or words == listener_child_argv(list(argv))


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def _dict(value):
    return value if isinstance(value, dict) else {}


def _sum_streams(streams, side, key):
    values = [_number(_dict(_dict(stream).get(side)).get(key)) for stream in streams]
    values = [value for value in values if value is not None]
    return sum(values) if values else None


def summarize_iperf3(obj):
    """The figures of an iperf3 client's -J result; tolerant of iperf3 3.9-3.18 shapes.

    Returns {sent_bits_per_second, received_bits_per_second, retransmits, streams, seconds,
    start_epoch, error}; a figure the output lacks is None. `error` is iperf3's own message
    (its JSON then has an empty "end"), or ours when the object is not an iperf3 result.

    Shapes: every 3.x prints end.sum_sent / end.sum_received for TCP (3.10+ adds "sender" to
    them, 3.17+ adds *_bidir_reverse sums only with --bidir); when the sums are missing the
    per-stream end.streams[].sender/receiver are added up. retransmits exist only where the
    sender could read TCP_INFO (Linux). A failed test is {"start": {...}, "intervals": [],
    "end": {}, "error": "unable to connect to server: ..."} (iperf3 3.12, captured).
    """
    summary = {"sent_bits_per_second": None, "received_bits_per_second": None, "retransmits": None,
               "streams": None, "seconds": None, "start_epoch": None, "error": None}
    if not isinstance(obj, dict):
        summary["error"] = "not an iperf3 JSON result (got %s)" % type(obj).__name__
        return summary
    start = _dict(obj.get("start"))
    end = _dict(obj.get("end"))
    test_start = _dict(start.get("test_start"))
    streams = end.get("streams") if isinstance(end.get("streams"), list) else []
    sum_sent = _dict(end.get("sum_sent"))
    sum_received = _dict(end.get("sum_received"))

    summary["start_epoch"] = _number(_dict(start.get("timestamp")).get("timesecs"))
    summary["streams"] = (_number(test_start.get("num_streams"))
                          or (len(streams) if streams else None)
                          or (len(start["connected"]) if isinstance(start.get("connected"), list) and start["connected"] else None))
    summary["sent_bits_per_second"] = _first(_number(sum_sent.get("bits_per_second")),
                                             _sum_streams(streams, "sender", "bits_per_second"))
    summary["received_bits_per_second"] = _first(_number(sum_received.get("bits_per_second")),
                                                 _sum_streams(streams, "receiver", "bits_per_second"))
    summary["retransmits"] = _first(_number(sum_sent.get("retransmits")), _sum_streams(streams, "sender", "retransmits"))
    summary["seconds"] = _first(_number(sum_received.get("seconds")), _number(sum_sent.get("seconds")),
                                _number(test_start.get("duration")) if sum_sent or sum_received else None)

    error = obj.get("error")
    if error:
        summary["error"] = str(error)
    elif summary["received_bits_per_second"] is None:
        summary["error"] = "iperf3 result has no end.sum_received (the test did not finish)"
    return summary


def _first(*values):
    for value in values:
        if value is not None:
            return value
    return None


def _decode_address(text, byteorder):
    """/proc/net/tcp{,6} address: 32-bit words printed %08X in host byte order (net/ipv4/tcp_ipv4.c)."""
    words = [int(text[index:index + 8], 16).to_bytes(4, byteorder) for index in range(0, len(text), 8)]
    packed = b"".join(words)
    if len(packed) == 4:
        return str(ipaddress.IPv4Address(packed))
    if len(packed) == 16:
        address = ipaddress.IPv6Address(packed)
        # A v4 socket seen through a v6 one (::ffff:a.b.c.d) is the v4 address for our purpose.
        return str(address.ipv4_mapped) if address.ipv4_mapped else str(address)
    raise ValueError(text)


def listening_sockets(text, byteorder):
    """{(address, port)} of the LISTEN sockets in /proc/net/tcp or /proc/net/tcp6 text.

    byteorder: the host's (sys.byteorder), since the kernel prints each address word in it.
    Lines that do not parse are skipped: a reader of live kernel output must not crash.
    """
    sockets = set()
    for line in (text or "").splitlines()[1:]:
        fields = line.split()
        if len(fields) < 4:
            continue
        local, state = fields[1], fields[3]
        address_hex, sep, port_hex = local.partition(":")
        if not sep:
            continue
        try:
            if int(state, 16) != TCP_LISTEN:
                continue
            sockets.add((_decode_address(address_hex, byteorder), int(port_hex, 16)))
        except ValueError:
            continue
    return sockets


def canonical_address(address):
    """'10.0.0.1' / 'fe80::1' in the form listening_sockets() prints; ValueError when not an IP.

    A %zone is dropped: /proc/net/tcp6 does not print it, so a listener could never be seen
    listening (a link-local address then fails to bind, with a message, instead).
    """
    return str(ipaddress.ip_address(address.split("%", 1)[0]))


# RFC 1123 host names (letters, digits, '-', dots; a label never starts with '-').
_HOST_NAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62}))*\.?$")


def is_host_name_or_address(text):
    """An IP address (v4, v6, v6 with a %zone) or a host name; nothing an argv could mistake for an option."""
    if not isinstance(text, str) or not text:
        return False
    try:
        ipaddress.ip_address(text.split("%", 1)[0] if ":" in text else text)
        return "%" not in text or re.match(r"^[^%]+%[A-Za-z0-9_.-]+$", text) is not None
    except ValueError:
        return _HOST_NAME.match(text) is not None


def port_conflicts(sockets, addresses, ports):
    """Sockets that keep a listener from binding address:port: the same address or a wildcard."""
    wanted_ports = set(ports)
    # Linux refuses to bind a port already LISTENing on the wildcard address (EADDRINUSE).
    blocking_addresses = set(addresses) | {"0.0.0.0", "::"}
    return sorted((address, port) for address, port in sockets
                  if port in wanted_ports and address in blocking_addresses)


def not_listening(sockets, listeners):
    """The (address, port) pairs of listeners that do not LISTEN (yet)."""
    return [(address, port) for address, port in listeners if (address, port) not in sockets]


def _stat_field(stat, number):
    """Field `number` (1-based, proc(5)) of /proc/PID/stat text as an int, or None. The fields
    after comm are read from its closing parenthesis on: comm may hold spaces and parentheses."""
    _head, sep, tail = (stat or "").rpartition(")")
    fields = tail.split()
    index = number - 3
    if not sep or len(fields) <= index:
        return None
    try:
        return int(fields[index])
    except ValueError:
        return None


def stat_process_group(stat):
    """Process group id from /proc/PID/stat text (field 5)."""
    return _stat_field(stat, 5)


def stat_start_time(stat):
    """Start time (clock ticks after boot) from /proc/PID/stat text (field 22), or None.

    With the pid it names one process for the life of the system: a recycled pid has a later
    start time (proc(5)).
    """
    return _stat_field(stat, 22)


def identity_problem(record, pid, stat, exe, cmdline):
    """Why the live process pid is not one this record started (None when it is proven ours).

    Proof, all of it: the record holds the start time and executables written when we started
    the listener; the recorded pid (`timeout`) has exactly that start time, that executable
    (/proc/PID/exe) and our argv; a member of its process group (the iperf3 child) started no
    earlier, runs the recorded iperf3 executable and has the child's argv. Anything less - an
    old or planted record, a recycled pid, another program with the same command line - is not
    ours and is never signalled.
    """
    problem = listener_argv_problem(record)
    if problem:
        return problem
    start, leader_exe, child_exe = record.get("starttime"), record.get("exe"), record.get("child_exe")
    if not isinstance(start, int) or isinstance(start, bool) or not isinstance(leader_exe, str) or not isinstance(child_exe, str):
        return "the record has no start time and executable to prove the process is ours"
    started = stat_start_time(stat)
    if started is None:
        return "its /proc stat cannot be read"
    argv = record.get("argv") or []
    if pid == record.get("pid"):
        if started != start:
            return "pid %d started at tick %d, not at the recorded %d: another process now has the pid" % (pid, started, start)
        if exe != leader_exe:
            return "pid %d runs %s, not the recorded %s" % (pid, exe, leader_exe)
        if _words(cmdline) != list(argv):
            return "pid %d has another command line" % pid
        return None
    if started < start:
        return "pid %d started before the listener" % pid
    if exe != child_exe:
        return "pid %d runs %s, not the recorded %s" % (pid, exe, child_exe)
    if _words(cmdline) != listener_child_argv(list(argv)):
        return "pid %d has another command line" % pid
    return None


def listener_argv_problem(record):
    """Why the record's argv is not one listen_argv() makes for the record's address and port (None when it is).

    The argv a record holds is compared with the live cmdline, so it must itself be ours: `timeout -k N S
    .../iperf3 -s -1 -B ADDRESS -p PORT`. A planted record naming `sleep 60` (or another port's listener)
    matched its live process exactly and got it signalled (issue 45).
    """
    argv = record.get("argv")
    where = "%s:%s" % (record.get("address"), record.get("port"))
    if not isinstance(argv, list) or len(argv) != 11 or not all(isinstance(word, str) for word in argv):
        return "the recorded command line is not an iperf3 listener on %s" % where
    try:
        expected = listen_argv(argv[0], argv[4], record.get("address"), int(record.get("port")), int(argv[3]), int(argv[2]))
    except (TypeError, ValueError):
        expected = None
    if argv != expected or argv[4].rsplit("/", 1)[-1] != "iperf3" or not isinstance(record.get("address"), str):
        return "the recorded command line is not an iperf3 listener on %s: %s" % (where, " ".join(argv))
    return None


def _words(cmdline):
    words = (cmdline or "").split("\0")
    if words and words[-1] == "":
        words.pop()
    return words


def state_file_name(address, port):
    """One state file per listener; ':' of an IPv6 address becomes '_' (a plain file name)."""
    return "listener-%s-%d.json" % (address.replace(":", "_"), int(port))


def is_state_file(name):
    return name.startswith("listener-") and name.endswith(".json") and os.sep not in name


def log_file_name(address, port):
    return "listener-%s-%d.log" % (address.replace(":", "_"), int(port))


# The probe's steps in the order they run on a host (roles/canary_validation/tasks/probe_*.yml);
# each failed step leaves its message in the host's fact PROBE_ERROR_FACT % step, the send's is
# its result's own (a summary with an error, or none).
PROBE_STEPS = ("targets", "listen", "launch", "send", "collect")
PROBE_ERROR_FACT = "canary_validation__probe_error_%s"


def _send_error(facts):
    """Why this client's send failed, from its async_status result; None when it did not launch or sent."""
    job, target = facts.get("canary_validation__probe_job") or {}, facts.get("canary_validation__probe_target") or {}
    probe = facts.get("canary_validation__probe")
    if "ansible_job_id" not in job or "server" not in target or not isinstance(probe, Mapping):
        return None
    summary = probe.get("summary")
    if summary is None or summary.get("error") is not None:
        return probe.get("msg", "no result")
    return None


def probe_errors(hosts, facts_of):
    """["host: message"] of every failed probe step, hosts in order, each host's steps in order.

    facts_of(host) gives the host's variables (a mapping read key by key: Ansible's hostvars
    templates a variable only when it is read), or None for a host not in the play."""
    errors = []
    for host in hosts:
        facts = facts_of(host)
        if facts is None:
            continue
        for step in PROBE_STEPS:
            message = _send_error(facts) if step == "send" else facts.get(PROBE_ERROR_FACT % step)
            if message is not None:
                errors.append("%s: %s" % (host, message))
    return errors
