"""The released changelog is what antsibull-changelog writes, in RST that renders.

antsibull-changelog copies fragment text into CHANGELOG.rst as RST and converts Ansible markup
only in plugin short descriptions: a C(...) or O(...) in a fragment would reach the changelog
as literal text. Fragments use RST literals (``value``) instead.
"""
from __future__ import annotations

import glob
import io
import os
import re
import shutil
import subprocess
import sys

import docutils.core
import yaml

COLLECTION = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
ANTSIBULL_CHANGELOG = os.path.join(os.path.dirname(sys.executable), "antsibull-changelog")
ANSIBLE_MARKUP = re.compile(r"\b[BCEHILMOPRUV]\([^)]*\)")


def texts(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from texts(item)


def test_no_fragment_and_no_release_uses_ansible_markup():
    found = []
    sources = glob.glob(os.path.join(COLLECTION, "changelogs", "fragments", "*.y*ml"))
    sources.append(os.path.join(COLLECTION, "changelogs", "changelog.yaml"))
    for path in sources:
        with open(path) as handle:
            data = yaml.safe_load(handle) or {}
        if path.endswith("changelog.yaml"):
            # Plugin short descriptions are rendered by antsibull-changelog itself.
            data = dict((version, release.get("changes", {})) for version, release in data.get("releases", {}).items())
        found += ["%s: %s" % (os.path.basename(path), match) for text in texts(data) for match in ANSIBLE_MARKUP.findall(text)]
    assert found == []


def test_the_released_version_is_galaxy_yml_s():
    with open(os.path.join(COLLECTION, "galaxy.yml")) as handle:
        version = yaml.safe_load(handle)["version"]
    with open(os.path.join(COLLECTION, "changelogs", "changelog.yaml")) as handle:
        releases = yaml.safe_load(handle)["releases"]
    assert version in releases


def test_changelog_rst_is_generated_from_changelog_yaml_and_renders(tmp_path):
    tree = tmp_path / "nfs"
    shutil.copytree(COLLECTION, str(tree), ignore=shutil.ignore_patterns(".git", "tests", "molecule", "reports"))
    run = subprocess.run([ANTSIBULL_CHANGELOG, "generate"], cwd=str(tree), capture_output=True, text=True,
                         timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    with open(os.path.join(COLLECTION, "CHANGELOG.rst")) as handle:
        committed = handle.read()
    assert (tree / "CHANGELOG.rst").read_text() == committed, "CHANGELOG.rst is stale: run antsibull-changelog generate"
    warnings = io.StringIO()
    docutils.core.publish_string(committed, writer="null",
                                 settings_overrides={"warning_stream": warnings, "report_level": 1, "halt_level": 5})
    # Every release has sections of the same titles ("Bugfixes", "New Modules"): from the second
    # release on docutils notes each repeat (INFO, the sections still render); anything else counts.
    notes = [line for line in warnings.getvalue().splitlines()
             if line and "(INFO/1) Duplicate implicit target name" not in line]
    assert notes == []
    assert not ANSIBLE_MARKUP.findall(committed)


def test_every_module_is_in_the_new_modules_of_the_release_that_added_it():
    # issue 23: clock_offset and saved_stats_bundle (version_added 0.2.0) were in no release's New Modules.
    with open(os.path.join(COLLECTION, "changelogs", "changelog.yaml")) as handle:
        releases = yaml.safe_load(handle)["releases"]
    missing = []
    for path in sorted(glob.glob(os.path.join(COLLECTION, "plugins", "modules", "*.py"))):
        with open(path) as handle:
            added = re.search(r"^version_added: \"?([0-9.]+)\"?$", handle.read(), re.MULTILINE).group(1)
        name = os.path.basename(path)[:-3]
        listed = [module["name"] for module in releases.get(added, {}).get("modules", [])]
        if name not in listed:
            missing.append("%s (version_added %s)" % (name, added))
    assert missing == []
