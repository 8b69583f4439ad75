"""paste/benchmarks.py on real benchmark texts (tests/fixtures/paste_kinds/benchmarks, paste_corpus dd/time entries)."""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import benchmarks
from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.paste import kinds


def test_dd_rates_are_the_bytes_over_the_seconds_with_a_decimal_comma():
    # paste_corpus 026 (ltsp#27): a German locale's "232,651 s" and "2,2 MB/s".
    text = kinds.corpus("026_ltsp_27_dd_nfsroot_lag")
    assert benchmarks.recognise(kinds.around(text))
    findings = benchmarks.read(text)
    assert [(item["signal"], item["value"], item["line"]) for item in findings] == [
        ("dd read rate", 507510784 / 186.0, 2), ("dd read rate", 511705088 / 232.651, 4)]


def test_dd_direct_write_and_read_on_a_cluster_nfs():
    findings = benchmarks.read(kinds.corpus("059_csc4005_65_dd_direct_cluster_nfs"))
    assert [(item["signal"], item["value"]) for item in findings] == [
        ("dd write rate", 536870912 / 7.33619), ("dd read rate", 536870912 / 5.07156)]
    assert all(item["weight"] == 0 and item["layer"] is None for item in findings)


def test_time_of_a_command_is_its_seconds_with_the_command():
    findings = benchmarks.read(kinds.corpus("036_juicefs_2594_time_ls_nfs_export"))
    assert [(item["value"], item["line"]) for item in findings] == [(636.13, 2), (0.335, 8)]
    assert findings[0]["explanation"].endswith("time ls /mnt/nfs")


def test_mdtest_summary_means_in_ops_per_second():
    text = kinds.sample("benchmarks", "ior_452_mdtest_summary")
    assert benchmarks.recognise(text)
    findings = benchmarks.read(text)
    assert [(item["signal"], item["value"]) for item in findings][:2] == [
        ("mdtest File creation rate", 24392.579), ("mdtest File stat rate", 50747.78)]
    assert len(findings) == 6


def test_ior_max_write_in_bytes_per_second():
    (found,) = benchmarks.read(kinds.sample("benchmarks", "ior_27_max_write"))
    assert (found["signal"], found["value"]) == ("IOR write rate", 25154.87 * 1024 ** 2)


def test_fio_job_rate_and_its_99th_percentile():
    findings = benchmarks.read(kinds.sample("benchmarks", "jupyterhub_home_nfs_6_fio_efs"))
    assert [(item["signal"], item["value"], item["line"]) for item in findings] == [
        ("fio read rate", 10.9 * 1024 ** 2, 2), ("fio read completion latency, 99th percentile", 205.0, 10)]
    assert "2801 IOPS" in findings[0]["explanation"]


def test_fio_group_status_wins_over_job_lines_and_creates_slower_than_writes_point_at_metadata():
    text = ("  write: IOPS=228, BW=228MiB/s (239MB/s)(32.0GiB/143659msec)\n"
            "Run status group 0 (all jobs):\n  WRITE: bw=228MiB/s (239MB/s), 228MiB/s-228MiB/s (239MB/s-239MB/s), "
            "io=32.0GiB (34.4GB), run=143659-143659msec\n"
            "   File creation               120.500      110.100      115.300          4.000\n")
    findings = benchmarks.read(text)
    assert [item["signal"] for item in findings] == ["fio write rate", "mdtest File creation rate",
                                                     "files created per second over MiB written per second"]
    ratio = findings[-1]
    assert (ratio["layer"], ratio["value"], ratio["crossed"], ratio["weight"]) == (
        "access_pattern", pytest.approx(115.3 / 228), True, 1)


def test_mdtest_with_a_decimal_comma():
    (found,) = benchmarks.read("   File creation             :        184,086        184,077        184,081\n")
    assert found["value"] == 184.081


def test_other_text_is_not_a_benchmark():
    assert not benchmarks.recognise("the real thing copied from bw= notes\n")


@pytest.mark.parametrize("name, text", sorted(kinds.hostile(
    "NUMBER bytes (1 GB) copied, NUMBER s, NUMBER MB/s\n  write: IOPS=NUMBER, BW=NUMBERMiB/s\n"
    "   File creation  NUMBER NUMBER NUMBER 0\nMax Write: NUMBER MiB/sec\nreal 0mNUMBERs\n").items()))
def test_hostile_input_is_read_in_under_a_second(name, text):
    (_found, seconds_recognise), (_read, seconds_read) = kinds.timed(benchmarks.recognise, text), kinds.timed(
        benchmarks.read, text)
    assert seconds_recognise + seconds_read < 1.0, name
