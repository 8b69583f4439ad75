"""Names a tuning module may own, its header check, and the FileEdit diffs."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.config import owned_files

HEADER = "# Managed by ckptio.nfs.sunrpc_slot_table: NFS client RPC slot tables.\n"


def test_safe_names_and_directly_in():
    assert owned_files.safe_name("ckptio-nfs.conf") and not owned_files.safe_name("ckptio nfs.conf")
    assert not owned_files.safe_name("a;rm -rf.conf")
    assert owned_files.directly_in("/etc/modprobe.d//ckptio.conf", ["/etc/modprobe.d/"])
    assert not owned_files.directly_in("/etc/modprobe.d/sub/ckptio.conf", ["/etc/modprobe.d"])
    assert not owned_files.directly_in("/etc/modprobe.d/../ckptio.conf", ["/etc/modprobe.d"])


def test_written_by_needs_the_header_as_a_whole_line():
    assert owned_files.written_by("# site\n" + HEADER + "options sunrpc x=1\n", HEADER)
    assert not owned_files.written_by("# site " + HEADER, HEADER)


def test_diffs_of_changed_edits_only_with_absent_files_as_empty_text():
    edits = [owned_files.FileEdit("/etc/a.conf", None, "new\n", False),
             owned_files.FileEdit("/etc/b.conf", "same\n", "same\n", True),
             owned_files.FileEdit("/etc/c.conf", "old\n", None, True)]
    assert [edit.changed for edit in edits] == [True, False, True]
    assert owned_files.diffs(edits) == [
        {"before": "", "after": "new\n", "before_header": "/etc/a.conf", "after_header": "/etc/a.conf"},
        {"before": "old\n", "after": "", "before_header": "/etc/c.conf", "after_header": "/etc/c.conf"},
    ]
