"""paste/disk_stats.py on real iostat/mdstat texts (tests/fixtures/paste_kinds/disk_stats, paste_corpus 011) and
constructed sar -d / diskstats ones."""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import disk_stats
from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.paste import kinds

BUSIEST = "%util of the busiest device (time with a request in flight)"


def test_serverfault_server_disk_at_100_percent_is_the_storage():
    # paste_corpus 011: the reporter found the NFS server's sdX saturated by interleaved reads.
    text = kinds.around(kinds.corpus("011_serverfault_329272_iostat_nfs_server_disk"))
    assert disk_stats.recognise(text)
    findings = disk_stats.read(text)
    busy = kinds.by_signal(findings, BUSIEST)[0]
    assert (busy["layer"], busy["value"], busy["crossed"], busy["weight"], busy["line"]) == (
        "server_storage", 1.0, True, 2, 4)
    assert busy["explanation"].startswith("sdX: %util 100.0 % of the interval, await 16.91 ms, queue 11.95")
    assert not kinds.by_signal(findings, "a device's await with requests queued")  # 16.91 ms: under 20 ms


def test_sysstat12_columns_are_found_by_name():
    findings = disk_stats.read(kinds.sample("disk_stats", "cmp_5_iostat_sysstat12"))
    busy = findings[0]
    assert (busy["value"], busy["weight"], busy["line"]) == (0.828, 2, 3)
    assert "dm-11" in busy["explanation"] and "await 2.94 ms, queue 2.38" in busy["explanation"]
    assert len(findings) == 1


def test_netflix_example_disks_are_idle():
    findings = disk_stats.read(kinds.sample("disk_stats", "netflix_60000ms_iostat_xz"))
    assert [(item["value"], item["crossed"], item["weight"]) for item in findings] == [(0.0026, False, 0)]
    assert findings[0]["explanation"].startswith("xvdc:")


def test_mdstat_degraded_and_recovering_are_faults():
    text = kinds.sample("disk_stats", "linux_raid_2003_mdstat_recovery")
    assert disk_stats.recognise(text)
    findings = disk_stats.read(text)
    assert [(item["fault"]["name"], item["value"]) for item in findings] == [
        ("raid_degraded", 1), ("raid_rebuild", 12266 * 1024.0)]
    assert "recovery at 6.6 %" in findings[1]["explanation"] and "308.6 min" in findings[1]["explanation"]


def test_mdstat_on_separate_lines_names_the_array():
    text = ("Personalities : [raid6]\nmd127 : active raid6 sdb[1] sdc[2] sdd[3] sde[4]\n      7813772288 blocks "
            "super 1.2 level 6, 512k chunk [4/4] [UUUU]\n      [==>....]  reshape =  0.0% (7892/976759936) "
            "finish=2804.9min speed=5463K/sec\n")
    findings = disk_stats.read(text)
    assert [(item["fault"]["name"], item["line"]) for item in findings] == [("raid_rebuild", 4)]
    assert findings[0]["explanation"].startswith("md127: reshape at 0.0 %")


def test_sar_d_rows_align_from_the_right_and_a_parallel_device_weighs_less():
    text = ("12:00:01 AM       DEV       tps     rkB/s     wkB/s   areq-sz    aqu-sz     await     %util\n"
            "12:10:01 AM   nvme0n1   9000.00      0.00 900000.00    100.00      4.10      0.45    100.00\n"
            "12:10:01 AM       sda     80.00      0.00   4000.00     50.00      3.50     45.00     60.00\n")
    findings = disk_stats.read(text)
    busy, queued = findings
    assert (busy["value"], busy["crossed"], busy["weight"]) == (1.0, True, 1)
    assert "in parallel" in busy["explanation"]
    assert (queued["value"], queued["weight"], queued["line"]) == (45.0, 1, 3)


def test_diskstats_alone_is_a_figure_since_boot():
    text = ("   8       0 sda 4500 100 360000 2000 9000 300 720000 50000 2 61000 52000 0 0 0 0\n"
            "   8      16 sdb 10 0 80 5 0 0 0 0 0 12 5 0 0 0 0\n")
    assert disk_stats.recognise(kinds.around(text))
    findings = disk_stats.read(text)
    assert [(item["value"], item["weight"]) for item in findings] == [(61.0, 0)]
    assert "2 I/O(s) in flight now" in findings[0]["explanation"]


def test_other_text_is_not_disk_statistics():
    assert not disk_stats.recognise("Device: none\nutil 100%\nmd5sum: ok\n")


@pytest.mark.parametrize("name, text", sorted(kinds.hostile(
    "Device: w/s await aqu-sz %util\nsda NUMBER NUMBER NUMBER NUMBER\nmd0 : active raid1 [NUMBER/1] [U_] "
    "recovery = NUMBER% speed=NUMBERK/sec\n 8 0 sda NUMBER 1 2 3 4 5 6 7 8 9 10\n").items()))
def test_hostile_input_is_read_in_under_a_second(name, text):
    (_found, seconds_recognise), (_read, seconds_read) = kinds.timed(disk_stats.recognise, text), kinds.timed(
        disk_stats.read, text)
    assert seconds_recognise + seconds_read < 1.0, name
