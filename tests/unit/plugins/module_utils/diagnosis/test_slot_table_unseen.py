"""Issue 47's done-when: "A bundle without these files (older versions, kernels without sysfs) diagnoses as before and says
what was not seen" - a 5.10-like bundle (no sunrpc sysfs: debugfs task lists only) and one with none of the files."""
from __future__ import annotations

import json
import os

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.markdown import render_markdown
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.diagnosis import slot_bundles

# bullseye's (5.10) task lists under the lab's 2-slot baseline (tests/fixtures/kernels/bullseye/sunrpc/load).
BULLSEYE_TASKS = slot_bundles.sample_path("..", "kernels", "bullseye", "sunrpc", "load", "rpc_tasks.txt")
# What host/sunrpc_sampler.py notes on a kernel without sunrpc sysfs.
NO_SYSFS = "sunrpc_xprt: unmeasured: no /sys/kernel/sunrpc/xprt-switches (the kernel predates sunrpc sysfs, 5.14)"


def _slot_rows(result):
    """The rows the slot table's files add (slot_table._add_evidence) and the client slots' own."""
    return [row for row in result["evidence"] if row["layer"] == "client_rpc_slots"
            or any(word in row["signal"] for word in ("not seen", "slot", "table full", "rpc_stats_latency"))]


def _other_rows(result):
    return [row for row in result["evidence"] if row not in _slot_rows(result)]


def _bullseye_like(tmp_path):
    with open(BULLSEYE_TASKS) as handle:
        path = slot_bundles.bundle(tmp_path, {"rpc_tasks.txt": handle.read()}, "small_files")
    for client in ("nfs2", "nfs3"):
        canary_path = os.path.join(path, "clients", client, "canary.json")
        with open(canary_path) as handle:
            canary = json.load(handle)
        canary["rpc_sampling"] = {"mode": "queues", "notes": [NO_SYSFS], "cost": {"passes": 6}}
        with open(canary_path, "w") as handle:
            json.dump(canary, handle)
    return path


def test_a_bundle_with_none_of_the_files_diagnoses_from_mountstats_and_says_the_slot_table_was_not_seen():
    result = diagnose(load_bundle(slot_bundles.sample_path("..", "captures", "small_files")))
    assert "slot_table" not in result and "slot_table_text" not in result["headline"]
    unseen = [row for row in result["evidence"] if row["signal"].startswith("slot table not seen")]
    assert [(row["signal"], row["crossed"], row["layer"]) for row in unseen] == [
        ("slot table not seen (sunrpc_xprt.txt, rpc_tasks.txt, rpc_latency.txt)", False, None)]
    assert unseen[0]["explanation"].startswith("no client's bundle part holds them (a canary before 0.6.0, rpc_sampling=off")
    assert unseen[0]["explanation"].endswith("were not seen; client slots are judged from mountstats alone")
    assert "| slot table not seen (sunrpc_xprt.txt, rpc_tasks.txt, rpc_latency.txt) |" in render_markdown(result)
    # The slots are judged from mountstats as before: its rows are there, nothing else about the table.
    assert [row["signal"] for row in result["evidence"] if row["layer"] == "client_rpc_slots"][:2] == [
        "WRITE avg queue / avg RTT", "transport backlog per send (bklog_u/sends, all transports)"]


def test_a_5_10_like_bundle_uses_its_task_lists_and_says_why_xprt_info_and_the_trace_were_not_seen(tmp_path):
    base = diagnose(load_bundle(slot_bundles.sample_path("..", "captures", "small_files")))
    result = diagnose(load_bundle(_bullseye_like(tmp_path)))
    table = result["slot_table"]
    assert table["not_seen"] == [
        {"file": "rpc_latency.txt", "why": "no rpc_latency.txt in the bundle (rpc_sampling=queues)", "hosts": ["nfs2", "nfs3"], "count": 2},
        {"file": "sunrpc_xprt.txt", "why": "no sunrpc_xprt.txt in the bundle (the canary's sampler: unmeasured: no "
                                           "/sys/kernel/sunrpc/xprt-switches (the kernel predates sunrpc sysfs, 5.14))",
         "hosts": ["nfs2", "nfs3"], "count": 2}]
    # The task lists alone still show the session: slots held and RPCs waiting for one.
    assert table["session_waits"] and all(host["kind"] == "session" and host["max_waiters"] for host in table["hosts"])
    assert all(host["cap_source"] == "nfs max_session_slots (requested)" for host in table["hosts"])
    markdown = render_markdown(result)
    assert "sunrpc_xprt.txt not seen on 2 hosts (nfs2, nfs3)" in markdown and "predates sunrpc sysfs, 5.14" in markdown
    # Everything not about the slots is diagnosed as it was without the files.
    assert _other_rows(result) == _other_rows(base) and result["network"] == base["network"] and result["cpu"] == base["cpu"]
