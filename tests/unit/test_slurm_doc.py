"""docs/slurm.md (issue 29) names only what the roles really have: the capture's marker variables
and the marker path the other docs use, the client_tuning hook files and variables."""
from __future__ import annotations

import os
import re

import yaml

from ansible_collections.ckptio.nfs.tests.unit.test_safety_bad_input import COLLECTION


def read(*parts):
    with open(os.path.join(COLLECTION, *parts)) as handle:
        return handle.read()


def role_options(role):
    spec = yaml.safe_load(read("roles", role, "meta", "argument_specs.yml"))["argument_specs"]
    return set().union(*(set(entry.get("options", {})) for entry in spec.values()))


def role_defaults(role):
    return yaml.safe_load(read("roles", role, "defaults", "main.yml"))


DOC = read("docs", "slurm.md")


def test_every_capture_and_tuning_variable_the_doc_names_exists_in_its_role():
    for role, prefix in (("checkpoint_capture", "checkpoint_capture_"), ("client_tuning", "client_tuning_")):
        named = set(re.findall(r"\b%s[a-z_]+\b" % prefix, DOC))
        assert named, prefix
        assert named <= role_options(role) | set(role_defaults(role)), named - role_options(role)


def test_the_marker_path_is_one_path_the_capture_docs_and_readme_use_too():
    marker = "/dev/shm/ckpt-done"
    in_doc = set(re.findall(r"/dev/shm/[\w.-]+", DOC))
    assert in_doc == {marker}
    assert marker in read("docs", "capture-bundle.md") and marker in read("README.md")
    # The capture's marker option: no default path (the job chooses it), bounded by max_seconds.
    defaults = role_defaults("checkpoint_capture")
    assert defaults["checkpoint_capture_marker"] == "" and defaults["checkpoint_capture_max_seconds"] > 0
    assert "-e checkpoint_capture_marker=%s" % marker in DOC


def test_every_snippet_marks_the_end_on_every_node_once_per_node():
    # One process per node (SLURM_LOCALID 0, or srun --ntasks-per-node=1) touches the marker.
    blocks = re.findall(r"```(\w+)\n(.*?)```", DOC, re.S)
    touching = [body for _lang, body in blocks if "touch" in body]
    assert len(touching) >= 4
    for body in touching:
        assert "SLURM_LOCALID" in body or "--ntasks-per-node=1" in body, body


def test_the_hook_files_the_doc_names_exist():
    for name in re.findall(r"tasks/(slurm_\w+\.yml)", DOC):
        assert os.path.isfile(os.path.join(COLLECTION, "roles", "client_tuning", "tasks", name)), name


def test_every_canary_launch_variable_the_doc_and_readme_name_exists_in_the_role():
    for text in (DOC, read("README.md")):
        named = set(re.findall(r"\bcanary_validation_slurm_[a-z_]+\b", text)) | set(re.findall(r"\bcanary_validation_launcher\b", text))
        assert "canary_validation_launcher" in named
        assert named <= role_options("canary_validation") & set(role_defaults("canary_validation")), named
