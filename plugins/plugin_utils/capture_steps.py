# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side decisions of roles/checkpoint_capture (ckptio.nfs.capture): the window and its
checks, the D-state sampler, each client's capture.json and context.yml (written, with the
statistics files of a host's part, by ckptio.nfs.bundle_part).

The logic is in module_utils/bundle (capture.py); these wrappers only check their input. Steps behind
ckptio.nfs.internal: each one's documentation and argument spec is the YAML file of its name next to this one.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import capture


def _mapping(value, name, what):
    if not isinstance(value, Mapping):
        raise AnsibleFilterError("%s: %s must be a dict, got %s" % (name, what, type(value).__name__))
    return dict(value)


def _number(value, name, option):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise AnsibleFilterError("%s: %s must be a number, got %r" % (name, option, value))


def capture_window(now, seconds=0, start="", end="", marker="", max_seconds=capture.DEFAULT_MAX_SECONDS,
                   max_lead_seconds=capture.DEFAULT_MAX_LEAD_SECONDS, dstate_interval=1.0):
    # A window the options cannot make is returned as errors, not raised: the role's assert then
    # fails with the message naming the option, before anything is read on any host.
    try:
        plan = capture.plan_window(seconds=seconds, start=start, end=end, marker=marker, max_seconds=max_seconds,
                                   max_lead_seconds=max_lead_seconds, dstate_interval=dstate_interval,
                                   now=_number(now, "capture_window", "now"))
    except capture.CaptureError as exc:
        return {"errors": [str(exc)]}
    return dict(plan, errors=[])


def capture_sampling(window, now):
    window = _mapping(window, "capture_sampling", "the window (capture_window)")
    try:
        return capture.sampling(window, _number(now, "capture_sampling", "now"))
    except capture.CaptureError as exc:
        raise AnsibleFilterError(str(exc))
    except KeyError as exc:
        raise AnsibleFilterError("capture_sampling: the window lacks %s (give capture_window's result)" % exc)


def _marker_seen(window, sampler):
    """A marker window's marker_seen: the sampler's dstate_stop.seen (a failed sampler saw nothing);
    None for other windows, and when no sampler ran (check mode skips it): nothing was watched."""
    if not isinstance(window, Mapping) or window.get("kind") != "marker":
        return None
    if not isinstance(sampler, Mapping) or sampler.get("skipped"):
        return None
    stop = sampler.get("dstate_stop")
    return stop.get("seen", False) if isinstance(stop, Mapping) else False


def capture_client(before, mount_point, after, clock=None, sampler=None, marker_seen=None, window=None):
    before = _mapping(before, "capture_client", "the statistics before (nfs_client_stats)")
    after = _mapping(after, "capture_client", "the statistics after (nfs_client_stats)")
    if marker_seen is None:
        marker_seen = _marker_seen(window, sampler)
    return capture.client_record(mount_point, before, after, clock if isinstance(clock, Mapping) else None,
                                 dict(sampler) if isinstance(sampler, Mapping) else None,
                                 None if marker_seen is None else bool(marker_seen))


def capture_context(records, window, mount_point, label, target_window_seconds, target_checkpoint_bytes=0, network=None):
    records = _mapping(records, "capture_context", "the clients' records ({host: capture_client result})")
    try:
        return capture.context_from_records(_mapping(window, "capture_context", "the window"), records, mount_point, label,
                                            int(_number(target_checkpoint_bytes, "capture_context", "target_checkpoint_bytes")),
                                            _number(target_window_seconds, "capture_context", "target_window_seconds"),
                                            dict(network) if network else {})
    except capture.CaptureError as exc:
        raise AnsibleFilterError(str(exc))


# The steps ckptio.nfs.internal calls, by name.
STEPS = {
    "capture_window": capture_window,
    "capture_sampling": capture_sampling,
    "capture_client": capture_client,
    "capture_context": capture_context,
}
