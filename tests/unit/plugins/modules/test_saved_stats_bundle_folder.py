"""saved_stats_bundle's promises about the paste folder and dest (issue 45), through its real main():
every entry of src that is not read is listed with why (a FIFO is never opened), and a rerun into the same
dest replaces or removes what the earlier run wrote there - only its own files, by name."""
from __future__ import annotations

import os
import signal
import stat

import pytest

from ansible_collections.ckptio.nfs.plugins.modules import saved_stats_bundle
from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.paste import layouts
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module

SEED = os.path.join(layouts.FIXTURES, "..", "captures", "seed_like_v41")
IOSTAT = layouts.read("bookworm/nfsiostat_mount.txt")


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


class _Blocked(Exception):
    pass


def _never_blocks(function, *args, **kwargs):
    """function(...) under a 20 s alarm: a FIFO opened for reading without O_NONBLOCK would wait forever."""
    def stop(_signum, _frame):
        raise _Blocked()
    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(20)
    try:
        return function(*args, **kwargs)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def folder(tmp_path):
    src = tmp_path / "pasted"
    src.mkdir()
    (src / "iostat.txt").write_text(IOSTAT, encoding="utf-8")
    os.mkfifo(str(src / "pipe"))
    os.symlink("/dev/zero", str(src / "zero"))
    (tmp_path / "elsewhere.txt").write_text(IOSTAT, encoding="utf-8")
    os.symlink(str(tmp_path / "elsewhere.txt"), str(src / "linked.txt"))
    (src / "subdir").mkdir()
    (src / ".hidden").write_text("x\n")
    return src


def test_every_unusable_entry_of_the_folder_is_listed_with_why_and_a_fifo_is_never_opened(tmp_path, folder):
    """Failed on 224965e: the FIFO and the link to /dev/zero were dropped without a word (unusable named only linked.txt)."""
    result = _never_blocks(run_module, saved_stats_bundle, dict(src=str(folder), dest=str(tmp_path / "out"), partial=True))
    why = dict((row["file"], row["reason"]) for row in result["unusable"])
    assert sorted(why) == ["linked.txt", "pipe", "zero"]
    assert why["pipe"] == "is a FIFO, not a regular file: not opened"
    assert why["zero"] == "is a symbolic link (to /dev/zero): not followed, it may point outside src"
    assert why["linked.txt"].startswith("is a symbolic link (to %s)" % (tmp_path / "elsewhere.txt"))
    assert all(row["kind"] == "refused" for row in result["unusable"])
    # Each is a reading that tells nothing, and the warnings name them; subdirectories and dot-files are left alone.
    unread = dict((row["file"], row["tells_nothing"]) for row in result["readings"] if row["file"] != "iostat.txt")
    assert unread == why
    assert any("pipe not used" in warning and "FIFO" in warning for warning in result["warnings"])
    assert result["diagnosis"]["limiting_layer"] == "client_rpc_slots"


def test_without_partial_the_special_files_fail_the_module_naming_each(tmp_path, folder):
    os.remove(str(folder / "linked.txt"))
    os.remove(str(folder / "iostat.txt"))
    for name in ("before", "after"):
        (folder / ("ms_%s" % name)).write_text(_read(os.path.join(SEED, "clients/nfs2/mountstats_%s.txt" % name)), encoding="utf-8")
    arguments = dict(src=str(folder), dest=str(tmp_path / "out"), checkpoint_bytes=1, window_seconds=1)
    failed = _never_blocks(fail_module, saved_stats_bundle, arguments)
    assert "pipe: refused: is a FIFO, not a regular file" in failed["msg"]
    assert "zero: refused: is a symbolic link (to /dev/zero)" in failed["msg"]
    assert not os.path.exists(str(tmp_path / "out"))


def test_a_device_in_the_folder_is_listed_not_read(tmp_path):
    src = tmp_path / "pasted"
    src.mkdir()
    (src / "iostat.txt").write_text(IOSTAT, encoding="utf-8")
    try:
        os.mknod(str(src / "null"), 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError) as exc:
        pytest.skip("cannot make a device node here: %s" % exc)
    result = run_module(saved_stats_bundle, dict(src=str(src), dest=str(tmp_path / "out"), partial=True))
    assert [(row["file"], row["reason"]) for row in result["unusable"]] == [("null", "is a device, not a regular file: not opened")]


def test_a_rerun_that_builds_a_bundle_removes_the_earlier_partial_diagnosis(tmp_path):
    """Failed on 224965e: diagnosis.json and diagnosis.md of the first run stayed beside the new bundle."""
    src = tmp_path / "pasted"
    src.mkdir()
    (src / "iostat.txt").write_text(IOSTAT, encoding="utf-8")
    dest = tmp_path / "out"
    first = run_module(saved_stats_bundle, dict(src=str(src), dest=str(dest), partial=True))
    assert first["diagnosis"] is not None and sorted(os.listdir(str(dest))) == ["context.yml", "diagnosis.json", "diagnosis.md"]
    (dest / "operator-notes.txt").write_text("ours, not the module's\n")
    for name in ("before", "after"):
        (src / ("ms_%s" % name)).write_text(_read(os.path.join(SEED, "clients/nfs2/mountstats_%s.txt" % name)), encoding="utf-8")
    args = dict(src=str(src), dest=str(dest), partial=True, checkpoint_bytes=2400000000, window_seconds=300)
    checked = run_module(saved_stats_bundle, args, check_mode=True)
    assert sorted(checked["removed"]) == [str(dest / "diagnosis.json"), str(dest / "diagnosis.md")]
    assert (dest / "diagnosis.json").exists()
    second = run_module(saved_stats_bundle, args)
    assert second["window"] == "snapshots" and second["diagnosis"] is None
    assert sorted(second["removed"]) == [str(dest / "diagnosis.json"), str(dest / "diagnosis.md")]
    assert sorted(os.listdir(str(dest))) == ["clients", "context.yml", "operator-notes.txt"]
    assert run_module(saved_stats_bundle, args)["changed"] is False


def test_a_rerun_leaves_a_diagnosis_this_module_did_not_write(tmp_path):
    """diagnose_bundle writes diagnosis.json into a bundle: a rerun of the bundle keeps it (not ours, by name)."""
    src = tmp_path / "pasted"
    src.mkdir()
    for name in ("before", "after"):
        (src / ("ms_%s" % name)).write_text(_read(os.path.join(SEED, "clients/nfs2/mountstats_%s.txt" % name)), encoding="utf-8")
    dest = tmp_path / "out"
    args = dict(src=str(src), dest=str(dest), checkpoint_bytes=2400000000, window_seconds=300)
    run_module(saved_stats_bundle, args)
    (dest / "diagnosis.json").write_text("{}\n")
    again = run_module(saved_stats_bundle, args)
    assert again["removed"] == [] and _read(str(dest / "diagnosis.json")) == "{}\n"
