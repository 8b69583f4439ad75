"""One target rate and one quantile for every path (issue 43): report.md and diagnosis.md read the same p10."""
from __future__ import annotations

import math

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import markdown
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import rates
from ansible_collections.ckptio.nfs.plugins.module_utils.report import report

MB = 1e6


def _client(rate):
    return {"write_mb_per_second": rate, "write_avg_rtt_ms": 1.0, "write_avg_exe_ms": 2.0, "write_avg_queue_ms": 0.5,
            "backlog_per_send": 0.0, "nfs_version": "4.1", "nconnect": 4, "wsize": 1048576, "write_ops": 10, "max_slots": 4}


def test_nearest_rank_is_the_textbook_rule():
    values = [100.0 * step for step in range(1, 11)]
    assert rates.nearest_rank(values, 0.1) == 100.0
    assert rates.nearest_rank(values, 0.5) == 500.0
    assert rates.nearest_rank(values, 0.9) == 900.0
    assert rates.nearest_rank(values, 0.0) == 100.0
    assert rates.nearest_rank(values, 1.0) == 1000.0
    assert rates.nearest_rank([7.0], 0.1) == 7.0


def test_report_and_diagnosis_markdown_give_the_same_p10_of_the_same_hosts():
    # 20 hosts at 100, 200, ... 2000 MB/s: the nearest-rank p10 is the 2nd value (200). report.py
    # rounded 0.1 x 19 up to index 2 (300) while diagnosis.md took 200: the same hosts, two p10s.
    values = [100.0 * step for step in range(1, 21)]
    rows = [{"host": "h%02d" % index, "throughput_bytes_per_second": value * MB} for index, value in enumerate(values)]
    summary = report.host_distribution(rows)
    assert summary["mb_per_second"]["p10"] == 200.0
    table = markdown._client_lines(dict(("h%02d" % index, _client(value)) for index, value in enumerate(values)))
    row = next(line for line in table if line.startswith("| WRITE MB/s |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert float(cells[2]) == summary["mb_per_second"]["p10"]


def test_target_rate_is_bytes_over_window_or_none():
    assert rates.target_rate(2.4e12, 300) == pytest.approx(8e9)
    assert rates.target_rate(None, 300) is None
    assert rates.target_rate(2.4e12, None) is None
    assert rates.target_rate(2.4e12, 0) is None
    assert rates.target_rate("1000", "10") == 100.0
    assert rates.target_rate(math.inf, 10) is None
    assert rates.target_rate(10, math.nan) is None


def test_restore_verdict_is_decided_once():
    assert rates.restore_verdict(achieved=5.0, target=4.0, bad_blocks=0) == "meets_target"
    assert rates.restore_verdict(achieved=3.0, target=4.0, bad_blocks=0) == "below_target"
    assert rates.restore_verdict(achieved=None, target=4.0, bad_blocks=0) == "unmeasured"
    assert rates.restore_verdict(achieved=3.0, target=None, bad_blocks=0) == "no_target"
    assert rates.restore_verdict(achieved=5.0, target=4.0, bad_blocks=2) == "failed_verification"
