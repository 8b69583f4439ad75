"""sunrpc_views: the one-read sunrpc readers the canary's sampler and the metrics collector share, in a file of their own."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.host import sunrpc_sampler, sunrpc_views
from ansible_collections.ckptio.nfs.plugins.module_utils.telemetry import install

MODULE_UTILS = install.COLLECTION + ".plugins.module_utils."


def test_the_collector_s_zip_holds_the_readers_and_no_process_or_tracing_code():
    """Through sunrpc_sampler the zip held processes, dstate_scan, canary.probe and kernel_text.dstate (20 modules)."""
    needed = set(name[len(MODULE_UTILS):] for name in install.needed_modules())
    assert "host.sunrpc_views" in needed
    assert not needed & {"host.sunrpc_sampler", "host.processes", "host.dstate_scan", "canary.probe", "kernel_text.dstate"}


def test_the_sampler_reads_through_the_same_readers(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(sunrpc_views, "xprt_text", lambda host: seen.append("xprt") or "x\n")
    monkeypatch.setattr(sunrpc_views, "tasks_text", lambda host, notes: seen.append("tasks") or None)
    from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.host.test_sunrpc_sampler import _kernel_host

    sampler = sunrpc_sampler.RpcSampler(_kernel_host(tmp_path), "queues")
    sampler.begin(0.0)
    sampler.sample(now=0.0)
    assert seen == ["xprt", "tasks"] and sampler.result()["sunrpc_xprt"] == "=== sample t=0.000 ===\nx\n"
