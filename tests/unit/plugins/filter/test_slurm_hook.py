"""The Slurm drain hook's decisions (roles/client_tuning/tasks/slurm_drain.yml), made in Python:
the node's states as sinfo lists them, the bounded wait for its jobs, and why the wait failed."""
from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.filter.internal import FilterModule

INTERNAL = FilterModule().filters()["internal"]


@pytest.mark.parametrize("lines, states, drained, still_drained", [
    (["idle"], ["idle"], False, False),
    (["mix ", "  alloc"], ["mix", "alloc"], False, False),
    # an operator's drain, in any of sinfo's spellings, on any of the node's partitions
    (["drng"], ["drng"], True, False),
    (["idle", "drain*"], ["idle", "drain*"], True, False),
    (["drain", "drain"], ["drain"], True, True),
    # after the wait: still drained only when every line says drain (drng: jobs run again)
    (["drain", "drng"], ["drain", "drng"], True, False),
    ([], [], False, True),
])
def test_slurm_states_reads_sinfo_lines(lines, states, drained, still_drained):
    assert INTERNAL(lines, "slurm_states") == {"states": states, "drained": drained, "still_drained": still_drained}


@pytest.mark.parametrize("wait, poll, plan", [
    (600, 10, {"retries": 60, "delay": 10}),
    (605, 10, {"retries": 61, "delay": 10}),
    ("30", "0", {"retries": 30, "delay": 1}),
    (0, 10, {"retries": 1, "delay": 10}),
])
def test_slurm_wait_bounds_the_polls(wait, poll, plan):
    assert INTERNAL(wait, "slurm_wait", poll) == plan


def test_slurm_wait_refuses_what_is_no_number_naming_the_option():
    with pytest.raises(AnsibleFilterError, match="client_tuning_slurm_poll_seconds"):
        INTERNAL(600, "slurm_wait", "often")
    with pytest.raises(AnsibleFilterError, match="client_tuning_slurm_wait_seconds"):
        INTERNAL(None, "slurm_wait", 10)


@pytest.mark.parametrize("jobs, busy", [
    ({"rc": 0, "stdout_lines": [" 101", "102 "], "stderr": ""}, "still runs job(s) 101, 102"),
    ({"rc": 1, "stdout_lines": [], "stderr": " slurm_load_jobs error: Unable to contact slurm controller \n"},
     "could not be read: squeue: slurm_load_jobs error: Unable to contact slurm controller"),
    ({"rc": 2, "msg": "[Errno 2] No such file or directory: b'squeue'"},
     "could not be read: squeue: [Errno 2] No such file or directory: b'squeue'"),
    ({"failed": True}, "could not be read: squeue: "),
])
def test_slurm_busy_says_why_the_wait_failed(jobs, busy):
    assert INTERNAL(jobs, "slurm_busy") == busy
