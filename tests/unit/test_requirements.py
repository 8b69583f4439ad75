"""requirements.txt declares every third-party package the collection's Python imports.

Controllers and execution environments (meta/execution-environment.yml) install exactly that
file; an import it misses works on a developer's venv and fails for a user.
"""
from __future__ import annotations

import ast
import os
import re
import sys

import pytest

COLLECTION = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
# Import names whose distribution on PyPI is named differently.
DISTRIBUTION = {"yaml": "pyyaml"}
# ansible-core provides these; requires_ansible in meta/runtime.yml says which releases.
PROVIDED = {"ansible", "ansible_collections"}


def third_party_imports():
    found = {}
    for directory, _dirs, files in os.walk(os.path.join(COLLECTION, "plugins")):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            with open(path) as handle:
                tree = ast.parse(handle.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in PROVIDED and top != "__future__":
                        found.setdefault(top, set()).add(os.path.relpath(path, COLLECTION))
    return found


def declared():
    names = set()
    with open(os.path.join(COLLECTION, "requirements.txt")) as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if line:
                names.add(re.split(r"[\s<>=!~;\[]", line, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def test_the_scan_sees_the_imports_we_know_of():
    # If this fails the scan is broken, not the requirements.
    imports = third_party_imports()
    assert "plugins/module_utils/report/report_figure.py" in imports["matplotlib"]
    assert "yaml" in imports


@pytest.mark.parametrize("module", sorted(third_party_imports()))
def test_every_third_party_import_under_plugins_is_in_requirements_txt(module):
    assert DISTRIBUTION.get(module, module).lower() in declared(), (
        "%s (imported by %s) is missing from requirements.txt" % (module, ", ".join(sorted(third_party_imports()[module]))))
