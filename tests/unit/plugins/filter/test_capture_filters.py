"""The checkpoint_capture filters, as the role's tasks call them."""
from __future__ import annotations

import json

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.filter.internal import STEPS as CHECKED
from ansible_collections.ckptio.nfs.plugins.plugin_utils import bundle_steps, capture_steps
from ansible_collections.ckptio.nfs.tests.unit.utils import read_sample

# Each step as ckptio.nfs.internal calls it: checked against its argument spec first.
FILTERS = CHECKED
NOW = 1796137300.0
CLIENTS = ("..", "captures", "clock_step", "clients")


def test_all_steps_exposed():
    assert sorted(capture_steps.STEPS) == ["capture_client", "capture_context", "capture_sampling", "capture_window"]


def test_window_takes_the_roles_empty_defaults_for_the_unused_forms():
    window = FILTERS["capture_window"](NOW, seconds=30, start="", end="", marker="", max_seconds=3600,
                                       max_lead_seconds=3600, dstate_interval=1.0)
    assert window["kind"] == "seconds" and window["seconds"] == 30.0 and window["errors"] == []


@pytest.mark.parametrize("options, option", [
    ({"start": NOW - 60, "end": NOW + 60}, "checkpoint_capture_start"),
    ({"start": NOW + 60, "end": NOW + 30}, "checkpoint_capture_end"),
    ({"seconds": 30, "marker": "/dev/shm/done"}, "checkpoint_capture_marker"),
])
def test_a_bad_window_gives_the_message_naming_the_option_for_the_roles_assert(options, option):
    result = FILTERS["capture_window"](NOW, **options)
    assert list(result) == ["errors"] and option in result["errors"][0]


def test_sampling_of_a_marker_window_passes_the_marker_to_the_sampler():
    window = FILTERS["capture_window"](NOW, marker="/dev/shm/done", max_seconds=120, dstate_interval=2)
    sampling = FILTERS["capture_sampling"](window, NOW)
    assert sampling["stop_path"] == "/dev/shm/done" and sampling["samples"] == 61


def test_sampling_needs_the_windows_plan():
    with pytest.raises(AnsibleFilterError, match="capture_window"):
        FILTERS["capture_sampling"]({"kind": "seconds"}, NOW)


def read(host, phase):
    return {"raw_mountstats": read_sample(*(CLIENTS + (host, "mountstats_%s.txt" % phase))),
            "sunrpc_text": read_sample(*(CLIENTS + (host, "sunrpc.txt"))),
            "host_sample": json.loads(read_sample(*(CLIENTS + (host, "host_%s.json" % phase))))}


def test_client_and_context_as_the_role_chains_them():
    records = dict((host, FILTERS["capture_client"](read(host, "before"), "/mnt/nfs", read(host, "after"),
                                                    {"offset_seconds": 0.0, "uncertainty_seconds": 0.1}, {"dstate": []}))
                   for host in ("nfs2", "nfs3"))
    window = FILTERS["capture_window"](NOW, seconds=100)
    context = FILTERS["capture_context"](records, window, "/mnt/nfs", "prod", 300, target_checkpoint_bytes="16777216")
    assert context["source"] == "capture" and context["target"]["checkpoint_bytes_from"] == "operator"
    assert context["capture"]["server_write_bytes"] == 16777216 and context["capture"]["seconds"] > 100


def test_context_of_nothing_written_and_no_size_has_no_target():
    """No size given is no target (CONTRACT 2): the written bytes were never the target, so nothing written is no error here."""
    before = read("nfs2", "before")
    record = FILTERS["capture_client"](before, "/mnt/nfs", before)
    context = FILTERS["capture_context"]({"nfs2": record}, FILTERS["capture_window"](NOW, seconds=10), "/mnt/nfs", "x", 300)
    assert context["target"] == {"checkpoint_bytes": None, "window_seconds": 300.0}
    assert context["capture"]["server_write_bytes"] == 0


def test_stats_files_for_a_client():
    # The part ckptio.nfs.bundle_part writes (plugin_utils/bundle_steps.part_files), named from the bundle.
    names = [item["name"] for item in bundle_steps.part_files("clients", "c1", read("nfs2", "before"), read("nfs2", "after"), "")]
    assert names == ["clients/c1/%s" % name for name in ("mountstats_before.txt", "mountstats_after.txt", "sunrpc.txt",
                                                         "host_before.json", "host_after.json", "dstate.txt")]


def test_stats_files_of_a_result_without_the_texts_fail_clearly():
    with pytest.raises(ValueError, match="bundle_host_files: 'raw_mountstats'"):
        bundle_steps.part_files("clients", "c1", {}, {})


@pytest.mark.parametrize("window, sampler, seen", [
    # a marker window: what the sampler saw; a failed sampler (no dstate_stop) did not see it
    ({"kind": "marker"}, {"dstate": [], "dstate_stop": {"seen": True}}, True),
    ({"kind": "marker"}, {"dstate": [], "dstate_stop": {"seen": False}}, False),
    ({"kind": "marker"}, {"failed": True, "msg": "boom"}, False),
    # check mode skips the sampler: nothing was watched, so unknown
    ({"kind": "marker"}, {"skipped": True, "changed": False}, None),
    ({"kind": "marker"}, None, None),
    # other windows have no marker
    ({"kind": "seconds"}, {"dstate": [], "dstate_stop": {"seen": True}}, None),
])
def test_client_decides_marker_seen_from_the_window_and_the_sampler(window, sampler, seen):
    before = read("nfs2", "before")
    record = FILTERS["capture_client"](before, "/mnt/nfs", before, None, sampler, window=window)
    assert record["marker_seen"] is seen
    # marker_seen given outright still wins
    assert FILTERS["capture_client"](before, "/mnt/nfs", before, None, sampler, marker_seen=True, window=window)["marker_seen"] is True
