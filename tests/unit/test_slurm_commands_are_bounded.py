"""Every task that runs a Slurm command has a bound (issue 45, hangs): an squeue or scontrol that does not answer
hangs the play, with the node drained by us, unless the task has `timeout:` (ansible-core ends the attempt).

Walks every task file of roles/ and playbooks/ (blocks, rescues and always too) and finds each command-like task
whose arguments name a Slurm command (literally, or through the canary's argv facts)."""
from __future__ import annotations

import glob
import json
import os

import pytest
import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
SLURM_WORDS = ("squeue", "scontrol", "sinfo", "sbatch", "srun", "scancel", "__slurm_job.squeue", "__slurm.sbatch",
               "__slurm_cancel")
COMMAND_ACTIONS = ("ansible.builtin.command", "ansible.builtin.shell", "ansible.builtin.raw", "command", "shell", "raw")


def _tasks(items):
    for task in items or []:
        if not isinstance(task, dict):
            continue
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks(task.get(key))


def _task_files():
    files = glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "**", "*.yml"), recursive=True)
    files += glob.glob(os.path.join(ROOT, "playbooks", "**", "*.yml"), recursive=True)
    return sorted(files)


def slurm_command_tasks():
    found = []
    for path in _task_files():
        with open(path) as handle:
            document = yaml.safe_load(handle)
        plays = document if isinstance(document, list) else []
        roots = [play.get(key) for play in plays if isinstance(play, dict) and "hosts" in play
                 for key in ("tasks", "pre_tasks", "post_tasks", "handlers")] or [plays]
        for root in roots:
            for task in _tasks(root):
                action = next((key for key in COMMAND_ACTIONS if key in task), None)
                if action and any(word in json.dumps(task[action]) for word in SLURM_WORDS):
                    found.append((os.path.relpath(path, ROOT), task))
    return found


def test_the_walk_finds_the_slurm_commands():
    names = [(path, task.get("name")) for path, task in slurm_command_tasks()]
    paths = set(path for path, _name in names)
    assert {"roles/client_tuning/tasks/slurm_drain.yml", "roles/client_tuning/tasks/slurm_resume.yml",
            "roles/canary_validation/tasks/slurm_launch.yml", "roles/canary_validation/tasks/slurm_collect.yml",
            "roles/canary_validation/tasks/slurm_cancel.yml"} <= paths, names
    assert len(names) >= 12, names


@pytest.mark.parametrize("path, task", slurm_command_tasks(), ids=lambda value: value if isinstance(value, str) else value.get("name"))
def test_every_slurm_command_task_has_a_bounded_timeout(path, task):
    assert "timeout" in task, "%s: %r runs a Slurm command with no timeout" % (path, task.get("name"))
    bound = task["timeout"]
    assert isinstance(bound, str) and "{{" in bound or isinstance(bound, int) and 0 < bound <= 600, (path, bound)
