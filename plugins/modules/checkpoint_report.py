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
  - Reads a capture bundle (format in C(docs/capture-bundle.md)) written by the C(ckptio.nfs.validate_checkpoint)
    or C(ckptio.nfs.capture) playbook, its C(diagnosis.json) (or runs the diagnosis itself when that file is
    missing), the per-op deltas of every client, and the per-rank canary results in C(clients/<host>/canary.json).
  - Writes C(report.md), C(report.json) (every number) and C(report.png) into O(output_dir), by default the
    bundle directory; never into a bundle directory that is read-only or inside an installed copy of this collection
    (the rule of M(ckptio.nfs.diagnose_bundle)'s O(ckptio.nfs.diagnose_bundle#module:output_dir)).
  - C(report.md) and RV(console_lines) lead with the diagnosis's first screen (C(diagnosis.json) C(headline) and
    C(first_screen)) - the verdict in words, achieved against target in GB/s or MB/s, the links' share of
    capacity, the confidence and why, the first three actions - within 25 lines of an 80-column terminal; then
    the before/after comparison, then the tables. A C(diagnosis.json) from before those keys gets the same
    lines built from its verdict, figures, network state, confidence and recommendations.
  - The picture is titled with the verdict in words. Its panels, each on its own scale - throughput of each run
    against the target line and the links' capacity line (when the diagnosis measured it); WRITE and COMMIT
    time split into queue, RTT and the rest of the execution time; the metadata ops; the ranks per host on
    the controller's clock with the start spread shaded, only when a bundle has canary ranks (a capture of a
    real job has none - three panels, its throughput axis says it rests on written bytes over the window).
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
extends_documentation_fragment:
  - ckptio.nfs.attributes
  - ckptio.nfs.attributes.platform
attributes:
  check_mode:
    support: full
    details: Computes the report and says which files would change; writes nothing.
  diff_mode:
    support: full
    details: Shows the old and new C(report.md).
  platform:
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
  output_dir:
    description:
      - Where to write the three files; an existing directory. C(diagnosis.json) is read
        from here first, then from the bundle.
      - Default the bundle directory, when it is writable and not inside an installed collection C(ckptio.nfs) (a path
        under C(ansible_collections/ckptio/nfs/), checked on the resolved path); otherwise O(fallback_output_dir).
    type: path
  fallback_output_dir:
    description:
      - Where to write when O(output_dir) is not set and the bundle directory is read-only (no write permission bit) or
        inside an installed collection C(ckptio.nfs); created (mode 0755) when missing, not in check mode.
      - Without it the module then fails, naming O(output_dir), before writing anything.
    type: path
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
    - C(headline) (verdict, verdict_text, achieved_text, target_text, links_text, link_share,
      link_capacity_bytes_per_second, confidence, confidence_reason, actions, rests_on) and C(first_screen) (at most 25
      lines of at most 80 columns) - the diagnosis's, or built from an older C(diagnosis.json) without them.
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
output_dir:
  description: The directory the report files were (in check mode would be) written to.
  returned: always
  type: str
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
    - What a play prints at the end, one line each - the verdict in words, achieved against target, the links'
      share of capacity, the confidence and its reason, up to three actions (the diagnosis's C(headline)), the
      canary (ranks, clients, bytes, seconds, start spread) or the capture, the restore when the bundle has one,
      the bundle path, RV(msg), then one line per RV(comparison) row with the metric and its unit, before, after
      and after/before.
  returned: always
  type: list
  elements: str
  sample: ["re-architect: tuning alone can give up to 3x ..., the gap is 7.3x; still tune: ...",
           "achieved 1.1 GB/s, target 8 GB/s (2.4 TB in 300 s)", "canary: 512 ranks on 64 clients, 137 GB in 125 s, ..."]
"""

import os
import sys

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_write
from ansible_collections.ckptio.nfs.plugins.module_utils.host import output_place
from ansible_collections.ckptio.nfs.plugins.module_utils.host import bundle_reader
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle as bundle_files
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle_values
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import diagnose
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import run as diagnosis_run
from ansible_collections.ckptio.nfs.plugins.module_utils.host import parallel_map
from ansible_collections.ckptio.nfs.plugins.module_utils.host.parallel_map import WorkerDied
from ansible_collections.ckptio.nfs.plugins.module_utils.report import report
from ansible_collections.ckptio.nfs.plugins.module_utils.report import report_figure

PNG_HINT = ("report.png was not drawn: matplotlib is not importable by %s. Install it there "
            "(pip install matplotlib, or pip install -r requirements.txt from the installed collection) and run again.")


def load_bundle(path, output_dir=None):
    """The bundle in the diagnosis's in-memory shape, plus diagnosis.json (from
    output_dir, where diagnose_bundle wrote it for a bundle it may not write into, else the bundle)."""
    loaded = bundle_reader.load_bundle(path)
    saved = None
    for directory in ([output_dir] if output_dir else []) + [path]:
        saved = bundle_reader.saved_diagnosis(directory)
        if saved is not None:
            break
    return loaded, saved


def bundle_metrics(path, label, warnings, output_dir=None):
    if not os.path.isfile(os.path.join(path, "context.yml")):
        raise ValueError("%s has no context.yml: not a capture bundle" % path)
    loaded, diagnosis = load_bundle(path, output_dir)
    context = loaded["context"]
    run = None
    try:
        # The bundle read once (diagnosis/run.py): the report's per-op figures are the diagnosis's own.
        run = diagnosis_run.read_run(loaded, parallel_map)
        if diagnosis is None:
            diagnosis = diagnose.diagnose_run(run)
    except WorkerDied as exc:
        # A forked reader killed (the OOM killer) or stuck, named with its chunk (host/parallel_map.py): the
        # bundle was not read, so there is no report of it - a failure naming both, never a traceback (issue 45).
        raise ValueError("bundle %s: %s" % (path, exc)) from exc
    except (ValueError, KeyError, TypeError, ZeroDivisionError) as exc:
        if diagnosis is None:
            warnings.append("no diagnosis for %s: %s" % (path, exc))
    ranks = diagnosis_run.canary_ranks(run) if run else bundle_files.canary_ranks(loaded)
    harness = diagnosis_run.canary_harness(run) if run else bundle_files.canary_harness(loaded)
    run_label = label or context.get("label") or os.path.basename(os.path.normpath(path))
    return report.bundle_metrics(context, diagnosis, run, ranks if ranks else None, run_label, harness)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            bundle=dict(type="path", required=True),
            compare_to=dict(type="path"),
            label=dict(type="str"),
            png=dict(type="bool", default=True),
            output_dir=dict(type="path"),
            fallback_output_dir=dict(type="path"),
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
    for option in ("output_dir", "fallback_output_dir"):
        value = module.params[option]
        # The user's output_dir must exist (a mistyped path fails); the caller's fallback is created.
        if value is not None and (os.path.exists(value) or option == "output_dir") and not os.path.isdir(value):
            module.fail_json(msg="%s: %s is not a directory" % (option, value))
    # Root ignores permission bits; a directory nobody may write is meant to stay as it is.
    writable = bool(os.stat(bundle).st_mode & 0o222) and os.access(bundle, os.W_OK)
    output_dir, why = output_place.choose(os.path.realpath(bundle), writable, module.params["output_dir"],
                                          module.params["fallback_output_dir"])
    if output_dir is None:
        module.fail_json(msg="report files not written: %s" % why)
    try:
        metrics = bundle_metrics(bundle, module.params["label"], warnings, output_dir)
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

    md_path = os.path.join(output_dir, "report.md")
    outputs = [(md_path, markdown.encode()), (os.path.join(output_dir, "report.json"), payload.encode())]
    if png is not None:
        outputs.append((os.path.join(output_dir, "report.png"), png))
    # Never through a link planted in the bundle: write_outputs refuses it, naming it.
    written = file_write.write_outputs(module, outputs, make_parent=True)
    changed = any(row["changed"] for row in written)
    old_markdown = written[0]["before"]
    files = [os.path.join(output_dir, name) for name in ("report.md", "report.json", "report.png")
             if os.path.exists(os.path.join(output_dir, name))]
    msg = "%s report.md, report.json%s in %s" % ("would write" if module.check_mode else "wrote",
                                                 ", report.png" if png is not None else "", output_dir)
    if output_dir != bundle:
        msg += " (%s)" % why
    if note:
        msg += ". " + note
    for warning in warnings:
        module.warn(warning)
    result = {"changed": changed, "metrics": metrics, "comparison": rows, "files": files, "output_dir": output_dir,
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
