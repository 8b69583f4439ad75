"""nfsd_threads with its max_connections drop-in masked (issue 45): a symbolic link to /dev/null, as `systemctl mask`
makes one, through the real main() on the max_connections tests' fake root. Failed on 224965e: every run, even one
that does not manage max_connections, failed with "EINVAL: is a device, not a regular file" naming only the path."""
from __future__ import annotations

import os

from ansible_collections.ckptio.nfs.plugins.modules import nfsd_threads as module
# The max_connections tests' fake root, as a fixture of this module.
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_nfsd_threads_max_connections import (  # noqa: F401 pylint: disable=unused-import
    tree)
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module, tree_checksums


def _mask(world):
    os.makedirs(os.path.dirname(world.dropin), exist_ok=True)
    os.symlink(os.devnull, world.dropin)


def test_persisting_max_connections_through_a_masked_dropin_is_refused_naming_the_mask_and_what_to_do(tree):
    _mask(tree)
    before = tree_checksums(str(tree.root))
    for check_mode in (True, False):
        failed = fail_module(module, tree.args(threads=8, max_connections=5000), check_mode=check_mode)
        assert failed["msg"].startswith("max_connections: %s is masked (a symbolic link to /dev/null" % tree.dropin)
        assert "max_connections=5000" in failed["msg"] and "EINVAL" not in failed["msg"]
        assert "rm %s" % tree.dropin in failed["msg"] and "persist: false" in failed["msg"]
        assert not failed.get("changed")
    assert tree_checksums(str(tree.root)) == before and os.readlink(tree.dropin) == os.devnull
    assert tree.commands == []


def test_a_masked_dropin_persists_nothing_and_other_runs_go_on(tree):
    _mask(tree)
    # threads alone: the mask is the admin's, nothing of max_connections is persisted (systemd reads it as empty).
    result = run_module(module, tree.args(threads=8))
    assert result["persisted_max_connections"] == 0
    assert os.readlink(tree.dropin) == os.devnull
    # Live only (persist: false) is what the message offers: the live value is set, the mask stays.
    live = run_module(module, tree.args(threads=8, max_connections=5000, persist=False))
    assert live["max_connections_after"] == 5000 and os.readlink(tree.dropin) == os.devnull
    # Rollback leaves the mask alone.
    run_module(module, tree.args(state="absent"))
    assert os.readlink(tree.dropin) == os.devnull
