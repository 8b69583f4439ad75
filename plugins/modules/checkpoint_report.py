#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: checkpoint_report
short_description: Write report.md, report.json and report.png for a checkpoint validation bundle
version_added: 0.1.0
description:
  - Reads a capture bundle (format in C(docs/capture-bundle.md)) written by C(playbooks/validate-checkpoint.yml),
    its C(diagnosis.json) (or runs the diagnosis itself when that file is missing), the per-op deltas of every
    client, and the per-rank canary results in C(clients/<host>/canary.json).
  - Writes C(report.md) (tables), C(report.json) (every number) and C(report.png) into the bundle. The picture
    has four panels on their own scales - throughput of each run against the target line; WRITE and COMMIT
    time split into queue, RTT and the rest of the execution time; the metadata ops; the ranks per host on
    the controller's clock with the start spread shaded.
  - From 64 canary hosts on, C(report.md) summarises the hosts (throughput distribution, slowest hosts,
    outliers); C(report.json) keeps every host's row.
  - With O(compare_to) an earlier bundle, adds before/after rows with ratios - throughput, duration against the
    window, WRITE/COMMIT RTT, exe and queue, backlog per send, max_slots against the cap, D-state peak, server
    threads and sockets-enqueued - and names the limiting layer before and after.
  - The picture needs matplotlib on the controller; without it the Markdown and JSON are still written and the
    message says how to get the picture.
  - Runs on the controller (use C(delegate_to) V(localhost)).
author:
  - ckptio.nfs maintainers (@ckptio)
requirements:
  - PyYAML (to read C(context.yml))
  - matplotlib (optional, for C(report.png))
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: Computes the report and says which files would change; writes nothing.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
    details: Shows the old and new C(report.md).
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
    platforms: posix
options:
  bundle:
    description:
      - The capture bundle directory of this run.
      - A relative path is taken from the module's working directory. Under C(delegate_to) V(localhost)
        (the local connection) that is the playbook's directory, not where C(ansible-playbook) was started.
        Pass an absolute path; the C(ansible.builtin.realpath) filter, as in the examples, resolves a path
        relative to where C(ansible-playbook) was started.
    type: path
    required: true
  compare_to:
    description:
      - An earlier bundle (for example the baseline) to compare with.
      - Relative paths as for O(bundle).
    type: path
  label:
    description: Name of this run in the report; default C(label) from C(context.yml), else the directory name.
    type: str
  png:
    description: Draw C(report.png) when matplotlib is importable.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Report on the tuned run, compared with the baseline
  ckptio.nfs.checkpoint_report:
    # realpath resolves on the controller, from where ansible-playbook was started; a bare relative
    # path would be taken from the playbook's directory (the local connection's working directory).
    bundle: "{{ 'reports/20260101T120000-tuned' | ansible.builtin.realpath }}"
    compare_to: "{{ 'reports/20260101T110000-baseline' | ansible.builtin.realpath }}"
  delegate_to: localhost

- name: Report from a bundle under the playbook's directory, no picture
  ckptio.nfs.checkpoint_report:
    bundle: "{{ playbook_dir }}/reports/20260101T120000-tuned"
    png: false
  delegate_to: localhost
"""

RETURN = r"""
metrics:
  description:
    - Headline numbers of this bundle (throughput, target, duration, per-op latency, slots, D-state, server).
    - C(restore_bytes_per_second) and C(restore) (C(aggregate) over the reads by the write's rule, C(restore_cache),
      C(guarantee), C(verify_error_count), C(skipped), C(target_window_seconds), C(target_bytes_per_second) - null
      without a restore target -, C(meets_target), C(read_spans)); both null without a read phase.
  returned: always
  type: dict
baseline:
  description: The same numbers for O(compare_to).
  returned: when O(compare_to) is set
  type: dict
comparison:
  description:
    - Rows C({metric, unit, before, after, ratio, better, improved}).
    - A C(restore throughput) row when either bundle read back; C(missing) true and C(warning) naming the side without one.
  returned: always
  type: list
  elements: dict
files:
  description: Paths of the report files that exist after the run.
  returned: always
  type: list
  elements: str
png_written:
  description: Whether C(report.png) was drawn.
  returned: always
  type: bool
msg:
  description: One line saying what was written (in check mode what would be written), and how to get the
    picture when matplotlib is missing.
  returned: always
  type: str
console_lines:
  description:
    - What a play prints at the end, one line each - the diagnosis summary, the canary (ranks, clients, bytes,
      seconds, start spread), the restore when the bundle has one, the bundle path, RV(msg), then one
      C(metric | before | after | after/before) line per RV(comparison) row.
  returned: always
  type: list
  elements: str
  sample: ["tune: achieved 2.05 MB/s of 13.4 MB/s target ...", "canary: 8 ranks on 2 clients, 134217728 bytes in 65.3 s, ..."]
"""

import os
import sys

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.ckptio.nfs.plugins.module_utils.host import atomic_file
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import bundle as bundle_files
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import bundle_values
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import diagnosis as diagnosis_utils
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import report
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import report_figure
from ansible_collections.ckptio.nfs.plugins.module_utils.stats.stats_delta import mountstats_delta

PNG_HINT = ("report.png was not drawn: matplotlib is not importable by %s. Install it there "
            "(pip install matplotlib, or pip install -r requirements.txt from the installed collection) and run again.")


def load_bundle(path):
    """The bundle in diagnosis.py's in-memory shape, plus canary ranks and diagnosis.json."""
    loaded = bundle_files.load_bundle(path)
    return loaded, bundle_files.canary_ranks(loaded), bundle_files.saved_diagnosis(path)


def bundle_metrics(path, label, warnings):
    if not os.path.isfile(os.path.join(path, "context.yml")):
        raise ValueError("%s has no context.yml: not a capture bundle" % path)
    loaded, ranks, diagnosis = load_bundle(path)
    context = loaded["context"]
    if diagnosis is None:
        try:
            diagnosis = diagnosis_utils.diagnose(loaded)
        except (ValueError, KeyError, TypeError, ZeroDivisionError) as exc:
            warnings.append("no diagnosis for %s: %s" % (path, exc))
    deltas = []
    mount_point = context.get("mount_point")
    for files in loaded["clients"].values():
        if "mountstats_after" in files:
            deltas.extend(mountstats_delta(files["mountstats_after"].splitlines(),
                                           files["mountstats_before"].splitlines() if "mountstats_before" in files else None,
                                           mount_points=[mount_point] if mount_point else None))
    run_label = label or context.get("label") or os.path.basename(os.path.normpath(path))
    return report.bundle_metrics(context, diagnosis, deltas, ranks if ranks else None, run_label,
                                 bundle_files.canary_harness(loaded))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            bundle=dict(type="path", required=True),
            compare_to=dict(type="path"),
            label=dict(type="str"),
            png=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    if not bundle_files.HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML"))
    bundle = module.params["bundle"]
    compare_to = module.params["compare_to"]
    warnings = []
    for option in ("bundle", "compare_to"):
        value = module.params[option]
        if value is not None and not os.path.isdir(value):
            module.fail_json(msg="%s %s is not a directory" % (option, value))
    try:
        metrics = bundle_metrics(bundle, module.params["label"], warnings)
        baseline = bundle_metrics(compare_to, None, warnings) if compare_to else None
    except ValueError as exc:
        module.fail_json(msg="cannot read bundle: %s" % exc)

    rows = report.comparison_rows(baseline, metrics) if baseline else []
    series = report.figure_series(metrics, baseline)
    png = report_figure.draw_png(series) if module.params["png"] else None
    note = None
    if png is None and module.params["png"]:
        note = PNG_HINT % sys.executable
    markdown = report.render_markdown(metrics, baseline, rows, figure_note=None if png is None else "![report](report.png)")
    document = {"metrics": metrics, "baseline": baseline, "comparison": rows, "figure": series}
    try:
        payload = bundle_values.dump_json(document, "report.json", indent=2, sort_keys=True, default=str) + "\n"
    except bundle_values.BundleError as exc:
        module.fail_json(msg="bundle %s: %s" % (bundle, exc))

    md_path = os.path.join(bundle, "report.md")
    old_markdown = atomic_file.read_optional(md_path)
    changed = atomic_file.write_if_changed(module, md_path, markdown.encode())
    changed = atomic_file.write_if_changed(module, os.path.join(bundle, "report.json"), payload.encode()) or changed
    if png is not None:
        changed = atomic_file.write_if_changed(module, os.path.join(bundle, "report.png"), png) or changed
    files = [os.path.join(bundle, name) for name in ("report.md", "report.json", "report.png")
             if os.path.exists(os.path.join(bundle, name))]
    msg = "%s report.md, report.json%s in %s" % ("would write" if module.check_mode else "wrote",
                                                 ", report.png" if png is not None else "", bundle)
    if note:
        msg += ". " + note
    for warning in warnings:
        module.warn(warning)
    result = {"changed": changed, "metrics": metrics, "comparison": rows, "files": files,
              "png_written": png is not None, "msg": msg,
              "console_lines": report.console_lines(metrics, rows, bundle, msg)}
    if baseline is not None:
        result["baseline"] = baseline
    if module._diff:
        result["diff"] = [{"before": old_markdown or "", "after": markdown,
                           "before_header": md_path, "after_header": md_path}]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
