"""saved_stats_bundle with partial=true (the ckptio.nfs.paste playbook's step) through its real main(), on the lab's real
pasted outputs (tests/fixtures/paste/NOTES.txt): a file or a folder, a bundle where one can be built, otherwise a partial
diagnosis in dest and nothing elsewhere; a refusal naming each file only when nothing can be said."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from ansible_collections.ckptio.nfs.plugins.modules import saved_stats_bundle
from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.paste import layouts
from ansible_collections.ckptio.nfs.tests.unit.test_safety_states_fstab import collection_root
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module, tree_checksums

SEED = os.path.join(layouts.FIXTURES, "..", "captures", "seed_like_v41")


def _paste(tmp_path, files):
    src = tmp_path / "pasted"
    src.mkdir()
    for name, text in files.items():
        (src / name).write_text(text, encoding="utf-8")
    return str(src)


def test_partial_from_one_file_writes_the_diagnosis_in_dest_only(tmp_path):
    src = _paste(tmp_path, {"iostat.txt": layouts.everything(layouts.read("bookworm/nfsiostat_mount.txt"))})
    dest = str(tmp_path / "out")
    before = tree_checksums(str(tmp_path))
    checked = run_module(saved_stats_bundle, dict(src=os.path.join(src, "iostat.txt"), dest=dest, partial=True), check_mode=True)
    assert checked["changed"] is True and not os.path.exists(dest) and tree_checksums(str(tmp_path)) == before
    result = run_module(saved_stats_bundle, dict(src=os.path.join(src, "iostat.txt"), dest=dest, partial=True))
    assert result["changed"] is True and sorted(os.listdir(dest)) == ["context.yml", "diagnosis.json", "diagnosis.md"]
    after = tree_checksums(str(tmp_path))
    assert dict((path, value) for path, value in after.items() if not path.startswith("out")) == before
    assert result["readings"][0]["kind"] == "nfsiostat" and "no newline after the last line" in result["readings"][0]["repairs"]
    assert result["readings_text"][0].startswith("iostat.txt: nfsiostat output - speaks for client_rpc_slots")
    assert result["no_bundle_reason"].startswith("no /proc/self/mountstats snapshot")
    with open(os.path.join(dest, "diagnosis.json")) as handle:
        written = json.load(handle)
    assert written["limiting_layer"] == "client_rpc_slots" and written["partial"]["suspected"]["confidence"] == "low"
    assert written == result["diagnosis"]
    again = run_module(saved_stats_bundle, dict(src=src, dest=dest, partial=True))
    assert again["changed"] is False


def test_partial_with_snapshots_builds_the_bundle_and_reads_the_rest(tmp_path):
    src = _paste(tmp_path, {"dmesg": layouts.read("built/dmesg_hung_nfs_wait_on_request.txt"),
                            "ms1": open(os.path.join(SEED, "clients/nfs2/mountstats_before.txt")).read(),
                            "ms2": layouts.crlf(open(os.path.join(SEED, "clients/nfs2/mountstats_after.txt")).read())})
    dest = str(tmp_path / "bundle")
    result = run_module(saved_stats_bundle, dict(src=src, dest=dest, partial=True, checkpoint_bytes=2400000000, window_seconds=300))
    assert result["window"] == "snapshots" and result["diagnosis"] is None and result["no_bundle_reason"] is None
    assert [row["kind"] for row in result["unusable"]] == ["kernel_log"]
    assert [row["kind"] for row in result["readings"]] == ["kernel_log", "mountstats", "mountstats"]
    assert any("layout repaired (CR/CRLF line ends)" in note for note in result["notes"])
    # A partial run over an earlier bundle removes the bundle's files it no longer holds.
    os.remove(os.path.join(src, "ms1"))
    os.remove(os.path.join(src, "ms2"))
    partial = run_module(saved_stats_bundle, dict(src=src, dest=dest, partial=True))
    assert partial["diagnosis"]["limiting_layer"] == "client_rpc_slots" and len(partial["removed"]) == 2


def test_nothing_readable_fails_naming_each_file_and_writes_nothing(tmp_path):
    src = _paste(tmp_path, {"empty.txt": "", "notes.txt": "the job hung at 10:02, restarted at 10:20\n"})
    dest = str(tmp_path / "out")
    failed = fail_module(saved_stats_bundle, dict(src=src, dest=dest, partial=True))
    assert "empty.txt: empty file: the file is empty" in failed["msg"]
    assert "notes.txt: unrecognised file: not a kind recognised by content" in failed["msg"]
    assert "nothing was written" in failed["msg"] and not os.path.exists(dest)
    assert [row["file"] for row in failed["readings"]] == ["empty.txt", "notes.txt"]


def test_a_dmesg_time_stamp_beyond_any_float_is_never_read_as_a_time(tmp_path):
    # Every line's time is 400 digits (float() makes it inf): read as a time, the outage would last inf - inf seconds.
    # The kernel log's time stamp pattern takes at most 12 digits (paste/kernel_log.py, issue 45's linear patterns), so
    # such a line has no time: the outage is "an unknown time" and diagnosis.json holds only finite numbers.
    text = re.sub(r"^\[\s*[0-9.]+\]", "[%s.5]" % ("9" * 400), layouts.read("built/dmesg_not_responding.txt"), flags=re.M)
    src = _paste(tmp_path, {"dmesg": text})
    dest = str(tmp_path / "out")
    result = run_module(saved_stats_bundle, dict(src=src, dest=dest, partial=True))
    assert "away an unknown time (no time stamps)" in result["diagnosis"]["evidence"][0]["explanation"]
    with open(os.path.join(dest, "diagnosis.json"), encoding="utf-8") as handle:
        text = handle.read()
    assert "Infinity" not in text and "NaN" not in text


@pytest.mark.parametrize("option, value", [
    ("window_seconds", float("inf")), ("checkpoint_bytes", 10 ** 400), ("server_link_gbps", float("inf")), ("window_seconds", -1.0),
])
def test_a_target_beyond_any_measure_is_refused_naming_the_option(tmp_path, option, value):
    src = _paste(tmp_path, {"a": "x\n"})
    arguments = dict(src=src, dest=str(tmp_path / "out"), checkpoint_bytes=2400000000, window_seconds=300.0)
    arguments[option] = value
    failed = fail_module(saved_stats_bundle, arguments)
    assert failed["msg"].startswith("%s: must be a finite number above 0 and at most 2^63, got " % option) and len(failed["msg"]) < 120


def test_without_partial_the_target_is_required_naming_the_option(tmp_path):
    src = _paste(tmp_path, {"a": "x\n"})
    failed = fail_module(saved_stats_bundle, dict(src=src, dest=str(tmp_path / "out")))
    assert failed["msg"].startswith("checkpoint_bytes: required unless partial=true")


def test_paste_playbook_end_to_end(tmp_path):
    """`ansible-playbook ckptio.nfs.paste -e ckptio_paste=FILE` for real: the per-file line, then the first screen."""
    binary = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    if not os.path.exists(binary):
        pytest.skip("ansible-playbook is not next to this python")
    paste = tmp_path / "th.txt"
    shutil.copyfile(os.path.join(layouts.FIXTURES, "built", "nfsd_th_busy.txt"), str(paste))
    environment = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collection_root(), ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0",
                       ANSIBLE_INVENTORY_UNPARSED_WARNING="0", ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
                       ANSIBLE_HOME=str(tmp_path / "ansible-home"), ANSIBLE_PYTHON_INTERPRETER=sys.executable,
                       PWD=str(tmp_path))
    run = subprocess.run([binary, "ckptio.nfs.paste", "-e", "ckptio_paste=%s" % paste], env=environment, capture_output=True,
                         text=True, timeout=300, cwd=str(tmp_path), check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "th.txt: /proc/net/rpc/nfsd snapshot - speaks for server_threads" in run.stdout
    assert "Suspected limiting layer: nfsd threads" in run.stdout
    assert sorted(os.listdir(str(tmp_path / "reports" / "th.txt-paste"))) == ["context.yml", "diagnosis.json", "diagnosis.md"]
