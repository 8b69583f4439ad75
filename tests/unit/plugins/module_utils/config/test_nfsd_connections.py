"""The kernel's connection limit and the drop-in that persists it."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfsd_connections


def test_default_limit_is_the_svc_check_conn_limits_formula():
    # (sv_nrthreads + 3) * 20: 8 threads (nfs-utils default before 2.8.2) -> 220, 64 -> 1340.
    assert [nfsd_connections.default_limit(threads) for threads in (1, 8, 16, 64)] == [80, 220, 380, 1340]


def test_connection_limit():
    assert nfsd_connections.connection_limit(0, 64) == {"configured": 0, "effective": 1340, "threads": 64, "supported": True}
    assert nfsd_connections.connection_limit(5000, 64)["effective"] == 5000
    assert nfsd_connections.connection_limit(None, 64, supported=False) == {
        "configured": None, "effective": None, "threads": 64, "supported": False}


def test_value_file_holds_a_bare_number():
    assert nfsd_connections.value_text(5000) == "5000\n"
    assert nfsd_connections.parse_value("5000\n") == 5000
    assert nfsd_connections.parse_value("# 5000\n") is None
    assert nfsd_connections.parse_value("-1\n") is None
    assert nfsd_connections.parse_value(None) is None


def test_dropin_runs_dd_without_a_shell_and_tolerates_a_kernel_without_the_file():
    text = nfsd_connections.dropin_text("/usr/bin/dd", "/etc/ckptio/nfsd-max-connections", "/proc/fs/nfsd/max_connections")
    assert nfsd_connections.is_our_dropin(text)
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines == ["[Service]", "ExecStartPre=-/usr/bin/dd if=/etc/ckptio/nfsd-max-connections "
                     "of=/proc/fs/nfsd/max_connections conv=notrunc status=none"]
    assert not nfsd_connections.is_our_dropin("[Service]\nExecStartPre=/bin/true\n")


def test_margin_rounds_up():
    clients = [{"host": "c1", "mounts": [{"src": "s:/e", "path": "/m"}], "profile_options": {"nconnect": 1}}]
    need = nfsd_connections.connection_need(clients, ["s"])
    assert (need["connections"], need["margin"], need["need"]) == (1, 1, 2)
    assert nfsd_connections.connection_need(clients, ["s"], margin_percent=0)["need"] == 1


def test_dropin_after_removes_only_our_lines():
    """Issue 24 item 9: lines someone added to our drop-in are theirs, on removal and on a new value."""
    ours = nfsd_connections.dropin_text("/usr/bin/dd", "/etc/ckptio/v", "/proc/fs/nfsd/max_connections")
    assert nfsd_connections.dropin_after(ours, None) is None
    assert nfsd_connections.dropin_after(ours + "Nice=5\n", None) == "[Service]\nNice=5\n"
    assert nfsd_connections.dropin_after(ours + "[Unit]\nAfter=x.service", None) == "[Unit]\nAfter=x.service"
    assert nfsd_connections.dropin_after(ours + "\n\n", None) is None
    moved = nfsd_connections.dropin_text("/bin/dd", "/etc/ckptio/v", "/proc/fs/nfsd/max_connections")
    assert nfsd_connections.dropin_after(ours + "Nice=5\n", moved) == moved + "Nice=5\n"
    assert nfsd_connections.dropin_after(ours, ours) == ours
    # A drop-in that is not ours is never merged: the plan refuses it before.
    assert nfsd_connections.dropin_after("[Service]\nNice=5\n", ours) == ours
