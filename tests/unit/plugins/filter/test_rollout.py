"""The playbooks' summaries: audit_summary, rollout_summary and rollout_budget, called directly.

hostvars is a plain dict here: the filters only read facts by name from it.
"""
from __future__ import annotations

import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.plugin_utils import rollout
from ansible_collections.ckptio.nfs.plugins.plugin_utils.rollout import STEPS

FILTERS = STEPS
FILTER_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "plugin_utils")
FINISHED = "20250101T000000Z"


def setting(name, wanted, persisted, live, in_sync, scope="nfsd"):
    return {"scope": scope, "name": name, "wanted": wanted, "persisted": persisted, "live": live, "in_sync": in_sync}


# One row of each kind, as the modules return them.
ROW_IN_SYNC = setting("threads", 64, 64, 64, True)
ROW_DRIFT = setting("threads", 64, 16, 16, False)
# sunrpc not loaded on a client: nothing live, the persisted value applies when it loads.
ROW_NOT_LOADED = setting("tcp_max_slot_table_entries", 128, 128, None, False, scope="sunrpc")
ROW_NOT_LOADED_DRIFT = setting("tcp_max_slot_table_entries", 128, 65536, None, False, scope="sunrpc")
# nfs_mount with a busy mount: fstab has the option, the live mount waits for a remount.
ROW_PENDING = setting("nconnect", 8, 8, 1, False, scope="mount /mnt/checkpoints")


@pytest.mark.parametrize("row, status, in_sync", [
    (ROW_IN_SYNC, "in_sync", True), (ROW_DRIFT, "drift", False), (ROW_NOT_LOADED, "applies_when_loaded", True),
    (ROW_NOT_LOADED_DRIFT, "drift", False), (ROW_PENDING, "pending", False),
    # The module's in_sync is trusted (nfs_mount state=present compares fstab only).
    (setting("nconnect", 8, 8, 1, True), "in_sync", True),
])
def test_one_decision_per_row(row, status, in_sync):
    assert rollout.row_status(row) == status
    assert [(item["status"], item["in_sync"]) for item in rollout.audit_rows([row])] == [(status, in_sync)]


def report(*rows, **extra):
    return dict({"profile": "checkpoint", "settings": list(rows), "pending": [], "warnings": [], "exports": []}, **extra)


def host(name, report_value=None, failure=None):
    return {"name": name, "report": report_value, "failure": failure}


def test_audit_counts_drift_once_and_json_in_sync_matches_it():
    summary = rollout.summarise_audit([
        {"role": "server", "hosts": [host("nfs1", report(ROW_DRIFT))]},
        {"role": "client", "hosts": [host("gpu01", report(ROW_IN_SYNC, ROW_NOT_LOADED)),
                                     host("gpu02", report(ROW_PENDING, ROW_NOT_LOADED_DRIFT))]},
    ], FINISHED)
    assert summary["drift_rows"] == 3
    assert summary["drifting_hosts"] == ["nfs1", "gpu02"]
    assert summary["unaudited_hosts"] == [] and summary["audited_hosts"] == ["nfs1", "gpu01", "gpu02"]
    # The bug of issue 15: a row not loaded but persisted as wanted was in_sync false in the JSON.
    assert [row["in_sync"] for row in summary["hosts"]["gpu01"]["rows"]] == [True, True]
    for entry in summary["hosts"].values():
        for row in entry["rows"]:
            assert row["in_sync"] is (row["status"] in ("in_sync", "applies_when_loaded"))
    assert summary["failure"] is None


def test_audit_console_lines_show_no_python_none():
    summary = rollout.summarise_audit([{"role": "client", "hosts": [
        host("gpu01", report(ROW_NOT_LOADED_DRIFT, ROW_PENDING, setting("src", "nfs1:/ckpt", None, None, False, "mount /mnt"))),
        host("gpu02", report(ROW_NOT_LOADED))]}], FINISHED)
    assert summary["lines"] == [
        "gpu01 (client) DRIFT sunrpc tcp_max_slot_table_entries: wanted=128 persisted=65536 live=n/a",
        "gpu01 (client) DRIFT mount /mnt/checkpoints nconnect: wanted=8 persisted=8 live=1 (persisted, not live yet)",
        "gpu01 (client) DRIFT mount /mnt src: wanted=nfs1:/ckpt persisted=n/a live=n/a",
        "gpu02 (client): in sync (1 settings)",
    ]
    assert not any("None" in line for line in summary["lines"])


def test_audit_entries_keep_the_report_parts():
    exports = [{"file": "/etc/exports", "path": "/srv", "client": "*", "options": [], "notes": ["sync"]}]
    summary = rollout.summarise_audit([{"role": "server", "hosts": [
        host("nfs1", report(ROW_IN_SYNC, pending=["restart"], warnings=["w"], exports=exports))]}], FINISHED, check_mode=True)
    assert summary["hosts"]["nfs1"] == {
        "role": "server", "profile": "checkpoint", "pending": ["restart"], "warnings": ["w"], "exports": exports,
        "rows": [{"scope": "nfsd", "setting": "threads", "wanted": 64, "persisted": 64, "live": 64, "in_sync": True,
                  "status": "in_sync"}]}
    assert summary["check_mode"] is True and summary["finished"] == FINISHED
    assert summary["lines"] == ["nfs1 (server): in sync (1 settings)"]


def test_hosts_not_audited():
    failure = {"stage": "connect", "task": "Check that the host answers", "msg": "unreachable: no route to host"}
    summary = rollout.summarise_audit([{"role": "client", "hosts": [
        host("gpu01", report(ROW_IN_SYNC)), host("gpu02", None, failure), host("gpu03"),
        # A failure recorded in this run wins over a report left from an earlier play.
        host("gpu04", report(ROW_IN_SYNC), {"stage": "tune", "task": "Apply", "msg": "boom"})]}], FINISHED)
    assert summary["unaudited_hosts"] == ["gpu02", "gpu03", "gpu04"]
    assert summary["hosts"]["gpu02"] == {"role": "client", "error": "Check that the host answers: unreachable: no route to host",
                                         "rows": [], "pending": []}
    assert summary["lines"][1:] == [
        "gpu02 (client): NOT AUDITED - Check that the host answers: unreachable: no route to host",
        "gpu03 (client): NOT AUDITED - not run: no result (not in this run?)",
        "gpu04 (client): NOT AUDITED - Apply: boom"]
    # Some host was audited: the audit passes unless drift should fail it.
    assert summary["failure"] is None
    assert rollout.summarise_audit([{"role": "client", "hosts": [host("gpu01", report(ROW_IN_SYNC)), host("gpu02")]}],
                                   FINISHED, fail_on_drift=True)["failure"] == \
        "drift in 0 setting(s) on 0 host(s) (); 1 host(s) not audited (gpu02)"


def test_an_audit_that_audited_nothing_fails():
    failure = {"stage": "connect", "task": "Check that the host answers", "msg": "unreachable"}
    summary = rollout.summarise_audit([{"role": "client", "hosts": [host("gpu01", None, failure), host("gpu02", None, failure)]},
                                       {"role": "server", "hosts": [host("nfs1", None, failure)]}], FINISHED)
    assert summary["failure"] == ("nothing was audited: none of the 3 targeted host(s) answered and ran the audit "
                                  "(gpu01, gpu02, nfs1)")


def test_an_audit_with_no_targeted_host_passes():
    # -e ckptio_clients=nobody: nothing to audit is not an audit that failed (test_safety_check_mode_controller).
    assert rollout.summarise_audit([{"role": "client", "hosts": []}], FINISHED, fail_on_drift=True)["failure"] is None


def test_drift_fails_only_when_asked():
    groups = [{"role": "server", "hosts": [host("nfs1", report(ROW_DRIFT))]}]
    assert rollout.summarise_audit(groups, FINISHED)["failure"] is None
    assert rollout.summarise_audit(groups, FINISHED, fail_on_drift=True)["failure"] == \
        "drift in 1 setting(s) on 1 host(s) (nfs1); 0 host(s) not audited ()"


AUDIT = FILTERS["audit_summary"]
GROUPS = [{"role": "client", "report_var": "client_tuning_report", "hosts": ["gpu01", "gpu02", "gpu03"]},
          {"role": "server", "report_var": "server_tuning_report", "hosts": ["nfs1"]}]


def test_hosts_outside_the_limit_are_not_listed():
    # --limit gpu01,nfs1,localhost: the audit plays never ran on gpu02 and gpu03.
    hostvars = {"gpu01": {"ckptio_audit_targeted": True, "client_tuning_report": report(ROW_IN_SYNC)},
                "gpu02": {"client_tuning_report": report(ROW_DRIFT)},
                "gpu03": {},
                "nfs1": {"ckptio_audit_targeted": True, "server_tuning_report": report(ROW_DRIFT)}}
    summary = AUDIT(GROUPS, hostvars, finished=FINISHED)
    assert sorted(summary["hosts"]) == ["gpu01", "nfs1"]
    assert summary["unaudited_hosts"] == [] and summary["drifting_hosts"] == ["nfs1"]
    assert [line for line in summary["lines"] if "NOT AUDITED" in line] == []


def test_limit_to_unreachable_hosts_fails_naming_only_them():
    failure = {"stage": "connect", "task": "Check that the host answers", "msg": "unreachable"}
    hostvars = {"gpu01": {"ckptio_audit_targeted": True, "ckptio_failure": failure},
                "gpu02": {}, "gpu03": {}, "nfs1": {"server_tuning_report": report(ROW_IN_SYNC)}}
    summary = AUDIT(GROUPS, hostvars, finished=FINISHED)
    assert summary["unaudited_hosts"] == ["gpu01"]
    assert summary["failure"].startswith("nothing was audited: none of the 1 targeted host(s)")


def rack(count, drift_every=0):
    """count clients gpuNNN in sync, every drift_every-th with the threads drift, gpu000 unreachable."""
    failure = {"stage": "connect", "task": "Check that the host answers", "msg": "unreachable"}
    hosts = [host("gpu000", None, failure)]
    for index in range(1, count):
        drifting = drift_every and index % drift_every == 0
        hosts.append(host("gpu%03d" % index, report(ROW_DRIFT if drifting else ROW_IN_SYNC, ROW_NOT_LOADED)))
    hosts.append(host("gpu999", report(ROW_PENDING)))
    return [{"role": "client", "hosts": hosts}]


def test_audit_groups_hosts_by_drift_from_64_hosts_and_keeps_every_row():
    assert rollout.AUDIT_GROUPED_HOSTS == 64
    assert rollout.summarise_audit(rack(62, drift_every=10), FINISHED)["by_drift"]["grouped"] is False
    summary = rollout.summarise_audit(rack(63, drift_every=10), FINISHED)
    view = summary["by_drift"]
    assert view["grouped"] is True and len(summary["hosts"]) == 64
    # The same drift is one group, the largest first; a host in sync is only counted.
    assert [(group["hosts"], group["rows"]) for group in view["drift"]] == [
        (["gpu010", "gpu020", "gpu030", "gpu040", "gpu050", "gpu060"],
         [{"scope": "nfsd", "setting": "threads", "wanted": 64, "persisted": 16, "live": 16, "status": "drift"}]),
        (["gpu999"], [{"scope": "mount /mnt/checkpoints", "setting": "nconnect", "wanted": 8, "persisted": 8, "live": 1,
                       "status": "pending"}])]
    assert view["in_sync"] == [{"role": "client", "hosts": 56}]
    assert view["not_audited"] == [{"role": "client", "task": "Check that the host answers", "msg": "unreachable",
                                    "hosts": ["gpu000"]}]
    # The JSON's per-host rows are untouched by the grouping.
    assert len(summary["hosts"]["gpu001"]["rows"]) == 2 and summary["drift_rows"] == 7


def unreachable(index):
    """What rollout-host.yml records for a client whose ssh is refused: its own address in the message."""
    return {"stage": "connect", "task": "Check that the host answers",
            "msg": "unreachable: ssh: connect to host 10.0.0.%d port 22: Connection refused" % index}


def test_hosts_not_audited_for_the_same_reason_are_one_group_whatever_address_the_message_names():
    # 64 clients unreachable, each message naming its own address (issue 23: 64 groups of one).
    hosts = [dict(host("gpu%03d" % index, None, unreachable(index)), address="10.0.0.%d" % index) for index in range(64)]
    hosts.append(host("gpu064", None, {"stage": "tune", "task": "Apply", "msg": "gpu064: boom"}))
    hosts.append(host("gpu065"))
    summary = rollout.summarise_audit([{"role": "client", "hosts": hosts},
                                       {"role": "server", "hosts": [host("nfs1", None, unreachable(200))]}], FINISHED)
    assert summary["by_drift"]["grouped"] is True
    assert summary["by_drift"]["not_audited"] == [
        {"role": "client", "task": "Check that the host answers",
         "msg": "unreachable: ssh: connect to host <host> port 22: Connection refused",
         "hosts": ["gpu%03d" % index for index in range(64)]},
        {"role": "client", "task": "Apply", "msg": "<host>: boom", "hosts": ["gpu064"]},
        {"role": "client", "task": "not run", "msg": "no result (not in this run?)", "hosts": ["gpu065"]},
        # Without its address the server's message stays as it is.
        {"role": "server", "task": "Check that the host answers",
         "msg": "unreachable: ssh: connect to host 10.0.0.200 port 22: Connection refused", "hosts": ["nfs1"]}]
    # Every host keeps its own message in the JSON.
    assert summary["hosts"]["gpu007"]["error"] == ("Check that the host answers: unreachable: ssh: connect to host 10.0.0.7 "
                                                   "port 22: Connection refused")


def test_audit_filter_passes_each_hosts_address_for_the_grouping():
    hostvars = dict(("gpu%02d" % index, {"ckptio_audit_targeted": True, "ansible_host": "10.0.0.%d" % index,
                                         "ckptio_failure": unreachable(index)}) for index in (1, 2))
    hostvars["nfs1"] = {"ckptio_audit_targeted": True, "server_tuning_report": report(ROW_IN_SYNC)}
    summary = AUDIT(GROUPS, hostvars, finished=FINISHED)
    assert [(group["hosts"], group["msg"]) for group in summary["by_drift"]["not_audited"]] == [
        (["gpu01", "gpu02"], "unreachable: ssh: connect to host <host> port 22: Connection refused")]


def test_audit_filter_checks_its_groups():
    with pytest.raises(AnsibleFilterError, match="role, hosts and report_var"):
        AUDIT([{"role": "client", "hosts": []}], {})
    with pytest.raises(AnsibleFilterError, match="list of host names"):
        AUDIT([dict(GROUPS[0], hosts="gpu01")], {})


def test_audit_filter_stamps_the_time_when_not_given():
    assert len(AUDIT([], {})["finished"]) == len(FINISHED)


# -- rollout summary -----------------------------------------------------------------------------
SUMMARY = FILTERS["rollout_summary"]


def test_rollout_summary_statuses_and_lines():
    tuned = {"changed": ["nfsd threads: 64 (live 8 -> 64)"], "pending": ["nfs-server restart would set threads to 64 (live: 8)"],
             "warnings": ["w"], "check_mode": False}
    hostvars = {
        "nfs1": {"server_tuning_report": tuned, "ckptio_reached": True},
        "nfs2": {"server_tuning_report": {"changed": [], "pending": [], "warnings": [], "check_mode": True}, "ckptio_reached": True},
        "nfs3": {"ckptio_failure": {"stage": "connect", "task": "Check that the host answers", "msg": "unreachable: refused"},
                 "ckptio_reached": False},
        "nfs4": {"ckptio_failure": {"stage": "tune", "task": "Set nfsd threads", "msg": "threads: bad"}, "ckptio_reached": True},
        "nfs5": {"ckptio_reached": True},
        "nfs6": {},
    }
    summary = SUMMARY(sorted(hostvars), hostvars, "server_tuning_report", "tune-servers", finished=FINISHED)
    assert [summary["hosts"][name]["status"] for name in sorted(hostvars)] == [
        "changed", "ok", "unreachable", "failed", "unreachable", "not_attempted"]
    assert summary["problems"] == 4
    assert summary["playbook"] == "tune-servers" and summary["finished"] == FINISHED
    assert summary["hosts"]["nfs1"] == {"status": "changed", "why": "", "changed": tuned["changed"], "pending": tuned["pending"],
                                        "warnings": ["w"], "check_mode": False}
    assert summary["hosts"]["nfs6"]["changed"] == [] and summary["hosts"]["nfs2"]["check_mode"] is True
    assert summary["lines"] == [
        "nfs1: CHANGED | changed: nfsd threads: 64 (live 8 -> 64) | pending: nfs-server restart would set threads to 64 (live: 8)",
        "nfs2: OK",
        "nfs3: UNREACHABLE - Check that the host answers: unreachable: refused",
        "nfs4: FAILED - Set nfsd threads: threads: bad",
        "nfs5: UNREACHABLE - lost during the run (it answered, then stopped answering: crash, reboot or network); its changes "
        "may be partly applied - run the playbook again once it is back",
        "nfs6: NOT_ATTEMPTED - not reached: an earlier batch exceeded the failure budget",
    ]


def test_rollout_summary_leaves_a_host_outside_the_limit_out_of_the_problems():
    # ckptio_play_hosts is ansible_play_hosts_all (every batch, after --limit): nfs6 never had a turn
    # because an earlier batch failed, nfs7 was not in the run at all.
    run = ["nfs1", "nfs6"]
    hostvars = {"nfs1": {"ckptio_failure": {"stage": "tune", "task": "t", "msg": "m"}, "ckptio_reached": True,
                         "ckptio_play_hosts": run}, "nfs6": {}, "nfs7": {}}
    summary = SUMMARY(sorted(hostvars), hostvars, "server_tuning_report", "tune-servers", finished=FINISHED)
    assert sorted(summary["hosts"]) == ["nfs1", "nfs6"] and summary["hosts"]["nfs6"]["status"] == "not_attempted"
    assert summary["problems"] == 2 and summary["outside_run"] == ["nfs7"]
    assert summary["lines"][-1] == "Not in this run (--limit): nfs7"


def test_rollout_summary_needs_a_host_list():
    with pytest.raises(AnsibleFilterError, match="list of host names"):
        SUMMARY("nfs1", {}, "server_tuning_report", "tune-servers")


# -- failure budget ------------------------------------------------------------------------------
BUDGET = FILTERS["rollout_budget"]
FAILED = {"ckptio_failure": {"stage": "tune", "task": "t", "msg": "m"}}


@pytest.mark.parametrize("hostvars, play_batch, percentage, failures, stop", [
    ({}, ["a", "b", "c", "d"], 0, 0, False),
    ({"a": FAILED}, ["a", "b", "c", "d"], 0, 1, True),
    ({"a": FAILED}, ["a", "b", "c", "d"], 25, 1, False),
    ({"a": FAILED}, ["a", "b", "c", "d"], "25", 1, False),
    # Lost in the middle of the role: gone from ansible_play_batch without a failure.
    ({"a": FAILED}, ["a", "c", "d"], 25, 2, True),
    ({"a": FAILED}, ["a", "c", "d"], 50, 2, False),
    # Failed and then lost counts once.
    ({"a": FAILED}, ["b", "c", "d"], 25, 1, False),
    # Not a number: as Jinja's float filter read it, 0 (stop after any failure).
    ({"a": FAILED}, ["a", "b", "c", "d"], "ten", 1, True),
])
def test_budget(hostvars, play_batch, percentage, failures, stop):
    result = BUDGET(["a", "b", "c", "d"], hostvars, play_batch, percentage)
    assert (result["failures"], result["hosts"], result["stop"]) == (failures, 4, stop)
    assert result["msg"] == ("%d of 4 hosts of this batch failed, more than ckptio_max_fail_percentage=%s %%: later batches "
                             "are left untouched." % (failures, percentage))


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_each_filter_documented_under_its_name(name):
    with open(os.path.join(FILTER_DIR, "%s.yml" % name)) as handle:
        documentation = yaml.safe_load(handle)["DOCUMENTATION"]
    assert documentation["name"] == name
    code = FILTERS[name].__code__
    assert set(documentation["options"]) - {"_input"} == set(code.co_varnames[1:code.co_argcount])
