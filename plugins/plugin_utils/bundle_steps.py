# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A part of a bundle, for both roles that make bundles (checkpoint_capture, canary_validation): the
files of a host's part or of context.yml ([{name, content}], which the action ckptio.nfs.bundle_part
writes), and the canary's and the probe's records (steps behind ckptio.nfs.internal).

The logic is in module_utils/bundle/bundle_part.py (and a client's figures.json in
module_utils/diagnosis/host_figures.py); these wrappers only check their input. Each step's
documentation and argument spec is the YAML file of its name next to this one.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import host_figures
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle_part
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle import CLIENT_FILES

# The records a host's part ends with (after its statistics files): the canary's, the capture's, the probe's.
RECORD_FILES = frozenset(CLIENT_FILES[key] for key in ("canary", "capture", "probe"))


def _mapping(value, name, what, optional=False):
    # A variable a skipped task never set reaches a filter as an Undefined object on ansible-core before
    # 2.19 (2.19 stops before the call). Optional: "not given". Required: Jinja's own undefined error,
    # which Ansible defers until the task's `when` (per item with a loop) has had its say.
    # (told by Jinja's Undefined method, so this file imports nothing beyond ansible-core's own API)
    fail = getattr(type(value), "_fail_with_undefined_error", None)
    if fail is not None:
        if optional:
            return None
        fail(value)
    if value is None and optional:
        return None
    if not isinstance(value, Mapping):
        raise AnsibleFilterError("%s: %s must be a dict, got %s" % (name, what, type(value).__name__))
    return dict(value)


def _read(value, what):
    """A statistics read, or None when there is none: not given, or a task skipped (registered
    with skipped: true, as the canary's reads are when canary_validation_collect_stats is false)."""
    value = _mapping(value, "bundle_host_files", what, optional=True)
    return None if value is None or value.get("skipped") else value


def bundle_host_files(kind, before=None, after=None, dstate_text=None, records=None, samples=None):
    records = _mapping(records, "bundle_host_files", "records ({file key: record})", optional=True)
    samples = _mapping(samples, "bundle_host_files", "samples (the canary's rpc_samples)", optional=True)
    before, after = _read(before, "before"), _read(after, "after")
    try:
        files = bundle_part.host_files(kind, before, after, dstate_text, records, samples)
    except (ValueError, KeyError) as exc:
        raise AnsibleFilterError("bundle_host_files: %s" % exc)
    return _with_figures(files, after) if kind == "clients" and before is not None and after is not None else files


def part_files(part, host=None, before=None, after=None, dstate_text=None, records=None, samples=None, context=None,
               rpc_samples=None):
    """[{name, content}] of one part, names relative to the bundle: clients/<host>/..., servers/<host>/...
    (the statistics, records, host samples and a client's raw sunrpc samples given - rpc_samples, the
    canary's, issue 47) or context.yml. ValueError names what is wrong."""
    given = (before, after, dstate_text, records, samples, rpc_samples)
    if part == "context":
        if context is None or host is not None or any(item is not None for item in given):
            raise ValueError("the context part takes context only")
        return bundle_part.context_part(context)
    if context is not None:
        raise ValueError("context is the context part's; a %s part takes host, before, after, dstate_text, records, "
                         "samples and rpc_samples" % part)
    if not host or "/" in host or host in (".", ".."):
        raise ValueError("a %s part needs host, a directory name, got %r" % (part, host))
    if rpc_samples is not None and part != "clients":
        raise ValueError("rpc_samples (the canary's) are a clients part's, not a %s part's" % part)
    try:
        files = bundle_host_files(part, before, after, dstate_text, records, rpc_samples) + bundle_part.samples_part(part, samples)
    except AnsibleFilterError as exc:
        raise ValueError(str(exc))
    return [dict(item, name="%s/%s/%s" % (part, host, item["name"])) for item in files]


def _with_figures(files, after):
    """files and the client's figures.json (diagnosis/host_figures.py: the diagnosis's own reading of the
    files, which module_utils/bundle cannot import), before the records, so a record written last still
    comes last; files alone where the figures are left out."""
    figures = host_figures.figures_file(files, after)
    if figures is None:
        return files
    records = [index for index, item in enumerate(files) if item["name"] in RECORD_FILES]
    at = records[0] if records else len(files)
    return files[:at] + [figures] + files[at:]


def canary_record(canary, host, start_at, clock, go_plan, read_plan=None):
    try:
        return bundle_part.canary_record(_mapping(canary, "canary_record", "the canary's result"), host, start_at,
                                         _mapping(clock, "canary_record", "clock (clock_offset)"),
                                         _mapping(go_plan, "canary_record", "the go plan (canary_barrier)"),
                                         _mapping(read_plan, "canary_record", "the read go plan", optional=True))
    except KeyError as exc:
        raise AnsibleFilterError("canary_record: the clock or a go plan lacks %s" % exc)


def probe_record(probe, target, seconds, clock=None):
    try:
        return bundle_part.probe_record(_mapping(target, "probe_record", "target (server, port, streams)"), seconds,
                                        _mapping(probe, "probe_record", "the probe's result"),
                                        _mapping(clock, "probe_record", "clock", optional=True))
    except KeyError as exc:
        raise AnsibleFilterError("probe_record: the target lacks %s" % exc)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("probe_record: port, streams and seconds must be integers (%s)" % exc)


# The steps ckptio.nfs.internal calls, by name.
STEPS = {
    "canary_record": canary_record,
    "probe_record": probe_record,
}
