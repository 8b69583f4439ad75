# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""HostFiles: asking for one host never scans the list of every host (reading 16,384 clients was
quadratic: ~134 million name comparisons, 4 s of CPU, tests/bench/README.md)."""

from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import HostFiles
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle import CLIENT_FILES


class _NoScan(list):
    def __contains__(self, item):
        raise AssertionError("a host looked up by scanning the list of every host")


def test_a_host_is_found_without_scanning_every_host(tmp_path):
    for host in ("c1", "c2", "c3"):
        (tmp_path / host).mkdir()
        (tmp_path / host / "sunrpc.txt").write_text("sunrpc.tcp_slot_table_entries 2\n")
    files = HostFiles(str(tmp_path), CLIENT_FILES, "clients", [])
    files._hosts = _NoScan(files._hosts)
    assert files["c2"] == {"sunrpc": "sunrpc.tcp_slot_table_entries 2\n"}
    with pytest.raises(KeyError):
        files["c4"]
    assert list(files) == ["c1", "c2", "c3"] and len(files) == 3
