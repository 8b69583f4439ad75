"""nfs_metrics_collector through its real main(): installs, is idempotent, changes nothing in check mode, removes only its own files."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest
from ansible.module_utils import basic

from ansible_collections.ckptio.nfs.plugins.module_utils.telemetry import install
from ansible_collections.ckptio.nfs.plugins.modules import nfs_metrics_collector
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module, tree_checksums


class FakeSystemd:
    """systemctl as the module sees it: is-enabled / is-active answered from state, other calls recorded."""

    def __init__(self):
        self.enabled = False
        self.active = False
        self.calls = []

    def run_command(self, argv, **_kwargs):
        verb = argv[1:]
        if verb[0] == "is-enabled":
            return (0 if self.enabled else 1), "", ""
        if verb[0] == "is-active":
            return (0 if self.active else 3), "", ""
        self.calls.append(verb)
        if verb[:2] == ["enable", "--now"]:
            self.enabled = self.active = True
        if verb[:2] == ["disable", "--now"]:
            self.enabled = self.active = False
        return 0, "", ""


@pytest.fixture(name="systemd")
def _systemd(monkeypatch):
    fake = FakeSystemd()
    monkeypatch.setattr(basic.AnsibleModule, "run_command", fake.run_command)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda _self, name, *args, **kwargs: "/bin/" + name)
    return fake


@pytest.fixture(name="places")
def _places(tmp_path):
    places = {"textfile_directory": tmp_path / "node-exporter", "install_directory": tmp_path / "lib" / "ckptio-nfs",
              "unit_directory": tmp_path / "systemd"}
    places["textfile_directory"].mkdir()
    places["unit_directory"].mkdir()
    return dict((name, str(path)) for name, path in places.items())


def test_install_then_again_changes_nothing(systemd, places):
    args = dict(places, mount_points=["/mnt/ckpt"], interval=15)
    first = run_module(nfs_metrics_collector, args)
    assert first["changed"] is True
    assert systemd.calls == [["daemon-reload"], ["enable", "--now", "ckptio-nfs-metrics.timer"]]
    timer = os.path.join(places["unit_directory"], "ckptio-nfs-metrics.timer")
    with open(timer, encoding="utf-8") as stream:
        assert "OnUnitActiveSec=15s" in stream.read()
    with open(os.path.join(places["unit_directory"], "ckptio-nfs-metrics.service"), encoding="utf-8") as stream:
        service = stream.read()
    assert "--textfile-directory %s --mount-point /mnt/ckpt" % places["textfile_directory"] in service
    systemd.calls.clear()
    second = run_module(nfs_metrics_collector, args)
    assert second["changed"] is False and systemd.calls == [] and second["changed_files"] == []


def test_the_installed_program_runs_and_writes_the_textfile(systemd, places, tmp_path):
    run_module(nfs_metrics_collector, places)
    program = os.path.join(places["install_directory"], install.PROGRAM)
    root = tmp_path / "root" / "proc" / "self"
    root.mkdir(parents=True)
    (root / "mountstats").write_text("device proc mounted on /proc with fstype proc\n", encoding="utf-8")
    # Without Ansible or the collection on the path: what the timer runs.
    result = subprocess.run([sys.executable, "-I", program, "--textfile-directory", places["textfile_directory"],
                             "--root", str(tmp_path / "root")], capture_output=True, text=True, check=False, timeout=60,
                            env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    with open(os.path.join(places["textfile_directory"], "ckptio_nfs.prom"), encoding="utf-8") as stream:
        assert 'ckptio_nfs_collector_source_up{source="mountstats"} 1' in stream.read()


def test_check_mode_changes_nothing_and_says_what_would(systemd, places, tmp_path):
    before = tree_checksums(str(tmp_path))
    result = run_module(nfs_metrics_collector, places, check_mode=True, diff=True)
    assert tree_checksums(str(tmp_path)) == before
    assert result["changed"] is True and systemd.calls == []
    assert len(result["changed_files"]) == 3
    assert "OnUnitActiveSec=15s" in result["diff"]["after"] and "sha256" in result["diff"]["after"]


def test_a_changed_interval_rewrites_the_timer_and_restarts_it(systemd, places):
    run_module(nfs_metrics_collector, places)
    systemd.calls.clear()
    result = run_module(nfs_metrics_collector, dict(places, interval=30))
    assert result["changed_files"] == [os.path.join(places["unit_directory"], "ckptio-nfs-metrics.timer")]
    assert ["restart", "ckptio-nfs-metrics.timer"] in systemd.calls


def test_absent_removes_only_its_own_files(systemd, places, tmp_path):
    run_module(nfs_metrics_collector, places)
    other = os.path.join(places["textfile_directory"], "other.prom")
    with open(other, "w", encoding="utf-8") as stream:
        stream.write("x 1\n")
    with open(os.path.join(places["textfile_directory"], "ckptio_nfs.prom"), "w", encoding="utf-8") as stream:
        stream.write("ckptio_nfs_collector_last_run_timestamp_seconds 1\n")
    systemd.calls.clear()
    result = run_module(nfs_metrics_collector, dict(places, state="absent"))
    assert result["changed"] is True
    assert systemd.calls == [["disable", "--now", "ckptio-nfs-metrics.timer"], ["daemon-reload"]]
    assert os.listdir(places["textfile_directory"]) == ["other.prom"]
    assert os.listdir(places["unit_directory"]) == []
    again = run_module(nfs_metrics_collector, dict(places, state="absent"))
    assert again["changed"] is False


def test_a_host_without_node_exporter_is_a_message_and_nothing_is_written(systemd, places, tmp_path):
    os.rmdir(places["textfile_directory"])
    before = tree_checksums(str(tmp_path))
    failed = fail_module(nfs_metrics_collector, places)
    assert failed["msg"].startswith("textfile_directory: ") and "node_exporter" in failed["msg"]
    assert tree_checksums(str(tmp_path)) == before and systemd.calls == []


@pytest.mark.parametrize("option, value", [("interval", 2), ("interval", 7200), ("mount_points", ["relative"])])
def test_wrong_options_are_named(systemd, places, option, value):
    failed = fail_module(nfs_metrics_collector, dict(places, **{option: value}))
    assert failed["msg"].startswith(option + ": ")


def test_a_link_at_a_unit_path_is_refused_not_followed(systemd, places, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep\n", encoding="utf-8")
    os.symlink(str(victim), os.path.join(places["unit_directory"], "ckptio-nfs-metrics.timer"))
    failed = fail_module(nfs_metrics_collector, places)
    assert "ckptio-nfs-metrics.timer" in failed["msg"]
    assert victim.read_text(encoding="utf-8") == "keep\n"


def test_systemd_quoting_keeps_a_mount_point_with_blanks_one_argument():
    assert install.systemd_quote("/mnt/my ckpt") == '"/mnt/my ckpt"'
    assert install.systemd_quote("/mnt/100%") == "/mnt/100%%"
    assert install.systemd_quote("/plain") == "/plain"


PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Install the collector through Ansible (AnsiballZ packs the module and what it imports)
      ckptio.nfs.nfs_metrics_collector:
        textfile_directory: {textfiles}
        install_directory: {lib}
        unit_directory: {units}
"""
LOCALHOST = """
all:
  hosts:
    localhost:
      ansible_connection: local
      ansible_python_interpreter: {python}
"""


def test_through_ansible_the_module_packs_the_program_it_installs(tmp_path):
    # A unit test imports the modules from the tree; only AnsiballZ shows what the module really ships (the zip's
    # __main__.py was missing from it: the module must import every file install.program_bytes() reads).
    from ansible_collections.ckptio.nfs.tests.unit.utils import run_playbook

    places = dict((name, tmp_path / name) for name in ("textfiles", "lib", "units"))
    places["textfiles"].mkdir()
    places["units"].mkdir()
    run = run_playbook(tmp_path, PLAYBOOK.format(**places), LOCALHOST.format(python=sys.executable), ["--check", "--diff"])
    assert run.returncode == 0, run.stdout + run.stderr
    assert "sha256" in run.stdout and "OnUnitActiveSec=15s" in run.stdout
    assert sorted(os.listdir(places["units"])) == [] and not places["lib"].exists()


def _spy_reads(monkeypatch):
    """{path: times read} through file_read.read, and [program_bytes() calls]."""
    from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read  # pylint: disable=import-outside-toplevel

    reads, builds = {}, []
    real_read, real_build = file_read.read, install.program_bytes

    def read(path, *args, **kwargs):
        reads[path] = reads.get(path, 0) + 1
        return real_read(path, *args, **kwargs)

    def build():
        builds.append(1)
        return real_build()

    monkeypatch.setattr(file_read, "read", read)
    monkeypatch.setattr(install, "program_bytes", build)
    return reads, builds


def test_a_run_reads_each_installed_file_once_and_builds_the_zip_once(systemd, places, monkeypatch):
    run_module(nfs_metrics_collector, places)
    reads, builds = _spy_reads(monkeypatch)
    result = run_module(nfs_metrics_collector, dict(places, interval=30), check_mode=True, diff=True)
    assert result["changed"] is True and "OnUnitActiveSec=15s" in result["diff"]["before"]
    assert len(reads) == 3 and set(reads.values()) == {1}, reads
    assert len(builds) == 1
    reads.clear()
    del builds[:]
    run_module(nfs_metrics_collector, dict(places, state="absent"), check_mode=True, diff=True)
    assert builds == [], "state=absent needs no program"


def test_the_zip_is_the_same_bytes_for_the_same_sources_and_idempotence_rests_on_them(systemd, places):
    assert install.program_bytes() == install.program_bytes()
    run_module(nfs_metrics_collector, places)
    program = os.path.join(places["install_directory"], install.PROGRAM)
    with open(program, "rb") as stream:
        installed = stream.read()
    assert installed == install.program_bytes()
    os.utime(program, (0, 0))
    assert run_module(nfs_metrics_collector, places)["changed"] is False, "a new mtime is not a change"
    with open(program, "r+b") as stream:
        stream.seek(len(installed) // 2)
        stream.write(b"\0" if installed[len(installed) // 2:len(installed) // 2 + 1] != b"\0" else b"\1")
    result = run_module(nfs_metrics_collector, places, diff=True)
    assert result["changed_files"] == [program]
    assert hashlib.sha256(installed).hexdigest() in result["diff"]["after"]
    with open(program, "rb") as stream:
        assert stream.read() == installed
