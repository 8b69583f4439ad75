# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one writer of a host's part of a bundle (clients/<host>/ or servers/<host>/) and of its
context.yml: what goes in each file, as [{name, content}], which the action ckptio.nfs.bundle_part
writes on the controller through the one atomic writer.

Both roles that make bundles use it (roles/checkpoint_capture: capture.json; roles/canary_validation:
canary.json, probe.json), through ckptio.nfs.bundle_part (plugins/action/bundle_part.py), and
saved_stats_bundle writes its context.yml with context_text(); the reader is bundle.py, whose file
table names every file. The records are built here, not in a Jinja dict literal, and
rendered as ansible.builtin.to_nice_json / to_json render them (json.dumps, ASCII, indent 4 and
sorted keys for the records, one line for the host samples), each with its final newline, so the
files are byte-for-byte what the roles wrote before (issue 27, item 3).
"""

from __future__ import annotations

import json

from collections.abc import Mapping

try:
    import yaml
except ImportError:  # a host module that imports this file writes no context.yml; the controller has PyYAML
    yaml = None

from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle

# canary.json's "clock": the clock_offset result without Ansible's own keys (changed, failed...).
CLOCK_KEYS = ("offset_seconds", "uncertainty_seconds", "samples", "bound_seconds", "within_bound", "message", "reader",
              "readings")
# canary.json's barrier blocks: the controller's go plan (barrier.plan_go) seen from one host.
PLAN_KEYS = ("go_at", "margin_seconds", "fanout_seconds", "not_ready")


def document(record):
    """A record file's text: ansible.builtin.to_nice_json's rendering, and a final newline."""
    return json.dumps(record, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"


def context_text(context):
    """context.yml's text: block YAML in the document's own key order, UTF-8, indent 2, folded at 80
    columns - the bytes ansible.builtin.to_nice_yaml(indent=2, sort_keys=false) gave the roles' bundles
    (yaml.dump with ansible-core's dumper, a SafeDumper, and allow_unicode), so no bundle changes."""
    return yaml.safe_dump(plain(context), default_flow_style=False, sort_keys=False, allow_unicode=True, indent=2)


def plain(value):
    """value with every str, int, float, bool, mapping and list made the plain Python type: ansible-core 2.19 hands an
    action templated values as subclasses (its tagged str, float, int), which yaml's SafeDumper refuses ("cannot
    represent an object": molecule-fanout's context.yml, where the role passes `... | float`)."""
    if isinstance(value, Mapping):
        return dict((plain(key), plain(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return value


def context_part(context):
    """[{name, content}] of a bundle's context.yml, for the same writer as a host's files."""
    return [{"name": bundle.CONTEXT_FILE, "content": context_text(context)}]


def samples_part(kind, samples):
    """[{name, content}] of host samples {file key: sample} (a server's at the canary's start and end),
    each one line as every host_*.json, in the file table's order."""
    names = bundle.file_names(kind)
    unknown = sorted(set(samples or {}) - set(names))
    if unknown:
        raise ValueError("no file %s in a %s part" % (", ".join(unknown), kind))
    return [{"name": names[key], "content": sample_line(samples[key])} for key in names if key in (samples or {})]


def sample_line(sample):
    """A host sample's file text (host_*.json): ansible.builtin.to_json's one line, and a newline."""
    return bundle.json_line(sample)


def _plan(plan, host, *per_host):
    block = dict((key, plan[key]) for key in PLAN_KEYS)
    for key in per_host:
        block[key] = (plan.get(key) or {}).get(host)
    return block


PLACEMENT_KEYS = ("shape", "per_path", "blocking_seconds", "drain")


def canary_record(canary, host, start_at, clock, go_plan, read_plan=None):
    """canary.json: the canary's result (checkpoint_canary, through async_status: keys it lacks
    are empty), the run's one start time, the clock reading and the two go plans as this host saw them."""
    barrier = _plan(go_plan, host, "go")
    barrier["host"] = canary.get("barrier")
    record = {
        "ranks": canary.get("ranks", []), "summary": canary.get("summary"), "stalled": canary.get("stalled", []),
        "start_at": start_at,
        "clock": dict((key, clock[key]) for key in CLOCK_KEYS),
        "barrier": barrier,
        "read_barrier": None if read_plan is None else _plan(read_plan, host, "go", "abort"),
        "restore": canary.get("restore"), "harness": canary.get("harness"), "workdir": canary.get("workdir"),
        "cleaned_up": canary.get("cleaned_up"), "host_samples": canary.get("host_samples", {}), "msg": canary.get("msg", ""),
    }
    # Issue 28, where the canary returned them: the shape's plan summary, the figures per NFS path,
    # the optimizer's blocking seconds, the burst buffer's drain (older results' records stay as they were).
    record.update((key, canary[key]) for key in PLACEMENT_KEYS if key in canary)
    # Issue 47: what the sunrpc sampler saw and missed (the texts are files of their own), where it ran.
    if isinstance(canary.get("rpc_samples"), dict):
        record["rpc_sampling"] = dict((key, canary["rpc_samples"].get(key)) for key in ("mode", "notes", "cost"))
    return record


def probe_record(target, seconds, probe, clock=None):
    """probe.json: where this client sent (target: server, port, streams) for how long, and what
    ckptio.nfs.tcp_probe measured (its iperf3 result is `parsed`)."""
    return {
        "server": target["server"], "port": int(target["port"]), "streams": int(target["streams"]), "seconds": int(seconds),
        "start_at": probe.get("start_at"), "started_at": probe.get("started_at"), "barrier": probe.get("barrier"),
        "clock": clock, "summary": probe.get("summary"), "msg": probe.get("msg", ""), "iperf3": probe.get("parsed"),
    }


def host_files(kind, before=None, after=None, dstate_text=None, records=None, samples=None):
    """[{name, content}] of a host's part: the statistics files when both reads are given (else
    only dstate.txt, when given), a client's raw sunrpc samples (samples: the canary's rpc_samples,
    each text that is not None, bundle.RPC_SAMPLE_FILES), then each record {file key: record} as
    its JSON document (the probe's as two: probe.json and iperf3's raw output in probe_iperf3.json)."""
    if kind not in ("clients", "servers"):
        raise ValueError("a host's part is \"clients\" or \"servers\", not %r" % (kind,))
    names = bundle.file_names(kind)
    if before is not None and after is not None:
        files = bundle.stats_files(kind, before, after, dstate_text)
    else:
        files = [] if dstate_text is None else [{"name": names["dstate"], "content": dstate_text}]
    for key, name in bundle.RPC_SAMPLE_FILES.items() if kind == "clients" and samples else ():
        if isinstance(samples.get(key), str):
            files.append({"name": name, "content": samples[key]})
    for key, record in (records or {}).items():
        if key == "probe" and isinstance(record, dict):
            files += _probe_files(names[key], record)
        else:
            files.append({"name": names[key], "content": document(record)})
    return files


def _probe_files(name, record):
    """probe.json without iperf3's raw output, and that output in its own file (bundle.PROBE_RAW_FILE)
    when iperf3 printed any: the diagnosis reads probe.json only."""
    files = [{"name": name, "content": document(dict((key, value) for key, value in record.items() if key != "iperf3"))}]
    if record.get("iperf3") is not None:
        files.append({"name": bundle.PROBE_RAW_FILE, "content": document(record["iperf3"])})
    return files
