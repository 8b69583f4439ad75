# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The `settings` rows every tuning module returns, and the one rule for `in_sync`.

nfs_mount, sunrpc_slot_table and nfsd_threads each return one row per managed option,
{name, wanted, persisted, live, in_sync}, which the audit playbook renders as its drift table.
Whether a row is in sync is decided here, once:

- the persisted side must equal the wanted value, unless the run does not manage it
  (persist: false);
- the live side must match the wanted value, unless the run does not manage it (apply_live:
  false, nfs_mount's state=present, an option the kernel never shows);
- where no live value exists because the kernel module is not loaded (sunrpc, nfs, nfsd), the
  persisted value decides alone: it is what applies when the module loads.

The audit reads each row's verdict here too (status()): the module's in_sync first, and for a row
that is not, whether the persisted value is only waiting for the kernel module to load or the mount
to be made (applies_when_loaded, counted in sync), a remount or restart away (pending), or wrong
(drift). plugin_utils/rollout.py calls status(); it decides nothing of its own.

The live half of a run reports the same triple everywhere, (after, applied, reason): LiveResult.
A plan that must stop the run raises PlanError; the module turns it into fail_json.

Pure functions.
"""

from __future__ import annotations

from collections import namedtuple

# The reasons the modules give when they leave the live side alone (RV live_not_applied_reason).
APPLY_LIVE_FALSE = "apply_live is false"
CHECK_MODE_NOT_WRITTEN = "check mode: live values not written"

LiveResult = namedtuple("LiveResult", ["after", "applied", "reason"])

# A row's status for the audit. Only the first two are in sync (IN_SYNC_STATUSES).
IN_SYNC = "in_sync"
APPLIES_WHEN_LOADED = "applies_when_loaded"
PENDING = "pending"
DRIFT = "drift"
IN_SYNC_STATUSES = (IN_SYNC, APPLIES_WHEN_LOADED)


class PlanError(ValueError):
    """A plan found that the run must stop before changing anything; the message names the option or file."""


def in_sync(wanted, persisted, live, check_persisted=True, check_live=True, live_applicable=True, live_matches=None):
    """True when every side the run manages holds the wanted value.

    live_applicable: False when there is no live value to compare (the kernel module is not
    loaded); then only the persisted value counts, whatever check_persisted says, since the wanted
    value is nowhere if it is not persisted. live_matches(wanted, live): the comparison for the
    live side when it is not plain equality (NFS versions: vers=4 matches a live 4.1).
    """
    if not live_applicable:
        return persisted == wanted
    if check_persisted and persisted != wanted:
        return False
    if check_live and not (live_matches(wanted, live) if live_matches else live == wanted):
        return False
    return True


def row(name, wanted, persisted, live, synced):
    """One settings row; synced is the in_sync() verdict."""
    return {"name": name, "wanted": wanted, "persisted": persisted, "live": live, "in_sync": bool(synced)}


def status(row):
    """The one verdict about a settings row {name, wanted, persisted, live, in_sync} (row()).

    in_sync: the module said so (in_sync() above). applies_when_loaded: no live value (the kernel
    module is not loaded, nfsd stopped, not mounted) and the persisted value is the wanted one,
    which applies when it loads or mounts. pending: persisted as wanted, live still another value
    (a remount or restart away). drift: anything else.
    """
    if row.get("in_sync"):
        return IN_SYNC
    if row.get("persisted") == row.get("wanted"):
        return APPLIES_WHEN_LOADED if row.get("live") is None else PENDING
    return DRIFT


def left_alone(before, wanted_now):
    """The LiveResult of a run with apply_live false: applied only when the live side is wanted already."""
    return LiveResult(before, wanted_now, "" if wanted_now else APPLY_LIVE_FALSE)


def verified(after, mismatched, errors, describe_mismatch):
    """The LiveResult after writing live values and reading them back.

    mismatched: true when the values read back are not all the wanted ones (or a write failed).
    The reason is the write errors; without any, describe_mismatch() says what the kernel kept.
    """
    reasons = list(errors)
    if mismatched and not reasons:
        reasons.append(describe_mismatch())
    return LiveResult(after, not mismatched, "; ".join(reasons))
