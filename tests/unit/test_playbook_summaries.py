"""The playbooks' summaries (audit.yml's drift table, the rolling playbooks' summary and budget), run for real.

The verdicts come from the steps in plugins/plugin_utils/rollout.py (tests/unit/plugins/filter/test_rollout.py);
here the real template renders them and the real playbooks run with ansible-playbook against
hosts that do not answer (ssh to a closed port on 127.0.0.1 is refused at once), so no managed
host is touched and the roles never start.
"""
from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys

import pytest

from ansible_collections.ckptio.nfs.plugins.plugin_utils import rollout
from ansible_collections.ckptio.nfs.tests.unit.test_safety_states_fstab import collection_root

COLLECTION = os.path.join(collection_root(), "ansible_collections", "ckptio", "nfs")
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
GHOSTS = ("nfs_clients:\n  hosts:\n"
          "    ghost1: {ansible_host: 127.0.0.1, ansible_port: 1, ansible_connection: ssh}\n"
          "    ghost2: {ansible_host: 127.0.0.1, ansible_port: 1, ansible_connection: ssh}\n")


def run_playbook(tmp_path, playbook, *extra, inventory="localhost,"):
    if not os.path.exists(ANSIBLE_PLAYBOOK):
        pytest.skip("ansible-playbook is not next to this python")
    environment = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collection_root(), ANSIBLE_NOCOLOR="1",
                       ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0", ANSIBLE_HOST_KEY_CHECKING="0",
                       ANSIBLE_TIMEOUT="5", ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
                       ANSIBLE_HOME=str(tmp_path / "ansible-home"))
    argv = [ANSIBLE_PLAYBOOK, "-i", inventory, playbook] + list(extra)
    return subprocess.run(argv, env=environment, capture_output=True, text=True, timeout=300, cwd=str(tmp_path), check=False)


def render_markdown(tmp_path, summary):
    """playbooks/templates/audit.md.j2 rendered by ansible.builtin.template, as audit.yml renders it."""
    (tmp_path / "audit.json").write_text(json.dumps({"ckptio_audit": summary}))
    playbook = tmp_path / "render.yml"
    playbook.write_text(
        "- hosts: localhost\n  connection: local\n  gather_facts: false\n"
        "  vars:\n    ansible_python_interpreter: \"{{ ansible_playbook_python }}\"\n"
        "  tasks:\n    - ansible.builtin.template:\n        src: %s\n        dest: %s\n        mode: \"0644\"\n"
        % (json.dumps(os.path.join(COLLECTION, "playbooks", "templates", "audit.md.j2")), json.dumps(str(tmp_path / "audit.md"))))
    done = run_playbook(tmp_path, str(playbook), "-e", "@%s" % (tmp_path / "audit.json"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return (tmp_path / "audit.md").read_text()


def markdown_rows(text):
    """{host: [(setting, persisted, live, in sync column)]} from the Markdown tables."""
    rows, name = {}, None
    for line in text.splitlines():
        heading = re.match(r"## (\S+) \(", line)
        if heading:
            name = heading.group(1)
        elif line.startswith("| ") and not line.startswith("| scope |"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            rows.setdefault(name, []).append((cells[1], cells[3], cells[4], cells[5]))
    return rows


def row(name, wanted, persisted, live, in_sync, scope="nfsd"):
    return {"scope": scope, "name": name, "wanted": wanted, "persisted": persisted, "live": live, "in_sync": in_sync}


def test_json_and_markdown_agree_on_every_kind_of_row(tmp_path):
    kinds = {"in-sync": row("threads", 64, 64, 64, True), "drift": row("threads", 64, 16, 16, False),
             "unknown-live": row("tcp_max_slot_table_entries", 128, 128, None, False, "sunrpc"),
             "unknown-live-drift": row("tcp_max_slot_table_entries", 128, 2, None, False, "sunrpc"),
             "pending": row("nconnect", 8, 8, 1, False, "mount /mnt/checkpoints")}
    # One host per kind, so each host's verdict is that row's.
    groups = [{"role": "client", "hosts": [
        {"name": kind, "report": {"profile": "checkpoint", "settings": [setting], "pending": [], "warnings": []}}
        for kind, setting in sorted(kinds.items())]}]
    summary = rollout.summarise_audit(groups, "20250101T000000Z")
    markdown = render_markdown(tmp_path, summary)
    table = markdown_rows(markdown)
    assert sorted(table) == sorted(kinds)
    for kind in kinds:
        json_rows = summary["hosts"][kind]["rows"]
        assert [column.startswith("yes") for _s, _p, _l, column in table[kind]] == [item["in_sync"] for item in json_rows], kind
        assert (kind in summary["drifting_hosts"]) is (not all(item["in_sync"] for item in json_rows))
    assert [kind for kind in sorted(kinds) if kind in summary["drifting_hosts"]] == ["drift", "pending", "unknown-live-drift"]
    assert "%d drifting setting(s) on 3 host(s)" % summary["drift_rows"] in markdown and summary["drift_rows"] == 3
    assert table["pending"] == [("nconnect", "8", "1", "**no** (persisted, not live yet)")]
    assert table["unknown-live"] == [("tcp_max_slot_table_entries", "128", "n/a (not loaded/mounted)", "yes")]
    assert "None" not in markdown


def test_markdown_at_64_hosts_groups_the_same_drift_and_counts_hosts_in_sync(tmp_path):
    in_sync, drift, other = row("threads", 64, 64, 64, True), row("threads", 64, 16, 16, False), row("nconnect", 8, 8, 1, False)
    hosts = [{"name": "gpu%03d" % index, "report": {"profile": "checkpoint", "settings": [
        drift if index % 16 == 0 else other if index == 63 else in_sync], "pending": [], "warnings": []}} for index in range(64)]
    hosts.append({"name": "gpu064", "failure": {"task": "Check that the host answers", "msg": "unreachable"}})
    summary = rollout.summarise_audit([{"role": "client", "hosts": hosts}], "20250101T000000Z")
    markdown = render_markdown(tmp_path, summary)
    assert "5 drifting setting(s) on 5 host(s);\n1 host(s) not audited." in markdown
    assert "## In sync\n\n- 59 client(s) in sync\n" in markdown
    assert "## Drift shared by 4 client(s), profile checkpoint\n\ngpu000, gpu016, gpu032, gpu048\n\n" \
           "| scope | setting | wanted | persisted | live | in sync |\n|---|---|---|---|---|---|\n" \
           "| nfsd | threads | 64 | 16 | 16 | **no** |\n" in markdown
    assert "## Drift shared by 1 client(s), profile checkpoint\n\ngpu063\n" in markdown
    assert "| nfsd | nconnect | 8 | 8 | 1 | **no** (persisted, not live yet) |" in markdown
    assert "## Not audited: 1 host(s)\n\n- 1 client(s) at task \"Check that the host answers\": unreachable\n" \
           "  gpu064\n" in markdown
    # No table per host, and no host in sync named.
    assert markdown_rows(markdown) == {None: [("threads", "16", "16", "**no**"), ("nconnect", "8", "1", "**no** (persisted, not live yet)")]}
    assert "gpu001" not in markdown and len(markdown) < 2000, markdown
    # The JSON keeps every host's rows.
    assert len(summary["hosts"]) == 65 and summary["hosts"]["gpu001"]["rows"][0]["in_sync"] is True


def test_markdown_at_64_hosts_lists_the_hosts_not_audited_in_one_section(tmp_path):
    # 64 clients unreachable, each ssh message naming the host's own address; one server failed.
    hosts = [{"name": "gpu%03d" % index, "address": "10.0.0.%d" % index,
              "failure": {"task": "Check that the host answers",
                          "msg": "unreachable: ssh: connect to host 10.0.0.%d port 22: Connection refused" % index}}
             for index in range(64)]
    servers = [{"name": "nfs1", "failure": {"task": "Set nfsd threads", "msg": "conf_file is a directory"}}]
    summary = rollout.summarise_audit([{"role": "client", "hosts": hosts}, {"role": "server", "hosts": servers}],
                                      "20250101T000000Z")
    markdown = render_markdown(tmp_path, summary)
    assert markdown.count("## ") == 1 and markdown.count("Not audited") == 1, markdown
    assert "## Not audited: 65 host(s)\n\n" \
           "- 64 client(s) at task \"Check that the host answers\": unreachable: ssh: connect to host <host> port 22: " \
           "Connection refused\n  %s\n" \
           "- 1 server(s) at task \"Set nfsd threads\": conf_file is a directory\n  nfs1\n" % (
               ", ".join("gpu%03d" % index for index in range(64))) in markdown, markdown
    assert "**Audit failed**: nothing was audited: none of the 65 targeted host(s)" in markdown


def audit(tmp_path, *extra):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(GHOSTS)
    reports = tmp_path / "reports"
    done = run_playbook(tmp_path, os.path.join(COLLECTION, "playbooks", "audit.yml"), "-e", "ckptio_servers=nobody",
                        "-e", "ckptio_report_dir=%s" % reports, *extra, inventory=str(inventory))
    found = sorted(glob.glob(str(reports / "audit-*.json")))
    result = None
    if found:
        with open(found[0]) as handle:
            result = json.load(handle)
    return done, result


def test_an_audit_of_unreachable_hosts_fails_and_lists_only_the_hosts_in_the_limit(tmp_path):
    # One run for both (each ansible-playbook run costs seconds): ghost2 is outside the limit.
    done, result = audit(tmp_path, "--limit", "ghost1,localhost")
    assert done.returncode != 0
    assert "nothing was audited: none of the 1 targeted host(s) answered and ran the audit (ghost1)" in done.stdout
    assert sorted(result["hosts"]) == ["ghost1"]
    assert result["unaudited_hosts"] == ["ghost1"] and result["audited_hosts"] == []
    assert not any("ghost2" in line for line in result["lines"])
    # The reports are written all the same, and say why.
    assert result["failure"].startswith("nothing was audited")
    assert result["hosts"]["ghost1"]["error"].startswith("Check that the host answers: unreachable:")
    assert glob.glob(str(tmp_path / "reports" / "audit-*.md"))


def test_a_limit_without_localhost_is_refused_before_anything_runs(tmp_path):
    done, result = audit(tmp_path, "--limit", "ghost1")
    assert done.returncode != 0
    assert "leaves out localhost, where the audit report is written" in done.stdout
    assert result is None
    assert "Check that the host answers" not in done.stdout


def test_rolling_tune_stops_after_a_failed_batch_and_says_who_was_not_attempted(tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(GHOSTS)
    reports = tmp_path / "reports"
    done = run_playbook(tmp_path, os.path.join(COLLECTION, "playbooks", "tune-clients.yml"), "-e", "ckptio_serial=1",
                        "-e", "ckptio_max_fail_percentage=0", "-e", "ckptio_report_dir=%s" % reports, inventory=str(inventory))
    assert done.returncode != 0
    assert "1 of 1 hosts of this batch failed, more than ckptio_max_fail_percentage=0 %: later batches are left untouched." \
        in done.stdout
    [path] = glob.glob(str(reports / "tune-clients-*.json"))
    with open(path) as handle:
        summary = json.load(handle)
    assert [summary["hosts"][name]["status"] for name in ("ghost1", "ghost2")] == ["unreachable", "not_attempted"]
    assert summary["problems"] == 2
    assert summary["lines"][0].startswith("ghost1: UNREACHABLE - Check that the host answers: unreachable: ")
    assert "2 of 2 hosts were not tuned" in done.stdout


def test_a_host_outside_the_limit_is_not_a_failure_of_the_rolling_tune(tmp_path):
    # The Slurm lab (slurm2, 2026-12-03): `--limit nfs2,localhost` tuned nfs2 correctly, yet nfs3 was
    # counted NOT_ATTEMPTED and the run failed "1 of 2 hosts were not tuned".
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(GHOSTS)
    reports = tmp_path / "reports"
    done = run_playbook(tmp_path, os.path.join(COLLECTION, "playbooks", "tune-clients.yml"), "--limit", "ghost1,localhost",
                        "-e", "ckptio_report_dir=%s" % reports, inventory=str(inventory))
    [path] = glob.glob(str(reports / "tune-clients-*.json"))
    with open(path) as handle:
        summary = json.load(handle)
    assert sorted(summary["hosts"]) == ["ghost1"] and summary["outside_run"] == ["ghost2"]
    assert summary["problems"] == 1
    assert "1 of 1 hosts were not tuned" in done.stdout
    assert "Not in this run (--limit): ghost2" in done.stdout
