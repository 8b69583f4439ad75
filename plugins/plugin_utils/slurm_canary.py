# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The canary as a Slurm job (roles/canary_validation/tasks/slurm_launch.yml, slurm_collect.yml).

Called by name through ckptio.nfs.internal; documented in the YAML file of each step's name. The
argv, the job's state and the result are built and read in module_utils/slurm/job.py: these only
take the role's values and registered command results apart.
"""

from __future__ import annotations

import base64
import binascii

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.module_utils.slurm import job


def _mapping(value, step, what):
    if not isinstance(value, Mapping):
        raise AnsibleFilterError("ckptio.nfs.internal('%s'): expects %s, got %s" % (step, what, type(value).__name__))
    return value


def slurm_canary_job(options):
    """{tag, name, dir, barrier_dir, files, sbatch, seconds}: the job of one canary run (seconds: its bound)."""
    options = dict(_mapping(options, "slurm_canary_job", "the job's options"))
    try:
        directory = job.job_dir(options.get("base"), options.get("tag"))
        options["dir"] = directory
        argv = job.sbatch_argv(options)
    except (job.JobError, KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("canary_validation_launcher=slurm: %s" % exc)
    return {"tag": options["tag"], "name": job.job_name(options["tag"]), "dir": directory,
            "barrier_dir": directory + "/barrier", "files": job.files(directory), "sbatch": argv,
            "seconds": float(options["seconds"])}


def slurm_canary_args(options, run, first_rank, collect_seconds):
    """args.json of one node, from the options the role passes to checkpoint_canary and the run's job (slurm_canary_job)."""
    options = _mapping(options, "slurm_canary_args", "the canary's options")
    run = _mapping(run, "slurm_canary_args", "the job (slurm_canary_job)")
    try:
        return job.runner_args(dict(options), run["barrier_dir"], first_rank, run["dir"] + "/tmp", collect_seconds,
                               run.get("seconds"))
    except (job.JobError, KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("canary_validation_launcher=slurm: %s" % exc)


def slurm_job_id(sbatch):
    """{id, squeue, error}: the job a registered `sbatch --parsable` submitted; without one, id null and
    error naming what sbatch said (the role then fails every node, each removing its job directory:
    a filter that raised in a run_once task failed only the host it ran on, measured in the lab)."""
    sbatch = _mapping(sbatch, "slurm_job_id", "a registered command result")
    found = job.parse_job_id(sbatch.get("stdout", "")) if sbatch.get("rc", 0) == 0 else None
    if found is None:
        said = (sbatch.get("stderr") or sbatch.get("stdout") or sbatch.get("msg") or "").strip()
        return {"id": None, "squeue": [], "error": "sbatch did not submit the canary's job: %s" % (said or "rc %s" % sbatch.get("rc"))}
    return dict(job.submitted(found), error="")


def _job_id(submitted):
    return submitted.get("id") if isinstance(submitted, Mapping) else submitted


def slurm_job_state(squeue, submitted):
    """{job_id, live, state, reason, nodes, error} from a registered `squeue --jobs ID` result."""
    squeue = _mapping(squeue, "slurm_job_state", "a registered command result")
    if squeue.get("failed") and "rc" not in squeue:
        # An squeue that did not answer (the task's timeout, with ignore_errors): no evidence the job is gone.
        return job.job_state(_job_id(submitted), -1, "", squeue.get("msg") or "squeue did not answer")
    return job.job_state(_job_id(submitted), squeue.get("rc", 0), squeue.get("stdout", ""), squeue.get("stderr", ""))


def slurm_cancel(submitted, state, tag):
    """The scancel argv ([] for nothing to cancel)."""
    return job.cancel_argv(_job_id(submitted), _mapping(state or {}, "slurm_cancel", "the job's state"), tag)


def _slurped(value):
    if not isinstance(value, Mapping) or not value.get("content"):
        return ""
    try:
        return base64.b64decode(value["content"]).decode("utf-8", "replace")
    except (binascii.Error, TypeError, ValueError):
        return ""


def slurm_canary_result(result, log, node, submitted):
    """The canary's result on one node from the slurped result.json and runner.log (missing: a failed result)."""
    return job.node_result(node, _job_id(submitted), _slurped(result), _slurped(log))


STEPS = {
    "slurm_canary_job": slurm_canary_job,
    "slurm_canary_args": slurm_canary_args,
    "slurm_job_id": slurm_job_id,
    "slurm_job_state": slurm_job_state,
    "slurm_cancel": slurm_cancel,
    "slurm_canary_result": slurm_canary_result,
}
