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
  description: Headline numbers of this bundle (throughput, target, duration, per-op latency, slots, D-state, server).
  returned: always
  type: dict
baseline:
  description: The same numbers for O(compare_to).
  returned: when O(compare_to) is set
  type: dict
comparison:
  description: Rows C({metric, unit, before, after, ratio, better, improved}).
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
"""

import json
import os
import sys

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.ckptio.nfs.plugins.module_utils.host import atomic_file
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import bundle as bundle_files
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import diagnosis as diagnosis_utils
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import report
from ansible_collections.ckptio.nfs.plugins.module_utils.stats.stats_delta import mountstats_delta

PNG_HINT = ("report.png was not drawn: matplotlib is not importable by %s. Install it there "
            "(pip install matplotlib, or pip install -r requirements.txt from the installed collection) and run again.")


def load_bundle(path):
    """The bundle in diagnosis.py's in-memory shape, plus canary ranks and diagnosis.json."""
    loaded = bundle_files.load_bundle(path)
    saved = atomic_file.read_optional(os.path.join(path, "diagnosis.json"))
    return loaded, bundle_files.canary_ranks(loaded), json.loads(saved) if saved else None


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


# Colours: the earlier run grey, this run blue, in every panel; the WRITE split keeps its own
# three (queue, RTT, rest) and the timeline its three phases.
RUN_COLOURS = ("#9e9e9e", "#1f77b4")
SPLIT_COLOURS = (("queue_ms", "queue (waiting for a slot)", "#ff7f0e"), ("rtt_ms", "RTT (wire + server)", "#2ca02c"),
                 ("other_ms", "rest of exe (client work)", "#c7c7c7"))
PHASE_COLOURS = (("first_start", "last_start", "ranks starting", "#ff7f0e"),
                 ("last_start", "first_end", "every rank writing", "#1f77b4"),
                 ("first_end", "last_end", "ranks finishing", "#aec7e8"))


def _wrap(label, width=20):
    """A bundle name on lines of at most width characters, broken after '_', '-' or '.' where it can."""
    lines, line = [], ""
    for part in label.replace("_", "_\0").replace("-", "-\0").replace(".", ".\0").split("\0"):
        if line and len(line) + len(part) > width:
            lines.append(line)
            line = ""
        while len(part) > width:
            lines.append(part[:width])
            part = part[width:]
        line += part
    return "\n".join(lines + [line] if line else lines)


def _ms(value):
    """ms and MB/s for a reader: 23,068 rather than 2.307e+04."""
    return "{:,.0f}".format(value) if value >= 100 else "%.3g" % value


def _run_colour(index, count):
    return RUN_COLOURS[1] if index == count - 1 else RUN_COLOURS[0]


def _draw_throughput(axes, series):
    runs = series["throughput"]
    target = series["target_mb_per_second"]
    values = [run["mb_per_second"] for run in runs]
    positions = list(range(len(runs)))[::-1]
    axes.barh(positions, values, color=[_run_colour(i, len(runs)) for i in range(len(runs))], height=0.5)
    axes.set_yticks(positions)
    axes.set_yticklabels([_wrap(run["label"]) for run in runs], fontsize=8)
    top = max(values + [target or 0]) or 1.0
    for position, run in zip(positions, runs):
        text = "%s MB/s" % _ms(run["mb_per_second"])
        if target:
            text += " = %.2fx target" % (run["mb_per_second"] / target)
        if run.get("limiting_layer"):
            text += "\nlimit: %s" % run["limiting_layer"]
        # On a white box: the target line may run through the text.
        axes.text(run["mb_per_second"] + top * 0.02, position, text, va="center", fontsize=8,
                  bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1})
    if target:
        axes.axvline(target, color="#d62728", linestyle="--", label="target %s MB/s" % _ms(target))
        axes.legend(loc="lower right", fontsize=8)
    axes.set_xlim(0, top * 1.7)
    axes.set_ylim(-0.6, len(runs) - 0.4)
    axes.set_xlabel("MB/s (total bytes / (latest end - earliest start))", fontsize=8)
    axes.set_title("Throughput against the target", fontsize=10)


def _draw_write_split(axes, series):
    axes.set_title("Where WRITE and COMMIT time goes", fontsize=10)
    data = [item for item in series["latency"] if item["op"] in report.REPORT_OPS]
    if not data:
        axes.text(0.5, 0.5, "no WRITE/COMMIT statistics in this bundle", ha="center", va="center", transform=axes.transAxes)
        axes.set_axis_off()
        return
    positions = list(range(len(data)))[::-1]
    left = [0.0] * len(data)
    for key, name, colour in SPLIT_COLOURS:
        widths = [item[key] for item in data]
        axes.barh(positions, widths, left=left, color=colour, label=name, height=0.6)
        left = [a + b for a, b in zip(left, widths)]
    top = max(left) or 1.0
    for position, item, total in zip(positions, data, left):
        share = item["queue_ms"] / total if total else 0.0
        axes.text(total + top * 0.02, position, "%s ms (%.0f %% queue)" % (_ms(total), 100 * share), va="center", fontsize=8)
    axes.set_yticks(positions)
    axes.set_yticklabels(["%s\n%s" % (item["op"], _wrap(item["label"])) for item in data], fontsize=8)
    axes.set_xlim(0, top * 1.45)
    # A free row on top for the legend, clear of the bars and their labels.
    axes.set_ylim(-0.6, len(data) + 0.2)
    axes.set_xlabel("ms per op (avg exe = queue + RTT + rest), all clients", fontsize=8)
    axes.legend(loc="upper right", fontsize=7, ncol=3)


def _draw_metadata(axes, series):
    axes.set_title("Metadata ops", fontsize=10)
    data = series.get("metadata") or []
    if not data:
        axes.text(0.5, 0.5, "no metadata ops in this bundle", ha="center", va="center", transform=axes.transAxes)
        axes.set_axis_off()
        return
    ops = [name for name in report.FIGURE_OPS if any(item["op"] == name for item in data)]
    labels = [run["label"] for run in series["throughput"]]
    height = 0.8 / len(labels)
    top = max(item["exe_ms"] for item in data) or 1.0
    for index, label in enumerate(labels):
        rows = dict((item["op"], item) for item in data if item["label"] == label)
        positions = [len(ops) - 1 - n + 0.4 - height * (index + 0.5) for n in range(len(ops))]
        values = [rows[name]["exe_ms"] if name in rows else 0.0 for name in ops]
        axes.barh(positions, values, height=height * 0.9, color=_run_colour(index, len(labels)), label=label[:40])
        for position, name, value in zip(positions, ops, values):
            if name in rows:
                count = rows[name]["ops"]
                axes.text(value + top * 0.02, position, "%s ms, %s op%s" % (_ms(value), count, "" if count == 1 else "s"),
                          va="center", fontsize=7)
    axes.set_yticks(list(range(len(ops)))[::-1])
    axes.set_yticklabels(ops, fontsize=8)
    axes.set_xlim(0, top * 1.5)
    axes.set_xlabel("avg exe, ms per op (own scale)", fontsize=8)
    if len(labels) > 1:
        axes.set_ylim(-0.6, len(ops) + 0.2)
        axes.legend(loc="upper right", fontsize=7, ncol=2)


def _draw_timeline(axes, series):
    axes.set_title("Ranks per host, sorted by first start", fontsize=10)
    runs = series.get("timeline") or []
    if not runs:
        axes.text(0.5, 0.5, "no per-rank canary results in this bundle", ha="center", va="center", transform=axes.transAxes)
        axes.set_axis_off()
        return
    rows, notes = [], []
    for run in runs:
        rows += [(run, host) for host in run["hosts"]]
        spread = run.get("start_spread_seconds")
        note = "%s: start spread %s s" % (run["label"][:30], "-" if spread is None else "%.3g" % spread)
        if run.get("synchronized") is False:
            note += " > %.3g s: not synchronized" % run["spread_bound_seconds"]
        notes.append(note)
    unmeasured = sorted(set(host for run in runs for host in run.get("unmeasured_clocks") or []))
    if unmeasured:
        notes.append("clocks not measured on %s%s: each host's own clock" % (
            ", ".join(unmeasured[:4]), " and %d more" % (len(unmeasured) - 4) if len(unmeasured) > 4 else ""))
    positions = list(range(len(rows)))[::-1]
    from matplotlib.collections import PolyCollection
    for first, last, name, colour in PHASE_COLOURS:
        # One collection per phase, not a bar per host: 4,096 hosts' bars took minutes to draw.
        boxes = []
        for position, (_run, host) in zip(positions, rows):
            left = host[first] if host[first] is not None else 0.0
            right = max(left, host[last] if host[last] is not None else left)
            boxes.append([(left, position - 0.35), (right, position - 0.35), (right, position + 0.35), (left, position + 0.35)])
        # Past a pixel per host an edge of the same colour keeps a lone slow host visible.
        axes.add_collection(PolyCollection(boxes, facecolors=colour, edgecolors=colour if len(rows) > 100 else "none",
                                           linewidths=0.5, label=name))
    latest_end = max(range(len(rows)), key=lambda index: rows[index][1]["last_end"] or 0.0)
    if len(rows) <= 24:
        for position, (_run, host) in zip(positions, rows):
            axes.text(host["first_start"], position + 0.42, "start +%.2f s" % host["first_start"], fontsize=7, va="bottom")
    else:
        # Too many rows to read each: mark the latest starter and the latest end.
        for index, key, text in ((len(rows) - 1, "first_start", "latest start %s +%.2f s"),
                                 (latest_end, "last_end", "latest end %s %.1f s")):
            value = rows[index][1][key] or 0.0
            axes.plot([value], [positions[index]], marker="v" if key == "first_start" else "<", color="#d62728",
                      markersize=6, linestyle="none")
            start = key == "first_start"
            axes.annotate(text % (rows[index][1]["host"], value), (value, positions[index]), fontsize=7,
                          xytext=(6, 8) if start else (-8, -12), ha="left" if start else "right",
                          textcoords="offset points", color="#d62728",
                          bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1})
    zero = runs[-1]["zero"]
    axes.axvline(0.0, color="#d62728", linestyle="--", linewidth=1, label=zero)
    # The start spread of this run, shaded: the band a synchronized checkpoint keeps under the bound.
    last = runs[-1]["hosts"]
    axes.axvspan(min(host["first_start"] for host in last), max(host["last_start"] or host["first_start"] for host in last),
                 color="#ff7f0e", alpha=0.15, linewidth=0, zorder=0, label="start spread")
    # Past 24 rows, a label every few rows, and always the latest starter and the latest end.
    step = max(1, len(rows) // 24)
    shown = sorted(set(list(range(0, len(rows), step)) + [len(rows) - 1, latest_end]))
    shown = [index for index in shown if index in (len(rows) - 1, latest_end)
             or all(abs(index - other) >= step for other in (len(rows) - 1, latest_end))]
    prefix = len(runs) > 1
    axes.set_yticks([positions[index] for index in shown])
    axes.set_yticklabels([("%s: " % rows[index][0]["label"][:16] if prefix else "") + rows[index][1]["host"][:24]
                          for index in shown], fontsize=7)
    ends = [host["last_end"] or 0.0 for _run, host in rows]
    axes.set_xlim(min(0.0, min(host["first_start"] for _run, host in rows)) - 1, max(ends) * 1.05 + 1)
    # A free band on top for the legend, clear of the hosts' bars.
    axes.set_ylim(-0.6, len(rows) - 0.4 + max(0.6, 0.06 * len(rows)))
    clock = "each host's clock" if any(run.get("unmeasured_clocks") for run in runs) else "controller clock"
    axes.set_xlabel("s after the %s (%s)" % (zero, clock), fontsize=8)
    axes.legend(loc="upper right", fontsize=7, ncol=3)
    axes.set_title("Ranks per host, sorted by first start\n" + "\n".join(notes), fontsize=8)


def draw_figure(pyplot, series):
    """The report figure (a matplotlib Figure): four panels, each on its own scale - throughput
    against the target, where WRITE/COMMIT time goes, the metadata ops (ms where WRITE takes
    seconds: on WRITE's scale they vanished), and the ranks' timeline per host (a late start shows
    as an orange bar inside the shaded start spread)."""
    links = series.get("links") or []
    figure, grid = pyplot.subplots(2, 2, figsize=(13, 8.5))
    _draw_throughput(grid[0][0], series)
    _draw_write_split(grid[0][1], series)
    _draw_metadata(grid[1][0], series)
    _draw_timeline(grid[1][1], series)
    # What the network verdict rests on, one line per run (the diagnosis's headline).
    for index, line in enumerate(links):
        figure.text(0.01, 0.008 + 0.022 * (len(links) - 1 - index), line[:180], fontsize=8, ha="left", va="bottom")
    figure.tight_layout(rect=(0, 0.022 * len(links) + 0.01, 1, 1))
    return figure


def draw_png(series):
    """PNG bytes of the report figure, or None without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        return None
    import io

    figure = draw_figure(pyplot, series)
    buffer = io.BytesIO()
    # No Software/date metadata: the same numbers give the same bytes (idempotent reruns).
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    pyplot.close(figure)
    return buffer.getvalue()


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
    png = draw_png(series) if module.params["png"] else None
    note = None
    if png is None and module.params["png"]:
        note = PNG_HINT % sys.executable
    markdown = report.render_markdown(metrics, baseline, rows, figure_note=None if png is None else "![report](report.png)")
    document = {"metrics": metrics, "baseline": baseline, "comparison": rows, "figure": series}
    payload = json.dumps(document, indent=2, sort_keys=True, default=str) + "\n"

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
              "png_written": png is not None, "msg": msg}
    if baseline is not None:
        result["baseline"] = baseline
    if module._diff:
        result["diff"] = [{"before": old_markdown or "", "after": markdown,
                           "before_header": md_path, "after_header": md_path}]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
