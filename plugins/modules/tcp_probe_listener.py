#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: tcp_probe_listener
short_description: One-off iperf3 listeners on an NFS server for the TCP probe
version_added: 0.3.0
description:
  - The server side of the TCP probe (M(ckptio.nfs.tcp_probe) is the client side). O(state=started)
    starts one-off C(iperf3 -s -1) listeners bound to the addresses the clients mount, one per port in
    O(ports), records them in O(state_dir) and waits until each one listens; O(state=stopped) stops every
    listener recorded there and checks that nothing listens any more.
  - Every listener runs under C(timeout), so it dies by itself after the O(seconds) hard limit even
    when nobody ever stops it (the controller was interrupted, a client never connected).
  - Needs the C(iperf3) program (package C(iperf3) in Debian, Ubuntu and RHEL) and C(timeout)
    (coreutils). It never installs anything; the C(canary_validation) role does when
    C(canary_validation_probe_install=true).
  - Up to 0.2.0 this was M(ckptio.nfs.tcp_probe) with C(mode=listen) and C(mode=stop).
author:
  - ckptio.nfs maintainers (@ckptio)
extends_documentation_fragment:
  - ckptio.nfs.attributes
  - ckptio.nfs.attributes.platform
attributes:
  check_mode:
    support: full
    details: Nothing is started or killed; the result says what would be (listeners, pids).
  diff_mode:
    support: none
  platform:
    platforms: linux
options:
  state:
    description:
      - V(started) - start one listener per address in O(addresses) that is local to this host and per port
        in O(ports), record them in O(state_dir) and wait until each one listens.
      - V(stopped) - stop every listener recorded in O(state_dir) and remove the records.
    type: str
    required: true
    choices: [started, stopped]
  addresses:
    description:
      - With O(state=started), IP addresses the clients mount (the C(addr=) of their NFS mounts). A
        listener is bound to each one that is local to this host; the module fails, naming the list,
        when none is.
    type: list
    elements: str
    default: []
  ports:
    description:
      - With O(state=started), TCP ports to listen on, one per client (iperf3 serves one test at a time).
        A port already listening on one of the addresses, or on the wildcard address, is refused.
    type: list
    elements: int
    default: []
  seconds:
    description:
      - The hard limit - every listener ends by itself after this many seconds (SIGTERM, SIGKILL 5 s later).
        Give it the sending time plus the time until the senders start.
    type: int
    default: 10
  state_dir:
    description:
      - Directory (mode 0700) holding one record and one log per listener, for O(state=stopped).
      - It must be a real directory (not a symbolic link) owned by the user the module runs as, with no
        group or other write permission, in parents only root or that user can change; anything else is
        refused, naming this option. O(state=stopped) signals only processes its records prove it started
        (the pid's start time and executable, recorded at start, and the exact command line).
    type: path
    default: /run/ckptio-tcp-probe
notes:
  - The locality of an address is tested by binding a socket to it. With C(net.ipv4.ip_nonlocal_bind=1)
    every address binds, so a wrong address is only found when the clients cannot connect.
seealso:
  - module: ckptio.nfs.tcp_probe
  - name: iperf3
    description: The iperf3 manual (C(-1) one-off server).
    link: https://software.es.net/iperf/invoking.html
"""

EXAMPLES = r"""
- name: Listen on the address the clients mount, one port per client
  ckptio.nfs.tcp_probe_listener:
    state: started
    addresses: [10.0.0.1]
    ports: [5201, 5202]
    seconds: 120

- name: Stop every listener (also after a failed send)
  ckptio.nfs.tcp_probe_listener:
    state: stopped
"""

RETURN = r"""
listeners:
  description: With O(state=started), the listeners started (pid null in check mode).
  returned: state is started
  type: list
  elements: dict
  sample: [{address: 10.0.0.1, port: 5201, pid: 4711}]
not_local:
  description: With O(state=started), entries of O(addresses) that are not addresses of this host.
  returned: state is started
  type: list
  elements: str
state_dir:
  description: With O(state=started), the directory holding the records.
  returned: state is started
  type: str
stopped:
  description:
    - With O(state=stopped), each recorded listener with the pids signalled and the signal that ended them.
    - C(left_alone) lists the processes of the listener's process group that were not signalled because
      they could not be proven ours, and why.
  returned: state is stopped
  type: list
  elements: dict
  sample: [{address: 10.0.0.1, port: 5201, pids: [4711, 4712], signal: SIGTERM, log: "", left_alone: []}]
"""

import os
import platform

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import probe
from ansible_collections.ckptio.nfs.plugins.module_utils.host import tcp_listeners
from ansible_collections.ckptio.nfs.plugins.module_utils.host.tcp_listeners import ProbeError, check_state_dir

PROC = "/proc"
PROC_NET_TCP = ("/proc/net/tcp", "/proc/net/tcp6")


def local_addresses(addresses):
    """(the canonical addresses local to this host, those that are not); ProbeError naming addresses."""
    canonical = []
    for address in addresses:
        try:
            value = probe.canonical_address(address)
        except ValueError:
            raise ProbeError("addresses: %r is not an IP address" % address)
        if value not in canonical:
            canonical.append(value)
    local = []
    for address in canonical:
        try:
            if tcp_listeners.is_local_address(address):
                local.append(address)
        except OSError as exc:
            raise ProbeError("addresses: cannot bind to %s to test it: %s" % (address, exc.strerror or exc))
    if not local:
        raise ProbeError("none of addresses %s is an address of %s" % (", ".join(canonical), platform.node()))
    return local, [address for address in canonical if address not in local]


def start(module, host, state_dir):
    params = module.params
    if not params["addresses"]:
        raise ProbeError("addresses: give the addresses the clients mount (mode=listen)")
    if not params["ports"]:
        raise ProbeError("ports: give one port per client (mode=listen)")
    if any(not 1 <= port <= 65535 for port in params["ports"]) or len(set(params["ports"])) != len(params["ports"]):
        raise ProbeError("ports must be distinct numbers 1..65535, got %s" % params["ports"])
    local, not_local = local_addresses(params["addresses"])
    timeout, iperf3 = tcp_listeners.find_programs(module.get_bin_path)
    if os.path.lexists(state_dir):
        check_state_dir(state_dir)
    conflicts = probe.port_conflicts(host.listening_now(), local, params["ports"])
    if conflicts:
        recorded = set((record["address"], record["port"]) for _n, record in tcp_listeners.read_records(state_dir) if record)
        raise ProbeError("ports already in use on %s: %s%s" % (
            platform.node(), ", ".join("%s:%d" % pair for pair in conflicts),
            " (a probe recorded in %s is still there: run state=stopped)" % state_dir if recorded & set(conflicts) else ""))
    planned = [(address, port) for address in local for port in params["ports"]]
    argvs = [(pair, probe.listen_argv(timeout, iperf3, pair[0], pair[1], params["seconds"])) for pair in planned]
    listeners = [{"address": address, "port": port, "pid": None} for address, port in planned]
    if not module.check_mode:
        listeners = tcp_listeners.start_listeners(module, host, state_dir, argvs)
    return dict(changed=True, not_local=not_local, state_dir=state_dir, listeners=listeners,
                msg="%s %d listener(s), each ends by itself after %d s" % (
                    "would start" if module.check_mode else "started", len(planned), params["seconds"]))


def _left_alone_text(rows):
    """'; not signalled (not proven ours): ...' for the processes stop left alone, or ''."""
    alone = [reason for row in rows for reason in row.get("left_alone") or []]
    return "; not signalled (not proven ours): %s" % "; ".join(alone) if alone else ""


def stop(module, host, state_dir):
    if os.path.lexists(state_dir):
        check_state_dir(state_dir)
    records = tcp_listeners.read_records(state_dir)
    rows = tcp_listeners.recorded_rows(host, records)
    still = []
    if not module.check_mode:
        rows, still = tcp_listeners.stop_and_forget(module, host, state_dir, records)
    if still:
        raise ProbeError("still listening after stop: %s%s" % (", ".join("%s:%d" % pair for pair in still), _left_alone_text(rows)),
                         stopped=rows)
    return dict(changed=bool(records), stopped=rows,
                msg="%s %d listener(s), %s %d record(s) in %s%s" % (
                    "would stop" if module.check_mode else "stopped", sum(1 for row in rows if row["pids"]),
                    "would remove" if module.check_mode else "removed", len(records), state_dir, _left_alone_text(rows)))


def run(module):
    if module.params["seconds"] < 1:
        raise ProbeError("seconds must be 1 or more, got %d" % module.params["seconds"])
    state_dir = module.params["state_dir"]
    if not os.path.isabs(state_dir):
        raise ProbeError("state_dir must be an absolute path, got %s" % state_dir)
    host = tcp_listeners.Host(PROC, PROC_NET_TCP)
    if module.params["state"] == "started":
        return start(module, host, state_dir)
    return stop(module, host, state_dir)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", required=True, choices=["started", "stopped"]),
            addresses=dict(type="list", elements="str", default=[]),
            ports=dict(type="list", elements="int", default=[]),
            seconds=dict(type="int", default=10),
            state_dir=dict(type="path", default="/run/ckptio-tcp-probe"),
        ),
        supports_check_mode=True,
    )
    try:
        result = run(module)
    except ProbeError as exc:
        module.fail_json(msg=str(exc), **exc.result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
