"""The one in_sync rule and the shared (after, applied, reason) shape of the tuning modules."""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.config import settings


def test_every_managed_side_must_hold_the_wanted_value():
    assert settings.in_sync(32, 32, 32)
    assert not settings.in_sync(32, 16, 32)
    assert not settings.in_sync(32, 32, 8)


def test_a_side_the_run_does_not_manage_is_not_compared():
    assert settings.in_sync(32, None, 32, check_persisted=False)
    assert settings.in_sync(32, 32, 8, check_live=False)


def test_without_a_live_value_the_persisted_one_decides_even_with_persist_off():
    # nfsd/sunrpc not loaded: what is persisted applies when the module loads.
    assert settings.in_sync(32, 32, None, live_applicable=False)
    assert not settings.in_sync(32, None, None, check_persisted=False, live_applicable=False)


def test_live_matches_replaces_equality_for_the_live_side_only():
    def same_major(wanted, live):
        return live is not None and live.split(".")[0] == wanted
    assert settings.in_sync("4", "4", "4.1", live_matches=same_major)
    assert not settings.in_sync("4", "4.1", "4.1", live_matches=same_major)
    assert not settings.in_sync("4", "4", None, live_matches=same_major)


def test_row_is_the_audit_shape():
    assert settings.row("threads", 32, 32, None, 1) == {"name": "threads", "wanted": 32, "persisted": 32, "live": None, "in_sync": True}


def test_left_alone_and_verified_results():
    assert settings.left_alone(8, False) == (8, False, settings.APPLY_LIVE_FALSE)
    assert settings.left_alone(32, True) == (32, True, "")
    assert settings.verified(32, False, [], lambda: "unused") == (32, True, "")
    assert settings.verified(8, True, [], lambda: "the kernel kept 8") == (8, False, "the kernel kept 8")
    # A write error is the reason, even when the value read back happens to be the wanted one.
    assert settings.verified(32, True, ["EACCES", "EIO"], lambda: "unused") == (32, False, "EACCES; EIO")


@pytest.mark.parametrize("row,status", [
    (settings.row("threads", 64, 64, 64, True), settings.IN_SYNC),
    # The module's verdict is read, never recomputed: a row it calls in sync stays so.
    (settings.row("nconnect", "4", "4", "1", True), settings.IN_SYNC),
    (settings.row("nfs_max_session_slots", 128, 128, None, False), settings.APPLIES_WHEN_LOADED),
    (settings.row("nconnect", "8", "8", "1", False), settings.PENDING),
    (settings.row("threads", 64, 16, None, False), settings.DRIFT),
])
def test_status_reads_the_modules_in_sync_and_names_why_a_row_is_not(row, status):
    assert settings.status(row) == status
