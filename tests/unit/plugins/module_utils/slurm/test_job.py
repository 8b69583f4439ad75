"""module_utils/slurm/job.py: the canary's Slurm job - its argv, its state, what to cancel, its result (issue 29)."""
from __future__ import annotations

import json
import os
import re
import shlex

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.slurm import job


def options(**changes):
    base = {"nodes": ["nfs2", "nfs3"], "ranks": 4, "dir": "/dev/shm/ckptio-slurm-run-1", "tag": "run-1",
            "seconds": 1500, "python": "/usr/bin/python3"}
    base.update(changes)
    return base


def wrapped(argv):
    """The srun argv inside sbatch's --wrap (one `exec srun ...` line)."""
    [wrap] = [item for item in argv if item.startswith("--wrap=")]
    words = shlex.split(wrap[len("--wrap="):])
    assert words[0] == "exec"
    return words[1:]


def test_sbatch_allocates_every_node_with_the_ranks_per_host_as_tasks():
    argv = job.sbatch_argv(options())
    assert argv[:2] == ["sbatch", "--parsable"]
    assert "--nodelist=nfs2,nfs3" in argv and "--nodes=2" in argv and "--ntasks-per-node=4" in argv
    assert "--job-name=ckptio-canary-run-1" in argv
    assert "--time=25" in argv  # 1500 s in whole minutes
    assert "--chdir=/dev/shm/ckptio-slurm-run-1" in argv
    assert "--output=/dev/shm/ckptio-slurm-run-1/batch.log" in argv and "--no-requeue" in argv
    assert not any(item.startswith(("--reservation", "--partition", "--overcommit")) for item in argv)


def test_srun_starts_one_runner_per_node_with_the_nodes_cpus():
    step = wrapped(job.sbatch_argv(options()))
    assert step[0] == "srun"
    # Given on the line: the batch's SLURM_NTASKS (nodes x ranks) would be taken otherwise.
    assert "--ntasks=2" in step and "--nodes=2" in step and "--ntasks-per-node=1" in step
    assert "--cpus-per-task=4" in step
    assert not any(item.startswith(("--output", "--error")) for item in step)
    assert step[-3:] == ["/usr/bin/python3", "/dev/shm/ckptio-slurm-run-1/canary.pyz", "/dev/shm/ckptio-slurm-run-1/args.json"]


def test_a_reservation_a_partition_overcommit_and_extra_options():
    argv = job.sbatch_argv(options(reservation="ckpt-maint", partition="gpu", overcommit=True, extra=["--account=ml"]))
    assert "--reservation=ckpt-maint" in argv and "--partition=gpu" in argv and "--overcommit" in argv
    assert "--account=ml" in argv
    # Slurm 22.05 refuses --ntasks-per-node above the node's CPUs even with --overcommit (the lab):
    # the same tasks as a total.
    assert "--ntasks=8" in argv and not any(item.startswith("--ntasks-per-node") for item in argv)
    # With --overcommit the allocation holds one CPU set per node: the step asks for no more.
    assert not any(item.startswith("--cpus-per-task") for item in wrapped(argv))


def test_paths_with_spaces_stay_one_argument_in_the_wrapped_step():
    argv = job.sbatch_argv(options(python="/opt/my python/bin/python3"))
    assert wrapped(argv)[-3] == "/opt/my python/bin/python3"


@pytest.mark.parametrize("changes, message", [
    ({"nodes": []}, "no Slurm node"),
    ({"nodes": ["nfs2", "nfs2"]}, "distinct"),
    ({"nodes": ["nfs[2-3]"]}, "plain names"),
    ({"ranks": 0}, "at least 1"),
    ({"seconds": 0}, "positive"),
    ({"extra": ["--wrap=rm -rf /"]}, "set by the role"),
    ({"extra": ["--nodelist=x"]}, "set by the role"),
    ({"extra": ["account=ml"]}, "not an option"),
])
def test_refused_options_are_named(changes, message):
    with pytest.raises(job.JobError, match=message):
        job.sbatch_argv(options(**changes))


def test_the_job_directory_is_one_path_under_the_base():
    assert job.job_dir("/dev/shm", "base-20261202T200000-17") == "/dev/shm/ckptio-slurm-base-20261202T200000-17"
    with pytest.raises(job.JobError):
        job.job_dir("/dev/shm", "../etc")
    with pytest.raises(job.JobError):
        job.job_dir("dev/shm", "x")


def test_the_job_id_sbatch_parsable_printed():
    assert job.parse_job_id("17\n") == "17"
    assert job.parse_job_id("18;ckptio-lab\n") == "18"
    assert job.parse_job_id("sbatch: error: Batch job submission failed\n") is None
    assert job.submitted("17") == {"id": "17", "squeue": ["squeue", "--noheader", "--jobs=17", "--format=%i|%T|%r|%N"]}


@pytest.mark.parametrize("stdout, live, state", [
    ("17|PENDING|Resources|\n", True, "PENDING"),
    ("17|RUNNING|None|nfs[2-3]\n", True, "RUNNING"),
    ("17|COMPLETING|None|nfs2\n", True, "COMPLETING"),
    ("17|COMPLETED|None|nfs[2-3]\n", False, "COMPLETED"),
    ("17|CANCELLED|None|nfs[2-3]\n", False, "CANCELLED"),
    ("17|TIMEOUT|None|nfs2\n", False, "TIMEOUT"),
    ("", False, "GONE"),
])
def test_the_jobs_state_from_squeue(stdout, live, state):
    view = job.job_state("17", 0, stdout)
    assert (view["live"], view["state"]) == (live, state)


FIXTURES = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures", "slurm"))


def test_a_job_slurmctld_forgot_is_gone_and_a_failed_squeue_is_never_taken_for_gone():
    with open(os.path.join(FIXTURES, "squeue-job-unknown.txt")) as handle:  # verbatim, the lab's Slurm 22.05
        gone = job.job_state("17", 1, "", handle.read())
    assert gone["live"] is False and gone["state"] == "GONE"
    down = job.job_state("17", 1, "", "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n")
    assert down["live"] is True and "Unable to contact" in down["error"]


def test_what_to_cancel():
    assert job.cancel_argv("17", {"live": True}, "run-1") == ["scancel", "17"]
    assert job.cancel_argv("17", {"live": False}, "run-1") == []
    # sbatch's answer lost (the play died between submit and read): the job's unique name.
    assert job.cancel_argv(None, {}, "run-1") == ["scancel", "--name=ckptio-canary-run-1"]


def test_a_nodes_result_is_the_modules_json_and_a_missing_one_a_failure_naming_the_job():
    module_result = {"changed": True, "ranks": [{"rank": 0}], "summary": {"seconds": 1.0}, "dstate_text": ""}
    assert job.node_result("nfs2", "17", json.dumps(module_result) + "\n") == module_result
    # ansible-core's warnings may precede the JSON line.
    assert job.node_result("nfs2", "17", "a warning\n" + json.dumps(module_result)) == module_result
    missing = job.node_result("nfs3", "17", "", "canary pid 812 on nfs3\nsignal 15: stopping the canary\n")
    assert missing["failed"] is True
    assert "job 17" in missing["msg"] and "nfs3" in missing["msg"] and "signal 15" in missing["msg"]


def test_the_runners_arguments_are_the_roles_options_with_this_hosts_barrier_and_first_rank():
    document = job.runner_args({"path": "/mnt/nfs", "ranks": "4", "shape": "__omit_place_holder__abc", "barrier_dir": "/x"},
                               "/dev/shm/ckptio-slurm-t/barrier", 8, "/dev/shm/ckptio-slurm-t/tmp", 300)
    args = document["ANSIBLE_MODULE_ARGS"]
    assert args["path"] == "/mnt/nfs" and args["ranks"] == "4" and "shape" not in args
    assert args["barrier_dir"] == "/dev/shm/ckptio-slurm-t/barrier" and args["first_rank"] == 8
    assert args["_ansible_check_mode"] is False and args["_ansible_remote_tmp"] == "/dev/shm/ckptio-slurm-t/tmp"
    assert args["_ckptio_collect_seconds"] == 300.0
    with pytest.raises(job.JobError):
        job.runner_args({}, "/b", 0, "/t", 1)


@pytest.mark.parametrize("item, named", [
    ("-wgpu99", "-w (--nodelist)"), ("--nodel=gpu99", "--nodelist"), ("-t600", "-t (--time)"), ("-o/etc/motd", "-o (--output)"),
    ("-D/", "-D (--chdir)"), ("-vJx", "-J (--job-name)"), ("-Ogpu", "-O (--overcommit)"), ("--part=big", "--partition"),
    ("--no-req", "--no-requeue"), ("--wr=id", "--wrap"), ("--res=x", "--reservation"), ("--ntasks-per=4", "--ntasks-per-node"),
    ("--n=3", "--nodelist or --nodes or --ntasks-per-node or --ntasks or --no-requeue"), ("-e/tmp/x", "-e (--error)"),
])
def test_an_extra_option_the_role_sets_is_refused_in_any_spelling_sbatch_takes(item, named):
    with pytest.raises(job.JobError, match=r"^canary_validation_slurm_options: %s sets %s, an option set by the role itself$"
                       % (re.escape(repr(item)), re.escape(named))):
        job.sbatch_argv(options(extra=[item]))


@pytest.mark.parametrize("item, message", [
    ("--", "ends sbatch's options"), ("--account", "give its value after '='"), ("-A", "give its value attached"),
    ("-Z", "no sbatch option this role knows"), ("gpu99", "not an option"), ("-", "not an option"),
])
def test_an_extra_option_sbatch_would_read_otherwise_is_refused(item, message):
    with pytest.raises(job.JobError, match=re.escape(message)):
        job.sbatch_argv(options(extra=[item]))


@pytest.mark.parametrize("item", ["--account=ml", "-Aml", "--acc=ml", "-vv", "--exclusive", "--qos=high", "-x/gpu07", "--contig",
                                  "--exclusive=user", "-k", "--comment=-wgpu99 -t600"])
def test_other_extra_options_pass_as_they_are(item):
    argv = job.sbatch_argv(options(extra=[item]))
    assert item in argv and argv[-1].startswith("--wrap=")
