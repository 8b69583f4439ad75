"""Kernel-dependent facts (module_utils/kernel_text/kernels.py) and the diagnosis text they choose."""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import kernels
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path


@pytest.mark.parametrize("release, version", [
    ("5.10.0-46-amd64", (5, 10)), ("6.1.0-41-amd64", (6, 1)), ("6.12.57+deb13-amd64", (6, 12)),
    ("5.15.0-126-generic", (5, 15)), ("6.14.0-rc1", (6, 14)), ("", None), (None, None), ("linux", None),
])
def test_kernel_version(release, version):
    assert kernels.kernel_version(release) == version


# The lab's three kernels (scripts/lab-matrix.sh) and the distributions' ones docs/kernels.md names.
@pytest.mark.parametrize("release, rule, cap", [
    ("5.10.0-46-amd64", "fixed", 160), ("5.14.0-503.el9.x86_64", "fixed", 160), ("5.15.0-126-generic", "fixed", 160),
    ("6.1.0-41-amd64", "fixed", 160), ("6.8.0-48-generic", "fixed", 160), ("6.12.57+deb13-amd64", "fixed", 160),
    ("6.13.12", "fixed", 160), ("6.14.0", "dynamic", 2048), ("6.17.8+deb13-amd64", "dynamic", 2048),
])
def test_session_slot_grant_rule_by_kernel(release, rule, cap):
    grant = kernels.session_slot_grant(release)
    assert (grant["rule"], grant["cap"], grant["kernel"]) == (rule, cap, release)
    assert release in grant["text"]
    assert ("can shrink" in grant["text"]) == (rule == "fixed")


def test_unknown_kernel_states_both_rules():
    grant = kernels.session_slot_grant(None)
    assert grant["rule"] == "unknown" and grant["cap"] is None
    assert "not in the bundle" in grant["text"] and "160" in grant["text"] and "2048" in grant["text"]


def test_server_kernel_is_the_first_sample_that_names_one():
    servers = [{"host_before": None, "host_after": {"kernel_release": ""}},
               {"host_before": {"format": 1}, "host_start": {"kernel_release": "6.12.57+deb13-amd64"}}]
    assert kernels.server_kernel(servers) == "6.12.57+deb13-amd64"
    assert kernels.server_kernel([{"host_before": None}]) is None


def _session_rows(result):
    return [item for item in result["evidence"] if item["layer"] == "client_rpc_slots" and "session slots requested" in item["signal"]]


def _v41_capture(release):
    bundle = load_bundle(sample_path("..", "captures", "seed_like_v41"))
    for files in bundle["servers"].values():
        for key in ("host_before", "host_after", "host_start", "host_end"):
            if release is None:
                files[key].pop("kernel_release", None)
            else:
                files[key]["kernel_release"] = release
    return bundle


@pytest.mark.parametrize("release, expected, shrink", [
    ("6.1.0-41-amd64", "grants a new session min(request, 160", True),
    ("6.17.8+deb13-amd64", "on demand up to min(request, 2048)", False),
    (None, "not in the bundle", True),
])
def test_diagnosis_states_the_grant_rule_of_the_server_kernel(release, expected, shrink):
    result = diagnose(_v41_capture(release))
    rows = _session_rows(result)
    assert rows and all(expected in row["explanation"] for row in rows), rows
    threads_recs = [rec for rec in result["recommendations"] if rec["layer"] == "server_threads"]
    slot_recs = [rec for rec in result["recommendations"] if rec["setting"] == "nfs max_session_slots"]
    assert all(expected in rec["reason"] for rec in slot_recs)
    assert all(("can shrink" in rec["reason"]) == shrink for rec in threads_recs)
