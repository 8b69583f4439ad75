# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.png: the figure of report.figure_series() (module_utils/report/report.py), drawn with matplotlib.

matplotlib is optional: it is imported inside draw_png(), which returns None without it (the
module then writes report.md and report.json and says how to get the picture). Nothing here
reads or writes files; draw_png() returns the PNG's bytes.
"""

from __future__ import annotations

import textwrap

from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human

from ansible_collections.ckptio.nfs.plugins.module_utils.report import report


# Colours: the earlier run grey, this run blue, in every panel; the WRITE split keeps its own
# three (queue, RTT, rest) and the timeline its three phases.
RUN_COLOURS = ("#9e9e9e", "#1f77b4")
SPLIT_COLOURS = (("queue_ms", "queue (waiting for a slot)", "#ff7f0e"), ("rtt_ms", "RTT (wire + server)", "#2ca02c"),
                 ("other_ms", "rest of exe (client work)", "#c7c7c7"))
PHASE_COLOURS = (("first_start", "last_start", "ranks starting", "#ff7f0e"),
                 ("last_start", "first_end", "every rank writing", "#1f77b4"),
                 ("first_end", "last_end", "ranks finishing", "#aec7e8"))


# Characters of a footer line (8 pt on the 13-inch figure) before it wraps.
FOOTER_WIDTH = 150


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
    """ms for a reader: 23,070 rather than 2.307e+04 (human.number)."""
    return human.number(value, 4)


def _run_colour(index, count):
    return RUN_COLOURS[1] if index == count - 1 else RUN_COLOURS[0]


def _axis_unit(top_mb):
    """(MB/s per axis unit, unit) so the axis reads 8 GB/s as 8, not 8,000 MB/s."""
    if top_mb >= 1000:
        return 1000.0, "GB/s"
    if top_mb < 1:
        return 0.001, "kB/s"
    return 1.0, "MB/s"


def _rate(mb_per_second):
    return human.rate(mb_per_second * report.MB)


def _bar_text(run, target):
    text = _rate(run["mb_per_second"])
    if run.get("phase") == "restore":
        # Judged against the restore's own target only; without one, said so, never the write's.
        own = run.get("target_mb_per_second")
        text += (" = %s of the restore target %s" % (human.factor(run["mb_per_second"] / own), _rate(own)) if own
                 else "\nno restore target given")
    elif target:
        text += " = %s of the target" % human.factor(run["mb_per_second"] / target)
    if run.get("limiting_layer") and run["limiting_layer"] != "none":
        text += "\nlimit: %s" % run["limiting_layer"]
    return text


def _draw_lines(axes, series, scale):
    """The target and the links' capacity, each a labelled vertical line on the throughput axis."""
    target, capacity = series["target_mb_per_second"], series.get("link_capacity_mb_per_second")
    if target:
        axes.axvline(target / scale, color="#d62728", linestyle="--", label="target %s" % _rate(target))
    if capacity:
        axes.axvline(capacity / scale, color="#2ca02c", linestyle="-.", label="links' capacity %s" % _rate(capacity))
    if target or capacity:
        axes.legend(loc="lower right", fontsize=8)


def _draw_throughput(axes, series):
    runs = series["throughput"]
    target = series["target_mb_per_second"]
    top = max([run["mb_per_second"] for run in runs] + [target or 0, series.get("link_capacity_mb_per_second") or 0]
              + [run.get("target_mb_per_second") or 0 for run in runs]) or 1.0
    scale, unit = _axis_unit(top)
    positions = list(range(len(runs)))[::-1]
    count = len([run for run in runs if run.get("phase") != "restore"])
    for position, run in zip(positions, runs):
        # A restore bar (the read phase) is hatched in its run's colour.
        axes.barh([position], [run["mb_per_second"] / scale], color=_run_colour(run.get("run_index", 0), count), height=0.5,
                  hatch="//" if run.get("phase") == "restore" else None, edgecolor="white")
        # On a white box: the target line may run through the text.
        axes.text((run["mb_per_second"] + top * 0.02) / scale, position, _bar_text(run, target), va="center", fontsize=8,
                  bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1})
    axes.set_yticks(positions)
    axes.set_yticklabels([_wrap(run["label"]) for run in runs], fontsize=8)
    _draw_lines(axes, series, scale)
    axes.set_xlim(0, top * 1.7 / scale)
    axes.set_ylim(-0.6, len(runs) - 0.4)
    rule = THROUGHPUT_RULES.get(tuple(sorted(set(series.get("sources") or ["canary"]))), THROUGHPUT_RULES[("canary",)])
    axes.set_xlabel("%s: %s" % (unit, rule), fontsize=8)
    axes.set_title("Throughput against the target", fontsize=10)


# What the throughput axis rests on, by the bundles' sources (report.figure_series "sources").
THROUGHPUT_RULES = {
    ("canary",): "total bytes / (latest end - earliest start)",
    ("capture",): "written bytes over the window (mountstats), no canary ranks",
    ("canary", "capture"): "canary: total bytes / (latest end - earliest start); capture: written bytes over the window (mountstats)",
}


def _draw_write_split(axes, series):
    axes.set_title("Where WRITE and COMMIT time goes", fontsize=10)
    data = [item for item in series["latency"] if item["op"] in report.REPORT_OPS]
    if not data:
        _empty_panel(axes, "no WRITE/COMMIT statistics in this bundle")
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


def _empty_panel(axes, text):
    """A panel the bundle has nothing for: says so, without axes."""
    axes.text(0.5, 0.5, text, ha="center", va="center", transform=axes.transAxes)
    axes.set_axis_off()


def _draw_metadata(axes, series):
    axes.set_title("Metadata ops", fontsize=10)
    data = series.get("metadata") or []
    if not data:
        _empty_panel(axes, "no metadata ops in this bundle")
        return
    ops = [name for name in report.FIGURE_OPS if any(item["op"] == name for item in data)]
    # One group per run; a run's restore bar (phase "restore") has no metadata ops of its own.
    labels = [run["label"] for run in series["throughput"] if run.get("phase") != "restore"]
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


def _timeline_notes(runs):
    """One line per run (its start spread against the bound), one for unmeasured clocks."""
    notes = []
    for run in runs:
        spread = run.get("start_spread_seconds")
        note = "%s: start spread %s s" % (run["label"][:30], "-" if spread is None else "%.3g" % spread)
        if run.get("synchronized") is False:
            note += " > %.3g s: not synchronized" % run["spread_bound_seconds"]
        elif run.get("synchronized") is None and spread is not None and run.get("start_spread_uncertainty_seconds"):
            note += " (clocks +/- %.2g s): not confirmed" % run["start_spread_uncertainty_seconds"]
        notes.append(note)
    unmeasured = sorted(set(host for run in runs for host in run.get("unmeasured_clocks") or []))
    if unmeasured:
        notes.append("clocks not measured on %s%s: each host's own clock" % (
            ", ".join(unmeasured[:4]), " and %d more" % (len(unmeasured) - 4) if len(unmeasured) > 4 else ""))
    return notes


READ_COLOUR = "#2ca02c"


def _draw_read_spans(axes, rows, positions):
    """The restore's read span per host (first read start to last read end), on the host's row."""
    from matplotlib.collections import PolyCollection
    boxes = []
    for position, (_run, host) in zip(positions, rows):
        left, right = host.get("read_first_start"), host.get("read_last_end")
        if left is not None and right is not None:
            boxes.append([(left, position - 0.35), (right, position - 0.35), (right, position + 0.35), (left, position + 0.35)])
    if boxes:
        axes.add_collection(PolyCollection(boxes, facecolors=READ_COLOUR, edgecolors="none", label="reading back (restore)"))


def _draw_timeline(axes, series):
    axes.set_title("Ranks per host, sorted by first start", fontsize=10)
    runs = series["timeline"]
    rows = [(run, host) for run in runs for host in run["hosts"]]
    notes = _timeline_notes(runs)
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
    _draw_read_spans(axes, rows, positions)
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
    ends = [max(host["last_end"] or 0.0, host.get("read_last_end") or 0.0) for _run, host in rows]
    axes.set_xlim(min(0.0, min(host["first_start"] for _run, host in rows)) - 1, max(ends) * 1.05 + 1)
    # A free band on top for the legend, clear of the hosts' bars.
    axes.set_ylim(-0.6, len(rows) - 0.4 + max(0.6, 0.06 * len(rows)))
    clock = "each host's clock" if any(run.get("unmeasured_clocks") for run in runs) else "controller clock"
    axes.set_xlabel("s after the %s (%s)" % (zero, clock), fontsize=8)
    axes.legend(loc="upper right", fontsize=7, ncol=3)
    axes.set_title("Ranks per host, sorted by first start\n" + "\n".join(notes), fontsize=8)


def _panels(pyplot, series):
    """Four panels; three when no run has canary ranks (a capture): the throughput then spans the top."""
    if series.get("timeline"):
        figure, grid = pyplot.subplots(2, 2, figsize=(13, 8.5))
        return figure, [grid[0][0], grid[0][1], grid[1][0], grid[1][1]]
    figure = pyplot.figure(figsize=(13, 7.5))
    layout = figure.add_gridspec(2, 2, height_ratios=(2, 3))
    return figure, [figure.add_subplot(layout[0, :]), figure.add_subplot(layout[1, 0]), figure.add_subplot(layout[1, 1])]


def draw_figure(pyplot, series):
    """The report figure (a matplotlib Figure), titled with the verdict in words: throughput
    against the target and the links' capacity, where WRITE/COMMIT time goes, the metadata ops
    (ms where WRITE takes seconds: on WRITE's scale they vanished), each on its own scale, and the
    ranks' timeline per host (a late start shows as an orange bar inside the shaded start spread)
    when the bundles have canary ranks."""
    links = series.get("links") or []
    figure, panels = _panels(pyplot, series)
    _draw_throughput(panels[0], series)
    _draw_write_split(panels[1], series)
    _draw_metadata(panels[2], series)
    if len(panels) > 3:
        _draw_timeline(panels[3], series)
    title = textwrap.wrap(series.get("title") or "", 130)[:3]
    figure.suptitle("\n".join(title), fontsize=11, fontweight="bold")
    # What the network verdict rests on, per run (the diagnosis's headline), wrapped rather than cut:
    # at 8 pt a 13-inch figure holds about 165 characters a line (a cut line lost its advice).
    lines = [part for line in links for part in textwrap.wrap(line, FOOTER_WIDTH)]
    for index, line in enumerate(lines):
        figure.text(0.01, 0.008 + 0.022 * (len(lines) - 1 - index), line, fontsize=8, ha="left", va="bottom")
    # tight_layout keeps the panels clear of the suptitle (the verdict) by itself.
    figure.tight_layout(rect=(0, 0.022 * len(lines) + 0.01, 1, 1))
    return figure


def draw_png(series, draw=None):
    """PNG bytes of the report figure (or of draw(pyplot, series): another figure saved the same way,
    e.g. module_utils/compare/figure.py's), or None without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        return None
    import io

    figure = (draw or draw_figure)(pyplot, series)
    buffer = io.BytesIO()
    # No Software/date metadata: the same numbers give the same bytes (idempotent reruns).
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    pyplot.close(figure)
    return buffer.getvalue()
