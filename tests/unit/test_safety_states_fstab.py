"""fstab in bad *states* (issue 12): unreadable or linked files, concurrent runs, Unicode, entries not ours.

The value matrices of test_safety_bad_input.py try bad option values; these try the file and the
host being in a state the module did not expect. Each test drives nfs_mount's real main() on the
fake tree of test_nfs_mount.py and fails on the code before issue 12: there the state made the
module lose fstab lines or die with a traceback.
"""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import escape_path
from ansible_collections.ckptio.nfs.plugins.modules import nfs_mount
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_nfs_mount import FSTAB, args, env, fstab_line
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module, tree_checksums

# The fake host of test_nfs_mount.py; pytest finds the fixture by its name in this module.
SHARED_FIXTURES = (env,)


# ---- 1. only a missing fstab is empty ---------------------------------------------------------
def test_fstab_symlink_loop_fails_with_eloop_and_writes_nothing(env):
    # A loop gives ELOOP on open(); the old reader took it for "no fstab" and replaced the link.
    fstab = str(env.fstab)
    os.unlink(fstab)
    os.symlink(fstab + ".b", fstab)
    os.symlink(fstab, fstab + ".b")
    sums = tree_checksums(str(env.root))
    result = fail_module(nfs_mount, args(env, state="present"))
    assert fstab in result["msg"] and "ELOOP" in result["msg"]
    assert tree_checksums(str(env.root)) == sums


@pytest.mark.parametrize("code", [errno.EACCES, errno.EIO], ids=["EACCES", "EIO"])
def test_unreadable_fstab_fails_naming_the_errno_and_writes_nothing(env, monkeypatch, code):
    # Root reads a 0000 file, so the error is injected at open(2) for the fstab path only
    # (file_read.read, the one reader, opens with os.open).
    real_open = os.open
    fstab = str(env.fstab)

    def failing_open(file, *a, **k):
        if file == fstab:
            raise OSError(code, os.strerror(code), file)
        return real_open(file, *a, **k)
    monkeypatch.setattr(os, "open", failing_open)
    result = fail_module(nfs_mount, args(env, state="present"))
    assert fstab in result["msg"] and errno.errorcode[code] in result["msg"]
    assert env.fstab.read_text() == FSTAB


def test_nfs_mount_has_no_reader_of_its_own():
    # One reader for every module (file_read.read): the private one swallowed every OSError.
    assert not hasattr(nfs_mount, "_read_text")


# ---- 2. concurrent runs lose nothing ------------------------------------------------------------
RUNNER = textwrap.dedent("""
    import os, sys, time
    from ansible_collections.ckptio.nfs.tests.unit.utils import patch_module_args
    from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root
    from ansible_collections.ckptio.nfs.plugins.modules import nfs_mount
    proc, start, path, fstab = sys.argv[1:5]
    host_root.ROOT = os.path.dirname(proc)
    # Every process has imported Ansible before any starts: the runs overlap as much as they can.
    while not os.path.exists(start):
        time.sleep(0.001)
    with patch_module_args({"src": "10.0.0.1:/srv/nfs", "path": path, "fstab": fstab, "state": "present",
                            "opts": {"vers": "4.1", "nconnect": 4}}):
        nfs_mount.main()
""")
PROCESSES = 6
ROUNDS = 15


def collection_root():
    """The directory that holds ansible_collections/, so a child python imports this collection."""
    here = os.path.abspath(__file__)
    return here[:here.index(os.sep + "ansible_collections" + os.sep)]


def test_parallel_real_module_processes_lose_no_fstab_entry(env, tmp_path):
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([collection_root()] + sys.path))
    expected = list(FSTAB.splitlines())
    for round_number in range(ROUNDS):
        start = str(tmp_path / ("start-%d" % round_number))
        paths = ["/mnt/round%d/rank%d" % (round_number, rank) for rank in range(PROCESSES)]
        children = [subprocess.Popen([sys.executable, "-c", RUNNER, str(env.proc), start, path, str(env.fstab)],
                                     env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                    for path in paths]
        open(start, "w").close()
        for child in children:
            out, err = child.communicate(timeout=120)
            assert child.returncode == 0, err.decode() + out.decode()
            assert json.loads(out.decode().strip().splitlines()[-1])["changed"] is True
        lines = env.fstab.read_text().splitlines()
        expected.extend("10.0.0.1:/srv/nfs %s nfs4 vers=4.1,nconnect=4 0 0" % path for path in paths)
        assert sorted(lines) == sorted(expected), "round %d lost entries" % round_number
    # No lock file is left beside the fstab.
    assert sorted(os.listdir(str(env.fstab.parent))) == ["fstab"]


# ---- 3. an entry that is not NFS is not ours ------------------------------------------------------
LOCAL_DISK = "/dev/vdb1 %s ext4 defaults,noatime 0 2\n"


@pytest.mark.parametrize("state", ["present", "mounted", "absent"])
def test_local_disk_entry_at_the_path_is_refused_naming_the_line(env, state):
    line = LOCAL_DISK % escape_path(env.path)
    env.fstab.write_text(FSTAB + line)
    sums = tree_checksums(str(env.root))
    extra = {"apply_policy": "never"} if state == "absent" else {}
    result = fail_module(nfs_mount, args(env, state=state, **extra))
    assert "replace_foreign" in result["msg"] and line.strip() in result["msg"] and "line 7" in result["msg"]
    assert tree_checksums(str(env.root)) == sums and env.calls == []


def test_replace_foreign_true_replaces_the_local_entry(env):
    env.fstab.write_text(FSTAB + LOCAL_DISK % escape_path(env.path))
    result = run_module(nfs_mount, args(env, state="present", replace_foreign=True))
    assert result["changed"] is True
    assert env.fstab.read_text() == FSTAB + fstab_line(env)


def test_an_nfs_entry_is_ours_without_replace_foreign(env):
    env.fstab.write_text(FSTAB + "10.0.0.7:/old %s nfs vers=3 0 0\n" % escape_path(env.path))
    run_module(nfs_mount, args(env, state="present"))
    assert env.fstab.read_text() == FSTAB + fstab_line(env)


# ---- 4. a symlinked fstab stays a link ------------------------------------------------------------
def test_symlinked_fstab_is_written_through_to_its_target(env):
    real_dir = env.root / "etc" / "real"
    real_dir.mkdir()
    target = real_dir / "fstab"
    target.write_text(FSTAB)
    os.unlink(str(env.fstab))
    os.symlink("real/fstab", str(env.fstab))
    result = run_module(nfs_mount, args(env, state="present", backup=True))
    assert os.path.islink(str(env.fstab)) and os.readlink(str(env.fstab)) == "real/fstab"
    assert target.read_text() == FSTAB + fstab_line(env)
    assert open(result["backup_file"]).read() == FSTAB
    assert sorted(os.listdir(str(env.fstab.parent))) == ["fstab", "real"]
    assert run_module(nfs_mount, args(env, state="present"))["changed"] is False


# ---- 5. fields are split on space and tab only ------------------------------------------------------
ODD_WHITESPACE = ["\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0", "\u2028", "\u3000"]


@pytest.mark.parametrize("char", ODD_WHITESPACE, ids=[hex(ord(c)) for c in ODD_WHITESPACE])
def test_path_with_other_whitespace_or_control_is_refused(env, char):
    sums = tree_checksums(str(env.root))
    result = fail_module(nfs_mount, args(env, path=env.path + char + "x", state="present"))
    assert result["msg"].startswith("path:") and repr(char)[1:-1] in result["msg"]
    assert tree_checksums(str(env.root)) == sums


@pytest.mark.parametrize("char", ["\xa0", "\u2028", "\x0b", "\x1f"], ids=["nbsp", "u2028", "vt", "us"])
def test_someone_elses_entry_with_unicode_whitespace_is_not_ours(env, char):
    # `<path>\u00a0old` is one field to mount(8) (libmount splits on blanks: space and tab).
    other = "10.0.0.9:/other %s%sold nfs4 vers=4.2 0 0\n" % (escape_path(env.path), char)
    env.fstab.write_text(FSTAB + other)
    run_module(nfs_mount, args(env, state="present"))
    assert env.fstab.read_text() == FSTAB + other + fstab_line(env)
    assert run_module(nfs_mount, args(env, state="present"))["changed"] is False


def test_path_with_space_tab_newline_backslash_round_trips(env):
    path = env.path + " a\tb\nc\\d"
    run_module(nfs_mount, args(env, path=path, state="present"))
    assert env.fstab.read_text().endswith(" %s nfs4 " % (env.path + "\\040a\\011b\\012c\\134d")
                                          + "vers=4.1,nconnect=4,rsize=1048576,wsize=1048576,hard 0 0\n")
    assert run_module(nfs_mount, args(env, path=path, state="present"))["changed"] is False


# ---- 6. one spelling per mount point ------------------------------------------------------------------
def spellings(path):
    return [path.replace("/mnt/", "/mnt//"), "/" + path, path + "//", path.replace("/mnt/", "/mnt///")]


@pytest.mark.parametrize("index", range(4), ids=["inner-double", "leading-double", "trailing", "inner-triple"])
def test_non_normal_spelling_of_the_path_finds_the_one_entry(env, index):
    env.fstab.write_text(FSTAB + fstab_line(env))
    result = run_module(nfs_mount, args(env, path=spellings(env.path)[index], state="present"))
    assert result["changed"] is False
    assert env.fstab.read_text() == FSTAB + fstab_line(env)


@pytest.mark.parametrize("index", range(4), ids=["inner-double", "leading-double", "trailing", "inner-triple"])
def test_hand_written_non_normal_entry_is_the_entry_for_the_path(env, index):
    hand = fstab_line(env).replace(escape_path(env.path), escape_path(spellings(env.path)[index]))
    env.fstab.write_text(FSTAB + hand)
    result = run_module(nfs_mount, args(env, state="present"))
    assert result["changed"] is False and env.fstab.read_text() == FSTAB + hand


def test_dotdot_is_refused(env):
    result = fail_module(nfs_mount, args(env, path=env.path + "/../nfs", state="present"))
    assert result["msg"].startswith("path:") and ".." in result["msg"]


# ---- 7. a directory or an immutable file where a file belongs ---------------------------------------
def test_directory_at_the_fstab_path_fails_cleanly(env):
    os.unlink(str(env.fstab))
    env.fstab.mkdir()
    sums = tree_checksums(str(env.root))
    result = fail_module(nfs_mount, args(env, state="present"))
    assert str(env.fstab) in result["msg"] and "EISDIR" in result["msg"]
    assert tree_checksums(str(env.root)) == sums


@pytest.fixture
def immutable(tmp_path):
    """chattr +i on a path (root on ext4/xfs/tmpfs>=6.0); skips where the file system cannot."""
    marked = []

    def mark(path):
        try:
            done = subprocess.run(["chattr", "+i", path], capture_output=True, check=False)
        except FileNotFoundError:
            pytest.skip("chattr is not installed")
        if done.returncode != 0:
            pytest.skip("chattr +i is not possible here (not root, or the file system has no immutable flag)")
        marked.append(path)
    yield mark
    for path in marked:
        subprocess.run(["chattr", "-i", path], capture_output=True, check=False)


def test_immutable_fstab_fails_cleanly_and_stays(env, immutable):
    immutable(str(env.fstab))
    result = fail_module(nfs_mount, args(env, state="present"))
    assert str(env.fstab) in result["msg"] and "unchanged" in result["msg"]
    assert env.fstab.read_text() == FSTAB
    assert sorted(os.listdir(str(env.fstab.parent))) == ["fstab"]
