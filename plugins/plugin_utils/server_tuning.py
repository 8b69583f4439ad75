# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The server_tuning role's per-host report, from what its tasks registered.

Not filters of their own: the one public filter ckptio.nfs.internal (plugins/filter/internal.py)
calls them by name, so `ansible-doc -t filter -l ckptio.nfs` lists only what users call. The
documentation of each step is in the YAML file of the same name next to this one.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.module_utils.config import exports as exports_format

SYNC_NOTE = "sync (the default): each COMMIT/fsync of a checkpoint waits for the disk"
ASYNC_NOTE = ("async: writes are acknowledged before they reach disk; a server crash can lose checkpoint data the "
              "ranks saw as written")


def _number(value):
    """A whole number as Jinja's int filter reads one (0 when it is none), for comparisons only."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return 0


def changed_lines(nfsd, state, threads, conf_file):
    """What the nfsd_threads run changed (in check mode: would change), one line each."""
    lines = []
    if nfsd.get("changed"):
        live = "%s -> %s" % (nfsd.get("threads_before", "n/a"), nfsd.get("threads_after", "n/a"))
        if state == "absent":
            lines.append("nfsd threads: %s removed, live %s" % (conf_file, live))
        else:
            lines.append("nfsd threads: %s (live %s)" % (threads, live))
    if nfsd.get("max_connections_before") != nfsd.get("max_connections_after"):
        lines.append("nfsd max_connections: live %s -> %s (persisted: %s)" % (
            nfsd.get("max_connections_before"), nfsd.get("max_connections_after"), nfsd.get("persisted_max_connections")))
    return lines


def pending_lines(nfsd, apply_live):
    """What is written but not live: a live change not applied, a restart that would set another count."""
    lines = []
    reason = nfsd.get("live_not_applied_reason", "")
    if apply_live and not nfsd.get("live_applied", True) and reason:
        lines.append("nfsd live threads not applied: %s" % reason)
    persisted, live = nfsd.get("effective_persisted_threads"), nfsd.get("threads_after")
    if persisted is not None and live is not None and _number(persisted) != _number(live):
        lines.append("nfs-server restart would set threads to %s (live: %s)" % (persisted, live))
    return lines


def connections_sufficient(nfsd, need):
    """True/False: nfsd's connection limit covers the clients' need; None where the kernel has no limit."""
    effective = (nfsd.get("connection_limit") or {}).get("effective")
    return None if effective is None else effective >= need.get("need")


def warning_lines(nfsd, client_io_size, need, clients_group):
    """nfs.conf conflicts, a block size below the clients' rsize/wsize, a connection limit below their need."""
    lines = []
    for conflict in nfsd.get("conflicts") or []:
        # The rows are mappings; json.dumps is what Jinja's to_json wrote for them.
        lines.append("nfs.conf conflict: %s" % (json.dumps(conflict) if isinstance(conflict, Mapping) else conflict))
    block = nfsd.get("max_block_size")
    if block is not None and _number(block) < client_io_size:
        lines.append("max_block_size is %s: clients asking rsize/wsize=%s get %s; raise /proc/fs/nfsd/max_block_size "
                     "before nfsd starts (EBUSY while it runs)" % (block, client_io_size, block))
    if connections_sufficient(nfsd, need) is False:
        # Over the limit svc_check_conn_limits() (net/sunrpc/svc_xprt.c) closes the oldest connection.
        lines.append("nfsd allows %s connections but the %s clients of %s open %s to this server (need with margin: %s); "
                     "over the limit nfsd closes its oldest connection (\"too many open connections\"): set "
                     "server_tuning_max_connections (auto sets the need) or raise threads, which raises the default "
                     "(threads + 3) * 20" % (nfsd["connection_limit"]["effective"], need.get("clients"), clients_group,
                                             need.get("connections"), need.get("need")))
    lines.extend(nfsd.get("warnings") or [])
    return lines


def persist_summary(nfsd):
    """How nfs-server gets its thread count (the module's persist_mechanism) and what the next restart uses."""
    return {"mechanism": nfsd.get("persist_mechanism"), "reason": nfsd.get("persist_mechanism_reason"),
            "effective_threads": nfsd.get("effective_persisted_threads"), "source": nfsd.get("effective_persisted_source")}


def export_rows(reads):
    """(rows, warnings) from the slurp results of the export files; unread files are skipped.

    One row per client: {file, path, client, options, notes}, options being the line's defaults
    then the client's own (module_utils/config/exports.py reads the files as exportfs does).
    """
    rows, warnings = [], []
    for read in reads or []:
        if "content" not in read:
            continue
        try:
            text = base64.b64decode(read["content"]).decode("utf-8", errors="surrogateescape")
        except (TypeError, ValueError, binascii.Error) as exc:
            raise AnsibleFilterError("server_tuning_report: %s: not base64 slurp content: %s" % (read.get("item"), exc))
        entries, error = exports_format.parse(text)
        for entry in entries:
            mode = exports_format.write_mode(entry["options"])
            notes = [ASYNC_NOTE] if mode == "async" else [SYNC_NOTE] if mode is None else []
            rows.append({"file": read.get("item"), "path": entry["path"], "client": entry["client"],
                         "options": entry["options"], "notes": notes})
        if error:
            warnings.append("%s line %s: %s; exportfs exports nothing after it" % (read.get("item"), error["line"], error["msg"]))
    return rows, warnings


@dataclasses.dataclass(frozen=True)
class ReportInputs:
    """What the role passes the report besides nfsd_threads' result: one dict, its spec the `inputs`
    suboptions of server_tuning_report.yml (checked by ckptio.nfs.internal before the step runs)."""

    connection_need: Mapping
    max_connections_plan: Mapping
    profile: str
    conf_file: str
    clients_group: str
    exports: tuple = ()
    state: str = "present"
    threads: object = None
    apply_live: bool = True
    check_mode: bool = False
    client_io_size: int = 1048576
    max_connections_setting: object = "auto"

    @classmethod
    def from_mapping(cls, inputs):
        if not isinstance(inputs, Mapping):
            raise AnsibleFilterError("server_tuning_report: inputs must be a mapping, got %r" % (inputs,))
        names = [field.name for field in dataclasses.fields(cls)]
        values = dict((name, inputs[name]) for name in names if inputs.get(name) is not None)
        for name in ("connection_need", "max_connections_plan"):
            if not isinstance(values.get(name), Mapping):
                raise AnsibleFilterError("server_tuning_report: inputs.%s must be a mapping, got %r" % (name, inputs.get(name)))
        values["exports"] = tuple(values.get("exports") or ())
        # A whole number reaches a role's vars dict as text on ansible-core before 2.19 (its templating
        # renders a var to a string): the report keeps the setting's type, a number or auto, on every core.
        setting = values.get("max_connections_setting", "auto")
        if isinstance(setting, str) and setting.strip().isdigit():
            values["max_connections_setting"] = int(setting)
        return cls(**values)


def server_tuning_report(nfsd_result, inputs):
    if not isinstance(nfsd_result, Mapping):
        raise AnsibleFilterError("server_tuning_report: _input must be a mapping, got %r" % (nfsd_result,))
    given = ReportInputs.from_mapping(inputs)
    nfsd, need, plan = nfsd_result, given.connection_need, given.max_connections_plan
    rows, export_warnings = export_rows(given.exports)
    return {
        "role": "server_tuning", "profile": given.profile, "check_mode": given.check_mode,
        "changed": changed_lines(nfsd, given.state, given.threads, given.conf_file),
        "pending": pending_lines(nfsd, given.apply_live),
        "warnings": warning_lines(nfsd, _number(given.client_io_size), need, given.clients_group) + export_warnings,
        "settings": [dict(row, scope="nfsd") for row in nfsd.get("settings") or []],
        "exports": rows,
        "max_block_size": nfsd.get("max_block_size"),
        "persist": persist_summary(nfsd),
        "connections": {
            "clients_group": given.clients_group, "clients": need.get("clients"), "connections": need.get("connections"),
            "extra": need.get("extra"), "margin_percent": need.get("margin_percent"), "margin": need.get("margin"),
            "need": need.get("need"), "setting": given.max_connections_setting,
            "max_connections": plan.get("max_connections"), "reason": plan.get("reason"),
            "limit": nfsd.get("connection_limit", {}), "sufficient": connections_sufficient(nfsd, need),
        },
    }


# The steps ckptio.nfs.internal calls, by name.
STEPS = {"server_tuning_report": server_tuning_report}
