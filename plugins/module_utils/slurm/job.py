# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The canary as a Slurm job (roles/canary_validation, canary_validation_launcher: slurm).

One place for the job's facts: its files on each node, the `sbatch` command (argv list; the
batch script is the one `srun` line sbatch's --wrap takes, each argument quoted by shlex), the
job's state from `squeue`, what to cancel, and the node's result read back.

The design (docs/slurm.md, "The canary as a Slurm job"): the play ships a self-contained runner
(runner.py builds it: a zip of checkpoint_canary and the module_utils it imports, host/slurm_supervisor.py its main) and each
host's arguments (the options the role's check-mode call validated, with that host's
barrier_dir and first_rank) into one job directory under canary_validation_barrier_dir, the
same path on every node. sbatch allocates the nodes (--nodelist, --reservation) with
--ntasks-per-node = ranks per host; srun starts ONE runner per node, which runs the canary
exactly as over SSH: it forks the host's ranks itself (its per-host pipe barrier, shape
coordination, D-state sampler and host samples are per host, so srun does not start the ranks
one by one). Slurm's launch is the first barrier; ready.json/go.json, written over SSH as
before, still decide the start. The runner writes the module's JSON result to result.json; the
play reads it and removes the job directory; the runner then exits and the job ends.
"""

from __future__ import annotations

import json
import math
import posixpath
import re
import shlex

JOB_PREFIX = "ckptio-canary-"
DIR_PREFIX = "ckptio-slurm-"
RUNNER = "canary.pyz"
ARGS = "args.json"
RESULT = "result.json"
LOG = "runner.log"
BATCH_LOG = "batch.log"
# A job in one of these is in the queue (pending, on its way, or holding nodes); any other state
# (COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, ...) is over.
LIVE_STATES = frozenset((
    "PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "REQUEUED", "REQUEUE_HOLD",
    "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD", "SPECIAL_EXIT",
))
SQUEUE_FORMAT = "%i|%T|%r|%N"
# What sbatch options the role sets itself: extra options may not override them, in any spelling
# sbatch's getopt_long takes (a unique prefix of the long name, the short letter with its value attached).
_OWN_OPTIONS = ("--wrap", "--nodelist", "--nodes", "--ntasks-per-node", "--ntasks", "--time", "--chdir",
                "--output", "--error", "--job-name", "--parsable", "--array", "--reservation", "--partition",
                "--no-requeue", "--overcommit")
# sbatch's short options (Slurm 22.05 src/sbatch/opt.c, sbatch(1)): the letter and whether it takes a value;
# each the role sets itself maps to its long name.
_SHORT_WITH_VALUE = frozenset("AabBcCdDeFGiJLmMNnopqStwx")
_SHORT_FLAGS = frozenset("HhIkOQsuVvW")
_OWN_SHORT = {"w": "--nodelist", "N": "--nodes", "n": "--ntasks", "t": "--time", "D": "--chdir", "o": "--output",
              "e": "--error", "J": "--job-name", "a": "--array", "p": "--partition", "O": "--overcommit"}
# sbatch's long options that take no value (or an optional one, which getopt_long takes only after "="):
# any other long option must carry its value after "=", or it would take the role's next option as its value.
_LONG_FLAGS = ("--contiguous", "--exclusive", "--get-user-env", "--help", "--hold", "--ignore-pbs", "--no-kill",
               "--oversubscribe", "--quiet", "--reboot", "--requeue", "--spread-job", "--test-only", "--usage",
               "--use-min-nodes", "--verbose", "--version", "--wait")
_TAG = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_NODE = re.compile(r"^[A-Za-z0-9._-]+$")


class JobError(ValueError):
    """An option the job cannot be built from, named."""


def job_dir(base, tag):
    """The job's directory on every node (same path on all of them): BASE/ckptio-slurm-TAG."""
    if not _TAG.match(str(tag)):
        raise JobError("job tag %r: letters, digits, '.', '_' and '-' only" % (tag,))
    if not str(base).startswith("/"):
        raise JobError("canary_validation_barrier_dir %r is not absolute" % (base,))
    return posixpath.join(str(base), DIR_PREFIX + str(tag))


def job_name(tag):
    return JOB_PREFIX + str(tag)


def files(directory):
    """The job's files in its directory, by role."""
    return dict((key, posixpath.join(directory, name)) for key, name in (
        ("runner", RUNNER), ("args", ARGS), ("result", RESULT), ("log", LOG), ("batch_log", BATCH_LOG)))


def time_limit(seconds):
    """sbatch --time in whole minutes, rounded up (Slurm's resolution), at least 1."""
    seconds = float(seconds)
    if not math.isfinite(seconds) or seconds <= 0:
        raise JobError("the job's bound must be a positive number of seconds, got %r" % (seconds,))
    return str(max(1, int(-(-seconds // 60))))


def srun_argv(directory, python, nodes, ranks, overcommit=False):
    """The job step: one runner per node (it forks the host's ranks).

    --ntasks/--nodes are given on the line: inside the batch script Slurm's environment holds the
    allocation's task count (SLURM_NTASKS = nodes x ranks), which srun would take otherwise.
    Without --overcommit the runner gets the allocation's CPUs of the node (--cpus-per-task = ranks),
    with it the allocation has one CPU set per node (sbatch(1), --overcommit) and the step takes that.
    """
    paths = files(directory)
    # No --output: srun writes a plain output file on the batch node, not on each node (measured in
    # the lab); the step's output goes to the batch log, and each runner writes runner.log itself.
    argv = ["srun", "--nodes=%d" % len(nodes), "--ntasks=%d" % len(nodes), "--ntasks-per-node=1", "--kill-on-bad-exit=0"]
    if not overcommit:
        argv.append("--cpus-per-task=%d" % int(ranks))
    return argv + [str(python), paths["runner"], paths["args"]]


def _check_extra(extra):
    """extra sbatch options, each read as sbatch's getopt_long reads it; JobError names any that would set an
    option the role sets itself (`-wgpu99`, `--nodel=x`, `-t600`, `-o/etc/motd`, `-D/`) or that sbatch would
    read otherwise than as one option=value (`--`, a bare word, a value in the next item)."""
    extra = [str(item) for item in (extra or [])]
    for item in extra:
        if item.startswith("--"):
            _check_long(item)
        elif item.startswith("-") and len(item) > 1:
            _check_short(item)
        else:
            raise JobError("canary_validation_slurm_options: %r is not an option (one option=value an item)" % item)
    return extra


def _refuse_own(item, name):
    raise JobError("canary_validation_slurm_options: %r sets %s, an option set by the role itself" % (item, name))


def _check_long(item):
    name, has_value = item.split("=", 1)[0], "=" in item
    if name == "--":
        raise JobError("canary_validation_slurm_options: %r ends sbatch's options (one option=value an item)" % item)
    # getopt_long takes an exact name, else a unique prefix of one: any own option the name is a prefix of is refused
    # (an ambiguous prefix sbatch refuses anyway).
    own = [option for option in _OWN_OPTIONS if option.startswith(name)]
    if own:
        _refuse_own(item, " or ".join(own))
    flags = [flag for flag in _LONG_FLAGS if flag.startswith(name)]
    if not has_value and not flags:
        raise JobError("canary_validation_slurm_options: %r: give its value after '=' (%s=VALUE), else it takes the "
                       "role's next option as its value" % (item, name))


def _check_short(item):
    for position, letter in enumerate(item[1:], 1):
        if letter in _OWN_SHORT:
            _refuse_own(item, "-%s (%s)" % (letter, _OWN_SHORT[letter]))
        if letter in _SHORT_WITH_VALUE:
            if position == len(item) - 1:
                raise JobError("canary_validation_slurm_options: %r: give its value attached (-%sVALUE), else it takes "
                               "the role's next option as its value" % (item, letter))
            # The rest of the item is the letter's value (getopt: "-Aml" is -A ml).
            return
        if letter not in _SHORT_FLAGS:
            raise JobError("canary_validation_slurm_options: %r: -%s is no sbatch option this role knows" % (item, letter))


def sbatch_argv(options):
    """The sbatch argv of the canary's job.

    options: nodes (Slurm node names, one per client, in the play's order), ranks (per host), dir
    (job_dir), tag, seconds (the job's bound), python (on the nodes), and optionally reservation,
    partition, overcommit (bool) and extra (more sbatch options, e.g. --account=X).
    """
    nodes = [str(node) for node in options.get("nodes") or []]
    if not nodes:
        raise JobError("no Slurm node to run the canary on")
    bad = [node for node in nodes if not _NODE.match(node)]
    if bad or len(set(nodes)) != len(nodes):
        raise JobError("Slurm node names must be distinct plain names (canary_validation_slurm_node), got %s" % nodes)
    ranks = int(options.get("ranks") or 0)
    if ranks < 1:
        raise JobError("ranks per host must be at least 1, got %r" % options.get("ranks"))
    directory, overcommit = options["dir"], bool(options.get("overcommit"))
    paths = files(directory)
    # Slurm 22.05 refuses --ntasks-per-node above a node's CPUs even with --overcommit ("Requested
    # node configuration is not available", measured in the lab's 1-CPU VMs); --ntasks = nodes x
    # ranks is accepted there and holds the same tasks.
    tasks = "--ntasks=%d" % (len(nodes) * ranks) if overcommit else "--ntasks-per-node=%d" % ranks
    argv = ["sbatch", "--parsable", "--job-name=" + job_name(options["tag"]), "--nodes=%d" % len(nodes),
            "--nodelist=" + ",".join(nodes), tasks, "--time=" + time_limit(options["seconds"]),
            "--chdir=" + directory, "--output=" + paths["batch_log"], "--error=" + paths["batch_log"], "--no-requeue"]
    if options.get("reservation"):
        argv.append("--reservation=" + str(options["reservation"]))
    if options.get("partition"):
        argv.append("--partition=" + str(options["partition"]))
    if overcommit:
        argv.append("--overcommit")
    argv.extend(_check_extra(options.get("extra")))
    step = srun_argv(directory, options.get("python") or "/usr/bin/python3", nodes, ranks, overcommit)
    argv.append("--wrap=exec " + " ".join(shlex.quote(item) for item in step))
    return argv


def parse_job_id(text):
    """The job id `sbatch --parsable` printed (`ID` or `ID;cluster`), or None."""
    for line in (text or "").splitlines():
        head = line.strip().split(";", 1)[0]
        if head.isdigit():
            return head
    return None


def squeue_argv(job_id):
    return ["squeue", "--noheader", "--jobs=" + str(job_id), "--format=" + SQUEUE_FORMAT]


def job_state(job_id, rc, stdout, stderr=""):
    """{job_id, live, state, reason, nodes, error} from `squeue --jobs ID --format %i|%T|%r|%N`.

    A job squeue no longer knows ("Invalid job id specified", rc 1, once slurmctld forgot it) is
    over; a squeue that failed otherwise (slurmctld unreachable) is an error, counted as live: a job
    is never called gone on no evidence.
    """
    view = {"job_id": str(job_id), "live": False, "state": "", "reason": "", "nodes": "", "error": ""}
    if rc not in (0, None):
        said = (stderr or stdout or "").strip()
        if "invalid job id" in said.lower():
            view["state"] = "GONE"
            return view
        view.update(live=True, state="UNKNOWN", error="squeue: %s" % (said or "rc %s" % rc))
        return view
    for line in (stdout or "").splitlines():
        parts = line.strip().split("|")
        if len(parts) >= 2 and parts[0].split("_", 1)[0] == str(job_id):
            state = parts[1].strip().upper().split()[0] if parts[1].strip() else "UNKNOWN"
            view.update(state=state, live=state in LIVE_STATES,
                        reason=parts[2].strip() if len(parts) > 2 else "", nodes=parts[3].strip() if len(parts) > 3 else "")
            return view
    view["state"] = "GONE"
    return view


def cancel_argv(job_id, state, tag):
    """What to cancel: the job by id while it is in the queue; by name when sbatch's id was lost; else nothing."""
    if job_id:
        return ["scancel", str(job_id)] if state.get("live") else []
    return ["scancel", "--name=" + job_name(tag)]


def submitted(job_id):
    """{id, squeue}: the submitted job and the squeue argv that reads its state."""
    return {"id": str(job_id), "squeue": squeue_argv(job_id)}


def node_result(node, job_id, result_text, log_text=""):
    """The canary's result on one node (the module's JSON, as async_status returns it over SSH).

    No result (the job was cancelled, the runner or the canary died) is a failed result naming the
    node, the job and the runner's last log lines, so the bundle and the play's failure say why.
    """
    text = (result_text or "").strip()
    if text:
        for line in reversed(text.splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    result = json.loads(line)
                except ValueError:
                    continue
                if isinstance(result, dict):
                    return result
    tail = " | ".join(line.strip() for line in (log_text or "").strip().splitlines()[-5:] if line.strip())
    return {"failed": True, "msg": "the canary's Slurm job %s left no result on node %s%s" % (
        job_id or "(not submitted)", node, (": " + tail) if tail else "")}


OMIT_PREFIX = "__omit_place_holder__"


def runner_args(options, barrier_dir, first_rank, remote_tmp, collect_seconds, run_seconds=None):
    """args.json of one node: the canary's options as the role passes them to checkpoint_canary
    (an omitted one left out: ansible-core before 2.19 leaves omit's placeholder in a fact's dict),
    this host's barrier_dir and first_rank, no check mode, Ansible's temp files in the job
    directory, how long the runner keeps the result for the play, and run_seconds, the job's bound,
    past which the runner stops the canary itself (no wait of the runner is unbounded). The
    runner's AnsibleModule validates them as the module over ssh does."""
    if not isinstance(options, dict) or "path" not in options:
        raise JobError("the canary's options (canary_validation__canary_options) are missing")
    args = dict((key, value) for key, value in options.items()
                if not (isinstance(value, str) and value.startswith(OMIT_PREFIX)))
    args.update(barrier_dir=str(barrier_dir), first_rank=int(first_rank))
    args.update(_ansible_check_mode=False, _ansible_diff=False, _ansible_remote_tmp=str(remote_tmp),
                _ansible_keep_remote_files=False, _ckptio_collect_seconds=float(collect_seconds))
    if run_seconds is not None:
        run_seconds = float(run_seconds)
        if not math.isfinite(run_seconds) or run_seconds <= 0:
            raise JobError("the job's bound must be a positive number of seconds, got %r" % (run_seconds,))
        args["_ckptio_run_seconds"] = run_seconds
    return {"ANSIBLE_MODULE_ARGS": args}
