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


def test_a_link_at_the_file_name_is_refused_never_written_through(tmp_path, capsys):
    # file_write's rule for every file that is not an admin's configuration: a link at our name is refused, named.
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep\n", encoding="utf-8")
    (textfiles / collector.TEXTFILE_NAME).symlink_to(victim)
    assert collector.main(["--textfile-directory", str(textfiles), "--root", str(_client_root(tmp_path))]) == 1
    assert collector.TEXTFILE_NAME in capsys.readouterr().err
    assert victim.read_text(encoding="utf-8") == "keep\n"
    assert (textfiles / collector.TEXTFILE_NAME).is_symlink()
    assert sorted(os.listdir(textfiles)) == [collector.TEXTFILE_NAME], "no temp file left"


def test_a_mount_point_that_is_not_utf8_still_gives_valid_text(tmp_path):
    root = _client_root(tmp_path)
    mountstats = root / "proc" / "self" / "mountstats"
    mountstats.write_bytes(mountstats.read_bytes().replace(b"/mnt/nfs", b"/mnt/caf\xe9"))
    text = collector.collect(HostRoot(str(root)), now=1)
    text.encode("utf-8")
    assert 'mountpoint="/mnt/caf\\\\xe9"' in text


KERNEL = os.path.join(FIXTURES, "..", "kernels", "bookworm", "sunrpc")


def _live_root(tmp_path, sample_index=1):
    """A fake 6.1 client during a write: one sample of the lab's sysfs and debugfs views (tests/fixtures/kernels/
    bookworm/sunrpc/load, 4 dd writers on a 2-session-slot v4.1 mount) laid out as the kernel's files."""
    from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import samples

    root = tmp_path / "live"
    (root / "proc" / "self").mkdir(parents=True)
    with open(os.path.join(KERNEL, "load", "mountstats_after.txt"), encoding="utf-8") as stream:
        (root / "proc" / "self" / "mountstats").write_text(stream.read(), encoding="utf-8")
    (root / "proc" / "self" / "mountinfo").write_text(
        "60 25 0:52 / /mnt/nfs rw,relatime shared:1 - nfs4 nfs1:/srv/nfs rw,vers=4.1,addr=10.0.0.1\n", encoding="utf-8")
    for name, base in (("sunrpc_xprt.txt", root / "sys" / "kernel" / "sunrpc"),
                       ("rpc_tasks.txt", root / "sys" / "kernel" / "debug" / "sunrpc")):
        with open(os.path.join(KERNEL, "load", name), encoding="utf-8") as stream:
            sample = samples.parse_samples(stream.read()).samples[sample_index]
        for path, text in sample.sections:
            target = base / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    return root


def test_a_61_client_exports_its_session_slot_waiters_and_transport_slots(tmp_path):
    text = collector.collect(HostRoot(str(_live_root(tmp_path))), ["/mnt/nfs"], now=1)
    labels = 'mountpoint="/mnt/nfs",export="nfs1:/srv/nfs"'
    waiters = [line for line in text.splitlines() if line.startswith("ckptio_nfs_client_session_slot_waiters{%s}" % labels)]
    assert len(waiters) == 1 and int(waiters[0].rsplit(" ", 1)[1]) > 0
    assert "ckptio_nfs_client_rpc_slot_table_size{%s}" % labels in text
    assert 'ckptio_nfs_collector_source_up{source="sunrpc_sysfs"} 1' in text
    assert 'ckptio_nfs_collector_source_up{source="debugfs_tasks"} 1' in text


def test_without_the_live_views_their_series_are_absent_and_the_sources_say_so(tmp_path):
    text = collector.collect(HostRoot(str(_client_root(tmp_path))), now=1)
    assert "session_slot_waiters" not in text and "rpc_slots_allocated" not in text
    assert 'ckptio_nfs_collector_source_up{source="sunrpc_sysfs"} 0' in text
    assert 'ckptio_nfs_collector_source_up{source="debugfs_tasks"} 0' in text


def test_another_servers_figures_never_go_under_a_mount(tmp_path):
    # Two servers on the host and nothing mapping the transports to either: no slot figure for the mount.
    root = _live_root(tmp_path)
    with open(root / "proc" / "self" / "mountinfo", "a", encoding="utf-8") as stream:
        stream.write("61 25 0:53 / /mnt/other rw,relatime shared:2 - nfs4 nfs9:/x rw,vers=4.1,addr=10.0.0.9\n")
    (root / "proc" / "self" / "mountinfo").write_text(
        "60 25 0:52 / /mnt/nfs rw,relatime shared:1 - nfs4 nfs1:/srv/nfs rw,vers=4.1,addr=10.0.0.5\n"
        "61 25 0:53 / /mnt/other rw,relatime shared:2 - nfs4 nfs9:/x rw,vers=4.1,addr=10.0.0.9\n", encoding="utf-8")
    text = collector.collect(HostRoot(str(root)), ["/mnt/nfs"], now=1)
    assert "rpc_slot_table_size" not in text


def test_the_live_texts_are_parsed_once_per_run_whatever_the_mounts(tmp_path, monkeypatch):
    # Three mounts of one server: the sysfs/debugfs texts and mountstats are parsed once each, not once per mount.
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import slot_samples
    from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import mountstats, samples

    root = _live_root(tmp_path)
    stats = root / "proc" / "self" / "mountstats"
    text = stats.read_text(encoding="utf-8")
    block = text[text.index("device nfs1:/srv/nfs"):]
    stats.write_text(text + "".join(block.replace("/mnt/nfs", "/mnt/" + name) for name in ("a", "b")), encoding="utf-8")
    with open(root / "proc" / "self" / "mountinfo", "a", encoding="utf-8") as stream:
        for number, name in ((61, "a"), (62, "b")):
            stream.write("%d 25 0:5%d / /mnt/%s rw,relatime shared:1 - nfs4 nfs1:/srv/nfs rw,vers=4.1,addr=10.0.0.1\n"
                         % (number, number - 60, name))
    alone = collector.collect(HostRoot(str(root)), ["/mnt/b"], now=1)
    calls = {"parse_samples": 0, "iter_mountstats": 0}

    def counted(name, real):
        def call(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(samples, "parse_samples", counted("parse_samples", samples.parse_samples))
    for module in (collector, slot_samples, mountstats):
        monkeypatch.setattr(module, "iter_mountstats", counted("iter_mountstats", mountstats.iter_mountstats))
    every = collector.collect(HostRoot(str(root)), now=1)
    assert calls == {"parse_samples": 2, "iter_mountstats": 1}
    assert every.count("ckptio_nfs_client_rpc_slot_table_size{") == 3
    mine = [line for line in every.splitlines() if 'mountpoint="/mnt/b"' in line]
    assert mine and mine == [line for line in alone.splitlines() if 'mountpoint="/mnt/b"' in line]
