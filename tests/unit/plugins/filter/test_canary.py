"""The canary_validation filters, as the role's tasks call them, on the lab captures the role wrote."""
from __future__ import annotations

import copy
import glob
import os
import re
import time

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.filter.internal import STEPS as CHECKED
from ansible_collections.ckptio.nfs.plugins.plugin_utils import canary_steps
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.report import report
from ansible_collections.ckptio.nfs.plugins.module_utils.host import bundle_reader
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import diagnose as diagnosis
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path

# Each step as ckptio.nfs.internal calls it: checked against its argument spec first.
FILTERS = CHECKED
ROLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "canary_validation")
CAPTURES = ("healthy", "one_thread", "seed_like_v41", "shaped_link", "slow_storage")


def capture(name):
    return bundle_reader.load_bundle(sample_path("..", "captures", name))


def client_results(loaded):
    """What the role holds for each client (the module's result), in its client order."""
    return [loaded["clients"][host]["canary"] for host in sorted(loaded["clients"])]


def test_all_steps_exposed():
    assert sorted(canary_steps.STEPS) == ["bundle_files", "canary_barrier", "canary_context", "canary_failures", "canary_host_go",
                                          "canary_probe_errors", "canary_server_samples", "canary_waits"]


@pytest.mark.parametrize("name", CAPTURES)
def test_context_is_what_the_role_wrote_for_the_lab_captures(name):
    loaded = capture(name)
    context = loaded["context"]
    results = client_results(loaded)
    built = FILTERS["canary_context"](results, mount_point=context["mount_point"], label=context["label"],
                                      layout=context["canary"]["layout"], target_window_seconds=context["target"]["window_seconds"],
                                      target_checkpoint_bytes=0, network={}, start_at=results[0]["start_at"])
    # The fixtures were written when 0 meant "the canary's own bytes"; 0 is now "not given" (CONTRACT 2).
    assert built == _without_target_bytes(context) and list(built) == ["mount_point", "label", "target", "canary"]
    assert list(built["canary"]) == ["layout", "ranks", "clients", "bytes", "seconds", "start_at"]


def _without_target_bytes(context):
    return dict(context, target=dict(context["target"], checkpoint_bytes=None))


@pytest.mark.parametrize("name", CAPTURES)
def test_context_report_and_diagnosis_give_one_mlperf_aggregate(name):
    loaded = capture(name)
    block = FILTERS["canary_context"](client_results(loaded), "/mnt/nfs", "x", "shared_file", 10)["canary"]
    aggregate = report.bundle_metrics(loaded["context"], None, [], bundle.canary_ranks(loaded))["canary_aggregate"]
    assert block["bytes"] == aggregate["total_bytes"]
    assert block["seconds"] == round(aggregate["latest_end"] - aggregate["earliest_start"], 3)
    assert aggregate["seconds"] == pytest.approx(block["seconds"], abs=5e-4)
    achieved = diagnosis.diagnose(loaded)["achieved_bytes_per_second"]
    assert achieved == canary.context_throughput(block) == pytest.approx(block["bytes"] / block["seconds"])


def test_context_counts_unfinished_ranks_in_bytes_not_in_time():
    ranks = [{"rank": 0, "start": 100.0, "end": 104.0, "bytes": 40, "error": None},
             {"rank": 1, "start": 101.0, "end": None, "bytes": 10, "error": "stalled: no result within timeout"},
             {"rank": 2, "start": 100.5, "end": 110.0, "bytes": 40, "error": "write failed"}]
    context = FILTERS["canary_context"]([{"ranks": ranks}, {"msg": "no ranks"}], "/mnt/nfs", "run", "file_per_rank", "300",
                                        target_checkpoint_bytes="0", network={"server_link_gbps": 100}, start_at="99.5")
    # 0 is "not given" (CONTRACT 2): null, never the canary's own 90 bytes.
    assert context["target"] == {"checkpoint_bytes": None, "window_seconds": 300.0}
    assert context["network"] == {"server_link_gbps": 100}
    assert context["canary"] == {"layout": "file_per_rank", "ranks": 3, "clients": 2, "bytes": 90, "seconds": 4.0, "start_at": 99.5}
    nobody = FILTERS["canary_context"]([], "/mnt/nfs", "run", "shared_file", 300, target_checkpoint_bytes=5, start_at=99.5)
    assert nobody["canary"] == {"layout": "shared_file", "ranks": 0, "clients": 0, "bytes": 0, "seconds": None, "start_at": None}
    assert "network" not in nobody and nobody["target"]["checkpoint_bytes"] == 5
    with pytest.raises(AnsibleFilterError, match="target_window_seconds"):
        FILTERS["canary_context"]([], "/mnt/nfs", "run", "shared_file", "soon")
    with pytest.raises(AnsibleFilterError, match="step 'canary_context': Elements value for option '_input' is of type .*str"):
        FILTERS["canary_context"](["text"], "/mnt/nfs", "run", "shared_file", 300)


def test_failures_name_each_client_without_ranks_or_with_a_failed_rank():
    good = client_results(capture("healthy"))[0]
    failed = copy.deepcopy(good)
    failed["ranks"][3]["error"] = "write failed: ENOSPC"
    failed["msg"] = "canary ranks failed: rank 3: write failed: ENOSPC"
    assert FILTERS["canary_failures"]([good, failed, {}, {"ranks": [], "msg": None}], ["a", "b", "c", "d"]) == [
        "b: canary ranks failed: rank 3: write failed: ENOSPC", "c: no result", "d: None"]
    assert FILTERS["canary_failures"]([good], ["a"]) == []
    with pytest.raises(AnsibleFilterError, match="2 results for 1 hosts"):
        FILTERS["canary_failures"]([good, good], ["a"])


def test_server_samples_keep_the_servers_whose_sample_came_back():
    start = {"results": [{"item": {"item": "s1", "ansible_job_id": "j1"}, "host_sample": {"format": 1, "time": 1.0}},
                         {"item": {"item": "s2", "ansible_job_id": "j2"}, "failed": True, "msg": "timed out"}]}
    end = {"results": [{"item": "s1", "host_sample": {"format": 1, "time": 9.0}}, {"item": "s3", "host_sample": None},
                       {"item": "s2", "skipped": True}]}
    samples = FILTERS["canary_server_samples"](start, end)
    assert samples == {"hosts": ["s1", "s3"], "samples": {"s1": {"host_start": {"format": 1, "time": 1.0},
                                                                 "host_end": {"format": 1, "time": 9.0}},
                                                          "s3": {"host_end": None}}}
    assert FILTERS["canary_server_samples"]({}, None) == {"hosts": [], "samples": {}}


def test_bundle_files_are_the_readers_table():
    clients = FILTERS["bundle_files"]("clients")
    assert clients == bundle.CLIENT_FILES and clients is not bundle.CLIENT_FILES
    assert FILTERS["bundle_files"]("servers") == bundle.SERVER_FILES
    assert clients["probe"] == "probe.json" and FILTERS["bundle_files"]("servers")["host_start"] == "host_start.json"
    with pytest.raises(AnsibleFilterError, match="clients"):
        FILTERS["bundle_files"]("controller")


def test_the_canary_and_the_probe_start_through_the_barrier_never_a_guessed_start():
    """A start guessed before the launch (start_at = now + lead) staggered the probe on a loaded
    CI host ("clients not at once", the network then unmeasured): both start on the go plan."""
    with open(os.path.join(ROLE, "meta", "argument_specs.yml")) as handle:
        specs = yaml.safe_load(handle)["argument_specs"]
    assert all("canary_validation_start_lead" not in entry["options"] for entry in specs.values())
    for name, tasks in (("clients.yml", _clients_text()), ("probe_clients.yml", None)):
        if tasks is None:
            with open(os.path.join(ROLE, "tasks", name)) as handle:
                tasks = handle.read()
        assert "import_tasks: barrier_ready.yml" in tasks and "import_tasks: barrier_signal.yml" in tasks, name
        # No module option start_at: the go plan gives the start.
        assert not re.search(r"^\s+start_at:", tasks, re.MULTILINE), name


def test_the_role_takes_bundle_file_names_from_the_table():
    names = set(bundle.CLIENT_FILES.values()) | set(bundle.SERVER_FILES.values())
    for path in glob.glob(os.path.join(ROLE, "tasks", "*.yml")):
        with open(path) as handle:
            text = handle.read()
        quoted = [name for name in names if re.search(r"""['"]%s['"]""" % re.escape(name), text)]
        assert not quoted, "%s spells bundle file names itself: %s" % (os.path.basename(path), quoted)


def test_canary_barrier_splits_ready_from_not_ready_from_the_wait_results():
    plan = FILTERS["canary_barrier"](["a", "b"], [{"state": "file"}, {"failed": True, "msg": "Timeout"}],
                                     [{"offset_seconds": 0.5}, None], launch_at=100.0, now=104.0)
    assert plan["ready"] == ["a"] and plan["not_ready"] == ["b"]
    assert plan["fanout_seconds"] == 4.0 and plan["go_at"] == 104.0 + plan["margin_seconds"]
    assert plan["go"]["a"]["go_at"] == plan["go_at"] + 0.5


def test_canary_barrier_without_now_plans_from_the_controllers_clock():
    # The filter runs on the controller: now defaults to its clock, as now().timestamp() gives it.
    before = time.time()
    plan = FILTERS["canary_barrier"](["a"], [{"state": "file"}], [None], launch_at=before - 3.0)
    assert 3.0 <= plan["fanout_seconds"] <= 3.0 + (time.time() - before)
    assert plan["go_at"] - plan["margin_seconds"] >= before


def test_canary_host_go_puts_go_on_the_hosts_clock_as_go_json_does():
    go_at = 1760000000.25
    assert FILTERS["canary_host_go"](go_at, {"offset_seconds": -3.5, "uncertainty_seconds": 0.01}) == go_at - 3.5
    # The same number a client's go.json carries for the same offset (barrier.go_document).
    plan = FILTERS["canary_barrier"](["a"], [{"state": "file"}], [{"offset_seconds": -3.5}], launch_at=100.0, now=104.0)
    assert FILTERS["canary_host_go"](plan["go_at"], {"offset_seconds": -3.5}) == plan["go"]["a"]["go_at"]
    # Unmeasured (no result, skipped, failed): the host's clock is taken as the controller's, as for a client.
    for clock in (None, {}, {"skipped": True}, {"failed": True, "offset_seconds": 9.0}):
        assert FILTERS["canary_host_go"](go_at, clock) == go_at
    with pytest.raises(AnsibleFilterError, match="step 'canary_host_go': argument '_input' is of type .*str"):
        FILTERS["canary_host_go"]("soon", None)


def test_the_servers_sample_at_go_waits_for_go_on_the_servers_own_clock():
    """The servers waited for the controller's go on their own clocks, unmeasured, so a server whose
    clock ran behind sampled 'at go' late by the whole offset (one way to the 0.5.2 rehearsal's start
    sample after its end sample). Each server's clock is measured with its before sample, as the clients' is."""
    with open(os.path.join(ROLE, "tasks", "server_stats.yml")) as handle:
        server_tasks = yaml.safe_load(handle)
    measure = [task for task in server_tasks if "ckptio.nfs.clock_offset" in task]
    assert len(measure) == 1 and measure[0]["register"] == "canary_validation__server_clock"
    assert measure[0]["when"] == "canary_validation_phase == 'before'"
    with open(os.path.join(ROLE, "tasks", "clients_run.yml")) as handle:
        run_tasks = yaml.safe_load(handle)
    start = [task for task in run_tasks if task["name"].startswith("Sample every server when the ranks start")]
    assert len(start) == 1
    assert start[0]["ckptio.nfs.nfsd_stats"]["wait_until"] == (
        "{{ canary_validation__barrier.go_at | ckptio.nfs.internal('canary_host_go', hostvars[item].canary_validation__server_clock"
        " | default(none)) }}")


def test_canary_barrier_refuses_lists_that_do_not_match():
    with pytest.raises(AnsibleFilterError):
        FILTERS["canary_barrier"](["a"], [], [None], 1.0, 2.0)


def _written_wait(document):
    """What ansible.builtin.wait_for returns for written.json with the role's search_regex."""
    import json as _json
    match = re.search(_role_written_regex(), _json.dumps(document))
    return {"state": "file", "match_groupdict": match.groupdict(), "match_groups": list(match.groups())}


# The clients' part of the role: clients.yml (the check) and the two files it includes for the run.
CLIENTS_FILES = ("clients.yml", "clients_before_launch.yml", "clients_run.yml")


def _clients_text():
    texts = []
    for name in CLIENTS_FILES:
        with open(os.path.join(ROLE, "tasks", name)) as handle:
            texts.append(handle.read())
    return "\n".join(texts)


def _role_written_regex():
    tasks = []
    for name in CLIENTS_FILES:
        with open(os.path.join(ROLE, "tasks", name)) as handle:
            tasks.extend(yaml.safe_load(handle))
    every = [task for item in tasks for task in [item] + item.get("block", [])]
    regexes = [task["vars"]["__canary_validation_barrier_ready_regex"] for task in every
               if "__canary_validation_barrier_ready_regex" in (task.get("vars") or {})]
    assert len(regexes) == 1
    return regexes[0]


def test_the_roles_written_regex_is_the_modules_marker():
    from ansible_collections.ckptio.nfs.plugins.module_utils.canary import barrier
    # read_ready, then the run id the controller echoes in read_go.json (issue 24).
    assert _role_written_regex() == barrier.WRITTEN_PATTERN


def test_read_go_plan_goes_only_to_hosts_that_wrote_with_the_write_barriers_fanout():
    from ansible_collections.ckptio.nfs.plugins.module_utils.canary import barrier
    wrote = _written_wait(barrier.written_document(10.0, 1, 2, "/w", run_id="00112233aabbccdd"))
    failed = _written_wait(barrier.written_document(10.0, 1, 2, "/w", skipped="not run: the write phase failed (ranks 1)",
                                                    run_id="0011223344556677"))
    plan = FILTERS["canary_barrier"](["a", "b", "c"], [wrote, failed, {"failed": True, "msg": "Timeout"}],
                                     [{"offset_seconds": -1.0}, None, None], launch_at=100.0, now=160.0,
                                     fanout_seconds=2.0, abort_reason="no read: writes failed or no written.json")
    assert plan["ready"] == ["a"] and plan["not_ready"] == ["b", "c"]
    # The margin is the write start's measured fan-out (writing read_go.json costs what go.json did),
    # not the 60 s the writes took.
    assert plan["fanout_seconds"] == 2.0 and plan["margin_seconds"] == 3.0 and plan["go_at"] == 163.0
    assert plan["go"]["a"]["go_at"] == 162.0
    # The host's run id, echoed: the canary obeys only its own run's read go.
    assert plan["go"]["a"]["run_id"] == "00112233aabbccdd"
    assert plan["abort"]["b"] == {"abort": "no read: writes failed or no written.json"}


def test_context_gains_a_restore_block_only_when_a_client_read_back():
    from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.canary.test_restore import _host
    results = [_host(0.0, 200.0, [0.0, 0.1]), _host(-2.0, 200.0, [0.05])]
    clocks = [{"offset_seconds": 0.0, "uncertainty_seconds": 0.01}, {"offset_seconds": -2.0, "uncertainty_seconds": 0.01}]
    context = FILTERS["canary_context"](results, "/mnt/nfs", "r", "shared_file", 300, start_at=1.0, clocks=clocks,
                                        hosts=["a", "b"], read_go_at="200.0", restore_window_seconds="60")
    assert list(context) == ["mount_point", "label", "target", "canary", "restore"]
    assert context["restore"]["bytes"] == 300 and context["restore"]["seconds"] == 2.1
    assert context["restore"]["start_spread_seconds"] == 0.1 and context["restore"]["target_window_seconds"] == 60.0
    plain = FILTERS["canary_context"](client_results(capture("clock_step")), "/mnt/nfs", "r", "shared_file", 300)
    assert "restore" not in plain


def test_the_restore_fixtures_context_is_what_the_filter_writes_from_its_canary_results():
    """restore_clock_step is hand-built (its NOTES.txt): its context.yml must stay what the role would write."""
    loaded = capture("restore_clock_step")
    context = loaded["context"]
    hosts = sorted(loaded["clients"])
    results = client_results(loaded)
    built = FILTERS["canary_context"](results, context["mount_point"], context["label"], context["canary"]["layout"],
                                      context["target"]["window_seconds"], start_at=context["canary"]["start_at"],
                                      clocks=[result["clock"] for result in results], hosts=hosts,
                                      read_go_at=results[0]["read_barrier"]["go_at"],
                                      restore_window_seconds=context["restore"]["target_window_seconds"])
    assert built == _without_target_bytes(context)
    # On the hosts' own clocks the reads start ~2 s apart (nfs3 runs 2.38 s ahead); on the controller's together.
    own = [rank["read_start"] for result in results for rank in result["ranks"]]
    assert max(own) - min(own) > 2.0 and context["restore"]["start_spread_seconds"] < 0.01


def test_server_samples_take_the_write_end_sample_when_the_restore_took_one():
    start = {"results": []}
    end = {"results": [{"item": "s1", "host_sample": {"time": 2.0}}]}
    write_end = {"results": [{"item": "s1", "host_sample": {"time": 1.0}}]}
    pick = FILTERS["canary_server_samples"]
    assert pick(start, end, write_end)["samples"] == {"s1": {"host_end": {"time": 1.0}}}
    skipped = {"results": [{"item": "s1", "skipped": True}], "skipped": True}
    assert pick(start, end, skipped)["samples"] == {"s1": {"host_end": {"time": 2.0}}}
    assert pick(start, end, None)["samples"] == {"s1": {"host_end": {"time": 2.0}}}


def test_probe_errors_name_each_failed_step_host_by_host_in_the_order_they_ran():
    groups = {"nfs_clients": ["c1", "c2", "c3"], "nfs_servers": ["s1", "c1"]}
    launched = {"canary_validation__probe_job": {"ansible_job_id": "j"}, "canary_validation__probe_target": {"server": "10.0.0.1"}}
    hostvars = {
        "c1": dict(launched, canary_validation__probe={"summary": {"error": None}, "msg": ""}),
        # a send without a summary (its module failed) and the write of probe.json that failed after it
        "c2": dict(launched, canary_validation__probe={"msg": "iperf3: connection refused"},
                   canary_validation__probe_error_collect="copy failed"),
        "c3": {"canary_validation__probe_error_targets": "no NFS mount on /mnt/c"},
        "s1": {"canary_validation__probe_error_listen": "iperf3 not found"},
    }
    assert FILTERS["canary_probe_errors"](groups, hostvars, ["nfs_clients", "nfs_servers", "absent"]) == [
        "c2: iperf3: connection refused", "c2: copy failed", "c3: no NFS mount on /mnt/c", "s1: iperf3 not found"]
    # a summary with an error is a failed send; a client that never launched has no send to judge
    hostvars["c1"]["canary_validation__probe"] = {"summary": {"error": "timed out"}}
    hostvars["c3"] = dict(canary_validation__probe={"summary": None})
    assert FILTERS["canary_probe_errors"](groups, hostvars, ["nfs_clients"]) == [
        "c1: no result", "c2: iperf3: connection refused", "c2: copy failed"]
    with pytest.raises(AnsibleFilterError, match="step 'canary_probe_errors': argument '_input' is of type .*list"):
        FILTERS["canary_probe_errors"]([], hostvars, [])


@pytest.mark.parametrize("restore, expected", [
    (False, {"read_wait": 0, "host_barrier_timeout": 720.0, "job_seconds": 720 + 1800 + 20 + 600}),
    # read_wait 900 + 20 + 30; the host's bound adds it and 1.5 x 600
    (True, {"read_wait": 950, "host_barrier_timeout": 600.0 + 120 + 950 + 900, "job_seconds": 2570 + 1800 + 20 + 600}),
])
def test_waits_are_the_roles_bounds(restore, expected):
    assert FILTERS["canary_waits"]("600", "900.7", 10, restore) == expected


def test_waits_refuse_a_non_number_naming_the_option():
    with pytest.raises(AnsibleFilterError, match="step 'canary_waits': argument 'kill_grace' is of type .*str"):
        FILTERS["canary_waits"](600, 900, "soon")
