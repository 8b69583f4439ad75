"""Known failures of the roles on ansible-core before 2.19, marked where they run (compat stage).

Before 2.19 a template that is not a bare variable renders to a string: `{{ x if c else none }}`
gives "" (not None) and `"{{ n | int }}"` in a task's YAML gives "5" (not 5). Two role tasks
depend on 2.19's native types. Each entry is a strict xfail: the test still runs and asserts
what it asserts; once the role is fixed the test passes, pytest reports XPASS as a failure, and
the entry must go. On 2.19 nothing is marked.
"""
from __future__ import annotations

import pytest

from ansible.release import __version__ as ANSIBLE_CORE_VERSION

OLD_CORE = tuple(int(part) for part in ANSIBLE_CORE_VERSION.split(".")[:2]) < (2, 19)

MIN_THREADS = ("roles/server_tuning/tasks/main.yml 'Compute the wanted thread counts': the folded "
               "`__server_tuning_min_threads: >- {{ ... }}` is '' for null before 2.19, so "
               "'Set nfsd threads' passes min_threads=0 and nfsd_threads refuses it")
PROBE_JSON = ("roles/canary_validation/tasks/probe_clients.yml 'Write this client's probe.json': the "
              "dict of templated values is rendered to strings before 2.19 (\"port\": \"5201\")")
KNOWN = {
    "tests/unit/test_safety_bad_input.py::test_role_walk_accepts_the_valid_base_input[server_tuning-main]": MIN_THREADS,
    "tests/unit/test_safety_check_mode.py::test_role_in_check_mode_changes_nothing[server_tuning-overrides3]": MIN_THREADS,
    "tests/unit/test_safety_check_mode.py::test_role_in_check_mode_changes_nothing[server_tuning-overrides4]": MIN_THREADS,
    "tests/unit/test_probe_role_localhost.py::"
    "test_a_failed_send_still_stops_the_listeners_and_fails_the_run_at_the_end": PROBE_JSON,
}


def pytest_collection_modifyitems(config, items):
    if not OLD_CORE:
        return
    for item in items:
        reason = KNOWN.get(item.nodeid)
        if reason:
            item.add_marker(pytest.mark.xfail(reason="ansible-core %s: %s" % (ANSIBLE_CORE_VERSION, reason), strict=True))
