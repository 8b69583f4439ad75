"""file_write: the one place files are replaced; a failure leaves the old bytes and no temp file."""
from __future__ import annotations

import os
import stat

import pytest

from ansible.module_utils import basic

from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_write
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
        backup = file_write.write_file(module, path, "a\tb\r\nno final newline", mode=0o640, backup=True)
    finally:
        os.umask(old_umask)
    assert read_bytes(path) == b"a\tb\r\nno final newline"
    assert mode_of(path) == 0o640
    assert backup is None, "nothing existed to back up"
    assert os.listdir(str(tmp_path)) == ["new.conf"]


def test_text_read_with_surrogateescape_is_written_back_byte_for_byte(module, tmp_path):
    original = b"caf\xe9 latin-1 \xff\n"
    path = str(tmp_path / "fstab")
    file_write.write_file(module, path, original.decode("utf-8", "surrogateescape"))
    assert read_bytes(path) == original


def test_existing_file_keeps_its_mode_and_backup_holds_the_old_bytes(module, tmp_path):
    path = str(tmp_path / "fstab")
    with open(path, "wb") as handle:
        handle.write(b"old\n")
    os.chmod(path, 0o600)
    backup = file_write.write_file(module, path, b"new\n", mode=0o644, backup=True)
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
        file_write.write_file(module, path, "[nfsd]\nthreads=64\n")
    assert read_bytes(path) == b"[nfsd]\nthreads=8\n"
    assert mode_of(path) == 0o640
    assert os.listdir(str(tmp_path)) == ["nfs.conf"], "a temp file was left behind"


def test_failure_creating_a_new_file_leaves_nothing(module, tmp_path, monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, "atomic_move", failing_move)
    with pytest.raises(OSError):
        file_write.write_file(module, str(tmp_path / "new.conf"), "x\n")
    assert os.listdir(str(tmp_path)) == []


def test_missing_parent_is_created_only_when_asked(module, tmp_path):
    path = str(tmp_path / "etc/nfs.conf.d/ckptio-nfsd.conf")
    with pytest.raises(OSError):
        file_write.write_file(module, path, "x\n")
    assert not os.path.exists(str(tmp_path / "etc"))
    file_write.write_file(module, path, "x\n", make_parent=True)
    assert read_bytes(path) == b"x\n"


def test_remove_backs_up_first_and_tolerates_an_absent_file(module, tmp_path):
    path = str(tmp_path / "ckptio-nfs.conf")
    with open(path, "wb") as handle:
        handle.write(b"options sunrpc tcp_max_slot_table_entries=128\n")
    backup = file_write.remove_file(module, path, backup=True)
    assert not os.path.exists(path)
    assert read_bytes(backup) == b"options sunrpc tcp_max_slot_table_entries=128\n"
    assert file_write.remove_file(module, path, backup=True) is None


def test_write_through_a_symlink_keeps_the_link(module, tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "fstab"
    target.write_bytes(b"old\n")
    os.symlink("real/fstab", str(tmp_path / "fstab"))
    file_write.write_file(module, str(tmp_path / "fstab"), b"new\n", follow_links=True)
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
        file_write.write_file(module, str(tmp_path / "new.conf"), b"x\n", mode=0o640)
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
        file_write.write_file(module, path, b"new\n")
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
        file_write.write_file(module, path, b"new\n")
    assert "EPERM" in str(raised.value) and read_bytes(path) == b"old\n"
    assert os.listdir(str(tmp_path)) == ["fstab"]


def test_write_if_changed_compares_every_byte(module, tmp_path):
    path = str(tmp_path / "report.png")
    png = b"\x89PNG\r\n\x1a\n\xff\xfe"
    assert file_write.write_if_changed(module, path, png) is True and read_bytes(path) == png
    assert file_write.write_if_changed(module, path, png) is False
    # A CRLF copy of a text file is other bytes: rewritten, not taken for the same text.
    with open(path, "wb") as handle:
        handle.write(b"a\r\nb\r\n")
    assert file_write.write_if_changed(module, path, "a\nb\n") is True and read_bytes(path) == b"a\nb\n"
    assert file_write.write_if_changed(module, path, "a\nb\n") is False


def test_write_if_changed_in_check_mode_says_so_and_writes_nothing(module, tmp_path):
    module.check_mode = True
    path = str(tmp_path / "diagnosis.md")
    assert file_write.write_if_changed(module, path, "new\n") is True and not os.path.exists(path)
    with open(path, "wb") as handle:
        handle.write(b"old\n")
    assert file_write.write_if_changed(module, path, "new\n") is True and read_bytes(path) == b"old\n"
    assert file_write.write_if_changed(module, path, b"old\n") is False


def test_remove_empty_dir_leaves_a_directory_with_anything_in_it(module, tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "kept").write_text("x")
    (tmp_path / "empty").mkdir()
    assert file_read.is_empty_dir(str(tmp_path / "empty")) and not file_read.is_empty_dir(str(tmp_path / "missing"))
    assert file_write.remove_empty_dir(module, str(tmp_path / "full")) is False and (tmp_path / "full" / "kept").exists()
    module.check_mode = True
    assert file_write.remove_empty_dir(module, str(tmp_path / "empty")) is True and (tmp_path / "empty").is_dir()
    module.check_mode = False
    assert file_write.remove_empty_dir(module, str(tmp_path / "empty")) is True and not (tmp_path / "empty").exists()
    assert file_write.remove_empty_dir(module, str(tmp_path / "empty")) is False


def test_write_if_changed_creates_missing_parents_when_asked(module, tmp_path):
    path = str(tmp_path / "clients" / "gpu017" / "mountstats_after.txt")
    assert file_write.write_if_changed(module, path, "device x\n", make_parent=True) is True
    assert file_write.write_if_changed(module, path, "device x\n", make_parent=True) is False


HOST_DIR = os.path.dirname(file_write.__file__)
# Renames in host/ that are not "write this file": what each one moves and why it is not file_write's.
NOT_FILE_WRITES = {
    # The canary's workload itself: the checkpoint shapes rename as torch/megatron do; that rename is what is measured.
    os.path.join("canary", "shapes.py"),
    # The Slurm supervisor moves result.json.part, which the canary child streamed as its stdout, into place.
    "slurm_supervisor.py",
}


def _moves(path):
    """(line, call) of each os.rename / os.replace / .atomic_move call in a Python file."""
    import ast  # pylint: disable=import-outside-toplevel

    with open(path, encoding="utf-8") as stream:
        tree = ast.parse(stream.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            name = node.func.attr
            if name == "atomic_move" or (name in ("rename", "replace") and isinstance(owner, ast.Name) and owner.id == "os"):
                found.append((node.lineno, name))
    return found


def test_one_atomic_replace_for_writing_files_in_host():
    # One writer for files (docs/architecture.md): a second temp-file-and-rename beside file_write's drifts
    # (its own temp names, modes, link rules) and is tested apart.
    elsewhere = {}
    for directory, _dirs, names in os.walk(HOST_DIR):
        for name in names:
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, HOST_DIR)
            if name.endswith(".py") and relative != "file_write.py" and relative not in NOT_FILE_WRITES:
                if _moves(path):
                    elsewhere[relative] = _moves(path)
    assert elsewhere == {}


def test_replace_file_needs_no_module_gives_a_new_file_its_mode_and_keeps_an_old_ones(tmp_path):
    path = str(tmp_path / "x.prom")
    old_umask = os.umask(0o077)
    try:
        file_write.replace_file(path, "a 1\n", mode=0o644, inside=str(tmp_path))
    finally:
        os.umask(old_umask)
    assert read_bytes(path) == b"a 1\n" and mode_of(path) == 0o644
    os.chmod(path, 0o600)
    file_write.replace_file(path, b"a 2\n", mode=0o644, inside=str(tmp_path))
    assert read_bytes(path) == b"a 2\n" and mode_of(path) == 0o600
    assert os.listdir(str(tmp_path)) == ["x.prom"]


def test_replace_file_refuses_a_link_at_the_name_and_a_linked_directory_below_inside(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.prom").write_text("keep\n", encoding="utf-8")
    place = tmp_path / "place"
    place.mkdir()
    os.symlink(str(outside / "x.prom"), str(place / "x.prom"))
    with pytest.raises(file_read.FileRefused):
        file_write.replace_file(str(place / "x.prom"), "new\n", inside=str(place))
    os.symlink(str(outside), str(place / "sub"))
    with pytest.raises(file_read.FileRefused):
        file_write.replace_file(str(place / "sub" / "y.prom"), "new\n", inside=str(place))
    assert sorted(os.listdir(str(outside))) == ["x.prom"]
    assert (outside / "x.prom").read_text(encoding="utf-8") == "keep\n"
    assert sorted(os.listdir(str(place))) == ["sub", "x.prom"]


def test_replace_file_failing_rename_leaves_the_old_bytes_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "x.prom"
    path.write_text("old\n", encoding="utf-8")

    def no_space(_source, _target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(file_write.os, "rename", no_space)
    with pytest.raises(OSError):
        file_write.replace_file(str(path), "new\n", inside=str(tmp_path))
    assert path.read_text(encoding="utf-8") == "old\n" and os.listdir(str(tmp_path)) == ["x.prom"]
