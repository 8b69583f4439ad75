"""ckptio.nfs.hosts_with: the hosts of a list that have, or lack, some variables (dotted = a key inside one)."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.filter.internal import STEPS as CHECKED

HOSTS_WITH = CHECKED["hosts_with"]
HOSTVARS = {
    "c1": {"ckptio_checkpoint_mount": "/mnt/c", "job": {"ansible_job_id": "1"}},
    "c2": {"job": {"skipped": True}, "record": None},
    "c3": {"canary_validation_mount_point": "/mnt/d", "record": {"start": 1.0}},
}


def test_defined_undefined_and_dotted_names_keep_the_hosts_order():
    hosts = ["c3", "c2", "nowhere", "c1"]
    assert HOSTS_WITH(hosts, HOSTVARS, undefined=["canary_validation_mount_point", "ckptio_checkpoint_mount"]) == ["c2"]
    # a variable set to null is defined, as Jinja's `defined` test says
    assert HOSTS_WITH(hosts, HOSTVARS, defined="record") == ["c3", "c2"]
    assert HOSTS_WITH(hosts, HOSTVARS, defined=["job.ansible_job_id"]) == ["c1"]
    assert HOSTS_WITH(hosts, HOSTVARS) == ["c3", "c2", "c1"]
    assert HOSTS_WITH(None, HOSTVARS) == []


@pytest.mark.parametrize("args, kwargs, message", [
    ((["c1"], []), {}, "step 'hosts_with': argument 'hostvars' is of type .*list"),
    ((["c1"], HOSTVARS), {"defined": [""]}, "defined must be variable names"),
    ((["c1"], HOSTVARS), {"undefined": [3]}, "undefined must be variable names"),
])
def test_bad_input_is_refused_naming_it(args, kwargs, message):
    with pytest.raises(AnsibleFilterError, match=message):
        HOSTS_WITH(*args, **kwargs)


HOST_VALUES = CHECKED["host_values"]


def test_host_values_in_the_hosts_order_skipping_or_defaulting_the_absent():
    hosts = ["c3", "c2", "nowhere", "c1"]
    # without a default, a host without the value (or unknown to hostvars) gives nothing
    assert HOST_VALUES(hosts, HOSTVARS, "record") == [{"start": 1.0}, None]
    assert HOST_VALUES(hosts, HOSTVARS, "record.start") == [1.0]
    # with one (null included), every host gives one value: the lists stay aligned with the hosts
    assert HOST_VALUES(hosts, HOSTVARS, "record.start", default=None) == [1.0, None, None, None]
    assert HOST_VALUES(hosts, HOSTVARS, "job", default={}) == [{}, {"skipped": True}, {}, {"ansible_job_id": "1"}]
    assert HOST_VALUES(None, HOSTVARS, "job") == []


@pytest.mark.parametrize("args, message", [
    ((["c1"], [], "job"), "step 'host_values': argument 'hostvars' is of type .*list"),
    ((["c1"], HOSTVARS, ""), "path must be a variable name"),
    ((["c1"], HOSTVARS, None), "path must be a variable name"),
])
def test_host_values_refuses_bad_input_naming_it(args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        HOST_VALUES(*args)
