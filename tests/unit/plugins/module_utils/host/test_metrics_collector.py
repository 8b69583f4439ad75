"""The textfile collector on fake hosts: what it reads, what it writes, and what it never touches."""
from __future__ import annotations

import os
import stat

from ansible_collections.ckptio.nfs.plugins.module_utils.host.host_root import HostRoot
from ansible_collections.ckptio.nfs.plugins.module_utils.host import metrics_collector as collector

from ..telemetry.test_exposition import FIXTURES, POOL_STATS, SERVER_NFSD


def _client_root(tmp_path):
    root = tmp_path / "root"
    (root / "proc" / "self").mkdir(parents=True)
    with open(os.path.join(FIXTURES, "mountstats_v41_nconnect4.txt"), encoding="utf-8") as stream:
        (root / "proc" / "self" / "mountstats").write_text(stream.read(), encoding="utf-8")
    return root


def _server_root(tmp_path):
    root = tmp_path / "server"
    (root / "proc" / "fs" / "nfsd").mkdir(parents=True)
    (root / "proc" / "net" / "rpc").mkdir(parents=True)
    (root / "proc" / "fs" / "nfsd" / "threads").write_text("8\n", encoding="utf-8")
    (root / "proc" / "fs" / "nfsd" / "pool_stats").write_text(POOL_STATS, encoding="utf-8")
    (root / "proc" / "net" / "rpc" / "nfsd").write_text(SERVER_NFSD, encoding="utf-8")
    return root


def test_a_client_gets_its_mounts_and_says_nfsd_was_not_read(tmp_path):
    text = collector.collect(HostRoot(str(_client_root(tmp_path))), now=1765000000)
    assert 'ckptio_nfs_client_requests_total{mountpoint="/mnt/nfs",export="10.0.0.1:/srv/nfs",op="WRITE"} 2048' in text
    assert 'ckptio_nfs_collector_source_up{source="mountstats"} 1' in text
    assert 'ckptio_nfs_collector_source_up{source="nfsd"} 0' in text
    assert "ckptio_nfs_server_" not in text
    assert "ckptio_nfs_collector_last_run_timestamp_seconds 1765000000.0" in text


def test_a_server_gets_its_threads_and_pools(tmp_path):
    text = collector.collect(HostRoot(str(_server_root(tmp_path))), now=1)
    assert "ckptio_nfs_server_threads 8" in text
    assert "ckptio_nfs_server_sockets_enqueued_total 300" in text
    assert 'ckptio_nfs_collector_source_up{source="mountstats"} 0' in text
    assert "ckptio_nfs_client_" not in text


def test_main_writes_the_file_atomically_with_its_mode_and_no_temp_left(tmp_path):
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    status = collector.main(["--textfile-directory", str(textfiles), "--root", str(_client_root(tmp_path)),
                             "--mount-point", "/mnt/nfs"])
    assert status == 0
    assert sorted(os.listdir(textfiles)) == [collector.TEXTFILE_NAME]
    written = textfiles / collector.TEXTFILE_NAME
    assert stat.S_IMODE(written.stat().st_mode) == collector.TEXTFILE_MODE
    assert "ckptio_nfs_client_bytes_total" in written.read_text(encoding="utf-8")


def test_a_missing_textfile_directory_is_a_message_and_nothing_is_created(tmp_path, capsys):
    missing = tmp_path / "no-node-exporter"
    status = collector.main(["--textfile-directory", str(missing), "--root", str(_client_root(tmp_path))])
    assert status == 1
    assert "is node_exporter installed" in capsys.readouterr().err
    assert not missing.exists()


def test_a_link_at_the_file_name_is_replaced_never_written_through(tmp_path):
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep\n", encoding="utf-8")
    (textfiles / collector.TEXTFILE_NAME).symlink_to(victim)
    assert collector.main(["--textfile-directory", str(textfiles), "--root", str(_client_root(tmp_path))]) == 0
    assert victim.read_text(encoding="utf-8") == "keep\n"
    assert not (textfiles / collector.TEXTFILE_NAME).is_symlink()


def test_a_mount_point_that_is_not_utf8_still_gives_valid_text(tmp_path):
    root = _client_root(tmp_path)
    mountstats = root / "proc" / "self" / "mountstats"
    mountstats.write_bytes(mountstats.read_bytes().replace(b"/mnt/nfs", b"/mnt/caf\xe9"))
    text = collector.collect(HostRoot(str(root)), now=1)
    text.encode("utf-8")
    assert 'mountpoint="/mnt/caf\\\\xe9"' in text
