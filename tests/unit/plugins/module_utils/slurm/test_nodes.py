"""module_utils/slurm/nodes.py: scontrol's node lines and squeue's job ids, read once (issue 29).

The fixtures under tests/fixtures/slurm/ are verbatim output of Debian's Slurm in the lab
(scripts/lab-slurm.sh, CKPTIO_LAB_SLURM=1; tests/fixtures/slurm/NOTES.txt says how each was made).
"""
from __future__ import annotations

import os

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.slurm import nodes

FIXTURES = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures", "slurm"))
OURS = "ckptio.nfs client_tuning remounts the checkpoint mounts"


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def only(text):
    found = nodes.parse_show_node(text)
    assert len(found) == 1, found
    return found[0]


def test_an_idle_node_is_known_not_drained_and_settled():
    node = only(fixture("show-node-idle.txt"))
    assert (node.name, node.state, node.flags, node.reason) == ("nfs2", "IDLE", (), "")
    view = nodes.node_view(node, OURS)
    assert view["known"] and not view["drain"] and not view["busy"] and view["settled"] and not view["ours"]


def test_a_node_draining_under_a_running_job_is_busy_and_ours():
    node = only(fixture("show-node-draining.txt"))
    assert node.state in ("ALLOCATED", "MIXED") and "DRAIN" in node.flags
    assert node.reason == OURS and node.reason_by == "root"
    view = nodes.node_view(node, OURS)
    assert view["drain"] and view["busy"] and not view["drained"] and not view["settled"] and view["ours"]


def test_a_drained_node_with_no_job_is_drained():
    view = nodes.node_view(only(fixture("show-node-drained.txt")), OURS)
    assert view["drained"] and view["settled"] and view["ours"], view


def operators_drain():
    """The real drained line, its reason replaced by an operator's holding `key=value` text."""
    return fixture("show-node-drained.txt").replace("Reason=" + OURS, "Reason=hw check ticket=42")


def test_an_operators_drain_is_not_ours_even_when_its_reason_holds_key_value_text():
    view = nodes.node_view(only(operators_drain()), OURS)
    assert view["drain"] and not view["ours"]
    assert view["reason"] == "hw check ticket=42"


def test_the_os_field_with_spaces_does_not_spill_into_other_fields():
    node = only(fixture("show-node-idle.txt"))
    assert nodes._pairs(fixture("show-node-idle.txt").strip())["NodeAddr"] == "10.0.0.2"
    assert node.state_text == "IDLE"


def test_a_reason_without_slurms_suffix_ends_at_the_next_pair():
    node = only("NodeName=gpu01 State=DOWN+DRAIN Reason=Not responding Comment=(null)\n")
    assert node.reason == "Not responding" and node.drain and not node.busy


def test_completing_counts_as_a_job_on_the_node():
    node = only("NodeName=gpu01 State=IDLE+COMPLETING+DRAIN Reason=x [root@2026-12-02T10:00:00]\n")
    assert node.busy and not nodes.node_view(node, "x")["drained"]


def test_a_node_among_many_is_found_by_its_name():
    text = "NodeName=gpu01 State=IDLE\nNodeName=gpu02 State=MIXED\n"
    assert nodes.find_node(text, "gpu02").state == "MIXED"
    assert nodes.find_node(text, "gpu03") is None
    assert nodes.find_node("", "gpu01") is None


def test_job_ids_one_a_line():
    assert nodes.parse_job_ids(fixture("squeue-running.txt")) != []
    assert nodes.parse_job_ids("  4711\n12_3\n\n") == ["4711", "12_3"]
    assert nodes.parse_job_ids("") == []


@pytest.mark.parametrize("text, jobs, ready, why", [
    ("NodeName=n State=IDLE+DRAIN Reason=x [root@t]", [], True, "drained (IDLE+DRAIN), no job on it"),
    ("NodeName=n State=IDLE+DRAIN Reason=x [root@t]", ["7"], False, "still runs job(s) 7"),
    ("NodeName=n State=MIXED+DRAIN Reason=x [root@t]", [], False, "is still draining (MIXED+DRAIN): a job runs on it"),
    ("NodeName=n State=IDLE", [], False, "is no longer drained (IDLE): a job may start on it"),
])
def test_ready_to_unmount_only_when_drained_with_no_job(text, jobs, ready, why):
    assert nodes.ready_to_unmount(nodes.node_view(only(text), "x"), jobs) == (ready, why)


def test_an_unknown_node_is_never_ready():
    assert nodes.ready_to_unmount(nodes.unknown_view("n", "scontrol lists no node n"), []) == (
        False, "Slurm does not know the node: scontrol lists no node n")


@pytest.mark.parametrize("reason", [
    OURS + " [bob@2026-12-02T14:00:00] bad DIMM, do not resume",
    OURS + " [bob@x]",
    OURS + " and a bad DIMM",
    "bad DIMM: " + OURS,
    OURS + "!",
    OURS + " Comment=x",
])
def test_an_operators_reason_that_quotes_ours_is_not_ours(reason):
    line = fixture("show-node-drained.txt").replace("Reason=" + OURS + " [root@", "Reason=" + reason + " [alice@")
    node = only(line)
    assert node.reason == reason and node.reason_by == "alice"
    assert not nodes.node_view(node, OURS)["ours"]


def test_an_unsigned_reason_is_never_ours():
    node = only("NodeName=gpu01 State=IDLE+DRAIN Reason=%s\n" % OURS)
    assert node.reason == OURS and not nodes.node_view(node, OURS)["ours"]
