"""An installed collection has no checkout paths (issue 45, messages and promises): what roles/ and plugins/ tell a
user (role READMEs, ansible-doc of modules and internal steps, comments) names a playbook as an installed user runs it,
`ckptio.nfs.tune_clients`, never `playbooks/tune-clients.yml` (build_ignore leaves the hyphenated names out of the
tarball, and `ansible-playbook playbooks/...` only works from a checkout)."""
from __future__ import annotations

import os
import re

import pytest
import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECKOUT_PATH = re.compile(r"playbooks/[A-Za-z0-9_.-]+\.ya?ml")


def _checkout_only():
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        ignored = yaml.safe_load(handle)["build_ignore"]
    return [os.path.basename(item) for item in ignored if item.startswith("playbooks/")]


def installed_files():
    """Every file under roles/ and plugins/ (galaxy.yml's build_ignore leaves none of them out), bytecode aside."""
    found = []
    for top in ("roles", "plugins"):
        for directory, names, files in os.walk(os.path.join(ROOT, top)):
            names[:] = sorted(name for name in names if name != "__pycache__")
            found.extend(os.path.relpath(os.path.join(directory, name), ROOT) for name in sorted(files)
                         if not name.endswith((".pyc", ".pyo")))
    return found


def test_the_checkout_only_names_are_known():
    assert "tune-clients.yml" in _checkout_only() and len(installed_files()) > 100


@pytest.mark.parametrize("path", installed_files())
def test_no_installed_file_names_a_checkout_playbook_path(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as handle:
        text = handle.read()
    found = CHECKOUT_PATH.findall(text) + [name for name in _checkout_only() if name in text]
    assert not found, "%s names %s: name the playbook as installed users run it (ckptio.nfs.<name>)" % (path, found)
