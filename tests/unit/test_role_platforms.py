"""roles/*/meta/main.yml: the platforms a role claims are those the lab verified (issue 23 item 16).

docs/kernels.md's table of pinned packages lists the Debian suites scripts/lab-matrix.sh ran the
collection on; a platform outside it (the roles claimed EL 9, which docs/kernels.md calls not
verified) is a claim nothing rests on.
"""
from __future__ import annotations

import glob
import os
import re

import yaml

COLLECTION = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def verified_suites():
    """The suites of the lab's pinned-packages table: rows `| bullseye (Debian 11) | ...`."""
    with open(os.path.join(COLLECTION, "docs", "kernels.md")) as handle:
        text = handle.read()
    return set(re.findall(r"^\| ([a-z]+) \(Debian \d+\) \|", text, re.MULTILINE))


def test_the_lab_verified_three_debian_suites():
    assert verified_suites() == {"bullseye", "bookworm", "trixie"}


def test_every_role_claims_only_verified_platforms():
    metas = sorted(glob.glob(os.path.join(COLLECTION, "roles", "*", "meta", "main.yml")))
    assert len(metas) == 4
    for path in metas:
        with open(path) as handle:
            platforms = yaml.safe_load(handle)["galaxy_info"]["platforms"]
        assert [platform["name"] for platform in platforms] == ["Debian"], path
        assert set(platforms[0]["versions"]) == verified_suites(), path
