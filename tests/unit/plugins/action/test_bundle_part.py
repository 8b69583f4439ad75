"""ckptio.nfs.bundle_part: a host's part of a bundle, or its context.yml, written in one call (issue 46).

The roles wrote a bundle with seven ansible.builtin.copy tasks and rendered context.yml with
to_nice_yaml in two places (saved_stats_bundle a third way). The action writes every part through
the one atomic writer and context.yml through the one renderer; these tests rebuild real lab bundles
(tests/fixtures/captures) from the inputs the roles give and compare every file byte for byte.
"""
from __future__ import annotations

import json
import os
from unittest import mock

import pytest
import yaml

from ansible.errors import AnsibleActionFail
from ansible.playbook.task import Task

from ansible_collections.ckptio.nfs.plugins.action import bundle_part
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle import RPC_SAMPLE_FILES

CAPTURES = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "captures"))
# Bundles the roles wrote: canary_validation with figures.json and the probe (lab_figures, v43_*: the servers'
# samples at go and end, a restore), without them (written before figures.json existed: the mount point is not
# given, so none is made), and checkpoint_capture (capture.json). Older bundles' probe.json still held iperf3's
# output, which now has a file of its own, and capture_clock_step was written by hand (its NOTES.txt): not here.
# v47_bookworm_*: issue 47's bundles, with the canary's raw sunrpc samples (sunrpc_xprt.txt, rpc_tasks.txt,
# rpc_latency.txt, given as rpc_samples) and iperf3's output kept in probe_iperf3.json; v47_trixie_* the same on 6.12,
# v47_bullseye_* on 5.10 (no sunrpc sysfs: no sunrpc_xprt.txt); v48_bookworm_*: issue 48's canaries beside Prometheus
# (the canary's default rpc sampling: sunrpc_xprt.txt and rpc_tasks.txt, no tracepoints).
BUNDLES = ["lab_figures", "v43_loss_2pct", "v43_slow_storage", "mlperf_readback_two_paths", "restore_none_shared",
           "capture_dd", "v47_bookworm_baseline", "v47_bookworm_tuned", "v47_trixie_baseline", "v47_trixie_tuned",
           "v47_bullseye_baseline", "v47_bullseye_tuned", "v48_bookworm_seed_like_v41", "v48_bookworm_healthy"]
# Left out of the fixtures when they were copied (their NOTES.txt): no diagnosis reads it.
NOT_KEPT = "probe_iperf3.json"


@pytest.fixture(autouse=True)
def no_base_run():
    with mock.patch("ansible.plugins.action.ActionBase.run", return_value={}):
        yield


def run(args, check_mode=False, diff=False):
    task = Task()
    task.args = dict(args)
    task.check_mode = check_mode
    task.diff = diff
    action = bundle_part.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None, shared_loader_obj=None)
    return action.run(task_vars={})


def text(path):
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8")


def tree(root):
    found = {}
    for directory, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as handle:
                found[os.path.relpath(path, root)] = handle.read()
    return found


def client_inputs(directory, mount_point):
    """What the roles pass for a client: the two nfs_client_stats reads, dstate.txt, the record(s)."""
    def read(side):
        values = {"raw_mountstats": text(os.path.join(directory, "mountstats_%s.txt" % side)),
                  "sunrpc_text": text(os.path.join(directory, "sunrpc.txt")),
                  "host_sample": json.loads(text(os.path.join(directory, "host_%s.json" % side)))}
        if os.path.exists(os.path.join(directory, "figures.json")):
            values["mounts"] = [{"mount_point": mount_point}]
        return values
    records = dict((key, json.loads(text(os.path.join(directory, "%s.json" % key))))
                   for key in ("canary", "capture") if os.path.exists(os.path.join(directory, "%s.json" % key)))
    inputs = {"before": read("before"), "after": read("after"), "dstate_text": text(os.path.join(directory, "dstate.txt")),
              "records": records}
    # clients_run.yml passes the canary's rpc_samples: each text the sampler kept, null for one it did not.
    rpc_samples = dict((key, text(os.path.join(directory, name)) if os.path.exists(os.path.join(directory, name)) else None)
                       for key, name in RPC_SAMPLE_FILES.items())
    if any(value is not None for value in rpc_samples.values()):
        inputs["rpc_samples"] = dict(rpc_samples, mode="trace", notes=[])
    return inputs


def server_inputs(directory):
    def read(side):
        values = {"raw_nfsd": text(os.path.join(directory, "nfsd_%s.txt" % side)),
                  "raw_pool_stats": text(os.path.join(directory, "pool_stats_%s.txt" % side)),
                  "host_sample": json.loads(text(os.path.join(directory, "host_%s.json" % side)))}
        if side == "after" and os.path.exists(os.path.join(directory, "threads.txt")):
            values["threads"] = int(text(os.path.join(directory, "threads.txt")))
        return values
    return {"before": read("before"), "after": read("after")}


def rebuild(source, bundle):
    """Every part of the bundle at source written into bundle as the roles write it, one call a part."""
    context = yaml.safe_load(text(os.path.join(source, "context.yml")))
    results = [run({"bundle": bundle, "part": "context", "context": context})]
    for host in sorted(os.listdir(os.path.join(source, "clients"))):
        directory = os.path.join(source, "clients", host)
        results.append(run(dict(client_inputs(directory, context["mount_point"]), bundle=bundle, part="clients", host=host)))
        if os.path.exists(os.path.join(directory, "probe.json")):
            # probe_clients.yml's record (iperf3's output, where these fixtures did not keep it, given back as none)
            raw = os.path.join(directory, NOT_KEPT)
            probe = dict(json.loads(text(os.path.join(directory, "probe.json"))),
                         iperf3=json.loads(text(raw)) if os.path.exists(raw) else None)
            results.append(run({"bundle": bundle, "part": "clients", "host": host, "records": {"probe": probe}}))
    for host in sorted(os.listdir(os.path.join(source, "servers"))):
        directory = os.path.join(source, "servers", host)
        results.append(run(dict(server_inputs(directory), bundle=bundle, part="servers", host=host)))
        samples = dict((key, json.loads(text(os.path.join(directory, "%s.json" % key))))
                       for key in ("host_start", "host_end") if os.path.exists(os.path.join(directory, "%s.json" % key)))
        if samples:
            results.append(run({"bundle": bundle, "part": "servers", "host": host, "samples": samples}))
    return results


@pytest.mark.parametrize("name", BUNDLES)
def test_a_lab_bundle_is_written_again_byte_for_byte(tmp_path, name):
    source = os.path.join(CAPTURES, name)
    expected = dict((path, data) for path, data in tree(source).items() if path != "NOTES.txt")
    results = rebuild(source, str(tmp_path))
    assert tree(str(tmp_path)) == expected
    assert len(expected) >= 12 and "context.yml" in expected
    assert all(result["changed"] for result in results)
    # Written again: the same bytes are left alone.
    assert not any(result["changed"] for result in rebuild(source, str(tmp_path)))


def test_files_are_0644_and_directories_are_made(tmp_path):
    run({"bundle": str(tmp_path), "part": "servers", "host": "s1", "samples": {"host_start": {"time": 1.0}}})
    path = tmp_path / "servers" / "s1" / "host_start.json"
    assert path.read_text() == '{"time": 1.0}\n' and oct(path.stat().st_mode & 0o777) == "0o644"


def test_a_clients_rpc_samples_are_written_verbatim_and_only_a_clients(tmp_path):
    """Issue 47: the canary's rpc_samples become sunrpc_xprt.txt, rpc_tasks.txt, rpc_latency.txt, each text
    verbatim, a null one not written; its notes and cost are canary.json's, not files."""
    samples = {"sunrpc_xprt": "=== sample t=0.000 ===\n", "rpc_tasks": None, "rpc_latency": "", "mode": "trace",
               "notes": ["rpc_tasks: no debugfs"], "cost": {"passes": 1}}
    result = run({"bundle": str(tmp_path), "part": "clients", "host": "c1", "dstate_text": "1 0 \n", "rpc_samples": samples})
    assert sorted(os.listdir(tmp_path / "clients" / "c1")) == ["dstate.txt", "rpc_latency.txt", "sunrpc_xprt.txt"]
    assert (tmp_path / "clients" / "c1" / "sunrpc_xprt.txt").read_text() == samples["sunrpc_xprt"]
    assert (tmp_path / "clients" / "c1" / "rpc_latency.txt").read_text() == ""
    assert result["changed"] and len(result["files"]) == 3
    with pytest.raises(AnsibleActionFail, match="rpc_samples .* are a clients part's, not a servers part's"):
        run({"bundle": str(tmp_path), "part": "servers", "host": "s1", "rpc_samples": samples})
    with pytest.raises(AnsibleActionFail, match="the context part takes context only"):
        run({"bundle": str(tmp_path), "part": "context", "context": {}, "rpc_samples": samples})


def test_check_mode_writes_nothing_and_says_what_would_change(tmp_path):
    result = run({"bundle": str(tmp_path), "part": "context", "context": {"label": "x"}}, check_mode=True, diff=True)
    assert result["changed"] and result["written"] == [str(tmp_path / "context.yml")]
    assert result["diff"] == [{"before_header": str(tmp_path / "context.yml"), "after_header": str(tmp_path / "context.yml"),
                               "before": "", "after": "label: x\n"}]
    assert list(tmp_path.iterdir()) == []


def test_a_link_in_the_bundle_is_never_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    bundle = tmp_path / "bundle"
    (bundle / "clients").mkdir(parents=True)
    (bundle / "clients" / "c1").symlink_to(outside)
    with pytest.raises(AnsibleActionFail):
        run({"bundle": str(bundle), "part": "clients", "host": "c1", "dstate_text": "x\n"})
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("args, message", [
    ({"part": "clients", "dstate_text": ""}, "a clients part needs host"),
    ({"part": "servers", "host": "../x", "samples": {}}, "a servers part needs host"),
    ({"part": "context", "context": {}, "host": "h"}, "the context part takes context only"),
    ({"part": "clients", "host": "h", "context": {}}, "context is the context part's"),
    ({"part": "servers", "host": "h", "samples": {"go": {}}}, "no file go in a servers part"),
])
def test_a_wrong_part_is_refused_naming_it(tmp_path, args, message):
    with pytest.raises(AnsibleActionFail, match=message):
        run(dict(args, bundle=str(tmp_path)))


def test_a_missing_bundle_is_refused(tmp_path):
    with pytest.raises(AnsibleActionFail, match="does not exist"):
        run({"bundle": str(tmp_path / "nope"), "part": "context", "context": {}})
