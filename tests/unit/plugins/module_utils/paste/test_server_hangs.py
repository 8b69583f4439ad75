"""Hangs read for what they are (issue 44): an nfsd thread blocked on the exported file system's lock is that file
system's bug, one blocked on its I/O is the server's storage; a soft mount that gave up is a misconfiguration; a
server not back by the log's last line hangs every hard mount of it. On real pastes of the corpus."""
from __future__ import annotations

import os

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import partial, readings
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path

CORPUS = sample_path("..", "paste_corpus")


def _read(text, name="paste.txt"):
    reading = readings.read_file(name, text)
    return reading, partial.partial_diagnosis([reading])


def _corpus(entry):
    with open(os.path.join(CORPUS, entry, "paste.txt"), encoding="utf-8") as handle:
        return _read(handle.read())


def _first_fault(result):
    assert result is not None and result["faults"], result and result["headline"]
    return result["faults"][0]


def test_nfsd_blocked_on_the_exported_file_systems_lock_is_that_file_systems_bug():
    # openzfs#2954 (zfs_zget's mutex), #4362 (zfs_range_lock), #2864 (dmu_zfetch's mutex): nfsd threads blocked more
    # than 120 s on a lock inside the exported file system; the tracker calls each a bug. Before: a generic hang.
    for entry, frame in (("008_zfs_2954_nfsd_blocked_zfs_zget", "mutex_lock"),
                         ("009_zfs_4362_hung_nfsd_zfs_range_lock", "zfs_range_lock"),
                         ("007_zfs_2864_nfsd_sysrq_deadlock", "mutex_lock")):
        _reading, result = _corpus(entry)
        fault = _first_fault(result)
        assert fault["kind"] == "bug", (entry, fault)
        assert fault["name"] == "nfsd_blocked_on_file_system_lock"
        assert frame in fault["what"] and "exported file system" in fault["what"]
        assert fault["tuning_fixes"] is False
        assert "sysrq" in fault["fix"]
        assert result["partial"]["capture_next"], entry


def test_a_lock_frame_the_unwinder_only_guessed_is_used_and_said_so():
    # openzfs#3997: the excerpt's only frame is "? __mutex_lock_common.isra.5" under a hung nfsd.
    _reading, result = _corpus("005_zfs_3997_nfsd_blocked_zfs_vget")
    fault = _first_fault(result)
    assert fault["kind"] == "bug" and "printed with '?'" in fault["what"]


def test_nfsd_blocked_on_the_exported_file_systems_io_is_the_servers_storage():
    # An nfsd write waiting for XFS's log to reach the disk (xfs_log_force_lsn under io_schedule): the storage under the
    # export does not complete I/O in 120 s - the server's storage, not a lock bug and not the client.
    text = "\n".join([
        "[ 3626.010524] INFO: task nfsd:2102 blocked for more than 120 seconds.",
        "[ 3626.010537] Call Trace:",
        "[ 3626.010546]  __schedule+0x2a2/0x870",
        "[ 3626.010552]  schedule+0x38/0xa0",
        "[ 3626.010556]  io_schedule+0x12/0x40",
        "[ 3626.010568]  xlog_wait_on_iclog+0x10b/0x130 [xfs]",
        "[ 3626.010580]  xfs_log_force_seq+0x9a/0x190 [xfs]",
        "[ 3626.010592]  xfs_file_fsync+0x1a4/0x210 [xfs]",
        "[ 3626.010600]  nfsd_commit+0x98/0x180 [nfsd]",
        "[ 3626.010608]  nfsd4_commit+0x47/0x70 [nfsd]",
    ])
    _reading, result = _read(text)
    fault = _first_fault(result)
    assert fault["kind"] == "server_storage" and fault["name"] == "nfsd_blocked_on_file_system_io"
    assert "io_schedule" in fault["what"]


def test_a_client_task_on_a_mutex_stays_a_hang():
    # aws-efs-csi-driver#141: mount.nfs4 on a mutex is a client task behind another; the rule is the server's nfsd only.
    _reading, result = _corpus("053_efs_csi_141_mount_nfs4_hung_task")
    assert _first_fault(result)["kind"] == "hang"


def test_a_lone_timed_out_line_is_not_taken_for_a_soft_mount():
    # longhorn#2549: the thread traced it to a soft,timeo=7 mount, but "not responding, timed out" is also printed for
    # a hard mount's calls that give up by design (RPC_TASK_TIMEOUT: NFSv4 RENEW, SEQUENCE, EXCHANGE_ID ... in
    # fs/nfs/nfs4proc.c, 6.12), so the line alone names no misconfiguration; the mount options would.
    _reading, result = _corpus("032_longhorn_2549_soft_mount_timed_out")
    assert "misconfiguration" not in [fault["kind"] for fault in result["faults"]]
    assert result["limiting_layer"] == "network"


def test_a_server_not_back_by_the_logs_end_hangs_its_hard_mounts():
    # kubernetes#90593: "NFS-server has died"; three "not responding, still trying" over 824 s and no "OK".
    reading, result = _corpus("002_k8s_90593_server_not_responding")
    fault = _first_fault(result)
    assert fault["kind"] == "hang" and fault["name"] == "server_not_back"
    assert "10.36.3.5" in fault["what"] and "824" in fault["rests_on"][0]
    # A server that came back ("OK") is an outage of the path or the server, not this fault (raspberrypi/linux#2482).
    reading, result = _corpus("003_rpi_2482_lan78xx_hung_fsync")
    assert "server_not_back" not in [fault["name"] for fault in result["faults"]]


def test_a_client_hung_waiting_for_the_server_beside_its_outage_is_the_outage():
    # raspberrypi/linux#2482: objcopy blocked more than 120 s in nfs_file_fsync while the same log has the server
    # "not responding" then "OK": the wait is the outage's (the thread: the client NIC driver), not a hang of its own.
    reading, result = _corpus("003_rpi_2482_lan78xx_hung_fsync")
    assert not [fault for fault in result["faults"] if fault["kind"] == "hang"]
    assert result["limiting_layer"] == "network"
    assert any("objcopy" in row["explanation"] for row in result["evidence"])
    # Without an outage in the log, the same wait stays a hang (aws-parallelcluster#1150).
    _reading, result = _corpus("010_pcluster_1150_hung_write_shared_volume")
    assert result["faults"][0]["kind"] == "hang"


def test_a_32_bit_arm_backtrace_is_read_frame_by_frame():
    # raspberrypi/linux#2482 (4.14 on ARM): "[<80a88018>] (schedule) from [<8015c138>] (io_schedule+0x14/0x3c)".
    from ansible_collections.ckptio.nfs.plugins.module_utils.paste import kernel_catalogue, kernel_log
    with open(os.path.join(CORPUS, "003_rpi_2482_lan78xx_hung_fsync", "paste.txt"), encoding="utf-8") as handle:
        text = handle.read()
    task = kernel_log.parse(text)["hung_tasks"][0]
    assert task["frames"][:3] == ["schedule", "io_schedule", "wait_on_page_bit"]
    assert task["waits_on"] == "writeback of its dirty pages"
    found = kernel_catalogue.find_stack_frames(text).hits[-1]
    assert [frame.name for frame in found.frames][:3] == ["__schedule", "schedule", "io_schedule"]


def test_a_proc_pid_stack_in_the_open_stateid_wait_is_a_hang():
    # nfs-ganesha#1327: `cat /proc/PID/stack` of a D-state writer, innermost nfs_set_open_stateid_locked [nfsv4]: it
    # waits for OPEN replies to update the open stateid in sequence and "appears to hang here indefinitely".
    reading, result = _corpus("052_ganesha_1327_dstate_open_stateid_stack")
    fault = _first_fault(result)
    assert fault["kind"] == "hang" and fault["name"] == "hung_in_nfs_set_open_stateid_locked"
    assert "in sequence" in fault["what"]
