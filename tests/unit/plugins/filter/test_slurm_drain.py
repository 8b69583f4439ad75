"""The drain hook's steps (plugin_utils/slurm_drain.py) on registered command results (issue 29)."""
from __future__ import annotations

import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.plugin_utils import slurm_drain

FIXTURES = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "slurm"))
OURS = "ckptio.nfs client_tuning remounts the checkpoint mounts"


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def result(stdout="", rc=0, stderr=""):
    return {"rc": rc, "stdout": stdout, "stderr": stderr, "changed": False}


def test_a_node_slurm_does_not_know_says_what_scontrol_said():
    # Slurm 22.05 says it on stdout, rc 1.
    view = slurm_drain.slurm_node(result(fixture("show-node-unknown.txt"), rc=1), "nfs9", OURS)
    assert not view["known"]
    assert view["error"] == "scontrol show node nfs9: Node nfs9 not found"


def test_an_empty_answer_is_an_unknown_node():
    assert slurm_drain.slurm_node(result(), "gpu01", OURS)["error"] == "scontrol lists no node gpu01"


def test_a_draining_node_is_ours_and_not_settled():
    view = slurm_drain.slurm_node(result(fixture("show-node-draining.txt")), "nfs2", OURS)
    assert view["ours"] and view["drain"] and not view["settled"]


def test_ready_needs_a_drained_node_and_an_empty_squeue():
    drained = slurm_drain.slurm_node(result(fixture("show-node-drained.txt")), "nfs2", OURS)
    assert slurm_drain.slurm_ready(drained, result(""))["ready"] is True
    busy = slurm_drain.slurm_ready(drained, result(fixture("squeue-running.txt")))
    assert busy["ready"] is False and busy["why"].startswith("still runs job(s) ")
    unread = slurm_drain.slurm_ready(drained, result(rc=1, stderr="slurm_load_jobs error: Unable to contact slurm controller"))
    assert unread == {"ready": False, "jobs": [],
                      "why": "its jobs could not be read: squeue: slurm_load_jobs error: Unable to contact slurm controller"}


@pytest.mark.parametrize("wait, poll, expected", [
    (100, 30, {"retries": 4, "delay": 30}), (61, 30, {"retries": 3, "delay": 30}), (0, 30, {"retries": 1, "delay": 30}),
    (10, 0, {"retries": 10, "delay": 1}), ("20", "5", {"retries": 4, "delay": 5}),
])
def test_poll_rounds_the_bound_up_to_whole_polls(wait, poll, expected):
    assert slurm_drain.slurm_poll(wait, poll) == dict(expected, timeout=60)


def test_poll_names_the_options_on_a_bad_value():
    with pytest.raises(AnsibleFilterError, match="client_tuning_slurm_wait_seconds, client_tuning_slurm_poll_seconds and "
                                                 "client_tuning_slurm_command_seconds must be whole seconds"):
        slurm_drain.slurm_poll("soon", 30)


@pytest.mark.parametrize("command", [0, -5])
def test_a_command_bound_below_one_second_is_refused_as_no_bound(command):
    with pytest.raises(AnsibleFilterError, match="client_tuning_slurm_command_seconds must be at least 1"):
        slurm_drain.slurm_poll(100, 30, command)
    assert slurm_drain.slurm_poll(100, 30, "45")["timeout"] == 45


def test_a_timed_out_read_is_an_unknown_node_naming_the_timeout():
    timed_out = {"failed": True, "msg": "The command action failed to execute in the expected time frame (60) and was terminated"}
    view = slurm_drain.slurm_node(timed_out, "gpu01", "ours")
    assert view["known"] is False and view["error"] == "scontrol show node gpu01: " + timed_out["msg"]


def test_a_step_refuses_what_is_not_a_command_result():
    with pytest.raises(AnsibleFilterError, match=r"internal\('slurm_node'\): expects a registered command result"):
        slurm_drain.slurm_node("NodeName=x", "x", OURS)
