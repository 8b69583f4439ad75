"""The tuning profiles have one source: the roles' vars files read it, the diagnosis recommends from it."""
from __future__ import annotations

import glob
import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.plugin_utils.tuning_profile import STEPS
from ansible_collections.ckptio.nfs.plugins.module_utils.config import profiles

ROLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "roles")
TUNING_PROFILE = STEPS["tuning_profile"]


def test_every_role_profile_file_reads_the_one_source():
    files = sorted(glob.glob(os.path.join(ROLES, "*_tuning", "vars", "profile_*.yml")))
    assert len(files) == 4
    for path in files:
        side = os.path.basename(os.path.dirname(os.path.dirname(path))).split("_")[0]
        name = os.path.basename(path)[len("profile_"):-len(".yml")]
        with open(path) as handle:
            data = yaml.safe_load(handle)
        assert data == {"__%s_tuning_profile_data" % side: "{{ '%s' | ckptio.nfs.internal('tuning_profile', '%s') }}" % (name, side)}
        assert TUNING_PROFILE(name, side) == profiles.PROFILES[side][name]


def test_the_checkpoint_profile_values_the_diagnosis_recommends():
    assert profiles.recommended("client", "sunrpc", "nfs_max_session_slots") == 160
    assert profiles.recommended("server", "threads") == 64
    assert profiles.recommended("client", "mount_options", "nconnect") == 4


def test_a_copy_each_time_and_unknown_names_refused():
    first = TUNING_PROFILE("checkpoint", "client")
    first["sunrpc"]["nfs_max_session_slots"] = 2
    assert profiles.recommended("client", "sunrpc", "nfs_max_session_slots") == 160
    with pytest.raises(AnsibleFilterError, match="profile must be one of checkpoint, distro_default, got 'fast'"):
        TUNING_PROFILE("fast", "client")
    with pytest.raises(AnsibleFilterError, match="side must be one of client, server"):
        TUNING_PROFILE("checkpoint", "nas")
