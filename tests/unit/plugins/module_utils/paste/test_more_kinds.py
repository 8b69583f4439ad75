"""Incident texts beyond the NFS statistics files, read by the paste path (issue 44), on real pastes of the corpus."""
from __future__ import annotations

import os

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import partial, readings
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path

CORPUS = sample_path("..", "paste_corpus")
KINDS = sample_path("..", "paste_kinds")


def _paste(path, target=None):
    with open(path, encoding="utf-8") as handle:
        reading = readings.read_file(os.path.basename(path), handle.read())
    return reading, partial.partial_diagnosis([reading], target=target)


def test_a_kernel_line_that_names_its_own_fix_is_read_not_refused():
    # bibigrid#695: "kernel: nfsd: too many open connections, consider increasing the number of threads" in a journal
    # excerpt without time stamps was "unrecognised file" before issue 44.
    reading, result = _paste(os.path.join(CORPUS, "001_bibigrid_nfsd_too_many_connections", "paste.txt"))
    assert reading["tells_nothing"] is None
    assert result["limiting_layer"] == "server_threads"
    assert any("too many open connections" in row["explanation"] for row in result["evidence"])


def test_a_training_log_with_sizes_is_a_window_judged_against_the_target():
    # dlio_benchmark#270: one save of 77.1101 s at 1.1394 GB/s.
    _reading, result = _paste(os.path.join(KINDS, "training_log", "dlio_270_checkpoint_print.txt"),
                              target={"checkpoint_bytes": 2.4e12, "window_seconds": 300})
    assert result["verdict"] == "below_target" and result["window"]["kind"] == "training_log"
    assert abs(result["achieved_bytes_per_second"] - 1.1394e9) < 1e6
    assert result["first_screen"][1].startswith("The slowest checkpoint wrote 1.14 GB/s: 7x short of the target")


def test_a_training_log_of_durations_only_is_read_with_the_targets_checkpoint_size():
    # Megatron-LM#1763: save-checkpoint (min, max) across ranks 39899.66 / 39899.95 ms, no size: the target's 2.4 TB
    # over the slowest rank's 39.89995 s is the rate, said as such (and below 80 GB/s exactly as 39.9 s is over 30 s).
    _reading, result = _paste(os.path.join(KINDS, "training_log", "megatron_1763_async_save_timer.txt"),
                              target={"checkpoint_bytes": 2.4e12, "window_seconds": 30})
    assert result["verdict"] == "below_target"
    assert abs(result["achieved_bytes_per_second"] - 2.4e12 / 39.89995) < 1e3
    assert "the checkpoint's size as the target gives it" in result["achieved_source"]
    _reading, result = _paste(os.path.join(KINDS, "training_log", "megatron_1763_async_save_timer.txt"))
    assert result["verdict"] == "no_target" and result["achieved_bytes_per_second"] is None


def test_a_deepspeed_log_with_writer_statistics_is_a_window_with_a_throughput_and_a_verdict():
    # show_statistics: each checkpoint 13417956 B; the slower (step 10) wrote in 0.0063 s of write() calls.
    _reading, result = _paste(os.path.join(KINDS, "training_log", "deepspeed_produced_cpu_writer_statistics.txt"),
                              target={"checkpoint_bytes": 13417956, "window_seconds": 1})
    assert result["verdict"] == "meets_target" and result["window"]["kind"] == "training_log"
    assert abs(result["achieved_bytes_per_second"] - 13417956 / 0.006314277648925781) < 1e3
    _reading, result = _paste(os.path.join(KINDS, "training_log", "deepspeed_produced_cpu_writer_statistics.txt"),
                              target={"checkpoint_bytes": 1e12, "window_seconds": 1})
    assert result["verdict"] == "below_target"


def test_a_lightning_log_with_the_simple_profiler_is_judged_on_its_mean_save_time():
    # Trainer(profiler="simple"): save_checkpoint mean 0.068505 s over 3 calls, no size.
    path = os.path.join(KINDS, "training_log", "lightning_produced_cpu_simple_profiler.txt")
    _reading, result = _paste(path, target={"checkpoint_bytes": 16782105, "window_seconds": 1})
    assert result["verdict"] == "meets_target" and abs(result["achieved_bytes_per_second"] - 16782105 / 0.068505) < 1
    assert result["window"]["seconds"] == 0.068505
    _reading, result = _paste(path, target={"checkpoint_bytes": 16782105, "window_seconds": 0.05})
    assert result["verdict"] == "below_target"


def test_a_collective_timeout_is_a_fault_named_first():
    _reading, result = _paste(os.path.join(KINDS, "training_log", "nccl_torchtune_2093_save_timeout.txt"))
    assert [fault["name"] for fault in result["faults"]][:1] == ["collective_timeout"]
    assert result["faults"][0]["kind"] == "hang"
    assert result["first_screen"][1].startswith("A fault, not a capacity limit")


def test_a_mount_option_misconfiguration_is_a_fault_with_its_fix():
    # kubernetes#123960: a soft NFS mount (nfsmount.conf) - the thread's fix: hard.
    _reading, result = _paste(os.path.join(CORPUS, "014_k8s_123960_nfsmount_conf_soft", "paste.txt"))
    names = [fault["name"] for fault in result["faults"]]
    assert "soft_mount" in names and all(fault["kind"] == "misconfiguration" for fault in result["faults"])


def test_a_text_without_any_reader_says_what_it_skipped():
    reading, result = _paste_text("some prose\nnfs is slow today, ls hangs\n")
    assert result is None
    assert "1 line(s) name NFS or RPC but none is a message, figure or setting read here" in reading["tells_nothing"]


def _paste_text(text):
    reading = readings.read_file("note.txt", text)
    return reading, partial.partial_diagnosis([reading])


def test_a_text_that_holds_an_nfs_kernel_line_is_never_refused():
    # Real pastes whose NFS kernel lines no catalogue entry or hang report explains: rpcdebug's "RPC:" lines
    # (nfs-ganesha#549, #906), an nfsd stack without its hung-task header (openzfs#4648). They were refused ("holds no
    # figure"); they are read, said as such, and the partial diagnosis lists the captures that would tell more.
    # (nfs-ganesha#1327's /proc/PID/stack is now a hang report of its own: test_server_hangs.py.)
    for entry in ("039_ganesha_549_client_xprt_pending", "043_zfs_4648_nfsd_deadlock_zfs_vget",
                  "058_ganesha_906_rpcdebug_send_epipe"):
        reading, result = _paste(os.path.join(CORPUS, entry, "paste.txt"))
        assert reading["tells_nothing"] is None, (entry, reading["tells_nothing"])
        assert any("NFS kernel line(s)" in note for note in reading["notes"]), (entry, reading["notes"])
        assert result is not None and result["partial"]["capture_next"]
