"""What --check writes on the controller (issue 12 item 10).

The rule (docs/safety.md, docs/operations.md): check mode changes nothing on any managed host;
on the controller only playbooks/audit.yml writes its report files (the drift report is the
audit's output), as new files marked "check_mode": true; the rollout summary writes nothing
under --check and prints to the console only.

These run the real playbook files with ansible-playbook against localhost only (no managed host,
no container): a few seconds each.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.ckptio.nfs.tests.unit.test_safety_states_fstab import collection_root

COLLECTION = os.path.join(collection_root(), "ansible_collections", "ckptio", "nfs")
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def run_playbook(tmp_path, playbook, check, *extra):
    if not os.path.exists(ANSIBLE_PLAYBOOK):
        pytest.skip("ansible-playbook is not next to this python")
    environment = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collection_root(), ANSIBLE_NOCOLOR="1",
                       ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
                       ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"), ANSIBLE_HOME=str(tmp_path / "ansible-home"))
    argv = [ANSIBLE_PLAYBOOK, "-i", "localhost,", "-c", "local", playbook] + (["--check"] if check else []) + list(extra)
    done = subprocess.run(argv, env=environment, capture_output=True, text=True, timeout=300, cwd=str(tmp_path), check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def summary_playbook(tmp_path, reports):
    """A play like tune-clients.yml's last one, with one host that has a report."""
    path = tmp_path / "summary.yml"
    path.write_text(
        "- hosts: localhost\n  gather_facts: false\n  vars:\n"
        "    ansible_python_interpreter: \"{{ ansible_playbook_python }}\"\n"
        "    ckptio_summary_title: tune-clients\n    ckptio_summary_hosts: localhost\n"
        "    ckptio_summary_report_var: client_tuning_report\n    ckptio_report_dir: %s\n"
        "  tasks:\n"
        "    - ansible.builtin.set_fact:\n"
        "        client_tuning_report: {changed: [], pending: [], warnings: [], check_mode: true}\n"
        "    - ansible.builtin.include_tasks: %s\n"
        % (json.dumps(str(reports)), json.dumps(os.path.join(COLLECTION, "playbooks", "tasks", "rollout-summary.yml"))))
    return str(path)


def test_rollout_summary_writes_nothing_under_check(tmp_path):
    reports = tmp_path / "reports"
    out = run_playbook(tmp_path, summary_playbook(tmp_path, reports), True)
    assert not reports.exists(), "the summary wrote %s under --check" % os.listdir(str(reports))
    assert "localhost: OK" in out, "the summary is printed to the console"


def test_rollout_summary_writes_its_json_without_check(tmp_path):
    reports = tmp_path / "reports"
    run_playbook(tmp_path, summary_playbook(tmp_path, reports), False)
    assert [name.startswith("tune-clients-") and name.endswith(".json") for name in os.listdir(str(reports))] == [True]


@pytest.mark.parametrize("check", [True, False], ids=["check", "no-check"])
def test_audit_writes_new_report_files_marked_with_check_mode(tmp_path, check):
    reports = tmp_path / "reports"
    run_playbook(tmp_path, os.path.join(COLLECTION, "playbooks", "audit.yml"), check,
                 "-e", "ckptio_clients=nobody", "-e", "ckptio_servers=nobody", "-e", "ckptio_report_dir=%s" % reports)
    names = sorted(os.listdir(str(reports)))
    assert [name.rsplit(".", 1)[1] for name in names] == ["json", "md"] and all(name.startswith("audit-") for name in names)
    with open(str(reports / names[0])) as handle:
        assert json.load(handle)["check_mode"] is check
