"""`ansible-doc -t role` shows each tuning role as one entry point with its options once (issue 23,
item 15): the roles declare only `main` in meta/argument_specs.yml (validation runs on it), and
helper task files (tasks/hook.yml, tasks/slurm_drain.yml ...) are no entry points."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from ansible_collections.ckptio.nfs.tests.unit.test_playbook_summaries import ANSIBLE_PLAYBOOK
from ansible_collections.ckptio.nfs.tests.unit.test_safety_bad_input import load_yaml, role_dir
from ansible_collections.ckptio.nfs.tests.unit.test_safety_states_fstab import collection_root

ANSIBLE_DOC = os.path.join(os.path.dirname(ANSIBLE_PLAYBOOK), "ansible-doc")


@pytest.mark.parametrize("role", ["client_tuning", "server_tuning"])
def test_one_entry_point_each_option_once(role, tmp_path):
    specs = load_yaml(os.path.join(role_dir(role), "meta", "argument_specs.yml"))["argument_specs"]
    assert list(specs) == ["main"]
    if not os.path.exists(ANSIBLE_DOC):
        pytest.skip("ansible-doc is not next to this python")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collection_root(), ANSIBLE_NOCOLOR="1", ANSIBLE_HOME=str(tmp_path),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    done = subprocess.run([ANSIBLE_DOC, "-t", "role", "ckptio.nfs." + role], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.findall(r"^ENTRY POINT: \*?(\w+)\*?", done.stdout, re.M) == ["main"]
    options = sorted(specs["main"]["options"])
    shown = sorted(re.findall(r"^- (%s_\w+)" % role, done.stdout, re.M))
    assert shown == options
