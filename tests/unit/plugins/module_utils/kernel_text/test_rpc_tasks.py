"""debugfs rpc_clnt/ID/tasks and rpc_show_tasks' kernel log lines, on text made by the kernel's format strings."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import rpc_tasks

# net/sunrpc/debugfs.c tasks_show: "%5u %04x %6d 0x%x 0x%x %8ld %ps %sv%u %s a:%ps q:%s\n"; %ps of a module's symbol
# adds " [module]". Kernels after 6.12 end with tasks_stop's "clnt[%pISpc] RPC tasks[%d]\n".
DEBUGFS = ("  291 0a81      0 0x4 0x6c3a1f2e    59988 nfs_pgio_common_ops [nfs] nfsv4 WRITE a:call_status [sunrpc] "
           "q:xprt_pending\n"
           "  292 0a81      0 0x4 0x0        0 nfs_pgio_common_ops [nfs] nfsv4 WRITE a:call_start [sunrpc] "
           "q:ForeChannel Slot table\n"
           "  293 0a81      0 0x4 0x6c3a1f2f        0 nfs_pgio_common_ops [nfs] nfsv4 WRITE a:call_transmit [sunrpc] "
           "q:xprt_sending\n"
           "  294 0281      0 0x4 0x0        0 nfs4_sequence_ops [nfsv4] nfsv4 SEQUENCE a:call_reserveresult [sunrpc] "
           "q:none\n"
           "clnt[192.168.122.10:2049] RPC tasks[4]\n")
# net/sunrpc/clnt.c rpc_show_task: "%5u %04x %6d %8p %8p %8ld %8p %sv%u %s a:%ps q:%s\n" after rpc_show_header's line.
KERNEL_LOG = ("[ 1234.500001] -pid- flgs status -client- --rqstp- -timeout ---ops--\n"
              "[ 1234.500002] 17744 0801      0 00000000a1b2c3d4 0000000000000000        0 00000000deadbeef nfsv3 WRITE "
              "a:call_reserveresult q:xprt_backlog\n")


def test_each_task_and_the_queue_it_sleeps_on():
    tasks = rpc_tasks.parse_tasks(DEBUGFS)
    assert [task.queue for task in tasks.tasks] == ["xprt_pending", "ForeChannel Slot table", "xprt_sending", "none"]
    first = tasks.tasks[0]
    assert (first.pid, first.client_id, first.xid, first.program, first.version, first.procedure) == (
        291, 4, 0x6c3a1f2e, "nfs", 4, "WRITE")
    assert first.action == "call_status [sunrpc]" and tasks.tasks[1].xid == 0
    assert tasks.queue_counts()[rpc_tasks.SESSION_SLOT_QUEUE] == 1
    assert (tasks.server, tasks.task_count) == ("192.168.122.10:2049", 4)
    assert rpc_tasks.server_address(tasks.server) == "192.168.122.10"
    assert rpc_tasks.server_address("[2001:db8::1]:2049") == "2001:db8::1"


def test_the_kernel_log_form_has_no_client_id_or_xid():
    [task] = rpc_tasks.parse_tasks(KERNEL_LOG).tasks
    assert (task.pid, task.client_id, task.xid, task.version, task.queue) == (17744, None, 0, 3, "xprt_backlog")


def test_a_6_12_file_without_the_trailer_and_newer_flags():
    # tk_flags became %08x in rpc_show_task when the flags outgrew 16 bits; debugfs kept %04x (both read)
    tasks = rpc_tasks.parse_tasks("    7 00000a81      0 0x0 0x12    60000 rpc_default_ops [sunrpc] nfsv4 NULL a:call_bind [sunrpc] q:none\n")
    assert tasks.server is None and tasks.tasks[0].flags == "00000a81"


def test_the_xprt_info_of_debugfs_names_the_server():
    # net/sunrpc/debugfs.c xprt_info_show: "netid: %s\n" "addr:  %s\n" "port:  %s\n" "state: 0x%lx\n"
    info = rpc_tasks.parse_xprt_debugfs_info("netid: tcp\naddr:  192.168.122.10\nport:  2049\nstate: 0x12\n")
    assert info == {"netid": "tcp", "addr": "192.168.122.10", "port": "2049", "state": "0x12"}
