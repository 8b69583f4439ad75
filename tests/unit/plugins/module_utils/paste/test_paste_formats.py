"""Every pasted kind, from the lab's real outputs (tests/fixtures/paste/NOTES.txt), in every layout a paste arrives in:
what it is taken for, that its reading survives the layout, and what each format's parser reads."""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import kernel_log, layout, mountstats_report, nfsiostat, readings
from ansible_collections.ckptio.nfs.plugins.module_utils.paste import recognise
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import iter_mountstats
from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.paste import layouts

FILES = layouts.fixture_files()


def _signature(reading):
    """What a reading concludes: kind, the layers it speaks for and points at, and its crossed signals."""
    return (reading["kind"], sorted(reading["layers"]), sorted((s["layer"], s["weight"]) for s in reading["suspects"]),
            sorted((row["signal"], row["crossed"]) for row in reading["evidence"]))


def test_fixtures_hold_every_kind():
    kinds = set(layouts.expected_kind(relative) for relative, _text in FILES)
    assert kinds >= {"mountstats", "mountstats_report", "nfsd", "nfsiostat", "nfsstat_client", "nfsstat_server", "pool_stats",
                     "rpc_nfs", "kernel_log"}


@pytest.mark.parametrize("relative,text", FILES, ids=[relative for relative, _text in FILES])
def test_each_capture_is_taken_for_its_kind_in_every_layout(relative, text):
    clean = readings.read_file(relative, text)
    if not text.strip():
        pytest.skip("an empty capture (the lab's dmesg held no NFS message): tested as empty elsewhere")
    assert clean["kind"] == layouts.expected_kind(relative), clean["taken_for"]
    # /proc/fs/nfsd/threads alone is one number: nothing says what it is, and it is named so.
    assert (clean["tells_nothing"] is None) == (clean["kind"] != "unknown"), clean["tells_nothing"]
    assert clean["taken_for"] == recognise.KINDS[clean["kind"]]
    for name, transform in layouts.LAYOUTS.items():
        pasted = readings.read_file(relative, transform(text))
        assert _signature(pasted) == _signature(clean), name
        if name not in ("as_saved", "label_line") and clean["kind"] != "unknown":
            assert pasted["repairs"], name


def test_clean_kernel_output_is_kept_byte_for_byte():
    for relative, text in FILES:
        if text.endswith("\n") and "\r" not in text and "\u00a0" not in text and not text.startswith(" "):
            assert layout.clean(text).text == text, relative


def test_mountstats_without_final_newline_is_not_truncated():
    text = layouts.read("bookworm/mountstats_during1.txt")
    assert [mount.truncated for mount in iter_mountstats(text.rstrip("\n")) if mount.mount_point == "/mnt/nfs3"][0]
    cleaned = layout.clean(text.rstrip("\n"))
    assert "no newline after the last line" in cleaned.repairs
    assert [mount.truncated for mount in iter_mountstats(cleaned.text)] == [None, None]
    assert not any("cut" in note for note in readings.read_file("m", text.rstrip("\n"))["notes"])


def test_one_mount_block_and_its_opts_xprt_lines_alone():
    text = layouts.read("bookworm/mountstats_during1.txt")
    block = text[text.index("device nfs1:/srv/nfs mounted on /mnt/nfs3"):]
    one = readings.read_file("block", block)
    assert one["kind"] == "mountstats" and "client_rpc_slots" in one["layers"]
    lines = "".join(line + "\n" for line in block.split("\n") if line.strip().startswith(("opts:", "xprt:")))
    for name, transform in layouts.LAYOUTS.items():
        cut = readings.read_file("lines", transform(lines))
        assert cut["kind"] == "mountstats_lines", name
        assert any(note.startswith("the mount mount options: vers=3") or "vers=3" in note for note in cut["notes"]), name
        assert any(row["signal"].startswith("the mount requests waiting for a transport slot per send") for row in cut["evidence"]), name


def test_two_mounts_of_one_server_say_which_is_capped_and_by_what():
    reading = readings.read_file("m", layouts.read("bookworm/mountstats_during2.txt"))
    side = [note for note in reading["notes"] if note.startswith("mounts of nfs1 side by side")]
    assert side, reading["notes"]
    assert "/mnt/nfs (NFSv4.1)" in side[0] and "/mnt/nfs3 (NFSv3)" in side[0]
    assert "session slots the server grants" in side[0]


def test_nfsiostat_broken_columns_redacted_or_missing_header_read_the_same():
    text = layouts.read("bookworm/nfsiostat_mount.txt")
    clean = nfsiostat.parse(text)
    write = clean[-1]["ops"]["write"]
    assert write["avg_queue_ms"] is not None and write["avg_exe_ms"] > 10 * write["avg_rtt_ms"]
    for transform in (layouts.broken_columns, layouts.redacted_header, layouts.no_header,
                      lambda value: layouts.everything(layouts.broken_columns(value))):
        pasted = layout.clean(transform(text)).text
        assert recognise.kind_of(pasted) == "nfsiostat"
        assert [report["ops"] for report in nfsiostat.parse(pasted)] == [report["ops"] for report in clean]


def test_real_nfs_utils_1_3_4_nfsiostat_has_no_queue_column_and_reads_exe_minus_rtt():
    """bullseye's nfs-utils 1.3.4 prints no avg queue column (nor errors): the queue is exe - RTT."""
    text = layouts.read("bullseye/nfsiostat_mount.txt")
    assert "avg queue" not in text
    write = nfsiostat.parse(layout.clean(layouts.broken_columns(text)).text)[-1]["ops"]["write"]
    assert write["avg_queue_ms"] is None and write["errors"] is None and write["avg_exe_ms"] > 10 * write["avg_rtt_ms"]
    reading = readings.read_file("old", layouts.everything(text))
    assert [(s["layer"], s["weight"]) for s in reading["suspects"]] == [("client_rpc_slots", 2)]


def test_nfsiostat_without_avg_queue_column_takes_exe_minus_rtt():
    """nfs-utils 1.3.4 (Debian 11) prints no avg queue column: the queue is exe - RTT (2.6.2's output with it removed)."""
    text = layouts.read("bookworm/nfsiostat_mount.txt")
    old = text.replace("  avg queue (ms)", "").replace("          errors", "")
    old = "\n".join(" ".join(line.split()[:-3]) if line.strip()[:1].isdigit() and len(line.split()) == 10 else line
                    for line in old.split("\n"))
    reading = readings.read_file("old", old)
    assert reading["kind"] == "nfsiostat"
    assert any(s["layer"] == "client_rpc_slots" and s["weight"] == 2 for s in reading["suspects"])


def test_mountstats_command_pasted_from_rpc_statistics_on():
    text = layouts.read("bookworm/mountstats_cmd_rpc.txt")
    cut = text[text.index("RPC statistics:"):]
    for transform in layouts.LAYOUTS.values():
        pasted = layout.clean(transform(cut)).text
        assert recognise.kind_of(pasted) == "mountstats_report"
        mounts = mountstats_report.parse(pasted)
        assert mounts[0]["average_backlog"] == 0.0 and mounts[0]["requests_sent"] == 1251
        write = mounts[0]["ops"]["WRITE"]
        assert write["ops"] == 1209 and write["avg_queue_ms"] > 100 * write["avg_rtt_ms"]


def test_th_line_alone_with_threads_busy_is_server_threads():
    reading = readings.read_file("th", layouts.read("built/nfsd_th_busy.txt"))
    assert reading["kind"] == "nfsd" and reading["layers"] == ["server_threads"]
    assert [(s["layer"], s["weight"]) for s in reading["suspects"]] == [("server_threads", 2)]
    row = reading["evidence"][0]
    assert row["crossed"] and row["value"] == pytest.approx(3733.44 / 4698.31, abs=1e-4)


def test_th_line_of_current_kernels_is_no_evidence():
    reading = readings.read_file("nfsd", layouts.read("bookworm/nfsd_during.txt"))
    assert not any(s["layer"] == "server_threads" for s in reading["suspects"])
    assert any("keeps no busy-thread histogram" in note for note in reading["notes"])


def test_pool_stats_below_a_label_line():
    text = "cat /proc/fs/nfsd/pool_stats on nfs1, 10:02:\n" + layouts.read("bookworm/pool_stats_during.txt")
    reading = readings.read_file("pool", text)
    assert reading["kind"] == "pool_stats" and reading["evidence"][0]["value"] == pytest.approx(1 - 3231 / 4307, abs=1e-4)


def test_nfsstat_client_with_v_prints_server_tables_too_and_is_the_client():
    assert readings.read_file("c", layouts.read("bookworm/nfsstat_c_v_before.txt"))["kind"] == "nfsstat_client"


def test_unknown_and_empty_files_tell_nothing_and_say_why():
    for text, kind in (("", "empty"), ("\r\n \u00a0\n", "empty"), ("hello\nworld\n", "unknown"), ("\x00\xff" * 40, "unknown")):
        reading = readings.read_file("f", text)
        assert reading["kind"] == kind and reading["tells_nothing"]


def test_kernel_log_line_times():
    assert kernel_log.line_time("[  123.456789] nfs: server x OK") == 123.456789
    assert kernel_log.line_time("Dec 02 10:00:07 gpu017 kernel: nfs: server x OK") - \
        kernel_log.line_time("Dec 02 10:00:00 gpu017 kernel: nfs: server x not responding, still trying") == 7
    assert kernel_log.line_time("[Wed Dec  2 10:00:00 2026] nfs: server x OK") is not None
    assert kernel_log.line_time("2026-12-02T10:00:00+0000 gpu017 kernel: nfs: server x OK") is not None
    assert kernel_log.line_time("no time here") is None


def test_mountstats_command_retransmissions_and_high_rtt_point_past_the_client():
    """The lab's WRITE block with the retrans/major timeouts line the command prints when an op was retransmitted
    (mountstats.py display_rpc_op_stats), RTT high and queue low: the path or the server, and loss."""
    text = layouts.read("bookworm/mountstats_cmd_rpc.txt")
    block = text[text.index("WRITE:"):text.index("OPEN:")]
    lossy = block.replace("1209 ops (96%) ", "1209 ops (96%) \t121 retrans (10%) \t3 major timeouts").replace(
        "backlog wait: 30232.551696", "backlog wait: 2.500000").replace("total execute time: 30338.082713", "total execute time: 108.9")
    reading = readings.read_file("lossy", layouts.indented(lossy))
    assert reading["kind"] == "mountstats_report"
    assert sorted((s["layer"], s["weight"]) for s in reading["suspects"]) == [("network", 1), ("network", 2), ("server_storage", 1)]
