from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.config import modprobe_conf

# A hand-kept modprobe.d file: comments, a blank line, tabs, a duplicate parameter (the kernel
# applies both, the last wins), another module, and no final newline.
MESSY = (
    "# site tuning, do not remove\n"
    "\n"
    "options\tsunrpc  tcp_slot_table_entries=16\n"
    "options lockd nlm_timeout=10\n"
    "options sunrpc tcp_max_slot_table_entries=64\ttcp_slot_table_entries=32 # old\n"
    "blacklist floppy"
)


def test_set_changes_only_the_last_occurrence_of_the_value():
    after = modprobe_conf.set_options(MESSY, "sunrpc", {"tcp_slot_table_entries": 128})
    assert after == MESSY.replace("tcp_slot_table_entries=32", "tcp_slot_table_entries=128")
    # The earlier, overridden assignment stays as it was.
    assert "options\tsunrpc  tcp_slot_table_entries=16\n" in after


def test_set_same_value_returns_identical_text():
    assert modprobe_conf.set_options(MESSY, "sunrpc", {"tcp_slot_table_entries": 32, "tcp_max_slot_table_entries": 64}) == MESSY


def test_set_missing_parameter_appends_to_last_options_line_of_the_module():
    after = modprobe_conf.set_options(MESSY, "sunrpc", {"udp_slot_table_entries": 16})
    lines_before = MESSY.split("\n")
    lines_after = after.split("\n")
    changed = [i for i, (a, b) in enumerate(zip(lines_before, lines_after)) if a != b]
    assert changed == [4]
    assert lines_after[4] == "options sunrpc tcp_max_slot_table_entries=64\ttcp_slot_table_entries=32 # old udp_slot_table_entries=16"


def test_set_new_module_appends_a_line_and_terminates_the_old_last_line():
    after = modprobe_conf.set_options(MESSY, "nfs", {"max_session_slots": 128})
    assert after == MESSY + "\noptions nfs max_session_slots=128\n"


def test_set_on_empty_text_writes_one_line():
    assert modprobe_conf.set_options("", "sunrpc", {"tcp_max_slot_table_entries": 128}) == "options sunrpc tcp_max_slot_table_entries=128\n"


def test_dash_and_underscore_are_the_same_module_and_parameter():
    text = "options nfs-layout-flexfiles io-maxretrans=5\noptions sunrpc tcp-max-slot-table-entries=64\n"
    after = modprobe_conf.set_options(text, "sunrpc", {"tcp_max_slot_table_entries": 128})
    assert after == text.replace("=64", "=128")
    assert modprobe_conf.options_entries(text, "nfs_layout_flexfiles")[0]["name"] == "io_maxretrans"


def test_continued_line_is_read_but_not_edited_in_place():
    text = "options sunrpc \\\n  tcp_max_slot_table_entries=64\n"
    entries = modprobe_conf.options_entries(text, "sunrpc")
    assert [(e["name"], e["value"], e["line"]) for e in entries] == [("tcp_max_slot_table_entries", "64", None)]
    after = modprobe_conf.set_options(text, "sunrpc", {"tcp_max_slot_table_entries": 128})
    assert after == text + "options sunrpc tcp_max_slot_table_entries=128\n"
    assert modprobe_conf.effective_options([("f", after)], "sunrpc")["tcp_max_slot_table_entries"]["value"] == "128"


def test_remove_drops_only_the_token_and_an_emptied_line():
    after = modprobe_conf.remove_options(MESSY, "sunrpc", ["tcp_slot_table_entries"])
    assert after == (
        "# site tuning, do not remove\n"
        "\n"
        "options lockd nlm_timeout=10\n"
        "options sunrpc tcp_max_slot_table_entries=64 # old\n"
        "blacklist floppy"
    )
    assert modprobe_conf.remove_options(MESSY, "sunrpc", ["nothing_here"]) == MESSY


def test_has_directives():
    assert not modprobe_conf.has_directives("# only a comment\n\n")
    assert modprobe_conf.has_directives("# c\noptions nfs max_session_slots=2\n")


def test_config_order_sorts_by_name_and_etc_hides_lib():
    listing = [
        ("/etc/modprobe.d", ["sunrpc.conf", "ckptio-nfs.conf", "notes.txt"]),
        ("/lib/modprobe.d", ["sunrpc.conf", "aliases.conf", ".hidden.conf"]),
    ]
    assert modprobe_conf.config_order(listing) == [
        "/lib/modprobe.d/aliases.conf", "/etc/modprobe.d/ckptio-nfs.conf", "/etc/modprobe.d/sunrpc.conf"]


def test_effective_options_last_file_wins():
    files = [("/etc/modprobe.d/a.conf", "options sunrpc tcp_max_slot_table_entries=128\n"),
             ("/etc/modprobe.d/z.conf", "options sunrpc tcp_max_slot_table_entries=64\n")]
    assert modprobe_conf.effective_options(files, "sunrpc") == {
        "tcp_max_slot_table_entries": {"value": "64", "path": "/etc/modprobe.d/z.conf"}}


@pytest.mark.parametrize("before, after", [
    ("", "sunrpc\n"),
    ("# boot modules\nloop", "# boot modules\nloop\nsunrpc\n"),
    ("sunrpc\n", "sunrpc\n"),
    ("; sunrpc\n", "; sunrpc\nsunrpc\n"),
])
def test_ensure_listed(before, after):
    assert modprobe_conf.ensure_listed(before, "sunrpc") == after


def test_remove_listed_keeps_everything_else():
    assert modprobe_conf.remove_listed("# c\nloop\nsunrpc\n\tdummy", "sunrpc") == "# c\nloop\n\tdummy"


# ---- install lines (issue 12) ---------------------------------------------------------------
INSTALLS = (
    "options sunrpc tcp_slot_table_entries=16\n"
    "install sunrpc /sbin/modprobe --ignore-install sunrpc $CMDLINE_OPTS tcp_slot_table_entries=4 \\\n"
    "    udp-slot-table-entries=8; /bin/echo loaded x=1\n"
    "install nfs /bin/true\n"
)


def test_install_commands_read_the_parameters_after_the_module_name():
    commands = modprobe_conf.install_commands(INSTALLS, "sunrpc")
    assert [(c["line"], c["options"]) for c in commands] == [
        (2, {"tcp_slot_table_entries": "4", "udp_slot_table_entries": "8"})]
    assert modprobe_conf.install_commands(INSTALLS, "nfs") == [{"line": 4, "command": "/bin/true", "options": {}}]


def test_install_commands_parameters_override_every_options_line():
    files = [("/etc/modprobe.d/a.conf", INSTALLS),
             ("/etc/modprobe.d/z.conf", "options sunrpc tcp_slot_table_entries=128\n")]
    assert modprobe_conf.effective_options(files, "sunrpc")["tcp_slot_table_entries"] == {
        "value": "4", "path": "/etc/modprobe.d/a.conf"}


def test_install_commands_only_the_first_one_counts():
    files = [("/etc/modprobe.d/a.conf", "install sunrpc /sbin/modprobe --ignore-install sunrpc tcp_slot_table_entries=4\n"),
             ("/etc/modprobe.d/b.conf", "install sunrpc /sbin/modprobe --ignore-install sunrpc tcp_slot_table_entries=8\n")]
    path, command = modprobe_conf.first_install_command(files, "sunrpc")
    assert path == "/etc/modprobe.d/a.conf" and command["options"] == {"tcp_slot_table_entries": "4"}
