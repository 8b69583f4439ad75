"""inventories/example is safe for a cluster in production (issue 15): without a drain hook the
role never unmounts a checkpoint mount (a training node holds no file on it between two
checkpoints, so when_idle would remount it in the middle of a job); a drain hook turns on when_idle."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

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
