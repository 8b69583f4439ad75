"""Check mode changes nothing, over every module and both tuning roles (issue 7, "Data safety").

Each case runs a module with arguments that WOULD change the fake host (slot tables, nfsd
threads, fstab and the live mount, report files, a canary run) in check mode, and proves:
every file under the fake /etc, /proc and /sys has the same sha256 and mode, the live values
read back the same, no command ran (mount, umount, modprobe; fork for the canary), and the
module still says changed=True where a real run would change something.
"""
from __future__ import annotations

import json
import os
import shutil

import pytest

from ansible_collections.ckptio.nfs.tests.unit.test_safety_bad_input import (
    MODULES, RoleWalk, Unmodelled, build_world, module_named, role_base,
)
from ansible_collections.ckptio.nfs.tests.unit.utils import run_module


@pytest.fixture
def world(fake_root, monkeypatch):
    """The fake host of test_safety_bad_input.py: every module's live paths point into it."""
    return build_world(fake_root, monkeypatch)


LIVE_FILES = ("proc/sys/sunrpc/tcp_slot_table_entries", "proc/sys/sunrpc/tcp_max_slot_table_entries",
              "sys/module/sunrpc/parameters/tcp_max_slot_table_entries", "sys/module/nfs/parameters/max_session_slots",
              "proc/fs/nfsd/threads", "proc/self/mountinfo")


def live_values(world):
    values = {}
    for relative in LIVE_FILES:
        with open(world.path(relative)) as handle:
            values[relative] = handle.read()
    return values


def sunrpc(world):
    return {"tcp_slot_table_entries": 128, "tcp_max_slot_table_entries": 128, "nfs_max_session_slots": 160,
            "modprobe_conf": world.path("etc/modprobe.d/ckptio-nfs.conf"),
            "modules_load_conf": world.path("etc/modules-load.d/ckptio-nfs.conf"), "backup": True}


def sunrpc_absent(world):
    # What the module persisted earlier: its files carry its header (issue 12: a file without
    # it is the site's, and state=absent refuses to remove it unless force).
    with open(world.path("etc/modprobe.d/ckptio-nfs.conf"), "w") as handle:
        handle.write(module_named("sunrpc_slot_table").HEADER + "options sunrpc tcp_max_slot_table_entries=128\n")
    with open(world.path("sys/module/sunrpc/parameters/tcp_max_slot_table_entries"), "w") as handle:
        handle.write("128\n")
    return dict(sunrpc(world), state="absent", tcp_slot_table_entries=None, nfs_max_session_slots=None)


def sunrpc_not_loaded(world):
    # A real run would modprobe sunrpc: check mode must not.
    for relative in ("proc/sys/sunrpc", "sys/module/sunrpc", "sys/module/nfs"):
        shutil.rmtree(world.path(relative))
    return sunrpc(world)


def threads(world):
    return {"threads": 64, "conf_file": world.path("etc/nfs.conf.d/ckptio-nfsd.conf"), "backup": True}


def threads_in_nfs_conf(world):
    return {"threads": 32, "conf_file": world.path("etc/nfs.conf")}


def threads_absent(world):
    with open(world.path("etc/nfs.conf.d/ckptio-nfsd.conf"), "w") as handle:
        handle.write("[nfsd]\nthreads=64\n")
    with open(world.path("proc/fs/nfsd/threads"), "w") as handle:
        handle.write("64\n")
    return {"state": "absent", "conf_file": world.path("etc/nfs.conf.d/ckptio-nfsd.conf")}


def remount(world):
    # nconnect and wsize change: a real run unmounts and mounts (the fake mount is idle).
    return {"src": "10.0.0.1:/srv/nfs", "path": world.mount_point, "fstab": world.path("etc/fstab"), "backup": True,
            "opts": {"vers": "4.1", "nconnect": 8, "rsize": 1048576, "wsize": 524288, "hard": True, "proto": "tcp"}}


def new_mount(world):
    os.makedirs(world.path("mnt/ckpt2"))
    return {"src": "10.0.0.9:/srv/ckpt", "path": world.path("mnt/ckpt2"), "fstab": world.path("etc/fstab"),
            "opts": {"vers": "4.2", "nconnect": 4}}


def unmount(world):
    return {"path": world.mount_point, "state": "absent", "fstab": world.path("etc/fstab")}


def client_stats(world):
    return {"mount_points": [world.mount_point], "dstate_samples": 2, "dstate_interval": 0}


def diagnose(world):
    return {"bundle": world.path("reports/bundle")}


def saved(world):
    return {"src": world.path("reports/saved"), "dest": world.path("reports/saved-bundle"), "checkpoint_bytes": 2400000000,
            "window_seconds": 300}


def report(world):
    return {"bundle": world.path("reports/bundle"), "png": False}


def canary(world):
    return {"path": world.mount_point, "ranks": 4, "bytes_per_rank": 1048576, "keep": True}


def probe_stop(world):
    """A recorded probe listener (its process gone): a real stop removes the record."""
    state = world.path("run/ckptio-tcp-probe")
    os.makedirs(state, mode=0o700)
    argv = ["/usr/bin/timeout", "-k", "5", "60", "/usr/bin/iperf3", "-s", "-1", "-B", "10.0.0.1", "-p", "5201"]
    with open(os.path.join(state, "listener-10.0.0.1-5201.json"), "w") as handle:
        json.dump({"address": "10.0.0.1", "port": 5201, "pid": 4711, "argv": argv}, handle)
    return {"state": "stopped", "state_dir": state}


def probe_send(world):
    """A send to the fake mount's server: check mode runs nothing and writes no barrier file."""
    if shutil.which("iperf3") is None or shutil.which("timeout") is None:
        pytest.skip("iperf3 and timeout are needed to plan a send (Debian package iperf3; scripts/setup.sh installs it)")
    return {"mount_point": world.mount_point, "seconds": 1, "barrier_dir": world.path("run/ckptio-probe-barrier")}


# (module, case, arguments builder, changed in a real run)
CASES = [
    ("sunrpc_slot_table", "apply-and-persist", sunrpc, True),
    ("sunrpc_slot_table", "absent-rolls-back", sunrpc_absent, True),
    ("sunrpc_slot_table", "not-loaded-no-modprobe", sunrpc_not_loaded, True),
    ("nfsd_threads", "dropin", threads, True),
    ("nfsd_threads", "nfs-conf-itself", threads_in_nfs_conf, True),
    ("nfsd_threads", "absent-rolls-back", threads_absent, True),
    ("nfs_mount", "umount-and-mount", remount, True),
    ("nfs_mount", "new-mount", new_mount, True),
    ("nfs_mount", "absent-unmounts", unmount, True),
    ("nfs_client_stats", "read-only", client_stats, False),
    ("nfsd_stats", "read-only", lambda world: {}, False),
    ("diagnose_bundle", "writes-diagnosis", diagnose, True),
    ("checkpoint_report", "writes-report", report, True),
    ("saved_stats_bundle", "writes-bundle", saved, True),
    ("checkpoint_canary", "keep-files", canary, True),
    ("tcp_probe", "send-sends-nothing", probe_send, False),
    ("tcp_probe_listener", "stop-removes-records", probe_stop, True),
]


@pytest.mark.parametrize("entry, build, changes", [pytest.param(e, b, c, id="%s-%s" % (e, case)) for e, case, b, c in CASES])
def test_check_mode_changes_nothing_and_reports_the_change(world, entry, build, changes):
    args = build(world)
    args = dict((key, value) for key, value in args.items() if value is not None)
    before = world.snapshot()
    live = live_values(world) if os.path.isdir(world.path("proc/sys/sunrpc")) else None
    result = run_module(module_named(entry), args, check_mode=True, diff=True)
    assert world.snapshot() == before
    if live is not None:
        assert live_values(world) == live
    assert world.commands == []
    assert result["changed"] is changes


def test_every_module_has_a_check_mode_case():
    assert sorted(set(entry for entry, _case, _build, _changes in CASES)) == sorted(MODULES)


def test_real_run_of_the_same_case_does_change_the_tree(world):
    """The cases above would change things: without check mode the same arguments do."""
    before = world.snapshot()
    result = run_module(module_named("sunrpc_slot_table"), sunrpc(world))
    assert result["changed"] is True
    assert world.snapshot() != before
    with open(world.path("proc/sys/sunrpc/tcp_max_slot_table_entries")) as handle:
        assert handle.read() == "128\n"


@pytest.mark.parametrize("role, overrides", [
    ("client_tuning", {}),
    ("client_tuning", {"client_tuning_mount_options": {"nconnect": 8}}),
    ("client_tuning", {"client_tuning_profile": "distro_default"}),
    ("server_tuning", {}),
    ("server_tuning", {"server_tuning_profile": "distro_default"}),
])
def test_role_in_check_mode_changes_nothing(world, role, overrides):
    """The roles' tasks, walked with every module in check mode as `ansible-playbook --check` runs them."""
    params = role_base(world, role)
    params.update(overrides)
    before = world.snapshot()
    walk = RoleWalk(world, role, "main", params, check_mode=True)
    try:
        walk.run()
    except Unmodelled as exc:
        pytest.fail("check mode reached a task the walk does not model: %s" % exc)
    assert world.snapshot() == before
    assert world.commands == []
    assert walk.changes == []
    reported = walk.variables.get("__client_tuning_sunrpc_result") or walk.variables.get("__server_tuning_nfsd_result")
    if not any(value == "distro_default" for value in overrides.values()):
        # Stock host, tuned profile: the first tuning module says it would change something.
        assert reported["changed"] is True
