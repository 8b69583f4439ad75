"""Expected values for the lab's verify: the roles' checkpoint profiles with the lab's
group_vars over them, read from the repository so the tests follow the profiles."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

REPO = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).resolve().parents[3]))


def _load(relative: str) -> dict:
    data = yaml.safe_load((REPO / relative).read_text()) or {}
    # A role's profile file may wrap its values in one internal variable (__<role>_profile_data).
    if len(data) == 1 and next(iter(data)).startswith("__"):
        data = next(iter(data.values()))
    return data


@pytest.fixture(scope="session")
def client_expected() -> dict:
    group = _load("inventories/lab/group_vars/nfs_clients.yml")
    profile = _load(f"roles/client_tuning/vars/profile_{group.get('client_tuning_profile', 'checkpoint')}.yml")
    sunrpc = {**profile["sunrpc"], **group.get("client_tuning_sunrpc", {})}
    mount_options = {**profile["mount_options"], **group.get("client_tuning_mount_options", {})}
    return {"sunrpc": sunrpc, "mount_options": mount_options, "mounts": group["client_tuning_mounts"]}


@pytest.fixture(scope="session")
def server_expected() -> dict:
    group = _load("inventories/lab/group_vars/nfs_servers.yml")
    profile = _load(f"roles/server_tuning/vars/profile_{group.get('server_tuning_profile', 'checkpoint')}.yml")
    threads = group.get("server_tuning_threads")
    return {"threads": threads if threads is not None else profile["threads"]}
