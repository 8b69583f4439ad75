"""The alert rules: generated from the diagnosis's thresholds, accepted and tested by promtool."""
from __future__ import annotations

import os
import re
import subprocess

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals, verdict
from ansible_collections.ckptio.nfs.plugins.module_utils.telemetry import alert_rules, exposition

from .test_exposition import promtool_path

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "..")
RULES = os.path.join(ROOT, "prometheus", "ckptio-nfs.rules.yml")
RULES_TEST = os.path.join(ROOT, "prometheus", "ckptio-nfs.rules.test.yml")


def _alerts():
    return alert_rules.rules()["groups"][0]["rules"]


def test_the_rules_file_is_what_the_code_writes():
    with open(RULES, encoding="utf-8") as stream:
        assert stream.read() == alert_rules.rules_text(), "run scripts/prometheus-rules.py"


def test_every_metric_an_alert_reads_is_one_the_collector_writes():
    written = set()
    for families in (exposition.CLIENT, exposition.SERVER, exposition.COLLECTOR):
        written.update(family.name for family in families.values())
    for alert in _alerts():
        read = set(re.findall(r"\b(ckptio_nfs_\w+)", alert["expr"]))
        assert read and read <= written, (alert["alert"], read - written)


def test_every_alert_names_a_layer_of_the_diagnosis_and_an_action():
    for alert in _alerts():
        assert alert["labels"]["layer"] in tuple(verdict.LAYERS) + ("window",), alert["alert"]
        assert "action" in alert["annotations"]["description"] or alert["labels"]["layer"] == "window"


def test_the_thresholds_are_the_diagnosis_thresholds():
    exprs = {alert["alert"]: alert["expr"] for alert in _alerts()}
    assert ">= %g" % signals.QUEUE_TO_RTT.threshold in exprs["CkptioNfsQueueDominatesRtt"]
    assert ">= %g" % (signals.QUEUE_MS_FLOOR.threshold / 1000.0) in exprs["CkptioNfsQueueDominatesRtt"]
    assert ">= %g" % signals.NO_IDLE_THREAD.threshold in exprs["CkptioNfsServerThreadsStarved"]
    assert ">= %g" % signals.RETRANS_PER_OP.threshold in exprs["CkptioNfsRetransmits"]


def test_promtool_checks_the_rules():
    result = subprocess.run([promtool_path(), "check", "rules", RULES], capture_output=True, text=True, check=False,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_unit_tests_fire_each_alert_and_only_where_the_condition_holds():
    result = subprocess.run([promtool_path(), "test", "rules", RULES_TEST], capture_output=True, text=True,
                            check=False, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    with open(RULES_TEST, encoding="utf-8") as stream:
        tested = set(re.findall(r"alertname: (\w+)", stream.read()))
    assert tested == {alert["alert"] for alert in _alerts()}
