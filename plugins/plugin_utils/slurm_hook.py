# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side decisions of the client_tuning role's Slurm drain hook (tasks/slurm_drain.yml).

Called through the one public filter ckptio.nfs.internal, as the role's other steps are; the
documentation of each step is in the YAML file of the same name next to this one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

# sinfo %t: an operator's drain shows as drain, drng (draining: jobs still run) or with a suffix
# (drain*: not responding, drain$: maintenance) - sinfo(1) NODE STATE CODES.
DRAINED = re.compile(r"(drain|drng)")
# Once no job runs a drained node is "drain"; "drng" would mean jobs run on it again.
IDLE_DRAINED = re.compile(r"drain")


def _unique(values):
    seen = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return seen


def slurm_states(lines):
    """The node's states (sinfo --Node --format %t, one line per partition), whether an operator drained
    it already, and whether every line is still plain drain (checked after the wait)."""
    states = [str(line).strip() for line in lines or []]
    return {"states": _unique(states), "drained": any(DRAINED.match(state) for state in states),
            "still_drained": all(IDLE_DRAINED.match(state) for state in states)}


def _whole(value, option):
    try:
        return int(float(value))
    except (TypeError, ValueError):
        raise AnsibleFilterError("slurm_wait: %s must be a number of seconds, got %r" % (option, value))


def slurm_wait(wait_seconds, poll_seconds):
    """The squeue polls within the bound: one every poll_seconds (at least 1 s), at least one poll."""
    delay = max(1, _whole(poll_seconds, "client_tuning_slurm_poll_seconds"))
    retries = max(1, int(math.ceil(_whole(wait_seconds, "client_tuning_slurm_wait_seconds") / float(delay))))
    return {"retries": retries, "delay": delay}


def slurm_busy(jobs):
    """Why the wait failed: the jobs squeue still lists, or squeue's own error."""
    jobs = jobs if isinstance(jobs, Mapping) else {}
    if jobs.get("rc", 1) == 0:
        return "still runs job(s) " + ", ".join(str(line).strip() for line in jobs.get("stdout_lines") or [])
    return "could not be read: squeue: " + (str(jobs.get("stderr") or "").strip() or str(jobs.get("msg") or ""))


STEPS = {
    "slurm_states": slurm_states,
    "slurm_wait": slurm_wait,
    "slurm_busy": slurm_busy,
}
