"""Names a tuning module may own, its header check, and the FileEdit diffs."""
from __future__ import annotations

import pytest

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


def test_backup_result_names_every_backup_and_keeps_backup_file_for_the_main_file():
    """One rule for nfsd_threads and sunrpc_slot_table, whatever order the files were written in (issue 24 item 11)."""
    backups = {"/etc/default/nfs-kernel-server": "/etc/default/nfs-kernel-server.1.x~", "/etc/nfs.conf.d/a.conf": "/etc/nfs.conf.d/a.conf.1.x~"}
    assert owned_files.backup_result(backups, "/etc/nfs.conf.d/a.conf") == {
        "backup_files": backups, "backup_file": "/etc/nfs.conf.d/a.conf.1.x~"}
    # The main file was not backed up: no backup_file, never another file's backup.
    assert owned_files.backup_result({"/etc/modules-load.d/x.conf": "b"}, "/etc/modprobe.d/x.conf") == {
        "backup_files": {"/etc/modules-load.d/x.conf": "b"}}
    assert owned_files.backup_result({}, "/etc/modprobe.d/x.conf") == {"backup_files": {}}


def test_with_own_reads_every_file_with_ours_as_planned():
    texts = {"/etc/modprobe.d/a.conf": "a\n", "/etc/modprobe.d/own.conf": "old\n"}
    paths = ["/etc/modprobe.d/a.conf", "/etc/modprobe.d/own.conf", "/etc/modprobe.d/missing.conf"]
    assert owned_files.with_own(paths, "/etc/modprobe.d//own.conf", "new\n", texts.get) == [
        ("/etc/modprobe.d/a.conf", "a\n"), ("/etc/modprobe.d/own.conf", "new\n")]
    # Ours removed by the run: left out, whatever is on disk now.
    assert owned_files.with_own(paths, "/etc/modprobe.d/own.conf", None, texts.get) == [("/etc/modprobe.d/a.conf", "a\n")]


# ---- owned_path_error: the one check of a path a tuning module owns (issue 46) ----------------
MODPROBE_DIRS = ("/etc/modprobe.d", "/lib/modprobe.d")
# sunrpc_slot_table's rules: the name first, then the place.
NAME_FIRST = ((owned_files.NAME, "%(option)s must name a .conf file, got %(path)r"),
              (owned_files.PLACE, "%(option)s must be directly in one of %(directories)s, got %(path)r"))
# nfsd_threads' rules: the place (nfs.conf itself, or a drop-in), then the name.
PLACE_FIRST = ((owned_files.PLACE, "%(option)s must be %(files)s or in %(directories)s, got %(path)r"),
               (owned_files.NAME, "%(option)s name may contain only safe characters, got %(path)r"))


@pytest.mark.parametrize("path, expected", [
    (None, "o must be an absolute path, got None"),
    ("x.conf", "o must be an absolute path, got 'x.conf'"),
    ("/etc/modprobe.d/ckptio-nfs.conf", None),
    ("/lib/modprobe.d/ckptio-nfs.conf", None),
    ("/etc/modprobe.d/x.txt", "o must name a .conf file, got '/etc/modprobe.d/x.txt'"),
    ("/etc/modprobe.d/.x.conf", "o must name a .conf file, got '/etc/modprobe.d/.x.conf'"),
    ("/etc/modprobe.d/a b.conf", "o must name a .conf file, got '/etc/modprobe.d/a b.conf'"),
    # Wrong in both ways: the rule named first speaks.
    ("/tmp/a b.txt", "o must name a .conf file, got '/tmp/a b.txt'"),
    ("/etc/modprobe.d/sub/x.conf", "o must be directly in one of /etc/modprobe.d, /lib/modprobe.d, got '/etc/modprobe.d/sub/x.conf'"),
])
def test_owned_path_error_name_first(path, expected):
    assert owned_files.owned_path_error("o", path, MODPROBE_DIRS, NAME_FIRST) == expected


@pytest.mark.parametrize("path, expected", [
    ("/etc/nfs.conf", None),
    ("/etc//nfs.conf", None),
    ("/etc/nfs.conf.d/ckptio-nfsd.conf", None),
    ("/etc/nfs.conf.d/.conf", "o must be /etc/nfs.conf or in /etc/nfs.conf.d, got '/etc/nfs.conf.d/.conf'"),
    ("/etc/nfs.conf.d/x.txt", "o must be /etc/nfs.conf or in /etc/nfs.conf.d, got '/etc/nfs.conf.d/x.txt'"),
    ("/etc/nfs.conf.d/a b.conf", "o name may contain only safe characters, got '/etc/nfs.conf.d/a b.conf'"),
    # Wrong in both ways: the place speaks first here.
    ("/tmp/a b.conf", "o must be /etc/nfs.conf or in /etc/nfs.conf.d, got '/tmp/a b.conf'"),
])
def test_owned_path_error_place_first_with_an_exact_file(path, expected):
    assert owned_files.owned_path_error("o", path, ["/etc/nfs.conf.d"], PLACE_FIRST, files=["/etc/nfs.conf"]) == expected
