from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.config import fstab

# Unusual but valid: tabs, comments, blank lines, UUID=, LABEL=, a bind mount, an escaped
# space, CRLF on one line and no final newline.
FSTAB = (
    "# /etc/fstab: static file system information.\n"
    "#\n"
    "UUID=0a1b2c3d-4e5f-6789-abcd-ef0123456789\t/\text4\terrors=remount-ro\t0\t1\n"
    "LABEL=scratch /scratch xfs defaults,noatime 0 2\n"
    "\n"
    "/srv/data\t/export/data\tnone\tbind\t0 0\n"
    "   # indented comment\n"
    "10.0.0.1:/srv/nfs\t/mnt/nfs\tnfs4\tvers=4.1,nconnect=1\t0\t0\r\n"
    "10.0.0.3:/export /mnt/ckpt\\040data nfs vers=3 0 0"
)


def _changed_lines(before, after):
    a, b = fstab.split_lines(before), fstab.split_lines(after)
    return [(i, x, y) for i, (x, y) in enumerate(zip(a, b)) if x != y], len(a), len(b)


def test_split_lines_roundtrips_every_byte():
    assert "".join(fstab.split_lines(FSTAB)) == FSTAB
    assert fstab.split_lines("") == []
    assert fstab.split_lines("a\n") == ["a\n"]


def test_parse_entry_unescapes_paths_and_skips_comments():
    lines = fstab.split_lines(FSTAB)
    assert fstab.parse_entry(lines[0]) is None
    assert fstab.parse_entry(lines[6]) is None
    assert fstab.parse_entry(lines[8])["path"] == "/mnt/ckpt data"
    assert fstab.parse_entry(lines[2])["src"].startswith("UUID=")
    assert fstab.parse_entry("/dev/sda1 /boot ext4 defaults\n")["passno"] == "0"


def test_find_entry_by_escaped_mount_point():
    lines = fstab.split_lines(FSTAB)
    assert fstab.find_entry(lines, "/mnt/ckpt data") == 8
    assert fstab.find_entry(lines, "/mnt/nfs/") == 7
    assert fstab.find_entry(lines, "/mnt/other") is None


def test_duplicate_entries_refuse_to_edit():
    with pytest.raises(fstab.FstabError, match="lines 1, 2"):
        fstab.set_entry("a:/x /m nfs defaults 0 0\nb:/y /m nfs defaults 0 0\n", "/m", ["c:/z", "/m", "nfs", "x", "0", "0"])


def test_replace_changes_only_that_line_and_keeps_tabs_and_crlf():
    fields = fstab.format_fields("10.0.0.1:/srv/nfs", "/mnt/nfs", "nfs4", "vers=4.1,nconnect=4", 0, 0)
    after, index = fstab.set_entry(FSTAB, "/mnt/nfs", fields)
    changed, before_count, after_count = _changed_lines(FSTAB, after)
    assert index == 7 and before_count == after_count
    assert changed == [(7, "10.0.0.1:/srv/nfs\t/mnt/nfs\tnfs4\tvers=4.1,nconnect=1\t0\t0\r\n",
                        "10.0.0.1:/srv/nfs\t/mnt/nfs\tnfs4\tvers=4.1,nconnect=4\t0\t0\r\n")]
    assert not after.endswith("\n")


def test_replace_last_line_keeps_missing_final_newline_and_escapes_space():
    fields = fstab.format_fields("10.0.0.3:/export", "/mnt/ckpt data", "nfs", "vers=3,hard", 0, 0)
    after, dummy = fstab.set_entry(FSTAB, "/mnt/ckpt data", fields)
    assert after == FSTAB.replace("vers=3 0 0", "vers=3,hard 0 0")


def test_append_to_file_without_final_newline():
    fields = fstab.format_fields("s:/e", "/mnt/new", "nfs4", "nconnect=2", 0, 0)
    after, index = fstab.set_entry(FSTAB, "/mnt/new", fields)
    assert after == FSTAB + "\ns:/e /mnt/new nfs4 nconnect=2 0 0"
    assert index == 9


def test_append_to_empty_and_newline_terminated_files():
    fields = ["s:/e", "/m", "nfs4", "defaults", "0", "0"]
    assert fstab.set_entry("", "/m", fields)[0] == "s:/e /m nfs4 defaults 0 0\n"
    assert fstab.set_entry("# c\n", "/m", fields)[0] == "# c\ns:/e /m nfs4 defaults 0 0\n"


def test_remove_middle_line_only():
    after, index = fstab.remove_entry(FSTAB, "/mnt/nfs")
    assert index == 7
    assert after == FSTAB.replace("10.0.0.1:/srv/nfs\t/mnt/nfs\tnfs4\tvers=4.1,nconnect=1\t0\t0\r\n", "")


def test_remove_last_line_keeps_file_without_final_newline():
    after, dummy = fstab.remove_entry(FSTAB, "/mnt/ckpt data")
    assert after == FSTAB[:FSTAB.index("10.0.0.3")].rstrip("\r\n")


def test_remove_absent_entry_is_a_no_op():
    assert fstab.remove_entry(FSTAB, "/nowhere") == (FSTAB, None)


def test_short_entry_gains_dump_and_passno_with_its_own_separator():
    after, dummy = fstab.set_entry("s:/e\t/m\tnfs4\tdefaults\n", "/m", ["s:/e", "/m", "nfs4", "hard", "0", "0"])
    assert after == "s:/e\t/m\tnfs4\thard\t0\t0\n"


# ---- fields and paths (issue 12) ------------------------------------------------------------
@pytest.mark.parametrize("char", ["\x0b", "\x0c", "\x1c", "\x85", "\xa0", "\u2028"])
def test_fields_are_split_on_space_and_tab_only(char):
    line = "srv:/x /mnt/a%sb nfs4 vers=4.2 0 0\n" % char
    assert fstab.parse_entry(line)["path"] == "/mnt/a%sb" % char
    assert fstab.find_entries([line], "/mnt/a") == []


def test_crlf_and_trailing_blanks_are_the_line_ending():
    line = "srv:/x\t/mnt/a\tnfs4\tvers=4.2\t0\t0 \t\r\n"
    assert fstab.parse_entry(line)["passno"] == "0"
    assert fstab.render_entry(["srv:/y", "/mnt/a", "nfs4", "vers=4.1", "0", "0"], line) == \
        "srv:/y\t/mnt/a\tnfs4\tvers=4.1\t0\t0 \t\r\n"


@pytest.mark.parametrize("spelling", ["/mnt//a", "//mnt/a", "/mnt/a/", "/mnt/./a"])
def test_entries_are_found_by_normal_path(spelling):
    assert fstab.find_entries(["srv:/x %s nfs4 defaults 0 0\n" % spelling], "/mnt/a") == [0]
