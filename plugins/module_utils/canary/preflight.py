# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint_canary before anything is made (pure): the request's errors, then over what the target
showed (Facts, read by host/canary/target.py) the shape, the drain, memory, open files, free space and
the start, in that order. Each check that fails is an outcome.Refusal value naming why; else the Plan,
whose result is all check mode returns.
"""

from __future__ import annotations

import dataclasses
import os

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import limits as canary_limits
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import options
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import outcome
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import shapes
from ansible_collections.ckptio.nfs.plugins.module_utils.canary.outcome import Refusal


@dataclasses.dataclass(frozen=True)
class Facts:
    """What the target showed: per NFS path its real path, its mount (as the result shows it) and
    (free, total) bytes; the local path's (real, free, total) or None; the NFS servers; the text of
    meminfo; the open-files limits (soft, hard) and the fds open now."""

    reals: tuple
    mounts: tuple
    space: tuple
    local: tuple | None
    servers: tuple
    meminfo: str | None
    nofile: tuple
    open_fds: int


@dataclasses.dataclass(frozen=True)
class Plan:
    """The run as planned: the shape (shapes.ShapePlan), the start, the soft open-files limit the run
    raises first (None: enough already), the result before anything ran and the warnings to give."""

    shape: object
    start_at: float
    nofile_soft: int | None
    result: dict
    warnings: tuple = ()


def request_refusal(params):
    """The options' own errors (before the target is looked at), or None."""
    errors = options.option_errors(params)
    return Refusal("; ".join(errors)) if errors else None


def _joined(errors):
    errors = [error for error in errors if error]
    return Refusal("; ".join(errors)) if errors else None


def _space_errors(params, facts, shape_plan, per_path):
    """Each NFS path's bytes (its ranks') and, with local_path, this host's bytes on the local path."""
    errors = []
    for real, needed, (free, total) in zip(facts.reals, per_path, facts.space):
        if len(per_path) == 1 and shape_plan.name in shapes.LAYOUT_SHAPES:
            errors.append(canary_limits.space_error(real, params["ranks"], params["bytes_per_rank"], free, total))
        else:
            errors.append(canary_limits.bytes_space_error(real, needed, free, total))
    if facts.local is not None:
        real, free, total = facts.local
        error = canary_limits.bytes_space_error(real, sum(per_path), free, total)
        errors.append("local_path has no room for this host's checkpoint: %s" % error if error else None)
    return errors


def plan(params, target, now):
    """The Plan over target.facts, or the first Refusal (a Refusal given as target is passed on)."""
    if isinstance(target, Refusal):
        return target
    facts = target.facts
    shape_plan = shapes.resolve(params, len(facts.reals))
    per_path = shapes.bytes_by_path(shape_plan, len(facts.reals))
    error = options.drain_error(params, per_path)
    if error:
        return Refusal(error)
    # Memory and open files for the whole run, then free space: each names every shortfall it found.
    ranks = params["ranks"]
    memory = canary_limits.memory_error(ranks, params["block_size"], canary_limits.mem_available(facts.meminfo),
                                        2 if params["restore"] else 1)
    nofile_soft, fd_error = canary_limits.fd_limit_plan(ranks, facts.open_fds, facts.nofile[0], facts.nofile[1])
    refusal = _joined([memory, fd_error]) or _joined(_space_errors(params, facts, shape_plan, per_path))
    if refusal:
        return refusal
    start_at = options.start_at(params, now)
    result = outcome.initial_result(params, facts.mounts[0], shape_plan.rank_plans(), start_at,
                                    os.path.join(facts.reals[0], canary.WORKDIR_PREFIX + "<host>-<pid>-<token>"))
    result["shape"] = shape_plan.summary()
    if params["paths"]:
        result["mounts"] = list(facts.mounts)
    error = options.start_error(params, now)
    if error:
        return Refusal(error)
    warning = options.late_start_warning(params, now)
    return Plan(shape_plan, start_at, nofile_soft, result, (warning,) if warning else ())
