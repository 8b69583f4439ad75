from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.config import mountinfo

# Lines as the lab's Debian 12 guest (kernel 6.1) prints them, plus an escaped mount point.
MOUNTINFO = (
    "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
    "40 22 0:36 / /mnt/nfs rw,relatime shared:80 - nfs4 10.0.0.1:/srv/nfs "
    "rw,vers=4.1,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,nconnect=4,timeo=600,"
    "retrans=2,sec=sys,clientaddr=10.0.0.2,local_lock=none,addr=10.0.0.1\n"
    "41 22 0:37 / /mnt/with\\040space rw,relatime - nfs 10.0.0.3:/export "
    "rw,vers=3,rsize=65536,wsize=65536,hard,proto=tcp,addr=10.0.0.3\n"
    "not a mountinfo line\n"
    "42 22 0:38 / /mnt/v4 rw - nfs4 [fd00::1]:/x rw,vers=4,minorversion=2\n"
)


def test_parse_mountinfo_reads_every_wellformed_line_and_skips_garbage():
    mounts = mountinfo.parse_mountinfo(MOUNTINFO)
    assert [m["mount_point"] for m in mounts] == ["/", "/mnt/nfs", "/mnt/with space", "/mnt/v4"]
    nfs = mounts[1]
    assert nfs["fstype"] == "nfs4"
    assert nfs["source"] == "10.0.0.1:/srv/nfs"
    assert nfs["options"]["nconnect"] == "4"
    assert nfs["options"]["hard"] is None
    assert nfs["options"]["relatime"] is None


def test_nfs_mounts_server_and_version():
    mounts = mountinfo.nfs_mounts(mountinfo.parse_mountinfo(MOUNTINFO))
    assert [(mountinfo.nfs_server_of(m), mountinfo.nfs_version_of(m)) for m in mounts] == [
        ("10.0.0.1", "4.1"), ("10.0.0.3", "3"), ("fd00::1", "4.2")]


@pytest.mark.parametrize("path", ["/mnt/plain", "/mnt/a b", "/mnt/tab\there", "/mnt/new\nline", "/mnt/back\\slash"])
def test_escape_round_trip(path):
    escaped = mountinfo.escape_path(path)
    assert " " not in escaped and "\t" not in escaped and "\n" not in escaped
    assert mountinfo.unescape_path(escaped) == path


def test_unescape_leaves_invalid_escapes_alone():
    assert mountinfo.unescape_path("/a\\04") == "/a\\04"
    assert mountinfo.unescape_path("/a\\999") == "/a\\999"


def test_split_options_keeps_order_and_flags():
    assert list(mountinfo.split_options("rw,,vers=4.1,hard").items()) == [("rw", None), ("vers", "4.1"), ("hard", None)]


# ---- the one path rule (issue 12) -----------------------------------------------------------
@pytest.mark.parametrize("char", ["\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x7f", "\x85", "\xa0", "\u2028", "\u2029", "\u3000"])
def test_path_character_error_names_other_whitespace_and_controls(char):
    assert repr(char) in mountinfo.path_character_error("/mnt/a%sb" % char)


def test_space_tab_newline_backslash_are_escaped_not_refused():
    path = "/mnt/a b\tc\nd\\e"
    assert mountinfo.path_character_error(path) is None
    assert mountinfo.unescape_path(mountinfo.escape_path(path)) == path


@pytest.mark.parametrize("path, normal", [("/mnt//a", "/mnt/a"), ("//mnt/a", "/mnt/a"), ("/mnt/a//", "/mnt/a"),
                                          ("/", "/"), ("//", "/"), ("/mnt/./a", "/mnt/a"), ("/mnt/../a", "/mnt/../a")])
def test_normal_path(path, normal):
    assert mountinfo.normal_path(path) == normal
