"""pace_host: the host(s) whose ranks ended last, by how much, and what differs about them (issue 26 item 2)."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import pace_host


def ranks(host, end, count=4, start=100.0):
    return [{"host": host, "rank": rank, "start": start, "end": start + end - 0.1 * rank, "error": None} for rank in range(count)]


def test_one_shaped_client_is_named_with_what_differs():
    facts = {"nfs2": {"nconnect": 4, "wsize": 1048576, "cpu_busy": 0.4, "link_bytes_per_second": 3.8e6, "retrans_share": 0.0},
             "nfs3": {"nconnect": 4, "wsize": 1048576, "cpu_busy": 0.45, "link_bytes_per_second": 1.9e6, "retrans_share": 0.0}}
    found = pace_host.assess(ranks("nfs2", 10.6) + ranks("nfs3", 19.4), facts)
    assert [item["host"] for item in found["pace"]] == ["nfs3"] and found["pace"][0]["lag_seconds"] == 8.8
    assert found["pace"][0]["differences"] == ["its link carried 1.90 MB/s vs 3.80"]
    assert found["text"] == ("pace set by nfs3 ended 8.8 s after the median host (19.4 s vs 10.6 s): "
                             "its link carried 1.90 MB/s vs 3.80")


def test_even_hosts_name_nobody_and_failed_ranks_do_not_count():
    found = pace_host.assess(ranks("a", 10.0) + ranks("b", 10.4) + [{"host": "c", "start": 100.0, "end": None, "error": "EIO"}], {})
    assert found["pace"] == [] and "ended together" in found["text"]
    assert not pace_host.assess(ranks("a", 10.0), {})["measured"]


def test_sixteen_thousand_hosts_name_the_slowest_three_and_count_the_rest():
    every = []
    facts = {}
    for index in range(16384):
        host = "h%05d" % index
        every += ranks(host, 10.0 + (index % 7) * 0.01, count=1)
        facts[host] = {"nconnect": 4, "cpu_busy": 0.3}
    for index, host in enumerate(("h00001", "h00002", "h00003", "h00004", "h00005")):
        every += ranks(host, 20.0 + index, count=1)
        facts[host] = {"nconnect": 1, "cpu_busy": 0.3}
    found = pace_host.assess(every, facts)
    assert found["lagging"] == 5 and [item["host"] for item in found["pace"]] == ["h00005", "h00004", "h00003"]
    assert found["text"].startswith("pace set by 5 of 16384 hosts, the slowest 3: h00005 ended 14.0 s after")
    assert "nconnect 1 vs 4" in found["text"] and len(found["text"]) < 600
