# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""compare.png: one figure of ranking.compare()'s document, drawn by report_figure.draw_png(document, draw).

Four panels, each on its own scale: write throughput per option, both ways of counting, against the
target line; restore (the read-back) both ways of counting, as the table's restore column (a read a
cache could serve is flagged on its label, never drawn as a cold read); the seconds the optimizer
blocks and the drain takes; the metadata ops of the op mix. An unmeasured figure has no bar and says
"unmeasured" where the bar would be.
"""

from __future__ import annotations

import textwrap

from ansible_collections.ckptio.nfs.plugins.module_utils.compare import option, ranking
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human

OURS_COLOUR, PUBLISHED_COLOUR = "#1f77b4", "#ff7f0e"
BLOCK_COLOUR, DRAIN_COLOUR = "#d62728", "#9467bd"
OPS_COLOURS = ("#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


def _label(row, restore=False):
    text = "%s\n%s" % (row["name"][:28], row["shape"][:28])
    if restore and row.get("restore_cache_flag") and row["restore"]["value"] is not None:
        text += "\n(FLAG: a cache could serve it)"
    if row.get("error"):
        text += "\n(FAILED: see compare.md)"
    elif row["flag"]:
        text += "\n(other bytes: not ranked)"
    return text


def _pairs(axes, rows, values, colours, names, render, missing=("unmeasured", "unmeasured"), restore=False):
    """Two bars per option (values: [(a, b)]); a missing one says why (missing[side] or a callable of the row)."""
    positions = list(range(len(rows)))[::-1]
    top = max([value for pair in values for value in pair if value is not None] + [0.0]) or 1.0
    for side, (colour, name) in enumerate(zip(colours, names)):
        offsets = [position + (0.2 if side == 0 else -0.2) for position in positions]
        for offset, pair, row in zip(offsets, values, rows):
            value = pair[side]
            axes.barh([offset], [value or 0.0], height=0.38, color=colour, label=name if offset == offsets[0] else None)
            why = missing[side](row) if callable(missing[side]) else missing[side]
            # On white: the target's dashed line often runs through a label near it.
            axes.text((value or 0.0) + top * 0.02, offset, render(value) if value is not None else why, va="center", fontsize=7,
                      bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5})
    axes.set_yticks(positions)
    axes.set_yticklabels([_label(row, restore) for row in rows], fontsize=7)
    axes.set_xlim(0, top * 1.6)
    return top


def _legend_below(axes):
    # Below the panel, not inside it: inside, the legend covered the lowest option's bar labels (lab run
    # of 2026-12-02, megatron's "5.83 MB/s").
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=7, frameon=False)


def _draw_throughput(axes, document):
    rows = document["options"]
    values = [(row["throughput"]["ours"]["bytes_per_second"], row["throughput"]["mlperf_published"]["bytes_per_second"])
              for row in rows]
    _pairs(axes, rows, [(a / 1e6 if a else a, b / 1e6 if b else b) for a, b in values], (OURS_COLOUR, PUBLISHED_COLOUR),
           ("ours: bytes / (latest end - earliest start)", "MLPerf published: size / rank 0's time"),
           lambda value: human.rate(value * 1e6))
    target = document["target_bytes_per_second"]
    if target:
        axes.axvline(target / 1e6, color="#2ca02c", linestyle="--", label="target %s" % human.rate(target))
        # Every option may miss it: the panel reaches past the line.
        axes.set_xlim(0, max(axes.get_xlim()[1], target / 1e6 * 1.15))
    axes.set_xlabel("MB/s (write)", fontsize=8)
    axes.set_title("Write throughput, both ways of counting", fontsize=10)
    _legend_below(axes)


def _draw_restore(axes, document):
    """Restore as compare.md's restore column: ours (the read's span over every rank) and MLPerf's published figure."""
    rows = document["options"]
    values = [(row["restore"]["value"], (row.get("restore_published") or {}).get("bytes_per_second")) for row in rows]
    _pairs(axes, rows, [(a / 1e6 if a else a, b / 1e6 if b else b) for a, b in values], (OURS_COLOUR, PUBLISHED_COLOUR),
           ("ours: read bytes / (latest end - earliest start)", "MLPerf published: size / rank 0's read time"),
           lambda value: human.rate(value * 1e6), ("unmeasured: no read-back", "unmeasured: no read-back"), restore=True)
    axes.set_xlabel("MB/s (read, verified)", fontsize=8)
    axes.set_title("Restore (read-back), both ways of counting", fontsize=10)
    _legend_below(axes)


def _draw_seconds(axes, document):
    rows = document["options"]
    _pairs(axes, rows, [(row["blocking_seconds"]["value"], row["drain_seconds"]["value"]) for row in rows],
           (BLOCK_COLOUR, DRAIN_COLOUR), ("optimizer blocks", "drain to NFS (background)"), human.seconds,
           ("unmeasured", lambda row: "unmeasured" if row["local_path"] else ranking.NO_DRAIN))
    axes.set_xlabel("seconds", fontsize=8)
    axes.set_title("What training waits, what drains behind it", fontsize=10)
    _legend_below(axes)


def _draw_ops(axes, document):
    rows = document["options"]
    positions = list(range(len(rows)))[::-1]
    left = [0.0] * len(rows)
    for (name, _ops), colour in zip(option.METADATA_GROUPS, OPS_COLOURS):
        widths = [row["metadata_ops"][name]["value"] or 0 for row in rows]
        axes.barh(positions, widths, left=left, color=colour, label=name, height=0.6)
        left = [a + b for a, b in zip(left, widths)]
    top = max(left) or 1.0
    for position, row, total in zip(positions, rows, left):
        measured = any(item["value"] is not None for item in row["metadata_ops"].values())
        axes.text(total + top * 0.02, position, human.number(int(total)) if measured else "unmeasured", va="center", fontsize=7)
    axes.set_yticks(positions)
    axes.set_yticklabels([row["name"][:28] for row in rows], fontsize=7)
    axes.set_xlim(0, top * 1.4)
    axes.set_xlabel("ops over the run (all clients, mountstats deltas)", fontsize=8)
    axes.set_title("Metadata ops", fontsize=10)
    axes.legend(loc="best", fontsize=7)


def draw_figure(pyplot, document):
    """The comparison figure (a matplotlib Figure), titled with the conclusion."""
    count = max(1, len(document["options"]))
    figure, grid = pyplot.subplots(2, 2, figsize=(16, 2 * (2.0 + 0.9 * count)))
    _draw_throughput(grid[0][0], document)
    _draw_restore(grid[0][1], document)
    _draw_seconds(grid[1][0], document)
    _draw_ops(grid[1][1], document)
    title = textwrap.wrap("%s Target: %s." % (document["conclusion"], document["target_text"]), 150)[:3]
    figure.suptitle("\n".join(title), fontsize=11, fontweight="bold")
    figure.tight_layout(rect=(0, 0, 1, 0.97 - 0.02 * len(title)))
    return figure
