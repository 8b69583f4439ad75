#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: tcp_probe
short_description: Measure what the NFS path's TCP can carry with iperf3 (the sender)
version_added: 0.1.0
description:
  - The probe operators run by hand, made safe to run from a playbook. On the NFS server,
    M(ckptio.nfs.tcp_probe_listener) starts one-off C(iperf3 -s -1) listeners bound to the addresses the
    clients mount; on every client, this module sends for O(seconds) with as many parallel streams as
    the mount's C(nconnect), starting together at O(start_at) or at the controller's go (O(barrier_dir)).
  - Up to 0.2.0 this module also listened (C(mode=listen)) and stopped the listeners (C(mode=stop)); since 0.3.0
    that is M(ckptio.nfs.tcp_probe_listener) with O(ckptio.nfs.tcp_probe_listener#module:state=started) and
    O(ckptio.nfs.tcp_probe_listener#module:state=stopped).
  - The aggregate capacity at a server is the sum of RV(summary.received_bits_per_second) over the
    clients that sent in the same window.
  - Needs the C(iperf3) program (package C(iperf3) in Debian, Ubuntu and RHEL) and C(timeout)
    (coreutils). It never installs anything; the C(canary_validation) role does when
    C(canary_validation_probe_install=true).
author:
  - ckptio.nfs maintainers (@ckptio)
extends_documentation_fragment:
  - ckptio.nfs.attributes
  - ckptio.nfs.attributes.platform
attributes:
  check_mode:
    support: full
    details: Nothing is sent and no barrier file is written; the result says what would run (argv).
  diff_mode:
    support: none
  platform:
    platforms: linux
options:
  mode:
    description:
      - Only V(send) - kept so that send tasks written for 0.2.0 and before, when this module also listened, run unchanged.
    type: str
    choices: [send]
    default: send
  seconds:
    description: How long to send.
    type: int
    default: 10
  server:
    description:
      - The address to send to. Default - the C(addr=) the kernel shows for
        O(mount_point) in C(/proc/self/mountinfo) (the address the NFS client really talks to).
    type: str
  mount_point:
    description:
      - The NFS mount whose server and C(nconnect) the probe uses.
    type: path
  port:
    description: The server's listener port for this client.
    type: int
    default: 5201
  streams:
    description:
      - Parallel TCP streams (C(iperf3 -P)). 0 means the C(nconnect) of
        O(mount_point) (1 without it), so the probe uses as many connections as the NFS client does.
    type: int
    default: 0
  start_at:
    description:
      - Unix epoch (seconds, may have a fraction) to start at, so every client
        sends in the same window. Omitted means now; a time already past starts at once, with a warning.
      - It must be finite and within O(barrier_timeout) seconds of now (ahead or past); otherwise the module
        fails before anything runs.
      - Ignored with O(barrier_dir), where the controller's go decides.
    type: float
  barrier_dir:
    description:
      - The two-phase start the C(canary_validation) role uses (the canary's, see
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
seealso:
  - module: ckptio.nfs.tcp_probe_listener
  - name: iperf3
    description: The iperf3 manual (C(-J) JSON output).
    link: https://software.es.net/iperf/invoking.html
"""

EXAMPLES = r"""
- name: Send for 10 s with the mount's nconnect streams, all clients at once
  ckptio.nfs.tcp_probe:
    mount_point: /mnt/nfs
    port: 5201
    seconds: 10
    start_at: "{{ probe_start_at }}"
  register: probe
"""

RETURN = r"""
server:
  description: The address sent to.
  returned: always
  type: str
  sample: 10.0.0.1
port:
  description: The port sent to.
  returned: always
  type: int
streams:
  description: Parallel streams used.
  returned: always
  type: int
seconds:
  description: Seconds sent for (as asked).
  returned: always
  type: int
start_at:
  description: The epoch the send waited for (null when none was given; the go time with O(barrier_dir)).
  returned: always
  type: float
started_at:
  description:
    - This host's clock (Unix epoch, with a fraction) right before iperf3 started;
      the start to compare across clients (iperf3's own RV(summary.start_epoch) has whole seconds).
  returned: when not in check mode
  type: float
barrier:
  description:
    - With O(barrier_dir), C(ready_at), C(signal) (C(go) or C(abort)), C(go_at), C(go_late_seconds)
      and C(abort) (why), all on this host's clock.
  returned: when O(barrier_dir) is set and not in check mode
  type: dict
argv:
  description: The command run (or that would run in check mode).
  returned: always
  type: list
  elements: str
summary:
  description: iperf3's figures; a figure its output lacks is null.
  returned: when not in check mode
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
  description: iperf3's C(-J) output verbatim.
  returned: when not in check mode
  type: str
parsed:
  description: The same output parsed (null when iperf3 printed no JSON), for the capture bundle.
  returned: when not in check mode
  type: dict
rc:
  description: The exit status of C(timeout iperf3 ...) (124 when the time limit ended it).
  returned: when not in check mode
  type: int
"""

import json
import math
import os
import platform
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import barrier
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import probe
from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import nfs_mounts, nfs_server_of, parse_mountinfo
from ansible_collections.ckptio.nfs.plugins.module_utils.host import atomic_file
from ansible_collections.ckptio.nfs.plugins.module_utils.host import barrier_files
from ansible_collections.ckptio.nfs.plugins.module_utils.host.tcp_listeners import ProbeError, find_programs

PROC_MOUNTINFO = "/proc/self/mountinfo"


def mount_of(mount_point):
    """The topmost NFS mount on mount_point in /proc/self/mountinfo, or None."""
    found = None
    for mount in nfs_mounts(parse_mountinfo(atomic_file.read_optional(PROC_MOUNTINFO) or "")):
        if mount["mount_point"] == mount_point:
            found = mount
    return found


def option_error(params):
    """The first error of the port, streams, seconds and start options, or None."""
    if params["seconds"] < 1:
        return "seconds must be 1 or more, got %d" % params["seconds"]
    if not 1 <= params["port"] <= 65535:
        return "port must be 1..65535, got %d" % params["port"]
    if params["streams"] < 0 or params["streams"] > 128:
        # iperf3 refuses -P above 128 ("number of parallel streams too large (maximum = 128)", 3.12).
        return "streams must be 0 (the mount's nconnect) to 128, got %d" % params["streams"]
    if params["barrier_dir"] is not None and not os.path.isabs(params["barrier_dir"]):
        return "barrier_dir must be absolute, got %r" % params["barrier_dir"]
    if not math.isfinite(params["barrier_timeout"]) or params["barrier_timeout"] <= 0:
        return "barrier_timeout must be a finite number greater than 0, got %s" % params["barrier_timeout"]
    if params["start_at"] is not None and params["barrier_dir"] is None:
        # The same bound as a go file's: a start a year ahead would hold the play for a year.
        error = barrier.go_time_error(params["start_at"], time.time(), params["barrier_timeout"], "start_at")
        if error:
            return "%s (barrier_timeout=%s bounds it)" % (error, params["barrier_timeout"])
    return None


def target(params):
    """(server, streams): the options', else the mount's addr= and nconnect; ProbeError naming the option."""
    server, streams = params["server"], params["streams"]
    if params["mount_point"]:
        mount = mount_of(params["mount_point"].rstrip("/") or "/")
        if mount is None:
            raise ProbeError("mount_point %s is not an NFS mount on %s" % (params["mount_point"], platform.node()))
        server = server or nfs_server_of(mount)
        if not streams:
            try:
                streams = int(mount["options"].get("nconnect") or 1)
            except ValueError:
                streams = 1
    if not server:
        raise ProbeError("server or mount_point is required with mode=send")
    if not probe.is_host_name_or_address(server):
        # It becomes one argv word after -c: no shell, but a leading '-' or a space must not pass.
        raise ProbeError("server must be an IP address or a host name, got %r" % server)
    return server, streams or 1


def wait_for_go(module, directory, result, timeout):
    """ready.json, then the controller's go (this host's clock); None when the controller called it off."""
    error = barrier_files.prepare_dir(directory)
    if error:
        raise ProbeError(error, **dict((key, value) for key, value in result.items() if key != "msg"))
    go_at, info = barrier_files.wait_for_go(
        module, directory, barrier.ready_document(time.time(), os.getpid(), 1, directory), timeout)
    result["barrier"] = info
    if go_at is None:
        return None
    result["start_at"] = go_at
    return go_at


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
    summary = probe.summarize_iperf3(parsed)
    if parsed is None:
        # 124: timeout(1) ended iperf3 at its hard limit.
        summary["error"] = "iperf3 printed no JSON (exit %d%s): %s" % (
            rc, ", its time limit" if rc == 124 else "", (err or out or "").strip()[-500:])
    return dict(summary=summary, raw=out, parsed=parsed, rc=rc, started_at=round(started_at, 6))


def run(module):
    """The probe from this client: (result, failure message or None)."""
    params = module.params
    error = option_error(params)
    if error:
        raise ProbeError(error)
    server, streams = target(params)
    timeout, iperf3 = find_programs(module.get_bin_path)
    argv = probe.send_argv(timeout, iperf3, server, params["port"], streams, params["seconds"])
    result = dict(changed=False, server=server, port=params["port"], streams=streams, seconds=params["seconds"],
                  start_at=params["start_at"], argv=argv,
                  msg="would send %d stream(s) to %s:%d for %d s" % (streams, server, params["port"], params["seconds"]))
    if module.check_mode:
        return result, None
    directory = params["barrier_dir"]
    failure = None
    start_at = params["start_at"] if directory is None else wait_for_go(module, directory, result, params["barrier_timeout"])
    if directory is not None and start_at is None:
        failure = "probe aborted before sending: %s" % result["barrier"]["abort"]
    else:
        # With a barrier, barrier_files has already warned about a late go.
        result.update(send(module, argv, start_at, warn_late=directory is None))
        if result["summary"]["error"]:
            failure = "probe to %s:%d failed: %s" % (server, params["port"], result["summary"]["error"])
        else:
            result["msg"] = "%.3g Gbit/s received by %s:%d" % (result["summary"]["received_bits_per_second"] / 1e9,
                                                               server, params["port"])
    if directory is not None:
        # done.json: the role waits on it instead of polling.
        barrier_files.write_done(module, directory, failure is not None)
    return result, failure


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", default="send", choices=["send"]),
            seconds=dict(type="int", default=10),
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
    try:
        result, failure = run(module)
    except ProbeError as exc:
        result, failure = dict(exc.result), str(exc)
    if failure is not None:
        result["msg"] = failure
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
