"""paste/nfsslower.py: bcc's nfsslower output (table and -j CSV), on the tool's own examples and a real PR's paste."""
from __future__ import annotations

import os

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import nfsslower, partial, readings
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path

CORPUS = sample_path("..", "paste_corpus")
KINDS = sample_path("..", "paste_kinds", "nfsslower")


def _text(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def test_slow_commits_point_at_the_servers_storage():
    # iovisor/bcc#4368: dd's writes slow to 751 ms, then COMMITs of about 27 s from kworker threads; the author puts
    # the write delay on those COMMITs (a COMMIT returns when the server has the data on stable storage).
    text = _text(os.path.join(CORPUS, "049_bcc_4368_nfsslower_commit_latency", "paste.txt"))
    assert nfsslower.recognise(text)
    reading = readings.read_file("paste.txt", text)
    assert reading["kind"] == "nfsslower" and reading["tells_nothing"] is None
    result = partial.partial_diagnosis([reading])
    assert result["limiting_layer"] == "server_storage"
    commit = next(row for row in result["evidence"] if row["signal"].startswith("slowest COMMIT"))
    assert commit["crossed"] and abs(commit["value"] - 27592.04) < 0.01 and "3 COMMIT" in commit["explanation"]
    write = next(row for row in result["evidence"] if row["signal"].startswith("slowest WRITE"))
    assert abs(write["value"] - 751.02) < 0.01
    assert result["partial"]["capture_next"]


def test_the_tools_own_examples_are_read_and_name_nothing():
    # bcc's nfsslower_example.txt: writes of 10-24 ms over a 10 ms threshold, and the -j CSV of every op (microseconds).
    reading = readings.read_file("writes.txt", _text(os.path.join(KINDS, "bcc_example_dd_writes.txt")))
    assert reading["kind"] == "nfsslower"
    write = next(row for row in reading["evidence"] if row["signal"].startswith("slowest WRITE"))
    assert abs(write["value"] - 24.27) < 0.01 and not write["crossed"] and "10 WRITE" in write["explanation"]
    assert partial.partial_diagnosis([reading])["limiting_layer"] == "none"
    reading = readings.read_file("csv.txt", _text(os.path.join(KINDS, "bcc_example_csv.txt")))
    assert reading["kind"] == "nfsslower"
    read = next(row for row in reading["evidence"] if row["signal"].startswith("slowest READ"))
    assert abs(read["value"] - 0.056) < 1e-9


def test_other_file_systems_slower_tools_are_not_taken_for_nfs():
    # ext4slower/xfsslower print the same header; without "Tracing NFS" or an NFS-only op (C, G) it is not nfsslower.
    text = ("Tracing ext4 operations slower than 10 ms\nTIME     COMM           PID    T BYTES   OFF_KB   LAT(ms) FILENAME\n"
            "06:35:01 cron           16464  R 1249    0          16.05 common-auth\n")
    assert not nfsslower.recognise(text)
