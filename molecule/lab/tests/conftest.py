"""Expected values for the lab's verify: the roles' checkpoint profiles with the lab's
group_vars over them, read from the repository so the tests follow the profiles."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
import yaml

REPO = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).resolve().parents[3]))


def _load(relative: str) -> dict:
    return yaml.safe_load((REPO / relative).read_text()) or {}


def _profile(side: str, name: str) -> dict:
    """A role's profile from its one source, plugins/module_utils/config/profiles.py (no other import)."""
    spec = importlib.util.spec_from_file_location("ckptio_profiles", REPO / "plugins/module_utils/config/profiles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.profile(name, side)


@pytest.fixture(scope="session")
def client_expected() -> dict:
    group = _load("inventories/lab/group_vars/nfs_clients.yml")
    profile = _profile("client", group.get("client_tuning_profile", "checkpoint"))
    sunrpc = {**profile["sunrpc"], **group.get("client_tuning_sunrpc", {})}
    mount_options = {**profile["mount_options"], **group.get("client_tuning_mount_options", {})}
    return {"sunrpc": sunrpc, "mount_options": mount_options, "mounts": group["client_tuning_mounts"]}


@pytest.fixture(scope="session")
def server_expected() -> dict:
    group = _load("inventories/lab/group_vars/nfs_servers.yml")
    profile = _profile("server", group.get("server_tuning_profile", "checkpoint"))
    threads = group.get("server_tuning_threads")
    return {"threads": threads if threads is not None else profile["threads"]}
