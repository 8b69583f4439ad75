"""The parser's and the delta's fast paths give exactly what the general paths give.

Each fast path (chunked file reads, the intact xprt run, xprt counters shared between samples,
unchanged op lines skipped, the per-transport backlog without a loop) is checked against the
slow way on the lab captures and on input built to leave the fast path.
"""
from __future__ import annotations

import io

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import mountstats as mountstats_module
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import stats_delta as stats_delta_module
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import iter_mountstats, parse_mountstats, parse_op_values
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.sample_pair import SamplePair
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.stats_delta import mountstats_delta
from ansible_collections.ckptio.nfs.tests.unit.utils import read_sample, sample_path

CLIENT = ("clients", "nfs2")
BUNDLES = (("bundles", "seed_like_baseline"), ("bundles", "shared_vs_perrank_5b_per_rank"))
SAMPLES = [("mountstats-v41-nconnect4-after-2GiB-write.txt",)] + [
    bundle + CLIENT + (name,) for bundle in BUNDLES for name in ("mountstats_before.txt", "mountstats_after.txt")]


def sample_pairs():
    """(after text, before text) of each bundle, both ways round (the reverse one is a remount)."""
    pairs = []
    for bundle in BUNDLES:
        files = load_bundle(sample_path(*bundle))[CLIENT[0]][CLIENT[1]]
        after, before = files["mountstats_after"], files["mountstats_before"]
        pairs += [(after, before), (before, after)]
    return pairs


def nconnect_block(mount_point="/mnt/nfs", age=100, scale=1, junk=None, ops=None):
    lines = ["device srv:/export mounted on %s with fstype nfs4 statvers=1.1" % mount_point,
             "\topts:\trw,vers=4.1,nconnect=4", "\tage:\t%d" % age, "\tbytes:\t1 2 3 4 5 %d 7 8 " % (6 * scale),
             "\tRPC iostats version: 1.1  p/v: 100003/4 (nfs)"]
    for transport in range(4):
        lines.append("\txprt:\ttcp %d 0 2 0 1 %d %d 0 %d %d %d 1 1" % (700 + transport, 100 * scale, 99 * scale, 50 * scale, transport, 8 + transport))
    if junk:
        lines[-1] = lines[-1].replace(" 1 1", " %s 1" % junk)
    lines.append("\tper-op statistics")
    lines += ops or ["\t       WRITE: %d %d 0 %d 100 5 7 9 0" % (10 * scale, 10 * scale, 1000 * scale), "\t        READ: 0 0 0 0 0 0 0 0 0"]
    return "\n".join(lines) + "\n\n"


@pytest.mark.parametrize("chars_per_read", [1, 7, 64, 4096])
@pytest.mark.parametrize("sample", SAMPLES)
def test_file_read_in_pieces_parses_like_the_whole_text(monkeypatch, sample, chars_per_read):
    text = read_sample(*sample)
    expected = parse_mountstats(text, nfs_only=False)
    monkeypatch.setattr(mountstats_module, "_CHARS_PER_READ", chars_per_read)
    assert parse_mountstats(io.StringIO(text), nfs_only=False) == expected
    monkeypatch.setattr(mountstats_module, "_LINES_PER_CHUNK", 3)
    assert parse_mountstats(text.splitlines(), nfs_only=False) == expected
    assert parse_mountstats(text.splitlines(True), nfs_only=False) == expected


def test_intact_xprt_run_and_lines_around_it_keep_file_order():
    text = nconnect_block()
    # A stray xprt line without the tab before the run, and a new label between run and ops.
    text = text.replace("\tRPC iostats", "xprt: udp 1 2 3 4 5 6 7\n\tRPC iostats").replace("\tper-op", "\tnewlabel:\tx\n\tper-op")
    mount = next(iter_mountstats(text))
    assert mount.xprt_lines[0] == "xprt: udp 1 2 3 4 5 6 7"
    assert [line.split()[2] for line in mount.xprt_lines[1:]] == ["700", "701", "702", "703"]
    assert mount.other == {"newlabel": "x"} and mount.age == 100 and mount.program == "100003/4"
    intact = next(iter_mountstats(nconnect_block()))
    assert intact.xprt_lines == [line for line in nconnect_block().split("\n") if line.startswith("\txprt:")]


@pytest.mark.parametrize("after_junk, before_junk", [(None, None), ("x", None), (None, "x"), ("x", "x"), ("01", None)])
def test_xprt_counters_shared_between_samples_match_each_sample_alone(after_junk, before_junk):
    after = next(iter_mountstats(nconnect_block(scale=3, junk=after_junk)))
    before = next(iter_mountstats(nconnect_block(scale=1, junk=before_junk)))
    after_x, before_x = SamplePair(after, before).xprt_columns()
    assert (after_x, before_x) == (after.xprt_columns(), before.xprt_columns())
    if after_junk is None and before_junk is None:
        # max_slots did not move: converted once, the same list serves both samples.
        assert after_x["columns"]["max_slots"] is before_x["columns"]["max_slots"]
        assert after_x["columns"]["sends"] == [300] * 4 and before_x["columns"]["sends"] == [100] * 4


def test_xprt_forms_that_differ_between_samples_take_the_general_path():
    after = next(iter_mountstats(nconnect_block(scale=3)))
    old_kernel = nconnect_block().replace(" 1 1\n", "\n")
    before = next(iter_mountstats(old_kernel))
    assert SamplePair(after, before).xprt_columns() == (after.xprt_columns(), before.xprt_columns())
    delta = mountstats_delta(nconnect_block(scale=3), old_kernel)[0]
    assert delta["rpc"]["sends"] == 800 and delta["rpc"]["max_slots_before"] == [8, 9, 10, 11]


def test_sample_pair_converts_only_the_op_lines_that_moved():
    after = next(iter_mountstats(nconnect_block(scale=3)))
    before = next(iter_mountstats(nconnect_block(scale=1)))
    assert SamplePair(after, before).changed_ops() == [("WRITE", (30, 30, 0, 3000, 100, 5, 7, 9, 0), (10, 10, 0, 1000, 100, 5, 7, 9, 0))]
    assert SamplePair(after, after).changed_ops() == []
    # No before sample: every op counts from the mount.
    assert [(name, old) for name, _new, old in SamplePair(after).changed_ops()] == [("WRITE", None), ("READ", None)]
    assert SamplePair(after, before).op_list_cut() is None and SamplePair(after).xprt_columns()[1] is None
    assert after.identity() == ("/mnt/nfs", "srv:/export", "nfs4", "4.1", None)


def _reference_op_delta(after_values, before_values):
    d_ops = after_values[0] - before_values[0]
    return {"ops": d_ops, "timeouts": after_values[2] - before_values[2],
            "avg_rtt_ms": float(after_values[6] - before_values[6]) / d_ops if d_ops else 0.0,
            "avg_exe_ms": float(after_values[7] - before_values[7]) / d_ops if d_ops else 0.0,
            "bytes_sent": after_values[3] - before_values[3]}


@pytest.mark.parametrize("pair", range(4))
def test_unchanged_op_lines_skipped_give_the_full_conversion(pair):
    after_text, before_text = sample_pairs()[pair]
    after = next(iter_mountstats(after_text))
    before = next(iter_mountstats(before_text))
    delta = mountstats_delta(after_text, before_text)[0]
    # Remounted between the samples (the reversed pairs): every op counts from zero, like nfs-utils.
    before_ops = {} if delta["new_mount"] else before.ops
    expected = {}
    for name, values in after.ops.items():
        old = before_ops.get(name)
        if old != values:
            expected[name] = _reference_op_delta(values, old or (0,) * len(values))
    assert expected and list(delta["ops"]) == list(expected)
    for name, reference in expected.items():
        assert dict((key, delta["ops"][name][key]) for key in reference) == reference, name


def test_ops_matched_by_name_when_the_sections_differ_in_shape():
    after = nconnect_block(scale=3, ops=["\t       WRITE: 30 30 0 3000 100 5 7 9 0", "\t      COMMIT: 2 2 0 0 0 1 1 1 0",
                                         "\t        READ: 0 0 0 0 0 0 0 0 0"])
    before = nconnect_block(scale=1)
    ops = mountstats_delta(after, before)[0]["ops"]
    assert sorted(ops) == ["COMMIT", "WRITE"] and ops["WRITE"]["ops"] == 20 and ops["COMMIT"]["ops"] == 2


def test_per_transport_backlog_with_missing_counters():
    after_x = {"columns": {"bklog_u": [10, None, 30], "sends": [5, 5, 5]}}
    before_x = {"columns": {"bklog_u": [0, 0, None], "sends": [0, 0, 0]}}
    assert stats_delta_module._per_transport_backlog(after_x, before_x) == [2.0, 0.0, 6.0]
    before_x = {"columns": {"bklog_u": [4, 0, 6], "sends": [1, 0, 5]}}
    assert stats_delta_module._per_transport_backlog(after_x, before_x) == [1.5, 0.0, 0.0]
    assert stats_delta_module._per_transport_backlog(after_x, None) == [2.0, 0.0, 6.0]
    complete_after = {"columns": {"bklog_u": [10, 20, 7], "sends": [5, 10, 3]}}
    complete_before = {"columns": {"bklog_u": [0, 10, 7], "sends": [0, 5, 3]}}
    assert stats_delta_module._per_transport_backlog(complete_after, complete_before) == [2.0, 2.0, 0.0]


def test_numbers_with_junk_fall_back_to_the_tolerant_readers():
    assert parse_op_values(" 1 2 3") == (1, 2, 3)
    assert parse_op_values(" 1 2 x 4") == (1, 2)
    bytes_line = mountstats_module._named_counters(mountstats_module.BYTE_NAMES, "1 x 3")
    assert bytes_line == {"normalreadbytes": 1, "directreadbytes": 3}
    assert mountstats_module._named_counters(("a", "b"), "1 2 3 4") == {"a": 1, "b": 2, "extra": [3, 4]}
