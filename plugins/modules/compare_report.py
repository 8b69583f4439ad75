#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: compare_report
short_description: Put several checkpoint architectures' validation bundles side by side
version_added: 0.4.0
description:
  - Reads one capture bundle per option (each written by a C(ckptio.nfs.canary_validation) run, as the
    C(ckptio.nfs.compare_architectures) playbook makes them) and its C(diagnosis.json), and writes
    C(compare.md), C(compare.json) and C(compare.png) into O(output_dir).
  - Per option - the write throughput both ways of counting, named (ours, all bytes over latest end minus
    earliest start over every rank of every host; and the figure MLPerf Storage publishes, computed as DLIO's code
    does, the checkpoint's size over rank 0's own duration, averaged over the checkpoints, in GiB/s), the seconds
    the optimizer blocks, the drain's seconds (burst buffer), the restore throughput, the metadata ops of the op
    mix (CREATE/OPEN, SETATTR, RENAME, GETATTR, COMMIT from the clients' mountstats deltas), the limiting layer
    and verdict of its diagnosis, and the verdict against the target.
  - Options are ranked against the target; the first option is the reference, and an option whose total bytes
    differ from it is flagged and not ranked with the others. A figure a run does not have is V(unmeasured); one
    from counters reset between the samples is called distorted and carries no verdict.
  - The picture needs matplotlib on the controller; without it the Markdown and JSON are still written.
  - Runs on the controller (use C(delegate_to) V(localhost)).
author:
  - ckptio.nfs maintainers (@ckptio)
requirements:
  - PyYAML (to read C(context.yml))
  - matplotlib (optional, for C(compare.png))
extends_documentation_fragment:
  - ckptio.nfs.attributes
  - ckptio.nfs.attributes.platform
attributes:
  check_mode:
    support: full
    details: Computes the comparison and says which files would change; writes nothing.
  diff_mode:
    support: full
    details: Shows the old and new C(compare.md).
  platform:
    platforms: posix
options:
  options:
    description:
      - The options compared, in the order run; the first is the reference for the total bytes.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: The option's name in the table.
        type: str
        required: true
      bundle:
        description: The option's bundle directory (absolute).
        type: path
        required: true
      shape:
        description: The canary shape the option ran (default the bundle's C(canary.layout)).
        type: str
      paths:
        description: The NFS mount points the ranks wrote to (default the bundle's C(mount_point)).
        type: list
        elements: str
      local_path:
        description: The node-local path the ranks wrote to before the drain; unset for direct writes.
        type: str
  output_dir:
    description: Where to write C(compare.md), C(compare.json) and C(compare.png); created (mode 0755) when missing.
    type: path
    required: true
  png:
    description: Draw C(compare.png) when matplotlib is importable.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Compare the shared file with file per rank
  ckptio.nfs.compare_report:
    options:
      - {name: shared_file, bundle: /srv/reports/20260101T120000-shared_file, shape: shared_file}
      - {name: file_per_rank, bundle: /srv/reports/20260101T121500-file_per_rank, shape: file_per_rank}
    output_dir: /srv/reports/compare-20260101
  delegate_to: localhost
"""

RETURN = r"""
conclusion:
  description: Which measured option meets the target, or that none did (or that no target was given).
  returned: always
  type: str
rearchitect_answers:
  description:
    - For each option whose own diagnosis says re-architect - C(option), C(meets) (the measured options that meet the
      target) and C(text) (which they are, or that none met it and what to measure next).
  returned: always
  type: list
  elements: dict
options:
  description:
    - One row per option, ranked - C(name), C(rank) (null when not ranked), C(verdict), C(flag), C(throughput)
      (C(ours), C(mlperf_published), C(published_over_ours)), C(blocking_seconds), C(drain_seconds), C(restore),
      C(restore_published) (MLPerf's figure over the read), C(restore_cache_flag) (why a cache could serve the read, or null),
      C(metadata_ops), C(limiting_layer), C(diagnosis_verdict), C(judged); every figure is C({value, rests_on}).
    - C(error) - a failed option's error (each host's canary message), else null; it is reported, never ranked.
  returned: always
  type: list
  elements: dict
files:
  description: The files written (in check mode those that would be).
  returned: always
  type: list
  elements: str
msg:
  description: What was written.
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.ckptio.nfs.plugins.module_utils.compare import figure as compare_figure
from ansible_collections.ckptio.nfs.plugins.module_utils.compare import option, ranking
from ansible_collections.ckptio.nfs.plugins.module_utils.host import bundle_reader, file_write
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle as bundle_files
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle_values
from ansible_collections.ckptio.nfs.plugins.module_utils.report import report_figure
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.stats_delta import mountstats_delta


def option_row(spec):
    """One option's row from its bundle (the one bundle reader) and diagnosis.json."""
    loaded = bundle_reader.load_bundle(spec["bundle"])
    context = loaded["context"]
    paths = spec.get("paths") or context.get("paths") or ([context["mount_point"]] if context.get("mount_point") else None)
    deltas = []
    for files in loaded["clients"].values():
        if "mountstats_after" in files and "mountstats_before" in files:
            deltas.extend(mountstats_delta(files["mountstats_after"].splitlines(), files["mountstats_before"].splitlines(),
                                           mount_points=paths))
    canaries = dict((host, files["canary"]) for host, files in loaded["clients"].items() if isinstance(files.get("canary"), dict))
    return option.option_row(spec["name"], spec, context, bundle_reader.saved_diagnosis(spec["bundle"]),
                             bundle_files.canary_ranks(loaded), deltas, canaries)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            options=dict(type="list", elements="dict", required=True, options=dict(
                name=dict(type="str", required=True), bundle=dict(type="path", required=True), shape=dict(type="str"),
                paths=dict(type="list", elements="str"), local_path=dict(type="str"))),
            output_dir=dict(type="path", required=True),
            png=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    if not bundle_files.HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML"))
    specs, output_dir = module.params["options"], module.params["output_dir"]
    if not specs:
        module.fail_json(msg="options: give at least one option ({name, bundle})")
    names = [spec["name"] for spec in specs]
    if len(set(names)) != len(names):
        module.fail_json(msg="options: each name once (got %s)" % ", ".join(names))
    for spec in specs:
        if not os.path.isfile(os.path.join(spec["bundle"], bundle_files.CONTEXT_FILE)):
            module.fail_json(msg="options: %s's bundle %s has no context.yml: not a capture bundle" % (spec["name"], spec["bundle"]))
    try:
        document = ranking.compare([option_row(spec) for spec in specs])
        payload = bundle_values.dump_json(document, "compare.json", indent=2, sort_keys=True) + "\n"
    except bundle_values.BundleError as exc:
        module.fail_json(msg="options: cannot read a bundle: %s" % exc)
    png = report_figure.draw_png(document, compare_figure.draw_figure) if module.params["png"] else None
    markdown = ranking.render_markdown(document, figure_note="![compare](compare.png)" if png is not None else None)
    md_path = os.path.join(output_dir, "compare.md")
    outputs = [(md_path, markdown.encode()), (os.path.join(output_dir, "compare.json"), payload.encode())]
    if png is not None:
        outputs.append((os.path.join(output_dir, "compare.png"), png))
    written = file_write.write_outputs(module, outputs, make_parent=True)
    files = [path for path, _content in outputs]
    msg = "%s %s in %s" % ("would write" if module.check_mode else "wrote", ", ".join(os.path.basename(path) for path in files), output_dir)
    if png is None and module.params["png"]:
        msg += "; compare.png not drawn: matplotlib is not importable on the controller"
    result = {"changed": any(row["changed"] for row in written), "conclusion": document["conclusion"],
              "rearchitect_answers": document["rearchitect_answers"], "options": document["options"], "files": files,
              "msg": msg}
    if module._diff:
        result["diff"] = [{"before": written[0]["before"] or "", "after": markdown, "before_header": md_path, "after_header": md_path}]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
