#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: tcp_probe
short_description: Measure what the NFS path's TCP can carry with iperf3 (one-off listeners and senders)
version_added: 0.1.0
description:
  - The probe operators run by hand, made safe to run from a playbook. On the NFS server,
    O(mode=listen) starts one-off C(iperf3 -s -1) listeners bound to the addresses the clients
    mount; on every client, O(mode=send) sends for O(seconds) with as many parallel streams as
    the mount's C(nconnect), starting together at O(start_at); O(mode=stop) then stops every
    listener this module recorded and checks that nothing listens any more.
  - Every listener runs under C(timeout), so it dies by itself after the O(seconds) hard limit even
    when nobody ever stops it (the controller was interrupted, a client never connected).
  - The aggregate capacity at a server is the sum of RV(summary.received_bits_per_second) over the
    clients that sent in the same window.
  - Needs the C(iperf3) program (package C(iperf3) in Debian, Ubuntu and RHEL) and C(timeout)
    (coreutils). It never installs anything; the C(canary_validation) role does when
    C(canary_validation_probe_install=true).
author:
  - ckptio.nfs maintainers (@ckptio)
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: Nothing is started, sent or killed; the result says what would be (listeners, argv, pids).
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
    platforms: linux
options:
  mode:
    description:
      - V(listen) - on a server, start one listener per address in O(addresses) that is local to this
        host and per port in O(ports), record them in O(state_dir) and wait until each one listens.
      - V(send) - on a client, send to O(server) on O(port) and return iperf3's result.
      - V(stop) - on a server, stop every listener recorded in O(state_dir) and remove the record.
    type: str
    required: true
    choices: [listen, send, stop]
  addresses:
    description:
      - With O(mode=listen), IP addresses the clients mount (the C(addr=) of their NFS mounts). A
        listener is bound to each one that is local to this host; the module fails, naming the list,
        when none is.
    type: list
    elements: str
    default: []
  ports:
    description:
      - With O(mode=listen), TCP ports to listen on, one per client (iperf3 serves one test at a time).
        A port already listening on one of the addresses, or on the wildcard address, is refused.
    type: list
    elements: int
    default: []
  seconds:
    description:
      - With O(mode=listen), the hard limit - every listener ends by itself after this many seconds
        (SIGTERM, SIGKILL 5 s later). Give it the sending time plus the time until the senders start.
      - With O(mode=send), how long to send.
    type: int
    default: 10
  state_dir:
    description:
      - Directory (mode 0700) holding one record and one log per listener, for O(mode=stop).
      - It must be a real directory (not a symbolic link) owned by the user the module runs as, with no
        group or other write permission, in parents only root or that user can change; anything else is
        refused, naming this option. O(mode=stop) signals only processes its records prove it started
        (the pid's start time and executable, recorded at start, and the exact command line).
    type: path
    default: /run/ckptio-tcp-probe
  server:
    description:
      - With O(mode=send), the address to send to. Default - the C(addr=) the kernel shows for
        O(mount_point) in C(/proc/self/mountinfo) (the address the NFS client really talks to).
    type: str
  mount_point:
    description:
      - With O(mode=send), the NFS mount whose server and C(nconnect) the probe uses.
    type: path
  port:
    description: With O(mode=send), the server's listener port for this client.
    type: int
    default: 5201
  streams:
    description:
      - With O(mode=send), parallel TCP streams (C(iperf3 -P)). 0 means the C(nconnect) of
        O(mount_point) (1 without it), so the probe uses as many connections as the NFS client does.
    type: int
    default: 0
  start_at:
    description:
      - With O(mode=send), Unix epoch (seconds, may have a fraction) to start at, so every client
        sends in the same window. Omitted means now; a time already past starts at once, with a warning.
      - It must be finite and within O(barrier_timeout) seconds of now (ahead or past); otherwise the module
        fails before anything runs.
      - Ignored with O(barrier_dir), where the controller's go decides.
    type: float
  barrier_dir:
    description:
      - With O(mode=send), the two-phase start the C(canary_validation) role uses (the canary's, see
        M(ckptio.nfs.checkpoint_canary)) - after checking its options and finding iperf3 the module
        writes C(ready.json) in this directory (created 0700 on the host's local tmpfs), waits for
        the controller's C(go.json) (or C(abort.json)), sends at the go time, and writes C(done.json)
        right before it exits. So every client sends at once whatever the launch took.
      - Give every run its own directory; one that already holds C(ready.json) is refused, and so is one
        that is a symbolic link, belongs to another user or is writable by group or others.
      - A go is obeyed only when it echoes the run id written into C(ready.json) and its time is within
        O(barrier_timeout) of now; C(go.json) is read only as a regular file of at most 64 KiB, never
        through a symbolic link.
    type: path
  barrier_timeout:
    description:
      - With O(barrier_dir), seconds to wait for go after C(ready.json); then the module fails
        without sending.
    type: float
    default: 600
notes:
  - The probe is seconds x streams of full-rate TCP on the NFS path; run it outside a training job.
  - The locality of an address is tested by binding a socket to it. With C(net.ipv4.ip_nonlocal_bind=1)
    every address binds, so a wrong address is only found when the clients cannot connect.
seealso:
  - name: iperf3
    description: The iperf3 manual (C(-J) JSON output, C(-1) one-off server).
    link: https://software.es.net/iperf/invoking.html
"""

EXAMPLES = r"""
- name: Listen on the address the clients mount, one port per client
  ckptio.nfs.tcp_probe:
    mode: listen
    addresses: [10.0.0.1]
    ports: [5201, 5202]
    seconds: 120

- name: Send for 10 s with the mount's nconnect streams, all clients at once
  ckptio.nfs.tcp_probe:
    mode: send
    mount_point: /mnt/nfs
    port: 5201
    seconds: 10
    start_at: "{{ probe_start_at }}"
  register: probe

- name: Stop every listener (also after a failed send)
  ckptio.nfs.tcp_probe:
    mode: stop
"""

RETURN = r"""
listeners:
  description: With O(mode=listen), the listeners started (pid null in check mode).
  returned: mode is listen
  type: list
  elements: dict
  sample: [{address: 10.0.0.1, port: 5201, pid: 4711}]
not_local:
  description: With O(mode=listen), entries of O(addresses) that are not addresses of this host.
  returned: mode is listen
  type: list
  elements: str
stopped:
  description:
    - With O(mode=stop), each recorded listener with the pids signalled and the signal that ended them.
    - C(left_alone) lists the processes of the listener's process group that were not signalled because
      they could not be proven ours, and why.
  returned: mode is stop
  type: list
  elements: dict
  sample: [{address: 10.0.0.1, port: 5201, pids: [4711, 4712], signal: SIGTERM, log: "", left_alone: []}]
server:
  description: With O(mode=send), the address sent to.
  returned: mode is send
  type: str
  sample: 10.0.0.1
port:
  description: With O(mode=send), the port sent to.
  returned: mode is send
  type: int
streams:
  description: With O(mode=send), parallel streams used.
  returned: mode is send
  type: int
seconds:
  description: With O(mode=send), seconds sent for (as asked).
  returned: mode is send
  type: int
start_at:
  description: With O(mode=send), the epoch the send waited for (null when none was given; the go time with O(barrier_dir)).
  returned: mode is send
  type: float
started_at:
  description:
    - With O(mode=send), this host's clock (Unix epoch, with a fraction) right before iperf3 started;
      the start to compare across clients (iperf3's own RV(summary.start_epoch) has whole seconds).
  returned: mode is send and not check mode
  type: float
barrier:
  description:
    - With O(barrier_dir), C(ready_at), C(signal) (C(go) or C(abort)), C(go_at), C(go_late_seconds)
      and C(abort) (why), all on this host's clock.
  returned: mode is send, O(barrier_dir) is set and not check mode
  type: dict
argv:
  description: With O(mode=send), the command run (or that would run in check mode).
  returned: mode is send
  type: list
  elements: str
summary:
  description: With O(mode=send), iperf3's figures; a figure its output lacks is null.
  returned: mode is send and not check mode
  type: dict
  contains:
    sent_bits_per_second:
      description: What the client sent (C(end.sum_sent)).
      type: float
    received_bits_per_second:
      description: What the server received (C(end.sum_received)); sum it over clients for the server's aggregate.
      type: float
    retransmits:
      description: TCP retransmissions of the sender (Linux only).
      type: int
    streams:
      description: Parallel streams iperf3 ran.
      type: int
    seconds:
      description: Seconds the receiver measured.
      type: float
    start_epoch:
      description: iperf3's own start time (Unix epoch, whole seconds).
      type: int
    error:
      description: iperf3's error message, or why there is no result; null on success.
      type: str
  sample: {sent_bits_per_second: 9.4e9, received_bits_per_second: 9.39e9, retransmits: 12, streams: 4, seconds: 10.0,
           start_epoch: 1760000000, error: null}
raw:
  description: With O(mode=send), iperf3's C(-J) output verbatim.
  returned: mode is send and not check mode
  type: str
parsed:
  description: With O(mode=send), the same output parsed (null when iperf3 printed no JSON), for the capture bundle.
  returned: mode is send and not check mode
  type: dict
rc:
  description: With O(mode=send), the exit status of C(timeout iperf3 ...) (124 when the time limit ended it).
  returned: mode is send and not check mode
  type: int
"""

import errno
import json
import math
import os
import platform
import signal
import socket
import sys
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ckptio.nfs.plugins.module_utils.host import atomic_file
from ansible_collections.ckptio.nfs.plugins.module_utils.host import barrier_files
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import barrier
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import probe as tcp_probe
from ansible_collections.ckptio.nfs.plugins.module_utils.stats.dstate import task_state
from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import nfs_mounts, nfs_server_of, parse_mountinfo

PROC = "/proc"
PROC_MOUNTINFO = "/proc/self/mountinfo"
PROC_NET_TCP = ("/proc/net/tcp", "/proc/net/tcp6")
# Two listeners listened within a second on this project's loaded 2-core test host
# (tests/unit/plugins/modules/test_tcp_probe.py); the bound only keeps a broken start from
# holding the play, and a listener that exited ends the wait at once.
LISTEN_WAIT_SECONDS = 15.0
# SIGTERM -> SIGKILL grace in mode=stop, and how long a killed listener's socket may linger.
STOP_GRACE_SECONDS = 5.0
POLL_SECONDS = 0.1
INSTALL_HINT = "canary_validation_probe_install=true (role canary_validation)"


def listening_now():
    sockets = set()
    for path in PROC_NET_TCP:
        sockets |= tcp_probe.listening_sockets(atomic_file.read_optional(path), sys.byteorder)
    return sockets


def find_programs(module):
    iperf3 = module.get_bin_path("iperf3")
    if iperf3 is None:
        module.fail_json(msg="iperf3 is not installed on %s: install the package iperf3 (Debian, Ubuntu, RHEL), or set %s"
                         % (platform.node(), INSTALL_HINT))
    timeout = module.get_bin_path("timeout")
    if timeout is None:
        module.fail_json(msg="timeout (coreutils) is not installed on %s: the probe needs it for its hard time limit"
                         % platform.node())
    return timeout, iperf3


def is_local_address(address):
    """True when address:0 binds here, i.e. the address belongs to this host.

    EADDRNOTAVAIL: not ours; EAFNOSUPPORT: no IPv6 on this host, so not ours either. Anything
    else (a link-local address without its %zone: EINVAL) propagates for the caller to word.
    """
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((address, 0))
    except OSError as exc:
        if exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
            return False
        raise
    return True


def spawn_detached(argv, log_path):
    """Start argv in a session of its own, stdio to log_path; return its pid.

    Double fork: the listener is nobody's child once the module exits (init reaps it), and a
    new session keeps the play's terminal signals away from it. `timeout` then makes itself a
    process group leader, so its iperf3 child is in the group whose id is the returned pid.
    """
    read_end, write_end = os.pipe()
    first = os.fork()
    if first == 0:
        try:
            os.close(read_end)
            os.setsid()
            log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
            null = os.open(os.devnull, os.O_RDONLY)
            child = os.fork()
            if child == 0:
                try:
                    os.dup2(null, 0)
                    os.dup2(log, 1)
                    os.dup2(log, 2)
                    os.closerange(3, 65536)
                    os.execv(argv[0], argv)
                finally:
                    os._exit(127)
            os.write(write_end, ("%d" % child).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    os.waitpid(first, 0)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    if not data:
        raise OSError("could not start %s" % argv[0])
    return int(data)


def process_alive(pid):
    """A pid that still runs (a zombie has finished: only its parent's wait is missing)."""
    stat = atomic_file.read_optional("%s/%d/stat" % (PROC, pid))
    return stat is not None and task_state(stat) not in (None, "Z", "X")


def _proc_exe(pid):
    return atomic_file.read_link("%s/%d/exe" % (PROC, pid))


def our_pids(record):
    """(live pids this record proves ours, [why other candidates were left alone]).

    Candidates are the recorded pid (`timeout`) and the members of its process group (the
    iperf3 child stays in it even if `timeout` was killed alone). Each must pass
    tcp_probe.identity_problem: the start time (/proc/PID/stat field 22) and the executable
    (/proc/PID/exe) written into our record when we started it, and our exact argv. A recycled
    pid, another program with our command line, or a record without that proof is left alone.
    """
    group = record["pid"]
    pids, left_alone = [], []
    try:
        entries = os.listdir(PROC)
    except OSError:
        return pids, left_alone
    for entry in entries:
        if not entry.isdigit():
            continue
        pid = int(entry)
        stat = atomic_file.read_optional("%s/%d/stat" % (PROC, pid))
        if stat is None or (pid != group and tcp_probe.stat_process_group(stat) != group):
            continue
        if task_state(stat) in ("Z", "X"):
            continue
        problem = tcp_probe.identity_problem(record, pid, stat, _proc_exe(pid),
                                             atomic_file.read_optional("%s/%d/cmdline" % (PROC, pid)))
        if problem is None:
            pids.append(pid)
        else:
            left_alone.append("pid %d left alone: %s" % (pid, problem))
    return sorted(pids), left_alone


def signal_pids(pids, signum):
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def wait_gone(pids, seconds):
    deadline = time.monotonic() + seconds
    alive = [pid for pid in pids if process_alive(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        alive = [pid for pid in alive if process_alive(pid)]
    return alive


def read_records(state_dir):
    """[(file name, record dict or None when unreadable)] of the listener records in state_dir.

    Only regular files, never through a link, at most atomic_file.SMALL_LIMIT bytes each
    (read_input); the caller has checked that state_dir is private (check_state_dir).
    """
    try:
        names = sorted(name for name in os.listdir(state_dir) if tcp_probe.is_state_file(name))
    except FileNotFoundError:
        return []
    records = []
    for name in names:
        try:
            text = atomic_file.read_input(os.path.join(state_dir, name), atomic_file.SMALL_LIMIT)
            record = json.loads(text) if text else None
        except (OSError, ValueError, RecursionError):
            record = None
        if not isinstance(record, dict) or not isinstance(record.get("pid"), int) or not isinstance(record.get("argv"), list):
            record = None
        records.append((name, record))
    return records


def check_state_dir(module, state_dir, create=False):
    """Fail unless state_dir is ours and private (atomic_file.private_dir_error: not a link, owned by
    this user, no group or other write); create=True makes a missing one 0700. Its records decide
    what stop signals, so a directory another user can write is never trusted."""
    error = atomic_file.private_dir_error(state_dir, "state_dir", create=create)
    if error:
        module.fail_json(msg=error)


def prepare_state_dir(module, state_dir):
    check_state_dir(module, state_dir, create=True)


def stop_records(records):
    """SIGTERM every live pid of the records, SIGKILL what is left after the grace; the rows."""
    rows = []
    for _name, record in records:
        if record is None:
            continue
        pids, left_alone = our_pids(record)
        rows.append({"address": record.get("address"), "port": record.get("port"), "pids": pids,
                     "signal": "SIGTERM" if pids else None, "left_alone": left_alone})
    signal_pids([pid for row in rows for pid in row["pids"]], signal.SIGTERM)
    left = set(wait_gone([pid for row in rows for pid in row["pids"]], STOP_GRACE_SECONDS))
    if left:
        signal_pids(sorted(left), signal.SIGKILL)
        wait_gone(sorted(left), STOP_GRACE_SECONDS)
        for row in rows:
            if left & set(row["pids"]):
                row["signal"] = "SIGKILL"
    return rows


def wait_not_listening(pairs, seconds):
    """Pairs still LISTENing after up to `seconds` (a closed listener leaves the table at once)."""
    deadline = time.monotonic() + seconds
    while True:
        sockets = listening_now()
        still = [pair for pair in pairs if pair in sockets]
        if not still or time.monotonic() >= deadline:
            return still
        time.sleep(POLL_SECONDS)


def forget_records(module, state_dir, records):
    """Remove the records and logs of listeners that are gone, then state_dir when empty."""
    for name, record in records:
        atomic_file.remove_file(module, os.path.join(state_dir, name))
        if record is not None:
            atomic_file.remove_file(module, os.path.join(state_dir, log_name(record)))
    try:
        os.rmdir(state_dir)
    except OSError:
        pass


def log_name(record):
    """The log file name of a record (a record whose address or port is not usable names none we wrote)."""
    try:
        return tcp_probe.log_file_name(record["address"], record["port"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return "listener-unknown.log"


def read_log(state_dir, record_or_pair):
    """A listener's log (ours, in the private state_dir), bounded and never through a link."""
    name = (tcp_probe.log_file_name(*record_or_pair) if isinstance(record_or_pair, tuple) else log_name(record_or_pair))
    try:
        return atomic_file.read_input(os.path.join(state_dir, name), atomic_file.SMALL_LIMIT) or ""
    except OSError as exc:
        return "(log not read: %s)" % atomic_file.describe_error(exc)


def stop_and_forget(module, state_dir, records):
    """Stop the records' listeners; when none listens any more, forget them. Returns (rows, still listening)."""
    rows = stop_records(records)
    still = wait_not_listening([(row["address"], row["port"]) for row in rows], STOP_GRACE_SECONDS)
    for row in rows:
        row["log"] = read_log(state_dir, (row["address"], row["port"]))
    if not still:
        # Otherwise the records stay, so a second stop can try again.
        forget_records(module, state_dir, records)
    return rows, still


def run_stop(module, state_dir):
    if os.path.lexists(state_dir):
        check_state_dir(module, state_dir)
    records = read_records(state_dir)
    rows = []
    for _name, record in records:
        if record is not None:
            pids, left_alone = our_pids(record)
            rows.append({"address": record.get("address"), "port": record.get("port"), "pids": pids, "signal": None,
                         "left_alone": left_alone})
    still = []
    if not module.check_mode:
        rows, still = stop_and_forget(module, state_dir, records)
    if still:
        module.fail_json(msg="still listening after stop: %s%s" % (", ".join("%s:%d" % pair for pair in still), _left_alone_text(rows)),
                         stopped=rows)
    return dict(changed=bool(records), stopped=rows,
                msg="%s %d listener(s), %s %d record(s) in %s%s" % (
                    "would stop" if module.check_mode else "stopped", sum(1 for row in rows if row["pids"]),
                    "would remove" if module.check_mode else "removed", len(records), state_dir, _left_alone_text(rows)))


def _left_alone_text(rows):
    """'; not signalled (not proven ours): ...' for the processes stop left alone, or ''."""
    alone = [reason for row in rows for reason in row.get("left_alone") or []]
    return "; not signalled (not proven ours): %s" % "; ".join(alone) if alone else ""


def run_listen(module, state_dir):
    params = module.params
    if not params["addresses"]:
        module.fail_json(msg="addresses: give the addresses the clients mount (mode=listen)")
    if not params["ports"]:
        module.fail_json(msg="ports: give one port per client (mode=listen)")
    bad_ports = [port for port in params["ports"] if not 1 <= port <= 65535]
    if bad_ports or len(set(params["ports"])) != len(params["ports"]):
        module.fail_json(msg="ports must be distinct numbers 1..65535, got %s" % params["ports"])
    addresses = []
    for address in params["addresses"]:
        try:
            canonical = tcp_probe.canonical_address(address)
        except ValueError:
            module.fail_json(msg="addresses: %r is not an IP address" % address)
        if canonical not in addresses:
            addresses.append(canonical)
    local = []
    for address in addresses:
        try:
            if is_local_address(address):
                local.append(address)
        except OSError as exc:
            module.fail_json(msg="addresses: cannot bind to %s to test it: %s" % (address, exc.strerror or exc))
    not_local = [address for address in addresses if address not in local]
    if not local:
        module.fail_json(msg="none of addresses %s is an address of %s" % (", ".join(addresses), platform.node()))
    timeout, iperf3 = find_programs(module)
    if os.path.lexists(state_dir):
        check_state_dir(module, state_dir)
    conflicts = tcp_probe.port_conflicts(listening_now(), local, params["ports"])
    if conflicts:
        recorded = set((record["address"], record["port"]) for _n, record in read_records(state_dir) if record)
        module.fail_json(msg="ports already in use on %s: %s%s" % (
            platform.node(), ", ".join("%s:%d" % pair for pair in conflicts),
            " (a probe recorded in %s is still there: run mode=stop)" % state_dir if recorded & set(conflicts) else ""))
    planned = [(address, port) for address in local for port in params["ports"]]
    argvs = dict((pair, tcp_probe.listen_argv(timeout, iperf3, pair[0], pair[1], params["seconds"])) for pair in planned)
    listeners = [{"address": address, "port": port, "pid": None} for address, port in planned]
    if not module.check_mode:
        listeners = start_listeners(module, state_dir, planned, argvs)
    return dict(changed=True, not_local=not_local, state_dir=state_dir, listeners=listeners,
                msg="%s %d listener(s), each ends by itself after %d s" % (
                    "would start" if module.check_mode else "started", len(planned), params["seconds"]))


def start_listeners(module, state_dir, planned, argvs):
    """Start, record and wait for every planned listener; on any failure stop the ones started."""
    prepare_state_dir(module, state_dir)
    started = []
    failure = None
    try:
        for address, port in planned:
            log_path = os.path.join(state_dir, tcp_probe.log_file_name(address, port))
            argv = argvs[(address, port)]
            pid = spawn_detached(argv, log_path)
            # The proof stop needs (tcp_probe.identity_problem): the start time fixes the pid to this
            # process, the executables are what `timeout` and its iperf3 child run.
            record = {"address": address, "port": port, "pid": pid, "argv": argv,
                      "starttime": tcp_probe.stat_start_time(atomic_file.read_optional("%s/%d/stat" % (PROC, pid))),
                      "exe": os.path.realpath(argv[0]), "child_exe": os.path.realpath(tcp_probe.listener_child_argv(argv)[0]),
                      "started": round(time.time(), 3), "limit_seconds": module.params["seconds"]}
            started.append((tcp_probe.state_file_name(address, port), record))
            atomic_file.write_file(module, os.path.join(state_dir, started[-1][0]), json.dumps(record) + "\n", mode=0o600)
        missing = wait_listening(started)
        if missing:
            logs = [(pair, read_log(state_dir, pair)) for pair in missing]
            failure = "not listening (waited up to %d s): %s" % (
                LISTEN_WAIT_SECONDS, "; ".join("%s:%d (%s)" % (pair + ((log.strip() or "no output"),)) for pair, log in logs))
    except OSError as exc:
        failure = "could not start the listeners: %s" % exc
    if failure:
        _rows, still = stop_and_forget(module, state_dir, started)
        module.fail_json(msg="%s; the listeners started are stopped%s" % (
            failure, " except %s (still listening)" % ", ".join("%s:%d" % pair for pair in still) if still else ""))
    return [{"address": record["address"], "port": record["port"], "pid": record["pid"]} for _name, record in started]


def wait_listening(started):
    """(address, port) of the started listeners not LISTENing within LISTEN_WAIT_SECONDS."""
    pairs = [(record["address"], record["port"]) for _name, record in started]
    deadline = time.monotonic() + LISTEN_WAIT_SECONDS
    while True:
        missing = tcp_probe.not_listening(listening_now(), pairs)
        dead = [(record["address"], record["port"]) for _name, record in started if not process_alive(record["pid"])]
        if not missing or time.monotonic() >= deadline or set(missing) <= set(dead):
            return missing
        time.sleep(POLL_SECONDS)


def mount_of(mount_point):
    """The topmost NFS mount on mount_point in /proc/self/mountinfo, or None."""
    found = None
    for mount in nfs_mounts(parse_mountinfo(atomic_file.read_optional(PROC_MOUNTINFO) or "")):
        if mount["mount_point"] == mount_point:
            found = mount
    return found


def run_send(module):
    params = module.params
    if not 1 <= params["port"] <= 65535:
        module.fail_json(msg="port must be 1..65535, got %d" % params["port"])
    if params["streams"] < 0 or params["streams"] > 128:
        # iperf3 refuses -P above 128 ("number of parallel streams too large (maximum = 128)", 3.12).
        module.fail_json(msg="streams must be 0 (the mount's nconnect) to 128, got %d" % params["streams"])
    if params["barrier_dir"] is not None and not os.path.isabs(params["barrier_dir"]):
        module.fail_json(msg="barrier_dir must be absolute, got %r" % params["barrier_dir"])
    if not math.isfinite(params["barrier_timeout"]) or params["barrier_timeout"] <= 0:
        module.fail_json(msg="barrier_timeout must be a finite number greater than 0, got %s" % params["barrier_timeout"])
    if params["start_at"] is not None and params["barrier_dir"] is None:
        # The same bound as a go file's: a start a year ahead would hold the play for a year.
        error = barrier.go_time_error(params["start_at"], time.time(), params["barrier_timeout"], "start_at")
        if error:
            module.fail_json(msg="%s (barrier_timeout=%s bounds it)" % (error, params["barrier_timeout"]))
    server, streams = params["server"], params["streams"]
    if params["mount_point"]:
        mount = mount_of(params["mount_point"].rstrip("/") or "/")
        if mount is None:
            module.fail_json(msg="mount_point %s is not an NFS mount on %s" % (params["mount_point"], platform.node()))
        server = server or nfs_server_of(mount)
        if not streams:
            try:
                streams = int(mount["options"].get("nconnect") or 1)
            except ValueError:
                streams = 1
    if not server:
        module.fail_json(msg="server or mount_point is required with mode=send")
    if not tcp_probe.is_host_name_or_address(server):
        # It becomes one argv word after -c: no shell, but a leading '-' or a space must not pass.
        module.fail_json(msg="server must be an IP address or a host name, got %r" % server)
    streams = streams or 1
    timeout, iperf3 = find_programs(module)
    argv = tcp_probe.send_argv(timeout, iperf3, server, params["port"], streams, params["seconds"])
    result = dict(changed=False, server=server, port=params["port"], streams=streams, seconds=params["seconds"],
                  start_at=params["start_at"], argv=argv,
                  msg="would send %d stream(s) to %s:%d for %d s" % (streams, server, params["port"], params["seconds"]))
    if module.check_mode:
        return result
    start_at = params["start_at"]
    directory = params["barrier_dir"]
    if directory is not None:
        start_at = wait_for_go(module, directory, result, params["barrier_timeout"])
    # With a barrier, barrier_files has already warned about a late go.
    result.update(send(module, argv, start_at, warn_late=directory is None))
    if result["summary"]["error"]:
        result["msg"] = "probe to %s:%d failed: %s" % (server, params["port"], result["summary"]["error"])
        finish(module, directory, result, failed=True)
    result["msg"] = "%.3g Gbit/s received by %s:%d" % (result["summary"]["received_bits_per_second"] / 1e9, server, params["port"])
    finish(module, directory, result, failed=False)


def wait_for_go(module, directory, result, timeout):
    """ready.json, then the controller's go (this host's clock); an abort fails without sending."""
    error = barrier_files.prepare_dir(directory)
    if error:
        result["msg"] = error
        module.fail_json(**result)
    go_at, info = barrier_files.wait_for_go(
        module, directory, barrier.ready_document(time.time(), os.getpid(), 1, directory), timeout)
    result["barrier"] = info
    if go_at is None:
        result["msg"] = "probe aborted before sending: %s" % info["abort"]
        finish(module, directory, result, failed=True)
    result["start_at"] = go_at
    return go_at


def finish(module, directory, result, failed):
    """done.json with a barrier (the role waits on it instead of polling), then exit or fail."""
    if directory is not None:
        barrier_files.write_done(module, directory, failed)
    if failed:
        module.fail_json(**result)
    module.exit_json(**result)


def send(module, argv, start_at, warn_late=True):
    """Wait for start_at, run the iperf3 client; {summary, raw, rc}."""
    if start_at is not None:
        wait = start_at - time.time()
        if wait > 0:
            time.sleep(wait)
        elif wait < -1 and warn_late:
            module.warn("start_at was %.1f s ago when the probe was ready: this client starts late and may not "
                        "overlap the others" % -wait)
    started_at = time.time()
    # iperf3 -J exits 0 even when it cannot connect (3.12, measured): the JSON's "error" decides.
    rc, out, err = module.run_command(argv)
    try:
        parsed = json.loads(out)
    except ValueError:
        parsed = None
    summary = tcp_probe.summarize_iperf3(parsed)
    if parsed is None:
        # 124: timeout(1) ended iperf3 at its hard limit.
        summary["error"] = "iperf3 printed no JSON (exit %d%s): %s" % (
            rc, ", its time limit" if rc == 124 else "", (err or out or "").strip()[-500:])
    return dict(summary=summary, raw=out, parsed=parsed, rc=rc, started_at=round(started_at, 6))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", required=True, choices=["listen", "send", "stop"]),
            addresses=dict(type="list", elements="str", default=[]),
            ports=dict(type="list", elements="int", default=[]),
            seconds=dict(type="int", default=10),
            state_dir=dict(type="path", default="/run/ckptio-tcp-probe"),
            server=dict(type="str"),
            mount_point=dict(type="path"),
            port=dict(type="int", default=5201),
            streams=dict(type="int", default=0),
            start_at=dict(type="float"),
            barrier_dir=dict(type="path"),
            barrier_timeout=dict(type="float", default=600.0),
        ),
        supports_check_mode=True,
    )
    if module.params["seconds"] < 1:
        module.fail_json(msg="seconds must be 1 or more, got %d" % module.params["seconds"])
    state_dir = module.params["state_dir"]
    if not os.path.isabs(state_dir):
        module.fail_json(msg="state_dir must be an absolute path, got %s" % state_dir)
    if module.params["mode"] == "listen":
        result = run_listen(module, state_dir)
    elif module.params["mode"] == "send":
        result = run_send(module)
    else:
        result = run_stop(module, state_dir)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
