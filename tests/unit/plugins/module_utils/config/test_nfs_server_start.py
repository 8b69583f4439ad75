"""Detection of how nfs-server gets its thread count, on the files of the real packages
(tests/fixtures/distro/*/NOTES.txt says where each comes from)."""
from __future__ import annotations

import os

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfs_server_start as start
from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root

# nfs-utils_env.sh is stored as .sh.txt: sanity runs shellcheck on *.sh (NOTES.txt).
DISTRO = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures", "distro")
DEFAULTS = "/etc/default/nfs-kernel-server"
ENV_SCRIPT = "/usr/lib/systemd/scripts/nfs-utils_env.sh"
# The defaults files nfsd_threads may edit, as a live host names them.
EDITABLE = host_root.HostRoot("/").editable_defaults


def fixture_text(distro, *parts):
    path = os.path.join(DISTRO, distro, *parts)
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return handle.read()


def unit_of(distro):
    for directory in ("usr/lib/systemd/system", "lib/systemd/system"):
        text = fixture_text(distro, directory, "nfs-server.service")
        if text is not None:
            return [("/" + directory + "/nfs-server.service", text)]
    raise AssertionError("no unit in %s" % distro)


def detect(distro, defaults=None, dropins=()):
    """Detection on a host that has the distro's files as installed (postinst copies the template)."""
    script = fixture_text(distro, "usr/lib/systemd/scripts/nfs-utils_env.sh.txt")
    if defaults is None:
        defaults = fixture_text(distro, "usr/share/nfs-kernel-server/conffiles/nfs-kernel-server.default")
    sourced = start.sourced_files(script) if script else []
    files = [(path, defaults if path == DEFAULTS else None) for path in sourced]
    return start.detect(unit_of(distro) + list(dropins), ENV_SCRIPT, script, files, EDITABLE)


@pytest.mark.parametrize("distro, mechanism, count", [
    ("debian-bullseye-1.3.4-6+deb11u1", start.COMMAND_LINE, 8),
    ("ubuntu-focal-1.3.4-2.5ubuntu3.7", start.COMMAND_LINE, 8),
    ("debian-bookworm-2.6.2-4+deb12u1", start.NFS_CONF, None),
    ("debian-trixie-2.8.3-1", start.NFS_CONF, None),
    ("ubuntu-jammy-2.6.1-1ubuntu1.2", start.NFS_CONF, None),
    ("ubuntu-noble-2.6.4-3ubuntu5.1", start.NFS_CONF, None),
])
def test_mechanism_per_distro(distro, mechanism, count):
    found = detect(distro)
    assert found["mechanism"] == mechanism, found["reason"]
    assert found["count"] == count


def test_bullseye_count_is_rpcnfsdcount_line_of_the_default_file():
    found = detect("debian-bullseye-1.3.4-6+deb11u1")
    assert found["count_source"] == {"path": DEFAULTS, "line": 2, "value": "8", "via": "RPCNFSDCOUNT"}
    assert found["edit_path"] == DEFAULTS
    assert "RPCNFSDCOUNT=8" in found["reason"]


def test_bullseye_without_the_default_file_starts_8_from_the_script():
    found = detect("debian-bullseye-1.3.4-6+deb11u1", defaults="")
    assert (found["mechanism"], found["count"]) == (start.COMMAND_LINE, 8)
    assert found["count_source"]["via"] == "default" and found["count_source"]["path"] == ENV_SCRIPT


def test_a_count_in_rpcnfsdopts_comes_first_and_wins():
    found = detect("debian-bullseye-1.3.4-6+deb11u1", defaults='RPCNFSDCOUNT=64\nRPCNFSDOPTS="--no-udp -H 10.0.0.1 32"\n')
    assert (found["mechanism"], found["count"]) == (start.COMMAND_LINE, 32)
    assert found["count_source"]["via"] == "RPCNFSDOPTS"


def test_an_expanded_value_is_unknown():
    found = detect("debian-bullseye-1.3.4-6+deb11u1", defaults="RPCNFSDCOUNT=$(nproc)\n")
    assert found["mechanism"] == start.UNKNOWN and "not a plain value" in found["reason"]


def test_a_dropin_with_a_literal_count_overrides_the_unit():
    dropin = ("/etc/systemd/system/nfs-server.service.d/local.conf", "[Service]\nExecStart=\nExecStart=/usr/sbin/rpc.nfsd -s 128\n")
    found = detect("debian-bookworm-2.6.2-4+deb12u1", dropins=[dropin])
    assert (found["mechanism"], found["count"]) == (start.UNIT_ARGUMENT, 128)
    assert found["count_source"]["path"] == dropin[0]


def test_trixie_nfsdctl_autostart_reads_nfs_conf():
    found = detect("debian-trixie-2.8.3-1")
    assert found["exec_start"] == ["/bin/sh -c '/usr/sbin/nfsdctl autostart || /usr/sbin/rpc.nfsd'"]


def test_no_unit_is_unknown():
    assert start.detect([], ENV_SCRIPT, None, [], EDITABLE)["mechanism"] == start.UNKNOWN


def test_args_variable_without_the_script_is_unknown():
    found = start.detect(unit_of("debian-bullseye-1.3.4-6+deb11u1"), ENV_SCRIPT, None, [], EDITABLE)
    assert found["mechanism"] == start.UNKNOWN and "missing" in found["reason"]


def test_the_scripts_source_the_debian_default_files():
    script = fixture_text("debian-bullseye-1.3.4-6+deb11u1", "usr/lib/systemd/scripts/nfs-utils_env.sh.txt")
    assert start.sourced_files(script) == ["/etc/default/nfs-common", DEFAULTS]
    assert start.script_count_default(script) == 8


def test_first_positional_follows_getopt():
    assert start.first_positional(["-H", "host", "-N", "3", "16"]) == (4, "16")
    assert start.first_positional(["--port", "2049", "--no-udp"]) is None
    assert start.first_positional(["-sH", "host", "12"]) == (2, "12")
    assert start.first_positional(["--grace-time=10", "9"]) == (1, "9")


def test_setting_rpcnfsdcount_changes_only_that_line():
    template = fixture_text("debian-bullseye-1.3.4-6+deb11u1", "usr/share/nfs-kernel-server/conffiles/nfs-kernel-server.default")
    after = start.set_shell_value(template, "RPCNFSDCOUNT", 64)
    assert after == template.replace("RPCNFSDCOUNT=8\n", "RPCNFSDCOUNT=64\n", 1)
    assert start.restore_line(after, "RPCNFSDCOUNT", "RPCNFSDCOUNT=8") == template


def test_setting_keeps_quotes_comment_and_crlf():
    text = '# x\r\nRPCNFSDCOUNT="8"\r\nRPCNFSDPRIORITY=0'
    assert start.set_shell_value(text, "RPCNFSDCOUNT", 32) == '# x\r\nRPCNFSDCOUNT="32"\r\nRPCNFSDPRIORITY=0'
    assert start.set_shell_value("RPCNFSDCOUNT=8 # threads\n", "RPCNFSDCOUNT", 9) == "RPCNFSDCOUNT=9 # threads\n"
    # Issue 24 item 8: blanks before the comment, a quoted value with a comment, single quotes.
    assert start.set_shell_value("RPCNFSDCOUNT=8    # comment\n", "RPCNFSDCOUNT", 32) == "RPCNFSDCOUNT=32    # comment\n"
    assert start.set_shell_value('RPCNFSDCOUNT="8"  # comment\n', "RPCNFSDCOUNT", 32) == 'RPCNFSDCOUNT="32"  # comment\n'
    assert start.set_shell_value("export RPCNFSDCOUNT='8'\t#c", "RPCNFSDCOUNT", 16) == "export RPCNFSDCOUNT='16'\t#c"


@pytest.mark.parametrize("text, words", [
    ('RPCNFSDCOUNT=4\n# x\nRPCNFSDCOUNT="8"\n', ["lines 1, 3"]),
    ("if [ -r /etc/big ]; then\n  RPCNFSDCOUNT=64\nelse\n  RPCNFSDCOUNT=8\nfi\n", ["lines 2, 4"]),
    ('RPCNFSDCOUNT="$(nproc)"\n', ["command substitution $(nproc)"]),
], ids=["twice", "if-else", "command-substitution"])
def test_setting_refuses_a_line_it_cannot_read(text, words):
    """Which assignment the shell keeps is not known: no line is edited (issue 24 item 8)."""
    with pytest.raises(ValueError) as raised:
        start.set_shell_value(text, "RPCNFSDCOUNT", 32)
    for word in words:
        assert word in str(raised.value)


@pytest.mark.parametrize("raw, value", [
    ("8", "8"), ("8    # comment", "8"), ('"8"  # comment', "8"), ("'8'", "8"), ('"8"', "8"), ("8\t#", "8"),
    ('"8 "', "8 "), ("", ""), ('""', ""), ('8"0"', "80"),
])
def test_plain_values_are_read(raw, value):
    assert start.shell_assignments("RPCNFSDCOUNT=%s\n" % raw, "RPCNFSDCOUNT")[0]["value"] == value


@pytest.mark.parametrize("raw, words", [
    ('"$(nproc)"', "command substitution $(nproc)"), ("$(nproc)", "command substitution"), ("`nproc`", "command substitution"),
    ("$N", "the expansion $N"), ('"${N:-8}"', "the expansion ${N:-8}"), ("8 nfsd", "'nfsd' follows the value"),
    ("8;reboot", "operator ';'"), ("'8", "unclosed quote"), ("\\8", "backslash"),
])
def test_values_the_shell_computes_are_unreadable_and_say_why(raw, words):
    found = start.shell_assignments("RPCNFSDCOUNT=%s\n" % raw, "RPCNFSDCOUNT")[0]
    assert found["value"] is None and words in found["problem"]


@pytest.mark.parametrize("defaults, words", [
    ("RPCNFSDCOUNT=\"$(nproc)\"\n", ["line 1", "command substitution $(nproc)"]),
    ("if true; then\n  RPCNFSDCOUNT=64\nelse\n  RPCNFSDCOUNT=8\nfi\n", ["lines 2, 4"]),
    ("RPCNFSDOPTS=\"$EXTRA\"\n", ["RPCNFSDOPTS", "the expansion $EXTRA"]),
])
def test_an_unreadable_count_is_unknown_and_marked_unreadable(defaults, words):
    found = detect("debian-bullseye-1.3.4-6+deb11u1", defaults=defaults)
    assert found["mechanism"] == start.UNKNOWN and found["unreadable"] is True and found["count"] is None
    for word in words:
        assert word in found["reason"]


def test_a_commented_count_is_read():
    for defaults in ("RPCNFSDCOUNT=8    # comment\n", 'RPCNFSDCOUNT="8"  # comment\n'):
        found = detect("debian-bullseye-1.3.4-6+deb11u1", defaults=defaults)
        assert (found["mechanism"], found["count"], found["unreadable"]) == (start.COMMAND_LINE, 8, False)


def test_setting_where_there_is_no_line_adds_one_and_rollback_removes_it():
    text = "RPCNFSDPRIORITY=0"
    after = start.set_shell_value(text, "RPCNFSDCOUNT", 16)
    assert after == "RPCNFSDPRIORITY=0\nRPCNFSDCOUNT=16\n"
    assert start.restore_line(after, "RPCNFSDCOUNT", None) == "RPCNFSDPRIORITY=0\n"


def test_record_round_trip_and_foreign_text():
    text = start.record_text(DEFAULTS, "RPCNFSDCOUNT=8")
    assert start.parse_record(text) == {"path": DEFAULTS, "line": "RPCNFSDCOUNT=8", "written": None}
    assert start.parse_record(start.record_text(DEFAULTS, None)) == {"path": DEFAULTS, "line": None, "written": None}
    both = start.record_text(DEFAULTS, "RPCNFSDCOUNT=8", "RPCNFSDCOUNT=32")
    assert start.parse_record(both) == {"path": DEFAULTS, "line": "RPCNFSDCOUNT=8", "written": "RPCNFSDCOUNT=32"}
    assert start.parse_record("RPCNFSDCOUNT=8\n") is None
