# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Two samples of one mount, as the delta reads them (module_utils/kernel_text/stats_delta.py).

The format's text shortcuts live here, beside the parser (module_utils/kernel_text/mountstats.py) that
makes them valid: op lines compared as text and xprt counters converted once for both samples.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import (
    parse_op_values,
    used_xprt_positions,
    xprt_words,
    xprt_words_shape,
)


class SamplePair:
    """Two samples of one mount as a delta reads them (module_utils/kernel_text/stats_delta.py).

    The delta asks only for what moved: op lines whose text changed and xprt counters, each
    converted once. This is where the format's shortcuts live, beside the parser that makes them
    valid: same kernel, same op order (the sections compare line by line), and xprt counters
    whose text did not move are converted once and shared between the samples (int() is the
    largest cost of a delta; see tests/bench/bench_mountstats.py). before=None means "since mount".
    """

    __slots__ = ("after", "before")

    def __init__(self, after, before=None):
        self.after = after
        self.before = before

    def op_list_cut(self):
        """A sentence when the two samples' op lists differ (one cut at a line end), else None.

        Same kernel, same list: a shorter list was cut at a line end, which truncation() cannot
        see in one sample alone. Comparing line counts first keeps the usual case to two counts.
        """
        after, before = self.after, self.before
        if before is None or after.ops_text.count("\n") == before.ops_text.count("\n"):
            return None
        for sample, cut, whole in (("after", after.op_lines, before.op_lines), ("before", before.op_lines, after.op_lines)):
            # In the other sample's (the kernel's) order: the first name missing is where the cut is.
            missing = [name for name in whole if name not in cut]
            if missing:
                return "%s sample: no %s line%s (the other sample has %s): cut at a line end" % (
                    sample, ", ".join(missing[:4]) + (" ..." if len(missing) > 4 else ""), "s" if len(missing) > 1 else "",
                    "them" if len(missing) > 1 else "it")
        return None

    def changed_ops(self):
        """[(name, after values, before values or None)] of the ops whose line changed, in file order.

        Identical sections mean no op moved. With the same number of lines the sections are
        compared line by line and only lines that differ are converted; otherwise (or when names
        disagree) ops are matched by name. Before values are None when the before sample has no
        line for the op (or there is no before sample).
        """
        after, before = self.after, self.before
        if before is not None and after.ops_text == before.ops_text:
            return []
        changed = self._changed_lines() if before is not None else None
        if changed is None:
            before_ops = before.op_lines if before is not None else {}
            changed = [(name, text, before_ops.get(name)) for name, text in after.op_lines.items() if before_ops.get(name) != text]
        values = []
        for name, new_text, old_text in changed:
            try:
                # parse_op_values() written out for the all-numbers case: this runs for every op that moved.
                new_values = tuple(map(int, new_text.split()))
            except ValueError:
                new_values = parse_op_values(new_text)
            if old_text is None:
                old_values = None
            else:
                try:
                    old_values = tuple(map(int, old_text.split()))
                except ValueError:
                    old_values = parse_op_values(old_text)
            values.append((name, new_values, old_values))
        return values

    def _changed_lines(self):
        """[(name, after text, before text)] of the lines that differ, or None when the two
        sections are not the same list of ops (other length, another name on a line)."""
        after_lines = self.after.ops_text.split("\n")
        before_lines = self.before.ops_text.split("\n")
        if len(after_lines) != len(before_lines):
            return None
        changed = []
        for new, old in [(new, old) for new, old in zip(after_lines, before_lines) if new != old]:
            name, sep, new_rest = new.partition(":")
            old_name, old_sep, old_rest = old.partition(":")
            if not sep or name != old_name or not old_sep:
                return None
            changed.append((name.strip(), new_rest, old_rest))
        return changed

    def xprt_columns(self):
        """(after.xprt_columns(), before.xprt_columns() or None), a column whose text did not move
        shared by both (the same list object: bind and connect counts, bad xids, usually max_slots)."""
        after, before = self.after, self.before
        if before is not None and after.xprt_lines and len(after.xprt_lines) == len(before.xprt_lines):
            count = len(after.xprt_lines)
            after_words, shape = xprt_words(after.xprt_lines)
            before_words = " ".join(before.xprt_lines).split()
            if shape is not None and shape == xprt_words_shape(before_words, count):
                protocol, width = shape
                after_columns = {}
                before_columns = {}
                try:
                    for offset, name in used_xprt_positions(protocol, width):
                        after_text = after_words[offset::width]
                        before_text = before_words[offset::width]
                        after_columns[name] = list(map(int, after_text))
                        before_columns[name] = after_columns[name] if before_text == after_text else list(map(int, before_text))
                except ValueError:
                    # Junk in a counter: each sample takes xprt_columns()' general path.
                    pass
                else:
                    return ({"protocols": [protocol] * count, "columns": after_columns},
                            {"protocols": [protocol] * count, "columns": before_columns})
        return after.xprt_columns(), before.xprt_columns() if before is not None else None
