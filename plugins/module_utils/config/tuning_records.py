# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The client_tuning role's rollback records: each mount's fstab options from before its first tuning.

Pure functions, no I/O, no clock: the caller passes the time stamp (the filter plugin
ckptio.nfs.client_tuning takes it in one place). The state file holds
{path: {src, fstype, opts, recorded_at[, restored_at]}} (roles/client_tuning/README.md).

The cycle, and why:
- A tuning run (profile recorded_mounts: record) adds a record for each mount whose fstab entry
  is about to change and has none, or only one marked restored. First tuning wins: after it,
  fstab holds tuned options and the record is the only copy of the old ones, so an unmarked
  record is never replaced. A marked one described a tuning that was rolled back; the options
  found now are the "before" of the new tuning.
- A rollback run (recorded_mounts: restore) wants a mount's recorded options in place of the
  profile's, with nconnect 1 unless the record says otherwise: the kernel keeps the extra
  connections of a tuned mount until a fresh mount, and nfs_mount compares (and remounts for)
  only wanted options.
- After the rollback's mounts task a record whose mount has nothing pending is marked
  restored_at (an earlier mark is kept, so a finished rollback rewrites nothing); a busy mount's
  record stays unmarked for the next rollback run. Records stay: a later rollback writes the
  same options from them again.
"""

from __future__ import annotations

import copy

# The kernel default (fs/nfs/client.c: one connection unless nconnect is given).
ROLLBACK_NCONNECT = 1
DEFAULT_FSTYPE = "nfs4"


def merge_options(*layers):
    """Later layers win; a None value drops the option (it is left to the kernel's default)."""
    merged = {}
    for layer in layers:
        merged.update(layer or {})
    return dict((name, value) for name, value in merged.items() if value is not None)


def rollback_base(record):
    """The options a rollback starts from: the record's, with nconnect 1 when it has none."""
    opts = dict(record["opts"])
    if "nconnect" not in opts:
        opts["nconnect"] = ROLLBACK_NCONNECT
    return opts


def wanted_mounts(mounts, profile_options, mount_options, records, restore, default_state):
    """Each mount as nfs_mount gets it: {src, path, fstype, opts, state, restore_record}.

    opts: the profile's options (a rollback: the mount's record, see rollback_base), then
    mount_options, then the mount's own opts. restore_record is the record used (None when
    the profile's options were).
    """
    wanted = []
    for mount in mounts:
        record = records.get(mount["path"]) if restore else None
        base = profile_options if record is None else rollback_base(record)
        wanted.append({
            "src": mount["src"],
            "path": mount["path"],
            "fstype": mount.get("fstype") or DEFAULT_FSTYPE,
            "opts": merge_options(base, mount_options, mount.get("opts") or {}),
            "state": mount.get("state") or default_state,
            "restore_record": copy.deepcopy(record),
        })
    return wanted


def records_with_new(records, preview_results, stamp):
    """The records plus one for each previewed mount whose fstab entry is about to change.

    preview_results: nfs_mount's check-mode results (each with item, drift, fstab_options_before).
    A mount keeps an unmarked record; a marked one (restored_at) is replaced.
    """
    result = copy.deepcopy(dict(records))
    for preview in preview_results:
        item = preview["item"]
        found = result.get(item["path"])
        if found is not None and not found.get("restored_at"):
            continue
        if not (preview.get("drift") or {}).get("fstab"):
            continue
        result[item["path"]] = {"src": item["src"], "fstype": item["fstype"],
                                "opts": copy.deepcopy(preview["fstab_options_before"]), "recorded_at": stamp}
    return result


def records_rolled_back(records, mount_results, stamp):
    """The records after a rollback's mounts task: each restored record marked or unmarked.

    mount_results: nfs_mount's results; only those whose item has a restore_record count. A
    mount with nothing pending gets restored_at (its earlier mark if any, else stamp); one
    still pending loses any mark. The mark always ends the record.
    """
    result = copy.deepcopy(dict(records))
    for mount in mount_results:
        item = mount["item"]
        if not item.get("restore_record"):
            continue
        before = result[item["path"]]
        record = dict((key, value) for key, value in before.items() if key != "restored_at")
        if not mount.get("pending"):
            record["restored_at"] = before.get("restored_at") or stamp
        result[item["path"]] = record
    return result
