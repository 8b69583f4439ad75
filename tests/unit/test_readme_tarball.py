"""The README's install commands name the tarball `ansible-galaxy collection build` makes of this
checkout: ckptio-nfs-<galaxy.yml's version>.tar.gz. A stale version sends a new user to a file that
does not exist (the README said 0.2.0 while galaxy.yml said 0.4.0)."""
from __future__ import annotations

import os
import re

import yaml

from ansible_collections.ckptio.nfs.tests.unit.test_safety_bad_input import COLLECTION


def read(*parts):
    with open(os.path.join(COLLECTION, *parts), encoding="utf-8") as handle:
        return handle.read()


def test_every_tarball_the_docs_name_is_the_one_galaxy_yml_builds():
    galaxy = yaml.safe_load(read("galaxy.yml"))
    built = "%s-%s-%s.tar.gz" % (galaxy["namespace"], galaxy["name"], galaxy["version"])
    named = []
    for doc in ["README.md"] + [os.path.join("docs", name) for name in sorted(os.listdir(os.path.join(COLLECTION, "docs")))]:
        if doc.endswith(".md"):
            named += [(doc, found) for found in re.findall(r"ckptio-nfs-[0-9][\w.]*?\.tar\.gz", read(doc))]
    assert named, "the README names no tarball"
    assert [entry for entry in named if entry[1] != built] == []
