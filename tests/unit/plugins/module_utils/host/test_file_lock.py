"""file_lock: one exclusive lock per edited file; it leaves no file and takes none in check mode."""
from __future__ import annotations

import os
import stat

import pytest

from ansible.module_utils import basic

from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_lock
from ansible_collections.ckptio.nfs.tests.unit.utils import patch_module_args


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
    with file_lock.locked(real_module, path) as lock_path:
        assert lock_path == str(tmp_path / ".fstab.ckptio.lock")
        assert stat.S_IMODE(os.stat(lock_path).st_mode) & 0o077 == 0
        # A second holder (another open file description, as another process has) times out.
        with pytest.raises(SystemExit):
            with file_lock.locked(real_module, path, timeout=0.2):
                pass
        assert "another run holds the lock" in failures[0]["msg"] and lock_path in failures[0]["msg"]
    assert os.listdir(str(tmp_path)) == []
    with file_lock.locked(real_module, path):
        pass
    assert os.listdir(str(tmp_path)) == []


def test_lock_of_a_symlink_guards_its_target(real_module, tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink("real/fstab", str(tmp_path / "fstab"))
    with file_lock.locked(real_module, str(tmp_path / "fstab")) as lock_path:
        assert lock_path == str(tmp_path / "real" / ".fstab.ckptio.lock")


def test_check_mode_takes_no_lock(tmp_path):
    with patch_module_args({"_ansible_check_mode": True}):
        checking = basic.AnsibleModule(argument_spec={}, supports_check_mode=True)
    with file_lock.locked(checking, str(tmp_path / "fstab")) as lock_path:
        assert lock_path is None and os.listdir(str(tmp_path)) == []
