# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel message catalogue and its linear-time recogniser (issue 44)."""

from __future__ import annotations

import time

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import kernel_catalogue, kernel_messages
from ansible_collections.ckptio.nfs.plugins.module_utils.paste.kernel_catalogue import find_messages, find_stack_frames

LAYERS = {"network", "network_loss", "client_rpc_slots", "server_threads", "server_cpu", "server_storage", "access_pattern",
          "client_cpu", "fault_hang", "fault_bug", "misconfiguration", "informational"}
FILL = {"%d": "42", "%x": "1f", "%s": "srv01"}


def filled(message):
    """The message as the kernel would print it, its holes filled with plausible values."""
    return "".join(FILL[piece] if index % 2 else piece for index, piece in enumerate(message.pieces))


def formats_on(text, line=1):
    return [hit.message.format for hit in find_messages(text).hits if hit.line == line]


# (a) every catalogued entry, printed as dmesg and (a sample) as syslog and journalctl -k print it.
@pytest.mark.parametrize("message", kernel_catalogue.MESSAGES, ids=lambda message: message.format[:60])
def test_every_entry_is_found_in_a_dmesg_line(message):
    line = "[12345.678901] " + filled(message)
    hits = [hit for hit in find_messages(line).hits if hit.message is message]
    assert len(hits) == 1
    assert hits[0].line == 1
    assert hits[0].args == tuple(FILL[piece] for piece in message.pieces[1::2])


@pytest.mark.parametrize("message", kernel_catalogue.MESSAGES[::5], ids=lambda message: message.format[:60])
def test_a_sample_is_found_behind_syslog_and_journal_prefixes(message):
    text = "\n".join(["some unrelated console text", "Dec  2 10:00:00 gpu-node-17 kernel: " + filled(message),
                      "2026-12-02T10:00:01.123456+00:00 gpu-node-17 kernel: " + filled(message), "$ "])
    assert message.format in formats_on(text, 2)
    assert message.format in formats_on(text, 3)


def test_hand_annotated_entries_are_the_first_hit_on_their_line():
    hand = [message for message in kernel_catalogue.MESSAGES if message.hand]
    assert len(hand) >= 60
    for message in hand:
        assert message.layer_or_fault in LAYERS
        assert message.meaning and message.fix
        assert formats_on("[  1.000000] " + filled(message))[0] == message.format


def test_every_entry_names_where_the_kernel_prints_it():
    versions = {version for version, _source in kernel_messages.VERSIONS}
    assert versions == {"5.10", "6.1", "6.12"}
    for message in kernel_catalogue.MESSAGES:
        assert message.sites and {version for version, _site, _function in message.sites} <= versions
        assert all(site.startswith(("fs/nfs/", "fs/nfsd/", "fs/lockd/", "net/sunrpc/")) for _v, site, _f in message.sites)
        assert message.layer_or_fault in LAYERS
        assert message.level in {"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"}


def test_a_line_that_only_looks_like_a_message_is_not_one():
    assert not formats_on("[  1.0] nfs: server fs01 not responding, still")
    assert "%s: server %s OK" not in formats_on("[  1.0] nfs: server fs01 not responding, still trying")
    assert not formats_on("nfsd: last server has exited")


# (b) real lines from public threads, verbatim.
def test_real_not_responding_and_ok_lines():
    # github.com/nfs-ganesha/nfs-ganesha issue 1295 (kernel client against Ganesha).
    text = ("[1576939.453001] nfs: server 100.73.159.36 not responding, still trying\n"
            "[871222.760083] nfs: server 100.73.159.36 OK\n"
            # github.com/linux-surface/linux-surface issue 1494.
            "[32495.562824] nfs: server thinkcentre not responding, timed out\n")
    hits = find_messages(text).hits
    assert [(hit.line, hit.message.format, hit.args) for hit in hits] == [
        (1, "%s: server %s not responding, still trying", ("nfs", "100.73.159.36")),
        (2, "%s: server %s OK", ("nfs", "100.73.159.36")),
        (3, "%s: server %s not responding, timed out", ("nfs", "thinkcentre")),
    ]
    assert hits[0].message.layer_or_fault == "network"


def test_real_too_many_open_connections_line():
    # github.com/BiBiServ/bibigrid issue 695 (journalctl -xe | grep nfsd, an older kernel's wording of the %s).
    hits = find_messages("kernel: nfsd: too many open connections, consider increasing the number of threads").hits
    assert hits[0].message.format == "%s: too many open connections, consider increasing the %s"
    assert hits[0].args == ("nfsd", "number of threads")
    assert hits[0].message.layer_or_fault == "server_threads"


def test_real_module_load_lines():
    # github.com/nfs-ganesha/nfs-ganesha issue 656.
    text = ("[84076.484994] RPC: Registered named UNIX socket transport module.\n"
            "[84076.532267] NFS: Registering the id_resolver key type\n")
    assert [(hit.line, hit.args) for hit in find_messages(text).hits] == [(1, ("named UNIX socket",)), (2, ("id_resolver",))]


def test_real_older_wording_is_not_taken_for_the_catalogued_one():
    # github.com/kubernetes/kubernetes issue 15668: a 4.x kernel's "...in a container!", which v5.10+ print as
    # "...in a container ignored." (fs/nfsd/nfs4recover.c nfsd4_legacy_tracking_init).
    line = "[53795.894395] NFSD: attempt to initialize legacy client tracking in a container!"
    assert formats_on(line) == []


def test_real_hung_nfsd_trace():
    # github.com/openzfs/zfs issue 1060, verbatim up to the last whole frame.
    text = """INFO: task nfsd:7576 blocked for more than 120 seconds.
"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.
nfsd          D 0000000000000006     0  7576      2 0x00000080
 ffff880c281c5b70 0000000000000046 ffff880c2fb99d80 000000012fb99d80
 ffff880c3fc01500 000412d02fb99d80 ffff880c1b70b600 ffffffffa0330500
 ffff880c201685f8 ffff880c281c5fd8 000000000000f4e8 ffff880c201685f8
Call Trace:
 [<ffffffff81090dfe>] ? prepare_to_wait_exclusive+0x4e/0x80
 [<ffffffffa01c453c>] cv_wait_common+0x9c/0x1a0 [spl]
 [<ffffffff81090bf0>] ? autoremove_wake_function+0x0/0x40
 [<ffffffffa01c4673>] __cv_wait+0x13/0x20 [spl]
 [<ffffffffa031b704>] zil_commit+0x74/0x6a0 [zfs]
 [<ffffffffa01c668d>] ? tsd_set+0x32d/0x750 [spl]
 [<ffffffffa03259f0>] ? zpl_open+0x0/0x90 [zfs]
 [<ffffffff814edf3e>] ? mutex_lock+0x1e/0x50
 [<ffffffffa0310557>] zfs_fsync+0x97/0x120 [zfs]
 [<ffffffffa0325906>] zpl_fsync+0x46/0x70 [zfs]
 [<ffffffff811a5431>] vfs_fsync_range+0xa1/0xe0
 [<ffffffff811a54dd>] vfs_fsync+0x1d/0x20
 [<ffffffffa04d7dcb>] nfsd_commit+0x6b/0xa0 [nfsd]
 [<ffffffffa04de15d>] nfsd3_proc_commit+0x9d/0x100 [nfsd]
 [<ffffffffa04d043e>] nfsd_dispatch+0xfe/0x240 [nfsd]
"""
    (report,) = find_stack_frames(text).hits
    assert (report.line, report.task, report.pid, report.seconds) == (1, "nfsd", 7576, 120)
    assert [frame.name for frame in report.frames][:3] == ["prepare_to_wait_exclusive", "cv_wait_common", "autoremove_wake_function"]
    assert len(report.frames) == 15
    assert report.frames[1].module == "spl" and report.frames[0].unsure and not report.frames[1].unsure
    assert report.waits_on.name == "nfsd_commit" and report.waits_on.layer_or_fault == "server_storage"


def test_modern_trace_with_task_markers_and_unsure_frames():
    text = "\n".join([
        "[ 1234.567890] INFO: task python3:4321 blocked for more than 122 seconds.",
        "[ 1234.567901]       Not tainted 6.1.0-18-amd64 #1 Debian 6.1.76-1",
        "[ 1234.567920] task:python3         state:D stack:0     pid:4321  ppid:1      flags:0x00000002",
        "[ 1234.567930] Call Trace:",
        "[ 1234.567931]  <TASK>",
        "[ 1234.567932]  __schedule+0x34d/0x9e0",
        "[ 1234.567933]  ? nfs_wait_on_request",
        "[ 1234.567934]  schedule+0x5a/0xd0",
        "[ 1234.567935]  rpc_wait_bit_killable+0x11/0x70 [sunrpc]",
        "[ 1234.567936]  __wait_on_bit+0x41/0x110",
        "[ 1234.567937]  nfs_file_fsync+0x6a/0x1e0 [nfs]",
        "[ 1234.567938]  </TASK>",
        "[ 1234.567939] nfs: server fs01 not responding, still trying",
    ])
    (report,) = find_stack_frames(text).hits
    assert [frame.name for frame in report.frames] == ["__schedule", "nfs_wait_on_request", "schedule", "rpc_wait_bit_killable",
                                                       "__wait_on_bit", "nfs_file_fsync"]
    assert report.frames[1].unsure and report.frames[1].layer_or_fault == "client_rpc_slots"
    assert report.waits_on.name == "rpc_wait_bit_killable" and report.waits_on.module == "sunrpc"
    assert formats_on(text, 13) == ["%s: server %s not responding, still trying"]


def test_frame_families_in_the_hand_table():
    text = "Call Trace:\n nfs4_callback_compound+0x1/0x2 [nfsv4]\n nfsd4_cb_recall_done+0x1/0x2 [nfsd]\n pnfs_update_layout+0x1/0x2 [nfsv4]\n" \
           " pnfs_layout_process+0x1/0x2 [nfsv4]\n xprt_alloc_slot+0x1/0x2 [sunrpc]\n"
    (report,) = find_stack_frames(text).hits
    assert report.task is None
    assert [frame.layer_or_fault for frame in report.frames] == ["informational", "network", "fault_hang", "fault_hang", "client_rpc_slots"]


# (c) hostile inputs: each must finish in well under a second (bound 1 s; measured figures in the comments).
def timed(function, text):
    start = time.perf_counter()
    result = function(text)
    return result, time.perf_counter() - start


def test_hostile_one_megabyte_line_of_rpc_prefixes():
    # measured 0.0015 s (find_messages) and 0.0003 s (find_stack_frames) on the shared 2-core dev machine
    text = "RPC: " * 200_000
    for function in (find_messages, find_stack_frames):
        result, seconds = timed(function, text)
        assert seconds < 1.0 and not result.truncated


def test_hostile_blank_lines():
    # measured 0.02 s and 0.04 s
    for function in (find_messages, find_stack_frames):
        result, seconds = timed(function, "\n" * 60_000)
        assert seconds < 1.0 and result.hits == ()


def test_hostile_task_repeats():
    # measured 0.001 s and 0.0001 s ("task " 100,000 times on one line)
    for function in (find_messages, find_stack_frames):
        result, seconds = timed(function, "task " * 100_000)
        assert seconds < 1.0 and result.hits == ()


def test_hostile_task_lines():
    # 100,000 lines "INFO: task ": every line shares the word "task" with an entry, so each is verified.
    # measured 0.58 s and 0.14 s: the slowest case found, bound 3 s for a loaded machine
    for function in (find_messages, find_stack_frames):
        result, seconds = timed(function, "INFO: task \n" * 100_000)
        assert seconds < 3.0 and result.hits == ()


def test_hostile_huge_number_after_a_message_prefix():
    # measured 0.0002 s and 0.00005 s: a line is read to MAX_LINE characters, so the number is cut, never parsed whole
    text = "[1.0] lockd: unexpected server status " + "9" * 60_000 + "\nINFO: task x:1 blocked for more than " + "9" * 60_000
    result, seconds = timed(find_messages, text)
    assert seconds < 1.0
    assert result.hits[0].message.format == "lockd: unexpected server status %d" and len(result.hits[0].args[0]) <= 40
    result, seconds = timed(find_stack_frames, text)
    assert seconds < 1.0 and result.hits == ()


def test_text_over_the_bound_is_cut_and_says_so():
    line = "[1.0] nfs: server fs01 OK"
    text = line + "\n" + ("x" * 4000 + "\n") * (kernel_catalogue.MAX_TEXT // 4000) + line
    for function in (find_messages, find_stack_frames):
        assert function(text).truncated
    assert [hit.line for hit in find_messages(text).hits] == [1]
    assert not find_messages(line + "\n" + line).truncated


def test_not_text_reads_as_nothing():
    assert find_messages(None) == ((), False)
    assert find_stack_frames(b"INFO: task") == ((), False)
