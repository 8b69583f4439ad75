"""diagnosis.md at scale: per-host lines up to PER_HOST_LINES_MAX, a summary above (issue 15).

The bundles are built here from one real client of the healthy lab capture (no large fixture):
copies of nfs2, and a few slow copies whose mount is older in the after sample (so the same bytes
took longer) and that mount with a smaller wsize.
"""
from __future__ import annotations

import copy
import json

from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.markdown import render_markdown
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.markdown import PER_HOST_LINES_MAX
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path

SLOW = ("slow-a", "slow-b", "slow-c")


def _slow_copy(files, age):
    """nfs2's files with the mount's after-sample age raised (interval 62 s -> age - 57 s) and wsize=256 KiB."""
    files = copy.deepcopy(files)
    files["mountstats_after"] = files["mountstats_after"].replace("\tage:\t119\n", "\tage:\t%d\n" % age)
    for key in ("mountstats_before", "mountstats_after"):
        files[key] = files[key].replace("wsize=1048576", "wsize=262144")
    return files


def scaled_bundle(clients, slow=SLOW):
    bundle = load_bundle(sample_path("..", "captures", "healthy"))
    one = bundle["clients"]["nfs2"]
    assert "\tage:\t119\n" in one["mountstats_after"] and "wsize=1048576" in one["mountstats_before"]
    hosts = dict(("c%04d" % index, copy.deepcopy(one)) for index in range(clients - len(slow)))
    for rank, host in enumerate(slow):
        # slow-c slowest: 0.541 MB/s at 62 s -> about 0.11 MB/s at 300 s.
        hosts[host] = _slow_copy(one, 250 + 60 * rank)
    bundle["clients"] = hosts
    return bundle


def test_small_bundle_keeps_a_line_per_host():
    result = diagnose(scaled_bundle(PER_HOST_LINES_MAX, slow=()))
    text = render_markdown(result)
    assert sum(1 for line in text.splitlines() if line.startswith("- client c")) == PER_HOST_LINES_MAX
    assert "### Clients: distribution" not in text
    assert "| client_cpu | CPU busy during the checkpoint on c0000 | 0.9815 |" in text


def test_many_clients_are_summarised_and_json_keeps_every_host():
    small = render_markdown(diagnose(scaled_bundle(64)))
    result = diagnose(scaled_bundle(512))
    text = render_markdown(result)
    # The summary does not grow with the hosts (a few digits in the counts at most), and stays small.
    assert len(text.encode("utf-8")) < 16 * 1024
    assert abs(len(text) - len(small)) < 200
    # A client's line only in the slowest five.
    assert sum(1 for line in text.splitlines() if line.startswith("- client ")) == 5
    assert "512 client(s) and 1 server(s): above 16 hosts of a kind this file summarises them" in text
    # The distribution of per-host throughput and latency.
    assert "| WRITE MB/s | 0.1" in text and "| 0.541 | 0.541 | 0.541 |" in text
    assert "| WRITE avg exe ms |" in text
    # The slowest host is named first, with its figures.
    slowest = text.split("### Slowest clients (lowest WRITE MB/s)\n\n")[1].splitlines()
    assert slowest[0].startswith("- client slow-c: 0.107 MB/s, NFSv4.1 nconnect=4 wsize=262144, WRITE 37 ops,")
    assert [line.split(":")[0] for line in slowest[:4]] == ["- client slow-c", "- client slow-b", "- client slow-a", "- client c0000"]
    # The outliers, and what they share that the others lack.
    assert "3 of 512 clients below 50 % of the median 0.541 MB/s or above 2x the median WRITE exe" in text
    assert ": slow-a, slow-b, slow-c\n" in text
    assert "What they share that the others do not all have: wsize=262144 (0 of the 509 other clients)" in text
    # One evidence row per signal measured on each host, the hosts where it crossed named.
    assert "| client_cpu | CPU busy during the checkpoint on <host> (512 hosts) | 0.9815 on each | >= 0.85 of 1 CPU(s) " \
           "| yes on 512 of 512: c0000, c0001, c0002, c0003, c0004, c0005, c0006, c0007 and 504 more |" in text
    # A per-host list inside a sentence is cut.
    assert "per client: c0000 0, c0001 0, c0002 0, c0003 0, c0004 0, c0005 0, c0006 0, " \
           "... 504 more host(s), every one in diagnosis.json, slow-c 0 |" in text
    # One recommendation for the hosts that share it.
    wsize = [line for line in text.splitlines() if line.startswith("- **wsize = 1024 KiB**")]
    assert wsize == [line for line in wsize if " on 3 hosts (slow-a, slow-b, slow-c) " in line] and len(wsize) == 1
    # diagnosis.json keeps every host.
    document = json.loads(json.dumps(result))
    assert len(document["clients"]) == 512 and document["clients"]["slow-c"]["wsize"] == 262144
    assert sum(1 for item in document["evidence"] if item["signal"].startswith("CPU busy during the checkpoint on ")) == 513


def test_excluded_clients_are_folded_too():
    bundle = scaled_bundle(40)
    for host in ("c0001", "c0002"):
        bundle["clients"][host]["mountstats_after"] = bundle["clients"][host]["mountstats_after"].split("\tage:")[0]
    result = diagnose(bundle)
    assert [excluded["host"] for excluded in result["excluded_clients"]] == ["c0001", "c0002"]
    text = render_markdown(result)
    assert "| capture | capture problem on <host> (2 hosts) |" in text
    assert "38 client(s) and 1 server(s)" in text


def test_json_keeps_every_hosts_figures_and_one_hosts_text_and_the_markdown_is_unchanged():
    """Issue 27: above PER_HOST_LINES_MAX hosts each per-host row keeps its figures; only the row
    diagnosis.md quotes keeps its explanation, so the Markdown is what the full rows give."""
    result = diagnose(scaled_bundle(64))
    cpu = [item for item in result["evidence"] if item["signal"].startswith("CPU busy during the checkpoint on c")]
    assert len(cpu) == 61 and all(item["value"] == 0.9815 and item["crossed"] for item in cpu)
    assert cpu[0]["explanation"] and all(item["explanation"] is None for item in cpu[1:])
    server = [item for item in result["evidence"] if item["signal"] == "CPU busy during the checkpoint on nfs1"]
    assert server[0]["explanation"]
    full = diagnose(scaled_bundle(PER_HOST_LINES_MAX))
    assert all(item["explanation"] is not None for item in full["evidence"] if item["signal"].startswith("CPU busy"))
    # The text the fold dropped is the text diagnosis.md never printed.
    unfolded = dict(result, evidence=[dict(item, explanation=item["explanation"] or "never printed") for item in result["evidence"]])
    assert render_markdown(result) == render_markdown(unfolded)
    assert "never printed" not in render_markdown(unfolded)
