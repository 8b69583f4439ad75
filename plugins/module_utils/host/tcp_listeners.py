# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The TCP probe's iperf3 listeners on a server: start them detached under `timeout` (their hard
limit), record each in the private state_dir with the proof stop needs, and stop only what those
records prove ours (processes.our_processes, probe.identity_problem).

Why `timeout iperf3 -s -1` detached by processes.spawn_detached and not `iperf3 -D --pidfile`:
-D daemonises iperf3 itself, out from under `timeout`, and neither iperf3 3.9 (Debian 11) nor
3.12 (Debian 12; `iperf3 -h` on this project's test host) bounds a server's test time by itself
(`-1` ends it after one client, `--idle-timeout` only while idle), so the hard limit would be
lost. -1 is used: a listener serves its one client and exits. `timeout` makes itself a process group leader, so the iperf3 child is in
the group whose id is the recorded pid; stop finds it there and proves it ours before any signal.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import socket
import sys
import time

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import probe
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_write
from ansible_collections.ckptio.nfs.plugins.module_utils.host import processes

# Two listeners listened within a second on this project's loaded 2-core test host
# (tests/unit/plugins/modules/test_tcp_probe_listener.py); the bound only keeps a broken start
# from holding the play, and a listener that exited ends the wait at once.
LISTEN_WAIT_SECONDS = 15.0
# SIGTERM -> SIGKILL grace when stopping, and how long a killed listener's socket may linger.
STOP_GRACE_SECONDS = 5.0
POLL_SECONDS = 0.1
INSTALL_HINT = "canary_validation_probe_install=true (role canary_validation)"


class ProbeError(Exception):
    """The probe cannot do what was asked; msg names why, result holds what the failure returns with it."""

    def __init__(self, msg, **result):
        super().__init__(msg)
        self.result = result


def listening_now(host):
    """The (address, port) pairs listening on host (a host_root.HostRoot), from its TCP tables."""
    sockets = set()
    for path in host.net_tcp:
        sockets |= probe.listening_sockets(host.read(path), sys.byteorder)
    return sockets


def find_programs(get_bin_path):
    """(timeout, iperf3) paths; ProbeError naming the package when one is missing."""
    iperf3 = get_bin_path("iperf3")
    if iperf3 is None:
        raise ProbeError("iperf3 is not installed on %s: install the package iperf3 (Debian, Ubuntu, RHEL), or set %s"
                         % (platform.node(), INSTALL_HINT))
    timeout = get_bin_path("timeout")
    if timeout is None:
        raise ProbeError("timeout (coreutils) is not installed on %s: the probe needs it for its hard time limit"
                         % platform.node())
    return timeout, iperf3


def is_local_address(address):
    """True when address:0 binds here, i.e. the address belongs to this host.

    EADDRNOTAVAIL: not ours; EAFNOSUPPORT: no IPv6 on this host, so not ours either. Anything
    else (a link-local address without its %zone: EINVAL) propagates for the caller to word.
    """
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.bind((address, 0))
    except OSError as exc:
        if exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
            return False
        raise
    return True


def check_state_dir(state_dir, create=False):
    """ProbeError unless state_dir is ours and private (file_write.private_dir_error: not a link,
    owned by this user, no group or other write); create=True makes a missing one 0700. Its
    records decide what stop signals, so a directory another user can write is never trusted."""
    error = file_write.private_dir_error(state_dir, "state_dir", create=create)
    if error:
        raise ProbeError(error)


def read_records(state_dir):
    """[(file name, record dict or None when unreadable)] of the listener records in state_dir.

    Only regular files, never through a link, at most file_read.SMALL_LIMIT bytes each
    (read_input); the caller has checked that state_dir is private (check_state_dir).
    """
    try:
        names = sorted(name for name in os.listdir(state_dir) if probe.is_state_file(name))
    except FileNotFoundError:
        return []
    records = []
    for name in names:
        try:
            text = file_read.read(os.path.join(state_dir, name), file_read.SMALL_LIMIT)
            record = json.loads(text) if text else None
        except (OSError, ValueError, RecursionError):
            record = None
        if not isinstance(record, dict) or not isinstance(record.get("pid"), int) or not isinstance(record.get("argv"), list):
            record = None
        records.append((name, record))
    return records


def log_name(record):
    """The log file name of a record (a record whose address or port is not usable names none we wrote)."""
    try:
        return probe.log_file_name(record["address"], record["port"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return "listener-unknown.log"


def read_log(state_dir, record_or_pair):
    """A listener's log (ours, in the private state_dir), bounded and never through a link."""
    name = (probe.log_file_name(*record_or_pair) if isinstance(record_or_pair, tuple) else log_name(record_or_pair))
    try:
        return file_read.read(os.path.join(state_dir, name), file_read.SMALL_LIMIT) or ""
    except OSError as exc:
        return "(log not read: %s)" % file_read.describe_error(exc)


def recorded_rows(host, records):
    """Each readable record with the live pids it proves ours; nothing signalled yet."""
    rows = []
    for _name, record in records:
        if record is not None:
            pids, left_alone = processes.our_processes(record, host.proc)
            rows.append({"address": record.get("address"), "port": record.get("port"), "pids": pids, "signal": None,
                         "left_alone": left_alone})
    return rows


def stop_records(host, records):
    """SIGTERM every pid the records prove ours, SIGKILL what is left after the grace; the rows."""
    rows = recorded_rows(host, records)
    for row in rows:
        row["signal"] = "SIGTERM" if row["pids"] else None
    killed = processes.terminate([pid for row in rows for pid in row["pids"]], STOP_GRACE_SECONDS, host.proc)
    for row in rows:
        if killed & set(row["pids"]):
            row["signal"] = "SIGKILL"
    return rows


def wait_not_listening(host, pairs, seconds):
    """Pairs still LISTENing after up to `seconds` (a closed listener leaves the table at once)."""
    deadline = time.monotonic() + seconds
    while True:
        sockets = listening_now(host)
        still = [pair for pair in pairs if pair in sockets]
        if not still or time.monotonic() >= deadline:
            return still
        time.sleep(POLL_SECONDS)


def forget_records(module, state_dir, records):
    """Remove the records and logs of listeners that are gone, then state_dir when empty."""
    for name, record in records:
        file_write.remove_file(module, os.path.join(state_dir, name))
        if record is not None:
            file_write.remove_file(module, os.path.join(state_dir, log_name(record)))
    try:
        os.rmdir(state_dir)
    except OSError:
        pass


def stop_and_forget(module, host, state_dir, records):
    """Stop the records' listeners; when none listens any more, forget them. Returns (rows, still listening)."""
    rows = stop_records(host, records)
    still = wait_not_listening(host, [(row["address"], row["port"]) for row in rows], STOP_GRACE_SECONDS)
    for row in rows:
        row["log"] = read_log(state_dir, (row["address"], row["port"]))
    if not still:
        # Otherwise the records stay, so a second stop can try again.
        forget_records(module, state_dir, records)
    return rows, still


def wait_listening(host, started):
    """(address, port) of the started listeners not LISTENing within LISTEN_WAIT_SECONDS."""
    pairs = [(record["address"], record["port"]) for _name, record in started]
    deadline = time.monotonic() + LISTEN_WAIT_SECONDS
    while True:
        missing = probe.not_listening(listening_now(host), pairs)
        dead = [(record["address"], record["port"]) for _name, record in started
                if not processes.alive(record["pid"], host.proc)]
        if not missing or time.monotonic() >= deadline or set(missing) <= set(dead):
            return missing
        time.sleep(POLL_SECONDS)


def start_one(module, host, state_dir, pair, argv):
    """Start one listener detached and record it: (record file name, record)."""
    address, port = pair
    pid = processes.spawn_detached(argv, os.path.join(state_dir, probe.log_file_name(address, port)))
    # The proof stop needs (probe.identity_problem): the start time fixes the pid to this
    # process, the executables are what `timeout` and its iperf3 child run.
    record = {"address": address, "port": port, "pid": pid, "argv": argv,
              "starttime": probe.stat_start_time(processes.stat_text(pid, host.proc)),
              "exe": os.path.realpath(argv[0]), "child_exe": os.path.realpath(probe.listener_child_argv(argv)[0]),
              "started": round(time.time(), 3), "limit_seconds": module.params["seconds"]}
    name = probe.state_file_name(address, port)
    try:
        file_write.write_file(module, os.path.join(state_dir, name), json.dumps(record) + "\n", mode=0o600)
    except OSError as exc:
        # Unrecorded, nothing would ever stop it (stop reads the records): stop it now, we just started it
        # (SIGTERM to `timeout`, which passes it to iperf3; SIGKILL after the grace), then fail (issue 45).
        left = processes.terminate([pid], STOP_GRACE_SECONDS, host.proc)
        raise OSError(exc.errno, "the record %s could not be written (%s): the listener just started there (pid %d) was"
                      " stopped%s" % (os.path.join(state_dir, name), exc, pid, " with SIGKILL" if left else ""))
    return name, record


def start_listeners(module, host, state_dir, argvs):
    """Start, record and wait for every planned listener; on any failure stop the ones started."""
    check_state_dir(state_dir, create=True)
    started = []
    failure = None
    try:
        for pair, argv in argvs:
            started.append(start_one(module, host, state_dir, pair, argv))
        missing = wait_listening(host, started)
        if missing:
            logs = [(pair, read_log(state_dir, pair)) for pair in missing]
            failure = "not listening (waited up to %d s): %s" % (
                LISTEN_WAIT_SECONDS, "; ".join("%s:%d (%s)" % (pair + ((log.strip() or "no output"),)) for pair, log in logs))
    except OSError as exc:
        failure = "could not start the listeners: %s" % exc
    if failure:
        _rows, still = stop_and_forget(module, host, state_dir, started)
        raise ProbeError("%s; the listeners started are stopped%s" % (
            failure, " except %s (still listening)" % ", ".join("%s:%d" % pair for pair in still) if still else ""))
    return [{"address": record["address"], "port": record["port"], "pid": record["pid"]} for _name, record in started]
