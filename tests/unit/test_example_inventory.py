"""inventories/example is safe for a cluster in production (issue 15): without a drain hook the
role never unmounts a checkpoint mount (a training node holds no file on it between two
checkpoints, so when_idle would remount it in the middle of a job); a drain hook turns on when_idle.

It sets the checkpoint once (issue 23): ckptio_checkpoint_mount, ckptio_checkpoint_bytes and
ckptio_checkpoint_window_seconds, which canary_validation's and checkpoint_capture's defaults read;
ckptio.nfs.validate_checkpoint --check against it finishes and says what it would run."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

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


# -- the checkpoint, set once (issue 23, items 1, 2 and 7) ----------------------------------------
EXAMPLE = os.path.join(COLLECTION, "inventories", "example")
ANSIBLE_PLAYBOOK_FQCN_ENV = {"ANSIBLE_NOCOLOR": "1", "ANSIBLE_RETRY_FILES_ENABLED": "0"}


def _playbook(tmp_path, inventory, argv, timeout=300):
    if not os.path.exists(ANSIBLE_PLAYBOOK):
        pytest.skip("ansible-playbook is not next to this python")
    environment = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collection_root(), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
                       ANSIBLE_HOME=str(tmp_path / "home"), **ANSIBLE_PLAYBOOK_FQCN_ENV)
    environment.pop("ANSIBLE_CONFIG", None)
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    return subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(inventory)] + argv, cwd=str(project), env=environment,
                          capture_output=True, text=True, timeout=timeout, check=False)


def test_example_sets_the_checkpoint_once_and_both_roles_defaults_read_it(tmp_path):
    """ckptio_checkpoint_mount/_bytes/_window_seconds in group_vars/all.yml reach every role's own variable."""
    with open(os.path.join(EXAMPLE, "group_vars", "all.yml")) as handle:
        example = yaml.safe_load(handle)
    assert example["ckptio_checkpoint_mount"] == "/mnt/checkpoints"
    assert example["ckptio_checkpoint_bytes"] == 2400000000000 and example["ckptio_checkpoint_window_seconds"] == 300
    names = ["canary_validation_mount_point", "canary_validation_path", "canary_validation_target_checkpoint_bytes",
             "canary_validation_target_window_seconds", "checkpoint_capture_mount_point", "checkpoint_capture_checkpoint_bytes",
             "checkpoint_capture_target_window_seconds"]
    play = tmp_path / "defaults.yml"
    play.write_text(yaml.safe_dump([{
        "hosts": "gpu01", "gather_facts": False,
        "vars_files": [os.path.join(COLLECTION, "roles", role, "defaults", "main.yml")
                       for role in ("canary_validation", "checkpoint_capture")],
        "tasks": [{"ansible.builtin.debug": {"msg": "RESULT {{ %s | to_json }}" % ("{" + ", ".join(
            "'%s': %s" % (name, name) for name in names) + "}")}}]}]))
    done = _playbook(tmp_path, EXAMPLE, [str(play)])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    values = json.loads(re.search(r'"RESULT (\{.*\})"', done.stdout).group(1).replace('\\"', '"'))
    assert values["canary_validation_mount_point"] == values["canary_validation_path"] == "/mnt/checkpoints"
    assert values["checkpoint_capture_mount_point"] == "/mnt/checkpoints"
    assert int(values["canary_validation_target_checkpoint_bytes"]) == int(values["checkpoint_capture_checkpoint_bytes"]) == 2400000000000
    assert float(values["canary_validation_target_window_seconds"]) == float(values["checkpoint_capture_target_window_seconds"]) == 300


def _local_example(tmp_path, drop=()):
    """The example inventory with its documented edits for a test: every host this machine (connection local)."""
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLE, str(inventory))
    (inventory / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {
        "nfs_clients": {"hosts": {"gpu01": {"ansible_connection": "local"}, "gpu02": {"ansible_connection": "local"}}},
        "nfs_servers": {"hosts": {"nfs01": {"ansible_connection": "local"}}}}}}))
    all_vars = inventory / "group_vars" / "all.yml"
    kept = [line for line in all_vars.read_text().splitlines() if not line.startswith(tuple(drop))]
    all_vars.write_text("\n".join(kept) + "\n")
    return inventory


def test_validate_checkpoint_check_mode_finishes_and_says_what_it_would_run(tmp_path):
    """--check used to fail (`bundle: ... is not a directory`); now it checks the canary on every client and writes nothing."""
    data = tmp_path / "checkpoints"
    data.mkdir()
    inventory = _local_example(tmp_path)
    done = _playbook(tmp_path, inventory, [
        "ckptio.nfs.validate_checkpoint", "--check", "-e", json.dumps({
            "ckptio_checkpoint_mount": str(data), "canary_validation_allow_local": True,
            "ansible_python_interpreter": sys.executable, "canary_validation_barrier_dir": str(tmp_path)})])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "check mode: the canary's options were checked on 2 client(s) (gpu01, gpu02); nothing was written" in done.stdout
    assert "Target given: ckptio_checkpoint_bytes=2400000000000 in ckptio_checkpoint_window_seconds=300" in done.stdout
    assert "bytes on every client at one go time (shared_file, fsync), in %s; saves the bundle in " % data in done.stdout
    assert not (tmp_path / "project" / "reports").exists() and os.listdir(str(data)) == []


def test_no_mount_fails_on_the_controller_before_anything_naming_the_variable(tmp_path):
    inventory = _local_example(tmp_path, drop=("ckptio_checkpoint_mount",))
    done = _playbook(tmp_path, inventory, ["ckptio.nfs.validate_checkpoint", "-e", json.dumps({
        "ansible_python_interpreter": sys.executable})])
    assert done.returncode != 0
    assert "No checkpoint mount for gpu01, gpu02: set ckptio_checkpoint_mount" in done.stdout, done.stdout[-3000:]
    assert "canary_validation_mount_point to override it" in done.stdout
    assert not (tmp_path / "project" / "reports").exists(), "refused before the bundle directory was made"


def test_a_path_that_is_not_nfs_is_refused_naming_the_role_variable_not_the_module_option(tmp_path):
    data = tmp_path / "checkpoints"
    data.mkdir()
    inventory = _local_example(tmp_path)
    done = _playbook(tmp_path, inventory, ["ckptio.nfs.validate_checkpoint", "--check", "-e", json.dumps({
        "ckptio_checkpoint_mount": str(data), "ansible_python_interpreter": sys.executable})])
    assert done.returncode != 0
    assert "set canary_validation_allow_local=true (tests only)" in done.stdout, done.stdout[-3000:]
    assert "by default ckptio_checkpoint_mount" in done.stdout


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
                    "client_tuning_slurm_controller": "login01", "client_tuning_slurm_wait_seconds": 3600}
    # Every variable it names is one the role declares (issue 29: scontrol runs on a controller).
    with open(os.path.join(COLLECTION, "roles", "client_tuning", "meta", "argument_specs.yml")) as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    assert set(hook) <= set(options)
    for name in ("client_tuning_drain_tasks", "client_tuning_undrain_tasks"):
        assert os.path.isfile(os.path.join(COLLECTION, "roles", "client_tuning", hook[name])), hook[name]
    assert "state=drain" not in "\n".join(commented)
    assert policy(tmp_path, hook) == "when_idle"
