# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The capture bundle's files, and the one reader that loads a bundle directory.

docs/capture-bundle.md describes every file. The reader turns a directory into the in-memory
shape diagnosis.diagnose() takes; diagnose_bundle and checkpoint_report both use it, so a file
added here is seen by both. Files are read through atomic_file.read_optional (a missing or
unreadable optional file is absent); JSON files are parsed here, and one that does not parse is
listed in bundle["problems"] instead of stopping the diagnosis.
"""

from __future__ import annotations

import json
import os

from ansible_collections.ckptio.nfs.plugins.module_utils.host import atomic_file

try:
    import yaml
    HAS_YAML = True
except ImportError:
    HAS_YAML = False

# key in the in-memory bundle -> file name in clients/<host>/ or servers/<host>/
CLIENT_FILES = {
    "mountstats_before": "mountstats_before.txt", "mountstats_after": "mountstats_after.txt",
    "dstate": "dstate.txt", "sunrpc": "sunrpc.txt",
    # host samples (CPU, disks, links) around the window, and the canary's own result with its
    # samples at the first rank's start and the last rank's end
    "host_before": "host_before.json", "host_after": "host_after.json",
    "canary": "canary.json", "probe": "probe.json",
}
SERVER_FILES = {
    "nfsd_before": "nfsd_before.txt", "nfsd_after": "nfsd_after.txt",
    "pool_stats_before": "pool_stats_before.txt", "pool_stats_after": "pool_stats_after.txt",
    "threads": "threads.txt", "host_before": "host_before.json", "host_after": "host_after.json",
    # sampled by the clients' play when the ranks start (start_at) and after the last one ended
    "host_start": "host_start.json", "host_end": "host_end.json",
}
JSON_SUFFIX = ".json"


class BundleError(ValueError):
    """The bundle misses something the diagnosis needs; the message names it."""


def _hosts(directory):
    try:
        return sorted(name for name in os.listdir(directory) if os.path.isdir(os.path.join(directory, name)))
    except OSError:
        return []


def _read_host(directory, names, where, problems):
    files = {}
    for key, name in names.items():
        text = atomic_file.read_optional(os.path.join(directory, name))
        if text is None:
            continue
        if name.endswith(JSON_SUFFIX):
            try:
                files[key] = json.loads(text)
            except ValueError as exc:
                problems.append("%s/%s is not valid JSON (%s): not used" % (where, name, exc))
            continue
        files[key] = text
    return files


def load_bundle(directory):
    """{"context", "clients": {HOST: {key: text or parsed JSON}}, "servers": {...}, "problems": [...]}."""
    context_text = atomic_file.read_optional(os.path.join(directory, "context.yml"))
    if context_text is None:
        raise BundleError("%s/context.yml is missing" % directory)
    if not HAS_YAML:
        raise BundleError("PyYAML is needed to read %s/context.yml" % directory)
    try:
        context = yaml.safe_load(context_text) or {}
    except yaml.YAMLError as exc:
        raise BundleError("%s/context.yml is not valid YAML: %s" % (directory, exc))
    problems = []
    bundle = {"context": context, "clients": {}, "servers": {}, "problems": problems}
    for kind, names in (("clients", CLIENT_FILES), ("servers", SERVER_FILES)):
        for host in _hosts(os.path.join(directory, kind)):
            bundle[kind][host] = _read_host(os.path.join(directory, kind, host), names, "%s/%s" % (kind, host), problems)
    return bundle


def canary_ranks(bundle):
    """Every client's canary ranks, each tagged with its host."""
    ranks = []
    for host, files in sorted(bundle["clients"].items()):
        canary = files.get("canary")
        if isinstance(canary, dict):
            ranks.extend(dict(rank, host=host) for rank in canary.get("ranks") or [])
    return ranks
