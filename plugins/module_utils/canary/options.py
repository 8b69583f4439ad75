# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint_canary's options, checked before anything is opened, forked or written (pure)."""

from __future__ import annotations

import math
import posixpath

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import barrier
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import limits
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import restore


def option_errors(params):
    """Every error of the size, layout, restore and time options (a message naming the option each)."""
    errors = plan.validate_plan(params["ranks"], params["bytes_per_rank"], params["block_size"],
                                params["layout"], params["files_per_rank"], params["direct"])
    errors += [e for e in (limits.block_size_error(params["block_size"]),) if e]
    errors += restore.validate_restore(params["restore"], params["restore_cache"], params["fsync"],
                                       params["block_size"], params["bytes_per_rank"])
    if params["timeout"] <= 0:
        errors.append("timeout must be greater than 0, got %s" % params["timeout"])
    if params["kill_grace"] < 0:
        errors.append("kill_grace must be 0 or more, got %s" % params["kill_grace"])
    return errors


def start_at(params, now):
    """The epoch the ranks wait for before any go file: start_at without a barrier, else now."""
    if params["start_at"] is not None and params["barrier_dir"] is None:
        return params["start_at"]
    return now


def start_error(params, now):
    """The start options' error, or None (barrier_files.prepare_dir checks barrier_dir again)."""
    use_barrier = params["barrier_dir"] is not None
    if use_barrier and not posixpath.isabs(params["barrier_dir"]):
        return "barrier_dir must be absolute, got %r" % params["barrier_dir"]
    if not math.isfinite(params["barrier_timeout"]) or params["barrier_timeout"] <= 0:
        return "barrier_timeout must be a finite number greater than 0, got %s" % params["barrier_timeout"]
    if params["start_at"] is not None and not use_barrier:
        # The go files' bound (barrier.go_time_error): a year ahead would hold the ranks for a year.
        error = barrier.go_time_error(params["start_at"], now, params["barrier_timeout"], "start_at")
        if error:
            return "%s (barrier_timeout=%s bounds it)" % (error, params["barrier_timeout"])
    return None


def late_start_warning(params, now):
    if params["start_at"] is not None and params["barrier_dir"] is None and params["start_at"] < now:
        return ("start_at is %.1f s in the past: ranks start late and max_start_delay_seconds shows it"
                % (now - params["start_at"]))
    return None
