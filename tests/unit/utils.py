"""Drive a module through its real main() and capture the result dict.

Modules call exit_json/fail_json, which print and sys.exit; tests want the dict instead. We
patch both to raise, so `run_module(mod, args)` returns the exit dict and `fail_module` returns
the failure dict (and a test fails if the other one happens).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
import sys

from unittest import mock

import pytest

from ansible.module_utils import basic

# One harness for every supported ansible-core (meta/runtime.yml requires_ansible; the compat
# stage of scripts/test.sh runs these tests on the oldest). 2.19 added patch_module_args and data
# tagging (a string is a template only when trusted); older releases read module arguments from
# basic._ANSIBLE_ARGS and template every string, and evaluate `when` with playbook.Conditional.
try:
    from ansible.module_utils.testing import patch_module_args  # pylint: disable=unused-import
except ImportError:  # ansible-core < 2.19
    @contextlib.contextmanager
    def patch_module_args(args=None):
        """Expose args to AnsibleModule instances created within this context (as 2.19's does)."""
        if not isinstance(args, (dict, type(None))):
            raise TypeError("The `args` arg must be a dict or None.")
        payload = json.dumps({"ANSIBLE_MODULE_ARGS": args or {}}).encode()
        with mock.patch.object(basic, "_ANSIBLE_ARGS", payload):
            yield

try:
    from ansible.template import Templar, trust_as_template  # pylint: disable=unused-import
except ImportError:  # ansible-core < 2.19
    from ansible.playbook.conditional import Conditional
    from ansible.template import Templar as _Templar

    def trust_as_template(value):
        """Before data tagging every string is a template: nothing to mark."""
        return value

    # What VariableManager gives a play as `omit`; the task executor then drops the arguments
    # that rendered to it (2.19's Templar drops them from dicts and lists itself).
    _OMIT = "__omit_place_holder__ckptio_unit"

    def _drop_omitted(value):
        if isinstance(value, dict):
            return dict((key, _drop_omitted(item)) for key, item in value.items() if item != _OMIT)
        if isinstance(value, list):
            return [_drop_omitted(item) for item in value if item != _OMIT]
        return value

    class Templar(_Templar):
        """The old Templar with 2.19's `omit` handling and evaluate_conditional (done as `when` was)."""

        def __init__(self, loader, variables=None, **kwargs):
            variables = dict(variables or {})
            variables.setdefault("omit", _OMIT)
            super(Templar, self).__init__(loader=loader, variables=variables, **kwargs)

        def template(self, variable, *args, **kwargs):
            return _drop_omitted(super(Templar, self).template(variable, *args, **kwargs))

        def evaluate_conditional(self, conditional):
            check = Conditional(loader=self._loader)
            check.when = [conditional]
            return check.evaluate_conditional(self, self.available_variables)


class AnsibleExitJson(Exception):
    """Raised in place of a module's exit_json."""


class AnsibleFailJson(Exception):
    """Raised in place of a module's fail_json."""


def _exit_json(self, **kwargs):
    kwargs.setdefault("changed", False)
    raise AnsibleExitJson(kwargs)


def _fail_json(self, **kwargs):
    kwargs["failed"] = True
    raise AnsibleFailJson(kwargs)


def _invoke(module, args, check_mode=False, diff=False):
    """Run main(); the raised result carries the module's warnings under `warnings`.

    ansible-core 2.19 collects module.warn() messages in process-global state that other tests
    also touch, so each run records its own list here (and still calls whatever warn was set).
    """
    args = dict(args)
    if check_mode:
        args["_ansible_check_mode"] = True
    if diff:
        args["_ansible_diff"] = True
    collected = []
    previous_warn = basic.AnsibleModule.warn

    def warn(self, warning):
        collected.append(warning)
        previous_warn(self, warning)

    def exit_json(self, **kwargs):
        kwargs.setdefault("warnings", collected)
        _exit_json(self, **kwargs)

    def fail_json(self, **kwargs):
        kwargs.setdefault("warnings", collected)
        _fail_json(self, **kwargs)

    with patch_module_args(args), \
            mock.patch.object(basic.AnsibleModule, "warn", warn), \
            mock.patch.object(basic.AnsibleModule, "exit_json", exit_json), \
            mock.patch.object(basic.AnsibleModule, "fail_json", fail_json):
        module.main()


def run_module(module, args, check_mode=False, diff=False):
    """Run module.main() with args; return the exit_json dict (fail the test on fail_json)."""
    try:
        _invoke(module, args, check_mode=check_mode, diff=diff)
    except AnsibleExitJson as exc:
        return exc.args[0]
    except AnsibleFailJson as exc:
        pytest.fail("module failed: %r" % (exc.args[0],))
    pytest.fail("module returned without exit_json")


def fail_module(module, args, check_mode=False, diff=False):
    """Run module.main() with args; return the fail_json dict (fail the test on success)."""
    try:
        _invoke(module, args, check_mode=check_mode, diff=diff)
    except AnsibleFailJson as exc:
        return exc.args[0]
    except AnsibleExitJson as exc:
        pytest.fail("module succeeded but should have failed: %r" % (exc.args[0],))
    pytest.fail("module returned without fail_json")


def tree_checksums(root):
    """Map every file and symlink under root to its sha256 (or link target) and mode.

    Used to prove that check mode and rejected input leave a fake /etc, /proc, /sys untouched.
    """
    result = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            st = os.lstat(full)
            if os.path.islink(full):
                result[rel] = ("link", os.readlink(full))
            elif os.path.isfile(full):
                with open(full, "rb") as handle:
                    result[rel] = ("file", st.st_mode, hashlib.sha256(handle.read()).hexdigest())
            else:
                result[rel] = ("dir", st.st_mode)
    return result


SAMPLES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "samples")


def sample_path(*parts):
    """Path of a real capture from the lab, shipped in tests/fixtures/samples."""
    return os.path.normpath(os.path.join(SAMPLES, *parts))


def read_sample(*parts):
    with open(sample_path(*parts)) as handle:
        return handle.read()


def broken_capture(name):
    """Bytes of a broken capture in tests/fixtures/samples/broken (NOTES.txt says how each was made).

    Files named *.escaped.txt hold bytes that are not UTF-8 written as \\xHH (ansible-test sanity
    reads every file as UTF-8); they are turned back into those bytes here.
    """
    with open(sample_path("broken", name), "rb") as handle:
        data = handle.read()
    if name.endswith(".escaped.txt"):
        data = re.sub(rb"\\x([0-9a-f]{2})", lambda match: bytes([int(match.group(1), 16)]), data)
    return data


# --- real ansible-playbook runs against localhost (role tests that need Ansible's own executor) ---

# The collection tree the tests run from (the staged copy under .../ansible_collections/ckptio/nfs).
COLLECTIONS_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")

# The first play of a driver that runs canary_validation's client tasks: the bundle directory
# the controller's prepare.yml would have named, and a clients/<host> directory per client.
# A str.format template: {bundle}, and the client names as {clients} (a YAML flow list).
BUNDLE_PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.set_fact:
        canary_validation__bundle: "{bundle}"
    - ansible.builtin.file:
        path: "{bundle}/clients/{{{{ item }}}}"
        state: directory
        mode: "0755"
      loop: {clients}
"""


def run_playbook(tmp_path, driver, inventory, arguments=(), timeout=300, json_results=False):
    """ansible-playbook on driver (text) with inventory (text) from tmp_path, this collection on the
    collections path and every temporary directory inside tmp_path. json_results: the default
    callback prints each result as one JSON line (for tests that read results off the output)."""
    (tmp_path / "driver.yml").write_text(driver)
    (tmp_path / "hosts.yml").write_text(inventory)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT, ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
               ANSIBLE_REMOTE_TEMP=str(tmp_path / "ansible-remote-tmp"), ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0")
    if json_results:
        env.update(ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", ANSIBLE_CALLBACK_RESULT_FORMAT="json",
                   ANSIBLE_CALLBACK_FORMAT_PRETTY="0")
    return subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "driver.yml")] + list(arguments),
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=timeout, check=False)
