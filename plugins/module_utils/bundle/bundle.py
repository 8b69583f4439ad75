# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The capture bundle's files: their names, the context document, the checks of an in-memory bundle. Pure.

docs/capture-bundle.md describes every file. The one reader that loads a bundle directory is
module_utils/host/bundle_reader.py (load_bundle, saved_diagnosis): it turns a directory into the
in-memory shape diagnosis.diagnose() takes, from the tables here; diagnose_bundle and
checkpoint_report both use it, so a file added here is seen by both. The role that writes bundles (roles/canary_validation) takes the
file names from the same table (step bundle_files) and its context.yml from
context_document() (step canary_context, behind ckptio.nfs.internal).

Files are parsed by bundle_values (the one YAML/JSON parser of a bundle and its schema): a value
that breaks the schema (a list where a mapping belongs, words or .nan where a number belongs, a
400-digit number, YAML aliases) is a BundleError naming the file and the key; an optional JSON
file that does not parse at all is listed in bundle["problems"] instead of stopping the diagnosis.
"""

from __future__ import annotations

import json

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import barrier
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle_values
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary
# Re-exported: the modules and diagnosis.py catch and raise bundle.BundleError.
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle_values import HAS_YAML, BundleError  # noqa: F401 pylint: disable=unused-import

# key in the in-memory bundle -> file name in clients/<host>/ or servers/<host>/
CLIENT_FILES = {
    "mountstats_before": "mountstats_before.txt", "mountstats_after": "mountstats_after.txt",
    "dstate": "dstate.txt", "sunrpc": "sunrpc.txt",
    # host samples (CPU, disks, links) around the window, and the canary's own result with its
    # samples at the first rank's start and the last rank's end
    "host_before": "host_before.json", "host_after": "host_after.json",
    "canary": "canary.json", "probe": "probe.json",
    # a capture of a real checkpoint (no canary): this client's clock, window ends and sampler (capture.py)
    "capture": "capture.json",
}
# The canary's raw sunrpc samples of the write window (issue 47; host/sunrpc_sampler.py, docs/kernels.md),
# written verbatim by bundle_part.host_files where the kernel had the view; parsed by kernel_text and read by the
# diagnosis as the slot table seen fill (diagnosis/slot_samples.py): client files too, bundles before them have none.
RPC_SAMPLE_FILES = {"sunrpc_xprt": "sunrpc_xprt.txt", "rpc_tasks": "rpc_tasks.txt", "rpc_latency": "rpc_latency.txt"}
CLIENT_FILES.update(RPC_SAMPLE_FILES)
SERVER_FILES = {
    "nfsd_before": "nfsd_before.txt", "nfsd_after": "nfsd_after.txt",
    "pool_stats_before": "pool_stats_before.txt", "pool_stats_after": "pool_stats_after.txt",
    "threads": "threads.txt", "host_before": "host_before.json", "host_after": "host_after.json",
    # sampled by the clients' play when the ranks start (start_at) and after the last one ended
    "host_start": "host_start.json", "host_end": "host_end.json",
}
# iperf3's own -J output of a client's probe, written beside probe.json by the one writer
# (bundle_part.host_files) and read by no diagnosis: the diagnosis keeps the probe's summary, and
# json-decoding and schema-checking ~38 kB of raw output a client cost a third of reading a
# 16,384-client bundle (tests/bench/README.md). Not in CLIENT_FILES, so the reader never opens it;
# bundles written before it hold the same output in probe.json's `iperf3` key, read as before.
PROBE_RAW_FILE = "probe_iperf3.json"
# A client's figures as the diagnosis takes them from its files (its mountstats delta, D-state and
# sunrpc summary, canary ranks, CPU, link and TCP windows), written beside them by the writer and
# read instead of them while every file they came from is unchanged (diagnosis/host_figures.py):
# reading a client's files cost 0.8 ms, 13 s of CPU at 16,384 clients (tests/bench/README.md).
# Not in CLIENT_FILES: no file the figures came from, and no figure the diagnosis needs from it alone.
FIGURES_FILE = "figures.json"
JSON_SUFFIX = ".json"
# The run's description at the bundle's top (docs/capture-bundle.md "context.yml").
CONTEXT_FILE = "context.yml"
# What diagnose_bundle writes and checkpoint_report reads back.
DIAGNOSIS_FILE = "diagnosis.json"
# Not bundle files: the canary's two-phase start on each client's tmpfs (barrier.py), named here
# so the role takes every file name it writes from one table.
BARRIER_FILES = {"ready": barrier.READY_FILE, "go": barrier.GO_FILE, "abort": barrier.ABORT_FILE, "done": barrier.DONE_FILE,
                 "written": barrier.WRITTEN_FILE, "read_go": barrier.READ_GO_FILE}
FILE_TABLES = {"clients": CLIENT_FILES, "servers": SERVER_FILES, "barrier": BARRIER_FILES}


def check_values(bundle):
    """BundleError naming the file and key unless an in-memory bundle (the filter ckptio.nfs.nfs_diagnosis
    takes one) fits the schema load_bundle() checks files against: context.yml and every JSON file."""
    bundle_values.checked(bundle.get("context"), CONTEXT_FILE)
    for kind, names in (("clients", CLIENT_FILES), ("servers", SERVER_FILES)):
        hosts = bundle.get(kind) or {}
        bundle_values.checked(hosts, kind)
        for host, files in hosts.items():
            bundle_values.checked(files, "%s/%s" % (kind, host))
            for key, value in files.items():
                name = names.get(key, key)
                if name.endswith(JSON_SUFFIX):
                    bundle_values.checked(value, "%s/%s/%s" % (kind, host, name))
    return bundle


def parse_texts(texts, names, where, problems):
    """{key: text or parsed JSON} of a host's texts ({key: text}, as host/bundle_reader.py reads them or the
    writer writes them), in the file table's order; an optional JSON file that does not parse at all is left out and listed
    in problems. The one parsing of a host's files: the reader's (host/bundle_reader.py) and the figures' writer's
    (diagnosis/host_figures.py); pure, so the diagnosis needs nothing of host/."""
    files = {}
    for key, name in names.items():
        if key not in texts:
            continue
        if name.endswith(JSON_SUFFIX):
            try:
                files[key] = bundle_values.parse_json(texts[key], "%s/%s" % (where, name))
            except bundle_values.NotParsed as exc:
                problems.append("%s: not used" % exc)
            continue
        files[key] = texts[key]
    return files


def canary_ranks(bundle):
    """Every client's canary ranks, each tagged with its host, start/end on the controller's clock.

    canary.json's `clock` (the ckptio.nfs.clock_offset result the role measured before the launch)
    gives each host's offset; a bundle written before clocks were measured has none, and its ranks
    keep their host's times with clock_offset_seconds None (the report then says so).
    """
    canaries = dict((host, files["canary"]) for host, files in bundle["clients"].items()
                    if isinstance(files.get("canary"), dict))
    return canary.combine_hosts(dict((host, result.get("ranks") or []) for host, result in canaries.items()),
                                dict((host, result.get("clock")) for host, result in canaries.items()))


def canary_harness(bundle):
    """{host: canary.json's `harness` block} (the harness's own CPU during the ranks); {} for old bundles."""
    return dict((host, files["canary"]["harness"]) for host, files in bundle["clients"].items()
                if isinstance(files.get("canary"), dict) and isinstance(files["canary"].get("harness"), dict))


def file_names(kind):
    """{key: file name} of the files in clients/<host>/ (kind "clients"), servers/<host>/ ("servers") or
    the canary's barrier directory ("barrier")."""
    if kind not in FILE_TABLES:
        raise ValueError("bundle files are \"clients\", \"servers\" or \"barrier\", not %r" % (kind,))
    return dict(FILE_TABLES[kind])


def context_document(mount_point, label, target_checkpoint_bytes, target_window_seconds, network, canary_block,
                     restore_block=None):
    """context.yml as the role writes it; a key whose value is None or {} is left out.

    restore_block: restore.context_restore_block() (None without a read phase: no `restore` key).

    target_checkpoint_bytes or target_window_seconds 0 (or None) means not given: null in the target
    (CONTRACT 2), never the canary's own bytes, which judged the canary against itself.
    """
    document = {
        "mount_point": mount_point,
        "label": label,
        "target": {"checkpoint_bytes": int(target_checkpoint_bytes) if target_checkpoint_bytes else None,
                   "window_seconds": float(target_window_seconds) if target_window_seconds else None},
        "network": network,
        "canary": canary_block,
        "restore": restore_block,
    }
    return dict((key, value) for key, value in document.items() if value is not None and value != {})


def json_line(value):
    """A host sample's text: one JSON line (ansible.builtin.to_json's rendering) and a newline."""
    return json.dumps(value) + "\n"


def stats_files(kind, before, after, dstate_text=None):
    """[{name, content}] of a host's statistics files from the two reads that bracket the window.

    kind "clients": before/after are ckptio.nfs.nfs_client_stats results (mountstats, sunrpc from
    the first read, host samples) and dstate_text the D-state samples, left out when None; kind
    "servers": ckptio.nfs.nfsd_stats results (nfsd, pool_stats, host samples, the threads after
    the window when the host has the file). Both roles write these through
    ckptio.nfs.bundle_part (bundle_part.host_files).
    """
    names = file_names(kind) if kind in ("clients", "servers") else None
    if names is None:
        raise ValueError("statistics files are \"clients\" or \"servers\", not %r" % (kind,))
    if kind == "clients":
        files = [(names["mountstats_before"], before["raw_mountstats"]), (names["mountstats_after"], after["raw_mountstats"]),
                 (names["sunrpc"], before["sunrpc_text"]),
                 (names["host_before"], json_line(before["host_sample"])), (names["host_after"], json_line(after["host_sample"])),
                 (names["dstate"], dstate_text)]
    else:
        threads = after.get("threads")
        files = [(names["nfsd_before"], before["raw_nfsd"]), (names["nfsd_after"], after["raw_nfsd"]),
                 (names["pool_stats_before"], before["raw_pool_stats"]), (names["pool_stats_after"], after["raw_pool_stats"]),
                 (names["host_before"], json_line(before["host_sample"])), (names["host_after"], json_line(after["host_sample"])),
                 (names["threads"], None if threads is None else "%s\n" % threads)]
    return [{"name": name, "content": content} for name, content in files if content is not None]
