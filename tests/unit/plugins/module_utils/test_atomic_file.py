"""atomic_file: the one place files are replaced; a failure leaves the old bytes and no temp file."""
from __future__ import annotations

import os
import stat

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.ckptio.nfs.plugins.module_utils import atomic_file


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
    with pytest.raises(IsADirectoryError):
        atomic_file.read_text(str(tmp_path))


def test_read_text_does_not_hide_an_unreadable_file(tmp_path, monkeypatch):
    def denied(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", path)
    monkeypatch.setattr("builtins.open", denied)
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
    monkeypatch.setattr("builtins.open", failing)
    assert atomic_file.read_optional(str(tmp_path / "pool_stats")) is None


def test_read_optional_is_none_for_a_directory_and_a_missing_file(tmp_path):
    assert atomic_file.read_optional(str(tmp_path)) is None
    assert atomic_file.read_optional(str(tmp_path / "absent")) is None
