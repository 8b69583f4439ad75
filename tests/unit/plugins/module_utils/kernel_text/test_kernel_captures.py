"""The code paths that differ by kernel, on captures from each kernel of the lab matrix.

tests/fixtures/kernels/<suite>/ holds what scripts/lab-matrix.sh measured on Debian 11 (5.10),
12 (6.1) and 13 (6.12) - NOTES.txt there says how. Each test runs the collection's own parser or
rule on that kernel's real files and checks it against what the kernel printed.
"""
from __future__ import annotations

import json
import os
import re

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import kernels
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import server as diagnosis_module
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import parse_mountstats
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.nfsd_stats import parse_pool_stats, parse_pool_threads, parse_single_number
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.stats_delta import pool_stats_delta
from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root
from ansible_collections.ckptio.nfs.plugins.modules import nfsd_threads
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path

KERNELS = os.path.normpath(sample_path("..", "kernels"))
# What each kernel printed (the raw files beside) - the expectations, not the parser's output.
EXPECTED = {
    "bullseye": {"release": "5.10.0-46-amd64",
                 "pool_columns": ["pool", "packets-arrived", "sockets-enqueued", "threads-woken", "threads-timedout"],
                 "max_connections": True, "command_line_count": True, "starvation": True},
    "bookworm": {"release": "6.1.0-57-amd64",
                 "pool_columns": ["pool", "packets-arrived", "sockets-enqueued", "threads-woken", "threads-timedout"],
                 "max_connections": True, "command_line_count": False, "starvation": True},
    "trixie": {"release": "6.12.118+deb13-amd64",
               "pool_columns": ["pool", "packets-arrived", "sockets-enqueued", "threads-woken", "threads-timedout"],
               "max_connections": True, "command_line_count": False, "starvation": True},
}
SUITES = [suite for suite in sorted(EXPECTED) if os.path.isdir(os.path.join(KERNELS, suite))]


def path(suite, *parts):
    return os.path.join(KERNELS, suite, *parts)


def text(suite, *parts):
    with open(path(suite, *parts)) as handle:
        return handle.read()


def facts(suite, name):
    return json.loads(text(suite, name + ".json"))


def test_every_suite_of_the_matrix_has_its_captures():
    assert SUITES == sorted(EXPECTED), "missing kernel captures: %s" % sorted(set(EXPECTED) - set(SUITES))


@pytest.mark.parametrize("suite", SUITES)
def test_pool_stats_columns_come_from_this_kernels_header(suite):
    for phase in ("raw-server-baseline", "raw-server-after-slots"):
        parsed = parse_pool_stats(text(suite, phase, "nfsd_pool_stats.txt"))
        assert parsed["columns"] == EXPECTED[suite]["pool_columns"]
        assert parsed["pools"] and all(set(pool) == set(parsed["columns"]) for pool in parsed["pools"])
    # The single-number files and pool_threads parse on every kernel.
    threads = parse_single_number(text(suite, "raw-server-after-slots", "nfsd_threads.txt"))
    assert threads == 8 and parse_pool_threads(text(suite, "raw-server-after-slots", "nfsd_pool_threads.txt")) == [threads]
    assert parse_single_number(text(suite, "raw-server-baseline", "nfsd_max_block_size.txt")) == 1048576


@pytest.mark.parametrize("suite", SUITES)
def test_mountstats_of_this_kernel_parse_with_every_transport(suite):
    mounts = parse_mountstats(text(suite, "raw-client-tuned", "mountstats.txt").splitlines(True))
    (mount,) = [mount for mount in mounts if mount["mount_point"] == "/mnt/nfs"]
    assert mount["nfs_version"] == "4.1" and mount["opts"]["nconnect"] == "4"
    xprt_lines = [line for line in text(suite, "raw-client-tuned", "mountstats.txt").splitlines() if line.strip().startswith("xprt:")]
    assert len(mount["xprt"]) == len(xprt_lines) == 4
    assert mount["xprt_totals"]["sends"] == sum(int(line.split()[7]) for line in xprt_lines)


@pytest.mark.parametrize("suite", SUITES)
def test_min_threads_is_refused_where_this_kernel_has_no_file(suite, tmp_path):
    listing = facts(suite, "server-baseline")["proc_fs_nfsd_files"]
    nfsd = tmp_path / "proc" / "fs" / "nfsd"
    nfsd.mkdir(parents=True)
    for name in listing:
        (nfsd / name).write_text("")
    params = {"threads": 16, "min_threads": 4, "max_connections": None, "state": "present",
              "conf_file": "/etc/nfs.conf.d/ckptio-nfsd.conf"}
    errors = nfsd_threads.validate(params, host_root.HostRoot(str(tmp_path)))
    if "min_threads" in listing:
        assert not any("min_threads is not supported" in error for error in errors)
    else:
        assert any("min_threads is not supported here" in error for error in errors)


@pytest.mark.parametrize("suite", SUITES)
def test_the_grant_rule_chosen_for_this_kernel_holds_on_the_measured_grant(suite):
    server = facts(suite, "server-after-slots")
    slots = facts(suite, "slots")
    assert server["kernel_release"] == slots["kernel_release"] == EXPECTED[suite]["release"]
    grant = kernels.session_slot_grant(server["kernel_release"])
    granted = max(slots["highest_slotid"]) + 1
    requested = int(slots["max_session_slots"])
    assert granted <= min(requested, grant["cap"])
    if grant["rule"] == "fixed":
        # A fixed table: the server's reply never moves the grant during the writes.
        assert len(slots["highest_slotid"]) == 1 and slots["target_highest_slotid"] == slots["highest_slotid"]
    trace = text(suite, "raw-slots", "trace_nfs4_sequence_done.txt")
    assert re.search(r"highest_slotid=%d target_highest_slotid=" % (granted - 1), trace)


@pytest.mark.parametrize("suite", SUITES)
def test_diagnosis_of_this_kernels_canary_names_its_rule(suite):
    result = diagnose(load_bundle(path(suite, "bundle")))
    rows = [item for item in result["evidence"] if "session slots requested" in item["signal"]]
    assert rows and all(EXPECTED[suite]["release"] in row["explanation"] for row in rows)


@pytest.mark.parametrize("suite", SUITES)
def test_thread_count_after_restart_follows_the_mechanism(suite):
    # nfs.conf drop-in only: kept where nfs-server reads nfs.conf, reset to RPCNFSDCOUNT where
    # rpc.nfsd gets a count on its command line (docs/kernels.md).
    plain = facts(suite, "threads-restart")
    assert (plain["live_after_restart"] == plain["persisted"]) != EXPECTED[suite]["command_line_count"]
    if EXPECTED[suite]["command_line_count"]:
        fixed = facts(suite, "threads-restart-command-line")
        assert fixed["persist_command_line"] and fixed["live_after_restart"] == fixed["persisted"]
    else:
        assert not os.path.exists(path(suite, "threads-restart-command-line.json"))


@pytest.mark.parametrize("suite", SUITES)
def test_files_this_kernel_has_and_what_survived_the_reboot(suite):
    listing = facts(suite, "server-baseline")["proc_fs_nfsd_files"]
    assert ("max_connections" in listing) == EXPECTED[suite]["max_connections"]
    # What client_tuning persisted (modprobe.d, fstab) is what the client's kernel ran after a reboot.
    if os.path.exists(path(suite, "client-persisted-vs-live.json")):
        result = facts(suite, "client-persisted-vs-live")
        assert result["mismatches"] == [] and result["live"]["nfs.max_session_slots"] == "160"


@pytest.mark.parametrize("suite", SUITES)
def test_starvation_shows_in_this_kernels_counters(suite):
    """pool_stats around the same writes with 1 live nfsd thread and with 8 (lab-matrix.sh)."""
    if not EXPECTED[suite].get("starvation"):
        # Captured before lab-matrix.sh had this step (docs/kernels.md says which suites).
        assert not os.path.exists(path(suite, "starvation-1-after.txt"))
        return
    shares = {}
    for threads in (1, 8):
        delta = pool_stats_delta(parse_pool_stats(text(suite, "starvation-%d-after.txt" % threads)),
                                 parse_pool_stats(text(suite, "starvation-%d-before.txt" % threads)))
        assert not delta["reset"]
        shares[threads] = delta["packets_without_idle_thread"]
    # 1 thread for 4 writers: at least "contributing" (5.10: 67 %, 6.12: 45 %; 6.1 read 85 % with 2 clients
    # x 4 ranks, docs/nfs-facts.md), and far above 8 threads (5.10: 12 % on the 1-vCPU server, 6.12: 0 %),
    # which never reach "limiting". Against sockets-enqueued 8 threads would read 51 % on 6.12 (a wake is
    # counted only for a thread not already running): that ratio is no signal.
    assert shares[1] >= diagnosis_module.NO_IDLE_THREAD_CONTRIBUTING, shares
    assert shares[8] < diagnosis_module.NO_IDLE_THREAD_LIMIT and shares[1] >= 3 * shares[8], shares
    after = parse_pool_stats(text(suite, "starvation-8-after.txt"))["pools"][0]
    before = parse_pool_stats(text(suite, "starvation-8-before.txt"))["pools"][0]
    enqueued, woken = after["sockets-enqueued"] - before["sockets-enqueued"], after["threads-woken"] - before["threads-woken"]
    packets = after["packets-arrived"] - before["packets-arrived"]
    if enqueued > packets:  # 6.12's counting (equal columns on 5.10 and 6.1)
        assert 1 - woken / float(enqueued) >= diagnosis_module.NO_IDLE_THREAD_LIMIT


def test_dstate_wait_sites_on_510_come_from_the_stack():
    """Debian 11's 5.10 prints 0 in /proc/PID/wchan for every task in D; the first bullseye capture
    read `0,0`. This one (scripts/lab-matrix.sh from a clean clone of 8b1410a) names the site."""
    from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.dstate import parse_dstate
    samples = [sample for sample in parse_dstate(text("bullseye", "bundle", "clients", "nfs2", "dstate.txt")) if sample["count"]]
    assert samples and all(wchan != "0" for sample in samples for wchan in sample["wchans"])
    assert {wchan for sample in samples for wchan in sample["wchans"]} == {"wait_on_page_bit_common"}
