# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What Slurm says about a node, read from `scontrol --oneliner show node NAME` and `squeue`.

The one parser of those two outputs, and the decisions the client_tuning drain hook takes on
them: is the node known, drained by us or by someone else, drained with no job left?

`scontrol -o show node` prints one line a node of `Key=Value` pairs separated by spaces, but
some values hold spaces themselves (`OS=Linux 6.1.0-41-amd64 #1 SMP ...`, `Reason=text
[user@time]`): a pair starts where a space is followed by `Key=`. The reason is free text an
operator typed, so it is read up to Slurm's own `[user@timestamp]` suffix (slurm's
node_info.c prints `Reason=%s [%s@%s]`, the last field of the line in 22.05), whatever `Key=` or
bracket it may contain: the suffix is the LAST `[user@time]` of the line. An operator's reason that
quotes ours and adds a bracket (`<ours> [bob@now] bad DIMM`) is therefore read whole, never as ours.

Node states (scontrol(1), "NODE STATE"): a base state (IDLE, ALLOCATED, MIXED, DOWN, ...) and
flags joined with `+` (DRAIN, COMPLETING, NOT_RESPONDING, ...). DRAIN with a base state that
holds jobs (ALLOCATED, MIXED) or the COMPLETING flag is "draining" (sinfo's `drng`); DRAIN with
none of those is "drained" (sinfo's `drain`): no job runs there.
"""

from __future__ import annotations

import re

from dataclasses import dataclass

_PAIR = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:]*)=")
# With Slurm's suffix the text may hold anything (greedy: the suffix is the line's last bracket); without it,
# it ends at the next pair.
_REASON_SIGNED = re.compile(r"(?:^|\s)Reason=(?P<text>.*)\s\[(?P<who>[^\]@\s]*)@(?P<when>[^\]\s]*)\]")
_REASON_BARE = re.compile(r"(?:^|\s)Reason=(?P<text>.*?)(?=\s+[A-Za-z][A-Za-z0-9_:]*=|\s*$)")
# Base states that hold jobs, and flags that mean a job is still on the node (scontrol(1)).
_BUSY_STATES = frozenset(("ALLOCATED", "MIXED", "COMPLETING"))
_BUSY_FLAGS = frozenset(("COMPLETING",))
# squeue's --states for "a job is on the node": a suspended job keeps its memory and files open.
JOB_STATES = "RUNNING,COMPLETING,CONFIGURING,SUSPENDED,STOPPED"


@dataclass(frozen=True)
class SlurmNode:
    """One node as scontrol shows it."""

    name: str
    state: str
    flags: tuple
    reason: str
    reason_by: str
    reason_at: str

    @property
    def drain(self):
        """Drained or draining: the DRAIN flag (or DRAINED/DRAINING spelt as a state by old releases)."""
        return "DRAIN" in self.flags or self.state in ("DRAIN", "DRAINED", "DRAINING")

    @property
    def busy(self):
        """Whether Slurm counts a job on the node (allocated, mixed or completing)."""
        return self.state in _BUSY_STATES or bool(_BUSY_FLAGS & set(self.flags)) or self.state == "DRAINING"

    @property
    def state_text(self):
        return "+".join((self.state,) + self.flags)


def _pairs(line):
    """The Key=Value pairs of one line, the reason cut out first (free text)."""
    values = {}
    reason = _REASON_SIGNED.search(line) or _REASON_BARE.search(line)
    if reason:
        found = reason.groupdict()
        values["Reason"] = found["text"].strip()
        values["_reason_by"] = found.get("who") or ""
        values["_reason_at"] = found.get("when") or ""
        line = line[:reason.start()] + line[reason.end():]
    starts = list(_PAIR.finditer(line))
    for index, match in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(line)
        values.setdefault(match.group(1), line[match.end():end].strip())
    return values


def parse_show_node(text):
    """Every node of `scontrol --oneliner show node` output (one line each), in order."""
    nodes = []
    for line in (text or "").splitlines():
        values = _pairs(line.strip())
        if "NodeName" not in values:
            continue
        parts = [part for part in values.get("State", "").upper().split("+") if part]
        reason = values.get("Reason", "")
        nodes.append(SlurmNode(
            name=values["NodeName"], state=parts[0] if parts else "UNKNOWN", flags=tuple(parts[1:]),
            reason="" if reason in ("(null)", "none") else reason,
            reason_by=values.get("_reason_by", ""), reason_at=values.get("_reason_at", "")))
    return nodes


def parse_job_ids(text):
    """The job ids of `squeue --noheader --format %i` output, one a line (array jobs as 12_3)."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def is_ours(node, our_reason):
    """A drain is ours only when its whole reason is exactly the one this collection sets, as Slurm signed it.

    Never a prefix or a substring: an operator's reason that starts with or quotes ours is theirs. A
    reason without Slurm's `[user@time]` suffix cannot be told apart from the fields after it, and ours
    is always set through `scontrol update` (which signs it): an unsigned reason is never ours.
    """
    return (node.drain and bool(our_reason) and bool(node.reason_by or node.reason_at)
            and node.reason == str(our_reason).strip())


def node_view(node, our_reason):
    """The facts a drain hook decides on, as plain data."""
    return {
        "known": True, "error": "", "name": node.name, "state": node.state_text, "drain": node.drain,
        "busy": node.busy, "drained": node.drain and not node.busy,
        # Nothing left to wait for: drained with no job, or not drained at all (resumed meanwhile).
        "settled": not (node.drain and node.busy), "reason": node.reason,
        "reason_by": node.reason_by, "ours": is_ours(node, our_reason),
    }


def unknown_view(name, why):
    return {"known": False, "error": why, "name": name, "state": "", "drain": False, "busy": False,
            "drained": False, "settled": False, "reason": "", "reason_by": "", "ours": False}


def find_node(text, name):
    """The node named NAME in scontrol's output, or None."""
    for node in parse_show_node(text):
        if node.name == name:
            return node
    return None


def ready_to_unmount(view, job_ids):
    """(ready, why): the node is drained, by us or by someone, and squeue lists no job on it."""
    if not view.get("known"):
        return False, "Slurm does not know the node: %s" % view.get("error")
    if not view.get("drain"):
        return False, "is no longer drained (%s): a job may start on it" % view.get("state")
    if view.get("busy"):
        return False, "is still draining (%s): a job runs on it" % view.get("state")
    if job_ids:
        return False, "still runs job(s) %s" % ", ".join(job_ids)
    return True, "drained (%s), no job on it" % view.get("state")
