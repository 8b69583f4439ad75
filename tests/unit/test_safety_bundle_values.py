"""Hostile bundle values (issue 24 item 6): every one is a clean failure naming the file and the key.

Each case copies tests/fixtures/captures/healthy into a temp dir, spoils one value, and runs
diagnose_bundle and checkpoint_report through their real main(): the module fails (never a
traceback, never a hang) with a message that names the file and the key, and writes nothing.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import signal

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle, bundle_values
from ansible_collections.ckptio.nfs.plugins.modules import checkpoint_report, diagnose_bundle
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module, tree_checksums

HEALTHY = os.path.join(os.path.dirname(__file__), "..", "fixtures", "captures", "healthy")
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")
CONTEXT = "context.yml"
PROBE = "clients/nfs2/probe.json"
CANARY = "clients/nfs2/canary.json"
HOST_AFTER = "servers/nfs1/host_after.json"

# 9 levels of 9 aliases each: 1.2 kB of YAML, 9^9 strings once expanded.
BILLION_LAUGHS = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n" + "".join(
    "%s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n" % ((chr(ord("a") + level),) * 2 + (chr(ord("a") + level - 1),) * 9)
    for level in range(1, 9)) + "mount_point: /mnt/nfs\ntarget: {checkpoint_bytes: 1, window_seconds: 1}\nlabel: *i\n"


def _context_text(**replace):
    """The healthy context.yml with some top-level or target lines replaced by raw YAML."""
    with open(os.path.join(HEALTHY, CONTEXT)) as handle:
        lines = handle.read().splitlines()
    out = []
    for line in lines:
        key = line.strip().split(":", 1)[0]
        if key in replace:
            indent = line[:len(line) - len(line.lstrip())]
            out.append("%s%s: %s" % (indent, key, replace.pop(key)))
        else:
            out.append(line)
    return "\n".join(out + ["%s: %s" % item for item in replace.items()]) + "\n"


def _json_edit(path, edit):
    def apply(root):
        full = os.path.join(root, path)
        with open(full) as handle:
            value = json.load(handle)
        text = edit(value)
        with open(full, "w") as handle:
            handle.write(text if isinstance(text, str) else json.dumps(value))
    return apply


def _context(text):
    def apply(root):
        with open(os.path.join(root, CONTEXT), "w") as handle:
            handle.write(text)
    return apply


def _set(*keys_and_value):
    keys, value = keys_and_value[:-1], keys_and_value[-1]

    def edit(document):
        for key in keys[:-1]:
            document = document[key]
        document[keys[-1]] = value
    return edit


def _raw(old, new):
    """Replace text in the JSON file's own dump (for literals json.dumps would not write: NaN, huge ints)."""
    def edit(document):
        text = json.dumps(document)
        assert old in text
        return text.replace(old, new, 1)
    return edit


def _nan_speeds(document):
    for row in document["interfaces"].values():
        row["speed_mbps"] = float("nan")


# (case id, file to spoil, spoiler, words the message must hold: the file and the key)
CASES = [
    ("billion-laughs", _context(BILLION_LAUGHS), [CONTEXT, "alias"]),
    ("anchor-without-alias", _context(_context_text(label="&x healthy")), [CONTEXT, "anchor"]),
    ("window-nan", _context(_context_text(window_seconds=".nan")), [CONTEXT, "target.window_seconds"]),
    ("window-inf", _context(_context_text(window_seconds=".inf")), [CONTEXT, "target.window_seconds"]),
    ("checkpoint-bytes-400-digits", _context(_context_text(checkpoint_bytes="9" * 400)), [CONTEXT, "target.checkpoint_bytes"]),
    ("checkpoint-bytes-1e400", _context(_context_text(checkpoint_bytes="1e400")), [CONTEXT, "target.checkpoint_bytes"]),
    ("checkpoint-bytes-2e19", _context(_context_text(checkpoint_bytes="2.0e+19")), [CONTEXT, "target.checkpoint_bytes"]),
    ("window-words", _context(_context_text(window_seconds="five minutes")), [CONTEXT, "target.window_seconds"]),
    ("window-bool", _context(_context_text(window_seconds="true")), [CONTEXT, "target.window_seconds"]),
    ("window-date", _context(_context_text(window_seconds="2026-01-01")), [CONTEXT, "target.window_seconds"]),
    ("target-list", _context("mount_point: /mnt/nfs\ntarget: [1, 2]\n"), [CONTEXT, "target"]),
    ("mount-point-list", _context(_context_text(mount_point="[/mnt/nfs, /mnt/other]")), [CONTEXT, "mount_point"]),
    ("label-mapping", _context(_context_text(label="{a: 1}")), [CONTEXT, "label"]),
    ("canary-string", _context(_context_text().split("canary:", maxsplit=1)[0] + "canary: fast\n"), [CONTEXT, "canary"]),
    ("canary-seconds-words", _context(_context_text(seconds="slow")), [CONTEXT, "canary.seconds"]),
    ("network-words", _context(_context_text(network="{server_link_gbps: fast}")), [CONTEXT, "network.server_link_gbps"]),
    ("restore-bytes-words", _context(_context_text(restore="{bytes: lots, seconds: 1}")), [CONTEXT, "restore.bytes"]),
    ("saved-window-nan", _context(_context_text(saved="{window: since_mount, window_seconds: .nan}")),
     [CONTEXT, "saved.window_seconds"]),
    ("context-a-list", _context("- mount_point\n- target\n"), [CONTEXT, "mapping"]),
    ("context-deep", _context("mount_point: " + "[" * 2000 + "]" * 2000 + "\n"), [CONTEXT, "levels"]),
    ("probe-summary-string", _json_edit(PROBE, _set("summary", "fast")), [PROBE, "summary"]),
    ("probe-rate-words", _json_edit(PROBE, _set("summary", "received_bits_per_second", "fast")),
     [PROBE, "summary.received_bits_per_second"]),
    ("probe-rate-nan", _json_edit(PROBE, _set("summary", "received_bits_per_second", float("nan"))),
     [PROBE, "summary.received_bits_per_second"]),
    ("probe-rate-infinity", _json_edit(PROBE, _set("summary", "received_bits_per_second", float("inf"))),
     [PROBE, "summary.received_bits_per_second"]),
    # Deep in iperf3's output, where the schema names no key (bundle_values._fits_any's fast path).
    ("probe-iperf3-interval-infinity", _json_edit(PROBE, lambda doc: doc["iperf3"]["intervals"][3]["streams"][1].update(bytes=1e400)),
     [PROBE, "iperf3.intervals[3].streams[1].bytes"]),
    ("probe-iperf3-interval-400-digits", _json_edit(PROBE, lambda doc: doc["iperf3"]["intervals"][0]["sum"].update(bytes=10 ** 400)),
     [PROBE, "iperf3.intervals[0].sum.bytes", "401-digit"]),
    ("probe-iperf3-deep", _json_edit(PROBE, lambda doc: doc["iperf3"].update(deep=json.loads("[" * 33 + "]" * 33))),
     [PROBE, "iperf3.deep", "levels"]),
    ("canary-ranks-string", _json_edit(CANARY, _set("ranks", "all of them")), [CANARY, "ranks"]),
    ("canary-rank-start-words", _json_edit(CANARY, lambda doc: doc["ranks"][0].update(start="noon")), [CANARY, "ranks[0].start"]),
    ("canary-clock-list", _json_edit(CANARY, _set("clock", [1, 2])), [CANARY, "clock"]),
    ("canary-clock-offset-words", _json_edit(CANARY, _set("clock", {"offset_seconds": "late"})), [CANARY, "clock.offset_seconds"]),
    ("canary-400-digits", _json_edit(CANARY, _raw('"bytes": 8388608', '"bytes": ' + "9" * 400)), [CANARY, "ranks[0].bytes"]),
    ("host-sample-time-words", _json_edit(HOST_AFTER, _set("time", "noon")), [HOST_AFTER, "time"]),
    ("host-sample-interfaces-list", _json_edit(HOST_AFTER, _set("interfaces", ["lab0"])), [HOST_AFTER, "interfaces"]),
    ("host-sample-speed-nan", _json_edit(HOST_AFTER, _nan_speeds), [HOST_AFTER, "interfaces.", ".speed_mbps"]),
    ("host-sample-a-list", _json_edit(HOST_AFTER, lambda doc: "[1, 2]"), [HOST_AFTER, "mapping"]),
]


def _hostile(tmp_path, spoil):
    root = str(tmp_path / "bundle")
    shutil.copytree(HEALTHY, root)
    spoil(root)
    return root


@pytest.fixture
def deadline():
    """A hang (the billion laughs) fails the test after 20 s instead of stalling the suite."""
    def expired(signum, frame):
        raise AssertionError("the reader did not return within 20 s")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("module", [diagnose_bundle, checkpoint_report], ids=["diagnose_bundle", "checkpoint_report"])
@pytest.mark.parametrize("spoil, words", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_hostile_value_fails_naming_the_file_and_key_and_writes_nothing(tmp_path, deadline, module, spoil, words):
    root = _hostile(tmp_path, spoil)
    before = tree_checksums(root)
    result = fail_module(module, {"bundle": root})
    for word in words:
        assert word in result["msg"], (word, result["msg"])
    assert tree_checksums(root) == before


def test_the_healthy_bundle_passes_both_modules(tmp_path):
    root = _hostile(tmp_path, lambda root: None)
    assert run_module(diagnose_bundle, {"bundle": root})["changed"] is True
    assert run_module(checkpoint_report, {"bundle": root, "png": False})["changed"] is True


@pytest.mark.parametrize("text, words", [
    ("{not json", ["diagnosis.json", "not valid JSON"]),
    ("[1, 2, 3]", ["diagnosis.json", "mapping"]),
    ('{"gap_factor": NaN}', ["diagnosis.json", "gap_factor"]),
    ('{"clients": {"nfs2": {"max_slots": "many"}}}', ["diagnosis.json", "clients.nfs2.max_slots"]),
    ('{"network": "full"}', ["diagnosis.json", "network"]),
], ids=["syntax", "list", "nan", "words-for-a-list", "string-for-a-mapping"])
def test_garbage_diagnosis_json_is_named_in_the_error(tmp_path, text, words):
    root = _hostile(tmp_path, lambda root: None)
    with open(os.path.join(root, "diagnosis.json"), "w") as handle:
        handle.write(text)
    before = tree_checksums(root)
    result = fail_module(checkpoint_report, {"bundle": root, "png": False})
    for word in words:
        assert word in result["msg"], (word, result["msg"])
    assert tree_checksums(root) == before


def test_compare_to_bundle_is_read_by_the_same_rules(tmp_path):
    good = _hostile(tmp_path / "good", lambda root: None)
    bad = _hostile(tmp_path / "bad", _context(_context_text(window_seconds=".nan")))
    result = fail_module(checkpoint_report, {"bundle": good, "compare_to": bad, "png": False})
    assert CONTEXT in result["msg"] and "target.window_seconds" in result["msg"]


def test_a_json_file_that_does_not_parse_is_still_a_problem_not_a_failure(tmp_path):
    """Documented: an optional JSON file that is no JSON at all is listed and not used."""
    root = _hostile(tmp_path, _json_edit(PROBE, lambda doc: "{truncated"))
    result = run_module(diagnose_bundle, {"bundle": root, "write": False})
    rows = [row for row in result["diagnosis"]["evidence"] if row["signal"] == "unreadable bundle file"]
    assert len(rows) == 1 and PROBE in rows[0]["explanation"] and "not used" in rows[0]["explanation"]


def test_written_json_never_holds_nan(tmp_path, monkeypatch):
    """Whatever the arithmetic makes, diagnosis.json and report.json are strict JSON (allow_nan=False)."""
    root = _hostile(tmp_path, lambda root: None)
    real = diagnose_bundle.diagnose

    def with_nan(loaded, parallel=None):
        result = real(loaded, parallel)
        result["gap_factor"] = float("nan")
        return result
    monkeypatch.setattr(diagnose_bundle, "diagnose", with_nan)
    result = fail_module(diagnose_bundle, {"bundle": root})
    assert "diagnosis.json" in result["msg"] and not os.path.exists(os.path.join(root, "diagnosis.json"))

    real_metrics = checkpoint_report.report.bundle_metrics

    def metrics_with_inf(*args, **kwargs):
        metrics = real_metrics(*args, **kwargs)
        metrics["achieved_bytes_per_second"] = float("inf")
        return metrics
    monkeypatch.setattr(checkpoint_report.report, "bundle_metrics", metrics_with_inf)
    result = fail_module(checkpoint_report, {"bundle": root, "png": False})
    assert "report.json" in result["msg"] and not os.path.exists(os.path.join(root, "report.json"))


def _bundle_files(root):
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            if name == CONTEXT or name.endswith(".json"):
                yield os.path.join(dirpath, name)


def test_every_shipped_bundle_fits_the_schema():
    """The schema refuses nothing we write: every fixture bundle's context.yml and JSON files pass it."""
    checked = 0
    for path in _bundle_files(FIXTURES):
        if os.sep + "bundles" + os.sep not in path and os.sep + "captures" + os.sep not in path:
            continue
        name = os.path.basename(path)
        with open(path) as handle:
            text = handle.read()
        if name == CONTEXT:
            bundle_values.parse_yaml(text, path)
        elif name in bundle_values.JSON_SCHEMAS or name in bundle_values.HOST_SAMPLE_FILES:
            bundle_values.parse_json(text, path)
        checked += 1
    assert checked > 50


def test_the_yaml_loader_refuses_an_alias_in_no_time():
    with pytest.raises(bundle.BundleError) as raised:
        bundle_values.parse_yaml(BILLION_LAUGHS, CONTEXT)
    assert "alias" in str(raised.value) and CONTEXT in str(raised.value)


@pytest.mark.parametrize("value, words", [
    ({"target": {"window_seconds": math.nan}}, ["target.window_seconds", "nan"]),
    ({"canary": {"ranks": True}}, ["canary.ranks", "a number", "True"]),
    ({1: "x"}, ["key 1"]),
    ({"label": b"bytes"}, ["label", "bytes"]),
], ids=["nan", "bool-for-a-number", "int-key", "bytes"])
def test_check_names_the_key(value, words):
    with pytest.raises(bundle.BundleError) as raised:
        bundle_values.checked(value, CONTEXT)
    for word in words:
        assert word in str(raised.value)


def test_saved_stats_bundle_reads_an_old_context_yml_without_aliases(deadline):
    """saved_stats_bundle reads dest's context.yml (was it ours? which files did it write?) with the same parser."""
    from ansible_collections.ckptio.nfs.plugins.module_utils.paste import saved_files
    hostile = BILLION_LAUGHS + "saved: {written_by: %s, files: {clients/a/dstate.txt: x}}\n" % saved_files.WRITER
    assert saved_files.written_here(hostile) is False
    assert saved_files.stale_files(hostile, set()) == []
