"""Issue 45, "Trusting what is there", checkpoint_canary: a file grown after the write fails the read-back
naming its size. It failed on the code before the fix (tcp_probe_listener's: test_safety_listener.py)."""
from __future__ import annotations

import os

import pytest

from ansible_collections.ckptio.nfs.plugins.modules import checkpoint_canary
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_checkpoint_canary import _args, _restore_controller
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_checkpoint_canary import live_host  # noqa: F401 pylint: disable=unused-import
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module

KIB = 1024


def _grow(path, extra=b"x" * 100):
    with open(path, "ab") as handle:
        handle.write(extra)


@pytest.mark.usefixtures("live_host")
@pytest.mark.parametrize("layout, name, rank", [("file_per_rank", "__1_0.ckpt", 1), ("shared_file", "shared.ckpt", 2)])
def test_a_file_grown_after_the_write_fails_the_read_back_naming_its_size(tmp_path, layout, name, rank):
    """Before: only the planned range was read, so 100 bytes appended after the fsync passed the read-back."""
    target, barrier_dir = tmp_path / "target", tmp_path / "barrier"
    target.mkdir()
    _restore_controller(barrier_dir, lambda workdir: _grow(os.path.join(workdir, name)))
    result = fail_module(checkpoint_canary, _args(target, restore=True, layout=layout, barrier_dir=str(barrier_dir)))
    size = 64 * KIB if layout == "file_per_rank" else 3 * 64 * KIB
    problem = "the file is %d bytes, %d were written: it changed size after the write" % (size + 100, size)
    assert "rank %d: %s offset %d: %s" % (rank, name, size, problem) in result["msg"]
    assert [r["verify_error_count"] for r in result["ranks"]] == [1 if r["rank"] == rank else 0 for r in result["ranks"]]
