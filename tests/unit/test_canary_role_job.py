"""canary_validation names a job (one checkpoint directory its clients share) exactly when the canary needs one:
MLPerf's read-back across clients, and a coordinator's shape (torch_dcp, megatron) on several clients without a
burst buffer (checkpoint_canary refuses job_id with local_path for them)."""
from __future__ import annotations

import os

import pytest
import yaml

from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.utils.collection_loader import AnsibleCollectionConfig

from ansible_collections.ckptio.nfs.tests.unit.utils import Templar, trust_as_template

COLLECTION = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLIENTS = os.path.join(COLLECTION, "roles", "canary_validation", "tasks", "clients.yml")


def _job_task():
    tasks = yaml.safe_load(open(CLIENTS).read())
    return [task for task in tasks if "canary_validation__job_id" in (task.get("ansible.builtin.set_fact") or {})][0]


def _render(clients=2, **role_vars):
    if AnsibleCollectionConfig.collection_finder is None:
        init_plugin_loader([os.path.dirname(os.path.dirname(os.path.dirname(COLLECTION)))])
    task = _job_task()
    variables = {"canary_validation_restore": False, "canary_validation_shape": "", "canary_validation_recovery_rank_shift": 0,
                 "canary_validation_local_path": "", "canary_validation_ranks": 4, "canary_validation_clients_group": "clients",
                 "groups": {"clients": ["c%d" % index for index in range(clients)]},
                 "hostvars": {"localhost": {"canary_validation__bundle": "/r/20261203T0300-torch dcp"}}}
    variables.update(role_vars)
    variables.update(dict((name, trust_as_template(value)) for name, value in task["vars"].items()))
    templar = Templar(loader=DataLoader(), variables=variables)
    facts = task["ansible.builtin.set_fact"]
    return (templar.template(trust_as_template(facts["canary_validation__job_id"])),
            int(templar.template(trust_as_template(facts["canary_validation__job_ranks"]))),
            int(templar.template(trust_as_template(facts["canary_validation__recovery_rank_shift"]))))


@pytest.mark.parametrize("role_vars, clients, named", [
    ({"canary_validation_shape": "torch_dcp"}, 2, True),
    ({"canary_validation_shape": "megatron"}, 2, True),
    ({"canary_validation_shape": "torch_dcp"}, 1, False),
    ({"canary_validation_shape": "torch_dcp", "canary_validation_local_path": "/var/tmp/burst"}, 2, False),
    ({"canary_validation_shape": "file_per_rank"}, 2, False),
    ({"canary_validation_shape": "mlperf_llama3_8b", "canary_validation_restore": True, "canary_validation_recovery_rank_shift": 4}, 2, True),
    ({"canary_validation_shape": "mlperf_llama3_8b", "canary_validation_restore": True, "canary_validation_recovery_rank_shift": 0}, 2, False),
])
def test_the_role_names_a_job_when_the_canary_needs_one(role_vars, clients, named):
    job_id, job_ranks, shift = _render(clients, **dict({"canary_validation_recovery_rank_shift": 4}, **role_vars))
    assert job_id == ("20261203T0300-torch-dcp" if named else "")
    assert job_ranks == clients * 4
    # The role's default shift is its ranks; the canary refuses a shift without restore (lab run 2026-12-03 03:50:
    # torch_dcp's job got recovery_rank_shift 4 and every client refused): only MLPerf's read-back passes it.
    assert shift == (4 if named and role_vars.get("canary_validation_restore") else 0)
