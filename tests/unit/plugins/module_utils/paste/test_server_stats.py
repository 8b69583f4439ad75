"""paste/server_stats.py on real sar/perf texts (tests/fixtures/paste_kinds/server_stats) and constructed ones."""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import server_stats
from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.paste import kinds


def test_sar_n_nfs_of_an_iozone_run_has_no_retransmission_and_few_metadata_calls():
    text = kinds.sample("server_stats", "pcp_446_sar_n_nfs")
    assert server_stats.recognise(kinds.around(text))
    retrans, metadata = server_stats.read(text)
    assert (retrans["layer"], retrans["value"], retrans["crossed"], retrans["line"]) == ("network", 0.0, False, 6)
    assert "254.25 call/s (the mean of 8 rows)" in retrans["explanation"]
    assert metadata["layer"] == "access_pattern" and not metadata["crossed"]
    assert metadata["value"] == pytest.approx((136 + 155) / 2034.0)  # access + getatt over calls
    assert "at least 2034 calls seen" in metadata["explanation"]


def test_perf_top_contention_names_the_hottest_symbol():
    text = kinds.sample("server_stats", "zfs_4834_perf_top_spin_lock")
    assert server_stats.recognise(text)
    (hot,) = server_stats.read(text)
    assert (hot["layer"], hot["value"], hot["weight"], hot["line"]) == ("server_cpu", pytest.approx(0.2936), 1, 3)
    assert hot["explanation"].startswith("native_queued_spin_lock_slowpath 29.4 %")


def test_sar_retransmissions_and_the_average_row():
    text = ("10:00:01 AM    call/s retrans/s    read/s   write/s  access/s  getatt/s\n"
            "10:00:02 AM   1200.00     30.00      0.00    100.00    500.00    400.00\n"
            "Average:      1000.00     20.00      0.00    100.00    400.00    300.00\n")
    retrans, metadata = server_stats.read(text)
    assert (retrans["value"], retrans["crossed"], retrans["weight"], retrans["line"]) == (0.02, True, 2, 3)
    assert (metadata["value"], metadata["crossed"], metadata["weight"]) == (0.7, True, 2)


def test_sar_nfsd_bad_calls_and_metadata():
    text = ("10:00:01 scall/s badcall/s  packet/s     udp/s     tcp/s     hit/s    miss/s   sread/s  swrite/s "
            "saccess/s sgetatt/s\n10:00:02  100.00      5.00    100.00      0.00    100.00      0.00    100.00"
            "      1.00     10.00     40.00     40.00\n")
    bad, metadata = server_stats.read(text)
    assert (bad["layer"], bad["value"], bad["crossed"], bad["weight"]) == ("server_threads", 0.05, True, 1)
    assert (metadata["value"], metadata["crossed"]) == (0.8, False)  # 100 calls: no op mix
    assert "fewer than 1000" in metadata["explanation"]


def test_lock_stat_names_the_most_waited_lock():
    text = ("lock_stat version 0.4\n" + "-" * 40 + "\n      class name    con-bounces    contentions   waittime-min"
            "   waittime-max waittime-total   waittime-avg    acq-bounces   acquisitions   holdtime-min   holdtime-max"
            " holdtime-total   holdtime-avg\n\n"
            "  &sb->s_type->i_mutex_key#3:  46  84  0.26  939.10  16371.53  194.90  47291  2922365  0.16  2220.69  "
            "17464.32  5.99\n"
            "  &rq->lock:  10  12  0.10  5.00  30.00  2.50  50  100000  0.10  1.00  500.00  0.01\n")
    (lock,) = server_stats.read(text)
    assert (lock["layer"], lock["value"], lock["weight"], lock["line"]) == ("access_pattern", 16371.53, 1, 5)


def test_other_text_is_not_server_statistics():
    assert not server_stats.recognise("call/s is a unit\n[k] kilo\n")


@pytest.mark.parametrize("name, text", sorted(kinds.hostile(
    "01:00:00 call/s retrans/s read/s write/s access/s getatt/s\n01:00:01 NUMBER 1 1 1 1 1\n"
    "  NUMBER.10%  [kernel]  [k] nfsd_NUMBER\n").items()))
def test_hostile_input_is_read_in_under_a_second(name, text):
    (_found, seconds_recognise), (_read, seconds_read) = kinds.timed(server_stats.recognise, text), kinds.timed(
        server_stats.read, text)
    assert seconds_recognise + seconds_read < 1.0, name
