"""canary_validation and checkpoint_capture show users one entry point (issue 23, item 15).

`ansible-doc -t role ckptio.nfs.canary_validation` printed 2,101 lines: every option repeated for
ten entry points that were the role's internal task files. Now meta/argument_specs.yml documents
`main` once; the task files the playbooks run are no entry points, so Ansible does not validate
them by itself: each starts with ansible.builtin.validate_argument_spec on `main`'s options, and
these tests keep it that way (a bad value is still refused in every play, see
test_safety_bad_input.py's rows).
"""
from __future__ import annotations

import os
import re

import pytest
import yaml

from ansible_collections.ckptio.nfs.tests.unit.test_safety_bad_input import COLLECTION

# The task files each playbook imports with tasks_from (what an entry point used to be).
PLAYBOOKS = {"canary_validation": "validate_checkpoint.yml", "checkpoint_capture": "capture.yml"}


def _load(*parts):
    with open(os.path.join(COLLECTION, *parts)) as handle:
        return yaml.safe_load(handle)


def _tasks_from(role):
    with open(os.path.join(COLLECTION, "playbooks", PLAYBOOKS[role])) as handle:
        text = handle.read()
    return sorted(set(re.findall(r"name: ckptio\.nfs\.%s\n\s+tasks_from: (\w+)" % role, text)))


@pytest.mark.parametrize("role", sorted(PLAYBOOKS))
def test_one_entry_point_with_every_option_once(role):
    specs = _load("roles", role, "meta", "argument_specs.yml")["argument_specs"]
    assert list(specs) == ["main"]
    options = specs["main"]["options"]
    defaults = _load("roles", role, "defaults", "main.yml")
    assert sorted(options) == sorted(defaults), "every default is documented once, and nothing else"
    text = yaml.safe_dump(specs)
    assert "playbooks/" not in text and "ckptio.nfs." in text, "installed names, not checkout paths"


@pytest.mark.parametrize("role", sorted(PLAYBOOKS))
def test_every_task_file_a_playbook_runs_validates_the_options_first(role):
    entries = _tasks_from(role)
    assert "prepare" in entries and "report" in entries
    for entry in entries:
        first = _load("roles", role, "tasks", entry + ".yml")[0]
        assert "ansible.builtin.validate_argument_spec" in first, "%s/tasks/%s.yml does not validate first" % (role, entry)
        assert "argument_specs.main.options" in first["ansible.builtin.validate_argument_spec"]["argument_spec"]


@pytest.mark.parametrize("role", sorted(PLAYBOOKS))
def test_the_checkpoint_comes_from_the_inventory_variables(role):
    defaults = _load("roles", role, "defaults", "main.yml")
    prefix = role + "_"
    bytes_name = {"canary_validation": "target_checkpoint_bytes", "checkpoint_capture": "checkpoint_bytes"}[role]
    assert defaults[prefix + "mount_point"] == "{{ ckptio_checkpoint_mount | default('') }}"
    assert defaults[prefix + bytes_name] == "{{ ckptio_checkpoint_bytes | default(0) }}"
    assert defaults[prefix + "target_window_seconds"] == "{{ ckptio_checkpoint_window_seconds | default(0) }}"
