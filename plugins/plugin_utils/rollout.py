# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The playbooks' controller-side verdicts: the audit's drift table, the rollout summary, the failure budget.

Not filters of their own: the one public filter ckptio.nfs.internal (plugins/filter/internal.py)
calls them by name, so `ansible-doc -t filter -l ckptio.nfs` lists only what users call. The
documentation of each step is in the YAML file of the same name next to this one. The pure
functions take plain data (a host's report, its recorded failure); the filters only pick those
out of hostvars.
"""

from __future__ import annotations

import datetime
import json
import re

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.module_utils.config import settings

# The fact each audit play sets on its hosts first: hosts outside --limit never get it.
AUDIT_TARGETED_FACT = "ckptio_audit_targeted"
NOT_RUN = {"task": "not run", "msg": "no result (not in this run?)"}
# A row's verdict, decided with in_sync in one place (config/settings.py). Only the first two are not drift.
IN_SYNC = settings.IN_SYNC
APPLIES_WHEN_LOADED = settings.APPLIES_WHEN_LOADED
PENDING = settings.PENDING
DRIFT = settings.DRIFT
# From this many audited hosts a table per host no longer helps a person (a 64-client rack is 64
# tables of ~10 identical rows): audit.md groups the hosts that share the same drift and counts
# the hosts in sync (issue 15). The JSON keeps every host's rows.
AUDIT_GROUPED_HOSTS = 64


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def _shown(value):
    """A value in a console line: none is n/a (no live value: module not loaded, not mounted)."""
    return "n/a" if value is None else value


def row_status(row):
    """The audit's verdict about a settings row: settings.status(), beside the in_sync rule it reads."""
    return settings.status(row)


def audit_rows(rows_of_host):
    """The drift table rows of one host's settings, each with its status and in_sync = not drift."""
    rows = []
    for row in rows_of_host or []:
        status = settings.status(row)
        rows.append({"scope": row.get("scope", ""), "setting": row.get("name"), "wanted": row.get("wanted"),
                     "persisted": row.get("persisted"), "live": row.get("live"),
                     "in_sync": status in settings.IN_SYNC_STATUSES, "status": status})
    return rows


def audit_host(name, role, report, failure=None):
    """(entry, console lines, drifting rows) for one targeted host.

    Not audited: a failure was recorded (unreachable, or the role failed: a report it left is
    not this audit's), or there is no report.
    """
    if failure is not None or report is None:
        failure = failure or NOT_RUN
        error = "%s: %s" % (failure.get("task"), failure.get("msg"))
        return ({"role": role, "error": error, "rows": [], "pending": []},
                ["%s (%s): NOT AUDITED - %s" % (name, role, error)], [])
    rows = audit_rows(report.get("settings"))
    drift = [row for row in rows if not row["in_sync"]]
    lines = ["%s (%s) DRIFT %s %s: wanted=%s persisted=%s live=%s%s" % (
        name, role, row["scope"], row["setting"], _shown(row["wanted"]), _shown(row["persisted"]), _shown(row["live"]),
        " (persisted, not live yet)" if row["status"] == PENDING else "") for row in drift]
    if not drift:
        lines = ["%s (%s): in sync (%d settings)" % (name, role, len(rows))]
    entry = {"role": role, "profile": report.get("profile"), "rows": rows, "pending": report.get("pending", []),
             "warnings": report.get("warnings", []), "exports": report.get("exports") or []}
    return entry, lines, drift


def audit_failure(summary, fail_on_drift):
    """Why the audit playbook fails, or None: it audited nothing, or drift when fail_on_drift asks for it."""
    targeted = len(summary["audited_hosts"]) + len(summary["unaudited_hosts"])
    if targeted and not summary["audited_hosts"]:
        return "nothing was audited: none of the %d targeted host(s) answered and ran the audit (%s)" % (
            targeted, ", ".join(summary["unaudited_hosts"]))
    if fail_on_drift and (summary["drift_rows"] or summary["unaudited_hosts"]):
        return "drift in %d setting(s) on %d host(s) (%s); %d host(s) not audited (%s)" % (
            summary["drift_rows"], len(summary["drifting_hosts"]), ", ".join(summary["drifting_hosts"]),
            len(summary["unaudited_hosts"]), ", ".join(summary["unaudited_hosts"]))
    return None


def summarise_audit(groups, finished, check_mode=False, fail_on_drift=False):
    """The audit's drift table over the targeted hosts.

    groups: [{role, hosts: [{name, report, failure}]}], hosts in play order, only those the
    audit plays ran on (hosts outside --limit are not in it, so they are not listed).
    """
    hosts, lines, drifting, unaudited, audited, stopped = {}, [], [], [], [], {}
    drift_rows = 0
    for group in groups:
        for host in group["hosts"]:
            name = host["name"]
            entry, host_lines, drift = audit_host(name, group["role"], host.get("report"), host.get("failure"))
            hosts[name] = entry
            lines.extend(host_lines)
            drift_rows += len(drift)
            (unaudited if "error" in entry else audited).append(name)
            if "error" in entry:
                stopped[name] = why_not_audited(name, host)
            if drift:
                drifting.append(name)
    summary = {"finished": finished, "hosts": hosts, "lines": lines, "drift_rows": drift_rows, "drifting_hosts": drifting,
               "unaudited_hosts": unaudited, "audited_hosts": audited, "check_mode": bool(check_mode)}
    summary["failure"] = audit_failure(summary, fail_on_drift)
    summary["by_drift"] = audit_by_drift(hosts, stopped)
    return summary


def why_not_audited(name, host):
    """(task, message) a host stopped at, the message with the host's own name and address as <host>.

    An unreachable host's message names its own address (ssh: connect to host 10.0.0.7 ...):
    64 hosts down for one reason are 64 messages that differ only there, and one group in audit.md.
    """
    failure = host.get("failure") if host.get("failure") is not None else NOT_RUN
    msg = str(failure.get("msg"))
    own = [str(value) for value in (host.get("address"), name) if value not in (None, "")]
    for value in sorted(set(own), key=len, reverse=True):
        msg = re.sub(r"(?<![\w.-])%s(?![\w-]|\.\w)" % re.escape(value), "<host>", msg)
    return str(failure.get("task")), msg


def _drift_key(entry):
    """What two hosts must share to be one group: role, profile and the drifting rows, value for value."""
    drift = [dict((key, row[key]) for key in ("scope", "setting", "wanted", "persisted", "live", "status"))
             for row in entry["rows"] if not row["in_sync"]]
    return json.dumps([entry["role"], entry.get("profile"), drift], sort_keys=True, default=str), drift


def audit_by_drift(hosts, stopped=None):
    """audit.md's view of the hosts: from AUDIT_GROUPED_HOSTS on, grouped (grouped true).

    drift: [{role, profile, hosts, rows}] the hosts that share the same drifting rows, the largest
    group first; in_sync: [{role, hosts: count}]; not_audited: [{role, task, msg, hosts}] the hosts
    that stopped at the same task for the same reason (stopped: {name: why_not_audited}), the
    role's groups in play order, the largest first within a role.
    """
    groups, in_sync, not_audited, roles = {}, {}, {}, []
    for name, entry in hosts.items():
        if entry["role"] not in roles:
            roles.append(entry["role"])
        if "error" in entry:
            task, msg = (stopped or {}).get(name) or (entry["error"], "")
            not_audited.setdefault((entry["role"], task, msg), []).append(name)
            continue
        key, drift = _drift_key(entry)
        if not drift:
            in_sync[entry["role"]] = in_sync.get(entry["role"], 0) + 1
            continue
        group = groups.setdefault(key, {"role": entry["role"], "profile": entry.get("profile"), "hosts": [], "rows": drift})
        group["hosts"].append(name)
    drift = sorted(groups.values(), key=lambda group: (-len(group["hosts"]), sorted(group["hosts"])[0]))
    for group in drift:
        group["hosts"].sort()
    return {"grouped": len(hosts) >= AUDIT_GROUPED_HOSTS, "threshold": AUDIT_GROUPED_HOSTS,
            "drift": drift,
            "in_sync": [{"role": role, "hosts": count} for role, count in sorted(in_sync.items())],
            "not_audited": [{"role": role, "task": task, "msg": msg, "hosts": sorted(names)}
                            for (role, task, msg), names in sorted(
                                not_audited.items(), key=lambda item: (roles.index(item[0][0]), -len(item[1]), item[0]))]}


def rollout_host(name, report, failure=None, reached=False):
    """One host's entry and console line in the rollout summary."""
    if failure is not None:
        status = "unreachable" if failure.get("stage") == "connect" else "failed"
        why = "%s: %s" % (failure.get("task"), failure.get("msg"))
    elif report is None and reached:
        status = "unreachable"
        why = ("lost during the run (it answered, then stopped answering: crash, reboot or network); "
               "its changes may be partly applied - run the playbook again once it is back")
    elif report is None:
        status = "not_attempted"
        why = "not reached: an earlier batch exceeded the failure budget"
    else:
        status = "changed" if report.get("changed") else "ok"
        why = ""
    report = report or {}
    entry = {"status": status, "why": why, "changed": report.get("changed", []), "pending": report.get("pending", []),
             "warnings": report.get("warnings", []), "check_mode": report.get("check_mode", False)}
    line = "%s: %s" % (name, status.upper())
    if why:
        line += " - " + why
    if entry["changed"]:
        line += " | changed: " + "; ".join(entry["changed"])
    if entry["pending"]:
        line += " | pending: " + "; ".join(entry["pending"])
    return entry, line


def summarise_rollout(title, hosts, finished, run_hosts=None):
    """hosts: [{name, report, failure, reached}] in inventory order. problems: hosts not tuned.

    run_hosts: the play's hosts after --limit (ckptio_play_hosts), None when no host recorded them;
    a host outside them was not in this run: listed once, never counted as a problem.
    """
    outside = [host["name"] for host in hosts if run_hosts is not None and host["name"] not in run_hosts]
    entries, lines = {}, []
    for host in hosts:
        if run_hosts is not None and host["name"] not in run_hosts:
            continue
        entry, line = rollout_host(host["name"], host.get("report"), host.get("failure"), host.get("reached", False))
        entries[host["name"]] = entry
        lines.append(line)
    problems = sum(1 for entry in entries.values() if entry["status"] in ("failed", "unreachable", "not_attempted"))
    if outside:
        lines.append("Not in this run (--limit): " + ", ".join(outside))
    return {"playbook": title, "finished": finished, "hosts": entries, "lines": lines, "problems": problems,
            "outside_run": outside}


def _percent(value):
    """The budget as Jinja's float filter read it: a number, or 0.0 for anything else (stop at any failure)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def budget(batch, failed, answering, max_fail_percentage=0):
    """Whether the rollout stops after this batch.

    batch: the hosts the batch started with; failed: those with a recorded failure; answering:
    ansible_play_batch at the end (a host lost in the middle of the role dropped out of it
    without a failure to record, and counts as failed).
    """
    lost = [name for name in batch if name not in answering and name not in failed]
    failures = len([name for name in batch if name in failed]) + len(lost)
    stop = failures * 100 > _percent(max_fail_percentage) * len(batch)
    return {"failures": failures, "hosts": len(batch), "stop": stop,
            "msg": "%d of %d hosts of this batch failed, more than ckptio_max_fail_percentage=%s %%: later batches are "
                   "left untouched." % (failures, len(batch), max_fail_percentage)}


def _host_vars(hostvars, name):
    try:
        variables = hostvars[name]
    except KeyError:
        return {}
    return variables if isinstance(variables, Mapping) else {}


def _names(value, filter_name, what):
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise AnsibleFilterError("%s: %s must be a list of host names, got %r" % (filter_name, what, value))
    return [str(name) for name in value]


def audit_summary(groups, hostvars, finished=None, check_mode=False, fail_on_drift=False):
    picked = []
    for group in groups or []:
        if not isinstance(group, Mapping) or not {"role", "hosts", "report_var"} <= set(group):
            raise AnsibleFilterError("audit_summary: each group needs role, hosts and report_var, got %r" % (group,))
        hosts = []
        for name in _names(group["hosts"], "audit_summary", "hosts"):
            variables = _host_vars(hostvars, name)
            if variables.get(AUDIT_TARGETED_FACT):
                hosts.append({"name": name, "report": variables.get(group["report_var"]),
                              "failure": variables.get("ckptio_failure"), "address": variables.get("ansible_host")})
        picked.append({"role": group["role"], "hosts": hosts})
    return summarise_audit(picked, finished or _now(), check_mode, fail_on_drift)


def rollout_summary(hosts, hostvars, report_var, title, finished=None):
    picked, run_hosts = [], None
    for name in _names(hosts, "rollout_summary", "the input"):
        variables = _host_vars(hostvars, name)
        picked.append({"name": name, "report": variables.get(report_var), "failure": variables.get("ckptio_failure"),
                       "reached": variables.get("ckptio_reached", False)})
        recorded = variables.get("ckptio_play_hosts")
        if run_hosts is None and recorded is not None:
            # Every host of the play recorded the same ansible_play_hosts_all: the first one says it for all
            # (a union per host would be quadratic in the cluster's size).
            run_hosts = set(_names(recorded, "rollout_summary", "ckptio_play_hosts"))
    return summarise_rollout(title, picked, finished or _now(), run_hosts)


def rollout_budget(batch, hostvars, play_batch, max_fail_percentage=0):
    batch = _names(batch, "rollout_budget", "the input")
    failed = [name for name in batch if "ckptio_failure" in _host_vars(hostvars, name)]
    return budget(batch, failed, _names(play_batch, "rollout_budget", "play_batch"), max_fail_percentage)


# The steps ckptio.nfs.internal calls, by name.
STEPS = {
    "audit_summary": audit_summary,
    "rollout_summary": rollout_summary,
    "rollout_budget": rollout_budget,
}
