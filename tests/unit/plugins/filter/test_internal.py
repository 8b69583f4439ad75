"""ckptio.nfs.internal: the one public filter behind the roles' and playbooks' own steps (issue 23 item 15).

`ansible-doc -t filter -l ckptio.nfs` listed 26 filters, 12 of them steps only the collection's
roles and playbooks call. The steps now live in plugins/plugin_utils and are called by name
through this filter; the listing holds what users call (documented in docs/capture-bundle.md).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.filter.internal import STEPS, FilterModule
from ansible_collections.ckptio.nfs.plugins.plugin_utils import nfsd_connections

COLLECTION = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
COLLECTIONS_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(COLLECTION)))
ANSIBLE_DOC = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
INTERNAL = FilterModule().filters()["internal"]
# The steps only roles/client_tuning (with its Slurm hook files), roles/server_tuning, roles/canary_validation's
# Slurm launch and the playbooks call.
ROLE_STEPS = {"client_tuning_state_records", "client_tuning_wanted_mounts", "client_tuning_records",
              "client_tuning_records_rolled_back", "client_tuning_drain_needed", "client_tuning_report",
              "server_tuning_report", "nfsd_connection_need", "nfsd_max_connections",
              "audit_summary", "rollout_summary", "rollout_budget", "tuning_profile",
              "slurm_node", "slurm_ready", "slurm_poll",
              "slurm_canary_job", "slurm_canary_args", "slurm_job_id", "slurm_job_state", "slurm_cancel", "slurm_canary_result"}
# What users call: the filters docs/capture-bundle.md ("## Filters") names, and internal.
PUBLIC = {"mountstats_delta", "nfsd_delta", "checkpoint_capacity", "nfs_diagnosis",
          "canary_context", "canary_failures", "canary_barrier", "canary_host_go", "canary_server_samples", "bundle_files",
          "capture_window", "capture_sampling", "capture_client", "capture_context", "bundle_stats_files", "internal",
          "bundle_host_files", "canary_record", "probe_record", "canary_probe_errors", "hosts_with", "host_values", "canary_waits",
          "compare_options", "compare_bundles"}


def test_the_filter_calls_each_step_by_name():
    assert set(STEPS) == ROLE_STEPS
    assert INTERNAL(5000, "nfsd_max_connections", 64) == nfsd_connections.nfsd_max_connections(5000, 64)


def test_an_unknown_step_is_named_with_the_steps_there_are():
    with pytest.raises(AnsibleFilterError, match=r"no step 'client_tuning_record'; the steps are audit_summary, "):
        INTERNAL({}, "client_tuning_record")


def test_every_public_filter_is_named_in_the_users_docs():
    with open(os.path.join(COLLECTION, "docs", "capture-bundle.md")) as handle:
        text = handle.read()
    section = text.split("## Filters", 1)[1]
    assert all(re.search(r"\b%s\b" % name, section) for name in PUBLIC - {"internal"})


@pytest.mark.parametrize("step", sorted(ROLE_STEPS))
def test_each_step_is_documented_under_its_name(step):
    with open(os.path.join(COLLECTION, "plugins", "plugin_utils", "%s.yml" % step)) as handle:
        documentation = yaml.safe_load(handle)["DOCUMENTATION"]
    assert documentation["name"] == step
    code = STEPS[step].__code__
    assert set(documentation["options"]) - {"_input"} == set(code.co_varnames[1:code.co_argcount + code.co_kwonlyargcount])


def test_no_task_calls_a_step_as_a_filter_of_its_own():
    called = re.compile(r"\|\s*ckptio\.nfs\.(%s)\b" % "|".join(sorted(ROLE_STEPS)))
    found = []
    for top in ("roles", "playbooks"):
        for root, _dirs, files in os.walk(os.path.join(COLLECTION, top)):
            for name in files:
                if name.endswith((".yml", ".j2")):
                    with open(os.path.join(root, name)) as handle:
                        found += ["%s: %s" % (name, match) for match in called.findall(handle.read())]
    assert found == []


def test_ansible_doc_lists_what_users_call():
    if not os.path.exists(ANSIBLE_DOC):
        pytest.skip("ansible-doc is not next to this python")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT, ANSIBLE_NOCOLOR="1")
    run = subprocess.run([ANSIBLE_DOC, "-t", "filter", "-l", "ckptio.nfs", "--json"], env=env, capture_output=True,
                         text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    listed = set(name.split(".", 2)[2] for name in yaml.safe_load(run.stdout))
    assert listed == PUBLIC
