"""checkpoint_canary's rpc_sampling through its real main(): real ranks, a fake host with 6.1's sunrpc files (issue 47)."""
from __future__ import annotations

import os
import shutil

from ansible_collections.ckptio.nfs.plugins.module_utils.host import sunrpc_sampler
from ansible_collections.ckptio.nfs.plugins.modules import checkpoint_canary
from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.host import test_sunrpc_sampler as kernel
from ansible_collections.ckptio.nfs.tests.unit.utils import run_module

KIB = 1024


def _run(fake_root, tmp_path, check_mode=False, **extra):
    if not os.path.lexists(str(fake_root.path("/proc/meminfo"))):
        fake_root.link_live("/proc/self/mountinfo", "/proc/meminfo", "/proc/stat", "/proc/uptime", "/proc/diskstats",
                            "/proc/net", "/proc/sys/kernel/osrelease", "/sys/class/net")
    target = tmp_path / "target"
    target.mkdir(exist_ok=True)
    args = {"path": str(target), "ranks": 2, "bytes_per_rank": 64 * KIB, "block_size": 16 * KIB, "allow_local": True, "timeout": 60}
    args.update(extra)
    return run_module(checkpoint_canary, args, check_mode=check_mode)


def test_the_canary_returns_the_window_samples_by_default(fake_root, tmp_path):
    kernel._kernel_host(str(fake_root.root))
    result = _run(fake_root, tmp_path)
    samples = result["rpc_samples"]
    assert samples["mode"] == "queues" and samples["notes"] == [] and samples["rpc_latency"] is None
    assert samples["sunrpc_xprt"].startswith("=== sample t=") and "--- xprt-switches/switch-0/xprt-0-tcp/xprt_info ---\n" in samples["sunrpc_xprt"]
    assert "--- rpc_clnt/4/tasks ---" in samples["rpc_tasks"]
    assert samples["cost"]["passes"] >= 1


def test_off_samples_nothing(fake_root, tmp_path):
    kernel._kernel_host(str(fake_root.root))
    samples = _run(fake_root, tmp_path, rpc_sampling="off")["rpc_samples"]
    assert (samples["sunrpc_xprt"], samples["rpc_tasks"], samples["cost"]["passes"]) == (None, None, 0)


def test_trace_leaves_no_instance_and_check_mode_touches_none(fake_root, tmp_path, monkeypatch):
    tracing, mkdir = kernel._fake_tracefs(str(fake_root.root))
    monkeypatch.setattr(sunrpc_sampler, "MKDIR", mkdir)
    monkeypatch.setattr(sunrpc_sampler, "RMDIR", shutil.rmtree)
    instance = os.path.join(tracing, "instances", sunrpc_sampler.INSTANCE)
    result = _run(fake_root, tmp_path, rpc_sampling="trace")
    assert result["rpc_samples"]["rpc_latency"] == kernel._trace_lines()
    assert not os.path.exists(instance)
    # Check mode: an instance left by a killed run stays as it is (the next real run removes it).
    mkdir(instance)
    result = _run(fake_root, tmp_path, check_mode=True, rpc_sampling="trace")
    assert "rpc_samples" not in result and os.path.isdir(instance)
    assert kernel._enabled(instance)["sunrpc/rpc_stats_latency"] == "0"


def test_the_rpc_sampler_keeps_its_own_cadence_while_the_d_state_pass_is_slow(fake_root, tmp_path, monkeypatch):
    """The tuned lab capture (tests/fixtures/captures/v47_bookworm_tuned/NOTES.txt): a D-state pass of ~0.45 s of CPU
    stretched that pass's interval to its 10 s cap, and the rpc sampler, read only inside it, got 3-4 samples in 25-30 s.
    Here a D-state pass reports 0.6 s (interval 10 s) and the ranks write for ~2.5 s: the rpc sampler, whose own pass
    costs milliseconds on this fake host, samples on its own cadence (1 s) all the same."""
    from ansible_collections.ckptio.nfs.plugins.module_utils.host import dstate_scan
    from ansible_collections.ckptio.nfs.plugins.module_utils.host.canary import ranks as canary_ranks
    import time

    kernel._kernel_host(str(fake_root.root))
    monkeypatch.setattr(dstate_scan, "scan", lambda proc: ([], 0.6))
    write_rank = canary_ranks.write_rank

    def slow_write_rank(*args, **kwargs):
        time.sleep(2.5)
        return write_rank(*args, **kwargs)

    monkeypatch.setattr(canary_ranks, "write_rank", slow_write_rank)
    result = _run(fake_root, tmp_path)
    assert result["harness"]["dstate_sampler"]["passes"] == 1
    samples = result["rpc_samples"]
    assert samples["cost"]["passes"] >= 3
    assert samples["sunrpc_xprt"].count("=== sample t=") == samples["cost"]["passes"]
