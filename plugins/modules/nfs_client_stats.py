#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nfs_client_stats
short_description: Read NFS client statistics, D-state tasks and sunrpc slot settings
version_added: 0.1.0
description:
  - Parses C(/proc/self/mountstats) for NFS mounts (options, age, events, bytes, every C(xprt:) line and every per-op line).
  - With C(nconnect=N) the kernel prints N C(xprt:) lines; their counters are summed in RV(mounts[].xprt_totals) and
    C(max_slots) is kept per connection.
  - Samples tasks in uninterruptible sleep (D state) with their C(wchan), and reads the live sunrpc and nfs slot settings.
  - Returns the raw text in the capture-bundle file formats (see C(docs/capture-bundle.md)) so a playbook can save it and
    M(ckptio.nfs.diagnose_bundle) can re-read it.
  - Read-only; never changes anything.
  - Mount points are bytes. A byte that is not UTF-8 (a mount at C(/data/caf\xe9) anywhere on the host) is shown in
    every result, RV(raw_mountstats) included, as the kernel's octal escape, a backslash and three octal digits
    (C(\351)); nothing else of the text changes. Lines the parser does not know are skipped, never fatal.
author:
  - ckptio.nfs contributors (@ckptio)
options:
  mount_points:
    description:
      - Only report these NFS mount points (unescaped absolute paths). Empty means every NFS mount.
      - A mount point that is not valid UTF-8 is given the way RV(mounts[].mount_point) shows it, each such byte as a
        backslash and three octal digits (C(/data/caf\351) for the byte 0xE9).
      - RV(raw_mountstats) always holds the whole file, as C(mountstats -f) expects.
    type: list
    elements: path
    default: []
  dstate_samples:
    description:
      - How many times to sample D-state tasks. V(0) skips sampling.
    type: int
    default: 1
  dstate_interval:
    description:
      - Seconds between D-state samples. Sample N is due O(dstate_interval) x N after the first, so the time a pass
        over C(/proc) takes shortens the next sleep instead of stretching the sampling.
    type: float
    default: 1.0
  dstate_stop_path:
    description:
      - Stop sampling as soon as this path exists on this host (checked before every sample, C(lstat) only); O(dstate_samples)
        is then the most samples taken. The capture of a real checkpoint (C(ckptio.nfs.capture)) passes the marker its
        checkpoint hook touches, so one call samples D state for the whole window and ends when the checkpoint does.
      - A path that exists already at the call takes no sample. Nothing is created, removed or opened.
    type: path
extends_documentation_fragment:
  - ckptio.nfs.attributes
attributes:
  check_mode:
    support: full
    details: The module only reads; check mode behaves exactly like a normal run.
  diff_mode:
    support: none
    details: Nothing is ever changed, so there is nothing to diff.
notes:
  - For NFSv4.1 and later the transport slot cap (C(tcp_max_slot_table_entries)) does not apply
    (the client sets C(NFS_CS_INFINITE_SLOTS)); the session slot count (nfs C(max_session_slots)) does.
seealso:
  - module: ckptio.nfs.nfsd_stats
  - module: ckptio.nfs.diagnose_bundle
"""

EXAMPLES = r"""
- name: Sample client statistics before the canary checkpoint
  ckptio.nfs.nfs_client_stats:
    mount_points: [/mnt/nfs]
    dstate_samples: 0
  register: before

- name: Save it in the capture-bundle format
  ansible.builtin.copy:
    content: "{{ before.raw_mountstats }}"
    dest: "{{ bundle }}/clients/{{ inventory_hostname }}/mountstats_before.txt"
    mode: "0644"
  delegate_to: localhost

- name: Show WRITE queue time per mount since mount
  ansible.builtin.debug:
    msg: "{{ item.mount_point }}: {{ item.ops.WRITE }}"
  loop: "{{ before.mounts }}"
"""

RETURN = r"""
mounts:
  description: One entry per NFS mount (filtered by O(mount_points)).
  returned: always
  type: list
  elements: dict
  contains:
    device:
      description: The export, for example C(10.0.0.1:/srv/nfs).
      type: str
    mount_point:
      description: Unescaped mount point; a byte that is not UTF-8 is shown as C(\ooo) (octal).
      type: str
    nfs_version:
      description: C(3), C(4.0), C(4.1) or C(4.2).
      type: str
    opts:
      description: Mount options from the C(opts:) line (negotiated rsize, wsize, nconnect...).
      type: dict
    age:
      description: Seconds since mount.
      type: int
    xprt:
      description: One dict per C(xprt:) line (tcp, udp or rdma counters by name).
      type: list
      elements: dict
    xprt_totals:
      description: Counters summed over all transports; C(max_slots) is a list, one per connection.
      type: dict
    ops:
      description: Per-op counters by op name (ops, transmissions, timeouts, bytes_sent, bytes_recv, queue_ms, rtt_ms,
        execute_ms, errors; errors is null before iostats 1.1).
      type: dict
    truncated:
      description: Null for a whole block; else why the block lacks lines the kernel always prints (a capture cut
        short, for example C(the WRITE line has 4 of 9 counters)).
      type: str
  sample: [{"mount_point": "/mnt/nfs", "nfs_version": "4.1", "xprt_totals": {"sends": 4527, "max_slots": [32]}}]
raw_mountstats:
  description: The whole C(/proc/self/mountstats) text, verbatim except that a byte that is not UTF-8 is shown as
    C(\ooo) (bundle file C(mountstats_*.txt)).
  returned: always
  type: str
dstate:
  description: The D-state samples taken, each C({epoch, count, wchans, tasks}).
  returned: always
  type: list
  elements: dict
dstate_text:
  description: The samples as bundle C(dstate.txt) lines (C(EPOCH COUNT wchan1,wchan2,...)).
  returned: always
  type: str
dstate_stop:
  description: With O(dstate_stop_path), C(path), C(seen) (whether it existed before the samples ran out) and C(seen_at)
    (this host's epoch when it was seen, null when not); null without O(dstate_stop_path).
  returned: always
  type: dict
  sample: {"path": "/dev/shm/ckpt-done", "seen": true, "seen_at": 1796137414.202}
sunrpc:
  description: Live values of C(/proc/sys/sunrpc/*) and the sunrpc and nfs module parameters (name to text).
  returned: always
  type: dict
  sample: {"tcp_slot_table_entries": "2", "tcp_max_slot_table_entries": "65536", "max_session_slots": "64"}
sunrpc_text:
  description: The same values as bundle C(sunrpc.txt) lines (C(name value)).
  returned: always
  type: str
missing_mount_points:
  description: Entries of O(mount_points) with no NFS mount (also reported as warnings).
  returned: always
  type: list
  elements: str
host_sample:
  description:
    - CPU, disk and network evidence of this host at the time of the call (bundle file C(host_before.json) /
      C(host_after.json), format in C(docs/capture-bundle.md)) - C(/proc/stat) cpu lines, C(/proc/diskstats), every
      interface's speed, MTU, state, members (C(lower_*)) and C(statistics/{tx,rx}_*) counters, the routing and
      address tables of C(/proc/net) (C(route), C(fib_trie), C(if_inet6), C(ipv6_route)), and the NFS server
      addresses of the selected mounts (mountinfo C(addr=)), and the TCP loss counters (C(tcp) - the C(Tcp:) lines of
      C(/proc/net/snmp) and the C(TcpExt:) lines of C(/proc/net/netstat)). No command is run.
    - A speed of -1 or an unreadable one (virtio, no carrier) is null (unknown), never 0. Reasons for missing parts
      (unreadable files) are listed in C(errors).
  returned: always
  type: dict
  sample: {"format": 1, "time": 1796025133.092, "nfs_server_addresses": ["10.0.0.1"],
           "interfaces": {"eth0": {"speed_mbps": 100000, "mtu": 9000, "kind": "physical", "lower": [],
                                   "statistics": {"tx_bytes": 123456789}}}}
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ckptio.nfs.plugins.module_utils.host import dstate_scan
from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.dstate import format_sample
from ansible_collections.ckptio.nfs.plugins.module_utils.host.host_reader import read_host_sample
from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import escape_path, nfs_mounts, nfs_server_of, parse_mountinfo
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import parse_mountstats
from ansible_collections.ckptio.nfs.plugins.module_utils.host.proc_text import json_safe, show_undecodable


def sample_dstate_series(host, count, interval, stop_path=None):
    """(samples, stop): up to count samples, one every interval seconds on a fixed schedule, ending
    early once stop_path exists; stop is {path, seen, seen_at} with a stop_path, else None."""
    samples = []
    stop = None if stop_path is None else {"path": stop_path, "seen": False, "seen_at": None}
    first = time.monotonic()
    for index in range(count):
        if index:
            time.sleep(max(0.0, first + index * interval - time.monotonic()))
        if stop is not None and os.path.lexists(stop_path):
            stop.update(seen=True, seen_at=round(time.time(), 3))
            break
        tasks = dstate_scan.scan(host.proc)[0]
        samples.append({"epoch": round(time.time(), 3), "count": len(tasks), "wchans": [task["wchan"] for task in tasks], "tasks": tasks})
    return samples, stop


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mount_points=dict(type="list", elements="path", default=[]),
            dstate_samples=dict(type="int", default=1),
            dstate_interval=dict(type="float", default=1.0),
            dstate_stop_path=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    if module.params["dstate_samples"] < 0:
        module.fail_json(msg="dstate_samples must be 0 or more, got %d" % module.params["dstate_samples"])
    if module.params["dstate_interval"] < 0:
        module.fail_json(msg="dstate_interval must be 0 or more, got %s" % module.params["dstate_interval"])
    stop_path = module.params["dstate_stop_path"]
    if stop_path is not None and not os.path.isabs(stop_path):
        module.fail_json(msg="dstate_stop_path must be an absolute path, got %r" % stop_path)
    relative = [path for path in module.params["mount_points"] if not os.path.isabs(path)]
    if relative:
        # The kernel lists mount points as absolute paths: a relative one can never match.
        module.fail_json(msg="mount_points: %s must be absolute path(s)" % ", ".join(repr(path) for path in relative))

    host = host_root.at_root()
    raw = host.read(host.mountstats)
    if raw is None:
        module.fail_json(msg="cannot read %s" % host.mountstats)
    wanted = set(module.params["mount_points"])
    # Parsed with every byte kept, shown with undecodable bytes escaped: a user gives back the form we show.
    mounts = [mount for mount in json_safe(parse_mountstats(raw)) if not wanted or mount["mount_point"] in wanted]
    missing = sorted(wanted - set(mount["mount_point"] for mount in mounts))

    samples, stop = sample_dstate_series(host, module.params["dstate_samples"], module.params["dstate_interval"], stop_path)
    dstate_text = "".join(format_sample(sample["epoch"], sample["wchans"]) + "\n" for sample in samples)

    settings, settings_text = host.read_sunrpc_settings()
    # The servers these mounts talk to (mountinfo addr=, numeric): their routes name the NFS links.
    selected = set(mount["mount_point"] for mount in mounts)
    servers = [nfs_server_of(mount) for mount in nfs_mounts(parse_mountinfo(host.read(host.mountinfo) or ""))
               if mount["mount_point"] in selected]
    host_sample = read_host_sample(host, servers)
    warnings = ["no NFS mount on %s (escaped: %s)" % (path, escape_path(path)) for path in missing]
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=False, mounts=mounts, raw_mountstats=show_undecodable(raw), dstate=json_safe(samples),
                     dstate_text=show_undecodable(dstate_text), dstate_stop=json_safe(stop), sunrpc=json_safe(settings),
                     sunrpc_text=show_undecodable(settings_text),
                     missing_mount_points=missing, host_sample=json_safe(host_sample))


if __name__ == "__main__":
    main()
