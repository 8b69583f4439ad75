"""The Grafana dashboard: generated from the collector's names, every query valid PromQL."""
from __future__ import annotations

import json
import os
import re
import subprocess

from ansible_collections.ckptio.nfs.plugins.module_utils.telemetry import dashboard, exposition

from .test_exposition import promtool_path

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "..")
DASHBOARD = os.path.join(ROOT, "prometheus", "ckptio-nfs-dashboard.json")
# Grafana's variables as a user's selection would fill them.
VARIABLES = {"$mountpoint": "/ckpt", "$__rate_interval": "1m", "$target_bytes_per_second": "8e9"}


def _exprs():
    model = dashboard.dashboard()
    exprs = [target["expr"] for panel in model["panels"] for target in panel["targets"]]
    return exprs + [annotation["expr"] for annotation in model["annotations"]["list"]]


def test_the_dashboard_file_is_what_the_code_writes():
    with open(DASHBOARD, encoding="utf-8") as stream:
        assert json.load(stream) == json.loads(dashboard.dashboard_text()), "run scripts/prometheus-rules.py"


def test_every_panel_reads_series_the_collector_writes():
    written = set()
    for families in (exposition.CLIENT, exposition.SERVER, exposition.COLLECTOR):
        written.update(family.name for family in families.values())
    read = set()
    for expr in _exprs():
        read.update(re.findall(r"\b(ckptio_nfs_\w+)", expr))
    assert read and read <= written, read - written


def test_every_query_is_valid_promql(tmp_path):
    # promtool has no offline query parser: each query becomes a recording rule, which it parses.
    lines = ["groups:", "- name: dashboard", "  rules:"]
    for index, expr in enumerate(_exprs()):
        for name, value in VARIABLES.items():
            expr = expr.replace(name, value)
        lines.append("  - record: dashboard:query_%d" % index)
        lines.append("    expr: %s" % json.dumps(expr))
    rules = tmp_path / "dashboard.rules.yml"
    rules.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = subprocess.run([promtool_path(), "check", "rules", str(rules)], capture_output=True, text=True,
                            check=False, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_panels_do_not_overlap():
    cells = set()
    for panel in dashboard.dashboard()["panels"]:
        grid = panel["gridPos"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, panel["title"]
                cells.add((x, y))
