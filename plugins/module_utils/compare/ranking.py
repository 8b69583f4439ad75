# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The architecture comparison: options (option.option_row) ranked against the target, and compare.md.

Ranked together only what is comparable: options whose total bytes differ from the first option's
(the reference, today's architecture by the play's default) are flagged and listed apart, never
ranked with it; an option whose judged figure is unmeasured is listed after the measured ones.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human, markdown_text, rates

# The word for a figure the run does not have (issue 28's evidence rule).
UNMEASURED = "unmeasured"
NO_DRAIN = "none (direct writes)"


def _target(rows):
    """(bytes per second, text, problem): the first option's target; options with another are flagged."""
    targets = set((row["target"]["checkpoint_bytes"], row["target"]["window_seconds"]) for row in rows)
    checkpoint_bytes, window = rows[0]["target"]["checkpoint_bytes"], rows[0]["target"]["window_seconds"]
    problem = None
    if len(targets) > 1:
        problem = "the options' bundles give different targets; the first option's is used"
    if not checkpoint_bytes or not window:
        return None, "no target given (ckptio_checkpoint_bytes, ckptio_checkpoint_window_seconds)", problem
    rate = rates.target_rate(checkpoint_bytes, window)
    return rate, "%s in %s = %s" % (human.size(checkpoint_bytes), human.seconds(window), human.rate(rate)), problem


def _verdict(row, target_rate):
    judged = row["judged"]["value"]
    if judged is None:
        return "unmeasured"
    if target_rate is None:
        return "no target"
    if judged >= target_rate:
        return "meets (%s of the target)" % human.factor(judged / target_rate)
    return "misses (%s of the target)" % human.factor(judged / target_rate)


def compare(rows):
    """{"options": rows with rank, verdict and flag, "target_*", "conclusion", "problems"}."""
    rows = [dict(row) for row in rows]
    if not rows:
        return {"options": [], "target_bytes_per_second": None, "target_text": "no options",
                "conclusion": "No option was run.", "problems": []}
    target_rate, target_text, target_problem = _target(rows)
    # The reference: the first option that ran (a failed option is reported, never ranked nor compared with).
    first = ([row for row in rows if not row.get("error")] or rows)[0]
    for row in rows:
        row["verdict"] = _verdict(row, target_rate)
        row["flag"] = None
        if row.get("error"):
            row["verdict"], row["flag"] = "FAILED: %s" % row["error"], "failed: not ranked"
        elif row["bytes"] != first["bytes"]:
            shown, reference = human.size(row["bytes"]), human.size(first["bytes"])
            if shown == reference:
                # Totals that differ below the shown digits (a shape_scale's rounding): the exact bytes.
                shown, reference = "%s B" % human.number(int(row["bytes"])), "%s B" % human.number(int(first["bytes"]))
            row["flag"] = "different total bytes (%s against %s of %s): not ranked with the others" % (shown, reference, first["name"])
    comparable = [row for row in rows if row["flag"] is None]
    measured = sorted((row for row in comparable if row["judged"]["value"] is not None),
                      key=lambda row: -row["judged"]["value"])
    for position, row in enumerate(measured, 1):
        row["rank"] = position
    ordered = measured + [row for row in comparable if row["judged"]["value"] is None] + [row for row in rows if row["flag"]]
    for row in ordered:
        row.setdefault("rank", None)
    return {"options": ordered, "target_bytes_per_second": target_rate, "target_text": target_text,
            "conclusion": _conclusion(measured, target_rate), "problems": [target_problem] if target_problem else [],
            "rearchitect_answers": _rearchitect_answers(rows, measured, target_rate)}


def _rearchitect_answers(rows, measured, target_rate):
    """For each option whose own diagnosis says re-architect: the measured options that meet the target
    (issue 28: the recommendation points at a measured option, or says that none met it)."""
    answers = []
    if target_rate is None or not measured:
        return answers
    for row in rows:
        if row["diagnosis_verdict"]["value"] != "rearchitect":
            continue
        head = "%s's diagnosis says re-architect (limiting layer %s); " % (row["name"], row["limiting_layer"]["value"] or UNMEASURED)
        meeting = [other for other in measured if other["name"] != row["name"] and other["judged"]["value"] >= target_rate]
        itself = next((other for other in measured if other["name"] == row["name"] and other["judged"]["value"] >= target_rate), None)
        if itself is not None:
            # Its diagnosis and this comparison judged different figures (a burst buffer: the drain to NFS
            # there, the optimizer's blocking seconds here); never "none met" beside its own 2.9x (lab, 2026-12-03).
            text = head + "measured here, %s itself meets the target (%s, judged on %s), while its diagnosis judged %s%s." % (
                row["name"], human.factor(itself["judged"]["value"] / target_rate), itself["judged"]["rests_on"],
                row.get("diagnosis_judged") or "its own run's figures (diagnosis.md)",
                "".join("; %s meets it too (%s)" % (other["name"], human.factor(other["judged"]["value"] / target_rate))
                        for other in meeting))
            meeting = [itself] + meeting
        elif meeting:
            text = head + "measured here, %s." % ", ".join(
                "%s meets the target (%s)" % (other["name"], human.factor(other["judged"]["value"] / target_rate)) for other in meeting)
        else:
            best = measured[0]
            text = head + ("none of the measured options met the target (the best, %s, reached %s): measure another "
                           "architecture (several servers, a parallel file system, a burst buffer)."
                           % (best["name"], human.factor(best["judged"]["value"] / target_rate)))
        answers.append({"option": row["name"], "meets": [other["name"] for other in meeting], "text": text})
    return answers


def _conclusion(measured, target_rate):
    if not measured:
        return "No option was measured: no verdict against the target."
    if target_rate is None:
        return "No target given: the options are ranked, none is judged (best: %s)." % measured[0]["name"]
    meeting = [row["name"] for row in measured if row["judged"]["value"] >= target_rate]
    if meeting:
        return "Measured options that meet the target: %s (best: %s)." % (", ".join(meeting), meeting[0])
    best = measured[0]
    return ("None of the measured options met the target; the best, %s, reached %s of it."
            % (best["name"], human.factor(best["judged"]["value"] / target_rate)))


def _cell(item, render):
    return render(item["value"]) if item["value"] is not None else UNMEASURED


def _ops(row):
    ops = row["metadata_ops"]
    values = [(name, item["value"]) for name, item in ops.items() if item["value"]]
    if all(item["value"] is None for item in ops.values()):
        return UNMEASURED
    return ", ".join("%s %s" % (name, human.number(value)) for name, value in values) or "none"


def _restore_cell(row):
    """Restore, both ways of counting (ours / MLPerf published), and the cache flag - never averaged away."""
    if row["restore"]["value"] is None:
        return UNMEASURED
    published = (row.get("restore_published") or {}).get("gib_per_second")
    text = "%s (published %s)" % (human.rate(row["restore"]["value"]),
                                  "%s GiB/s" % human.number(published, 3) if published is not None else UNMEASURED)
    return text + (" - FLAG: a cache could serve it" if row.get("restore_cache_flag") else "")


def table_rows(document):
    """The table's cells, one list per option (Markdown and the figure's footnote use them)."""
    cells = []
    for row in document["options"]:
        figures = row["throughput"]
        published = figures["mlperf_published"]["gib_per_second"]
        cells.append([
            str(row["rank"]) if row["rank"] else "-", row["name"], row["shape"], ", ".join(row["paths"]) or UNMEASURED,
            row["local_path"] or "-",
            _cell({"value": figures["ours"]["bytes_per_second"]}, human.rate),
            ("%s GiB/s (%s)" % (human.number(published, 3), human.rate(figures["mlperf_published"]["bytes_per_second"]))
             if published is not None else UNMEASURED),
            _cell(row["blocking_seconds"], human.seconds),
            _cell(row["drain_seconds"], human.seconds) if row["local_path"] else NO_DRAIN,
            _restore_cell(row), _ops(row), _cell(row["limiting_layer"], str),
            _cell(row["diagnosis_verdict"], str),
            row["verdict"] + (" - " + row["flag"] if row["flag"] and not row.get("error") else ""),
        ])
    return cells


HEADER = ["rank", "option", "shape", "NFS paths", "local path", "write, ours", "write, MLPerf published",
          "optimizer blocks", "drain", "restore", "metadata ops", "limiting layer", "diagnosis", "against the target"]


def _notes(document):
    lines = []
    for row in document["options"]:
        parts = ["%s: %s" % (key, row[key]["rests_on"]) for key in ("judged", "blocking_seconds", "drain_seconds", "restore")]
        for name in ("ours", "mlperf_published"):
            if row["throughput"][name]["problem"]:
                parts.append("%s: unmeasured, %s" % (name, row["throughput"][name]["problem"]))
        ratio = row["throughput"]["published_over_ours"]
        if ratio:
            parts.append("published / ours = %s" % human.factor(ratio))
        ops = set(item["rests_on"] for item in row["metadata_ops"].values())
        parts.append("metadata ops: %s" % "; ".join(sorted(ops)))
        lines.append("- **%s**: %s." % (row["name"], "; ".join(parts)))
    return lines


def render_markdown(document, figure_note=None):
    """compare.md. Option names, paths, limiting layers and errors come from the options' bundles: every string of
    the document is escaped once here (stats/markdown_text), so none adds a heading or a row."""
    document = markdown_text.escaped(document)
    lines = ["# Architectures side by side", "", "**%s**" % document["conclusion"], "",
             "Target: %s. Options are ranked by the figure judged against it: the write throughput (ours) for direct "
             "writes; for a local path (burst buffer), bytes / the optimizer's blocking seconds, only when the drain fits "
             "the checkpoint interval." % document["target_text"], ""]
    lines.extend("Problem: %s." % problem for problem in document["problems"])
    lines.extend(["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)])
    lines.extend("| " + " | ".join(cells) + " |" for cells in table_rows(document))
    if document.get("rearchitect_answers"):
        lines.extend(["", "What the diagnoses' \"re-architect\" meets here:", ""])
        lines.extend("- %s" % item["text"] for item in document["rearchitect_answers"])
    lines.extend(["", "Write throughput, both ways of counting:", "",
                  "- ours: " + _first_rule(document, "ours"),
                  "- MLPerf published: " + _first_rule(document, "mlperf_published"), "",
                  "What each figure rests on:", ""])
    lines.extend(_notes(document))
    if figure_note:
        lines.extend(["", figure_note])
    return "\n".join(lines) + "\n"


def _first_rule(document, name):
    for row in document["options"]:
        return row["throughput"][name]["rests_on"]
    return UNMEASURED
