#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: bundle_part
short_description: Write one host's part of a capture bundle, or its context.yml, on the controller
version_added: 0.6.0
description:
  - Writes C(clients/<host>/), C(servers/<host>/) or C(context.yml) of a capture bundle (the format is
    C(docs/capture-bundle.md)) from what the statistics modules and the canary returned, in one call. The roles
    C(checkpoint_capture) and C(canary_validation) write their bundles with it; a playbook that gathers the same
    results can write a bundle M(ckptio.nfs.diagnose_bundle) reads.
  - What goes in each file is decided in Python, the same for both roles - the statistics files from the two reads
    that bracket the window, a client's C(figures.json), the records (C(canary.json), C(capture.json), C(probe.json)),
    host samples as one JSON line each, a client's raw sunrpc samples verbatim, C(context.yml) as block YAML in the document's key order.
  - Every file is replaced atomically with mode C(0644) (an existing file keeps its mode), never through a symbolic
    link, and only inside O(bundle); missing C(clients/<host>/) or C(servers/<host>/) directories are created. A file
    that already holds the same bytes is left alone.
  - Runs on the controller as an action; the host is not contacted.
author:
  - ckptio.nfs contributors (@ckptio)
options:
  bundle:
    description:
      - The bundle directory on the controller. It must exist.
    type: path
    required: true
  part:
    description:
      - V(clients) or V(servers), a host's part (O(host) required); V(context), the bundle's C(context.yml) (O(context)
        required, nothing else given).
    type: str
    required: true
    choices: [clients, servers, context]
  host:
    description:
      - The host's directory name in C(clients/) or C(servers/) (usually C(inventory_hostname)).
    type: str
  before:
    description:
      - The read at the window's start, a M(ckptio.nfs.nfs_client_stats) (clients) or M(ckptio.nfs.nfsd_stats)
        (servers) result. The statistics files are written when both O(before) and O(after) are given and neither was
        skipped.
    type: raw
  after:
    description:
      - The read at the window's end, as O(before).
    type: raw
  dstate_text:
    description:
      - A client's D-state samples (C(dstate.txt)); written when given, with or without the statistics files.
    type: str
  records:
    description:
      - The host's records by file key, C(canary) (C(canary.json)), C(capture) (C(capture.json)) or C(probe)
        (C(probe.json), iperf3's own output in C(probe_iperf3.json)), written after the statistics files.
    type: dict
  samples:
    description:
      - Host samples by file key, C(host_start) and C(host_end) (a server's samples at the canary's start and end), one
        JSON line each.
    type: dict
  context:
    description:
      - The bundle's context (C(docs/capture-bundle.md)), written as C(context.yml).
    type: dict
  rpc_samples:
    description:
      - A client's raw sunrpc samples, the M(ckptio.nfs.checkpoint_canary) result's C(rpc_samples) (clients only). Each
        of C(sunrpc_xprt), C(rpc_tasks), C(rpc_latency) that is a text becomes C(sunrpc_xprt.txt), C(rpc_tasks.txt),
        C(rpc_latency.txt), verbatim; null writes none.
    type: dict
extends_documentation_fragment:
  - ckptio.nfs.attributes
  - ckptio.nfs.attributes.action
attributes:
  action:
    support: full
    details: The files are written by an action plugin on the controller.
  check_mode:
    support: full
    details: Nothing is written; C(changed) and RV(written) say what would be.
  diff_mode:
    support: full
    details: Each file that changes (or would), before and after.
seealso:
  - module: ckptio.nfs.diagnose_bundle
"""

EXAMPLES = r"""
- name: Write this client's part of the bundle
  ckptio.nfs.bundle_part:
    bundle: /srv/reports/20261201T150000-baseline
    part: clients
    host: "{{ inventory_hostname }}"
    before: "{{ stats_before }}"
    after: "{{ stats_after }}"
    dstate_text: "{{ sampler.dstate_text | default(omit) }}"

- name: Write context.yml
  ckptio.nfs.bundle_part:
    bundle: /srv/reports/20261201T150000-baseline
    part: context
    context:
      label: baseline
      mount_point: /mnt/nfs
      source: capture
      target: {checkpoint_bytes: 2400000000000, window_seconds: 300.0}
  run_once: true
"""

RETURN = r"""
files:
  description: Every file of the part, in the order written.
  returned: success
  type: list
  elements: str
  sample: [/srv/reports/20261201T150000-baseline/clients/node1/mountstats_before.txt]
written:
  description: The files whose bytes changed (in check mode, would change).
  returned: success
  type: list
  elements: str
  sample: [/srv/reports/20261201T150000-baseline/clients/node1/mountstats_before.txt]
"""
