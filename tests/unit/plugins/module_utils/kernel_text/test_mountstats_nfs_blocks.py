# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""mountstats._split_nfs_blocks: the NFS blocks _split_blocks yields, without cutting out the others."""

from __future__ import annotations

import glob
import os

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import mountstats

FIXTURES = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, os.pardir, os.pardir, "fixtures")
NFS = "device srv:/x mounted on /mnt/a with fstype nfs4 statvers=1.1\n\topts:\trw\n\tage:\t5\n"
PROC = "device proc mounted on /proc with fstype proc\n"
TRICK = "device tmpfs mounted on /tmp with fstype tmpfs\n\tnote: fstype nfs here is no device line\n"


def _reference(text):
    return [block for block in mountstats._split_blocks(text) if " fstype nfs" in block.split("\n", 1)[0]]


@pytest.mark.parametrize("text", [
    PROC + NFS + PROC, NFS, NFS.rstrip("\n"), PROC + TRICK + NFS, "junk fstype nfs\n" + NFS, "junk\n" + PROC,
    NFS.replace("nfs4", "nfs") + NFS, TRICK, "", "\n" + NFS,
], ids=["middle", "alone", "no-newline", "in-another-line", "junk-first", "none", "two", "only-trick", "empty", "newline-first"])
def test_the_same_blocks_as_split_blocks_then_the_nfs_filter(text):
    assert list(mountstats._split_nfs_blocks(text)) == _reference(text)


def test_every_fixture_mountstats_file_gives_the_same_blocks():
    paths = glob.glob(os.path.join(FIXTURES, "**", "mountstats*.txt"), recursive=True)
    assert len(paths) > 10
    for path in paths:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            text = handle.read()
        assert list(mountstats._split_nfs_blocks(text)) == _reference(text), path
