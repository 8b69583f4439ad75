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
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import shapes


# Seconds a canary may be told to wait: a day is far beyond any checkpoint (the lab's longest run is
# minutes); above it a typo (1e12) would hold the play for ever, and inf and nan slipped through `<= 0`.
DAY_SECONDS = 86400.0
# Every float option: (lowest, low included, highest), each checked finite first, in one rule (float_errors).
# shape_scale above 1000 makes the 1t model's shards petabytes; start_at's window is checked by start_error.
FLOAT_OPTIONS = {
    "timeout": (0.0, False, DAY_SECONDS),
    "barrier_timeout": (0.0, False, DAY_SECONDS),
    "kill_grace": (0.0, True, 3600.0),
    "shape_scale": (0.0, False, 1000.0),
    "start_at": (None, True, None),
}


def float_errors(params, table=None):
    """Errors of the float options (table: {name: (lowest, low included, highest)}, FLOAT_OPTIONS by default): each
    must be a finite number within its range; None (not given) is fine. A message naming the option each."""
    errors = []
    for name, (low, low_included, high) in sorted((table or FLOAT_OPTIONS).items()):
        value = params.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            errors.append("%s must be a finite number, got %s" % (name, value))
        elif low is not None and (value < low or (value == low and not low_included)):
            errors.append("%s must be %s %g, got %s" % (name, "at least" if low_included else "greater than", low, value))
        elif high is not None and value > high:
            errors.append("%s must be at most %g, got %s" % (name, high, value))
    return errors


def option_errors(params):
    """Every error of the size, layout, restore and time options (a message naming the option each).

    The float options first, alone: the other checks do arithmetic on them (shape_scale x a model's bytes)."""
    errors = float_errors(params)
    if errors:
        return errors
    shape = params.get("shape")
    layout = params["layout"] if not shape else (shape if shape in plan.LAYOUTS else "file_per_rank")
    errors = plan.validate_plan(params["ranks"], params["bytes_per_rank"], params["block_size"],
                                layout, params["files_per_rank"], params["direct"])
    errors += shapes.validate(params)
    errors += placement_errors(params)
    errors += [e for e in (limits.block_size_error(params["block_size"]),) if e]
    errors += restore.validate_restore(params["restore"], params["restore_cache"], params["fsync"],
                                       params["block_size"], params["bytes_per_rank"])
    return errors


def placement_errors(params):
    """Errors of paths, local_path and the drain's options (the paths themselves: host/canary/target.open_places)."""
    errors = []
    if params["drain_rate_limit"] < 0:
        errors.append("drain_rate_limit must be 0 (no cap) or more, got %d" % params["drain_rate_limit"])
    if params["checkpoint_interval_seconds"] < 0:
        errors.append("checkpoint_interval_seconds must be 0 (not given) or more, got %d" % params["checkpoint_interval_seconds"])
    if params["local_path"]:
        if params["restore"]:
            errors.append("restore=true cannot be combined with local_path (the read-back of a drained checkpoint is not built)")
        if len(params["paths"]) > 1 and shapes.shape_name(params) == "shared_file":
            errors.append("local_path with several paths needs a shape other than shared_file (one shared file a path)")
    elif params["drain_rate_limit"]:
        errors.append("drain_rate_limit needs local_path (only a burst buffer drains)")
    if params["thread_count"] != 1 and shapes.shape_name(params) != "torch_dcp":
        errors.append("thread_count needs shape=torch_dcp, got shape %s" % shapes.shape_name(params))
    return errors


def drain_error(params, bytes_by_path):
    """Refuse a drain that provably cannot fit the interval: this host's bytes / drain_rate_limit > checkpoint_interval_seconds."""
    interval, rate = params["checkpoint_interval_seconds"], params["drain_rate_limit"]
    total = sum(bytes_by_path)
    if params["local_path"] and interval and rate and total / float(rate) > interval:
        return ("checkpoint_interval_seconds=%d is shorter than the drain: this host's %d bytes at drain_rate_limit=%d B/s"
                " take %.1f s at least" % (interval, total, rate, total / float(rate)))
    return None


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
