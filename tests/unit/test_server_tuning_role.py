"""The server_tuning role's report, walked task by task on the fake host of test_safety_bad_input.py.

The role reads the export files and hands them with the nfsd_threads result to
ckptio.nfs.server_tuning_report; these tests follow that path as ansible-playbook runs it.
"""
from __future__ import annotations

import fnmatch
import os

import pytest

from ansible_collections.ckptio.nfs.tests.unit.test_safety_bad_input import RoleWalk, build_world, role_base, write

SYNC_NOTE = "sync (the default): each COMMIT/fsync of a checkpoint waits for the disk"
ASYNC_NOTE = ("async: writes are acknowledged before they reach disk; a server crash can lose checkpoint data the "
              "ranks saw as written")


class FindingWalk(RoleWalk):
    """RoleWalk with ansible.builtin.find answering from the fake tree (RoleWalk answers it with no files)."""

    def run_task(self, task, action, args, extra):
        if action != "ansible.builtin.find":
            return super().run_task(task, action, args, extra)
        args = self.render(args, extra)
        paths = args["paths"] if isinstance(args["paths"], list) else [args["paths"]]
        patterns = args["patterns"] if isinstance(args["patterns"], list) else [args["patterns"]]
        found = [os.path.join(path, name) for path in paths if os.path.isdir(path) for name in os.listdir(path)
                 if any(fnmatch.fnmatch(name, pattern) for pattern in patterns)]
        return {"files": [{"path": path} for path in found]}


@pytest.fixture
def world(fake_root, monkeypatch):
    return build_world(fake_root, monkeypatch)


def report(world, exports_text, check_mode=True, **overrides):
    write(world.path("etc/exports"), exports_text)
    params = role_base(world, "server_tuning")
    params.update(overrides)
    walk = FindingWalk(world, "server_tuning", "main", params, check_mode=check_mode)
    walk.run()
    return walk.variables["server_tuning_report"]


def exported(result):
    return [(entry["path"], entry["client"], entry["options"], entry["notes"]) for entry in result["exports"]]


def test_report_of_a_stock_server_in_check_mode(world):
    # The exports file molecule/default/prepare.yml writes; every key the playbooks and molecule read.
    result = report(world, "# checkpoints for the GPU nodes\n"
                           "/srv/checkpoints  10.0.0.0/24(rw,sync,no_subtree_check) gpu*(rw,async,no_root_squash)\n")
    exports_file = world.path("etc/exports")
    assert result == {
        "role": "server_tuning", "profile": "checkpoint", "check_mode": True,
        "changed": ["nfsd threads: 64 (live 8 -> 64)"],
        "pending": ["nfsd live threads not applied: check mode: live values not written"],
        "warnings": ["max_block_size is 262144: clients asking rsize/wsize=1048576 get 262144; raise "
                     "/proc/fs/nfsd/max_block_size before nfsd starts (EBUSY while it runs)"],
        "settings": [{"name": "threads", "wanted": 64, "persisted": None, "live": 8, "in_sync": False, "scope": "nfsd"}],
        "exports": [
            {"file": exports_file, "path": "/srv/checkpoints", "client": "10.0.0.0/24",
             "options": ["rw", "sync", "no_subtree_check"], "notes": []},
            {"file": exports_file, "path": "/srv/checkpoints", "client": "gpu*",
             "options": ["rw", "async", "no_root_squash"], "notes": [ASYNC_NOTE]},
        ],
        "max_block_size": 262144,
        # The fake host has no nfs-server.service: said, and nfs.conf (with ours as planned) is what is read.
        "persist": {"mechanism": "unknown", "reason": "no nfs-server.service unit found", "effective_threads": 64,
                    "source": {"path": world.path("etc/nfs.conf.d/ckptio-nfsd.conf"), "line": 3, "value": "64"}},
        "connections": {"clients_group": "nfs_clients", "clients": 0, "connections": 0, "extra": 0, "margin_percent": 25,
                        "margin": 0, "need": 0, "setting": "auto", "max_connections": 0,
                        "reason": "the default limit (64 + 3) * 20 = 1340 covers the need 0",
                        "limit": {"configured": None, "effective": None, "threads": 64, "supported": False},
                        "sufficient": None},
    }


def test_rollback_report_names_the_removed_drop_in(world):
    result = report(world, "/srv a(rw)\n", check_mode=False, server_tuning_profile="distro_default")
    assert result["profile"] == "distro_default" and result["check_mode"] is False
    assert result["exports"][0]["notes"] == [SYNC_NOTE]


def test_leading_dash_options_apply_to_every_client_of_the_line(world):
    result = report(world, "/srv/www -async,rw server @trusted @external(ro,sync)\n")
    assert exported(result) == [("/srv/www", "server", ["async", "rw"], [ASYNC_NOTE]),
                                ("/srv/www", "@trusted", ["async", "rw"], [ASYNC_NOTE]),
                                # Its own sync comes after the default async: exportfs applies them in order.
                                ("/srv/www", "@external", ["async", "rw", "ro", "sync"], [])]


def test_quoted_path_with_a_space(world):
    result = report(world, '"/srv/my checkpoints" gpu*(rw,async)\n')
    assert exported(result) == [("/srv/my checkpoints", "gpu*", ["rw", "async"], [ASYNC_NOTE])]


def test_files_of_the_exports_dir_are_reported_after_the_main_file(world):
    write(world.path("etc/exports.d/b.exports"), "/srv/b b(rw)\n")
    write(world.path("etc/exports.d/a.exports"), "/srv/a a(rw,async)\n")
    write(world.path("etc/exports.d/ignored.conf"), "/srv/c c(rw)\n")
    result = report(world, "/srv/main m(rw,sync)\n")
    assert [(entry["file"], entry["path"]) for entry in result["exports"]] == [
        (world.path("etc/exports"), "/srv/main"), (world.path("etc/exports.d/a.exports"), "/srv/a"),
        (world.path("etc/exports.d/b.exports"), "/srv/b")]


BULLSEYE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "distro", "debian-bullseye-1.3.4-6+deb11u1")


def install_bullseye(world):
    """Debian 11's nfs-server.service, nfs-utils_env.sh and the /etc/default file its postinst installs."""
    for relative, target in (("lib/systemd/system/nfs-server.service", "lib/systemd/system/nfs-server.service"),
                             ("usr/lib/systemd/scripts/nfs-utils_env.sh.txt", "usr/lib/systemd/scripts/nfs-utils_env.sh"),
                             ("usr/share/nfs-kernel-server/conffiles/nfs-kernel-server.default", "etc/default/nfs-kernel-server")):
        with open(os.path.join(BULLSEYE, relative)) as handle:
            write(world.path(target), handle.read())
    with open(world.path("etc/default/nfs-kernel-server")) as handle:
        return handle.read()


def test_command_line_count_is_reported_and_left_alone_by_default(world):
    template = install_bullseye(world)
    result = report(world, "/srv a(rw)\n", check_mode=False)
    assert result["persist"]["mechanism"] == "command_line"
    assert result["persist"]["effective_threads"] == 8
    assert "nfs-server restart would set threads to 8 (live: 64)" in result["pending"]
    assert any("RPCNFSDCOUNT=8 from %s line 2" % world.path("etc/default/nfs-kernel-server") in line for line in result["warnings"])
    with open(world.path("etc/default/nfs-kernel-server")) as handle:
        assert handle.read() == template


def test_persist_command_line_sets_rpcnfsdcount_and_rollback_restores_it(world):
    template = install_bullseye(world)
    result = report(world, "/srv a(rw)\n", check_mode=False, server_tuning_persist_command_line=True)
    assert result["persist"]["effective_threads"] == 64 and result["pending"] == []
    with open(world.path("etc/default/nfs-kernel-server")) as handle:
        assert handle.read() == template.replace("RPCNFSDCOUNT=8\n", "RPCNFSDCOUNT=64\n", 1)
    report(world, "/srv a(rw)\n", check_mode=False, server_tuning_profile="distro_default")
    with open(world.path("etc/default/nfs-kernel-server")) as handle:
        assert handle.read() == template
