"""playbooks/diagnose.yml never writes into a read-only bundle nor into an installed collection
(issue 23, item 8): the files go to reports/<bundle name>-diagnosis under the directory
ansible-playbook was started from (or -e ckptio_output_dir), and the play's last line says so.

Real ansible-playbook runs of the shipped playbook, from an empty project directory.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from ansible_collections.ckptio.nfs.tests.unit.test_playbook_summaries import ANSIBLE_PLAYBOOK, COLLECTION
from ansible_collections.ckptio.nfs.tests.unit.test_safety_states_fstab import collection_root
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path, tree_checksums

NAME = "seed_like_baseline"


def run_diagnose_playbook(project, *extra):
    """The finished ansible-playbook run of playbooks/diagnose.yml from project (a shell sets PWD; the play reads it),
    with extra's arguments; skips where ansible-playbook is not next to this python."""
    if not os.path.exists(ANSIBLE_PLAYBOOK):
        pytest.skip("ansible-playbook is not next to this python")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collection_root(), ANSIBLE_NOCOLOR="1", PWD=str(project),
               ANSIBLE_LOCAL_TEMP=str(project / ".tmp"), ANSIBLE_HOME=str(project / ".home"),
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", ANSIBLE_CALLBACK_RESULT_FORMAT="json",
               ANSIBLE_CALLBACK_FORMAT_PRETTY="0")
    argv = [ANSIBLE_PLAYBOOK, "-i", "localhost,", "-c", "local", os.path.join(COLLECTION, "playbooks", "diagnose.yml")]
    return subprocess.run(argv + list(extra), cwd=str(project), env=env, capture_output=True, text=True, timeout=300, check=False)


def diagnose(project, bundle, *extra):
    """Run playbooks/diagnose.yml on bundle from project; its stdout."""
    done = run_diagnose_playbook(project, "-e", "ckptio_bundle=%s" % bundle, *extra)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def last_message_line(stdout):
    """The last line of the verdict's msg list (the default callback prints each result as one JSON line)."""
    block = stdout[stdout.rindex("TASK [Show the verdict]"):]
    line = [line for line in block.splitlines() if line.startswith("ok: [localhost] => ")][0]
    return json.loads(line.split(" => ", 1)[1])["msg"][-1]


@pytest.fixture
def project(tmp_path):
    path = tmp_path / "project"
    path.mkdir()
    return path


def test_a_read_only_bundle_is_left_alone_and_reports_get_the_files(tmp_path, project):
    bundle = tmp_path / NAME
    shutil.copytree(sample_path("bundles", NAME), str(bundle))
    os.chmod(str(bundle), 0o555)
    try:
        before = tree_checksums(str(bundle))
        stdout = diagnose(project, bundle)
        assert tree_checksums(str(bundle)) == before
    finally:
        os.chmod(str(bundle), 0o755)
    out = project / "reports" / (NAME + "-diagnosis")
    assert sorted(os.listdir(str(out))) == ["diagnosis.json", "diagnosis.md"]
    assert last_message_line(stdout) == "wrote diagnosis.json and diagnosis.md in %s (the bundle directory is read-only)" % out


def test_a_sample_bundle_of_an_installed_collection_is_never_written(tmp_path, project):
    root = tmp_path / "collections" / "ansible_collections" / "ckptio" / "nfs"
    bundle = root / "tests" / "fixtures" / "samples" / "bundles" / NAME
    bundle.parent.mkdir(parents=True)
    shutil.copytree(sample_path("bundles", NAME), str(bundle))
    before = tree_checksums(str(root))
    stdout = diagnose(project, bundle)
    assert tree_checksums(str(root)) == before
    out = project / "reports" / (NAME + "-diagnosis")
    assert sorted(os.listdir(str(out))) == ["diagnosis.json", "diagnosis.md"]
    assert last_message_line(stdout).startswith("wrote diagnosis.json and diagnosis.md in %s (the bundle is inside the installed "
                                                "collection ckptio.nfs (%s)" % (out, root))
    # -e ckptio_output_dir wins, relative to where ansible-playbook was started.
    (project / "mine").mkdir()
    stdout = diagnose(project, bundle, "-e", "ckptio_output_dir=mine")
    assert sorted(os.listdir(str(project / "mine"))) == ["diagnosis.json", "diagnosis.md"]
    assert last_message_line(stdout) == "wrote diagnosis.json and diagnosis.md in %s (output_dir)" % (project / "mine")
    assert tree_checksums(str(root)) == before


def test_a_writable_bundle_keeps_its_files(tmp_path, project):
    bundle = tmp_path / NAME
    shutil.copytree(sample_path("bundles", NAME), str(bundle))
    stdout = diagnose(project, bundle, "--check")
    assert last_message_line(stdout) == "would write diagnosis.json and diagnosis.md in %s (the bundle directory)" % bundle
    assert not os.path.exists(str(bundle / "diagnosis.md")) and not os.path.exists(str(project / "reports"))
    stdout = diagnose(project, bundle)
    assert os.path.isfile(str(bundle / "diagnosis.md")) and not os.path.exists(str(project / "reports"))
