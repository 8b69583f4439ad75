"""file_read: the one bounded reader and what its options make of a missing, unreadable or refused file."""
from __future__ import annotations

import errno
import os

import pytest

from ansible.module_utils import basic

from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_write
from ansible_collections.ckptio.nfs.tests.unit.utils import patch_module_args


@pytest.fixture
def module():
    with patch_module_args({}):
        return basic.AnsibleModule(argument_spec={}, supports_check_mode=True)


def read_bytes(path):
    with open(path, "rb") as handle:
        return handle.read()


def test_read_text_keeps_every_byte_so_a_rewrite_is_byte_for_byte(module, tmp_path):
    path = str(tmp_path / "nfs.conf")
    original = b"[nfsd]\r\nthreads=8\n# caf\xe9 latin-1\xff\n"
    with open(path, "wb") as handle:
        handle.write(original)
    text = file_read.read(path, follow_links=True)
    assert "\r\n" in text, "no newline translation"
    file_write.write_file(module, path, text)
    assert read_bytes(path) == original


def test_read_text_is_none_only_for_a_missing_file(tmp_path):
    assert file_read.read(str(tmp_path / "absent"), follow_links=True) is None
    with pytest.raises(OSError) as raised:
        file_read.read(str(tmp_path), follow_links=True)
    assert raised.value.errno == errno.EISDIR


def test_read_text_does_not_hide_an_unreadable_file(tmp_path, monkeypatch):
    def denied(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", path)
    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(PermissionError):
        file_read.read(str(tmp_path / "locked.conf"), follow_links=True)


def test_read_optional_reads_text_mode(tmp_path):
    path = tmp_path / "threads"
    path.write_bytes(b"16\r\n")
    assert file_read.read(str(path), kernel=True) == "16\n", "text mode translates newlines as the readers did before"


@pytest.mark.parametrize("make_error", [
    lambda path: FileNotFoundError(2, "No such file or directory", path),
    lambda path: PermissionError(13, "Permission denied", path),
    lambda path: OSError(5, "Input/output error", path),
])
def test_read_optional_is_none_on_any_os_error(tmp_path, monkeypatch, make_error):
    def failing(path, *args, **kwargs):
        raise make_error(path)
    monkeypatch.setattr(os, "open", failing)
    assert file_read.read(str(tmp_path / "pool_stats"), kernel=True) is None


def test_read_optional_is_none_for_a_directory_and_a_missing_file(tmp_path):
    assert file_read.read(str(tmp_path), kernel=True) is None
    assert file_read.read(str(tmp_path / "absent"), kernel=True) is None


def test_read_link_is_the_target_of_a_link_even_a_dangling_one_and_none_otherwise(tmp_path):
    (tmp_path / "cwd").symlink_to("/mnt/nfs/run (deleted)")
    (tmp_path / "file").write_text("x")
    assert file_read.read_link(str(tmp_path / "cwd")) == "/mnt/nfs/run (deleted)"
    assert file_read.read_link(str(tmp_path / "file")) is None
    assert file_read.read_link(str(tmp_path / "missing")) is None


def recording_fail_json(failures):
    """A fail_json that records its arguments and exits, as the real one does."""
    def fail_json(self, **kwargs):
        failures.append(kwargs)
        raise SystemExit(1)
    return fail_json


def test_read_text_or_fail_names_the_path_and_errno(module, tmp_path, monkeypatch):
    failures = []
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", recording_fail_json(failures))
    with pytest.raises(SystemExit):
        file_read.read(str(tmp_path), follow_links=True, module=module)
    assert str(tmp_path) in failures[0]["msg"] and "EISDIR" in failures[0]["msg"]
    assert file_read.read(str(tmp_path / "absent"), follow_links=True, module=module) is None


def test_regular_files_lists_files_only_without_dot_files(tmp_path):
    (tmp_path / "b.txt").write_text("x")
    (tmp_path / "a").write_text("x")
    (tmp_path / ".a.swp").write_text("x")
    (tmp_path / "sub").mkdir()
    os.symlink(str(tmp_path / "a"), str(tmp_path / "link"))
    assert file_read.regular_files(str(tmp_path)) == ["a", "b.txt", "link"]
    with pytest.raises(OSError):
        file_read.regular_files(str(tmp_path / "missing"))


def test_list_dirs_lists_the_directories_that_can_be_listed_in_their_order(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "b.conf").write_text("")
    (tmp_path / "etc" / "a.conf").write_text("")
    (tmp_path / "lib").mkdir()
    (tmp_path / "file").write_text("")
    directories = [str(tmp_path / name) for name in ("lib", "missing", "file", "etc")]
    assert file_read.list_dirs(directories) == [(str(tmp_path / "lib"), []), (str(tmp_path / "etc"), ["a.conf", "b.conf"])]


def test_our_own_files_old_text_refuses_what_is_not_ours_and_is_none_when_unreadable(tmp_path, monkeypatch):
    import socket
    own = tmp_path / "report.md"
    own.write_text("old\n")
    assert file_read.read(str(own), none_on=file_read.UNREADABLE) == "old\n"
    assert file_read.read(str(tmp_path / "absent"), none_on=file_read.UNREADABLE) is None
    (tmp_path / "link").symlink_to(str(own))
    with pytest.raises(file_read.FileRefused):
        file_read.read(str(tmp_path / "link"), none_on=file_read.UNREADABLE)
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(tmp_path / "sock"))
        with pytest.raises(file_read.FileRefused) as raised:
            file_read.read(str(tmp_path / "sock"), none_on=file_read.UNREADABLE)
        assert "a socket" in str(raised.value)
    finally:
        listener.close()

    def denied(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", path)
    monkeypatch.setattr(os, "open", denied)
    assert file_read.read(str(own), none_on=file_read.UNREADABLE) is None


def test_binary_keeps_the_bytes_and_the_cap(tmp_path):
    (tmp_path / "report.png").write_bytes(b"\x89PNG\r\n")
    assert file_read.read(str(tmp_path / "report.png"), binary=True) == b"\x89PNG\r\n"
    with pytest.raises(file_read.FileRefused):
        file_read.read(str(tmp_path / "report.png"), 3, binary=True)
