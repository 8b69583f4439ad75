"""inventories/example is safe for a cluster in production (issue 15): without a drain hook the
role never unmounts a checkpoint mount (a training node holds no file on it between two
checkpoints, so when_idle would remount it in the middle of a job); a drain hook turns on when_idle."""
from __future__ import annotations

import json
import os
import subprocess

import pytest
import yaml

from ansible_collections.ckptio.nfs.tests.unit.test_playbook_summaries import ANSIBLE_PLAYBOOK, COLLECTION
from ansible_collections.ckptio.nfs.tests.unit.test_safety_states_fstab import collection_root

ANSIBLE = os.path.join(os.path.dirname(ANSIBLE_PLAYBOOK), "ansible")


def policy(tmp_path, extra=None):
    """client_tuning_apply_policy of gpu01 as the example inventory sets it (debug never connects)."""
    if not os.path.exists(ANSIBLE):
        pytest.skip("ansible is not next to this python")
    environment = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collection_root(), ANSIBLE_NOCOLOR="1",
                       ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_HOME=str(tmp_path / "home"))
    argv = [ANSIBLE, "-i", os.path.join(COLLECTION, "inventories", "example"), "gpu01", "-m", "ansible.builtin.debug",
            "-a", "var=client_tuning_apply_policy"]
    if extra:
        argv += ["-e", json.dumps(extra)]
    done = subprocess.run(argv, env=environment, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    # The ad-hoc output: gpu01 | SUCCESS => {"client_tuning_apply_policy": ...}
    return json.loads(done.stdout.split("=>", 1)[1])["client_tuning_apply_policy"]


def test_example_never_unmounts_without_a_drain_hook_and_applies_when_idle_with_one(tmp_path):
    assert policy(tmp_path) == "never"
    assert policy(tmp_path, {"client_tuning_drain_command": ["scontrol", "update", "nodename=gpu01", "state=drain"]}) == "when_idle"
    assert policy(tmp_path, {"client_tuning_drain_tasks": "/etc/ckptio/drain.yml"}) == "when_idle"


def test_the_commented_slurm_hook_is_correct_once_uncommented(tmp_path):
    """Uncommenting the example's Slurm lines names the role's drain/wait and resume files and
    turns on when_idle; the drain example is no bare `scontrol ... state=drain` command (it
    would return while jobs still run)."""
    path = os.path.join(COLLECTION, "inventories", "example", "group_vars", "nfs_clients.yml")
    with open(path) as handle:
        text = handle.read()
    commented = [line[len("#   "):] for line in text.splitlines() if line.startswith("#   client_tuning_")]
    hook = yaml.safe_load("\n".join(commented))
    assert hook == {"client_tuning_drain_tasks": "tasks/slurm_drain.yml", "client_tuning_undrain_tasks": "tasks/slurm_resume.yml",
                    "client_tuning_slurm_wait_seconds": 3600}
    for name in ("client_tuning_drain_tasks", "client_tuning_undrain_tasks"):
        assert os.path.isfile(os.path.join(COLLECTION, "roles", "client_tuning", hook[name])), hook[name]
    assert "state=drain" not in "\n".join(commented)
    assert policy(tmp_path, hook) == "when_idle"
