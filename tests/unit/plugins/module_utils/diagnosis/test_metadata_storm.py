"""metadata_storm: many small files make the access pattern the limit, not the server's storage (issue 26 item 3)."""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import metadata_storm
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.run import METADATA_OPS
from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.diagnosis.test_mount_state import Evidence


def op(ops, exe_ms):
    return {"ops": ops, "avg_exe_ms": exe_ms}


def client(files, file_bytes, open_ms=60.0, write_ms=30.0, wchans=None):
    ops = {"OPEN": op(files, open_ms), "SETATTR": op(files, open_ms / 2), "CLOSE": op(files, open_ms / 2),
           "WRITE": op(files * max(1, file_bytes // 1048576), write_ms)}
    return {"host": "nfs2", "delta": {"ops": ops, "write_bytes": files * file_bytes},
            "dstate": {"wchan_counts": wchans or {}} if wchans is not None else None}


def test_small_files_with_an_idle_disk_are_a_storm_with_the_shape_to_change():
    evidence = Evidence()
    found = metadata_storm.assess(evidence, [client(1024, 4096, wchans={"nfs4_run_open_task": 30, "rpc_wait_bit_killable": 10})],
                                  METADATA_OPS, 0.0065, False)
    assert found["storm"] and found["time_share"] == pytest.approx(120 / 150.0)
    assert found["ops_per_mib"] == pytest.approx(768) and found["dstate_share"] == 0.75
    assert "30 of 40 D-state samples in create/open paths" in evidence.items[0]["explanation"]
    rec = metadata_storm.shape_rec(found, {"ranks": 4, "clients": 1})
    assert rec["action"] == "fewer, larger files per rank: 256 per rank, files of 4 KiB each now - aim for 64 MiB or more per file"
    assert "shared directory" in rec["how"]


def test_big_files_or_a_busy_disk_are_no_storm():
    assert not metadata_storm.assess(Evidence(), [client(8, 268435456)], METADATA_OPS, 0.01, False)["storm"]
    assert not metadata_storm.assess(Evidence(), [client(1024, 4096)], METADATA_OPS, 0.95, False)["storm"]


def test_no_ops_no_verdict():
    empty = {"host": "nfs2", "delta": {"ops": {}, "write_bytes": 0}, "dstate": None}
    found = metadata_storm.assess(Evidence(), [empty], METADATA_OPS, None, False)
    assert found["time_share"] is None and not found["storm"]
