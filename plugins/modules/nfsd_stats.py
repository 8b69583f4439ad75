#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nfsd_stats
short_description: Read NFS server (knfsd) statistics and thread settings
version_added: 0.1.0
description:
  - Parses C(/proc/net/rpc/nfsd) (rc, fh, io, th, net, rpc, proc3, proc4, proc4ops lines; unknown lines kept),
    C(/proc/fs/nfsd/threads), C(pool_threads), C(pool_stats) (columns taken from its header, they vary by kernel),
    C(max_block_size) and C(min_threads) where the kernel has it.
  - Returns the raw text in the capture-bundle file formats (see C(docs/capture-bundle.md)).
  - Read-only; never changes anything. On a host where nfsd is not running RV(available) is false.
  - The files are read as bytes; lines the parser does not know are kept or skipped, never fatal. A byte that is not
    UTF-8 is shown in the results, RV(raw_nfsd) and RV(raw_pool_stats) included, as a backslash and three octal
    digits (C(\377) for the byte 0xFF), as the kernel escapes paths.
author:
  - ckptio.nfs contributors (@ckptio)
options:
  wait_until:
    description:
      - An epoch (seconds, the host's clock) to wait for before reading, so the sample is taken at a chosen moment, for
        example the canary's O(ckptio.nfs.checkpoint_canary#module:start_at) when the call is launched asynchronously
        just before the ranks start. Nothing is read until then; a time in the past reads at once and warns.
      - At most C(MAX_WAIT_SECONDS) (3600) ahead.
    type: float
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
  - On kernel 6.1 C(sockets-enqueued) in C(pool_stats) always equals C(packets-arrived); the starvation signal is
    C(threads-woken) lagging C(packets-arrived) (measured). C(pool_stats) resets when nfsd restarts; the counters in
    C(/proc/net/rpc/nfsd) do not.
seealso:
  - module: ckptio.nfs.nfs_client_stats
  - module: ckptio.nfs.diagnose_bundle
"""

EXAMPLES = r"""
- name: Sample the server when the canary's ranks start (launched just before them)
  ckptio.nfs.nfsd_stats:
    wait_until: "{{ start_at }}"
  async: 600
  poll: 0
  register: server_at_start

- name: Sample server statistics before the canary checkpoint
  ckptio.nfs.nfsd_stats:
  register: nfsd_before

- name: Save them in the capture-bundle format
  ansible.builtin.copy:
    content: "{{ nfsd_before.raw_nfsd }}"
    dest: "{{ bundle }}/servers/{{ inventory_hostname }}/nfsd_before.txt"
    mode: "0644"
  delegate_to: localhost
"""

RETURN = r"""
available:
  description: Whether C(/proc/net/rpc/nfsd) exists (nfsd loaded and running).
  returned: always
  type: bool
nfsd:
  description: Parsed C(/proc/net/rpc/nfsd); C(io), C(rpc), C(net), C(rc), C(fh) by name, C(proc3)/C(proc4ops) by op name,
    C(threads) from the C(th) line.
  returned: always
  type: dict
  sample: {"io": {"bytes_read": 0, "bytes_written": 268435456}, "rpc": {"calls": 4527}, "proc4ops": {"WRITE": 4477}, "threads": 8}
pool_stats:
  description: Parsed C(pool_stats), C({columns, pools}); empty when the file is absent.
  returned: always
  type: dict
threads:
  description: The number in C(/proc/fs/nfsd/threads) (bundle file C(threads.txt)); null when absent.
  returned: always
  type: int
pool_threads:
  description: Threads per pool from C(/proc/fs/nfsd/pool_threads).
  returned: always
  type: list
  elements: int
max_block_size:
  description: C(/proc/fs/nfsd/max_block_size), the largest rsize/wsize clients can negotiate.
  returned: always
  type: int
min_threads:
  description: C(/proc/fs/nfsd/min_threads) on kernels with dynamic threads; null elsewhere.
  returned: always
  type: int
raw_nfsd:
  description: C(/proc/net/rpc/nfsd) verbatim (bundle files C(nfsd_before.txt)/C(nfsd_after.txt)); empty when absent.
  returned: always
  type: str
raw_pool_stats:
  description: C(/proc/fs/nfsd/pool_stats) verbatim (bundle files C(pool_stats_*.txt)); empty when absent.
  returned: always
  type: str
max_connections:
  description: C(/proc/fs/nfsd/max_connections) (0 = the kernel's default limit); null where the file is absent.
  returned: always
  type: int
host_sample:
  description:
    - CPU, disk and network evidence of this host at the time of the call (bundle file C(host_before.json) /
      C(host_after.json), format in C(docs/capture-bundle.md)) - C(/proc/stat) cpu lines, C(/proc/diskstats), every
      interface's speed, MTU, state, members, addresses and C(statistics/{tx,rx}_*) counters, and the TCP loss
      counters (C(tcp) - the C(Tcp:) lines of C(/proc/net/snmp) and the C(TcpExt:) lines of C(/proc/net/netstat)).
    - A speed of -1 or an unreadable one (virtio, no carrier) is null (unknown), never 0.
  returned: always
  type: dict
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root
from ansible_collections.ckptio.nfs.plugins.module_utils.host.host_reader import read_host_sample
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.nfsd_stats import (
    parse_nfsd_stats,
    parse_pool_stats,
    parse_pool_threads,
    parse_single_number,
)
from ansible_collections.ckptio.nfs.plugins.module_utils.host.proc_text import json_safe

MAX_WAIT_SECONDS = 3600


def main():
    module = AnsibleModule(argument_spec=dict(wait_until=dict(type="float")), supports_check_mode=True)
    wait_until = module.params["wait_until"]
    if wait_until is not None:
        delay = wait_until - time.time()
        if delay > MAX_WAIT_SECONDS:
            module.fail_json(msg="wait_until is %.0f s ahead: more than %d s" % (delay, MAX_WAIT_SECONDS))
        if delay < 0:
            module.warn("wait_until is %.1f s in the past: sampled late" % -delay)
        else:
            time.sleep(delay)
    host = host_root.at_root()
    raw_nfsd = host.read(host.nfsd_stats)
    raw_pool = host.read(host.nfsd_file("pool_stats"))
    threads = parse_single_number(host.read(host.nfsd_file("threads")))
    result = dict(
        changed=False,
        available=raw_nfsd is not None,
        nfsd=parse_nfsd_stats(raw_nfsd or ""),
        pool_stats=parse_pool_stats(raw_pool or ""),
        threads=threads,
        pool_threads=parse_pool_threads(host.read(host.nfsd_file("pool_threads"))),
        max_block_size=parse_single_number(host.read(host.nfsd_file("max_block_size"))),
        min_threads=parse_single_number(host.read(host.nfsd_file("min_threads"))),
        raw_nfsd=raw_nfsd or "",
        raw_pool_stats=raw_pool or "",
        max_connections=parse_single_number(host.read(host.nfsd_file("max_connections"))),
        # The server's side of the link evidence: the interfaces holding the addresses clients
        # mount are picked out later, against the clients' mountinfo addr= (diagnosis).
        host_sample=read_host_sample(host),
    )
    if raw_nfsd is None:
        module.warn("%s is absent: nfsd is not running on this host" % host.nfsd_stats)
    module.exit_json(**json_safe(result))


if __name__ == "__main__":
    main()
