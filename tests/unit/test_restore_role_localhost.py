"""The canary_validation restore (read-back) flow, run for real by ansible-playbook on localhost.

Two clients, both this host (connection local), the role's own tasks/clients.yml with
canary_validation_restore=true on a local directory (allow_local). Client c2's Python runs under
`ulimit -f` (RLIMIT_FSIZE, 2 MiB): Python ignores SIGXFSZ, so its ranks' writes fail with
EFBIG after go. The test proves the read barrier: c2's canary says in written.json that it will
not read, so the controller's one wait for it ends at once (the run takes far less than the read
wait bound); read_go.json is written for c1 only, abort.json for c2; c1 reads back and verifies
every block at the one read go; canary.json carries the read go plan (read_barrier).
"""
from __future__ import annotations

import json
import re
import sys
import time

from ansible_collections.ckptio.nfs.tests.unit.utils import BUNDLE_PLAY, run_playbook

DRIVER = BUNDLE_PLAY + """
- hosts: nfs_clients
  gather_facts: false
  tasks:
    - ansible.builtin.include_role: {{name: ckptio.nfs.canary_validation, tasks_from: clients}}
"""

INVENTORY = """
all:
  vars:
    ansible_connection: local
  children:
    nfs_clients:
      hosts:
        c1: {{ansible_python_interpreter: {python}}}
        c2: {{ansible_python_interpreter: {limited}}}
"""

LIMITED_PYTHON = """#!/bin/sh
# RLIMIT_FSIZE in 512-byte blocks: 2 MiB (room for Ansible's module payload), so a rank's 4 MiB fail with EFBIG.
ulimit -f 4096
exec {python} "$@"
"""


def _tasks(output):
    """{task name: [{host: result}]} from the default callback at -v (one JSON result per host line)."""
    tasks = {}
    current = None
    for line in output.splitlines():
        header = re.match(r"^TASK \[(?:[\w.]+ : )?(.*)\] \**$", line)
        if header:
            current = tasks.setdefault(header.group(1), [])
            current.append({})
            continue
        result = re.match(r"^(ok|changed|skipping|fatal|failed): \[(\w+)\](?: => (\{.*\}))?$", line)
        if result and current is not None:
            current[-1][result.group(2)] = dict(json.loads(result.group(3) or "{}"), status=result.group(1))
    return tasks


def _written(results, name):
    """The hosts whose copy to a file called `name` ran (not skipped)."""
    return sorted(host for result in results for host, item in result.items()
                  if item["status"] != "skipping" and str(item.get("dest", "")).endswith("/" + name))


def test_read_go_goes_only_to_the_client_that_wrote_and_a_failed_write_does_not_hold_the_wait(tmp_path):
    bundle = tmp_path / "bundle"
    data = tmp_path / "data"
    data.mkdir()
    limited = tmp_path / "limited-python"
    limited.write_text(LIMITED_PYTHON.format(python=sys.executable))
    limited.chmod(0o755)
    extra = {"canary_validation_path": str(data), "canary_validation_mount_point": str(data),
             "canary_validation_allow_local": True, "canary_validation_collect_stats": False,
             "canary_validation_ranks": 2, "canary_validation_bytes_per_rank": 4 * 1048576, "canary_validation_block_size": 1048576,
             "canary_validation_restore": True, "canary_validation_restore_cache": "fadvise",
             "canary_validation_barrier_dir": str(tmp_path), "canary_validation_clock_samples": 2,
             # The read wait's bound is timeout + 2 x kill_grace + 30 s after go = 690 s here.
             "canary_validation_timeout": 600, "canary_validation_kill_grace": 30}
    began = time.monotonic()
    run = run_playbook(tmp_path, DRIVER.format(bundle=bundle, clients="[c1, c2]"),
                       INVENTORY.format(python=sys.executable, limited=limited), ["-v", "-e", json.dumps(extra)],
                       timeout=600, json_results=True)
    took = time.monotonic() - began
    output = run.stdout + run.stderr
    assert run.returncode == 0, output  # clients.yml saves a failed canary's evidence; report.yml fails the run
    # Nobody sat out the read wait for c2 (690 s): its written.json said read_ready false.
    assert took < 300, output

    tasks = _tasks(run.stdout)
    go_writes = tasks["Write go.json on every ready host (go on that host's own clock)"]
    assert _written(go_writes, "go.json") == ["c1", "c2"]
    assert _written(go_writes, "read_go.json") == ["c1"]
    abort_writes = tasks["Write abort.json"]
    assert _written(abort_writes, "abort.json") == ["c2"]

    good = json.loads((bundle / "clients" / "c1" / "canary.json").read_text())
    bad = json.loads((bundle / "clients" / "c2" / "canary.json").read_text())
    plan = good["read_barrier"]
    assert plan == dict(bad["read_barrier"], go=plan["go"], abort=None)
    assert plan["not_ready"] == ["c2"] and plan["go"]["go_controller"] == plan["go_at"]
    assert plan["fanout_seconds"] == good["barrier"]["fanout_seconds"]
    assert plan["go_at"] > good["barrier"]["go_at"]
    assert bad["read_barrier"]["go"] is None and "writes failed" in bad["read_barrier"]["abort"]["abort"]
    # c1 read at the read go and verified every block; c2 never waited for one.
    assert good["barrier"]["host"]["read"]["signal"] == "go"
    restore = good["summary"]["restore"]
    assert restore["finished_ranks"] == 2 and restore["verify_error_count"] == 0 and restore["skipped"] is None
    assert restore["total_bytes"] == 2 * 4 * 1048576 and restore["restore_cache"] == "fadvise"
    assert all(r["read_start"] >= r["end"] for r in good["ranks"])
    assert good["restore"]["restore_cache"] == "fadvise" and "POSIX_FADV_DONTNEED" in good["restore"]["guarantee"]
    assert "read" not in (bad["barrier"]["host"] or {})
    assert bad["summary"]["restore"]["skipped"].startswith("not run: the write phase failed")
    assert "EFBIG" in bad["msg"] or "File too large" in bad["msg"], bad["msg"]
