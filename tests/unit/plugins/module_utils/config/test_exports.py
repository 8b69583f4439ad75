"""exports(5) as nfs-utils' exportfs reads it (support/nfs/exports.c getexportent, xio.c xgettok).

Every case is a line an administrator can write; the expected entries are what exportfs exports.
"""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.config import exports


def clients(text):
    entries, error = exports.parse(text)
    assert error is None, error
    return [(entry["path"], entry["client"], entry["options"]) for entry in entries]


# molecule/default/prepare.yml writes this file on the test server.
MOLECULE = ("# checkpoints for the GPU nodes\n"
            "/srv/checkpoints  10.0.0.0/24(rw,sync,no_subtree_check) gpu*(rw,async,no_root_squash)\n")


def test_clients_with_their_options():
    assert clients(MOLECULE) == [("/srv/checkpoints", "10.0.0.0/24", ["rw", "sync", "no_subtree_check"]),
                                 ("/srv/checkpoints", "gpu*", ["rw", "async", "no_root_squash"])]


def test_leading_dash_options_are_defaults_for_every_client_of_the_line():
    # exports(5)'s own example: sync,rw for all three, @external's ro applied after them.
    text = "/srv/www        -sync,rw server @trusted @external(ro)\n/srv/other host(ro)\n"
    assert clients(text) == [("/srv/www", "server", ["sync", "rw"]), ("/srv/www", "@trusted", ["sync", "rw"]),
                             ("/srv/www", "@external", ["sync", "rw", "ro"]),
                             # The defaults hold for that line only.
                             ("/srv/other", "host", ["ro"])]
    entries, _error = exports.parse(text)
    assert [entry["default_options"] for entry in entries] == [["sync", "rw"]] * 3 + [[]]


def test_dash_options_between_clients_apply_to_the_clients_after_them():
    assert clients("/srv a(rw) -async b\n") == [("/srv", "a", ["rw"]), ("/srv", "b", ["async"])]


def test_dash_options_without_a_client_export_to_everyone():
    # getexportent: no client after the defaults is the default client, which matches any host.
    assert clients("/srv/pub -ro\n") == [("/srv/pub", "*", ["ro"])]


def test_quoted_path_with_spaces():
    assert clients('"/srv/my checkpoints" gpu*(rw,async)\n') == [("/srv/my checkpoints", "gpu*", ["rw", "async"])]


def test_quotes_may_cover_part_of_a_field():
    assert clients('/srv/"my checkpoints"/x a(rw)\n') == [("/srv/my checkpoints/x", "a", ["rw"])]


def test_octal_escape_in_a_path():
    assert clients("/srv/my\\040checkpoints a(rw)\n") == [("/srv/my checkpoints", "a", ["rw"])]
    # Not three octal digits: the backslash stays.
    assert clients("/srv/a\\09 b\n") == [("/srv/a\\09", "b", [])]


def test_comments_blank_lines_and_continuations():
    text = ("# whole-line comment\n"
            "\n"
            "   # indented comment\n"
            "/srv/a \\\n"
            "    10.0.0.0/8(rw,async) \\\n"
            "\t@grid(ro)  # what follows a field is a comment\n"
            "/srv/b a(rw)\n")
    assert clients(text) == [("/srv/a", "10.0.0.0/8", ["rw", "async"]), ("/srv/a", "@grid", ["ro"]),
                             ("/srv/b", "a", ["rw"])]
    entries, _error = exports.parse(text)
    assert [entry["line"] for entry in entries] == [4, 4, 7]


def test_a_hash_inside_a_field_is_part_of_it():
    # xio.c skips a comment only where a field would start.
    assert clients("/srv/a#1 host(rw)\n") == [("/srv/a#1", "host", ["rw"])]


def test_path_alone_exports_to_everyone():
    assert clients("/srv/a\n/srv/b\n") == [("/srv/a", "*", []), ("/srv/b", "*", [])]


def test_options_without_a_client_name_are_for_everyone():
    # The classic mistake "host (rw)": host gets the defaults (ro), everyone else rw.
    assert clients("/srv host (rw)\n") == [("/srv", "host", []), ("/srv", "*", ["rw"])]


@pytest.mark.parametrize("client, kind", [
    ("*", "any"), ("gpu*", "wildcard"), ("node[0-9]", "wildcard"), ("node?", "wildcard"), ("@trusted", "netgroup"),
    ("10.0.0.0/24", "subnet"), ("2001:db8:9:e54::/64", "subnet"), ("192.0.2.7", "host"), ("nfs01.example", "host"),
    ("gss/krb5", "gss"),
])
def test_client_kinds(client, kind):
    entries, error = exports.parse("/srv %s(rw)\n" % client)
    assert error is None
    assert [(entry["client"], entry["kind"]) for entry in entries] == [(client, kind)]


def test_crlf_line_endings():
    assert clients("/srv/a a(rw)\r\n/srv/b b(ro)\r\n") == [("/srv/a", "a", ["rw"]), ("/srv/b", "b", ["ro"])]


def test_empty_option_items_are_dropped():
    assert clients("/srv a(rw,,sync) b()\n") == [("/srv", "a", ["rw", "sync"]), ("/srv", "b", [])]


@pytest.mark.parametrize("text, before, line, message", [
    ("/srv/a a(rw)\n/srv/b b(rw\n/srv/c c(rw)\n", ["/srv/a"], 2, "bad option list"),
    ("/srv/a a(rw)x b(rw)\n", [], 1, "bad option list"),
    # The clients before the malformed one were exported.
    ("/srv/a a(rw) b(rw\n", ["/srv/a"], 1, "bad option list"),
    # getpath() skips blanks and newlines only: a blank line ending in \r stops exportfs.
    ("/srv/a a(rw)\r\n\r\n/srv/b b(rw)\r\n", ["/srv/a"], 2, "no export path"),
    ('/srv/a a(rw)\n"" b(rw)\n', ["/srv/a"], 2, "no export path"),
    ('/srv/a a(rw)\n"/srv/b b(rw)\n/srv/c c(rw)\n', ["/srv/a"], 2, "unterminated quote"),
])
def test_a_syntax_error_ends_the_file_as_it_does_for_exportfs(text, before, line, message):
    # export_read() stops at the first entry getexportent() refuses: later lines are not exported.
    entries, error = exports.parse(text)
    assert [entry["path"] for entry in entries] == before
    assert error["line"] == line
    assert message in error["msg"]


def test_empty_text():
    assert exports.parse("") == ([], None)
    assert exports.parse("# only a comment\n\n") == ([], None)


@pytest.mark.parametrize("options, mode", [
    ([], None), (["rw"], None), (["sync"], "sync"), (["async"], "async"),
    # Options apply in order (parseopts): the last of sync/async wins.
    (["async", "sync"], "sync"), (["sync", "rw", "async"], "async"),
])
def test_write_mode(options, mode):
    assert exports.write_mode(options) == mode
