"""The Galaxy tarball holds the runtime content and nothing of development (issue 15).

The build runs on a copy of this tree to which the files a working checkout accumulates are
added: `scripts/lab up` writes inventories/lab/hosts.yml and the lab's private ssh key,
playbooks write reports/, ansible-test writes tests/output/, and there are caches and an old
tarball. galaxy.yml's build_ignore must keep every one of them out. The tarball must hold every
file of the runtime directories, and nothing outside them, so a new development file at the top
of the tree fails here until build_ignore (or RUNTIME) says where it belongs.

Run by `scripts/test.sh package` (tests/packaging is not shipped: it needs galaxy.yml).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

COLLECTION = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
ANSIBLE_GALAXY = os.path.join(os.path.dirname(sys.executable), "ansible-galaxy")

# What a user of the installed collection runs or reads. Files are shipped when they sit under
# one of these directories or are one of these files.
RUNTIME_FILES = {"README.md", "COPYING", "CHANGELOG.rst", "requirements.txt",
                 "changelogs/changelog.yaml", "changelogs/config.yaml"}
RUNTIME_DIRS = ("meta/", "plugins/", "roles/", "playbooks/", "docs/", "inventories/example/",
                "tests/unit/", "tests/fixtures/", "prometheus/")
# Written by ansible-galaxy itself.
BUILD_FILES = {"MANIFEST.json", "FILES.json"}

# What a working checkout holds besides the tracked files; none of it may ship.
DEV_FILES = {
    "inventories/lab/hosts.yml": "all:\n  hosts:\n    nfs1: {ansible_port: 22301}\n",
    "inventories/lab/.ssh/id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY-----\nnot a real key\n",
    "inventories/lab/.ssh/id_ed25519.pub": "ssh-ed25519 AAAA lab\n",
    "reports/20260101T000000Z-baseline/report.md": "# report\n",
    "reports/audit-20260101T000000Z.json": "{}\n",
    "tests/output/junit/python3.11-units.xml": "<testsuites/>\n",
    "tests/output/.tmp/sanity/x.txt": "x\n",
    ".cache/ckptio/state": "x\n",
    ".ansible/collections/x": "x\n",
    ".pytest_cache/v/cache/lastfailed": "{}\n",
    "tests/unit/.pytest_cache/README.md": "x\n",
    "plugins/modules/__pycache__/nfs_mount.cpython-311.pyc": "x",
    "ckptio-nfs-0.0.1.tar.gz": "not a tarball",
    "scripts/lab-state/disk.qcow2": "x",
}
# A checkout's hyphenated playbook names only import the real plays (tune_clients.yml, ...):
# a collection playbook must be a valid identifier to be called as ckptio.nfs.<name>.
CHECKOUT_PLAYBOOKS = ("playbooks/tune-clients.yml", "playbooks/tune-servers.yml", "playbooks/validate-checkpoint.yml",
                      "playbooks/compare-architectures.yml")


# Tracked development files that must stay out (checked by name, not only by the rule above).
DEV_PATHS = ("scripts/", "molecule/", "tests/bench/", "tests/lab_matrix/", "tests/packaging/", "inventories/lab/", ".ci/",
             "changelogs/fragments/", "requirements-dev.txt", "requirements-constraints.txt",
             "requirements-compat.txt", "requirements-package.txt", "CONTRIBUTING.md", "pytest.ini",
             ".ansible-lint", ".gitignore", "galaxy.yml") + CHECKOUT_PLAYBOOKS


def is_runtime(path):
    if path in CHECKOUT_PLAYBOOKS:
        return False
    return path in RUNTIME_FILES or path.startswith(RUNTIME_DIRS)


def tree_files(root):
    found = set()
    for directory, dirs, files in os.walk(root):
        dirs[:] = [name for name in dirs if name not in ("__pycache__", ".git", ".pytest_cache")]
        for name in files:
            found.add(os.path.relpath(os.path.join(directory, name), root))
    return found


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(tarball members that are files, the runtime files of the source tree)."""
    work = tmp_path_factory.mktemp("build")
    tree = work / "ansible_collections" / "ckptio" / "nfs"
    shutil.copytree(COLLECTION, str(tree), symlinks=True,
                    ignore=shutil.ignore_patterns(".git", "__pycache__"))
    expected = set(path for path in tree_files(str(tree)) if is_runtime(path))
    for path, text in DEV_FILES.items():
        target = tree / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    os.chmod(str(tree / "inventories/lab/.ssh/id_ed25519"), 0o600)
    dist = work / "dist"
    env = dict(os.environ, ANSIBLE_LOCAL_TEMP=str(work / "tmp"), ANSIBLE_NOCOLOR="1")
    run = subprocess.run([ANSIBLE_GALAXY, "collection", "build", "--output-path", str(dist), str(tree)],
                         env=env, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "[WARNING]" not in run.stdout + run.stderr, run.stdout + run.stderr
    with open(os.path.join(COLLECTION, "galaxy.yml")) as handle:
        version = yaml.safe_load(handle)["version"]
    tarball = dist / ("ckptio-nfs-%s.tar.gz" % version)
    with tarfile.open(str(tarball)) as archive:
        members = archive.getmembers()
        manifest = json.load(archive.extractfile("MANIFEST.json"))
    return set(member.name for member in members if member.isfile()), expected, manifest


def test_no_file_of_a_working_checkout_ships(built):
    shipped, _expected, _manifest = built
    assert not set(DEV_FILES) & shipped
    assert not [path for path in shipped if path.startswith("inventories/lab") or ".ssh" in path]
    assert not [path for path in shipped if path.endswith((".pyc", ".tar.gz")) or "__pycache__" in path]


def test_no_tracked_development_file_ships(built):
    shipped, _expected, _manifest = built
    assert not [path for path in shipped if path.startswith(DEV_PATHS)]


def test_only_runtime_content_ships(built):
    shipped, _expected, _manifest = built
    assert sorted(path for path in shipped - BUILD_FILES if not is_runtime(path)) == []


def test_every_runtime_file_ships(built):
    shipped, expected, _manifest = built
    assert sorted(expected - shipped) == []


def test_the_parts_a_user_needs_are_there(built):
    shipped, _expected, manifest = built
    for path in ("README.md", "COPYING", "CHANGELOG.rst", "requirements.txt", "meta/runtime.yml",
                 "meta/execution-environment.yml", "changelogs/changelog.yaml", "inventories/example/hosts.yml"):
        assert path in shipped, path
    modules = [name for name in os.listdir(os.path.join(COLLECTION, "plugins", "modules")) if name.endswith(".py")]
    assert modules and all("plugins/modules/" + name in shipped for name in modules)
    for role in os.listdir(os.path.join(COLLECTION, "roles")):
        assert "roles/%s/meta/main.yml" % role in shipped
        assert "roles/%s/README.md" % role in shipped, "galaxy-importer rejects a role without a README"
    playbooks = sorted(path for path in shipped if path.startswith("playbooks/") and path.count("/") == 1)
    assert playbooks == ["playbooks/audit.yml", "playbooks/capture.yml", "playbooks/compare_architectures.yml",
                         "playbooks/diagnose.yml", "playbooks/monitor.yml", "playbooks/paste.yml", "playbooks/tune_clients.yml",
                         "playbooks/tune_servers.yml", "playbooks/validate_checkpoint.yml"]
    assert [path for path in shipped if path.startswith("docs/") and path.endswith(".md")]
    assert manifest["collection_info"]["license"] == ["GPL-3.0-or-later"]


def test_the_license_is_the_gpl_3_text():
    with open(os.path.join(COLLECTION, "COPYING")) as handle:
        text = handle.read()
    assert text.lstrip().startswith("GNU GENERAL PUBLIC LICENSE")
    assert "Version 3, 29 June 2007" in text and "END OF TERMS AND CONDITIONS" in text
