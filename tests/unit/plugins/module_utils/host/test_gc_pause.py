# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""paused_gc: the cyclic collector off inside the block and as it was after, even on an error."""

from __future__ import annotations

import gc

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.host.gc_pause import paused_gc


@pytest.fixture
def collector():
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_paused_inside_and_restored_after_even_on_an_error(collector):
    gc.enable()
    with pytest.raises(ValueError):
        with paused_gc():
            assert not gc.isenabled()
            raise ValueError("boom")
    assert gc.isenabled()


def test_a_caller_that_paused_it_keeps_it_paused(collector):
    gc.disable()
    with paused_gc():
        assert not gc.isenabled()
    assert not gc.isenabled()
