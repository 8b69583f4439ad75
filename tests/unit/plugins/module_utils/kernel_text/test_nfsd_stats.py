"""nfsd stats, pool_stats and D-state parsers on the lab captures and edge cases."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import dstate
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.nfsd_stats import (
    parse_nfsd_stats,
    parse_pool_stats,
    parse_pool_threads,
    parse_single_number,
)
from ansible_collections.ckptio.nfs.tests.unit.utils import read_sample

SEED = ("bundles", "seed_like_baseline")


def test_real_nfsd_stats():
    stats = parse_nfsd_stats(read_sample(*SEED, "servers", "nfs1", "nfsd_after.txt"))
    assert stats["io"] == {"bytes_read": 0, "bytes_written": 268435456}
    assert stats["rpc"]["calls"] == 4527
    assert stats["net"] == {"packets": 4527, "udp": 0, "tcp": 4527, "tcp_connections": 1}
    assert stats["threads"] == 8
    assert stats["proc4ops"]["WRITE"] == 4477 and stats["proc4ops"]["COMMIT"] == 11 and stats["proc4ops"]["SEQUENCE"] == 4523
    assert stats["proc3"]["WRITE"] == 0 and len(stats["proc3"]) == 22
    assert stats["proc4"] == {"NULL": 1, "COMPOUND": 4526}
    assert "ra" in stats["other"]


def test_nfsd_unknown_ops_and_lines():
    stats = parse_nfsd_stats("io 1 2 3\nproc4ops 78 " + " ".join(str(i) for i in range(78)) + "\nnewline 5 6\nth\n")
    assert stats["io"]["extra"] == [3]
    assert stats["proc4ops"]["REMOVEXATTR"] == 75 and stats["proc4ops"]["proc4ops_77"] == 77
    assert stats["other"]["newline"] == [5, 6]
    assert stats["threads"] is None


def test_pool_stats_by_header():
    stats = parse_pool_stats(read_sample(*SEED, "servers", "nfs1", "pool_stats_after.txt"))
    assert stats["columns"] == ["pool", "packets-arrived", "sockets-enqueued", "threads-woken", "threads-timedout"]
    assert stats["pools"] == [{"pool": 0, "packets-arrived": 7133, "sockets-enqueued": 7133, "threads-woken": 5769, "threads-timedout": 0}]
    older = parse_pool_stats("# pool packets-arrived sockets-enqueued threads-woken overloads-avoided threads-timedout\n0 10 4 6 0 1\n1 20 0 20 0 0\n")
    assert older["pools"][0]["overloads-avoided"] == 0 and older["pools"][0]["threads-timedout"] == 1
    assert older["pools"][1]["pool"] == 1
    assert parse_pool_stats("0 1 2 3\n") == {"columns": [], "pools": []}


def test_single_numbers():
    assert parse_single_number("8\n") == 8
    assert parse_single_number("") is None and parse_single_number(None) is None and parse_single_number("x") is None
    assert parse_pool_threads("4 4\n") == [4, 4]


def test_dstate_file_roundtrip_and_summary():
    samples = dstate.parse_dstate(read_sample(*SEED, "clients", "nfs2", "dstate.txt"))
    assert len(samples) == 16 and samples[0] == {"epoch": 1796025132.091, "count": 0, "wchans": []}
    summary = dstate.summarize_dstate(samples)
    # The reference numbers from NOTES.txt of the bundle.
    assert summary["max_count"] == 4
    assert summary["wchan_counts"] == {"folio_wait_bit_common": 44, "nfs_start_io_write": 6, "0": 1}
    assert summary["group_counts"]["shared_file_lock"] == 6
    assert summary["longest_run"] == 14
    line = dstate.format_sample(1796025133.092, ["nfs_start_io_write", "rpc_wait_bit_killable"])
    assert line == "1796025133.092 2 nfs_start_io_write,rpc_wait_bit_killable"
    assert dstate.format_sample(5, []) == "5.000 0 -"
    assert dstate.parse_dstate(line + "\nbad line\n")[0]["wchans"] == ["nfs_start_io_write", "rpc_wait_bit_killable"]


def test_dstate_task_from_stat_text():
    stat = "1234 (python3 (rank 0)) D 1 1234 1234 0 -1 4194560"
    assert dstate.task_state(stat) == "D"
    assert dstate.dstate_task("1234", stat, "rpc_wait_bit_killable\n") == {"pid": 1234, "wchan": "rpc_wait_bit_killable"}
    assert dstate.dstate_task("1234", stat, "") == {"pid": 1234, "wchan": "0"}
    assert dstate.dstate_task("1", "1 (systemd) S 0 1 1", "ep_poll") is None
    assert dstate.task_state("garbage") is None
    assert dstate.wchan_group("rpc_wait_bit_killable") == "rpc_wait"
    assert dstate.wchan_group("balance_dirty_pages") == "dirty_page_throttle"
    assert dstate.wchan_group("do_sys_poll") == "other"


def test_garbage_numbers_do_not_stop_the_parse():
    # float() accepts "nan" and "inf", int() of them raises; isdigit() accepts "²", int() does not.
    pool = parse_pool_stats("# pool packets-arrived sockets-enqueued threads-woken threads-timedout\n0 5 5 4 0\n1 nan inf 3 4\n2 inf\n")
    assert pool["pools"] == [{"pool": 0, "packets-arrived": 5, "sockets-enqueued": 5, "threads-woken": 4, "threads-timedout": 0}]
    stats = parse_nfsd_stats("io 0 512\nth nan 0\nproc4ops 3 inf 1 2\n\udcff\udcfe: nan\n")
    assert stats["io"]["bytes_written"] == 512 and stats["threads"] is None and stats["proc4ops"] == {}
    assert parse_pool_threads("8 \u00b2 4\n") == [8, 4]


def test_a_number_no_kernel_prints_ends_the_line_and_is_named():
    stats = parse_nfsd_stats("io 5 %s\nrpc 10 -1 0 0 0\nproc4ops 3 1 2 18446744073709551616\nth 8 0 0.000\n" % ("9" * 400))
    assert stats["io"] == {"bytes_read": 5} and stats["rpc"] == {"calls": 10} and stats["proc4ops"] == {"OP0": 1, "OP1": 2}
    assert stats["threads"] == 8
    found = stats["not_kernel_values"]
    assert len(found) == 3 and found[0].startswith("io field 2 is 9999") and "above 2^64" in found[0]
    assert found[1] == "rpc field 2 is -1: below 0, not a kernel value" and found[2].startswith("proc4ops field 4 is 18446744073709551616")
    pool = parse_pool_stats("# pool packets-arrived sockets-enqueued\n0 %s 5\n1 7 7\n" % ("9" * 400))
    assert pool["pools"] == [{"pool": 1, "packets-arrived": 7, "sockets-enqueued": 7}]
    assert "above 2^64" in pool["not_kernel_values"][0]
    assert parse_single_number("9" * 400) is None and parse_single_number("8\n") == 8


def test_a_dstate_line_with_a_number_that_is_none_is_skipped():
    text = "1700000000.100 2 a,b\n1e400 1 a\nnan 1 a\n1700000001.000 %s a\n1700000002.000 -3 a\n1700000003.000 0 -\n" % ("9" * 400)
    assert [sample["epoch"] for sample in dstate.parse_dstate(text)] == [1700000000.1, 1700000003.0]
