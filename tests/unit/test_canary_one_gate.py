"""checkpoint_canary has nfs_mount's shape (issue 46, "Done when": one check-mode gate, in main()).

- Among the canary's files (the module, module_utils/canary/, module_utils/host/canary/ and the
  barrier files it writes through), `check_mode` is named in one place only: checkpoint_canary.main(),
  once. No helper decides check mode again, and no function takes it as a parameter.
- A refusal is a value, not an exception carrying a partial result: no canary file raises one.
- The run hands main() a frozen outcome (canary/outcome.Outcome and its phases), not a dict it filled.
"""
from __future__ import annotations

import ast
import dataclasses
import glob
import os

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import outcome

HERE = os.path.dirname(os.path.abspath(__file__))
COLLECTION = os.path.normpath(os.path.join(HERE, "..", ".."))
MODULE = os.path.join("plugins", "modules", "checkpoint_canary.py")


def _canary_files():
    found = [MODULE, os.path.join("plugins", "module_utils", "host", "barrier_files.py")]
    for folder in (("canary",), ("host", "canary")):
        found += glob.glob(os.path.join(COLLECTION, "plugins", "module_utils", *folder, "*.py"))
    return sorted(os.path.relpath(os.path.join(COLLECTION, path), COLLECTION) for path in found)


def _tree(relative):
    with open(os.path.join(COLLECTION, relative)) as handle:
        return ast.parse(handle.read(), relative)


def _check_mode_uses(tree):
    """(line, enclosing top-level function or None) of every `.check_mode`, `check_mode` name or parameter."""
    uses = []
    for top in tree.body:
        owner = top.name if isinstance(top, (ast.FunctionDef, ast.ClassDef)) else None
        for node in ast.walk(top):
            named = (isinstance(node, ast.Attribute) and node.attr == "check_mode") or \
                (isinstance(node, ast.Name) and node.id == "check_mode") or \
                (isinstance(node, ast.arg) and node.arg == "check_mode") or \
                (isinstance(node, ast.keyword) and node.arg == "check_mode")
            if named:
                uses.append((node.lineno, owner))
    return uses


def test_the_canary_files_are_found():
    files = _canary_files()
    assert MODULE in files
    assert any(path.endswith(os.path.join("host", "canary", "run.py")) for path in files)
    assert any(path.endswith(os.path.join("module_utils", "canary", "outcome.py")) for path in files)


def test_check_mode_is_read_once_and_only_in_main():
    where = {}
    for path in _canary_files():
        for line, owner in _check_mode_uses(_tree(path)):
            where.setdefault("%s:%s" % (path, owner), []).append(line)
    assert list(where) == ["%s:main" % MODULE], where
    assert len(where["%s:main" % MODULE]) == 1, where


def test_no_canary_file_raises_a_refusal_carrying_a_result():
    raised = []
    for path in _canary_files():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                name = getattr(node.exc.func, "id", getattr(node.exc.func, "attr", ""))
                if name == "Refused":
                    raised.append("%s:%d" % (path, node.lineno))
    assert raised == []


def test_the_run_returns_a_frozen_outcome_of_frozen_phases():
    for kind in (outcome.Outcome, outcome.Phase, outcome.Refusal):
        assert dataclasses.is_dataclass(kind) and kind.__dataclass_params__.frozen, kind
