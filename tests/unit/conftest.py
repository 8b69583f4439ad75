"""The unit tests' one fake host: a temp root with its own /proc and /sys, given to every module at once."""
from __future__ import annotations

import os

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root


class FakeHost:
    """A host tree under root; modules read their /proc and /sys here (host_root.at_root())."""

    def __init__(self, root):
        self.root = root
        self.paths = host_root.HostRoot(str(root))

    def path(self, relative):
        """The fake host's file for an absolute host path ("/proc/meminfo")."""
        return self.root / relative.lstrip("/")

    def write(self, relative, content):
        """Write text or bytes at the host path relative ("/proc/fs/nfsd/threads"), making its directories.

        A link made by link_live is replaced, never written through: the live host is only read.
        """
        target = self.path(relative)
        os.makedirs(str(target.parent), exist_ok=True)
        assert os.path.realpath(str(target.parent)).startswith(os.path.realpath(str(self.root)) + os.sep), target
        if target.is_symlink():
            target.unlink()
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            with open(str(target), "w") as handle:
                handle.write(content)
        return target

    def link_live(self, *host_paths):
        """Let the fake host show the live host's files at host_paths (symlinks; tests that fork real ranks read real figures)."""
        for host_path in host_paths:
            target = self.path(host_path)
            os.makedirs(str(target.parent), exist_ok=True)
            os.symlink(host_path, str(target))


@pytest.fixture
def fake_root(tmp_path, monkeypatch):
    """An empty fake host (tmp_path/host): every module run in the test reads its /proc and /sys there."""
    root = tmp_path / "host"
    root.mkdir()
    monkeypatch.setattr(host_root, "ROOT", str(root))
    return FakeHost(root)
