# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One client's row of the run: what diagnosis/run.py keeps of a client's files (its mount view or why it is
excluded, its canary ranks, its host evidence), worked out from the files (client_row) in one place, which
the reader and the writer of a client's figures (diagnosis/host_figures.py) share.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import paths as nfs_paths
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.client_evidence import client_evidence
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle_values import BundleError
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.dstate import parse_dstate, summarize_dstate
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.stats_delta import mountstats_delta


def client_row(host, files, mount_point, mount_points=None, checkpoint_seconds=None):
    """(view, excluded, kept canary block, ClientEvidence) of one client's files (bundle_reader's {key: text or
    parsed JSON}): view or excluded is None (_client_view), the evidence None for an excluded client, the canary
    block None without a canary.json; BundleError when its mountstats cannot be used at all."""
    view, excluded = _client_view(host, files, mount_point, mount_points)
    canary = _kept_canary(files["canary"]) if isinstance(files.get("canary"), dict) else None
    return view, excluded, canary, client_evidence(host, files, checkpoint_seconds) if excluded is None else None


# The sunrpc.txt settings the diagnosis reads (client.py, mount_state.py, advice.py; diagnosis.json's clients):
# a client keeps these, not the ~26 lines of the file (each client's row is pickled back from a reader and
# written in figures.json).
SUNRPC_SETTINGS = ("tcp_slot_table_entries", "tcp_max_slot_table_entries", "udp_slot_table_entries", "max_session_slots")


def _sunrpc_settings(text):
    """sunrpc.txt 'name value' lines of SUNRPC_SETTINGS; the first value wins (the live sysctl comes first)."""
    settings = {}
    for line in (text or "").splitlines():
        words = line.split()
        if len(words) < 2 or words[0].startswith("#"):
            continue
        settings.setdefault(words[0], words[1])
    return dict((name, settings[name]) for name in SUNRPC_SETTINGS if name in settings)


# The per-op figures the diagnosis reads of a client's delta (op totals in run.py, the layers, diagnosis.json's
# clients and mounts): the rates and per-op sizes stats_delta adds are read by no one after the delta, and
# dropping them halves what a client's row holds (pickled back from a reader, written in figures.json).
OP_FIGURES = ("ops", "retrans", "timeouts", "errors", "bytes_sent", "avg_rtt_ms", "avg_exe_ms", "avg_queue_ms")


def _kept_delta(delta):
    """delta with each op's OP_FIGURES only."""
    ops = dict((name, dict((field, op[field]) for field in OP_FIGURES if field in op) if op else op)
               for name, op in delta["ops"].items())
    return dict(delta, ops=ops)


def _client_view(host, files, mount_point, mount_points=None):
    """(view, None) for the host's mount on mount_point, or (None, excluded) when its capture is
    not usable (stats_delta decides: truncated, reset or new_mount). mount_points (the canary's several
    paths): every one's delta is read, the view's delta is their merge (diagnosis/paths.py), `paths` each."""
    for name in ("mountstats_before", "mountstats_after"):
        if not files.get(name):
            raise BundleError("clients/%s/%s.txt is missing or empty" % (host, name))
    path_deltas = []
    for point in (mount_points if mount_points and len(mount_points) > 1 else [mount_point]):
        # The text itself, not its lines: a last line cut without its newline stays visible.
        deltas = mountstats_delta(files["mountstats_after"], files["mountstats_before"], mount_points=[point] if point else None)
        if not deltas:
            raise BundleError("clients/%s: no NFS mount on %s in mountstats_after.txt" % (host, point))
        # The kernel lists mounts in mount order: with several blocks on the path (the same export
        # mounted twice), the last is the mount on top, the one the checkpoint path resolves to.
        delta = deltas[-1]
        if not delta["usable"]:
            return None, {"host": host, "mount_point": delta["mount_point"], "device": delta["device"],
                          "problems": delta["problems"], "problem_details": delta["problem_details"]}
        path_deltas.append(delta)
    dstate = summarize_dstate(parse_dstate(files.get("dstate"))) if files.get("dstate") else None
    view = {"host": host, "delta": _kept_delta(nfs_paths.merge_deltas(path_deltas)), "sunrpc": _sunrpc_settings(files.get("sunrpc")),
            "dstate": dstate}
    if len(path_deltas) > 1:
        view["paths"] = [{"mount_point": delta["mount_point"], "delta": delta} for delta in path_deltas]
    return view, None


def _kept_canary(block):
    """What the run keeps of canary.json: the ranks and the clock (pace, report), the harness's CPU."""
    return {"ranks": block.get("ranks") or [], "clock": block.get("clock"), "harness": block.get("harness")}
