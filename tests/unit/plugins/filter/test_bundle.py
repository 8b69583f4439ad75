"""The one writer of a host's part of a bundle (filters ckptio.nfs.bundle_host_files, canary_record,
probe_record; module_utils/bundle/bundle_part.py): the files are byte-for-byte what the roles' Jinja
wrote before issue 27 (the old expressions are rendered here by Ansible's own templar, next to the new
Python), and bad input is refused naming what is wrong."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.ckptio.nfs.plugins.filter.internal import STEPS as CHECKED
from ansible_collections.ckptio.nfs.plugins.plugin_utils import bundle_steps

try:
    from ansible.template import trust_as_template
except ImportError:  # ansible-core before 2.19 trusts every template
    def trust_as_template(expression):
        return expression

# Each step as ckptio.nfs.internal calls it: checked against its argument spec first.
FILTERS = dict(CHECKED, bundle_host_files=bundle_steps.bundle_host_files)

CLOCK = {"changed": False, "failed": False, "offset_seconds": -0.25, "uncertainty_seconds": 0.001, "samples": 5,
         "bound_seconds": 0.5, "within_bound": True, "message": "ok \u00e9", "reader": "date", "readings": [[1.0, 2.0, 3.0]]}
GO = {"go_at": 1700000000.5, "margin_seconds": 2.0, "fanout_seconds": 0.7, "not_ready": ["c2"],
      "go": {"c1": {"go_at_host": 1700000000.75}}, "abort": {"c2": "not ready"}}
CANARY = {"ranks": [{"rank": 0, "bytes": 1 << 30, "seconds": 1.5}], "summary": {"gbps": 0.7}, "stalled": [],
          "barrier": {"ready_at": 1.0}, "restore": None, "harness": {"fio": "3.33"}, "workdir": "/mnt/c/x",
          "cleaned_up": True, "host_samples": {"start": {"format": 1}}, "msg": "", "dstate_text": "1.0 0 \n",
          "changed": True}

# roles/canary_validation/tasks/clients.yml before issue 27 (b19d2d3), the canary.json dict literal.
OLD_CANARY = """{{ ({'ranks': canary_validation__canary.ranks | default([]),
    'summary': canary_validation__canary.summary | default(none),
    'stalled': canary_validation__canary.stalled | default([]),
    'start_at': canary_validation__start_at,
    'clock': {'offset_seconds': canary_validation__clock.offset_seconds,
              'uncertainty_seconds': canary_validation__clock.uncertainty_seconds,
              'samples': canary_validation__clock.samples, 'bound_seconds': canary_validation__clock.bound_seconds,
              'within_bound': canary_validation__clock.within_bound, 'message': canary_validation__clock.message,
              'reader': canary_validation__clock.reader, 'readings': canary_validation__clock.readings},
    'barrier': {'go_at': canary_validation__barrier.go_at, 'margin_seconds': canary_validation__barrier.margin_seconds,
                'fanout_seconds': canary_validation__barrier.fanout_seconds,
                'not_ready': canary_validation__barrier.not_ready,
                'go': canary_validation__barrier.go[inventory_hostname] | default(none),
                'host': canary_validation__canary.barrier | default(none)},
    'read_barrier': ({'go_at': canary_validation__read_barrier.go_at,
                      'margin_seconds': canary_validation__read_barrier.margin_seconds,
                      'fanout_seconds': canary_validation__read_barrier.fanout_seconds,
                      'not_ready': canary_validation__read_barrier.not_ready,
                      'go': canary_validation__read_barrier.go[inventory_hostname] | default(none),
                      'abort': canary_validation__read_barrier.abort[inventory_hostname] | default(none)}
                     if canary_validation__read_barrier is defined else none),
    'restore': canary_validation__canary.restore | default(none),
    'harness': canary_validation__canary.harness | default(none),
    'workdir': canary_validation__canary.workdir | default(none),
    'cleaned_up': canary_validation__canary.cleaned_up | default(none),
    'host_samples': canary_validation__canary.host_samples | default({}),
    'msg': canary_validation__canary.msg | default('')}) | to_nice_json }}"""

# roles/canary_validation/tasks/probe_clients.yml before issue 27, probe.json.
OLD_PROBE = """{{ ({'server': canary_validation__probe_target.server,
    'port': canary_validation__probe_target.port | int,
    'streams': canary_validation__probe_target.streams | int,
    'seconds': canary_validation_probe_seconds | int,
    'start_at': canary_validation__probe.start_at | default(none),
    'started_at': canary_validation__probe.started_at | default(none),
    'barrier': canary_validation__probe.barrier | default(none),
    'clock': canary_validation__clock | default(none),
    'summary': canary_validation__probe.summary | default(none),
    'msg': canary_validation__probe.msg | default(''),
    'iperf3': canary_validation__probe.parsed | default(none)}) | to_nice_json }}"""


def render(expression, **variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression)) + "\n"


def files(*args, **kwargs):
    return dict((item["name"], item["content"]) for item in FILTERS["bundle_host_files"](*args, **kwargs))


@pytest.mark.parametrize("canary", [CANARY, {"failed": True, "msg": "checkpoint_canary failed"}], ids=["ran", "failed"])
@pytest.mark.parametrize("read_plan", [None, GO], ids=["no-restore", "restore"])
def test_canary_json_is_byte_for_byte_what_the_jinja_wrote(canary, read_plan):
    variables = dict(canary_validation__canary=canary, canary_validation__start_at=GO["go_at"], canary_validation__clock=CLOCK,
                     canary_validation__barrier=GO, inventory_hostname="c1")
    if read_plan is not None:
        variables["canary_validation__read_barrier"] = read_plan
    record = FILTERS["canary_record"](canary, "c1", GO["go_at"], CLOCK, GO, read_plan)
    written = files("clients", {"skipped": True}, {"skipped": True}, canary.get("dstate_text", ""), {"canary": record})
    assert written == {"dstate.txt": canary.get("dstate_text", ""), "canary.json": render(OLD_CANARY, **variables)}
    assert "\\u00e9" in written["canary.json"]


def test_probe_json_is_byte_for_byte_what_the_jinja_wrote():
    target = {"server": "nfs1", "port": "5201", "streams": 4}
    probe = {"start_at": 1.5, "started_at": 1.6, "barrier": {"go": 1}, "summary": {"error": None, "bits_per_second": 9.5e9},
             "msg": "", "parsed": {"end": {}}, "changed": False}
    record = FILTERS["probe_record"](probe, target, "10", CLOCK)
    # Since issue 27's scale step iperf3's raw output is a file of its own (probe_iperf3.json, read by
    # no diagnosis): probe.json is the Jinja's document without that key, byte for byte.
    without_raw = OLD_PROBE.replace(",\n    'iperf3': canary_validation__probe.parsed | default(none)}", "}")
    assert without_raw != OLD_PROBE
    old = render(without_raw, canary_validation__probe_target=target, canary_validation_probe_seconds="10",
                 canary_validation__probe=probe, canary_validation__clock=CLOCK)
    raw = render("{{ canary_validation__probe.parsed | to_nice_json }}", canary_validation__probe=probe)
    assert files("clients", records={"probe": record}) == {"probe.json": old, "probe_iperf3.json": raw}


def test_a_probe_without_iperf3_output_is_probe_json_alone():
    probe = {"summary": None, "msg": "iperf3: command not found", "parsed": None}
    record = FILTERS["probe_record"](probe, {"server": "nfs1", "port": 5201, "streams": 1}, 10)
    written = files("clients", records={"probe": record})
    assert list(written) == ["probe.json"] and '"iperf3"' not in written["probe.json"]


def test_capture_part_has_the_statistics_then_the_record():
    before = {"raw_mountstats": "a\n", "sunrpc_text": "s\n", "host_sample": {"time": 1.0}}
    after = {"raw_mountstats": "b\n", "sunrpc_text": "t\n", "host_sample": {"time": 2.0}}
    part = FILTERS["bundle_host_files"]("clients", before, after, None, {"capture": {"start": 1.0}})
    assert [item["name"] for item in part] == ["mountstats_before.txt", "mountstats_after.txt", "sunrpc.txt",
                                               "host_before.json", "host_after.json", "capture.json"]
    assert part[-1]["content"] == render("{{ {'start': 1.0} | to_nice_json }}")
    assert part[3]["content"] == render("{{ {'time': 1.0} | to_json }}")


def test_server_part_is_the_statistics_files():
    before = {"raw_nfsd": "io 1\n", "raw_pool_stats": "p\n", "threads": 8, "host_sample": {}}
    after = dict(before, threads=16)
    assert files("servers", before, after)["threads.txt"] == "16\n"


def test_a_read_a_skipped_task_never_set_is_no_read_on_every_ansible_core():
    # ansible-core before 2.19 hands the filter an Undefined object for such a variable (check mode:
    # the after-read is skipped); it must read as "not given", as None does
    from jinja2 import Undefined
    before = {"raw_mountstats": "a\n", "sunrpc_text": "s\n", "host_sample": {"time": 1.0}}
    with_undefined = FILTERS["bundle_host_files"]("clients", before, Undefined(name="checkpoint_capture__after"), None, None)
    assert with_undefined == FILTERS["bundle_host_files"]("clients", before, None, None, None)
    # a required input left undefined raises Jinja's undefined error (Ansible then lets `when` decide), not a type error
    from jinja2.exceptions import UndefinedError
    with pytest.raises(UndefinedError):
        FILTERS["canary_record"]({}, "c1", 1.0, CLOCK, Undefined(name="canary_validation__barrier"))


@pytest.mark.parametrize("call, message", [
    (lambda: FILTERS["bundle_host_files"]("barrier"), "bundle_host_files: "),
    (lambda: FILTERS["bundle_host_files"]("clients", records={"nope": {}}), "bundle_host_files: 'nope'"),
    (lambda: FILTERS["bundle_host_files"]("clients", "text"), "before must be a dict, got str"),
    (lambda: FILTERS["canary_record"]({}, "c1", 1.0, {}, GO), "canary_record: the clock or a go plan lacks 'offset_seconds'"),
    (lambda: FILTERS["canary_record"]([], "c1", 1.0, CLOCK, GO), "step 'canary_record': argument '_input' is of type .*list"),
    (lambda: FILTERS["probe_record"]({}, {"server": "s"}, 10), "probe_record: the target lacks 'port'"),
    (lambda: FILTERS["probe_record"]({}, {"server": "s", "port": "x", "streams": 1}, 10), "must be integers"),
])
def test_bad_input_is_refused_naming_it(call, message):
    with pytest.raises(AnsibleFilterError, match=message):
        call()


def test_the_servers_samples_at_go_and_end_are_written_as_to_json_wrote_them():
    sample = {"format": 1, "time": 2.5, "cpu": {"idle": 0.9}, "name": "s\u00e9"}
    samples = FILTERS["canary_server_samples"]({"results": [{"item": {"item": "s1"}, "host_sample": sample}]}, {})["samples"]
    files = bundle_steps.part_files("servers", "s1", samples=samples["s1"])
    assert files == [{"name": "servers/s1/host_start.json", "content": render("{{ sample | to_json }}", sample=sample)}]


def test_canary_json_carries_the_shape_paths_and_drain_when_the_canary_returned_them():
    canary = dict(CANARY, shape={"name": "torch_dcp", "files_per_rank": 1}, per_path=[{"path": "/mnt/a", "ranks": 2}],
                  blocking_seconds=1.5, drain={"seconds": 3.0, "fits_interval": True})
    record = FILTERS["canary_record"](canary, "c1", GO["go_at"], CLOCK, GO)
    assert (record["shape"]["name"], record["per_path"][0]["path"], record["blocking_seconds"], record["drain"]["seconds"]) == (
        "torch_dcp", "/mnt/a", 1.5, 3.0)
    assert "drain" not in FILTERS["canary_record"](CANARY, "c1", GO["go_at"], CLOCK, GO)
