"""The canary_validation role's Slurm launch steps (plugin_utils/slurm_canary.py) on registered results (issue 29)."""
from __future__ import annotations

import base64
import json

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.plugin_utils import slurm_canary


def job_options(**changes):
    options = {"base": "/dev/shm", "tag": "base-20261202T200000-7", "nodes": ["nfs2", "nfs3"], "ranks": "2",
               "seconds": "1260.0", "python": "/usr/bin/python3", "reservation": "", "partition": "",
               "overcommit": True, "extra": []}
    options.update(changes)
    return options


def slurped(text):
    return {"content": base64.b64encode(text.encode()).decode(), "encoding": "base64"}


def test_the_job_of_a_run():
    found = slurm_canary.slurm_canary_job(job_options())
    assert found["dir"] == "/dev/shm/ckptio-slurm-base-20261202T200000-7"
    assert found["barrier_dir"] == found["dir"] + "/barrier"
    assert found["name"] == "ckptio-canary-base-20261202T200000-7"
    assert found["files"]["result"] == found["dir"] + "/result.json"
    assert "--ntasks=4" in found["sbatch"] and "--time=21" in found["sbatch"] and "--overcommit" in found["sbatch"]


def test_a_refused_job_names_the_launcher():
    with pytest.raises(AnsibleFilterError, match="canary_validation_launcher=slurm: .*set by the role"):
        slurm_canary.slurm_canary_job(job_options(extra=["--time=5"]))


def test_the_job_id_and_a_failed_submit():
    assert slurm_canary.slurm_job_id({"rc": 0, "stdout": "42\n"})["id"] == "42"
    # Not raised: a run_once task's failure fails only the host it ran on, and every node must remove its directory.
    failed = slurm_canary.slurm_job_id({"rc": 1, "stdout": "", "stderr": "sbatch: error: Batch job submission failed: "
                                        "Requested node configuration is not available\n"})
    assert failed["id"] is None
    assert failed["error"] == ("sbatch did not submit the canary's job: sbatch: error: Batch job submission failed: "
                               "Requested node configuration is not available")


def test_state_and_cancel_from_registered_squeue():
    job = slurm_canary.slurm_job_id({"rc": 0, "stdout": "42\n"})
    running = slurm_canary.slurm_job_state({"rc": 0, "stdout": "42|RUNNING|None|nfs[2-3]\n"}, job)
    assert running["live"] and slurm_canary.slurm_cancel(job, running, "t") == ["scancel", "42"]
    gone = slurm_canary.slurm_job_state({"rc": 0, "stdout": ""}, job)
    assert not gone["live"] and slurm_canary.slurm_cancel(job, gone, "t") == []


def test_a_nodes_result_from_its_slurped_files():
    module_result = {"ranks": [{"rank": 0}], "dstate_text": "", "cleaned_up": True}
    job = {"id": "42"}
    assert slurm_canary.slurm_canary_result(slurped(json.dumps(module_result)), {"failed": True}, "nfs2", job) == module_result
    missing = slurm_canary.slurm_canary_result({"failed": True, "msg": "file not found"}, slurped("signal 15: stopping\n"),
                                               "nfs3", job)
    assert missing["failed"] and missing["msg"] == "the canary's Slurm job 42 left no result on node nfs3: signal 15: stopping"


def test_the_runners_arguments():
    run = slurm_canary.slurm_canary_job(job_options())
    args = slurm_canary.slurm_canary_args({"path": "/mnt/nfs", "ranks": 2}, run, 2, 300)["ANSIBLE_MODULE_ARGS"]
    assert args["first_rank"] == 2 and args["barrier_dir"] == run["barrier_dir"] and args["_ckptio_collect_seconds"] == 300.0
    assert args["_ansible_remote_tmp"] == run["dir"] + "/tmp"
