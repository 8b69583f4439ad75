"""nfs.conf, its drop-ins and /proc/fs/nfsd in bad *states* (issue 12 items 1, 4, 7).

nfsd_threads' real main() on the fake tree of test_nfsd_threads.py.
"""
from __future__ import annotations

import os

from ansible_collections.ckptio.nfs.plugins.modules import nfsd_threads as module
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_nfsd_threads import (
    args, dropin, read, tree, write,
)
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module, tree_checksums

# The fake host of test_nfsd_threads.py; pytest finds the fixture by its name in this module.
SHARED_FIXTURES = (tree,)


def test_directory_at_the_dropin_fails_cleanly(tree):
    os.makedirs(dropin(tree))
    sums = tree_checksums(str(tree))
    result = fail_module(module, args(tree, threads=32))
    assert dropin(tree) in result["msg"] and "EISDIR" in result["msg"]
    assert tree_checksums(str(tree)) == sums


def test_directory_named_conf_among_other_dropins_fails_cleanly(tree):
    os.makedirs(dropin(tree, "zz-site.conf"))
    result = fail_module(module, args(tree, threads=32))
    assert "zz-site.conf" in result["msg"] and "EISDIR" in result["msg"]


def test_directory_at_proc_nfsd_threads_fails_cleanly(tree):
    path = str(tree / "proc/fs/nfsd/threads")
    os.unlink(path)
    os.makedirs(path)
    result = fail_module(module, args(tree, threads=32))
    assert path in result["msg"] and "EISDIR" in result["msg"]
    assert not os.path.exists(dropin(tree))


def test_symlinked_dropin_is_written_through(tree):
    target = str(tree / "srv/config/ckptio-nfsd.conf")
    write(target, module.HEADER + "[nfsd]\nthreads=16\n")
    os.symlink(target, dropin(tree))
    run_module(module, args(tree, threads=32))
    assert os.path.islink(dropin(tree)) and os.readlink(dropin(tree)) == target
    assert read(target) == module.HEADER + "[nfsd]\nthreads=32\n"
