# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which shape x placement options ckptio.nfs.compare_architectures runs, and where each left its bundle.

The default (issue 28): today's shared file on one mount first (the reference the others are compared
with), file per rank on it, file per rank over every mount of ckptio_checkpoint_paths when it lists
several, and file per rank through a local path (burst buffer) when one is given.
"""

from __future__ import annotations

import os
import re

from ansible_collections.ckptio.nfs.plugins.module_utils.canary.shapes import LAYOUT_SHAPES, SHAPES

# The playbook imports validate_checkpoint.yml once per slot (a playbook cannot loop over plays).
MAX_OPTIONS = 6
NAME = re.compile(r"^[A-Za-z0-9._-]+$")
# The time canary_validation puts before a bundle's label (roles/canary_validation/tasks/prepare.yml).
TIMESTAMP = re.compile(r"^[0-9]{8}T[0-9]{6}$")
# canary_validation's own defaults for the shape options (roles/canary_validation/defaults/main.yml).
DEFAULTS = {"shape": "file_per_rank", "paths": None, "local_path": "", "shape_scale": 1.0, "thread_count": 1,
            "num_checkpoints": 1, "drain_rate_limit": 0, "checkpoint_interval_seconds": 0, "restore": False}


class PlanError(ValueError):
    pass


def default_options(mount, paths=None, local_path=""):
    paths = [path for path in (paths or []) if path]
    mount = mount or (paths[0] if paths else "")
    options = [{"name": "shared_file", "shape": "shared_file", "paths": [mount]},
               {"name": "file_per_rank", "shape": "file_per_rank", "paths": [mount]}]
    if len(paths) > 1:
        options.append({"name": "file_per_rank_%d_paths" % len(paths), "shape": "file_per_rank", "paths": list(paths)})
    if local_path:
        options.append({"name": "file_per_rank_async", "shape": "file_per_rank", "paths": [mount], "local_path": local_path})
    return options


def _normalised(index, option, mount, layout):
    if not isinstance(option, dict):
        raise PlanError("ckptio_compare_options[%d] must be a mapping {name, shape, paths, local_path, ...}, got %r" % (index, option))
    unknown = sorted(set(option) - set(DEFAULTS) - {"name"})
    if unknown:
        raise PlanError("ckptio_compare_options[%d]: unknown key(s) %s (known: name, %s)" % (index, ", ".join(unknown), ", ".join(sorted(DEFAULTS))))
    name = option.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        raise PlanError("ckptio_compare_options[%d].name must be letters, digits, '.', '_' or '-' (got %r)" % (index, name))
    result = dict(DEFAULTS, **option)
    if result["shape"] not in SHAPES:
        raise PlanError("ckptio_compare_options[%d].shape must be one of %s (got %r)" % (index, ", ".join(SHAPES), result["shape"]))
    result["paths"] = list(result["paths"] or [mount])
    if not all(isinstance(path, str) and path.startswith("/") for path in result["paths"]):
        raise PlanError("ckptio_compare_options[%d].paths must be absolute mount points (got %r)" % (index, result["paths"]))
    # The canary's layout: the shape itself for the two plain ones (the shapes the canary had before it had
    # shapes), the inventory's otherwise (a shape sets its own).
    result["layout"] = result["shape"] if result["shape"] in LAYOUT_SHAPES else layout
    result["local_path"] = result["local_path"] or ""
    if not isinstance(result["restore"], bool):
        raise PlanError("ckptio_compare_options[%d].restore must be true or false (got %r)" % (index, result["restore"]))
    return result


def compare_options(options, mount, paths=None, local_path="", layout="shared_file"):
    """The options to run, each with every key the playbook passes to canary_validation; PlanError names the bad one."""
    if options is None or options == "":
        options = default_options(mount, paths, local_path)
    if not isinstance(options, list) or not options:
        raise PlanError("ckptio_compare_options must be a non-empty list of options, got %r" % (options,))
    if len(options) > MAX_OPTIONS:
        raise PlanError("ckptio_compare_options: at most %d options in one run (got %d)" % (MAX_OPTIONS, len(options)))
    if not mount and not paths:
        raise PlanError("no checkpoint mount: set ckptio_checkpoint_mount (or ckptio_checkpoint_paths)")
    result = [_normalised(index, option, mount or paths[0], layout) for index, option in enumerate(options)]
    names = [option["name"] for option in result]
    if len(set(names)) != len(names):
        raise PlanError("ckptio_compare_options: each name once (got %s)" % ", ".join(names))
    return result


def option_bundles(options, context_files, reports_dir, since=""):
    """[{name, bundle, shape, paths, local_path}] for compare_report: each option's newest bundle
    <reports_dir>/<time>-<name>/ (canary_validation names it so, the label being the option's name)
    among the found context.yml paths, made at or after `since` (the comparison's own time,
    %Y%m%dT%H%M%S: an older bundle of the same name belongs to another run). An option that left
    none is left out."""
    reports_dir = os.path.normpath(reports_dir)
    found = []
    for option in options:
        suffix = "-" + option["name"]
        bundles = []
        for path in context_files:
            bundle = os.path.dirname(path)
            base = os.path.basename(bundle)
            stamp = base[:-len(suffix)]
            if os.path.dirname(bundle) == reports_dir and base.endswith(suffix) and TIMESTAMP.match(stamp) and stamp >= since:
                bundles.append((stamp, bundle))
        if bundles:
            found.append({"name": option["name"], "bundle": max(bundles)[1], "shape": option["shape"], "paths": option["paths"],
                          "local_path": option["local_path"] or None})
    return found
