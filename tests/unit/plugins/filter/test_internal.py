"""ckptio.nfs.internal: the one public filter behind the roles' and playbooks' own steps (issue 23 item 15, issue 46).

The rule (docs/architecture.md, "Public or internal"): a filter is public only when the user docs tell
users to call it; a step only the collection's roles and playbooks call sits behind ckptio.nfs.internal,
documented in plugins/plugin_utils/<step>.yml, whose options are the argument spec checked at each call.
`ansible-doc -t filter -l ckptio.nfs` listed 26 filters before issue 23 and 25 before issue 46; now 5.
"""
from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.filter.internal import STEPS, FilterModule
from ansible_collections.ckptio.nfs.plugins.plugin_utils import nfsd_connections, step_spec

COLLECTION = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
COLLECTIONS_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(COLLECTION)))
ANSIBLE_DOC = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
INTERNAL = FilterModule().filters()["internal"]
# The steps only the roles and playbooks call.
ROLE_STEPS = {"client_tuning_state_records", "client_tuning_wanted_mounts", "client_tuning_records",
              "client_tuning_records_rolled_back", "client_tuning_drain_needed", "client_tuning_report",
              "server_tuning_report", "nfsd_connection_need", "nfsd_max_connections",
              "audit_summary", "rollout_summary", "rollout_budget", "tuning_profile",
              "slurm_node", "slurm_ready", "slurm_poll",
              "slurm_canary_job", "slurm_canary_args", "slurm_job_id", "slurm_job_state", "slurm_cancel", "slurm_canary_result",
              # public filters until issue 46, used only by canary_validation, checkpoint_capture and compare_architectures
              "canary_context", "canary_failures", "canary_barrier", "canary_host_go", "canary_server_samples",
              "canary_probe_errors", "canary_waits", "bundle_files", "capture_window", "capture_sampling", "capture_client",
              "capture_context", "canary_record", "probe_record", "hosts_with", "host_values", "compare_options",
              "compare_bundles"}
# What users call: the filters the user docs tell them to call (docs/capture-bundle.md "## Filters", README), and internal.
PUBLIC = {"mountstats_delta", "nfsd_delta", "checkpoint_capacity", "nfs_diagnosis", "internal"}
# The keys a documented option may carry: the argument spec's and the prose.
OPTION_KEYS = set(step_spec.SPEC_KEYS) | {"description", "version_added"}
TYPES = {"str", "int", "float", "bool", "list", "dict", "raw", "path"}


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


def _options_typed(options, where):
    """Every option has a type (elements for a list), and only argument spec or prose keys; suboptions too."""
    problems = []
    for name, option in (options or {}).items():
        if option.get("type") not in TYPES:
            problems.append("%s.%s: type %r" % (where, name, option.get("type")))
        if option.get("type") == "list" and "elements" not in option:
            problems.append("%s.%s: a list without elements" % (where, name))
        if not option.get("description"):
            problems.append("%s.%s: no description" % (where, name))
        problems += ["%s.%s: %s" % (where, name, key) for key in set(option) - OPTION_KEYS]
        problems += _options_typed(option.get("options"), "%s.%s" % (where, name))
    return problems


@pytest.mark.parametrize("step", sorted(ROLE_STEPS))
def test_each_step_has_its_documentation_and_argument_spec(step):
    documentation = step_spec.documentation(step)
    assert documentation["name"] == step
    assert documentation["short_description"] and documentation["description"]
    options = documentation["options"]
    # The documented options are the Python parameters, the first being the input.
    parameters = list(STEPS[step].signature.parameters)
    assert set(options) == {"_input"} | set(parameters[1:])
    assert documentation["positional"].split(", ")[0] == "_input"
    # required: true is a parameter without a default (Python's binding says which is missing).
    signature = STEPS[step].signature.parameters
    required = set(name for name, option in options.items() if option.get("required"))
    assert required == {"_input"} | set(name for name in parameters[1:] if signature[name].default is inspect.Parameter.empty)
    assert _options_typed(options, step) == []
    # The spec the call is checked against is that documentation's.
    assert STEPS[step].spec == step_spec.spec_of(options)


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_each_public_filter_has_its_documentation(name):
    with open(os.path.join(COLLECTION, "plugins", "filter", "%s.yml" % name)) as handle:
        documentation = yaml.safe_load(handle)
    assert documentation["DOCUMENTATION"]["name"] == name
    assert documentation["EXAMPLES"].strip() and documentation["RETURN"]["_value"]["description"]
    assert _options_typed(documentation["DOCUMENTATION"]["options"], name) == []


def test_a_step_called_with_a_wrong_type_names_the_step_and_the_option():
    with pytest.raises(AnsibleFilterError, match=r"step 'nfsd_max_connections': argument 'threads' is of type .*str.* and we were "
                                                 r"unable to convert to int"):
        INTERNAL(5000, "nfsd_max_connections", "many")
    with pytest.raises(AnsibleFilterError, match=r"step 'server_tuning_report': .*connection_need.* dict"):
        INTERNAL({}, "server_tuning_report", {"connection_need": "x", "max_connections_plan": {}, "profile": "p",
                                              "conf_file": "/x", "clients_group": "g"})


def test_a_step_called_without_a_required_option_or_with_an_unknown_one_says_so():
    with pytest.raises(AnsibleFilterError, match=r"step 'server_tuning_report': missing required arguments: clients_group "
                                                 r"found in inputs"):
        INTERNAL({}, "server_tuning_report", {"connection_need": {}, "max_connections_plan": {}, "profile": "p", "conf_file": "/x"})
    with pytest.raises(AnsibleFilterError, match=r"step 'server_tuning_report': missing a required argument: 'inputs'"):
        INTERNAL({}, "server_tuning_report")
    with pytest.raises(AnsibleFilterError, match=r"step 'host_values': .*unexpected keyword argument 'defaults'"):
        INTERNAL(["a"], "host_values", {}, "x", defaults=1)
    with pytest.raises(AnsibleFilterError, match=r"step 'server_tuning_report': .*value of state must be one of: present, absent"):
        INTERNAL({}, "server_tuning_report", {"connection_need": {}, "max_connections_plan": {}, "profile": "p",
                                              "conf_file": "/x", "clients_group": "g", "state": "gone"})


def test_the_check_does_not_convert_what_the_step_gets():
    # "64" passes an int option's check and reaches the step as given, as before the check existed.
    assert INTERNAL(5000, "nfsd_max_connections", "64") == nfsd_connections.nfsd_max_connections(5000, "64")


def test_every_step_is_called_by_a_role_or_a_playbook():
    text = ""
    for top in ("roles", "playbooks"):
        for root, _dirs, files in os.walk(os.path.join(COLLECTION, top)):
            for name in files:
                if name.endswith((".yml", ".j2")):
                    with open(os.path.join(root, name)) as handle:
                        text += handle.read()
    called = set(re.findall(r"ckptio\.nfs\.internal\(\s*'(\w+)'", text))
    assert set(STEPS) - called == set()


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
