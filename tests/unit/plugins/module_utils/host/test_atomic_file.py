"""atomic_file: the one place files are replaced; a failure leaves the old bytes and no temp file."""
from __future__ import annotations

import errno
import os
import stat

import pytest

from ansible.module_utils import basic

from ansible_collections.ckptio.nfs.plugins.module_utils.host import atomic_file
from ansible_collections.ckptio.nfs.tests.unit.utils import patch_module_args


@pytest.fixture
def module():
    with patch_module_args({}):
        return basic.AnsibleModule(argument_spec={}, supports_check_mode=True)


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def read_bytes(path):
    with open(path, "rb") as handle:
        return handle.read()


def test_new_file_gets_the_bytes_and_the_mode_whatever_the_umask(module, tmp_path):
    path = str(tmp_path / "new.conf")
    old_umask = os.umask(0o077)
    try:
        backup = atomic_file.write_file(module, path, "a\tb\r\nno final newline", mode=0o640, backup=True)
    finally:
        os.umask(old_umask)
    assert read_bytes(path) == b"a\tb\r\nno final newline"
    assert mode_of(path) == 0o640
    assert backup is None, "nothing existed to back up"
    assert os.listdir(str(tmp_path)) == ["new.conf"]


def test_text_read_with_surrogateescape_is_written_back_byte_for_byte(module, tmp_path):
    original = b"caf\xe9 latin-1 \xff\n"
    path = str(tmp_path / "fstab")
    atomic_file.write_file(module, path, original.decode("utf-8", "surrogateescape"))
    assert read_bytes(path) == original


def test_existing_file_keeps_its_mode_and_backup_holds_the_old_bytes(module, tmp_path):
    path = str(tmp_path / "fstab")
    with open(path, "wb") as handle:
        handle.write(b"old\n")
    os.chmod(path, 0o600)
    backup = atomic_file.write_file(module, path, b"new\n", mode=0o644, backup=True)
    assert read_bytes(path) == b"new\n"
    assert mode_of(path) == 0o600, "mode applies to new files only; an existing file keeps its own"
    assert read_bytes(backup) == b"old\n" and os.path.dirname(backup) == str(tmp_path)
    assert sorted(os.listdir(str(tmp_path))) == sorted(["fstab", os.path.basename(backup)])


def failing_move(self, src, dest, unsafe_writes=False, keep_dest_attrs=True):
    raise OSError(28, "No space left on device")


def failing_fsync(fd):
    raise OSError(5, "Input/output error")


@pytest.mark.parametrize("where", ["atomic_move", "fsync"])
def test_failure_leaves_the_old_file_and_no_temp_file(module, tmp_path, monkeypatch, where):
    path = str(tmp_path / "nfs.conf")
    with open(path, "wb") as handle:
        handle.write(b"[nfsd]\nthreads=8\n")
    os.chmod(path, 0o640)
    if where == "atomic_move":
        monkeypatch.setattr(basic.AnsibleModule, "atomic_move", failing_move)
    else:
        monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError):
        atomic_file.write_file(module, path, "[nfsd]\nthreads=64\n")
    assert read_bytes(path) == b"[nfsd]\nthreads=8\n"
    assert mode_of(path) == 0o640
    assert os.listdir(str(tmp_path)) == ["nfs.conf"], "a temp file was left behind"


def test_failure_creating_a_new_file_leaves_nothing(module, tmp_path, monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, "atomic_move", failing_move)
    with pytest.raises(OSError):
        atomic_file.write_file(module, str(tmp_path / "new.conf"), "x\n")
    assert os.listdir(str(tmp_path)) == []


def test_missing_parent_is_created_only_when_asked(module, tmp_path):
    path = str(tmp_path / "etc/nfs.conf.d/ckptio-nfsd.conf")
    with pytest.raises(OSError):
        atomic_file.write_file(module, path, "x\n")
    assert not os.path.exists(str(tmp_path / "etc"))
    atomic_file.write_file(module, path, "x\n", make_parent=True)
    assert read_bytes(path) == b"x\n"


def test_remove_backs_up_first_and_tolerates_an_absent_file(module, tmp_path):
    path = str(tmp_path / "ckptio-nfs.conf")
    with open(path, "wb") as handle:
        handle.write(b"options sunrpc tcp_max_slot_table_entries=128\n")
    backup = atomic_file.remove_file(module, path, backup=True)
    assert not os.path.exists(path)
    assert read_bytes(backup) == b"options sunrpc tcp_max_slot_table_entries=128\n"
    assert atomic_file.remove_file(module, path, backup=True) is None


def test_read_text_keeps_every_byte_so_a_rewrite_is_byte_for_byte(module, tmp_path):
    path = str(tmp_path / "nfs.conf")
    original = b"[nfsd]\r\nthreads=8\n# caf\xe9 latin-1\xff\n"
    with open(path, "wb") as handle:
        handle.write(original)
    text = atomic_file.read_text(path)
    assert "\r\n" in text, "no newline translation"
    atomic_file.write_file(module, path, text)
    assert read_bytes(path) == original


def test_read_text_is_none_only_for_a_missing_file(tmp_path):
    assert atomic_file.read_text(str(tmp_path / "absent")) is None
    with pytest.raises(OSError) as raised:
        atomic_file.read_text(str(tmp_path))
    assert raised.value.errno == errno.EISDIR


def test_read_text_does_not_hide_an_unreadable_file(tmp_path, monkeypatch):
    def denied(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", path)
    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(PermissionError):
        atomic_file.read_text(str(tmp_path / "locked.conf"))


def test_read_optional_reads_text_mode(tmp_path):
    path = tmp_path / "threads"
    path.write_bytes(b"16\r\n")
    assert atomic_file.read_optional(str(path)) == "16\n", "text mode translates newlines as the readers did before"


@pytest.mark.parametrize("make_error", [
    lambda path: FileNotFoundError(2, "No such file or directory", path),
    lambda path: PermissionError(13, "Permission denied", path),
    lambda path: OSError(5, "Input/output error", path),
])
def test_read_optional_is_none_on_any_os_error(tmp_path, monkeypatch, make_error):
    def failing(path, *args, **kwargs):
        raise make_error(path)
    monkeypatch.setattr(os, "open", failing)
    assert atomic_file.read_optional(str(tmp_path / "pool_stats")) is None


def test_read_optional_is_none_for_a_directory_and_a_missing_file(tmp_path):
    assert atomic_file.read_optional(str(tmp_path)) is None
    assert atomic_file.read_optional(str(tmp_path / "absent")) is None


def test_read_link_is_the_target_of_a_link_even_a_dangling_one_and_none_otherwise(tmp_path):
    (tmp_path / "cwd").symlink_to("/mnt/nfs/run (deleted)")
    (tmp_path / "file").write_text("x")
    assert atomic_file.read_link(str(tmp_path / "cwd")) == "/mnt/nfs/run (deleted)"
    assert atomic_file.read_link(str(tmp_path / "file")) is None
    assert atomic_file.read_link(str(tmp_path / "missing")) is None


# ---- issue 12: lock, symlinks, modes, errors ------------------------------------------------
def recording_fail_json(failures):
    """A fail_json that records its arguments and exits, as the real one does."""
    def fail_json(self, **kwargs):
        failures.append(kwargs)
        raise SystemExit(1)
    return fail_json


@pytest.fixture
def real_module():
    with patch_module_args({}):
        return basic.AnsibleModule(argument_spec={}, supports_check_mode=True)


def test_lock_excludes_a_second_holder_and_leaves_no_file(real_module, tmp_path, monkeypatch):
    path = str(tmp_path / "fstab")
    failures = []
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", recording_fail_json(failures))
    with atomic_file.locked(real_module, path) as lock_path:
        assert lock_path == str(tmp_path / ".fstab.ckptio.lock")
        assert stat.S_IMODE(os.stat(lock_path).st_mode) & 0o077 == 0
        # A second holder (another open file description, as another process has) times out.
        with pytest.raises(SystemExit):
            with atomic_file.locked(real_module, path, timeout=0.2):
                pass
        assert "another run holds the lock" in failures[0]["msg"] and lock_path in failures[0]["msg"]
    assert os.listdir(str(tmp_path)) == []
    with atomic_file.locked(real_module, path):
        pass
    assert os.listdir(str(tmp_path)) == []


def test_lock_of_a_symlink_guards_its_target(real_module, tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink("real/fstab", str(tmp_path / "fstab"))
    with atomic_file.locked(real_module, str(tmp_path / "fstab")) as lock_path:
        assert lock_path == str(tmp_path / "real" / ".fstab.ckptio.lock")


def test_check_mode_takes_no_lock(tmp_path):
    with patch_module_args({"_ansible_check_mode": True}):
        checking = basic.AnsibleModule(argument_spec={}, supports_check_mode=True)
    with atomic_file.locked(checking, str(tmp_path / "fstab")) as lock_path:
        assert lock_path is None and os.listdir(str(tmp_path)) == []


def test_write_through_a_symlink_keeps_the_link(module, tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "fstab"
    target.write_bytes(b"old\n")
    os.symlink("real/fstab", str(tmp_path / "fstab"))
    atomic_file.write_file(module, str(tmp_path / "fstab"), b"new\n", follow_links=True)
    assert os.readlink(str(tmp_path / "fstab")) == "real/fstab"
    assert read_bytes(str(target)) == b"new\n"
    assert sorted(os.listdir(str(tmp_path / "real"))) == ["fstab"]


def test_new_file_is_never_wider_than_its_mode_under_umask_000(module, tmp_path, monkeypatch):
    seen = []
    real_atomic_move = basic.AnsibleModule.atomic_move

    def spying_move(self, src, dest, *a, **k):
        seen.append(stat.S_IMODE(os.stat(src).st_mode))
        real_atomic_move(self, src, dest, *a, **k)
        seen.append(stat.S_IMODE(os.stat(dest).st_mode))
    monkeypatch.setattr(basic.AnsibleModule, "atomic_move", spying_move)
    old = os.umask(0)
    try:
        atomic_file.write_file(module, str(tmp_path / "new.conf"), b"x\n", mode=0o640)
    finally:
        os.umask(old)
    assert seen and all(mode & ~0o640 == 0 for mode in seen), [oct(mode) for mode in seen]
    assert mode_of(str(tmp_path / "new.conf")) == 0o640


def test_temp_file_of_an_existing_file_has_that_files_mode(module, tmp_path, monkeypatch):
    path = str(tmp_path / "fstab")
    with open(path, "wb") as handle:
        handle.write(b"old\n")
    os.chmod(path, 0o600)
    seen = []
    real_atomic_move = basic.AnsibleModule.atomic_move

    def spying_move(self, src, dest, *a, **k):
        seen.append(stat.S_IMODE(os.stat(src).st_mode))
        real_atomic_move(self, src, dest, *a, **k)
    monkeypatch.setattr(basic.AnsibleModule, "atomic_move", spying_move)
    old = os.umask(0)
    try:
        atomic_file.write_file(module, path, b"new\n")
    finally:
        os.umask(old)
    assert seen == [0o600] and mode_of(path) == 0o600


def test_atomic_move_exception_becomes_an_oserror(module, tmp_path, monkeypatch):
    def plain_exception(self, src, dest, *a, **k):
        try:
            raise PermissionError(1, "Operation not permitted")
        except OSError as exc:
            raise Exception("Unable to make %r into to %r" % (src, dest)) from exc
    monkeypatch.setattr(basic.AnsibleModule, "atomic_move", plain_exception)
    path = str(tmp_path / "fstab")
    with open(path, "wb") as handle:
        handle.write(b"old\n")
    with pytest.raises(OSError) as raised:
        atomic_file.write_file(module, path, b"new\n")
    assert "EPERM" in str(raised.value) and read_bytes(path) == b"old\n"
    assert os.listdir(str(tmp_path)) == ["fstab"]


def test_read_text_or_fail_names_the_path_and_errno(module, tmp_path, monkeypatch):
    failures = []
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", recording_fail_json(failures))
    with pytest.raises(SystemExit):
        atomic_file.read_text_or_fail(module, str(tmp_path))
    assert str(tmp_path) in failures[0]["msg"] and "EISDIR" in failures[0]["msg"]
    assert atomic_file.read_text_or_fail(module, str(tmp_path / "absent")) is None


def test_write_if_changed_compares_every_byte(module, tmp_path):
    path = str(tmp_path / "report.png")
    png = b"\x89PNG\r\n\x1a\n\xff\xfe"
    assert atomic_file.write_if_changed(module, path, png) is True and read_bytes(path) == png
    assert atomic_file.write_if_changed(module, path, png) is False
    # A CRLF copy of a text file is other bytes: rewritten, not taken for the same text.
    with open(path, "wb") as handle:
        handle.write(b"a\r\nb\r\n")
    assert atomic_file.write_if_changed(module, path, "a\nb\n") is True and read_bytes(path) == b"a\nb\n"
    assert atomic_file.write_if_changed(module, path, "a\nb\n") is False


def test_write_if_changed_in_check_mode_says_so_and_writes_nothing(module, tmp_path):
    module.check_mode = True
    path = str(tmp_path / "diagnosis.md")
    assert atomic_file.write_if_changed(module, path, "new\n") is True and not os.path.exists(path)
    with open(path, "wb") as handle:
        handle.write(b"old\n")
    assert atomic_file.write_if_changed(module, path, "new\n") is True and read_bytes(path) == b"old\n"
    assert atomic_file.write_if_changed(module, path, b"old\n") is False


def test_regular_files_lists_files_only_without_dot_files(tmp_path):
    (tmp_path / "b.txt").write_text("x")
    (tmp_path / "a").write_text("x")
    (tmp_path / ".a.swp").write_text("x")
    (tmp_path / "sub").mkdir()
    os.symlink(str(tmp_path / "a"), str(tmp_path / "link"))
    assert atomic_file.regular_files(str(tmp_path)) == ["a", "b.txt", "link"]
    with pytest.raises(OSError):
        atomic_file.regular_files(str(tmp_path / "missing"))


def test_remove_empty_dir_leaves_a_directory_with_anything_in_it(module, tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "kept").write_text("x")
    (tmp_path / "empty").mkdir()
    assert atomic_file.is_empty_dir(str(tmp_path / "empty")) and not atomic_file.is_empty_dir(str(tmp_path / "missing"))
    assert atomic_file.remove_empty_dir(module, str(tmp_path / "full")) is False and (tmp_path / "full" / "kept").exists()
    module.check_mode = True
    assert atomic_file.remove_empty_dir(module, str(tmp_path / "empty")) is True and (tmp_path / "empty").is_dir()
    module.check_mode = False
    assert atomic_file.remove_empty_dir(module, str(tmp_path / "empty")) is True and not (tmp_path / "empty").exists()
    assert atomic_file.remove_empty_dir(module, str(tmp_path / "empty")) is False


def test_write_if_changed_creates_missing_parents_when_asked(module, tmp_path):
    path = str(tmp_path / "clients" / "gpu017" / "mountstats_after.txt")
    assert atomic_file.write_if_changed(module, path, "device x\n", make_parent=True) is True
    assert atomic_file.write_if_changed(module, path, "device x\n", make_parent=True) is False
