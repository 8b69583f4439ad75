"""compare_architectures imports validate_checkpoint.yml once per option slot, each import under a
`when` (playbooks/compare_architectures.yml): a slot with no option must skip every task quietly.
Ansible copies an import's `when` onto each task but templates a task's loop before its `when`,
and a skipped task's `register` still overwrites the variable: a loop that builds its items from
registered results failed the whole comparison after the last option (measured on the lab,
scripts/lab-compare.sh with three options, 2026-12-02: "canary_record: the clock or a go plan
lacks 'offset_seconds'")."""
from __future__ import annotations

import sys

from ansible_collections.ckptio.nfs.tests.unit.utils import BUNDLE_PLAY, run_playbook

# The options run before left their facts: the bundle's name on the controller, each client's go plan.
DRIVER = BUNDLE_PLAY + """
- hosts: nfs_clients
  gather_facts: false
  tasks:
    - ansible.builtin.set_fact:
        canary_validation__barrier: {{go_at: 1764688000.0, ready_by: 1764687990.0}}
        canary_validation__start_at: 1764688000.0
- name: An option slot with no option
  ansible.builtin.import_playbook: ckptio.nfs.validate_checkpoint
  when: false
"""

INVENTORY = """
all:
  vars:
    ansible_connection: local
    ansible_python_interpreter: {python}
    ckptio_checkpoint_mount: /mnt/nfs
  children:
    nfs_clients:
      hosts: {{c1: {{}}, c2: {{}}}}
    nfs_servers:
      hosts: {{s1: {{}}}}
"""


def test_a_skipped_import_of_validate_checkpoint_runs_nothing_and_fails_nothing(tmp_path):
    run = run_playbook(tmp_path, DRIVER.format(bundle=tmp_path / "earlier-bundle", clients="[c1, c2]"), INVENTORY.format(python=sys.executable),
                       ["-e", "canary_validation_reports_dir=%s" % (tmp_path / "reports")], timeout=600)
    output = run.stdout + run.stderr

    assert run.returncode == 0, output[-4000:]
    assert "fatal" not in output and "FAILED" not in output, output[-4000:]
    assert "rescued=1" not in output
    assert not (tmp_path / "reports").exists() or not list((tmp_path / "reports").iterdir())
    assert not list((tmp_path / "earlier-bundle" / "clients" / "c1").iterdir())
