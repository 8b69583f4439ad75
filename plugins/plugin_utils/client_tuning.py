# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side decisions of the client_tuning role: its wanted mounts, rollback records and report.

The role's tasks call these steps; the record logic is in module_utils/config/tuning_records.py.
Not filters of their own: the one public filter ckptio.nfs.internal (plugins/filter/internal.py)
calls them by name, so `ansible-doc -t filter -l ckptio.nfs` lists only what users call. The
documentation of each step is in the YAML file of the same name next to this one.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.json import AnsibleJSONEncoder

try:
    # ansible-core 2.19+: the encoder the to_json filter uses (before 2.19 it used AnsibleJSONEncoder).
    from ansible.module_utils.common.json import get_encoder
except ImportError:
    get_encoder = None

# Keys Ansible's own JSON profiles give a meaning (unsafe text, vaulted values): a state file the
# role wrote never holds them, so one that does was not written by us; 2.19's from_json refuses
# them too, older ones did not, and the state file is read the same way on every version.
ANSIBLE_MARKERS = ("__ansible_unsafe", "__ansible_vault")
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.ckptio.nfs.plugins.module_utils.config import tuning_records

# The format of recorded_at/restored_at (UTC); molecule/default/side_effect.yml matches it.
STAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# Mount changes that unmount first (nfs_mount RV remounted): the drain hook runs before them.
UNMOUNTING = ("umount+mount", "umount")
# A mount (re)made this run, alone on its server, has a new transport and session.
FRESH_MOUNTS = ("umount+mount", "mount")


def utc_stamp(now=None):
    """The one place the role reads the clock: now (or the given datetime) in UTC, as STAMP_FORMAT."""
    if now is None:
        now = datetime.datetime.now(datetime.timezone.utc)
    elif now.tzinfo is not None:
        now = now.astimezone(datetime.timezone.utc)
    return now.strftime(STAMP_FORMAT)


def _to_json(value):
    # What the to_json filter writes (Ansible's default "tagless" profile, json.dumps separators).
    return json.dumps(value, cls=get_encoder("tagless") if get_encoder else AnsibleJSONEncoder)


def _results(registered, name):
    """The items of a registered loop result (a skipped or empty loop has none)."""
    if not isinstance(registered, Mapping):
        raise AnsibleFilterError("%s: expected a registered loop result, got %s" % (name, type(registered).__name__))
    results = registered.get("results", [])
    items_ok = isinstance(results, list) and all(isinstance(result, Mapping) and isinstance(result.get("item"), Mapping)
                                                 for result in results)
    if not items_ok:
        raise AnsibleFilterError("%s: the registered loop result has no results list with items" % name)
    return results


def _mapping(value, name, what):
    if not isinstance(value, Mapping):
        raise AnsibleFilterError("%s: %s must be a mapping, got %s" % (name, what, type(value).__name__))
    return value


def _refuse_markers(obj):
    for key in ANSIBLE_MARKERS:
        if key in obj:
            raise ValueError("it holds Ansible's %s marker, which the role never writes" % key)
    return obj


def client_tuning_state_records(slurped):
    """The state file's records from ansible.builtin.slurp's result; {} when the slurp was skipped (no file)."""
    _mapping(slurped, "client_tuning_state_records", "the slurp result")
    if "content" not in slurped:
        return {}
    source = slurped.get("source", "the state file")
    try:
        text = to_text(base64.b64decode(slurped["content"]), encoding="utf-8")
        # The decoder the from_json filter uses: plain JSON, Ansible's own markers refused.
        return json.loads(text, object_hook=_refuse_markers)
    except (binascii.Error, TypeError, ValueError) as exc:
        raise AnsibleFilterError("client_tuning_state_file: %s is not JSON (%s); fix or remove it (removing it loses "
                                 "the options those mounts had before tuning)" % (source, exc))


def client_tuning_wanted_mounts(mounts, profile, mount_options, records, default_state):
    name = "client_tuning_wanted_mounts"
    if not isinstance(mounts, list) or not all(isinstance(mount, Mapping) for mount in mounts):
        raise AnsibleFilterError("%s: client_tuning_mounts must be a list of mappings" % name)
    _mapping(profile, name, "the profile data")
    return tuning_records.wanted_mounts(mounts, _mapping(profile.get("mount_options") or {}, name, "the profile's mount_options"),
                                        _mapping(mount_options, name, "client_tuning_mount_options"),
                                        _mapping(records, name, "the records"),
                                        profile.get("recorded_mounts") == "restore", default_state)


def client_tuning_records(records, preview, profile, now=None):
    name = "client_tuning_records"
    _mapping(records, name, "the records")
    if _mapping(profile, name, "the profile data").get("recorded_mounts") != "record":
        return dict(records)
    return tuning_records.records_with_new(records, _results(preview, name), utc_stamp(now))


def client_tuning_records_rolled_back(records, mount_result, now=None):
    name = "client_tuning_records_rolled_back"
    return tuning_records.records_rolled_back(_mapping(records, name, "the records"), _results(mount_result, name),
                                              utc_stamp(now))


def client_tuning_drain_needed(preview, has_hooks, apply_policy):
    """Whether applying would unmount a mount: only then does the drain hook run."""
    if not has_hooks or apply_policy != "when_idle":
        return False
    results = _results(preview, "client_tuning_drain_needed")
    # A mounted mount whose live options differ is unmounted and mounted again when idle.
    return (any(result.get("remounted") in UNMOUNTING for result in results)
            or any(result["item"].get("state") == "mounted" and result.get("live_options")
                   and (result.get("drift") or {}).get("live") for result in results))


def _sunrpc_lines(sunrpc, wanted, state, apply_live, mount_results):
    """changed, pending, warnings and settings rows of the slot table result."""
    changed, pending, settings = [], [], []
    if sunrpc.get("changed"):
        values = ", ".join("%s=%s" % (key, value) for key, value in wanted.items())
        if state == "absent":
            changed.append("sunrpc/nfs slots: persisted ckptio values removed, live set to " + values)
        else:
            changed.append("sunrpc/nfs slots: " + values)
    settings.extend(dict(row, scope="client") for row in sunrpc.get("settings", []))
    reason = sunrpc.get("live_not_applied_reason", "")
    if apply_live and not sunrpc.get("live_applied", True) and reason:
        pending.append("sunrpc/nfs live values not applied: %s" % reason)
    fresh = [result["item"]["path"] for result in mount_results
             if result.get("remounted", "none") in FRESH_MOUNTS and not result.get("same_server_mounts", [])]
    for mount in sunrpc.get("mounts_pending_remount", []):
        if mount["mount_point"] not in fresh:
            pending.append("remount %s (%s, vers %s) for new slot values: %s"
                           % (mount["mount_point"], mount["server"], mount["vers"], mount["reason"]))
    return changed, pending, list(sunrpc.get("warnings", [])), settings


def _mount_lines(result):
    """changed, pending, warnings and settings rows of one nfs_mount result."""
    path = result["item"]["path"]
    changed, pending, warnings = [], [], []
    if result.get("failed"):
        pending.append("%s: failed: %s" % (path, result.get("msg", "")))
    if result.get("changed"):
        how = result.get("remounted", "none")
        changed.append("mount %s%s" % (path, " (live: %s)" % how if how != "none" else " (fstab)"))
    settings = [dict(row, scope=path) for row in result.get("settings", [])]
    for entry in result.get("pending", []):
        pending.append("%s: %s=%s (live %s) pending: %s"
                       % (path, entry["name"], entry["wanted"], entry.get("live", "none"), entry["reason"]))
    for holder in result.get("holders", []):
        pending.append("%s: held by pid %s (%s): %s" % (path, holder["pid"], holder["command"], holder["how"]))
    for entry in result.get("negotiated", []):
        warnings.append("%s: %s negotiated to %s: %s" % (path, entry["name"], entry["live"], entry["reason"]))
    warnings.extend(result.get("warnings", []))
    return changed, pending, warnings, settings


def _restored_lines(mount_results, records, state_file):
    """Which mounts got their recorded options back; only the run that marks a record says so in changed."""
    changed, pending, restored = [], [], []
    for result in mount_results:
        item = result["item"]
        record = item.get("restore_record")
        if not record:
            continue
        restored_at = records.get(item["path"], {}).get("restored_at")
        restored.append({"path": item["path"], "recorded_at": record.get("recorded_at"), "recorded_opts": record["opts"],
                         "opts": item["opts"], "restored_at": restored_at})
        if restored_at and not record.get("restored_at"):
            changed.append("mount %s: back to its options from before tuning (recorded %s): %s; record marked restored in %s"
                           % (item["path"], record.get("recorded_at", "?"), _to_json(item["opts"]), state_file))
        elif not restored_at:
            pending.append("%s: not fully back to its options from before tuning (see its pending entries); "
                           "the record stays unmarked in %s for the next rollback run" % (item["path"], state_file))
    return changed, pending, restored


def client_tuning_report(mount_result, sunrpc_result, sunrpc_wanted, profile, profile_data, records, state_file,
                         apply_live=True, check_mode=False):
    """The per-host summary the playbooks' final play, audit.yml and molecule read."""
    name = "client_tuning_report"
    mount_results = _results(mount_result, name)
    sunrpc = _mapping(sunrpc_result or {}, name, "the sunrpc_slot_table result")
    records = _mapping(records or {}, name, "the records")
    changed, pending, warnings, settings = [], [], [], []
    # A skipped slot table task (no sunrpc value wanted) adds nothing.
    if sunrpc and not sunrpc.get("skipped"):
        parts = _sunrpc_lines(sunrpc, _mapping(sunrpc_wanted, name, "the wanted sunrpc values"),
                              _mapping(profile_data, name, "the profile data").get("sunrpc_state"), apply_live, mount_results)
        for into, part in zip((changed, pending, warnings, settings), parts):
            into.extend(part)
    for result in mount_results:
        for into, part in zip((changed, pending, warnings, settings), _mount_lines(result)):
            into.extend(part)
    restored_changed, restored_pending, restored = _restored_lines(mount_results, records, state_file)
    changed.extend(restored_changed)
    pending.extend(restored_pending)
    return {"role": "client_tuning", "profile": profile, "check_mode": check_mode, "changed": changed, "pending": pending,
            "warnings": warnings, "settings": settings, "restored": restored}


# The steps ckptio.nfs.internal calls, by name.
STEPS = {
    "client_tuning_state_records": client_tuning_state_records,
    "client_tuning_wanted_mounts": client_tuning_wanted_mounts,
    "client_tuning_records": client_tuning_records,
    "client_tuning_records_rolled_back": client_tuning_records_rolled_back,
    "client_tuning_drain_needed": client_tuning_drain_needed,
    "client_tuning_report": client_tuning_report,
}
