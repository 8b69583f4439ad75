# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What nfs_mount does with one mount: the fstab edit, the live action, and what stays pending.

Pure: the module reads the views and passes them in; nothing here opens a file, runs a command
or reads the clock.

- Views: the fstab (text, mtime, the entry for the path), the live mount (mountinfo with the
  mountstats opts line merged in, which shows the values the kernel negotiated), and the
  holders of the mount point. Holders cost a scan of every /proc/<pid>, so the module reads
  them only when a plan asks for them: plan() with views.holders None returns HOLDERS_NEEDED
  (needs_holders true) as soon as an unmount is on the table, and the module plans again with them.
- plan(views, wanted) -> MountPlan, or HOLDERS_NEEDED when it reached an unmount and the
  holders were not read: the fstab text after the run, the drift of fstab and of the live mount,
  the live action ('mount', 'umount+mount', 'remount', 'umount' or None), and the pending
  changes, negotiated sizes and warnings it found. It builds its answer once, changes nothing.
- verify(live, wanted, plan, remounted, notes) -> Notes: what the kernel did not take, from
  the live view read again after the action.
- report(...) -> the module result, for a real run (a tuning_flow.Outcome whose detail is a
  MountAction) or (outcome None) as found in check mode.

A plain `mount -o remount` silently ignores nconnect and cannot change rsize, wsize, vers,
proto, timeo, retrans, sec or the attribute cache times (ansible.posix.mount issue 85): such
changes need umount and mount, which this plan asks for only when nothing holds the mount.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Optional

from ansible_collections.ckptio.nfs.plugins.module_utils.config import fstab as fstab_edit
from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfs_options
from ansible_collections.ckptio.nfs.plugins.module_utils.config import settings
from ansible_collections.ckptio.nfs.plugins.module_utils.config import tuning_flow
from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import (
    NFS_FSTYPES, nfs_mounts, nfs_server_of, nfs_version_of, split_options,
)

# mountstats `age:` counts whole seconds, so now - age lies up to 1 s after the real mount time.
# A mount this module makes follows its fstab write by a fraction of a second and must count
# as newer; a mount left busy is older than the fstab change by far more than the 1 s of doubt.
AGE_TOLERANCE_SECONDS = 0

POLICY_NEVER_REASON = "apply_policy is never: persisted only, nothing unmounted"


# The run must stop before changing anything (settings.PlanError, shared by the three plans).
PlanError = settings.PlanError


@dataclass(frozen=True)
class HoldersNeeded:
    """plan()'s answer when it reached an unmount and views.holders is None: read them, plan again."""

    needs_holders: bool = True
    warnings: tuple = ()


HOLDERS_NEEDED = HoldersNeeded()


# ---- the arguments and the views -------------------------------------------------------------
@dataclass(frozen=True)
class Wanted:
    """The validated arguments of one run (wanted_from_params builds it)."""

    state: str
    path: str
    src: Optional[str]
    server: Optional[str]
    fstype: str
    options: Mapping[str, Any]
    dump: int
    passno: int
    policy: str
    replace_foreign: bool
    fstab_path: str

    @property
    def opts_text(self):
        return nfs_options.render_options(self.options)


def wanted_from_params(params):
    """Wanted from the module's params; PlanError naming the option when one is unusable."""
    state, src = params["state"], params["src"]
    if src is None and state in ("mounted", "present"):
        # required_if does not see the default state, so check it here too.
        raise PlanError("src: required when state is %s (server:/export)" % state)
    try:
        path = nfs_options.validate_path(params["path"])
        server = nfs_options.validate_src(src) if src is not None else None
        options = nfs_options.normalize_wanted(params["opts"], params["fstype"])
    except nfs_options.OptionError as exc:
        raise PlanError(str(exc))
    for name in ("dump", "passno"):
        if not 0 <= params[name] <= 9:
            raise PlanError("%s: %d is outside 0..9" % (name, params[name]))
    if not os.path.isabs(params["fstab"]):
        # A relative fstab would be created in whatever directory the module runs from.
        raise PlanError("fstab: %r must be an absolute path" % (params["fstab"],))
    return Wanted(state, path, src, server, params["fstype"], options, params["dump"], params["passno"],
                  params["apply_policy"], params["replace_foreign"], params["fstab"])


@dataclass(frozen=True)
class FstabView:
    """The fstab as read: text ('' when missing), mtime (None when missing), the entry for the
    path and its options (canonical form, {} without an entry)."""

    text: str
    mtime: Optional[float]
    index: Optional[int]
    line: Optional[str]
    entry: Optional[Mapping[str, Any]]
    options: Mapping[str, Any]


def fstab_view(text, mtime, path):
    """FstabView of fstab text (None: the file is missing); PlanError when path has several entries."""
    text = text or ""
    lines = fstab_edit.split_lines(text)
    try:
        index = fstab_edit.find_entry(lines, path)
    except fstab_edit.FstabError as exc:
        raise PlanError("fstab: %s" % exc)
    line = lines[index] if index is not None else None
    entry = fstab_edit.parse_entry(line) if line is not None else None
    options = nfs_options.canonical_options(split_options(entry["opts"])) if entry else {}
    return FstabView(text, mtime, index, line, entry, options)


@dataclass(frozen=True)
class LiveView:
    """mountinfo as read: every mount, the one on the path (None when not mounted), its mountstats age."""

    mounts: list
    live: Optional[Mapping[str, Any]]
    age: Optional[int] = None

    def canonical(self):
        return nfs_options.canonical_options(self.live["options"]) if self.live is not None else {}


def live_mount(mounts, path):
    """The mount processes see at path (None when not mounted); PlanError when it is not NFS."""
    on_path = [mount for mount in mounts if mount["mount_point"] == path]
    # With stacked mounts the last one in mountinfo is the one processes see.
    live = on_path[-1] if on_path else None
    if live is not None and live["fstype"] not in NFS_FSTYPES:
        raise PlanError("path: %s is mounted with fstype %s, not NFS; refusing to manage it" % (path, live["fstype"]))
    return live


@dataclass(frozen=True)
class Views:
    """Everything plan() reads. path_is_dir is read only when nothing is mounted at the path (a
    stat of a hung NFS mount would block); holders is None until the plan asks for them."""

    fstab: FstabView
    live: LiveView
    now: float
    path_is_dir: Optional[bool] = None
    holders: Optional[list] = None

    def with_holders(self, holders):
        return replace(self, holders=holders)


# ---- what a run reports beside its actions -----------------------------------------------------
@dataclass
class Notes:
    """Pending changes, negotiated sizes and warnings, in the order they were found.

    Not a record: the accumulator a step fills while it works (plan's live half, the action, verify).
    same_server_mounts: None unless the step looked at them.
    """

    pending: list = field(default_factory=list)
    negotiated: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    same_server_mounts: Optional[list] = None

    def add_pending(self, drift, reason):
        for name, values in drift.items():
            self.pending.append({"name": name, "wanted": values.get("wanted"), "live": values.get("live"), "reason": reason})

    def add_negotiated(self, path, name, values):
        reason = ("the server caps %s at %s (its max_block_size, /proc/fs/nfsd/max_block_size); "
                  "raise it on the server before nfsd starts to get %s" % (name, values["live"], values["wanted"]))
        self.negotiated.append({"name": name, "wanted": values["wanted"], "live": values["live"], "reason": reason})
        self.warn("%s: %s" % (path, reason))

    def warn(self, message):
        self.warnings.append(message)


@dataclass(frozen=True)
class MountPlan:
    """What a run does: the fstab after it (its drift, the entry's options after a real run in
    canonical form), the live action, and the drift and notes behind it."""

    fstab_after: str
    fstab_drift: Mapping[str, Any]
    fstab_options: Mapping[str, Any]
    action: Optional[str]
    live_before: Mapping[str, Any]
    live_drift: Mapping[str, Any]
    same_server_mounts: list
    holders: list
    pending: list
    negotiated: list
    warnings: list
    needs_holders: bool = False

    def pending_names(self):
        return set(item["name"] for item in self.pending)


@dataclass(frozen=True)
class LiveDecision:
    """The live half of a plan: the action, the drift behind it, the holders looked at, the notes."""

    action: Optional[str]
    drift: Mapping[str, Any]
    holders: list
    notes: Notes


# ---- the plan ------------------------------------------------------------------------------------
def plan(views, wanted):
    """The MountPlan of a run, or HOLDERS_NEEDED when it reached an unmount without views.holders."""
    fstab_after, fstab_drift, fstab_options = plan_fstab(views.fstab, wanted)
    live_before = views.live.canonical()
    same_server, sharing = same_server_mounts(views.live.mounts, views.live.live, wanted)
    decision = _plan_live(views, wanted, live_before, sharing, fstab_drift)
    if decision is HOLDERS_NEEDED:
        return HOLDERS_NEEDED
    notes = decision.notes
    return MountPlan(fstab_after=fstab_after, fstab_drift=fstab_drift, fstab_options=fstab_options,
                     action=decision.action, live_before=live_before, live_drift=decision.drift,
                     same_server_mounts=same_server, holders=decision.holders, pending=notes.pending,
                     negotiated=notes.negotiated, warnings=notes.warnings)


def _refuse_foreign_entry(fstab, wanted):
    """PlanError when the entry at path is not NFS (a local disk not mounted now) unless replace_foreign."""
    entry = fstab.entry
    if entry is None or entry["fstype"] in NFS_FSTYPES or wanted.replace_foreign:
        return
    verb = "remove" if wanted.state == "absent" else "replace"
    raise PlanError("fstab: line %d of %s is a %s entry for %s, not NFS: %r; refusing to %s it "
                    "(set replace_foreign: true to %s it)"
                    % (fstab.index + 1, wanted.fstab_path, entry["fstype"], wanted.path,
                       fstab.line.rstrip("\r\n"), verb, verb))


def plan_fstab(fstab, wanted):
    """(text after, drift, options after) of the fstab: only the line for the path changes."""
    entry = fstab.entry
    if wanted.state != "unmounted":
        _refuse_foreign_entry(fstab, wanted)
    if wanted.state == "absent":
        drift = {"entry": {"wanted": None, "fstab": entry["src"]}} if entry is not None else {}
        return fstab_edit.remove_entry(fstab.text, wanted.path)[0], drift, {}
    if wanted.state == "unmounted":
        return fstab.text, {}, dict(fstab.options)
    if entry is None:
        drift = {"entry": {"wanted": wanted.src, "fstab": None}}
    else:
        drift = nfs_options.fstab_drift(wanted.options, fstab.options)
        for name, want, found in (("src", wanted.src, entry["src"]), ("fstype", wanted.fstype, entry["fstype"]),
                                  ("dump", str(wanted.dump), entry["dump"]), ("passno", str(wanted.passno), entry["passno"])):
            if want != found:
                drift[name] = {"wanted": want, "fstab": found}
    after = fstab.text
    if drift:
        fields = fstab_edit.format_fields(wanted.src, wanted.path, wanted.fstype, wanted.opts_text, wanted.dump, wanted.passno)
        try:
            after = fstab_edit.set_entry(fstab.text, wanted.path, fields)[0]
        except fstab_edit.FstabError as exc:
            raise PlanError("fstab: %s" % exc)
    return after, drift, dict(wanted.options)


def _plan_live(views, wanted, live_before, sharing, fstab_drift):
    """The LiveDecision (or HOLDERS_NEEDED) for the live mount."""
    live = views.live.live
    if wanted.state in ("unmounted", "absent"):
        if live is None:
            return LiveDecision(None, {}, [], Notes())
        return _unmount(views, wanted, {"mounted": {"wanted": False, "live": True}})
    if live is None:
        if wanted.state != "mounted":
            return LiveDecision(None, {}, [], Notes())
        if not views.path_is_dir:
            raise PlanError("path: %s does not exist or is not a directory; create the mount point first" % wanted.path)
        return LiveDecision("mount", {"mounted": {"wanted": True, "live": False}}, [], Notes())
    notes = Notes()
    drift = live_drift(live_before, live, wanted)
    _split_negotiated(drift, live_before, views, wanted, fstab_drift, notes)
    if not drift:
        return LiveDecision(None, drift, [], notes)
    if wanted.state == "present":
        notes.add_pending(drift, "state is present: the live mount is left alone")
        return LiveDecision(None, drift, [], notes)
    return _fresh_mount_or_remount(drift, sharing, views, wanted, notes)


def _unmount(views, wanted, drift):
    """'umount' when the mount is idle, else nothing and the reason as pending (or HOLDERS_NEEDED)."""
    busy = _busy_reason(views, wanted)
    if busy is HOLDERS_NEEDED:
        return busy
    reason, holders = busy
    notes = Notes()
    if reason:
        notes.add_pending(drift, reason)
        notes.warn("%s: %s" % (wanted.path, reason))
        return LiveDecision(None, drift, holders, notes)
    return LiveDecision("umount", drift, holders, notes)


def _fresh_mount_or_remount(drift, sharing, views, wanted, notes):
    """'remount' when a remount can apply the drift, 'umount+mount' when the mount is idle, else what is left."""
    fresh = nfs_options.needs_fresh_mount(drift)
    if not fresh:
        return LiveDecision("remount", drift, [], notes)
    if "nconnect" in drift and sharing:
        reason = nconnect_reason(sharing, wanted, views.live.live)
        notes.add_pending({"nconnect": drift["nconnect"]}, reason)
        notes.warn("%s: %s" % (wanted.path, reason))
        fresh = [name for name in fresh if name != "nconnect"]
        if not fresh:
            return LiveDecision("remount" if any(name != "nconnect" for name in drift) else None, drift, [], notes)
    busy = _busy_reason(views, wanted)
    if busy is HOLDERS_NEEDED:
        return busy
    reason, holders = busy
    if reason:
        notes.add_pending({name: drift[name] for name in drift if name in fresh}, reason)
        notes.warn("%s: %s pending: %s" % (wanted.path, ", ".join(fresh), reason))
        remountable = [name for name in drift if name not in fresh and name != "nconnect"]
        return LiveDecision("remount" if remountable else None, drift, holders, notes)
    return LiveDecision("umount+mount", drift, holders, notes)


def describe_holders(holders, limit=10):
    """One sentence naming the holders (pid, command, how) for a message."""
    parts = []
    for holder in holders[:limit]:
        if holder["pid"] is None:
            parts.append(holder["how"])
        else:
            parts.append("pid %s (%s) %s" % (holder["pid"], holder["command"], holder["how"]))
    if len(holders) > limit:
        parts.append("and %d more" % (len(holders) - limit))
    return "; ".join(parts)


def _busy_reason(views, wanted):
    """(reason the mount may not be unmounted or None, the holders looked at), or HOLDERS_NEEDED."""
    if wanted.policy == "never":
        return POLICY_NEVER_REASON, []
    if views.holders is None:
        return HOLDERS_NEEDED
    if views.holders:
        return "mount is busy, nothing unmounted: %s" % describe_holders(views.holders), views.holders
    return None, views.holders


def live_drift(live_options, live, wanted):
    """Wanted options (and src) the live mount does not show with the wanted value."""
    drift = nfs_options.live_drift(wanted.options, live_options)
    if live is not None and wanted.src is not None and live["source"] != wanted.src:
        drift["src"] = {"wanted": wanted.src, "live": live["source"]}
    return drift


def mounted_after_fstab_change(views):
    if views.live.age is None or views.fstab.mtime is None:
        return False
    return views.now - views.live.age >= views.fstab.mtime - AGE_TOLERANCE_SECONDS


def _split_negotiated(drift, live_options, views, wanted, fstab_drift, notes):
    """Move rsize/wsize the server capped out of drift (the plan's own dict, not yet returned) into
    notes (only for a mount made with them)."""
    capped = nfs_options.negotiated_down(wanted.options, live_options)
    fstab_had_it = views.fstab.entry is not None and not fstab_drift
    for name, values in capped.items():
        if name in drift and fstab_had_it and mounted_after_fstab_change(views):
            del drift[name]
            notes.add_negotiated(wanted.path, name, values)


def same_server_mounts(mounts, live, wanted):
    """(every other live NFS mount of the same server, those of them that share the NFS client)."""
    identities = set()
    if wanted.server:
        identities.add(wanted.server)
    if live is not None:
        identities.add(nfs_server_of(live))
    own_vers = nfs_version_of(live) if live is not None else wanted.options.get("vers")
    found = []
    for mount in nfs_mounts(mounts):
        if mount["mount_point"] == wanted.path:
            continue
        source_host = nfs_server_of({"options": {}, "source": mount["source"]})
        if nfs_server_of(mount) not in identities and source_host not in identities:
            continue
        vers = nfs_version_of(mount)
        shares = own_vers is None or nfs_options.values_match("vers", own_vers, vers) \
            or nfs_options.values_match("vers", vers, own_vers)
        found.append({"mount_point": mount["mount_point"], "source": mount["source"], "vers": vers,
                      "nconnect": mount["options"].get("nconnect", "1"), "shares_client": bool(shares)})
    return found, [mount for mount in found if mount["shares_client"]]


def nconnect_reason(sharing, wanted, live):
    names = ", ".join("%s (nconnect=%s)" % (mount["mount_point"], mount["nconnect"]) for mount in sharing)
    return ("nconnect is fixed per server and NFS version by the first mount: %s share the client of %s; "
            "all of them must be unmounted before nconnect=%s takes effect (this module does not unmount them)"
            % (names, wanted.server or nfs_server_of(live), wanted.options.get("nconnect")))


# ---- the commands --------------------------------------------------------------------------------
def raw_options(options):
    return ",".join(name if value is None else "%s=%s" % (name, value) for name, value in options.items())


def mount_argv(wanted):
    return ["mount", "-t", wanted.fstype, "-o", wanted.opts_text, wanted.src, wanted.path]


def remount_argv(wanted, plan_):
    """`mount -o remount,...` with only the remount-capable changes that are not pending."""
    names = [name for name in plan_.live_drift if name not in plan_.pending_names()]
    return ["mount", "-o", "remount," + nfs_options.remount_options(wanted.options, names), wanted.path]


def restore_argv(live, path):
    """The mount as it was (type, options as shown, source): run when the new options fail."""
    return ["mount", "-t", live["fstype"], "-o", raw_options(live["options"]), live["source"], path]


# ---- after the action ----------------------------------------------------------------------------
def verify(live_view, wanted, plan_, remounted, notes):
    """Notes on what the kernel did not take, from the live view read again after the action.

    notes: what the action itself found (a failed umount's pending changes). Sets
    same_server_mounts on the result when it had to look at them again.
    """
    found = Notes()
    live = live_view.live
    if wanted.state != "mounted" or live is None:
        if wanted.state == "mounted":
            raise PlanError("%s is not mounted after mount returned success" % wanted.path)
        return found
    live_options = live_view.canonical()
    drift = live_drift(live_options, live, wanted)
    known = plan_.pending_names() | set(item["name"] for item in notes.pending)
    if remounted in ("mount", "umount+mount"):
        # Just mounted with the wanted sizes: anything lower was the server's answer.
        negotiated = [item["name"] for item in plan_.negotiated]
        for name, values in nfs_options.negotiated_down(wanted.options, live_options).items():
            drift.pop(name, None)
            if name not in known and name not in negotiated:
                found.add_negotiated(wanted.path, name, values)
    if "nconnect" in drift and "nconnect" not in known:
        found.same_server_mounts, sharing = same_server_mounts(live_view.mounts, live, wanted)
        reason = nconnect_reason(sharing, wanted, live) if sharing else \
            "the kernel kept nconnect=%s (verified in mountinfo after %s)" % (live_options.get("nconnect", "1"), remounted)
        found.add_pending({"nconnect": drift.pop("nconnect")}, reason)
        found.warn("%s: %s" % (wanted.path, reason))
    leftover = {name: values for name, values in drift.items() if name not in known}
    if leftover:
        reason = "not applied by the kernel (verified in mountinfo after %s)" % remounted
        found.add_pending(leftover, reason)
        found.warn("%s: %s %s" % (wanted.path, ", ".join(sorted(leftover)), reason))
    return found


@dataclass(frozen=True)
class MountAction:
    """nfs_mount's detail of a tuning_flow.Outcome: the live action run ('none' when none
    completed) and the Notes of the action and of verify()."""

    remounted: str
    notes: tuple = ()


def outcome(backups, remounted, live, notes=(), warnings=()):
    """The tuning_flow.Outcome of a real run: {fstab: backup}, the action, the live mount after it, the
    notes, and the warnings the flow still has to say."""
    return tuning_flow.Outcome(live, remounted != "none", dict(backups), tuple(warnings), MountAction(remounted, tuple(notes)))


# ---- the result ----------------------------------------------------------------------------------
def predicted_live(wanted, plan_):
    """The live options check mode expects after the action (for the diff only)."""
    if plan_.action == "umount":
        return {}
    if plan_.action == "mount":
        return {name: value for name, value in wanted.options.items()
                if name not in nfs_options.FSTAB_ONLY and not name.startswith("x-")}
    live = dict(plan_.live_before)
    if plan_.action:
        for name in plan_.live_drift:
            if name in wanted.options and name not in plan_.pending_names():
                live[name] = wanted.options[name]
    return live


def live_text(wanted, live, options=None):
    """One line for the live diff: the mount as shown, the predicted options, or 'not mounted'."""
    if live is None and options is None:
        return "not mounted\n"
    if options is not None:
        return "%s %s %s\n" % (wanted.src, wanted.path, nfs_options.render_options(options))
    return "%s %s %s\n" % (live["source"], live["mount_point"], raw_options(live["options"]))


def settings_rows(wanted, persisted, persisted_src, live, live_src):
    """The audit rows (settings.row) for src and each wanted option.

    The fstab entry must hold the wanted value; the live mount must show it too, except with
    state=present (the live mount is left alone) and for options the kernel never shows.
    """
    present = wanted.state == "present"
    rows = []
    for name, want in wanted.options.items():
        live_value = live.get(name, nfs_options.KERNEL_DEFAULTS.get(name)) if live else None
        unshown = name in nfs_options.FSTAB_ONLY or name.startswith("x-")
        synced = settings.in_sync(want, persisted.get(name), live_value, check_live=not (present or unshown),
                                  live_matches=lambda expected, actual, name=name: bool(live) and nfs_options.values_match(name, expected, actual))
        rows.append(settings.row(name, want, persisted.get(name), live_value, synced))
    if wanted.src is not None:
        synced = settings.in_sync(wanted.src, persisted_src, live_src, check_live=not present)
        rows.insert(0, settings.row("src", wanted.src, persisted_src, live_src, synced))
    return rows


def _after(wanted, views, plan_, outcome):
    """(fstab options, fstab src, live mount, live options, live diff text, notes, remounted) after
    the run; in check mode (outcome None) the state as found and the predicted live line."""
    fstab = views.fstab
    if outcome is None:
        predicted = predicted_live(wanted, plan_)
        live_after_text = ("not mounted\n" if not predicted else
                           live_text(wanted, None, predicted) if plan_.action else live_text(wanted, views.live.live))
        return (fstab.options, (fstab.entry or {}).get("src"), views.live.live, plan_.live_before, live_after_text,
                (), "none")
    persisted_src = wanted.src if wanted.state in ("mounted", "present") else None
    if wanted.state == "unmounted":
        persisted_src = (fstab.entry or {}).get("src")
    live = outcome.live
    live_after = nfs_options.canonical_options(live["options"]) if live is not None else {}
    return (plan_.fstab_options, persisted_src, live, live_after, live_text(wanted, live), outcome.detail.notes,
            outcome.detail.remounted)


def _diff(wanted, views, plan_, live_after_text):
    return [{"before": views.fstab.text, "after": plan_.fstab_after,
             "before_header": wanted.fstab_path, "after_header": wanted.fstab_path},
            {"before": live_text(wanted, views.live.live), "after": live_after_text,
             "before_header": "live: %s" % wanted.path, "after_header": "live: %s" % wanted.path}]


def report(wanted, views, plan_, outcome=None, diff=False):
    """The module result; outcome None reports the state as found (check mode, which an audit runs
    in): only `changed` and the diff show what a real run would do."""
    fstab_options, persisted_src, live, live_after, live_after_text, notes, remounted = _after(wanted, views, plan_, outcome)
    result = {"changed": plan_.fstab_after != views.fstab.text or plan_.action is not None}
    result.update(tuning_flow.backups_of(outcome, wanted.fstab_path))
    if diff:
        result["diff"] = _diff(wanted, views, plan_, live_after_text)
    same_server = plan_.same_server_mounts
    for note in notes:
        if note.same_server_mounts is not None:
            same_server = note.same_server_mounts
    result.update({
        "fstab_options_before": views.fstab.options,
        "fstab_options": fstab_options,
        "live_options": live_after,
        "drift": {"fstab": plan_.fstab_drift, "live": plan_.live_drift},
        "pending": plan_.pending + [item for note in notes for item in note.pending],
        "holders": plan_.holders,
        "same_server_mounts": same_server,
        "negotiated": plan_.negotiated + [item for note in notes for item in note.negotiated],
        "remounted": remounted,
        "settings": settings_rows(wanted, fstab_options, persisted_src, live_after,
                                  live["source"] if live is not None else None),
    })
    return result
