# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A client's figures, written beside its files when its part of the bundle is written (figures.json) and
read back instead of parsing the files again (issue 27).

Reading a client is parsing its two mountstats samples, D-state samples, host samples and canary.json into
the row the run keeps (client_row.client_row): 0.8 ms a client, 13 s of CPU at 16,384 clients
(tests/bench/README.md). The writer (ckptio.nfs.bundle_part, from the texts it writes) works
the same row out once, on the controller, and writes it in figures.json; the reader takes the row from
there only while it is what reading the files would give:
- every file it came from (SOURCES) is there with the same SHA-256, and no other one is: an edited,
  replaced, added or removed file is noticed, and the client is read from its files;
- it was made by this reader's rules (FORMAT: raised whenever client_row's figures change, which a unit
  test pins on the fixture captures);
- for the same mount point (context.yml `mount_point`, one path) - the row depends on nothing else of
  the run: the writer leaves the figures out where the link rows would be scaled to the run's
  checkpoint seconds (no canary samples at the ranks' start and end, client_evidence).
The figures name no host: the reader adds the directory's name where the row holds it. probe.json is
written later (the probe runs after the canary) and read as before, after the figures are taken. A
figures.json that breaks its schema (bundle_values.FIGURES) or lacks a key the layers read is not used
either: the files are read, as in a bundle without it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.client_evidence import ClientEvidence, kept_probe, uses_checkpoint_seconds
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.client_row import client_row
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle_values
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle import CLIENT_FILES, FIGURES_FILE, parse_texts
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle_values import BundleError

# Raise when client_row (or what it calls: the mountstats delta, the D-state summary, the host evidence)
# would give another row for the same files: figures written by an older writer are then not used.
# 2: the xprt delta holds reopen_connects (transports the before sample showed closed opening once), the
# delta negative_time (a per-op time printed from a negative kernel value).
# Not raised for issue 47: a client with the slot table's files (sunrpc_xprt, rpc_tasks, rpc_latency) holds its
# summary (view slot_table) now, and those files are sources now, so no figures.json written before can match it;
# every other client's row is the same.
# 3: a client's slot-table summary says why a file is not there from the canary's own notes (issue 47: "the kernel
# predates sunrpc sysfs, 5.14", "rpc_sampling=queues") where it said only that it was not in the bundle.
FORMAT = 3

# The files a client's row comes from: every client file but probe.json (read after the figures are
# written) and capture.json (a real job's window, which the row does not read).
SOURCES = tuple(key for key in CLIENT_FILES if key not in ("probe", "capture"))

# The keys the layers read without a default, which a figures.json must hold (not null): a row from the
# files always does. The other keys may be null, as the files' row has them (a WRITE line before iostats
# 1.1 has no errors, a virtio link no speed, a reset link no bytes).
_OP_KEYS = ("ops", "retrans", "timeouts", "bytes_sent", "avg_rtt_ms", "avg_exe_ms", "avg_queue_ms")
_RPC_KEYS = ("sends", "transports", "max_slots", "max_slots_before", "backlog_per_send", "sending_per_send", "connect_count",
             "reopen_connects")
_DELTA_KEYS = ("device", "mount_point", "nfs_version", "interval_seconds", "bytes", "write_bytes", "read_bytes",
               "write_mb_per_second", "read_mb_per_second", "rpc", "ops", "usable", "problems", "problem_details")
_DSTATE_KEYS = ("samples", "samples_with_dstate", "max_count", "longest_run", "wchan_counts", "group_counts")
_LINK_KEYS = ("interface", "window_seconds", "reset", "side", "measured_over")
_EVIDENCE_KEYS = ("links", "addresses", "tcp", "tcp_how")


def _digest(text):
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _sources(texts):
    """{file name: SHA-256} of the source files there are (texts: {key: text})."""
    return dict((CLIENT_FILES[key], _digest(texts[key])) for key in SOURCES if key in texts)


def _mount_point(after):
    """The one mount point the client's statistics were read on (ckptio.nfs.nfs_client_stats `mounts`), else None."""
    points = set(mount.get("mount_point") for mount in (after or {}).get("mounts") or [] if isinstance(mount, dict))
    return points.pop() if len(points) == 1 else None


def figures_file(files, after):
    """{name: figures.json, content} for a client's files as the writer writes them ([{name, content}]), after:
    its nfs_client_stats read after the window (the mount point); None where the row could not be used for
    another run than this one, or the files would not be read (a JSON file that does not parse, a mountstats
    without the mount: the reader then says why)."""
    mount_point = _mount_point(after)
    names = dict((name, key) for key, name in CLIENT_FILES.items())
    texts = dict((names[item["name"]], item["content"]) for item in files if item["name"] in names and item["content"] is not None)
    if mount_point is None:
        return None
    try:
        problems = []
        parsed = parse_texts(texts, CLIENT_FILES, "clients", problems)
        if problems or uses_checkpoint_seconds(parsed):
            return None
        row = _row_document(client_row(None, parsed, mount_point))
        content = json.dumps({"format": FORMAT, "mount_point": mount_point, "sources": _sources(texts), "row": row},
                             allow_nan=False, separators=(",", ":"))
    except Exception:  # pylint: disable=broad-except
        # The figures are a cache: whatever keeps them from being worked out here (a value the diagnosis would
        # refuse, or one it has never seen) must not fail the capture that writes the files; the diagnosis then
        # reads the files and says why it cannot use them.
        return None
    return {"name": FIGURES_FILE, "content": content + "\n"}


def _row_document(row):
    view, excluded, canary, evidence = row
    if evidence is not None:
        evidence = dict((field.name, getattr(evidence, field.name)) for field in dataclasses.fields(evidence) if field.name != "probe")
    return {"view": view, "excluded": excluded, "canary": canary, "evidence": evidence}


def read_row(host, texts, mount_point, mount_points):
    """client_row's (view, excluded, canary, ClientEvidence) of a client from its figures.json (texts: the host's
    files unparsed, figures.json's under FIGURES_FILE), its evidence without the probe (probe.json is read after
    the figures are written: the caller adds it); None when the figures are not for these files, this reader or
    this mount point (the client is then read from its files)."""
    text = texts.get(FIGURES_FILE)
    if text is None or (mount_points and len(mount_points) > 1):
        return None
    try:
        document = bundle_values.parse_json(text, FIGURES_FILE)
    except BundleError:
        return None
    if (not isinstance(document, dict) or document.get("format") != FORMAT or document.get("mount_point") != mount_point
            or document.get("sources") != _sources(texts) or not _complete(document.get("row") or {})):
        return None
    return _row(host, document["row"])


def with_shared_keys(rows, taken):
    """rows ([(host, view, excluded, canary, ClientEvidence)], one chunk of a run's clients) with those read_row took
    from figures.json ({index in rows: (its figures.json text, its probe.json text or None, the evidence's probe
    when there is no probe text)}) made from one json.loads of those texts together; only the host of such a row
    is read (a forked reader sends it back as (host, None, None, None, None): run._read_chunk).

    json.loads makes each dict key once per call (its key memo), so a row from a figures.json of its own holds
    ~250 key strings of its own: ~16 kB of a ~38 kB row, 270 MB at 16,384 clients (tests/bench/README.md).
    Parsed together, the chunk's rows share one key object each. Each text was parsed alone and checked first
    (read_row) and is one JSON value, so joined with commas in brackets they are a JSON array of the same values
    in the same order; the rows are equal to the ones read alone."""
    if not taken:
        return rows
    indexes = sorted(taken)
    texts = [text for index in indexes for text in taken[index][:2] if text is not None]
    documents = iter(json.loads("[%s]" % ",".join(texts)))
    shared = list(rows)
    for index in indexes:
        _figures_text, probe_text, probe_otherwise = taken[index]
        host = rows[index][0]
        view, excluded, canary, evidence = _row(host, next(documents)["row"])
        if evidence is not None:
            # probe.json is read beside the figures (run._client_row_and_figures), not in them.
            probe = kept_probe(next(documents)) if probe_text is not None else probe_otherwise
            evidence = dataclasses.replace(evidence, probe=probe)
        shared[index] = (host, view, excluded, canary, evidence)
    return shared


def _has(value, keys):
    return isinstance(value, dict) and all(value.get(key) is not None for key in keys)


def _complete(row):
    """True when the row holds every key the layers read without a default (bundle_values.FIGURES checks the types)."""
    view, evidence = row.get("view"), row.get("evidence")
    if view is not None:
        delta = view.get("delta")
        if not (_has(delta, _DELTA_KEYS) and _has(delta["rpc"], _RPC_KEYS) and isinstance(view.get("sunrpc"), dict)
                and all(_has(op, _OP_KEYS) for op in delta["ops"].values())):
            return False
        if view.get("dstate") is not None and not _has(view["dstate"], _DSTATE_KEYS):
            return False
    return evidence is None or (_has(evidence, _EVIDENCE_KEYS) and all(_has(link, _LINK_KEYS) for link in evidence["links"]))


def _row(host, row):
    view, excluded, evidence = row["view"], row["excluded"], row["evidence"]
    # One of a view (with its evidence) and an exclusion, as client_row gives; the CPU window as client_evidence
    # makes it: (window, sample seconds or null, how).
    if (view is None) == (excluded is None) or (view is not None and evidence is None):
        return None
    cpu = evidence["cpu"] if evidence is not None else None
    if cpu is not None and not (len(cpu) == 3 and isinstance(cpu[0], dict) and isinstance(cpu[2], str)):
        return None
    if view is not None:
        view = dict(view, host=host)
    if excluded is not None:
        excluded = dict(excluded, host=host)
    if evidence is not None:
        evidence = ClientEvidence(tuple(cpu) if cpu is not None else None, tuple(dict(link, host=host) for link in evidence["links"]),
                                  tuple(evidence["addresses"]), evidence["tcp"], evidence["tcp_how"], None)
    return view, excluded, row["canary"], evidence
