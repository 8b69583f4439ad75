"""compare_architectures checks every option on every client before the first option runs
(playbooks/compare_architectures.yml, issue 28: "a bad shape name, a path list with a non-NFS or
missing path, a local path without room, or an interval shorter than the drain each get a clear
error before anything is written").

Before: each option's own canary_validation run checked its canary in check mode, so an option the
canary refuses (here the third, whose second path does not exist) failed its clients only after
the options before it had run - bundles written, canaries run - and the failed clients were then
out of every later play: the comparison stopped half way with no report."""
from __future__ import annotations

import json
import sys

from ansible_collections.ckptio.nfs.tests.unit.utils import run_playbook

DRIVER = """
- name: The comparison, as a user runs it
  ansible.builtin.import_playbook: ckptio.nfs.compare_architectures
"""

INVENTORY = """
all:
  vars:
    ansible_connection: local
    ansible_python_interpreter: {python}
    ckptio_checkpoint_mount: {mount}
    # No NFS on a unit-test host: the canary's own test switch (never in an inventory).
    canary_validation_allow_local: true
  children:
    nfs_clients:
      hosts: {{c1: {{}}, c2: {{}}}}
    nfs_servers:
      hosts: {{s1: {{}}}}
"""


def test_an_option_the_canary_refuses_stops_the_comparison_before_any_option_runs(tmp_path):
    mount = tmp_path / "mnt"
    mount.mkdir()
    reports = tmp_path / "reports"
    options = [{"name": "shared_file", "shape": "shared_file"},
               # A shape run as one job over both clients (named after the bundle, which the pre-check has not
               # made yet: the lab's megatron option failed there, 2026-12-03).
               {"name": "dcp", "shape": "torch_dcp"},
               {"name": "two_paths", "shape": "file_per_rank", "paths": [str(mount), str(tmp_path / "missing")]}]
    run = run_playbook(tmp_path, DRIVER, INVENTORY.format(python=sys.executable, mount=mount),
                       ["-e", "canary_validation_reports_dir=%s" % reports,
                        "-e", json.dumps({"ckptio_compare_options": options})], timeout=600)
    output = run.stdout + run.stderr

    assert run.returncode != 0, output[-4000:]
    # Named once per client, with the option and the canary's own reason.
    assert "option two_paths (ckptio_compare_options[2]): paths entry: path %s is not an existing directory" % (tmp_path / "missing") in output, output[-4000:]
    for host in ("c1", "c2"):
        assert "fatal: [%s]" % host in output or "failed: [%s]" % host in output, output[-4000:]
    # Nothing ran: no option's bundle, no canary directory, no comparison.
    assert not reports.exists() or not list(reports.iterdir()), list(reports.iterdir())
    assert not list(mount.iterdir())
    # The pre-check ends each client's role after its check: no statistics read, no canary launched or waited for.
    assert "Read client statistics before the canary" not in output and "Wait for the canary to end" not in output, output[-4000:]
    assert "PLAY [Option 1" not in output and "PLAY [Compare" not in output
