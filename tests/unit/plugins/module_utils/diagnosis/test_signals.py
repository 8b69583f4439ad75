"""One table of signals for a bundle and a paste (issue 43): no threshold written twice, no rule written twice."""
from __future__ import annotations

import ast
import os

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import client, signals
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.evidence import Evidence
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.network import SendFinding
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.verdict import LAYERS
from ansible_collections.ckptio.nfs.plugins.module_utils.paste import readings

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE_UTILS = os.path.join(HERE, *([os.pardir] * 5), "plugins", "module_utils")
# The files that judge figures: a bundle's layers and a paste's readers.
JUDGES = ["diagnosis/%s.py" % name for name in (
    "access", "client", "cpu", "metadata_storm", "mount_state", "network", "network_loss", "pace_host", "server", "verdict",
    "diagnose", "run")] + ["paste/%s.py" % name for name in (
        "readings", "partial", "thresholds", "net_capture", "disk_stats", "server_stats", "benchmarks", "config_texts",
        "text_figures", "training_log", "training_lines", "hangs", "nfsslower", "ss_sockets", "io_errors", "ganesha", "mount_errors")]
# Module-level numbers in those files that are no threshold: units, formats, sizes of a list shown.
NOT_THRESHOLDS = {"HEADER_BYTES", "DEFAULT_MTU", "MIB", "NAMED", "WRITE_SIZE_FOR_LITTLE", "LITTLE_RTT_MS",
                  "PRACTICAL_LINK_EFFICIENCY", "PARALLEL_CLIENTS", "CLIENT_CHUNK",
                  # paste/text_figures.py: how much of a line or a word is read (hostile input), not a threshold
                  "MAX_LINE", "MAX_NUMBER"}


def _numbers(node):
    return [item for item in ast.walk(node) if isinstance(item, ast.Constant) and isinstance(item.value, (int, float))
            and not isinstance(item.value, bool)]


def _is_count(node):
    """len(...) compared with a small number counts items; it is no threshold."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"


@pytest.mark.parametrize("name", JUDGES)
def test_no_threshold_literal_in_a_layer_or_a_paste_reader(name):
    tree = ast.parse(open(os.path.join(MODULE_UTILS, name)).read())
    found = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and _numbers(node.value):
            names = [target.id for target in node.targets if isinstance(target, ast.Name)]
            if not set(names) <= NOT_THRESHOLDS:
                found.append("line %d: %s" % (node.lineno, ast.unparse(node)))
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left] + list(node.comparators)
            if any(_is_count(side) for side in sides):
                continue
            for side in sides:
                if isinstance(side, ast.Constant) and side.value not in (0, 1, None, True, False) and \
                        isinstance(side.value, (int, float)):
                    found.append("line %d: %s" % (node.lineno, ast.unparse(node)))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            for side in (node.left, node.right):
                # a factor such as 1.05 x the checkpoint is a margin, i.e. a threshold; units (100, 1000, 1e6, 8) are not
                if isinstance(side, ast.Constant) and isinstance(side.value, float) and side.value not in (
                        0.0, 1.0, 2.0, 8.0, 100.0, 1000.0, 1e3, 1e6, 1e9, 0.5):
                    found.append("line %d: %s" % (node.lineno, ast.unparse(node)))
    assert not found, "threshold literals outside diagnosis/signals.py in %s: %s" % (name, found)


def test_every_signal_says_what_it_measures_its_unit_layer_and_source():
    names = set()
    for signal in signals.SIGNALS:
        assert signal.name and signal.name not in names
        names.add(signal.name)
        assert signal.measures and signal.unit and signal.source, signal
        assert signal.layer in LAYERS + ("window",), signal
        assert signal.comparison in (">=", "<", "<="), signal
    assert len(signals.SIGNALS) >= 40


def _write(queue, rtt):
    return {"ops": 100, "avg_queue_ms": queue, "avg_rtt_ms": rtt, "avg_exe_ms": queue + rtt}


def _bundle_crossed(queue, rtt):
    evidence = Evidence()
    figures = {"write": _write(queue, rtt), "backlog_per_send": 0.0, "sessions": True, "versions": ["4.1"],
               "session_grant": {"text": "-"}}
    client.client_rpc_slots_layer(evidence, [], figures, SendFinding(None, False))
    return next(row for row in evidence.items if row["signal"] == "WRITE avg queue / avg RTT")["crossed"]


def _paste_crossed(queue, rtt):
    reading = {"file": "f", "kind": "nfsiostat", "taken_for": "t", "evidence": [], "suspects": [], "layers": [], "notes": []}
    figures = {"ops": 100, "avg_rtt_ms": rtt, "avg_exe_ms": queue + rtt, "avg_queue_ms": queue, "retrans": None, "ops_count": 100}
    readings.read_op(reading, "/mnt", "WRITE", figures)
    return reading["evidence"][0]["crossed"]


@pytest.mark.parametrize("queue, rtt", [(20.0, 20.0), (20.0, 19.9), (20.0, 20.1), (9.99, 1.0), (10.0, 1.0), (10.0, 10.0)])
def test_a_bundle_and_a_paste_apply_one_queue_rule(queue, rtt):
    # queue == RTT was "dominates" for a bundle (>=, diagnosis/client.py) and not for a paste (>, paste/readings.py).
    assert _bundle_crossed(queue, rtt) == _paste_crossed(queue, rtt) == signals.queue_dominates(queue, rtt)


def test_diagnosis_json_has_one_shape_for_a_bundle_and_a_paste():
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import shape
    from ansible_collections.ckptio.nfs.plugins.module_utils.paste import partial
    reading = readings.read_file("nfsiostat.txt", "")
    assert partial.partial_diagnosis([reading]) is None
    with pytest.raises(ValueError, match="missing .*why_not"):
        shape.checked(dict((key, None) for key in shape.COMMON + ("mounts", "pace", "scope")))
    with pytest.raises(ValueError, match="unknown .*mounts"):
        shape.checked(dict((key, None) for key in shape.COMMON + ("partial", "mounts")), partial=True)
    assert shape.checked(dict((key, None) for key in shape.COMMON + shape.BUNDLE + ("paths",)))


def test_a_paste_with_lost_requests_does_not_suspect_the_storage_for_its_slow_rtt():
    # The bundle's rule (issue 43): measured loss explains an inflated RTT before the server's storage can.
    from ansible_collections.ckptio.nfs.plugins.module_utils.paste import partial
    reading = {"file": "nfsiostat.txt", "kind": "nfsiostat", "taken_for": "nfsiostat", "evidence": [], "suspects": [],
               "layers": [], "notes": [], "tells_nothing": None, "window": None, "can_show": "-", "repairs": []}
    figures = {"ops": 1000, "avg_rtt_ms": 400.0, "avg_exe_ms": 402.0, "avg_queue_ms": 2.0, "retrans": 50, "ops_count": 1000}
    readings.read_op(reading, "/mnt", "WRITE", figures)
    suspect = partial.suspected([reading])
    assert suspect["layer"] == "network"
    assert "server_storage" not in suspect["contributing"]
    assert any("retransmissions explain" in reason for reason in suspect["confidence_reasons"])
