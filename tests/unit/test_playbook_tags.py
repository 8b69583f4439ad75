"""Tags (docs/operations.md, "Running one part"): --list-tasks shows the roles' tasks with their tags,
and no tag selection can skip a step that guards another (the records before fstab changes, the
drain before an unmount, the host checks, the budget and the summary)."""
from __future__ import annotations

import os
import re

import pytest
import yaml

from ansible_collections.ckptio.nfs.tests.unit.test_playbook_summaries import COLLECTION, run_playbook

PARTS = {"slots", "mounts", "nfsd", "exports", "canary", "probe", "metrics"}


def listed(tmp_path, playbook, *extra):
    """[(task name, tags)] that ansible-playbook --list-tasks would run with these tag options."""
    done = run_playbook(tmp_path, os.path.join(COLLECTION, "playbooks", playbook), "--list-tasks", *extra,
                        inventory=os.path.join(COLLECTION, "inventories", "example"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    tasks = re.findall(r"^ {6}(.+?)\tTAGS: \[(.*)\]$", done.stdout, re.M)
    return [(name, set(filter(None, tags.split(", ")))) for name, tags in tasks]


def names(tasks):
    return [name.split(" : ", 1)[-1] for name, _tags in tasks]


def test_list_tasks_shows_the_roles_tasks_and_tags(tmp_path):
    tasks = listed(tmp_path, "tune_clients.yml", "--list-tags")
    by_name = dict((name.split(" : ", 1)[-1], tags) for name, tags in tasks)
    assert by_name["Set sunrpc slot tables and NFSv4.1 session slots"] == {"slots"}
    assert by_name["Persist and apply the checkpoint mounts"] == {"mounts"}
    assert by_name["Write the state file"] == {"always"}
    # Every task says which part it belongs to, or that it always runs.
    assert all(tags for _name, tags in tasks)


@pytest.mark.parametrize("playbook, tag, runs, skipped", [
    # --tags mounts: the inputs, the preview and the records run before fstab changes; the drain
    # and undrain come with the mounts; the slot tables do not.
    ("tune_clients.yml", "mounts",
     ["Check that the host answers", "Refuse hook commands that are not argv lists", "Preview the mounts",
      "Work out the records, adding one for each mount whose fstab entry is about to change", "Write the state file",
      "Drain the host before its mounts are unmounted", "Persist and apply the checkpoint mounts", "Undrain the host",
      "Record what changed and what is pending a remount", "Stop the rollout when the batch used up the failure budget",
      "Fail when a host failed, was unreachable or was not reached"],
     ["Set sunrpc slot tables and NFSv4.1 session slots"]),
    ("tune_clients.yml", "slots",
     ["Write the state file", "Set sunrpc slot tables and NFSv4.1 session slots", "Record what changed and what is pending a remount"],
     ["Drain the host before its mounts are unmounted", "Persist and apply the checkpoint mounts"]),
    ("tune_servers.yml", "nfsd",
     ["Refuse thread counts that are not whole numbers", "Set nfsd threads and the connection limit",
      "Record what changed and what is pending a restart (ckptio.nfs.server_tuning_report)"],
     ["Read the export files (reported, never rewritten)"]),
    ("audit.yml", "slots",
     ["Count this host as targeted by the audit", "Set sunrpc slot tables and NFSv4.1 session slots",
      "Write the drift table as Markdown", "Fail when nothing was audited, or on drift when asked to (cron/CI)"],
     ["Persist and apply the checkpoint mounts", "Set nfsd threads and the connection limit"]),
])
def test_one_part_keeps_the_steps_that_guard_it(tmp_path, playbook, tag, runs, skipped):
    selected = names(listed(tmp_path, playbook, "--tags", tag))
    for name in runs:
        assert name in selected, name
    for name in skipped:
        assert name not in selected, name
    if playbook == "tune_clients.yml" and tag == "mounts":
        # The order is the role's: the record is on disk before the drain and the fstab change.
        assert selected.index("Write the state file") < selected.index("Drain the host before its mounts are unmounted") \
            < selected.index("Persist and apply the checkpoint mounts")


def test_validate_checkpoint_probe_alone_keeps_the_preparation(tmp_path):
    selected = names(listed(tmp_path, "validate_checkpoint.yml", "--tags", "probe"))
    for name in ("Name the bundle once, on the controller", "Listen on the addresses the clients mount, one port per client",
                 "Stop the probe listeners and check that nothing listens any more", "Fail when the TCP probe failed somewhere"):
        assert name in selected, name
    assert "Write context.yml" not in selected


def test_hook_tasks_run_with_their_include_whatever_the_tags():
    """An included file's tasks are matched against --tags on their own: the drain hook and the
    operator's hook file must carry always, or --tags mounts would unmount without draining."""
    with open(os.path.join(COLLECTION, "roles", "client_tuning", "tasks", "hook.yml")) as handle:
        tasks = yaml.safe_load(handle)
    assert [task["tags"] for task in tasks] == [["always"], ["always"]]
    assert tasks[1]["ansible.builtin.include_tasks"]["apply"] == {"tags": ["always"]}


@pytest.mark.parametrize("role", ["client_tuning", "server_tuning"])
def test_every_role_task_is_tagged_with_a_documented_part(role):
    with open(os.path.join(COLLECTION, "roles", role, "tasks", "main.yml")) as handle:
        tasks = yaml.safe_load(handle)
    with open(os.path.join(COLLECTION, "roles", role, "README.md")) as handle:
        readme = handle.read()
    for task in tasks:
        assert task.get("tags"), task["name"]
        for tag in task["tags"]:
            assert tag == "always" or (tag in PARTS and "`%s`" % tag in readme), (task["name"], tag)
