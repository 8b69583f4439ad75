"""Data safety of the three file kinds the collection edits (issue 7, "Data safety").

fstab (nfs_mount), nfs.conf and its drop-ins (nfsd_threads), modprobe.d (sunrpc_slot_table):
real main() runs on files full of what admins really write. After a change exactly one line
differs and every other byte is the same; a failure in the middle of the write leaves the old
file byte for byte and no temp file; `backup: true` leaves a copy that restores the original
byte for byte.
"""
from __future__ import annotations

import os
import shutil

import pytest

from ansible.module_utils import basic

from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import escape_path
from ansible_collections.ckptio.nfs.tests.unit.test_safety_bad_input import build_world, module_named
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module


@pytest.fixture
def world(fake_root, monkeypatch):
    """The fake host of test_safety_bad_input.py: every module's live paths point into it."""
    return build_world(fake_root, monkeypatch)


def fstab_text(world, newline="\n", final_newline=True):
    """An fstab with comments, blank lines, tabs, UUID=/LABEL=, a bind mount and \\040 escapes."""
    lines = [
        "# /etc/fstab: static file system information.",
        "#",
        "# <file system> <mount point>   <type>  <options>       <dump>  <pass>",
        "UUID=0a3e5c1e-8d2b-4f8e-9c55-1e0f7a2b3c4d /               ext4    errors=remount-ro 0       1",
        "LABEL=scratch\t/scratch\txfs\tdefaults,noatime\t0\t2",
        "",
        "   # an indented comment, then a swap line without dump/pass",
        "/dev/mapper/vg-swap none swap sw",
        "/srv/data       /export/data    none    bind,x-systemd.requires=/srv    0       0",
        "10.0.0.5:/srv/shared\\040area /mnt/shared\\040area nfs4 vers=4.2,ro 0 0",
        "\t",
        "10.0.0.1:/srv/nfs\t%s\tnfs4\tvers=4.1,nconnect=4,rsize=1048576,wsize=1048576,hard,proto=tcp,timeo=600,retrans=2\t0\t0"
        % escape_path(world.mount_point),
        "tmpfs /tmp tmpfs defaults,size=2G,mode=1777 0 0",
    ]
    return newline.join(lines) + (newline if final_newline else "")


NFS_CONF = ("#\n# This is a general configuration for the\n# NFS daemons and tools\n#\n[general]\n"
            "pipefs-directory=/run/rpc_pipefs\n\n[exportd]\n# debug=\"all|auth|call|general|parse\"\n"
            "; a semicolon comment\n[nfsd]\n# debug=0\n\tthreads = 8\t# tuned by hand, 2023\n# host=\n"
            "vers3=n\n[mountd]\nmanage-gids=y")
DROPIN = "# site drop-in\n[nfsd]\n\tlease-time = 45\n\nthreads=16\n[mountd]\nport=20048"
MODPROBE = ("# ours, edited by hand\n\n"
            "options sunrpc\ttcp_max_slot_table_entries=64  udp_slot_table_entries=16\n"
            "# a comment between\n  options nfs max_session_slots=64\n# end, no final newline")


def lines(text):
    """Lines split on \\n only, so \\r of CRLF files stays part of each line."""
    return text.split("\n")


def read_bytes(path):
    with open(path, "rb") as handle:
        return handle.read()


def write_bytes(path, data):
    with open(path, "wb") as handle:
        handle.write(data)


def assert_one_line_changed(before, after, expect_in_new_line):
    old, new = lines(before), lines(after)
    assert len(old) == len(new), "lines were added or removed"
    changed = [index for index, (a, b) in enumerate(zip(old, new)) if a != b]
    assert len(changed) == 1, "changed lines: %s" % changed
    assert expect_in_new_line in new[changed[0]]
    return changed[0]


def mount_args(world, **extra):
    args = {"src": "10.0.0.1:/srv/nfs", "path": world.mount_point, "fstab": world.path("etc/fstab"), "state": "present",
            "opts": {"vers": "4.1", "nconnect": 8, "rsize": 1048576, "wsize": 1048576, "hard": True, "proto": "tcp",
                     "timeo": 600, "retrans": 2}}
    args.update(extra)
    return args


# ---- fstab ----------------------------------------------------------------------------------
@pytest.mark.parametrize("newline, final_newline", [("\n", True), ("\n", False), ("\r\n", True), ("\r\n", False)],
                         ids=["lf", "lf-no-final-newline", "crlf", "crlf-no-final-newline"])
@pytest.mark.parametrize("last", [False, True], ids=["entry-in-the-middle", "entry-last"])
def test_fstab_change_touches_only_the_entry(world, newline, final_newline, last):
    text = fstab_text(world, newline, final_newline)
    if last:
        # Move the NFS entry to the end so the edited line is the one without a final newline.
        body = [line for line in text.split(newline) if line]
        entry = [line for line in body if line.startswith("10.0.0.1:")][0]
        text = newline.join([line for line in text.split(newline)[:-1] if line != entry] + [entry]) + (newline if final_newline else "")
    path = world.path("etc/fstab")
    write_bytes(path, text.encode())
    result = run_module(module_named("nfs_mount"), mount_args(world))
    assert result["changed"] is True
    after = read_bytes(path).decode()
    index = assert_one_line_changed(text, after, "nconnect=8")
    new_line = lines(after)[index]
    # The edited line keeps its tab separators and its CRLF.
    assert new_line.startswith("10.0.0.1:/srv/nfs\t%s\tnfs4\t" % escape_path(world.mount_point))
    assert new_line.endswith("\r") == (newline == "\r\n" and not (last and not final_newline))
    assert after.endswith(newline) == final_newline
    assert world.commands == []


@pytest.mark.parametrize("final_newline", [True, False], ids=["lf", "no-final-newline"])
def test_fstab_new_entry_appends_one_line_and_keeps_every_old_byte(world, final_newline):
    text = fstab_text(world, final_newline=final_newline)
    path = world.path("etc/fstab")
    write_bytes(path, text.encode())
    os.makedirs(world.path("mnt/with space"))
    result = run_module(module_named("nfs_mount"), mount_args(world, src="10.0.0.9:/srv/ckpt", path=world.path("mnt/with space")))
    assert result["changed"] is True
    after = read_bytes(path).decode()
    # The old last line gains only the newline it needs to have a line after it.
    assert after.startswith(text if final_newline else text + "\n")
    added = after[len(text if final_newline else text + "\n"):]
    assert added.rstrip("\n").count("\n") == 0
    assert added.startswith("10.0.0.9:/srv/ckpt %s nfs4 " % escape_path(world.path("mnt/with space")))
    assert "\\040" in added and after.endswith("\n") == final_newline


def test_fstab_absent_removes_only_the_entry(world):
    text = fstab_text(world, final_newline=False)
    path = world.path("etc/fstab")
    write_bytes(path, text.encode())
    run_module(module_named("nfs_mount"), {"path": world.mount_point, "fstab": path, "state": "absent", "apply_policy": "never"})
    expected = "\n".join(line for line in text.split("\n") if not line.startswith("10.0.0.1:"))
    assert read_bytes(path).decode() == expected


# ---- nfs.conf and drop-ins ------------------------------------------------------------------
@pytest.mark.parametrize("target, text, changed_to", [
    ("etc/nfs.conf", NFS_CONF, "threads = 32"),
    ("etc/nfs.conf.d/ckptio-nfsd.conf", DROPIN, "threads=32"),
], ids=["nfs.conf", "drop-in"])
def test_nfs_conf_change_touches_only_the_threads_line(world, target, text, changed_to):
    path = world.path(target)
    write_bytes(path, text.encode())
    result = run_module(module_named("nfsd_threads"), {"threads": 32, "conf_file": path})
    assert result["changed"] is True
    after = read_bytes(path).decode()
    index = assert_one_line_changed(text, after, changed_to)
    if target == "etc/nfs.conf":
        # Value replaced in place: leading tab and trailing comment stay.
        assert lines(after)[index] == "\tthreads = 32\t# tuned by hand, 2023"


# ---- modprobe.d -----------------------------------------------------------------------------
def test_modprobe_conf_change_touches_only_the_option_line(world):
    path = world.path("etc/modprobe.d/ckptio-nfs.conf")
    write_bytes(path, MODPROBE.encode())
    load_path = world.path("etc/modules-load.d/ckptio-nfs.conf")
    write_bytes(load_path, b"# loaded early\nsunrpc\n")
    args = {"tcp_max_slot_table_entries": 128, "modprobe_conf": path, "modules_load_conf": load_path}
    result = run_module(module_named("sunrpc_slot_table"), args)
    assert result["changed"] is True
    after = read_bytes(path).decode()
    index = assert_one_line_changed(MODPROBE, after, "tcp_max_slot_table_entries=128")
    assert lines(after)[index] == "options sunrpc\ttcp_max_slot_table_entries=128  udp_slot_table_entries=16"
    assert read_bytes(load_path) == b"# loaded early\nsunrpc\n"
    assert read_bytes(world.path("etc/modprobe.d/site.conf")).decode().startswith("# site\n")


# ---- failure mid-write and backups, for the three kinds ---------------------------------------
def file_case(world, kind):
    """(module, args, path, original bytes) for one kind of file, the file already in place."""
    if kind == "fstab":
        path, data = world.path("etc/fstab"), fstab_text(world, final_newline=False).encode()
        args = mount_args(world)
        module = "nfs_mount"
    elif kind == "nfs.conf":
        path, data = world.path("etc/nfs.conf"), NFS_CONF.encode()
        args = {"threads": 32, "conf_file": path}
        module = "nfsd_threads"
    else:
        path, data = world.path("etc/modprobe.d/ckptio-nfs.conf"), MODPROBE.encode()
        args = {"tcp_max_slot_table_entries": 128, "modprobe_conf": path,
                "modules_load_conf": world.path("etc/modules-load.d/ckptio-nfs.conf")}
        module = "sunrpc_slot_table"
    write_bytes(path, data)
    return module_named(module), args, path, data


KINDS = ["fstab", "nfs.conf", "modprobe.d"]


def raise_oserror(self, src, dest, unsafe_writes=False, keep_dest_attrs=True):
    raise OSError(28, "No space left on device")


def fail_like_ansible(self, src, dest, unsafe_writes=False, keep_dest_attrs=True):
    # The real atomic_move reports its own errors through fail_json.
    self.fail_json(msg="Could not replace file: %s to %s: [Errno 5] Input/output error" % (src, dest))


@pytest.mark.parametrize("broken_move", [raise_oserror, fail_like_ansible], ids=["oserror", "fail_json"])
@pytest.mark.parametrize("kind", KINDS)
def test_failure_mid_write_leaves_the_old_file_and_no_temp_file(world, monkeypatch, kind, broken_move):
    module, args, path, data = file_case(world, kind)
    directory = os.path.dirname(path)
    listing = sorted(os.listdir(directory))
    monkeypatch.setattr(basic.AnsibleModule, "atomic_move", broken_move)
    result = fail_module(module, args)
    assert read_bytes(path) == data
    assert sorted(os.listdir(directory)) == listing, "a temp file was left behind"
    assert "No space left on device" in result["msg"] or "Could not replace file" in result["msg"]


@pytest.mark.parametrize("kind", KINDS)
def test_backup_restores_the_original_byte_for_byte(world, kind):
    module, args, path, data = file_case(world, kind)
    result = run_module(module, dict(args, backup=True))
    assert result["changed"] is True
    assert read_bytes(path) != data
    backup = result["backup_file"]
    assert os.path.dirname(backup) == os.path.dirname(path) and backup != path
    assert read_bytes(backup) == data
    shutil.copyfile(backup, path)
    assert read_bytes(path) == data


@pytest.mark.parametrize("kind", KINDS)
def test_second_run_leaves_every_byte(world, kind):
    module, args, path, data = file_case(world, kind)
    run_module(module, args)
    changed_once = read_bytes(path)
    again = run_module(module, args)
    assert again["changed"] is False
    assert read_bytes(path) == changed_once
