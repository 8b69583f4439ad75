# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one flow of the three tuning modules (sunrpc_slot_table, nfsd_threads, nfs_mount).

    locks -> views -> pure plan -> one gate (check mode) -> write files -> locks released
          -> live change -> read back and verify -> report

Each module gives its steps (Steps) and run() calls them in this order, so the rules hold for
all three in one place:

- the files a run may write are locked before they are read and stay locked until they are
  written, so a parallel run never plans from the same old file (issue 12);
- the plan is a pure function of the views: it returns a plan or raises settings.PlanError
  naming the option, before anything changed;
- check mode stops at the gate: nothing is written, loaded, mounted or unmounted, and the report
  shows the state as found (outcome None), the diff what a real run would do;
- the files are written first (a modprobe or a mount then uses them), the locks are released
  before the live change, which may take long (a umount, a modprobe);
- one Outcome type, and one rule for backups: every backup made is returned in `backup_files`,
  named by the file it saves, and `backup_file` is the backup of the file the module documents
  it for (owned_files.backup_result).

The warnings the plan found are told as soon as it is made, so a run that fails later still
says them. No I/O of its own: the module hands run() its lock (host/file_lock.locked), and
everything else is the steps', so this floor imports nothing of host/.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Tuple

from ansible_collections.ckptio.nfs.plugins.module_utils.config import owned_files


@dataclass(frozen=True)
class Written:
    """What writing the planned files did: {path: backup} of every backup, and warnings (a failed reload)."""

    backups: Mapping[str, str] = field(default_factory=dict)
    warnings: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Outcome:
    """What a real run did; None stands for check mode (nothing done).

    live: the module's live state read back after the change and verified (a settings.LiveResult,
    {name: LiveResult}, or the live mount). live_changed: something was written, loaded, mounted
    or unmounted live. backups: {path: backup} (Written.backups). warnings: what applying found.
    detail: what only one module reports (the kernel modules loaded after the run, the mount
    action run and its notes).
    """

    live: Any
    live_changed: bool
    backups: Mapping[str, str] = field(default_factory=dict)
    warnings: Tuple[str, ...] = ()
    detail: Any = None


@dataclass(frozen=True)
class Steps:
    """One module's part of the flow.

    lock_paths: the files locked, in this order (always the same order: two runs cannot deadlock).
    read_and_plan() -> (views, plan): under the locks; plan.warnings is a list of text.
    write_files(views, plan) -> Written: still under the locks (file_edits.apply_edits).
    change_live(views, plan, written) -> Outcome: after the locks are released.
    report(views, plan, outcome, diff) -> the module result; outcome None in check mode.
    """

    lock_paths: Tuple[str, ...]
    read_and_plan: Callable[[], Tuple[Any, Any]]
    write_files: Callable[[Any, Any], Written]
    change_live: Callable[[Any, Any, Written], Outcome]
    report: Callable[[Any, Any, Any, bool], dict]


def run(module, steps, lock):
    """Run the steps in the flow's order; return the module result (the caller exits with it).

    lock(module, path): the context manager that holds path's lock (host/file_lock.locked; it
    takes none in check mode)."""
    with contextlib.ExitStack() as locks:
        for path in steps.lock_paths:
            locks.enter_context(lock(module, path))
        views, plan = steps.read_and_plan()
        for warning in plan.warnings:
            module.warn(warning)
        outcome = None
        if not module.check_mode:
            written = steps.write_files(views, plan)
            locks.close()
            outcome = steps.change_live(views, plan, written)
            for warning in outcome.warnings:
                module.warn(warning)
    return steps.report(views, plan, outcome, module._diff)


def no_files(_views, _plan):
    """write_files of a run that writes nothing under the locks."""
    return Written()


def changed(edits, outcome, would_change_live):
    """The run's `changed`: a file edit, or a live change (done, or in check mode predicted)."""
    live = would_change_live if outcome is None else outcome.live_changed
    return any(edit.changed for edit in edits) or bool(live)


def backups_of(outcome, main_path):
    """The backup return values (owned_files.backup_result) of an outcome; none in check mode."""
    return owned_files.backup_result(outcome.backups if outcome is not None else {}, main_path)
