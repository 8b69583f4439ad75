from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfs_conf

# The [nfsd] part of Debian 12's /etc/nfs.conf (nfs-utils 2.6.2): threads is commented out.
DEBIAN_NFS_CONF = (
    "#\n"
    "# This is a general configuration for the\n"
    "# NFS daemons and tools\n"
    "#\n"
    "[general]\n"
    "pipefs-directory=/run/rpc_pipefs\n"
    "#\n"
    "[nfsd]\n"
    "# debug=0\n"
    "# threads=8\n"
    "# host=\n"
    "# port=0\n"
    "# grace-time=90\n"
    "# lease-time=90\n"
    "# udp=n\n"
    "# tcp=y\n"
    "# vers3=y\n"
    "#\n"
    "[mountd]\n"
    "# debug=0\n"
    "manage-gids=y\n"
)


def values(text, tag="threads"):
    return [(e["value"], e["effective"]) for e in nfs_conf.assignments(text, "nfsd", tag)]


def test_debian_default_sets_no_threads():
    assert values(DEBIAN_NFS_CONF) == []
    assert nfs_conf.effective([("/etc/nfs.conf", DEBIAN_NFS_CONF)], "nfsd", "threads") == (None, [])


def test_set_value_inserts_one_line_after_the_section_header():
    after = nfs_conf.set_value(DEBIAN_NFS_CONF, "nfsd", "threads", 32)
    assert after == DEBIAN_NFS_CONF.replace("[nfsd]\n", "[nfsd]\nthreads=32\n")
    assert values(after) == [("32", True)]


def test_set_value_replaces_only_the_value_bytes():
    text = "[NFSD]\n\tThreads =  16   # was 8\n; note\n[mountd]\nthreads=99\n"
    after = nfs_conf.set_value(text, "nfsd", "threads", 64)
    assert after == "[NFSD]\n\tThreads =  64   # was 8\n; note\n[mountd]\nthreads=99\n"
    assert nfs_conf.set_value(after, "nfsd", "threads", 64) == after


def test_duplicate_key_last_one_wins_and_is_the_one_edited():
    text = "[nfsd]\nthreads=8\nthreads=16\n"
    assert values(text) == [("8", True), ("16", True)]
    assert nfs_conf.set_value(text, "nfsd", "threads", 32) == "[nfsd]\nthreads=8\nthreads=32\n"


def test_unterminated_last_line_is_ignored_like_nfs_utils_and_fixed_on_edit():
    text = "[nfsd]\nthreads=16"
    assert values(text) == [("16", False)]
    assert nfs_conf.effective([("f", text)], "nfsd", "threads")[0] is None
    # Same value, but nfs-utils would ignore it: the edit adds the newline.
    assert nfs_conf.set_value(text, "nfsd", "threads", 16) == "[nfsd]\nthreads=16\n"


def test_new_section_is_appended_and_terminates_the_old_last_line():
    assert nfs_conf.set_value("[mountd]\nmanage-gids=y", "nfsd", "threads", 32) == "[mountd]\nmanage-gids=y\n[nfsd]\nthreads=32\n"
    assert nfs_conf.set_value("", "nfsd", "threads", 32) == "[nfsd]\nthreads=32\n"


@pytest.mark.parametrize("line, expected", [
    ("threads = 32\n", "32"),
    ("threads=32;comment\n", "32"),
    ('threads = "32"\n', "32"),
    ("threads = '32' trailing\n", "32"),
    ("   threads\t=\t32\t\n", "32"),
])
def test_value_forms(line, expected):
    assert values("[nfsd]\n" + line) == [(expected, True)]


def test_quoted_value_is_replaced_inside_its_quotes():
    assert nfs_conf.set_value('[nfsd]\nthreads = "8"\n', "nfsd", "threads", 9) == '[nfsd]\nthreads = "9"\n'


def test_lines_that_set_nothing():
    text = (
        "threads=1\n"              # before any section
        "[nfsd \"sub\"]\nthreads=2\n"  # a subsection is not [nfsd]
        "[nfsd\nthreads=3\n"        # no closing bracket: ignored until the next section
        "[nfsd]\nthreads=\n"        # empty value sets nothing
        "# threads=5\n"
    )
    assert [v for v, effective in values(text) if effective] == []


def test_backslash_newline_joins_lines_and_an_edit_lands_after_them():
    text = "[nfsd]\nthreads=\\\n32\nhost=x\n"
    entries = nfs_conf.assignments(text, "nfsd", "threads")
    assert [(e["value"], e["editable"]) for e in entries] == [("32", False)]
    after = nfs_conf.set_value(text, "nfsd", "threads", 8)
    assert after == "[nfsd]\nthreads=\\\n32\nthreads=8\nhost=x\n"
    assert nfs_conf.effective([("f", after)], "nfsd", "threads")[0]["value"] == "8"


def test_remove_key_removes_only_those_lines():
    text = "# mine\n[nfsd]\nthreads=32\n\tmin-threads = 4\nhost=x\n"
    assert nfs_conf.remove_key(text, "nfsd", "threads") == "# mine\n[nfsd]\n\tmin-threads = 4\nhost=x\n"
    assert not nfs_conf.has_assignments(nfs_conf.remove_key(nfs_conf.remove_key("[nfsd]\nthreads=1\nmin-threads=1\n", "nfsd", "threads"),
                                                            "nfsd", "min-threads"))


def test_dropin_names_in_versionsort_order():
    names = ["10-site.conf", "9-site.conf", "a.conf", ".hidden.conf", "x.conf.bak", "b.txt", ".conf", "ckptio-nfsd.conf"]
    assert nfs_conf.dropin_names(names) == ["9-site.conf", "10-site.conf", "a.conf", "ckptio-nfsd.conf"]


def test_effective_later_file_wins_and_conflicts_name_the_winner():
    files = [
        ("/etc/nfs.conf", "[nfsd]\nthreads=8\n"),
        ("/etc/nfs.conf.d/ckptio-nfsd.conf", "[nfsd]\nthreads=32\n"),
        ("/etc/nfs.conf.d/zz-local.conf", "[nfsd]\nthreads=16\n"),
    ]
    winner, every = nfs_conf.effective(files, "nfsd", "threads")
    assert winner == {"path": "/etc/nfs.conf.d/zz-local.conf", "line": 2, "value": "16"}
    rows = nfs_conf.conflicts(every, "/etc/nfs.conf.d/ckptio-nfsd.conf", 32)
    assert rows == [
        {"path": "/etc/nfs.conf", "line": 2, "value": "8", "overrides_ours": False},
        {"path": "/etc/nfs.conf.d/zz-local.conf", "line": 2, "value": "16", "overrides_ours": True},
    ]


def test_includes_are_reported():
    assert nfs_conf.includes("[nfsd]\ninclude = /etc/extra.conf\n") == ["/etc/extra.conf"]


@pytest.mark.parametrize("value, number", [("32", 32), (" 16 ", 16), ("12abc", 12), ("abc", 0), (None, None)])
def test_atoi_like_conf_get_num(value, number):
    assert nfs_conf.atoi(value) == number
