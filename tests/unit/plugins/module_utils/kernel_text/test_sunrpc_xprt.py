"""sysfs xprt_info / xprt_state and rpcctl, on text made by the kernel's own format strings (cited per test)."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import sunrpc_xprt

# net/sunrpc/sysfs.c rpc_sysfs_xprt_info_show (6.1, 6.12):
#   "last_used=%lu\ncur_cong=%lu\ncong_win=%lu\n" "max_num_slots=%u\nmin_num_slots=%u\nnum_reqs=%u\n"
#   "binding_q_len=%u\nsending_q_len=%u\npending_q_len=%u\n" "backlog_q_len=%u\nmain_xprt=%d\nsrc_port=%u\n"
#   "tasks_queuelen=%ld\ndst_port=%s\n"
INFO_6X = ("last_used=4295012345\ncur_cong=0\ncong_win=256\nmax_num_slots=128\nmin_num_slots=2\nnum_reqs=128\n"
           "binding_q_len=0\nsending_q_len=3\npending_q_len=120\nbacklog_q_len=44\nmain_xprt=1\nsrc_port=871\n"
           "tasks_queuelen=172\ndst_port=2049\n")
# The same function as first merged (5.14): ten fields, up to backlog_q_len.
INFO_514 = ("last_used=4295012345\ncur_cong=0\ncong_win=256\nmax_num_slots=65536\nmin_num_slots=2\nnum_reqs=12\n"
            "binding_q_len=0\nsending_q_len=0\npending_q_len=10\nbacklog_q_len=0\n")


def test_every_field_of_the_6x_format_is_read_by_name():
    info = sunrpc_xprt.parse_xprt_info(INFO_6X, "xprt-switches/switch-2/xprt-5-tcp")
    assert (info.num_reqs, info.max_num_slots, info.backlog_q_len, info.sending_q_len, info.pending_q_len) == (128, 128, 44, 3, 120)
    assert (info.cur_cong, info.cong_win, info.min_num_slots, info.main_xprt, info.src_port) == (0, 256, 2, 1, 871)
    assert (info.tasks_queuelen, info.dst_port, info.switch, info.xprt_id, info.protocol) == (172, "2049", 2, 5, "tcp")
    assert info.full and not info.closed


def test_the_first_format_leaves_the_later_fields_unknown_and_a_free_table_is_not_full():
    info = sunrpc_xprt.parse_xprt_info(INFO_514)
    assert info.num_reqs == 12 and info.src_port is None and info.dst_port is None and info.main_xprt is None
    assert not info.full


def test_a_closed_transport_and_an_empty_read():
    # later sysfs.c: `ret = sprintf(buf, "<closed>\n");` where it returned -ENOTCONN
    assert sunrpc_xprt.parse_xprt_info("<closed>\n").closed
    assert sunrpc_xprt.parse_xprt_info("") is None
    assert sunrpc_xprt.parse_xprt_info("garbage\n") is None


def test_xprt_state_keeps_the_set_flags_only():
    # rpc_sysfs_xprt_state_show: "state=%s %s %s %s %s %s %s %s %s %s %s %s\n", unset flags print ""
    assert sunrpc_xprt.parse_xprt_state("state=  CONNECTED    BOUND        \n") == ("CONNECTED", "BOUND")
    assert sunrpc_xprt.parse_xprt_state("state=CLOSED\n") == ("CLOSED",)


def test_rpcctl_xprt_show():
    # nfs-utils tools/rpcctl/rpcctl.py Xprt.__str__ (_xprt, _src_reqs, _cong_slots, _queues)
    text = ("xprt-0: tcp, 192.168.122.10, port 2049, state <CONNECTED,BOUND>, main\n"
            "\tSource: 192.168.122.11, port 871, Requests: 2\n"
            "\tCongestion: cur 0, win 256, Slots: min 2, max 2\n"
            "\tQueues: binding 0, sending 0, pending 2, backlog 37, tasks 39\n")
    [(info, address)] = sunrpc_xprt.parse_rpcctl(text)
    assert address == "192.168.122.10" and info.state == ("CONNECTED", "BOUND") and info.main_xprt == 1
    assert (info.num_reqs, info.max_num_slots, info.backlog_q_len, info.tasks_queuelen, info.src_port) == (2, 2, 37, 39, 871)
    assert info.full
