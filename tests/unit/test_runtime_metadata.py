"""meta/runtime.yml: the `all` action group is every module, and module_defaults reaches it.

`module_defaults: {group/ckptio.nfs.all: {...}}` sets an option once for every module of the
collection; a module missing from the group silently ignores those defaults.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import yaml

from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path, tree_checksums

COLLECTION = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
COLLECTIONS_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(COLLECTION)))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def runtime():
    with open(os.path.join(COLLECTION, "meta", "runtime.yml")) as handle:
        return yaml.safe_load(handle)


def modules():
    names = os.listdir(os.path.join(COLLECTION, "plugins", "modules"))
    return sorted(name[:-3] for name in names if name.endswith(".py") and name != "__init__.py")


def test_the_all_group_lists_exactly_the_modules_in_plugins_modules():
    group = runtime()["action_groups"]["all"]
    assert len(group) == len(set(group)), "a module listed twice"
    assert sorted(group) == modules()


def test_requires_ansible_has_a_floor_and_no_cap():
    spec = runtime()["requires_ansible"]
    assert spec.startswith(">="), spec
    assert "<" not in spec and "," not in spec, spec


PLAY = """
- hosts: localhost
  gather_facts: false
  module_defaults:
    group/ckptio.nfs.all:
      bundle: {bundle}
      write: false
  tasks:
    - name: diagnose_bundle gets its required bundle from the group's defaults
      ckptio.nfs.diagnose_bundle: {{}}
      register: diagnosis
    - name: Show the result
      ansible.builtin.debug:
        msg: "LAYER={{{{ diagnosis.diagnosis.limiting_layer }}}} CHANGED={{{{ diagnosis.changed }}}}"
"""


def test_module_defaults_for_group_all_reach_a_module(tmp_path):
    bundle = sample_path("bundles", "seed_like_baseline")
    before = tree_checksums(bundle)
    (tmp_path / "play.yml").write_text(PLAY.format(bundle=json.dumps(bundle)))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT, ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    run = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "localhost,", "-c", "local", str(tmp_path / "play.yml")],
                         cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300, check=False)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    # The module ran (its required `bundle` came from the group) and diagnosed the sample.
    assert re.search(r"LAYER=[a-z_]+ CHANGED=False", output), output
    # write: false came from the group too: the bundle is as it was.
    assert tree_checksums(bundle) == before
