# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""paste/training_log.py on real training logs (tests/fixtures/paste_kinds/training_log, paste_corpus) and
on two logs produced here by the frameworks' own code (DeepSpeed, Lightning; their source.yml says how)."""

from __future__ import annotations

import os
import time

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import partial, readings, training_log

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures")
KINDS = os.path.join(FIXTURES, "paste_kinds", "training_log")
CORPUS = os.path.join(FIXTURES, "paste_corpus")


def _text(*parts):
    with open(os.path.join(*parts), encoding="utf-8") as handle:
        return handle.read()


def _kind(name):
    return _text(KINDS, name + ".txt")


def _corpus(entry):
    return _text(CORPUS, entry, "paste.txt")


def test_every_fixture_has_its_source_and_says_whether_it_was_produced_here():
    import yaml
    names = sorted(name[:-4] for name in os.listdir(KINDS) if name.endswith(".txt"))
    assert len(names) >= 7
    for name in names:
        source = yaml.safe_load(_text(KINDS, name + ".source.yml"))
        assert source["kind"] == "training_log" and source["framework"]
        if source["produced_here"]:
            assert source["command"] and source["versions"] and "PRODUCED HERE" in source["note"]
        else:
            assert source["url"].startswith("https://github.com/") and source["conclusion"]


def test_torchtitan_1301_one_save_of_393_seconds_on_rank_0_at_step_1():
    text = _corpus("016_torchtitan_1301_checkpoint_393s")
    assert training_log.recognise(text)
    seen = training_log.window(text)
    assert [(save["framework"], save["rank"], save["step"], save["seconds"], save["line"]) for save in seen["saves"]] == [
        ("torchtitan", 0, 1, 393.86, 3)]
    assert seen["saves"][0]["ended_at"] - seen["saves"][0]["started_at"] == pytest.approx(393.859, abs=1e-3)
    row, = seen["checkpoints"]
    assert (row["step"], row["seconds"], row["bytes"], row["ranks"]) == (1, 393.86, None, [0])
    assert "no checkpoint sizes in the log: save times only, no throughput" in seen["notes"]
    finding, = training_log.read(text)
    assert (finding["signal"], finding["value"], finding["weight"], finding["layer"], finding["fault"], finding["line"]) == (
        "checkpoint save time", 393.86, 0, None, None, 3)


def test_ace_851_rank_7_timed_out_in_an_allreduce_after_the_save_started():
    text = _corpus("017_ace_851_nccl_timeout_after_save")
    seen = training_log.window(text)
    assert seen["saves"] == [] and seen["checkpoints"] == []
    assert seen["timeouts"] == [{"framework": "nccl", "rank": 7, "host": None, "collective": "ALLREDUCE", "seq": 1512677,
                                 "timeout_ms": 1200000, "ran_ms": 1200027, "line": 2}]
    finding, = training_log.read(text)
    assert finding["fault"]["name"] == "collective_timeout" and finding["fault"]["tuning_fixes"] is False
    assert (finding["value"], finding["crossed"], finding["weight"], finding["line"]) == (1200.027, True, 2, 2)
    assert "ranks 7 timed out waiting in ALLREDUCE SeqNum 1512677 after 1200027 ms (timeout 1200000 ms)" in \
        finding["explanation"]


def test_torchtune_2093_two_reports_of_one_allreduce_timeout_are_one_fault():
    text = _kind("nccl_torchtune_2093_save_timeout")
    seen = training_log.window(text)
    assert [(row["rank"], row["seq"], row["timeout_ms"], row["ran_ms"], row["line"]) for row in seen["timeouts"]] == [
        (None, 28956, 600000, 600022, 1), (5, 28956, 600000, 600024, 3)]
    finding, = training_log.read(text)
    assert finding["value"] == 600.024
    assert finding["explanation"].startswith("ranks 5 and 1 report naming no rank timed out waiting in ALLREDUCE")


def test_metaseq_497_save_writing_took_1_22_seconds_at_250_updates():
    seen = training_log.window(_corpus("037_metaseq_497_nfs_save_log"))
    save, = seen["saves"]
    assert (save["framework"], save["step"], save["seconds"], save["line"]) == ("metaseq/fairseq", 250, 1.222882273956202, 5)
    assert save["path"].endswith("/checkpoint_250-model_part-0-shard0.pt")
    assert seen["checkpoints"][0]["seconds"] == 1.222882273956202


def test_dlio_270_saves_without_an_end_then_one_of_77_seconds_at_1_1394_gb_per_second():
    text = _kind("dlio_270_checkpoint_print")
    seen = training_log.window(text)
    assert [(save["step"], save["seconds"], save["finished"], save["line"]) for save in seen["saves"]] == [
        (1, None, False, 3), (2, None, False, 5), (1, 77.1101, True, 14), (2, None, False, 17)]
    assert [(load["step"], load["seconds"], load["bytes_per_second"], load["line"]) for load in seen["loads"]] == [
        (2, 341.1706, 0.2575e9, 6)]
    rows = [(row["step"], row["seconds"], row["bytes"]) for row in seen["checkpoints"]]
    assert rows == [(1, None, None), (2, None, None), (1, 77.1101, pytest.approx(1.1394e9 * 77.1101)), (2, None, None)]
    assert seen["checkpoints"][2]["bytes_per_second"] == pytest.approx(1.1394e9)
    assert "DLIO prints sizes and rates in GB: read as 10^9 bytes" in seen["notes"]
    unfinished = [finding for finding in training_log.read(text) if finding["signal"] == "checkpoint save not finished in the log"]
    assert [finding["line"] for finding in unfinished] == [3, 5, 17]


def test_megatron_1763_timer_is_the_slowest_rank_of_39_9_seconds():
    seen = training_log.window(_kind("megatron_1763_async_save_timer"))
    row, = seen["checkpoints"]
    assert (row["framework"], row["seconds"], row["step"]) == ("megatron", 39.89995, None)
    assert any("NVIDIA/Megatron-LM#1763" in note for note in seen["notes"])


def test_megatron_under_ms_swift_7345_save_at_10000_never_finished_on_master_0():
    text = _kind("megatron_swift_7345_save_crash")
    seen = training_log.window(text)
    save, = seen["saves"]
    assert (save["framework"], save["host"], save["step"], save["finished"], save["line"]) == (
        "megatron", "master-0", 10000, False, 7)
    assert save["path"].endswith("/checkpoint-10000")
    assert [finding["signal"] for finding in training_log.read(text)] == [
        "checkpoint save time", "checkpoint save not finished in the log"]


def test_nemo_bionemo_async_saves_are_counted_once_each_and_the_last_copy_apart():
    seen = training_log.window(_kind("nemo_bionemo_esm2_async_saves"))
    assert [(save["step"], save["path"].endswith("-last.ckpt"), save["line"]) for save in seen["saves"]] == [
        (49, False, 7), (49, True, 9), (74, False, 11), (74, True, 13), (99, False, 15), (99, True, 17)]
    assert all(save["seconds"] is None and save["finished"] for save in seen["saves"])
    assert [row["step"] for row in seen["checkpoints"]] == [49, 49, 74, 74, 99, 99]


def test_nemo_evo2_fine_tune_saves_keep_their_printed_durations_and_one_clock():
    # A BioNeMo Evo2 fine-tune (NeMo 2, --ckpt-async-save, 2 GPUs): "Global Checkpoint Save : ... : Save duration: D s"
    # per save (the blocking part, nemo/lightning/io/pl.py), then the async write from "Scheduled async checkpoint
    # save for P" to "Successfully saved checkpoint from iteration N to P". The printed "Start time" is time.time()
    # (epoch seconds) while the line stamps are the host's local time (UTC-7 here): a checkpoint's span is taken on
    # the stamps' clock alone, never 7 h wide. Two saves of step 99 interleave (.ckpt, -last.ckpt): each end closes
    # the start of its own path, and Lightning's "saving model to" line of that same .ckpt is not a third save.
    text = _kind("nemo_evo2_finetune_saves")
    assert training_log.recognise(text)
    seen = training_log.window(text)
    assert [(save["framework"], save["rank"], save["step"], save["seconds"], save["finished"], save["line"])
            for save in seen["saves"]] == [
        ("nemo", 0, 49, 23.107, True, 4), ("nemo", None, 49, 14.0, True, 5),
        ("nemo", 0, 99, 1.718, True, 98), ("nemo", None, 99, 22.0, True, 99),
        ("nemo", 0, 99, 1.136, True, 100), ("nemo", None, 99, 21.0, True, 101)]
    assert [save["path"].rsplit("/", 1)[1] for save in seen["saves"] if save["path"]] == [
        "evo2--val_loss=0.0000-epoch=0-consumed_samples=200.0-last.ckpt",
        "evo2--val_loss=1.6191-epoch=0-consumed_samples=400.0.ckpt",
        "evo2--val_loss=1.6191-epoch=0-consumed_samples=400.0-last.ckpt"]
    rows = [(row["step"], row["seconds"], row["rule"], row["slowest"]["seconds"], row["line"]) for row in seen["checkpoints"]]
    # 16:52:43 - 23.107 s to 16:53:08; 16:53:19 - 1.718 s to 16:53:41; 16:53:20 - 1.136 s to 16:53:42
    assert rows == [(49, 48.107, "last end - first start", 23.107, 4), (99, 23.718, "last end - first start", 22.0, 98),
                    (99, 23.136, "last end - first start", 21.0, 100)]
    assert [finding["value"] for finding in training_log.read(text)] == [48.107, 23.718, 23.136]
    reading = readings.read_file("nemo_evo2_finetune_saves.txt", text)
    assert reading["kind"] == "training_log" and reading["tells_nothing"] is None
    met = partial.partial_diagnosis([reading], target={"checkpoint_bytes": 2.2e9, "window_seconds": 120})
    assert (met["verdict"], met["window"]["kind"]) == ("meets_target", "training_log")
    # NeMo prints no size: the target's 2.2 GB over the slowest save's 48.107 s is the rate, said as such.
    assert abs(met["achieved_bytes_per_second"] - 2.2e9 / 48.107) < 1
    assert "the checkpoint's size as the target gives it" in met["achieved_source"] and "step 49, 48.1 s" in met["achieved_source"]
    short = partial.partial_diagnosis([reading], target={"checkpoint_bytes": 2.2e9, "window_seconds": 10})
    assert short["verdict"] == "below_target" and abs(short["gap_factor"] - 4.8107) < 1e-9


def test_deepspeed_produced_saves_at_steps_10_and_20_with_no_end_printed():
    text = _kind("deepspeed_produced_cpu_zero1")
    seen = training_log.window(text)
    assert [(save["step"], save["rank"], save["seconds"], save["finished"], save["line"]) for save in seen["saves"]] == [
        (10, 0, None, None, 164), (20, 0, None, None, 168)]
    assert seen["saves"][0]["path"].endswith("global_step10/mp_rank_00_model_states.pt")
    assert [load["line"] for load in seen["loads"]] == [170, 172, 174]
    assert not [finding for finding in training_log.read(text) if finding["signal"] != "checkpoint save time"]


def test_lightning_produced_model_checkpoint_lines_at_global_steps_4_8_12():
    seen = training_log.window(_kind("lightning_produced_cpu_ddp"))
    assert [(save["step"], save["path"].rsplit("/", 1)[1], save["line"]) for save in seen["saves"]] == [
        (4, "epoch=0-step=4.ckpt", 26), (8, "epoch=1-step=8.ckpt", 27), (12, "epoch=2-step=12.ckpt", 28)]


def test_deepspeed_writer_statistics_give_each_checkpoint_its_files_bytes_and_write_seconds():
    # "checkpoint": {"writer": {"type": "python", "show_statistics": true, ...}}: one "stats = {...}" line per file
    # written (4 a checkpoint: the model file by both ranks, one ZeRO shard each); a checkpoint is the sum of its files.
    text = _kind("deepspeed_produced_cpu_writer_statistics")
    assert training_log.recognise(text)
    seen = training_log.window(text)
    assert [(save["step"], save["finished"], save["bytes"], save["line"]) for save in seen["saves"]] == [
        (10, True, 2 * 4471721 + 2237225 + 2237289, 175), (20, True, 2 * 4471721 + 2237289 + 2237225, 182)]
    assert abs(seen["saves"][0]["seconds"] - (0.000919342041015625 + 0.0021131038665771484 + 0.0005326271057128906
                                              + 0.002749204635620117)) < 1e-12
    assert abs(seen["saves"][1]["seconds"] - (0.0009822845458984375 + 0.0009009838104248047 + 0.0005817413330078125
                                              + 0.0004856586456298828)) < 1e-12
    assert seen["saves"][0]["path"].endswith("dsckpt2/global_step10/mp_rank_00_model_states.pt")
    rows = seen["checkpoints"]
    assert [(row["step"], row["bytes"], row["saves"]) for row in rows] == [(10, 13417956, 1), (20, 13417956, 1)]
    assert abs(rows[0]["bytes_per_second"] - 13417956 / seen["saves"][0]["seconds"]) < 1e-3
    assert any("show_statistics" in note for note in seen["notes"])


def test_lightning_simple_profiler_mean_save_time_is_each_checkpoints_time_and_said_to_be_a_mean():
    # Trainer(profiler="simple"): "|  save_checkpoint ... |  0.068505 |  3 |  0.20552 |  5.8763 |" (line 42).
    text = _kind("lightning_produced_cpu_simple_profiler")
    seen = training_log.window(text)
    assert [(save["step"], save["seconds"], save["finished"], save["line"]) for save in seen["saves"]] == [
        (4, 0.068505, None, 26), (8, 0.068505, None, 27), (12, 0.068505, None, 28)]
    assert [(row["step"], row["seconds"], row["bytes"]) for row in seen["checkpoints"]] == [
        (4, 0.068505, None), (8, 0.068505, None), (12, 0.068505, None)]
    assert all(row["rule"].startswith("the mean of 3 saves") for row in seen["checkpoints"])
    assert any("SimpleProfiler" in note and "mean" in note for note in seen["notes"])
    assert not [finding for finding in training_log.read(text) if finding["signal"] != "checkpoint save time"]


def test_a_simple_profiler_row_alone_is_one_checkpoint_row_of_its_mean():
    text = "|  save_checkpoint   \t|  1.5   \t|  4   \t|  6.0   \t|  12.0   \t|\n"
    assert training_log.recognise(text)
    seen = training_log.window(text)
    assert [(row["seconds"], row["rule"][:18]) for row in seen["checkpoints"]] == [(1.5, "the mean of 4 save")]
    # the non-extended table (Action | Mean duration | Total time) prints no calls: the count is total / mean
    seen = training_log.window("|  save_checkpoint\t|  2.0\t|  6.0\t|\n")
    assert [(row["seconds"], row["rule"][:18]) for row in seen["checkpoints"]] == [(2.0, "the mean of 3 save")]


def test_deepspeed_statistics_in_exponent_notation_and_a_custom_tag_are_read():
    text = ("stats = {'close': 1, 'fileno': 0, 'flush': 1, 'write': 3, 'bytes': 1000, 'write_secs': 4.5e-05, "
            "'write_GB/s': 0.02, 'path': '/ck/best/mp_rank_00_model_states.pt'}\n"
            "stats = {'close': 1, 'fileno': 0, 'flush': 1, 'write': 3, 'bytes': 500, 'write_secs': 5e-05, "
            "'write_GB/s': 0.01, 'path': '/ck/best/zero_pp_rank_1_mp_rank_00_optim_states.pt'}\n"
            "stats = {'close': 1, 'fileno': 0, 'flush': 1, 'write': 3, 'bytes': 700, 'write_secs': 1.0, "
            "'write_GB/s': 0.0, 'path': '/ck/next/mp_rank_00_model_states.pt'}\n")
    rows = training_log.window(text)["checkpoints"]
    assert [(row["bytes"], round(row["seconds"], 9)) for row in rows] == [(1500, 9.5e-05), (700, 1.0)]


def test_ranks_of_one_step_make_one_checkpoint_named_by_its_slowest_rank_and_summed_bytes():
    text = "\n".join((
        "[rank0]:[titan] 2025-06-16 23:40:42,000 - root - INFO - step:  5  loss:  1.4989",
        "[rank0]:[titan] 2025-06-16 23:40:42,000 - root - INFO - Saving the checkpoint (or staging if async is enabled).",
        "[rank1]:[titan] 2025-06-16 23:40:42,500 - root - INFO - Saving the checkpoint (or staging if async is enabled).",
        "[rank0]:[titan] 2025-06-16 23:40:52,000 - root - INFO - Finished saving the checkpoint (or staging if async is "
        "enabled)in 10.00 seconds.",
        "[rank1]:[titan] 2025-06-16 23:41:02,500 - root - INFO - Finished saving the checkpoint (or staging if async is "
        "enabled)in 20.00 seconds."))
    row, = training_log.window(text)["checkpoints"]
    assert (row["step"], row["ranks"], row["seconds"], row["rule"]) == (5, [0, 1], 20.5, "last end - first start")
    assert row["slowest"] == {"rank": 1, "host": None, "seconds": 20.0}
    assert "slowest rank 1 20.00 s" in training_log.read(text)[0]["explanation"]


def test_a_barrier_names_the_ranks_that_did_not_arrive():
    text = "[Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 1800000 ms"
    finding, = training_log.read(text)
    assert "ranks that did not arrive, as the log says: 1, 3" in finding["explanation"]
    assert finding["fault"]["name"] == "collective_timeout"


def test_recognised_anywhere_and_nothing_else():
    text = "$ tail train.log\nsome output\n" + _corpus("016_torchtitan_1301_checkpoint_393s") + "\n$ "
    assert training_log.recognise(text)
    assert not training_log.recognise("checkpoint saved? no.\nSaving the world.\n")
    assert not training_log.recognise(_corpus("003_rpi_2482_lan78xx_hung_fsync"))
    assert training_log.window("no checkpoint here") is None and training_log.read("") == []


@pytest.mark.parametrize("text", [
    "x" * (1 << 20),
    "\n" * 60000,
    "Finished saving the checkpoint in " + "9" * 60000 + " seconds.",
    "save-checkpoint ....: (" + "9" * 60000 + ", 1.0)",
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" + "1" * 60000 + ", OpType=ALLREDUCE, Timeout(ms)=1)",
    "saving checkpoint at iteration " * 40000,
    "checkpoint " * 100000,
], ids=["1MB_line", "blank_lines", "huge_seconds", "huge_timer", "huge_seq", "repeated_marks", "many_marks"])
def test_hostile_inputs_finish_fast_and_raise_nothing(text):
    start = time.monotonic()
    training_log.recognise(text)
    findings = training_log.read(text)
    assert time.monotonic() - start < 1.0
    assert all(finding["value"] is None or finding["value"] < float("inf") for finding in findings)
