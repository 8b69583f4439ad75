"""The canary_validation probe plays, run for real by ansible-playbook on localhost with iperf3.

Two clients and one server, all this host (connection local). The clients' targets are set by
the driver playbook (there is no NFS mount here); everything after that is the role's own task
files in playbooks/validate-checkpoint.yml's order: listen -> send -> stop -> verdict.
Client c2 sends to a port nobody listens on, so its send fails: the test proves the stop still
ran (nothing listens, no process of ours is left, the records are gone), that c1's result is in
the bundle, and that the run fails at the end naming c2.
"""
from __future__ import annotations

import json
import os
import shutil
import sys

import pytest
import yaml

from ansible_collections.ckptio.nfs.tests.unit.utils import BUNDLE_PLAY, run_playbook
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_tcp_probe import free_port, listening, our_processes

IPERF3 = shutil.which("iperf3")
DRIVER = BUNDLE_PLAY + """
- hosts: nfs_clients
  gather_facts: false
  tasks:
    - ansible.builtin.set_fact:
        canary_validation__probe_target:
          server: 127.0.0.1
          port: "{{{{ {base} if inventory_hostname == 'c1' else {nobody} }}}}"
          streams: 2
- hosts: nfs_servers
  gather_facts: false
  tasks:
    - ansible.builtin.include_role: {{name: ckptio.nfs.canary_validation, tasks_from: probe_servers}}
- hosts: nfs_clients
  gather_facts: false
  tasks:
    - ansible.builtin.include_role: {{name: ckptio.nfs.canary_validation, tasks_from: probe_clients}}
- hosts: nfs_servers
  gather_facts: false
  tasks:
    - ansible.builtin.include_role: {{name: ckptio.nfs.canary_validation, tasks_from: probe_stop}}
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.include_role: {{name: ckptio.nfs.canary_validation, tasks_from: probe_verdict}}
"""

INVENTORY = """
all:
  vars:
    ansible_connection: local
    ansible_python_interpreter: {python}
  children:
    nfs_clients:
      hosts: {{c1: {{}}, c2: {{}}}}
    nfs_servers:
      hosts: {{s1: {{}}}}
"""


@pytest.mark.skipif(IPERF3 is None, reason="iperf3 is not installed (Debian package iperf3; scripts/setup.sh installs it)")
def test_a_failed_send_still_stops_the_listeners_and_fails_the_run_at_the_end(tmp_path):
    base = free_port()
    while base + 1 > 65535 or listening([base, base + 1]):
        base = free_port()
    nobody = free_port()
    while nobody in (base, base + 1):
        nobody = free_port()
    bundle = tmp_path / "bundle"
    state = tmp_path / "probe-state"
    run = run_playbook(tmp_path, DRIVER.format(bundle=bundle, base=base, nobody=nobody, clients="[c1, c2]"),
                       INVENTORY.format(python=sys.executable),
                       ["-e", "canary_validation_probe_port_base=%d" % base, "-e", "canary_validation_probe_seconds=1",
                        "-e", "canary_validation_probe_state_dir=%s" % state])
    output = run.stdout + run.stderr

    assert run.returncode != 0, output
    assert "TCP probe failed: c2: probe to 127.0.0.1:%d failed: unable to connect to server: Connection refused" % nobody in output
    # The stop ran after the failed send: nothing listens, nothing of ours runs, no record is left.
    assert listening([base, base + 1]) == []
    assert our_processes([base, base + 1]) == []
    assert not state.exists()
    assert "Stop the probe listeners" in output

    good = json.loads((bundle / "clients" / "c1" / "probe.json").read_text())
    assert (good["server"], good["port"], good["streams"], good["seconds"]) == ("127.0.0.1", base, 2, 1)
    assert good["summary"]["error"] is None and good["summary"]["received_bits_per_second"] > 0
    # iperf3's raw output beside probe.json (issue 27: the diagnosis reads probe.json alone)
    assert "iperf3" not in good
    raw = json.loads((bundle / "clients" / "c1" / "probe_iperf3.json").read_text())
    assert raw["start"]["test_start"]["num_streams"] == 2
    bad = json.loads((bundle / "clients" / "c2" / "probe.json").read_text())
    assert bad["summary"]["error"] == "unable to connect to server: Connection refused"
    assert bad["port"] == nobody


def _shipped_probe_plays():
    """The probe plays of playbooks/validate_checkpoint.yml as shipped (their names start 'TCP probe')."""
    path = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "playbooks", "validate_checkpoint.yml")
    with open(path, encoding="utf-8") as handle:
        plays = yaml.safe_load(handle)
    return [play for play in plays if play.get("name", "").startswith("TCP probe")]


def test_with_the_probe_off_the_shipped_probe_plays_run_nothing_and_show_no_failure(tmp_path):
    # A new user's validate_checkpoint run (canary_validation_probe defaults to false) printed a red
    # "fatal: ... probe_record: the target lacks 'server'" on every client, rescued: a task's loop is
    # templated before its `when`, and import_role only copies the `when` onto each task.
    plays = _shipped_probe_plays()
    assert len(plays) >= 4
    driver = BUNDLE_PLAY.format(bundle=tmp_path / "bundle", clients="[c1, c2]") + yaml.safe_dump(plays, sort_keys=False)
    run = run_playbook(tmp_path, driver, INVENTORY.format(python=sys.executable))
    output = run.stdout + run.stderr

    assert run.returncode == 0, output
    assert "fatal" not in output and "FAILED" not in output, output
    assert "rescued=0" in output and "rescued=1" not in output, output
    assert not (tmp_path / "bundle" / "clients" / "c1" / "probe.json").exists()
