"""meta/runtime.yml: action groups whose members share the options a group is for.

`module_defaults: {group/ckptio.nfs.<group>: {...}}` gives every key to every member of the group;
a member without that option fails with "Unsupported parameters" (issue 23 item 14: a catch-all
`all` group with `backup: true` broke nfs_client_stats). So each group is checked against the
modules' real argument specs (the dict each main() hands to AnsibleModule), and a real
ansible-playbook run gives each group's options to a check-mode call of every member.
"""
from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys

from unittest import mock

import pytest
import yaml

from ansible_collections.ckptio.nfs.tests.unit.utils import run_playbook, sample_path, tree_checksums

COLLECTION = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))

# What each group is for: the options its name promises (meta/runtime.yml says the same in its
# comments). Every member takes each of them, and so does no module outside the group.
GROUP_OPTIONS = {
    "file_edits": {"backup", "state"},
    "kernel_settings": {"apply_live", "persist", "backup", "state"},
    "bundle_readers": {"bundle", "output_dir", "fallback_output_dir"},
    "barrier": {"barrier_dir", "barrier_timeout", "start_at"},
}


class _Spec(Exception):
    pass


def runtime():
    with open(os.path.join(COLLECTION, "meta", "runtime.yml")) as handle:
        return yaml.safe_load(handle)


def modules():
    names = os.listdir(os.path.join(COLLECTION, "plugins", "modules"))
    return sorted(name[:-3] for name in names if name.endswith(".py") and name != "__init__.py")


def argument_spec(name):
    """The option names (and aliases) the module's main() gives AnsibleModule; for a module that
    runs on the controller (an action plugin with a docs-only module file), its _VALID_ARGS."""
    if os.path.exists(os.path.join(COLLECTION, "plugins", "action", name + ".py")):
        action = importlib.import_module("ansible_collections.ckptio.nfs.plugins.action.%s" % name)
        return set(action.ActionModule._VALID_ARGS)
    module = importlib.import_module("ansible_collections.ckptio.nfs.plugins.modules.%s" % name)

    def capture(*args, **kwargs):
        raise _Spec(kwargs.get("argument_spec", args[0] if args else None))

    with mock.patch.object(module, "AnsibleModule", side_effect=capture):
        with pytest.raises(_Spec) as caught:
            module.main()
    spec = caught.value.args[0]
    names = set(spec)
    for option in spec.values():
        names.update(option.get("aliases") or [])
    return names


SPECS = dict((name, argument_spec(name)) for name in modules())


def test_there_is_no_catch_all_group_because_no_option_is_shared_by_every_module():
    shared = set.intersection(*SPECS.values())
    assert shared == set(), "every module takes %s: an `all` group could carry them" % sorted(shared)
    assert "all" not in runtime()["action_groups"]


def test_each_group_is_documented_here_and_lists_real_modules_once():
    groups = runtime()["action_groups"]
    assert set(groups) == set(GROUP_OPTIONS)
    for name, members in groups.items():
        assert len(members) == len(set(members)), "%s lists a module twice" % name
        assert set(members) <= set(SPECS), "%s lists %s, not in plugins/modules" % (name, set(members) - set(SPECS))
        assert len(members) >= 2, "%s has one member: module_defaults on the module itself does that" % name


@pytest.mark.parametrize("group", sorted(GROUP_OPTIONS))
def test_every_option_a_group_is_for_is_taken_by_every_member(group):
    members = runtime()["action_groups"][group]
    for member in members:
        missing = GROUP_OPTIONS[group] - SPECS[member]
        assert not missing, "group/ckptio.nfs.%s: %s does not take %s" % (group, member, sorted(missing))
    # The group's options are exactly what its members share (nothing shared is left unnamed).
    assert set.intersection(*(SPECS[member] for member in members)) == GROUP_OPTIONS[group]


@pytest.mark.parametrize("group", sorted(GROUP_OPTIONS))
def test_every_module_that_takes_a_groups_options_is_a_member(group):
    takers = sorted(name for name, spec in SPECS.items() if GROUP_OPTIONS[group] <= spec)
    assert takers == sorted(runtime()["action_groups"][group])


def test_requires_ansible_has_a_floor_and_no_cap():
    spec = runtime()["requires_ansible"]
    assert spec.startswith(">="), spec
    assert "<" not in spec and "," not in spec, spec


# One play per group: the group's defaults, then a check-mode call of each member with only its
# own required options (so an option the group gives a member it lacks would fail the play).
GROUP_PLAY = """
- hosts: localhost
  gather_facts: false
  check_mode: true
  module_defaults:
    group/ckptio.nfs.file_edits:
      backup: true
    group/ckptio.nfs.kernel_settings:
      backup: true
      apply_live: false
    group/ckptio.nfs.bundle_readers:
      bundle: {bundle}
    group/ckptio.nfs.barrier:
      barrier_timeout: 5
  tasks:
    - name: nfs_mount
      ckptio.nfs.nfs_mount:
        fstab: {tmp}/fstab
        path: {tmp}/mnt
        src: "server:/export"
        state: present
      register: nfs_mount
    - name: nfsd_threads
      ckptio.nfs.nfsd_threads:
        # nfs-utils reads only these paths; check mode writes nothing there (asserted below).
        conf_file: {nfs_conf}
        threads: 8
      register: nfsd_threads
    - name: sunrpc_slot_table
      ckptio.nfs.sunrpc_slot_table:
        modprobe_conf: /run/modprobe.d/{unique}.conf
        modules_load_conf: /run/modules-load.d/{unique}.conf
        tcp_slot_table_entries: 128
      register: sunrpc_slot_table
    - name: diagnose_bundle
      ckptio.nfs.diagnose_bundle:
        write: false
      register: diagnose_bundle
    - name: checkpoint_report
      ckptio.nfs.checkpoint_report: {{}}
      register: checkpoint_report
    - name: checkpoint_canary
      ckptio.nfs.checkpoint_canary:
        path: {tmp}/canary
        allow_local: true
        ranks: 1
        bytes_per_rank: 1048576
      register: checkpoint_canary
    - name: tcp_probe
      ckptio.nfs.tcp_probe:
        mode: send
        server: 127.0.0.1
        seconds: 1
      register: tcp_probe
    - name: Show what each member ran with
      ansible.builtin.debug:
        msg: >-
          RAN {{{{ [nfs_mount, nfsd_threads, sunrpc_slot_table, diagnose_bundle, checkpoint_report,
                  checkpoint_canary, tcp_probe] | map(attribute='failed', default=false) | list }}}}
"""


def test_module_defaults_on_each_group_reach_a_check_mode_call_of_every_member(tmp_path):
    # A copy: the bundle readers refuse to write into a bundle inside an installed ckptio.nfs,
    # which the staged tree the units run from is.
    bundle = str(tmp_path / "bundle")
    shutil.copytree(sample_path("bundles", "seed_like_baseline"), bundle)
    before = tree_checksums(bundle)
    work = tmp_path / "work"
    (work / "canary").mkdir(parents=True)
    (work / "fstab").write_text("")
    before_work = tree_checksums(str(work))
    unique = "ckptio-unit-%d" % os.getpid()
    nfs_conf = "/etc/nfs.conf.d/%s.conf" % unique
    written = [nfs_conf, "/run/modprobe.d/%s.conf" % unique, "/run/modules-load.d/%s.conf" % unique]
    run = run_playbook(tmp_path, GROUP_PLAY.format(bundle=json.dumps(bundle), tmp=work, nfs_conf=nfs_conf, unique=unique),
                       "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
                       "      ansible_python_interpreter: %s\n" % sys.executable)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "Unsupported parameters" not in output
    assert re.search(r"RAN \[False, False, False, False, False, False, False\]", output), output
    # Check mode: the sample bundle and the files the members would edit are as they were.
    assert tree_checksums(bundle) == before
    assert tree_checksums(str(work)) == before_work
    assert [path for path in written if os.path.lexists(path)] == []
