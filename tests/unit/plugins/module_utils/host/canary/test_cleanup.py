"""host/canary/cleanup.py: the detached helper's removal of the work directory."""
from __future__ import annotations

import errno
import os

from ansible_collections.ckptio.nfs.plugins.module_utils.host.canary import cleanup as canary_cleanup


def test_cleanup_waits_out_a_silly_renamed_file(tmp_path, monkeypatch):
    """After a killed rank the NFS client still holds its file: unlink leaves .nfsXXXX (EBUSY to
    unlink) and rmdir says ENOTEMPTY until the server takes the pages. Measured on the lab after
    a server stop; the helper must keep trying, not give up and leave the directory behind."""
    workdir = tmp_path / "ckptio-canary-x"
    workdir.mkdir()
    (workdir / "shared.ckpt").write_bytes(b"x")
    (workdir / ".nfs000000000001").write_bytes(b"x")
    real_unlink, real_rmdir = os.unlink, os.rmdir
    attempts = {"rmdir": 0}

    def unlink(name, dir_fd=None):
        if name.startswith(".nfs") and attempts["rmdir"] < 3:
            raise OSError(errno.EBUSY, "Device or resource busy")
        return real_unlink(name, dir_fd=dir_fd)

    def rmdir(name, dir_fd=None):
        attempts["rmdir"] += 1
        return real_rmdir(name, dir_fd=dir_fd)

    monkeypatch.setattr(os, "unlink", unlink)
    monkeypatch.setattr(os, "rmdir", rmdir)
    parent_fd = os.open(str(tmp_path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert canary_cleanup.remove_workdir(parent_fd, workdir.name, [], retry_interval=0.01) == "ok"
    finally:
        os.close(parent_fd)
    assert not workdir.exists()
    assert attempts["rmdir"] == 4  # three refusals (ENOTEMPTY), then the file was gone
