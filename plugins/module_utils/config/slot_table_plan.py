# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What sunrpc_slot_table does in one run: the two files it owns, the live values, the report.

Pure: the module reads the views and passes them in. A run is planned in two steps because
kmod's order depends on which file names exist: plan_files() gives the new text of the
modprobe.d and modules-load.d files from their old text; the module then reads every other
modprobe.d file with ours in its new state (Views.files_after) and plan() decides the rest:
the wanted values (for state=absent, what remains persisted), conflicts, warnings, the live
writes (LivePlan) and the mounts that keep the old tables. report() builds the module result,
for a real run (a tuning_flow.Outcome) or (outcome None) as found in check mode.
"""

from __future__ import annotations

import os
from collections import namedtuple
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Tuple

from ansible_collections.ckptio.nfs.plugins.module_utils.config import modprobe_conf
from ansible_collections.ckptio.nfs.plugins.module_utils.config import owned_files
from ansible_collections.ckptio.nfs.plugins.module_utils.config import settings
from ansible_collections.ckptio.nfs.plugins.module_utils.config import slot_tables
from ansible_collections.ckptio.nfs.plugins.module_utils.config import tuning_flow
from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import nfs_server_of, nfs_version_of

HEADER = "# Managed by ckptio.nfs.sunrpc_slot_table: NFS client RPC slot tables.\n"
KERNEL_MODULES = ("sunrpc", "nfs")


# The run must stop before changing anything (settings.PlanError, shared by the three plans).
PlanError = settings.PlanError


@dataclass(frozen=True)
class Request:
    """The run's arguments: the options given, the options managed (all four for a bare state=absent)."""

    state: str
    given: Mapping[str, int]
    managed: Tuple[str, ...]
    persist: bool
    apply_live: bool
    force: bool
    backup: bool
    modprobe_path: str
    load_path: str

    @classmethod
    def from_params(cls, params):
        given = dict((option, params[option]) for option in slot_tables.ALL_OPTIONS if params[option] is not None)
        present = params["state"] == "present"
        return cls(state=params["state"], given=given,
                   managed=tuple(given) if (given or present) else tuple(slot_tables.ALL_OPTIONS),
                   persist=params["persist"], apply_live=params["apply_live"], force=params["force"],
                   backup=params["backup"], modprobe_path=params["modprobe_conf"], load_path=params["modules_load_conf"])

    @property
    def present(self):
        return self.state == "present"


@dataclass(frozen=True)
class Views:
    """What the run read: live values and loaded kernel modules before it, the two own files,
    every modprobe.d file with ours as planned (files_after) and as found (files_now, check mode
    only), and the NFS mounts."""

    live_before: Mapping[str, Any]
    loaded: Mapping[str, bool]
    modprobe_before: Optional[str]
    load_before: Optional[str]
    files_after: list
    files_now: Optional[list]
    mounts: list


# ---- the files -----------------------------------------------------------------------------------
def plan_files(request, modprobe_before, load_before):
    """(modprobe text after, modules-load text after); None removes the file. PlanError for a
    state=absent edit of a file this module did not write (unless force)."""
    modprobe_after, load_after = modprobe_before, load_before
    if request.persist or not request.present:
        if request.present:
            modprobe_after, load_after = _files_present(request, modprobe_before, load_before)
        else:
            modprobe_after, load_after = _files_absent(request, modprobe_before, load_before)
    _refuse_foreign_edit(request, "modprobe_conf", request.modprobe_path, modprobe_before, modprobe_after)
    _refuse_foreign_edit(request, "modules_load_conf", request.load_path, load_before, load_after)
    return modprobe_after, load_after


def _files_present(request, modprobe_before, load_before):
    grouped = slot_tables.parameters_by_module(request.given)
    text = modprobe_before if modprobe_before is not None else HEADER
    for kmod in KERNEL_MODULES:
        if kmod in grouped:
            text = modprobe_conf.set_options(text, kmod, grouped[kmod])
    load_after = load_before
    if "sunrpc" in grouped:
        load_after = modprobe_conf.ensure_listed(load_before if load_before is not None else HEADER, "sunrpc")
    return text, load_after


def _files_absent(request, modprobe_before, load_before):
    if modprobe_before is None:
        text = None
    else:
        text = modprobe_before
        for option in request.managed:
            kmod, parameter = slot_tables.KERNEL_PARAMETER[option]
            text = modprobe_conf.remove_options(text, kmod, [parameter])
        if not modprobe_conf.has_directives(text):
            text = None
    load_after = load_before
    still_sunrpc = text is not None and modprobe_conf.options_entries(text, "sunrpc")
    if load_before is not None and not still_sunrpc:
        load_after = modprobe_conf.remove_listed(load_before, "sunrpc")
        if not modprobe_conf.listed_modules(load_after):
            load_after = None
    return text, load_after


def _refuse_foreign_edit(request, option, path, before, after):
    """PlanError when state=absent would delete or edit a file without our header, unless force.

    Such a file was written by the site (or by hand) under our file name: its values are
    theirs, and removing them is a decision for a human (issue 12).
    """
    if request.state != "absent" or before is None or before == after or request.force:
        return
    if owned_files.written_by(before, HEADER):
        return
    action = "delete it" if after is None else "remove values from it"
    raise PlanError("%s: %s was not written by this module (it has no %r line); state=absent would %s, so nothing "
                    "was changed. Set force: true to %s anyway." % (option, path, HEADER.rstrip("\n"), action, action))


def effective(files):
    """{option: value} the next load of sunrpc/nfs applies, from every modprobe.d file in kmod's order."""
    values = {}
    for option in slot_tables.ALL_OPTIONS:
        kmod, parameter = slot_tables.KERNEL_PARAMETER[option]
        entry = modprobe_conf.effective_options(files, kmod).get(parameter)
        if entry is not None:
            values[option] = slot_tables.parse_int(entry["value"])
    return values


def own_values(text):
    return effective([("own", text)]) if text is not None else {}


def conflicts(files, own_path, wanted):
    """Assignments of the managed parameters elsewhere with another value; overrides_ours marks the last one."""
    rows = []
    for option, value in wanted.items():
        kmod, parameter = slot_tables.KERNEL_PARAMETER[option]
        every = []
        for path, text in files:
            every.extend((path, entry) for entry in modprobe_conf.options_entries(text, kmod) if entry["name"] == parameter)
        install_path, command = modprobe_conf.first_install_command(files, kmod)
        if command is not None and parameter in command["options"]:
            # Given on the install command line: applied after every options line.
            every.append((install_path, {"name": parameter, "value": command["options"][parameter]}))
        for position, (path, entry) in enumerate(every):
            if os.path.normpath(path) == os.path.normpath(own_path) or slot_tables.parse_int(entry["value"]) == value:
                continue
            rows.append({"path": path, "name": parameter, "value": entry["value"],
                         "overrides_ours": position == len(every) - 1})
    return rows


def install_warnings(files):
    """One warning per `install sunrpc|nfs ...` line: it replaces the plain module load."""
    warnings = []
    for kmod in KERNEL_MODULES:
        for path, text in files:
            for command in modprobe_conf.install_commands(text, kmod):
                given = ", ".join("%s=%s" % item for item in sorted(command["options"].items()))
                warnings.append(
                    "%s line %d: 'install %s %s' makes modprobe run that command instead of loading %s; "
                    "options lines reach the module only if the command passes them on ($CMDLINE_OPTS), and "
                    "parameters on its own command line%s override them (modprobe.d(5))"
                    % (path, command["line"], kmod, command["command"], kmod, " (%s)" % given if given else ""))
    return warnings


# ---- the live values -----------------------------------------------------------------------------
@dataclass(frozen=True)
class LivePlan:
    """The live writes: per kernel module (kmod, options, modprobe it first); `unapplied` is the
    result when nothing is written (apply_live false, or the check-mode prediction)."""

    before: Mapping[str, Any]
    steps: list
    unapplied: settings.LiveResult
    wanted: Optional[Mapping[str, int]] = None

    @property
    def would_change(self):
        """What check mode predicts for `changed`: a modprobe, or a value that differs now."""
        return any(load or any(self.before.get(option) != self.wanted[option] for option in options)
                   for _kmod, options, load in self.steps)


def plan_live(request, wanted, live_before, loaded):
    if not request.apply_live:
        return LivePlan(live_before, [], settings.left_alone(dict(live_before), _all_live(wanted, live_before)))
    steps = []
    errors = []
    planned = dict(live_before)
    for kmod in KERNEL_MODULES:
        options = [option for option in wanted if slot_tables.KERNEL_PARAMETER[option][0] == kmod]
        if not options:
            continue
        if not loaded[kmod]:
            if not request.present:
                # Nothing runs with our values; the defaults apply when the module loads.
                continue
            errors.append("check mode: %s is not loaded; would run 'modprobe %s'" % (kmod, kmod))
            steps.append((kmod, options, True))
            continue
        steps.append((kmod, options, False))
        planned.update((option, wanted[option]) for option in options)
    applied = False if errors else _all_live(wanted, live_before)
    if not applied and not errors:
        errors.append(settings.CHECK_MODE_NOT_WRITTEN)
    return LivePlan(live_before, steps, settings.LiveResult(planned, applied, "; ".join(errors)), wanted)


def _all_live(wanted, live):
    return all(live.get(option) == value for option, value in wanted.items())


def verified_live(request, wanted, live_after, errors):
    """The LiveResult from the values read back after the writes."""
    mismatched = ["%s is %s, wanted %s" % (o, live_after.get(o), v) for o, v in wanted.items() if live_after.get(o) != v]

    def describe():
        if not request.present:
            return "module not loaded; its defaults apply when it loads"
        return "kernel kept other values: " + ", ".join(mismatched)
    return settings.verified(live_after, bool(mismatched), errors, describe)


# ---- the plan ------------------------------------------------------------------------------------
SlotTablePlan = namedtuple("SlotTablePlan", [
    "modprobe_after", "edits", "effective_after", "wanted", "conflicts", "live", "pending", "session_mounts", "advice",
    "warnings", "pending_warning"])


def plan(request, views, modprobe_after, load_after):
    """The SlotTablePlan of the run, from the views and the files plan_files() planned."""
    edits = [owned_files.FileEdit(request.modprobe_path, views.modprobe_before, modprobe_after, request.backup),
             owned_files.FileEdit(request.load_path, views.load_before, load_after, request.backup)]
    effective_after = effective(views.files_after)
    if request.present:
        wanted = request.given
    else:
        wanted = dict((option, effective_after.get(option, slot_tables.KERNEL_DEFAULTS[option])) for option in request.managed)
    changing = set(option for option, value in wanted.items() if views.live_before.get(option) != value)
    pending, session_mounts = slot_tables.classify_mounts(views.mounts, changing, nfs_server_of, nfs_version_of)
    warnings = slot_tables.cap_warnings(wanted) + install_warnings(views.files_after)
    if session_mounts and "tcp_max_slot_table_entries" in request.given:
        warnings.append("%d NFSv4.1+ mount(s) ignore tcp_max_slot_table_entries; set nfs_max_session_slots for them"
                        % len(session_mounts))
    # Not among the warnings told at once: it is true only once something changed (sunrpc_slot_table tells it then),
    # never after a write that failed (a read-only /etc) and left everything as it was.
    pending_warning = ("%d NFS mount(s) keep the old slot table until remounted: see mounts_pending_remount" % len(pending)
                       if pending else None)
    return SlotTablePlan(
        modprobe_after=modprobe_after, edits=edits, effective_after=effective_after, wanted=wanted,
        conflicts=conflicts(views.files_after, request.modprobe_path, wanted),
        live=plan_live(request, wanted, views.live_before, views.loaded),
        pending=pending, session_mounts=session_mounts,
        advice=slot_tables.V41_ADVICE if session_mounts or "tcp_max_slot_table_entries" in wanted else "",
        warnings=warnings, pending_warning=pending_warning)


# ---- the result ----------------------------------------------------------------------------------
def _live_diff(views, wanted, live):
    """The live diff entry (a list of none or one) of the slot tables the run changes."""
    if live.after == views.live_before:
        return []
    shown_before = dict((option, views.live_before.get(option)) for option in wanted)
    shown_after = dict((option, live.after.get(option)) for option in wanted)
    if shown_before == shown_after:
        return []
    return [{"before": slot_tables.render_values(shown_before), "after": slot_tables.render_values(shown_after),
             "before_header": "live: sunrpc/nfs slot tables", "after_header": "live: sunrpc/nfs slot tables"}]


def _settings_rows(request, views, plan_, live, outcome):
    """The audit rows; in check mode (outcome None) the state as found."""
    if outcome is None:
        persisted_now, live_now, loaded = effective(views.files_now), views.live_before, views.loaded
    else:
        # A real run's detail: which kernel modules are loaded after it.
        persisted_now, live_now, loaded = plan_.effective_after, live.after, outcome.detail
    not_loaded = [option for option in plan_.wanted if not loaded[slot_tables.KERNEL_PARAMETER[option][0]]]
    return slot_tables.settings_rows(plan_.wanted, persisted_now, live_now, check_persisted=request.persist or not request.present,
                                     check_live=request.apply_live, not_loaded=not_loaded, unset_is_default=not request.present)


def report(request, views, plan_, outcome=None, diff=False):
    """The module result; outcome (tuning_flow.Outcome) None reports check mode (the audit table
    shows the state as it is)."""
    live = plan_.live.unapplied if outcome is None else outcome.live
    result = {
        "changed": tuning_flow.changed(plan_.edits, outcome, plan_.live.would_change),
        "live_before": views.live_before,
        "live_after": live.after,
        "live_applied": live.applied,
        "live_not_applied_reason": live.reason,
        "persisted": own_values(plan_.modprobe_after),
        "effective_persisted": plan_.effective_after,
        "modprobe_conflicts": plan_.conflicts,
        "mounts_pending_remount": plan_.pending,
        "session_slot_mounts": plan_.session_mounts,
        "settings": _settings_rows(request, views, plan_, live, outcome),
        "advice": plan_.advice,
    }
    result.update(tuning_flow.backups_of(outcome, request.modprobe_path))
    if diff:
        result["diff"] = owned_files.diffs(plan_.edits) + _live_diff(views, plan_.wanted, live)
    return result
