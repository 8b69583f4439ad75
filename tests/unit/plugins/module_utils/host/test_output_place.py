"""output_place.choose: where the diagnosis and report files go."""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.host.output_place import choose, installed_collection_root

INSTALLED = "/home/me/.ansible/collections/ansible_collections/ckptio/nfs"


@pytest.mark.parametrize("path, root", [
    (INSTALLED + "/tests/fixtures/samples/bundles/seed_like_baseline", INSTALLED),
    (INSTALLED, INSTALLED),
    ("/ansible_collections/ckptio/nfs/x", "/ansible_collections/ckptio/nfs"),
    ("/srv/ansible_collections/ckptio/nfsx/bundle", None),
    ("/srv/ansible_collections/other/nfs/bundle", None),
    ("/srv/reports/ansible_collections", None),
    ("/home/me/project/reports/20260101T120000-tuned", None),
])
def test_installed_collection_root(path, root):
    assert installed_collection_root(path) == root


def test_output_dir_wins_everywhere():
    assert choose(INSTALLED + "/b", False, "/out", "/fallback") == ("/out", "output_dir")


def test_a_writable_bundle_outside_the_collection_keeps_its_files():
    assert choose("/srv/b", True, None, "/fallback") == ("/srv/b", "the bundle directory")


def test_read_only_or_installed_bundles_go_to_the_fallback_or_nowhere():
    assert choose("/srv/b", False, None, "/fallback") == ("/fallback", "the bundle directory is read-only")
    where, why = choose(INSTALLED + "/b", True, None, "/fallback")
    assert where == "/fallback" and why.startswith("the bundle is inside the installed collection ckptio.nfs (%s)" % INSTALLED)
    assert choose("/srv/b", False) == (None, "the bundle directory is read-only: nothing written; set output_dir")
