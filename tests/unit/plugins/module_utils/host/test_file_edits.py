"""apply_edits through file_write: order, backups, the failure message; write_kernel_value."""
from __future__ import annotations

import pytest

from ansible.module_utils import basic

from ansible_collections.ckptio.nfs.plugins.module_utils.config.owned_files import FileEdit
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_edits
from ansible_collections.ckptio.nfs.tests.unit.utils import patch_module_args


class Failed(Exception):
    pass


@pytest.fixture
def module(monkeypatch):
    def fail_json(self, **kwargs):
        raise Failed(kwargs)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    with patch_module_args({}):
        yield basic.AnsibleModule(argument_spec={})


def test_edits_write_new_files_remove_old_ones_and_skip_unchanged(module, tmp_path):
    (tmp_path / "old.conf").write_text("old\n")
    (tmp_path / "same.conf").write_text("same\n")
    edits = [FileEdit(str(tmp_path / "sub" / "new.conf"), None, "new\n", False),
             FileEdit(str(tmp_path / "same.conf"), "same\n", "same\n", True),
             FileEdit(str(tmp_path / "old.conf"), "old\n", None, True)]
    backups = file_edits.apply_edits(module, edits)
    assert (tmp_path / "sub" / "new.conf").read_text() == "new\n"
    assert not (tmp_path / "old.conf").exists()
    # Every backup, named by the file it saves (issue 24 item 11).
    assert list(backups) == [str(tmp_path / "old.conf")] and open(backups[str(tmp_path / "old.conf")]).read() == "old\n"


def test_a_failed_write_fails_naming_the_file_and_leaves_it(module, tmp_path, monkeypatch):
    path = tmp_path / "ckptio.conf"
    path.write_text("old\n")

    def broken_move(self, src, dest, unsafe_writes=False, keep_dest_attrs=True):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(basic.AnsibleModule, "atomic_move", broken_move)
    with pytest.raises(Failed) as failed:
        file_edits.apply_edits(module, [FileEdit(str(path), "old\n", "new\n", False)])
    assert failed.value.args[0] == {"msg": "could not write %s (the old file is untouched): ENOSPC: No space left on device" % path,
                                    "changed": False, "backup_files": {}}
    assert path.read_text() == "old\n"


def test_a_failure_after_an_earlier_write_reports_changed_and_names_it(module, tmp_path, monkeypatch):
    """One writer, changed whenever anything was written (issue 24 item 10): the first file is written, the second fails."""
    first, second = tmp_path / "record", tmp_path / "defaults"
    second.write_text("old\n")
    real_move = basic.AnsibleModule.atomic_move

    # atomic_move's keywords differ between ansible-core releases (2.15 has no keep_dest_attrs).
    def move(self, src, dest, *args, **kwargs):
        if dest == str(second):
            raise OSError(1, "Operation not permitted")
        return real_move(self, src, dest, *args, **kwargs)
    monkeypatch.setattr(basic.AnsibleModule, "atomic_move", move)
    with pytest.raises(Failed) as failed:
        file_edits.apply_edits(module, [FileEdit(str(first), None, "r\n", False), FileEdit(str(second), "old\n", "new\n", False)])
    result = failed.value.args[0]
    assert result["changed"] is True and str(second) in result["msg"] and "already changed before it: %s" % first in result["msg"]
    assert first.read_text() == "r\n" and second.read_text() == "old\n"


def test_write_kernel_value_writes_the_number_and_a_newline(tmp_path):
    path = tmp_path / "threads"
    path.write_text("8\n")
    file_edits.write_kernel_value(str(path), 32)
    assert path.read_text() == "32\n"
    with pytest.raises(OSError):
        file_edits.write_kernel_value(str(tmp_path / "missing" / "threads"), 32)
