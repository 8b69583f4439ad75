#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: diagnose_bundle
short_description: Diagnose which layer limits an NFS checkpoint from a capture bundle
version_added: 0.1.0
description:
  - Reads a capture bundle directory (C(context.yml), C(clients/<host>/...), C(servers/<host>/...); format in
    C(docs/capture-bundle.md)), computes before/after deltas with the nfs-utils definitions, measures the NFS links
    and CPUs from the host samples, and decides the limiting layer (C(network), C(server_cpu), C(client_rpc_slots),
    C(server_threads), C(server_storage), C(access_pattern), C(client_cpu) or C(none)), a verdict (C(meets_target),
    C(tune), C(rearchitect), C(no_target), C(no_window)), the evidence, what was not measured, and concrete recommendations.
  - Writes C(diagnosis.json) and C(diagnosis.md) (unless O(write=false)) into O(output_dir), by default the bundle
    directory; reports C(changed) only when their content changes, so a second run is idempotent.
  - Never writes into a bundle directory that is read-only or inside an installed copy of this collection (any path
    under C(ansible_collections/ckptio/nfs/), such as the shipped sample bundles; C(ansible-galaxy collection verify)
    would report the collection modified). Then the files go to O(fallback_output_dir), or, without one, nothing is
    written and a warning says so. RV(output_dir) and RV(msg) say where the files went.
  - Runs where the bundle is, normally the controller (a play with C(hosts) set to C(localhost)).
  - A client whose mountstats pair is not usable (a sample cut short, a counter that went backwards while C(age)
    rose, a mount missing from the before sample or remounted) is left out of every figure and named in
    RV(diagnosis.excluded_clients) and in the evidence (C(capture problem on HOST)); when no usable client is left the
    module fails naming each host and its problems.
  - A client's C(figures.json), which the roles write beside its files (what the diagnosis takes from them, worked out
    once), is read instead of its other files while every file it came from is unchanged (SHA-256) and it was made
    for the same mount point by the same rules; otherwise the files are read. The diagnosis is the same either way
    (C(docs/capture-bundle.md)).
  - Bundle files are read as bytes; lines the parsers do not know are skipped, never fatal. A byte that is not UTF-8
    (a mount point or host directory such as C(caf\xe9)) is shown in the results and in C(diagnosis.json) as a
    backslash and three octal digits (C(caf\351)), as the kernel escapes paths.
author:
  - ckptio.nfs contributors (@ckptio)
requirements:
  - PyYAML (to read C(context.yml))
options:
  bundle:
    description: The capture bundle directory.
    type: path
    required: true
  write:
    description:
      - Write C(diagnosis.json) and C(diagnosis.md). V(false) only returns the diagnosis.
    type: bool
    default: true
  output_dir:
    description:
      - Where to write the two files; an existing directory.
      - Default the bundle directory, when it is writable and not inside an installed collection C(ckptio.nfs) (a path
        under C(ansible_collections/ckptio/nfs/), checked on the resolved path); otherwise O(fallback_output_dir).
      - A bundle directory without any write permission bit (mode 0555) counts as read-only even for root. The sample
        bundles of an installed collection are not read-only, since C(ansible-galaxy collection build) stores directories
        0755 and files 0644; their path keeps them unwritten.
    type: path
  fallback_output_dir:
    description:
      - Where to write when O(output_dir) is not set and the bundle directory is not a place to write (read-only, or
        inside an installed collection C(ckptio.nfs)); created (mode 0755) when missing, not in check mode.
      - C(ckptio.nfs.diagnose) sets it to C(reports/<bundle name>-diagnosis) under the directory C(ansible-playbook)
        was started from. Without it nothing is written there and a warning names O(output_dir).
    type: path
extends_documentation_fragment:
  - ckptio.nfs.attributes
attributes:
  check_mode:
    support: full
    details: Computes and returns the diagnosis but writes no file.
  diff_mode:
    support: full
    details: Shows the old and new C(diagnosis.md).
seealso:
  - module: ckptio.nfs.nfs_client_stats
  - module: ckptio.nfs.nfsd_stats
"""

EXAMPLES = r"""
- name: Diagnose a bundle saved by the validation playbook
  ckptio.nfs.diagnose_bundle:
    bundle: /srv/bundles/run-42
  register: diagnosis
  delegate_to: localhost

- name: Say what limits the checkpoint
  ansible.builtin.debug:
    msg: "{{ diagnosis.diagnosis.summary }}"
"""

RETURN = r"""
diagnosis:
  description: The full diagnosis, the same content as C(diagnosis.json).
  returned: always
  type: dict
  contains:
    target_bytes_per_second:
      description: C(target.checkpoint_bytes / target.window_seconds).
      type: float
    achieved_bytes_per_second:
      description: Canary bytes over the slowest rank's seconds, or NFS WRITE bytes over the mount-age delta.
      type: float
    gap_factor:
      description: Target over achieved (null when nothing was written).
      type: float
    limiting_layer:
      description:
        - One of C(network), C(server_cpu), C(client_rpc_slots), C(server_threads), C(server_storage), C(access_pattern),
          C(client_cpu), C(none).
        - C(network) only with link evidence (a link measured near its nominal speed, the TCP probe, or link speeds in
          C(context.yml)); RTT inflation alone never names it.
      type: str
    unmeasured:
      description: Layers the bundle holds no evidence for (for example C(network) without interface speeds or the probe).
      type: list
      elements: str
    confidence:
      description: C(high), C(medium) or C(low), computed from which evidence exists; C(confidence_reasons) says why.
      type: str
    network:
      description: C(state) (C(full), C(clear), C(partial), C(unmeasured)), C(summary) (links at X % of capacity, measured
        how), C(probe_share) and one row per NFS interface.
      type: dict
    contributing:
      description: Other layers whose signals crossed a threshold.
      type: list
      elements: str
    why_not:
      description:
        - One row per layer that was measured and not named (neither limiting nor contributing), with the figure that
          rules it out, for example C(not the server's storage - its busiest disk was 0.6 % busy).
        - A layer that was not measured is in C(unmeasured), never here.
      type: list
      elements: dict
    scope:
      description:
        - C(kind) C(host) when the limiting layer's own evidence is confined to a minority of the clients that set the pace
          (their paths, a mount that missed the tuning, their CPUs), with C(hosts) and C(without_bytes_per_second) (what the
          checkpoint would reach if they ended with the other hosts); the verdict is then C(tune) (repair those hosts), never
          C(rearchitect).
        - C(kind) C(cluster) otherwise.
      type: dict
    verdict:
      description:
        - C(meets_target), C(tune), C(rearchitect), C(no_target) (context.yml gives no checkpoint size or window, or a
          capture's size taken from what it measured; every figure is reported, none is judged against a target) or
          C(no_window) (one mountstats snapshot, a since-mount average; no gap, no throughput verdict).
      type: str
    headline:
      description:
        - The first screen's content in words and human units, C({verdict, verdict_text, achieved_text, target_text,
          links_text, link_share, link_capacity_bytes_per_second, confidence, confidence_reason, actions, rests_on,
          limiting_text, snapshot_text}); C(actions) holds up to three, ordered by the limiting layer.
      type: dict
    first_screen:
      description: At most 25 lines of at most 80 characters that C(diagnosis.md), the report and the console lead with.
      type: list
      elements: str
    evidence:
      description: Every signal evaluated, C({layer, signal, value, threshold, crossed, explanation}).
      type: list
      elements: dict
    recommendations:
      description: Concrete settings or architecture changes, C({layer, setting, value, how, reason}).
      type: list
      elements: dict
    summary:
      description: One line verdict.
      type: str
    window:
      description:
        - For a bundle built from files saved by hand (M(ckptio.nfs.saved_stats_bundle)), C({kind, seconds, source}); C(kind)
          C(since_mount) means every client figure is an average over the mount's life, not a checkpoint window (the summary,
          the evidence and the confidence say so). Null for other bundles.
      type: dict
    excluded_clients:
      description: Clients left out of every figure because their capture is not usable, each C({host, mount_point,
        device, problems, problem_details}); C(problems) holds C(truncated), C(reset), C(new_mount),
        C(negative_time) (a per-op time the kernel printed from a negative value) and/or C(not_kernel_value) (a counter
        above 2^64, which no kernel prints).
      type: list
      elements: dict
    restore:
      description:
        - The restore (read-back) judged like the save, from context.yml's C(restore) block; null without one.
        - C(verdict) (C(meets_target), C(below_target), C(no_target) - no restore window given, none assumed -,
          C(failed_verification), C(unmeasured)), C(achieved_bytes_per_second) and C(achieved_source) (the write's rule over
          the reads), C(target_bytes_per_second), C(target_window_seconds), C(gap_factor), C(restore_cache), C(guarantee),
          C(verify_error_count), C(synchronized), C(skipped), C(ops) (C(READ) and C(WRITE) per op from the mountstats
          deltas; latencies null when the op was not seen), C(read_ops_note), C(summary).
      type: dict
    per_host_left_out:
      description:
        - Once C(diagnosis.json) is written (not in check mode), a bundle of more than 16 clients (or servers) returns
          without their entries in C(clients), C(servers), C(cpu), C(mounts), C(network.links), C(network.loss.hosts),
          C(network.loss.probe) and C(evidence), and with the lists of them in C(network.summary) cut to their first
          and last items; this many hosts are left out here and every one is in C(diagnosis.json). Null when nothing
          is left out.
      type: int
  sample: {"verdict": "tune", "limiting_layer": "client_rpc_slots", "gap_factor": 2.68}
files:
  description: The files written (or that would be written in check mode); empty when nothing is written.
  returned: always
  type: list
  elements: str
output_dir:
  description: The directory the files were (or in check mode would be) written to; null when nothing is written.
  returned: always
  type: str
msg:
  description: One line saying where the files went and why there (or why nothing was written).
  returned: always
  type: str
  sample: "wrote diagnosis.json and diagnosis.md in /home/me/reports/seed_like_baseline-diagnosis (the bundle directory is read-only)"
"""

import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_write
from ansible_collections.ckptio.nfs.plugins.module_utils.host import output_place as output_place_rule
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.host.gc_pause import paused_gc
from ansible_collections.ckptio.nfs.plugins.module_utils.host import parallel_map
from ansible_collections.ckptio.nfs.plugins.module_utils.host.parallel_map import WorkerDied
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle import HAS_YAML, BundleError
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle_values import dump_json
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.markdown import render_markdown
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.markdown import json_layout, returned_diagnosis
from ansible_collections.ckptio.nfs.plugins.module_utils.host.proc_text import json_safe_text, show_undecodable


def _diagnosis_json(result):
    return dump_json(result, "diagnosis.json", **json_layout(result))


def output_place(module, directory):
    """The directory the files go to (None: nothing written) and why, from the options and the bundle."""
    for option in ("output_dir", "fallback_output_dir"):
        value = module.params[option]
        # The user's output_dir must exist (a mistyped path fails); the caller's fallback is created.
        if value is not None and (os.path.exists(value) or option == "output_dir") and not os.path.isdir(value):
            module.fail_json(msg="%s: %s is not a directory" % (option, value))
    # Root ignores permission bits; a directory nobody may write is meant to stay as it is.
    writable = bool(os.stat(directory).st_mode & 0o222) and os.access(directory, os.W_OK)
    return output_place_rule.choose(os.path.realpath(directory), writable, module.params["output_dir"],
                                    module.params["fallback_output_dir"])


def main():
    module = AnsibleModule(
        argument_spec=dict(bundle=dict(type="path", required=True), write=dict(type="bool", default=True),
                           output_dir=dict(type="path"), fallback_output_dir=dict(type="path")),
        supports_check_mode=True,
    )
    if not HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML"))
    directory = module.params["bundle"]
    if not os.path.isdir(directory):
        module.fail_json(msg="bundle: %s is not a directory" % directory)
    output_dir, why = output_place(module, directory) if module.params["write"] else (None, "write is false")
    try:
        # Shown with undecodable bytes escaped, so diagnosis.json, .md and the result are valid UTF-8.
        # The collector paused while the result of thousands of hosts is built (host/gc_pause.py).
        with paused_gc():
            result, json_text = json_safe_text(diagnose(load_bundle(directory, stream=True), parallel_map), _diagnosis_json)
            markdown = render_markdown(result)
        json_text += "\n"
    except (BundleError, WorkerDied) as exc:
        # WorkerDied: a forked reader killed (the OOM killer) or stuck, named with its chunk (host/parallel_map.py).
        module.fail_json(msg=show_undecodable("bundle %s: %s" % (directory, exc)))

    changed = False
    diff = []
    files = []
    if output_dir is None:
        if module.params["write"]:
            module.warn("diagnosis files not written: %s" % why)
        msg = "diagnosis files not written: %s" % why
    else:
        json_path = os.path.join(output_dir, "diagnosis.json")
        md_path = os.path.join(output_dir, "diagnosis.md")
        # Never through a link planted in the bundle: write_outputs refuses it, naming it.
        written = file_write.write_outputs(module, [(json_path, json_text), (md_path, markdown)], make_parent=True)
        changed = any(row["changed"] for row in written)
        old_markdown = written[1]["before"]
        if module._diff and changed:
            diff.append({"before": old_markdown or "", "after": markdown, "before_header": md_path, "after_header": md_path})
        files = [json_path, md_path]
        msg = "%s diagnosis.json and diagnosis.md in %s (%s)" % ("would write" if module.check_mode else "wrote", output_dir, why)
    # Once diagnosis.json holds every host, a large bundle's per-host blocks are not returned too.
    output = dict(changed=changed, diagnosis=returned_diagnosis(result) if files and not module.check_mode else result,
                  files=files, output_dir=output_dir, msg=msg)
    if module._diff:
        output["diff"] = diff
    module.exit_json(**output)


if __name__ == "__main__":
    main()
