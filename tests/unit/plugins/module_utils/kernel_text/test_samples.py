"""The sampler's container (docs/capture-bundle.md): samples, sections, the sampler's comments."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import samples


def test_samples_sections_and_comments():
    text = ("# not seen: /sys/kernel/debug is not mounted\n"
            "=== sample t=0.0 ===\n--- xprt-switches/switch-0/xprt-0-tcp ---\nnum_reqs=2\n\n"
            "--- rpc_clnt/4/tasks ---\n=== sample t=1.25 ===\n--- xprt-switches/switch-0/xprt-0-tcp ---\nnum_reqs=3\n")
    parsed = samples.parse_samples(text)
    assert parsed.comments == ("not seen: /sys/kernel/debug is not mounted",)
    first, second = parsed.samples
    assert first.t == 0.0 and first.sections == (("xprt-switches/switch-0/xprt-0-tcp", "num_reqs=2\n"), ("rpc_clnt/4/tasks", ""))
    assert second.t == 1.25 and second.texts("tasks") == []


def test_a_file_with_comments_only_has_no_sample():
    parsed = samples.parse_samples("# not seen: no /sys/kernel/sunrpc (kernel 5.10)\n")
    assert parsed.samples == () and parsed.comments == ("not seen: no /sys/kernel/sunrpc (kernel 5.10)",)
