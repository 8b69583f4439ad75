# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What nfsd_threads does in one run: the nfs.conf drop-in, the max_connections files, the live
values, and the report.

Pure: the module reads the views and passes them in. As in slot_table_plan, the run is planned
in steps that follow what must be read: plan_max_connections() from the live value and our two
max_connections files, plan_file() for the conf file, and, once the module has read every nfs.conf
file with ours as planned (Views.files_after), plan() for the rest. The live side is a LivePlan:
the writes to make, and the LiveResult when none are made (the final answer when nothing needs
writing, the prediction in check mode). report() builds the module result from a
tuning_flow.Outcome whose live is {"threads": LiveResult, "max_connections": LiveResult}.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfs_conf
from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfs_server_start
from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfsd_connections
from ansible_collections.ckptio.nfs.plugins.module_utils.config import owned_files
from ansible_collections.ckptio.nfs.plugins.module_utils.config import settings
from ansible_collections.ckptio.nfs.plugins.module_utils.config import tuning_flow

# nfs-utils before 2.8.2 (Debian 12 ships 2.6.2) starts 8 threads when nothing is configured.
DEFAULT_THREADS = 8
SECTION = "nfsd"
HEADER = "# Managed by ckptio.nfs.nfsd_threads: knfsd thread count.\n"


# The run must stop before changing anything (settings.PlanError, shared by the three plans).
PlanError = settings.PlanError


@dataclass(frozen=True)
class Request:
    """The run's arguments; is_main_conf: conf_file is /etc/nfs.conf itself (never deleted)."""

    state: str
    threads: Optional[int]
    min_threads: Optional[int]
    max_connections: Optional[int]
    apply_live: bool
    persist: bool
    conf_file: str
    backup: bool
    # Editing /etc/default/nfs-kernel-server (not ours) only when asked (docs/tuning-modules.md).
    persist_command_line: bool
    is_main_conf: bool

    @classmethod
    def from_params(cls, params, is_main_conf):
        return cls(state=params["state"], threads=params["threads"], min_threads=params["min_threads"],
                   max_connections=params["max_connections"], apply_live=params["apply_live"], persist=params["persist"],
                   conf_file=params["conf_file"], backup=params["backup"],
                   persist_command_line=bool(params.get("persist_command_line")), is_main_conf=is_main_conf)

    @property
    def present(self):
        return self.state == "present"


@dataclass(frozen=True)
class Views:
    """What the run read: live threads, min_threads and max_block_size (in proc_nfsd), the max_connections view
    (a dict: proc_file, live, supported, dropin/value texts and paths, dd_path), the conf file,
    and every nfs.conf file with ours as planned (files_after) and as found (files_now, check mode).
    start_view: how nfs-server starts rpc.nfsd (units, nfs-utils_env.sh, the files it sources, our
    RPCNFSDCOUNT record); None when not read (nothing but nfs.conf is then known)."""

    proc_nfsd: str
    threads: Optional[int]
    min_threads: Optional[int]
    max_block_size: Optional[int]
    max_view: Mapping[str, Any]
    conf_before: Optional[str]
    files_after: list
    files_now: Optional[list]
    start_view: Optional[Mapping[str, Any]] = None


LivePlan = namedtuple("LivePlan", ["writes", "unapplied"])
MaxPlan = namedtuple("MaxPlan", ["wanted", "dropin_after", "value_after", "warnings"])


# ---- the files -----------------------------------------------------------------------------------
def plan_file(request, before):
    """The conf file's text after the run; None removes a drop-in that holds nothing else."""
    if request.present:
        if not request.persist:
            return before
        text = before if before is not None else HEADER
        text = nfs_conf.set_value(text, SECTION, "threads", request.threads)
        if request.min_threads is not None:
            text = nfs_conf.set_value(text, SECTION, "min-threads", request.min_threads)
        return text
    if before is None:
        return None
    text = nfs_conf.remove_key(nfs_conf.remove_key(before, SECTION, "threads"), SECTION, "min-threads")
    if not request.is_main_conf and not nfs_conf.has_assignments(text):
        return None
    return text


def plan_max_connections(request, view):
    """MaxPlan: wanted None = max_connections is not managed this run; PlanError for files not ours."""
    ours = nfsd_connections.is_our_dropin(view["dropin"])
    if request.present:
        wanted = request.max_connections
    else:
        # Rollback: what we persisted goes, and the live value returns to the kernel default.
        has_ours = ours or nfsd_connections.parse_value(view["value"]) is not None
        wanted = 0 if (request.max_connections is not None or has_ours) else None
    unchanged = MaxPlan(None, view["dropin"], view["value"], [])
    if wanted is None:
        return unchanged
    if view["supported"] is False:
        if wanted == 0:
            # 0 asks for no limit of ours: on such a kernel that is the case already; only
            # files of ours left from an older kernel are removed (lines someone added stay).
            return MaxPlan(0, nfsd_connections.dropin_after(view["dropin"], None), None, []) if ours else unchanged
        return unchanged._replace(warnings=[
            "max_connections=%d not applied: this kernel has no %s (Linux 6.14 removed it; only connections that "
            "have not yet presented a valid file handle are limited, to 64), so there is nothing to set"
            % (wanted, view["proc_file"])])
    if view["dropin"] is not None and not ours:
        raise PlanError("max_connections: %s exists and was not written by ckptio.nfs; refusing to change it "
                        "(remove it or move its setting into max_connections)" % view["dropin_path"])
    if view["value"] is not None and nfsd_connections.parse_value(view["value"]) is None:
        raise PlanError("max_connections: %s holds something other than a number; it is not ours, "
                        "refusing to change it" % view["value_path"])
    if request.present and not request.persist:
        return MaxPlan(wanted, view["dropin"], view["value"], [])
    if wanted == 0:
        # 0 is what a freshly loaded nfsd has: nothing to persist (of ours: lines someone added stay).
        return MaxPlan(wanted, nfsd_connections.dropin_after(view["dropin"], None), None, [])
    if view.get("dropin_masked"):
        raise PlanError(nfsd_connections.masked_dropin_error(view["dropin_path"], wanted))
    generated = nfsd_connections.dropin_text(view["dd_path"], view["value_path"], view["proc_file"])
    return MaxPlan(wanted, nfsd_connections.dropin_after(view["dropin"], generated), nfsd_connections.value_text(wanted), [])


def max_connections_edits(view, max_plan):
    """The value file first, the drop-in that reads it last; removal the other way round, so a
    failure in between never leaves a drop-in pointing at a missing file. Never backed up: ckptio
    generates the value file and its lines of the drop-in, and keeps any other line there
    (nfsd_connections.dropin_after)."""
    dropin = owned_files.FileEdit(view["dropin_path"], view["dropin"], max_plan.dropin_after, False)
    value = owned_files.FileEdit(view["value_path"], view["value"], max_plan.value_after, False)
    return [dropin, value] if max_plan.value_after is None else [value, dropin]


def persisted_max_connections(dropin, value):
    """What the next nfs-server start writes: our value file when our drop-in reads it, else 0."""
    if nfsd_connections.is_our_dropin(dropin):
        parsed = nfsd_connections.parse_value(value)
        return parsed if parsed is not None else 0
    return 0


# ---- the command line (RPCNFSDCOUNT) ------------------------------------------------------------
StartPlan = namedtuple("StartPlan", ["now", "after", "edits", "warnings"])
UNREAD_START = {"mechanism": nfs_server_start.UNKNOWN, "reason": "not read", "exec_start": None, "count": None,
                "count_source": None, "edit_path": None, "unreadable": False}


def start_view(unit_files, env_script_path, env_script, sourced, texts, record_path, record, editable):
    """The start view the module reads: units, the env script, the paths it sources in order,
    {path: text} of those and of every editable defaults file, our record, and the editable files."""
    return {"unit_files": unit_files, "env_script_path": env_script_path, "env_script": env_script,
            "sourced": list(sourced), "texts": dict(texts), "record_path": record_path, "record": record,
            "editable": tuple(editable)}


def detect_start(view, texts=None):
    """nfs_server_start.detect() on the view, with texts (planned contents) in place of the view's."""
    if view is None:
        return dict(UNREAD_START)
    texts = view["texts"] if texts is None else texts
    return nfs_server_start.detect(view["unit_files"], view["env_script_path"], view["env_script"],
                                   [(path, texts.get(path)) for path in view["sourced"]], view["editable"])


def _where(source):
    return "%s line %s" % (source["path"], source["line"]) if source["line"] else source["path"]


def _command_line_warning(now, wanted, can_edit, editable):
    """What to tell the user when the command-line count wins and is not the wanted one."""
    source, variable = now["count_source"], nfs_server_start.COUNT_VARIABLE
    if source["via"] == variable:
        cause, fix = "%s=%s from %s" % (variable, source["value"], _where(source)), "set %s=%d on that line" % (variable, wanted)
    else:
        target = now["edit_path"] or editable[0]
        cause, fix = "its default count %s (%s is unset)" % (source["value"], variable), "add %s=%d to %s" % (variable, wanted, target)
    return ("nfs-server starts %d threads, not %d, after every restart: %s passes rpc.nfsd %s, and a count on the command "
            "line wins over [nfsd] threads in nfs.conf; %s%s" % (
                now["count"], wanted, now["reason"].split(" passes")[0], cause, fix,
                ", or run with persist_command_line=true" if can_edit else ""))


def plan_start(request, view):
    """StartPlan: the RPCNFSDCOUNT edit (and our record of the line it replaced) or the warning that says why not."""
    now = detect_start(view)
    if view is None:
        return StartPlan(now, now, [], [])
    record = nfs_server_start.parse_record(view["record"])
    if view["record"] is not None and record is None:
        raise PlanError("%s exists and was not written by ckptio.nfs; refusing to change it or %s"
                        % (view["record_path"], nfs_server_start.COUNT_VARIABLE))
    texts = dict(view["texts"])
    edits, warnings = [], []
    variable = nfs_server_start.COUNT_VARIABLE
    if request.present and request.persist and now["count"] is not None and now["count"] != request.threads:
        source, wanted = now["count_source"], request.threads
        where = _where(source)
        if now["mechanism"] == nfs_server_start.UNIT_ARGUMENT:
            warnings.append("nfs-server starts %d threads whatever nfs.conf says: ExecStart in %s passes the count %s "
                            "(%s); remove the count from ExecStart (a drop-in with an empty ExecStart= first)"
                            % (now["count"], source["path"], source["value"], now["reason"]))
        elif source["via"] == nfs_server_start.OPTS_VARIABLE:
            warnings.append("nfs-server starts %d threads whatever nfs.conf says: %s in %s holds the count %s; remove "
                            "it from %s there (ckptio does not edit %s)" % (
                                now["count"], nfs_server_start.OPTS_VARIABLE, where, source["value"],
                                nfs_server_start.OPTS_VARIABLE, nfs_server_start.OPTS_VARIABLE))
        elif not request.persist_command_line or now["edit_path"] is None:
            warnings.append(_command_line_warning(now, wanted, now["edit_path"] is not None, view["editable"]))
        else:
            path = now["edit_path"]
            before = texts.get(path)
            texts[path] = nfs_server_start.set_shell_value(before or "", variable, wanted)
            # First tuning wins: the record keeps the line from before ckptio ever changed it, and
            # the line written now, so state=absent restores only over a line that is still ours.
            found = nfs_server_start.shell_assignments(before, variable)
            original = record["line"] if record is not None else (found[-1]["raw"] if found else None)
            written = _assignment_line(texts[path], variable)
            record_after = nfs_server_start.record_text(record["path"] if record is not None else path, original, written)
            # The record first: a failure between the two leaves a record and the old line.
            edits = [owned_files.FileEdit(view["record_path"], view["record"], record_after, False),
                     owned_files.FileEdit(path, before, texts[path], request.backup)]
    elif not request.present and record is not None:
        edits, warnings = _restore_edits(request, view, record, texts)
    return StartPlan(now, detect_start(view, texts), edits, warnings)


def _assignment_line(text, variable):
    """The one line of text that assigns variable, without its line ending (None: there is none)."""
    found = nfs_server_start.shell_assignments(text, variable)
    return found[-1]["raw"].rstrip("\r\n") if found else None


def _restore_edits(request, view, record, texts):
    """(edits, warnings) of state=absent: the recorded line back, only over the line ckptio wrote.

    A line someone changed after ckptio wrote it (RPCNFSDCOUNT=64 over our 32) is theirs now: it is
    kept, the record too (it holds the line from before ckptio), and a warning says both.
    """
    path, variable = record["path"], nfs_server_start.COUNT_VARIABLE
    before = texts.get(path)
    current = _assignment_line(before, variable) if before is not None else None
    several = len(nfs_server_start.shell_assignments(before, variable)) > 1
    if record["written"] is None or current != record["written"] or several:
        wrote = ("the line ckptio wrote was %r" % record["written"] if record["written"] is not None
                 else "this record is from a version that did not keep the line it wrote")
        now = "%s now holds %r" % (path, current) if current is not None and not several else (
            "%s now has %s" % (path, "several %s lines" % variable if several else "no %s line" % variable))
        return [], ["%s not restored: %s, and %s: someone changed it since, so it is kept. The line from before ckptio "
                    "was %r (kept in %s); put it back by hand if that is what you want, then remove that file"
                    % (variable, now, wrote, record["line"], view["record_path"])]
    texts[path] = nfs_server_start.restore_line(before, variable, record["line"])
    # The file first, the record last: a failure between them keeps the record for the next rollback.
    return [owned_files.FileEdit(path, before, texts[path], request.backup),
            owned_files.FileEdit(view["record_path"], view["record"], None, False)], []


def start_verified(planned, verified):
    """The warning when the count read back after the edit is not the planned one (None when it is)."""
    if planned["count"] == verified["count"]:
        return None
    return "after the edit nfs-server would start %s threads, not %s: %s" % (verified["count"], planned["count"], verified["reason"])


# ---- the live values -----------------------------------------------------------------------------
def plan_live_threads(request, wanted_threads, wanted_min, views):
    """LivePlan for threads and min_threads; after is the pair (threads, min_threads)."""
    threads_before, min_before = views.threads, views.min_threads
    before = (threads_before, min_before)
    if not request.apply_live:
        return LivePlan([], settings.left_alone(before, _threads_match(wanted_threads, wanted_min, *before)))
    if threads_before is None:
        return LivePlan([], settings.LiveResult((None, None), False, "nfsd is not loaded (no %s/threads); the persisted "
                                                "value applies when nfs-server starts" % views.proc_nfsd))
    if threads_before == 0:
        # Writing threads would start knfsd without nfs-server's exports and listeners.
        return LivePlan([], settings.LiveResult((0, min_before), False, "nfsd is not running (threads=0); not starting it: "
                                                "the persisted value applies when nfs-server starts"))
    need_threads = threads_before != wanted_threads
    need_min = wanted_min is not None and min_before != wanted_min
    if not (need_threads or need_min):
        return LivePlan([], settings.LiveResult(before, True, ""))
    # The kernel keeps min_threads <= threads: lower min first when shrinking below it.
    order = [("threads", wanted_threads, need_threads), ("min_threads", wanted_min, need_min)]
    if need_min and min_before is not None and wanted_threads < min_before:
        order.reverse()
    predicted = (wanted_threads, wanted_min if wanted_min is not None else min_before)
    return LivePlan([(name, value) for name, value, needed in order if needed],
                    settings.LiveResult(predicted, False, settings.CHECK_MODE_NOT_WRITTEN))


def _threads_match(wanted_threads, wanted_min, threads, min_threads):
    return threads == wanted_threads and (wanted_min is None or min_threads == wanted_min)


def verified_threads(wanted_threads, wanted_min, threads_after, min_after, errors):
    applied = _threads_match(wanted_threads, wanted_min, threads_after, min_after)
    return settings.verified((threads_after, min_after), not applied, errors,
                             lambda: "the kernel reports threads=%s min_threads=%s after the write" % (threads_after, min_after))


def plan_live_max_connections(request, view, wanted):
    """LivePlan for max_connections. Unlike threads, writing it never starts nfsd."""
    before = view["live"]
    if wanted is None or view["supported"] is not True:
        if wanted is not None and view["supported"] is None:
            return LivePlan([], settings.LiveResult(before, False, "nfsd is not loaded (no %s): max_connections applies "
                                                    "when nfs-server starts" % view["proc_file"]))
        return LivePlan([], settings.LiveResult(before, True, ""))
    if before == wanted:
        return LivePlan([], settings.LiveResult(before, True, ""))
    if not request.apply_live:
        return LivePlan([], settings.LiveResult(before, False, settings.APPLY_LIVE_FALSE))
    return LivePlan([("max_connections", wanted)], settings.LiveResult(wanted, False, settings.CHECK_MODE_NOT_WRITTEN))


def verified_max_connections(wanted, after, errors):
    return settings.verified(after, after != wanted or bool(errors), errors,
                             lambda: "the kernel reports max_connections=%s after the write" % after)


# ---- the plan ------------------------------------------------------------------------------------
NfsdPlan = namedtuple("NfsdPlan", [
    "conf_after", "edits", "dropin_changed", "winner", "effective_threads", "effective_min", "wanted_threads",
    "wanted_min", "conflicts", "threads_live", "max_plan", "max_live", "warnings", "start"])


def _wanted_threads(request, effective_threads, effective_min, min_before):
    if request.present:
        return request.threads, request.min_threads
    wanted_threads = effective_threads if effective_threads is not None else DEFAULT_THREADS
    wanted_min = None
    if min_before is not None:
        wanted_min = effective_min if effective_min is not None else 0
    return wanted_threads, wanted_min


def _command_line_count(detected):
    """(winner, count) when a count on nfs-server's command line decides, else None."""
    if detected["mechanism"] in (nfs_server_start.COMMAND_LINE, nfs_server_start.UNIT_ARGUMENT) and detected["count"] is not None:
        return dict(detected["count_source"]), detected["count"]
    return None


def plan(request, views, conf_after, max_plan):
    """The NfsdPlan of the run, from the views and the conf text and MaxPlan planned before."""
    start = plan_start(request, views.start_view)
    warnings = list(max_plan.warnings) + start.warnings
    for file_path, text in views.files_after:
        for included in nfs_conf.includes(text):
            warnings.append("%s includes %s: not followed, its values are not checked" % (file_path, included))
    winner, every = nfs_conf.effective(views.files_after, SECTION, "threads")
    min_winner, min_every = nfs_conf.effective(views.files_after, SECTION, "min-threads")
    effective_threads = nfs_conf.atoi(winner["value"]) if winner else None
    effective_min = nfs_conf.atoi(min_winner["value"]) if min_winner else None
    command_line = _command_line_count(start.after)
    if command_line is not None:
        # rpc.nfsd: a count argument replaces conf_get_num("nfsd", "threads") (utils/nfsd/nfsd.c).
        winner, effective_threads = command_line
    wanted_threads, wanted_min = _wanted_threads(request, effective_threads, effective_min, views.min_threads)
    if start.after["unreadable"]:
        # A count nfs-server may pass and that cannot be read: what the next start uses is unknown,
        # never assumed to be nfs.conf's; the settings row is then not in sync.
        winner, effective_threads, command_line = None, None, "unreadable"
        warnings.append("threads: the count nfs-server starts with is unknown, so the setting is not in sync: %s"
                        % start.after["reason"])
    conflict_rows = [dict(row, key="threads") for row in nfs_conf.conflicts(every, request.conf_file, wanted_threads)]
    if request.present and wanted_min is not None:
        conflict_rows.extend(dict(row, key="min-threads") for row in nfs_conf.conflicts(min_every, request.conf_file, wanted_min))
    if request.present and request.persist and effective_threads != wanted_threads and command_line is None:
        warnings.append("nfs-server will start with threads=%s from %s:%s, not %d" % (
            winner["value"], winner["path"], winner["line"], wanted_threads) if winner else
            "no nfs.conf file sets threads after this run")
    threads_live = plan_live_threads(request, wanted_threads, wanted_min, views)
    conf_edit = owned_files.FileEdit(request.conf_file, views.conf_before, conf_after, request.backup)
    return NfsdPlan(
        conf_after=conf_after, edits=[conf_edit] + start.edits + max_connections_edits(views.max_view, max_plan),
        dropin_changed=max_plan.dropin_after != views.max_view["dropin"], winner=winner,
        effective_threads=effective_threads, effective_min=effective_min, wanted_threads=wanted_threads,
        wanted_min=wanted_min, conflicts=conflict_rows, threads_live=threads_live, max_plan=max_plan,
        max_live=plan_live_max_connections(request, views.max_view, max_plan.wanted), warnings=warnings, start=start)


# ---- the result ----------------------------------------------------------------------------------
def connection_limit(view, max_after, persisted_max, threads_after, effective_threads):
    if view["supported"] is False:
        return nfsd_connections.connection_limit(None, threads_after, supported=False)
    if view["supported"] is True and threads_after:
        return nfsd_connections.connection_limit(max_after, threads_after)
    # nfsd stopped or not loaded: the limit it will have when nfs-server starts.
    threads = effective_threads if effective_threads is not None else DEFAULT_THREADS
    configured = max_after if view["supported"] is True else persisted_max
    limit = nfsd_connections.connection_limit(configured, threads)
    limit["supported"] = view["supported"]
    return limit


def _row(request, name, wanted, persisted, live, check_persisted):
    # nfsd not loaded (live None): no live value to compare; the persisted value, which
    # nfs-server applies when it starts, decides (settings.in_sync).
    synced = settings.in_sync(wanted, persisted, live, check_persisted=check_persisted, check_live=request.apply_live,
                              live_applicable=live is not None)
    return settings.row(name, wanted, persisted, live, synced)


def _effective_value(files, tag):
    winner = nfs_conf.effective(files, SECTION, tag)[0]
    return nfs_conf.atoi(winner["value"]) if winner else None


def _live_diffs(views, threads_after, min_after, max_after):
    entries = []
    if max_after != views.max_view["live"]:
        entries.append({"before": "max_connections = %s\n" % views.max_view["live"],
                        "after": "max_connections = %s\n" % max_after,
                        "before_header": "live: %s" % views.max_view["proc_file"],
                        "after_header": "live: %s" % views.max_view["proc_file"]})
    if (threads_after, min_after) != (views.threads, views.min_threads):
        entries.append({"before": "threads = %s\nmin_threads = %s\n" % (views.threads, views.min_threads),
                        "after": "threads = %s\nmin_threads = %s\n" % (threads_after, min_after),
                        "before_header": "live: %s" % views.proc_nfsd,
                        "after_header": "live: %s" % views.proc_nfsd})
    return entries


def _settings_rows(request, views, plan_, outcome, threads_live, max_live):
    """The audit rows; in check mode (outcome None) the state as found."""
    view, max_plan = views.max_view, plan_.max_plan
    if outcome is None:
        persisted_threads = _effective_value(views.files_now, "threads")
        command_line_now = _command_line_count(plan_.start.now)
        if command_line_now is not None:
            persisted_threads = command_line_now[1]
        if plan_.start.now["unreadable"]:
            persisted_threads = None
        persisted_min = _effective_value(views.files_now, "min-threads")
        live_threads, live_min = views.threads, views.min_threads
        persisted_max, live_max = persisted_max_connections(view["dropin"], view["value"]), view["live"]
    else:
        persisted_threads, persisted_min = plan_.effective_threads, plan_.effective_min
        live_threads, live_min = threads_live.after
        persisted_max, live_max = persisted_max_connections(max_plan.dropin_after, max_plan.value_after), max_live.after
    check_persisted = request.persist or not request.present
    rows = [_row(request, "threads", plan_.wanted_threads, persisted_threads, live_threads, check_persisted)]
    if plan_.wanted_min is not None:
        rows.append(_row(request, "min_threads", plan_.wanted_min, persisted_min, live_min, check_persisted and request.present))
    if max_plan.wanted is not None:
        rows.append(_row(request, "max_connections", max_plan.wanted, persisted_max, live_max, check_persisted))
    return rows


def _live_applied(threads_live, max_live, max_wanted):
    """(live_applied, live_not_applied_reason) of threads and, when managed, max_connections."""
    if max_wanted is not None and not max_live.applied and max_live.reason:
        return False, "; ".join(part for part in (threads_live.reason, max_live.reason) if part)
    return threads_live.applied, threads_live.reason


def report(request, views, plan_, outcome=None, diff=False):
    """The module result; outcome None reports check mode (the audit rows show the state as it is)."""
    threads_live = plan_.threads_live.unapplied if outcome is None else outcome.live["threads"]
    max_live = plan_.max_live.unapplied if outcome is None else outcome.live["max_connections"]
    threads_after, min_after = threads_live.after
    max_plan = plan_.max_plan
    persisted_max_after = persisted_max_connections(max_plan.dropin_after, max_plan.value_after)
    applied, reason = _live_applied(threads_live, max_live, max_plan.wanted)
    own = nfs_conf.effective([(request.conf_file, plan_.conf_after)], SECTION, "threads")[0] if plan_.conf_after is not None else None
    result = {
        # Check mode predicts a live write as changed, as the real run reports it.
        "changed": tuning_flow.changed(plan_.edits, outcome, plan_.threads_live.writes or plan_.max_live.writes),
        "threads_before": views.threads,
        "threads_after": threads_after,
        "min_threads_before": views.min_threads,
        "min_threads_after": min_after,
        "persisted_threads": nfs_conf.atoi(own["value"]) if own else None,
        "effective_persisted_threads": plan_.effective_threads,
        "effective_persisted_source": plan_.winner,
        "persist_mechanism": plan_.start.after["mechanism"],
        "persist_mechanism_reason": plan_.start.after["reason"],
        "nfs_server_exec_start": plan_.start.after["exec_start"],
        "conflicts": plan_.conflicts,
        "max_block_size": views.max_block_size,
        "max_connections_before": views.max_view["live"],
        "max_connections_after": max_live.after,
        "persisted_max_connections": persisted_max_after,
        "connection_limit": connection_limit(views.max_view, max_live.after, persisted_max_after, threads_after,
                                             plan_.effective_threads),
        "live_applied": applied,
        "live_not_applied_reason": reason,
        "settings": _settings_rows(request, views, plan_, outcome, threads_live, max_live),
    }
    result.update(tuning_flow.backups_of(outcome, request.conf_file))
    if diff:
        result["diff"] = owned_files.diffs(plan_.edits) + _live_diffs(views, threads_after, min_after, max_live.after)
    return result
