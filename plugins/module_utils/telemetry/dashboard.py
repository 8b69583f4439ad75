# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Grafana dashboard for one checkpoint mount across the cluster, built from the collector's names.

Four questions, one row each, in the order the diagnosis asks them:
1. throughput against the target (the cluster's write rate on the mount, and the target line);
2. is the client's slot table the limit: queue time per WRITE against RTT per WRITE, per host;
3. how full the table is: requests in flight against the slot table's size, backlog, session waits;
4. which host sets the pace: each host's write rate, slowest first, and the server's threads.

Metric names come from telemetry/exposition.py and thresholds from diagnosis/signals.py, so the
panels cannot name a series the collector does not write. scripts/prometheus-rules.py writes the
JSON (prometheus/ckptio-nfs-dashboard.json) beside the rules; a unit test keeps them in step.
"""

from __future__ import annotations

import json

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals
from ansible_collections.ckptio.nfs.plugins.module_utils.telemetry import exposition

UID = "ckptio-nfs-checkpoint"
# The seed's target, 2.4 TB in 5 minutes (stats/rates.py): a dashboard variable users change.
SEED_TARGET_BYTES_PER_SECOND = 8000000000
MOUNT = 'mountpoint="$mountpoint"'
WINDOW = "$__rate_interval"


def _client(key):
    return exposition.CLIENT[key].name


def _server(key):
    return exposition.SERVER[key].name


def _rate(name, selector):
    return "rate(%s%s[%s])" % (name, "{%s}" % selector if selector else "", WINDOW)


def _panel(panel_id, title, description, targets, unit, grid, kind="timeseries", thresholds=None):
    refs = [dict(target, refId=chr(ord("A") + index), datasource={"type": "prometheus", "uid": "${datasource}"})
            for index, target in enumerate(targets)]
    defaults = {"unit": unit}
    if thresholds is not None:
        defaults["thresholds"] = {"mode": "absolute", "steps": [
            {"color": "green", "value": None}, {"color": "red", "value": thresholds}]}
        defaults["custom"] = {"thresholdsStyle": {"mode": "line"}}
    return {
        "id": panel_id, "type": kind, "title": title, "description": description,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": dict(zip(("x", "y", "w", "h"), grid)),
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "targets": refs,
    }


def dashboard():
    """The dashboard as Grafana's JSON model (schemaVersion 39), with datasource and mount point variables."""
    writing = 'direction="write",%s' % MOUNT
    write_op = 'op="WRITE",%s' % MOUNT
    panels = [
        _panel(1, "Checkpoint write throughput vs target",
               "The cluster's write rate on this mount (sum over hosts) against the target ($target_bytes_per_second): "
               "below it while the links sit idle is the bandwidth paradox.",
               [{"expr": "sum(%s)" % _rate(_client("bytes"), writing), "legendFormat": "all hosts"},
                {"expr": "vector($target_bytes_per_second)", "legendFormat": "target"}],
               "Bps", (0, 0, 24, 8)),
        _panel(2, "Queue vs RTT per WRITE",
               "Seconds a WRITE waited for an RPC slot (queue) and spent on the wire (RTT), per host. Queue above RTT "
               "(ratio >= %g) while writing: the client's RPC slots limit (alert CkptioNfsQueueDominatesRtt)."
               % signals.QUEUE_TO_RTT.threshold,
               [{"expr": "%s / %s" % (_rate(_client("queue"), write_op), _rate(_client("requests"), write_op)),
                 "legendFormat": "queue {{instance}}"},
                {"expr": "%s / %s" % (_rate(_client("rtt"), write_op), _rate(_client("requests"), write_op)),
                 "legendFormat": "RTT {{instance}}"}],
               "s", (0, 8, 12, 8)),
        _panel(3, "Requests in flight vs the slot table",
               "Requests holding a slot now against the table's size (sunrpc sysfs), per host; the average in flight "
               "from mountstats (req_u / sends) where sysfs is absent. At the size: the table is full.",
               [{"expr": _client("slots_allocated") + "{%s}" % MOUNT, "legendFormat": "allocated {{instance}}"},
                {"expr": _client("slot_table_size") + "{%s}" % MOUNT, "legendFormat": "table size {{instance}}"},
                {"expr": "%s / %s" % (_rate(_client("slots_used"), MOUNT), _rate(_client("sends"), MOUNT)),
                 "legendFormat": "average in flight {{instance}}"}],
               "short", (12, 8, 12, 8)),
        _panel(4, "Waiting for a slot",
               "Requests waiting for a transport slot (backlog) and tasks waiting for an NFSv4.1 session slot, per host. "
               "Above 0 during a checkpoint: the client's slots (or the session's) limit.",
               [{"expr": _client("backlog_queue") + "{%s}" % MOUNT, "legendFormat": "backlog {{instance}}"},
                {"expr": _client("session_waiters") + "{%s}" % MOUNT, "legendFormat": "session waits {{instance}}"}],
               "short", (0, 16, 12, 8)),
        _panel(5, "Retransmits per request",
               "Requests sent again per request, per host. Above %g: the network path (loss, MTU), which slot "
               "tuning does not fix (alert CkptioNfsRetransmits)." % signals.RETRANS_PER_OP.threshold,
               [{"expr": "%s / sum without(op) (%s)" % (_rate(_client("retransmits"), MOUNT),
                                                        _rate(_client("requests"), MOUNT)),
                 "legendFormat": "{{instance}}"}],
               "percentunit", (12, 16, 12, 8), thresholds=signals.RETRANS_PER_OP.threshold),
        _panel(6, "The pace-setting host: write rate per host, slowest first",
               "Each host's write rate on this mount over the dashboard's range; the slowest sets the checkpoint's "
               "end (the diagnosis's pace host).",
               [{"expr": "sort(sum by(instance) (%s))" % _rate(_client("bytes"), writing), "legendFormat": "{{instance}}",
                 "instant": True}],
               "Bps", (0, 24, 12, 8), kind="bargauge"),
        _panel(7, "nfsd: share of packets that found no idle thread",
               "1 - threads-woken / packets-arrived per server. At %g or more the server's threads limit "
               "(alert CkptioNfsServerThreadsStarved)." % signals.NO_IDLE_THREAD.threshold,
               [{"expr": "1 - %s / %s" % (_rate(_server("woken"), ""), _rate(_server("packets"), "")),
                 "legendFormat": "{{instance}}"}],
               "percentunit", (12, 24, 12, 8), thresholds=signals.NO_IDLE_THREAD.threshold),
    ]
    return {
        "uid": UID,
        "title": "ckptio.nfs: checkpoint mount",
        "description": "One NFS checkpoint mount across the cluster, from ckptio.nfs's textfile collector "
                       "(ckptio_nfs_*). Alert rules: prometheus/ckptio-nfs.rules.yml.",
        "tags": ["nfs", "checkpoint", "ckptio"],
        "schemaVersion": 39,
        "editable": True,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "30s",
        "templating": {"list": [
            {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"},
            {"name": "mountpoint", "type": "query", "label": "Checkpoint mount",
             "datasource": {"type": "prometheus", "uid": "${datasource}"},
             "query": {"query": "label_values(%s, mountpoint)" % _client("bytes"), "refId": "mounts"},
             "refresh": 2},
            {"name": "target_bytes_per_second", "type": "constant", "label": "Target (bytes/s)",
             "query": str(SEED_TARGET_BYTES_PER_SECOND), "hide": 0},
        ]},
        "annotations": {"list": [{
            "name": "ckptio alerts", "datasource": {"type": "prometheus", "uid": "${datasource}"}, "enable": True,
            "expr": 'ALERTS{alertstate="firing",alertname=~"CkptioNfs.*"}', "iconColor": "red",
            "titleFormat": "{{alertname}} ({{layer}})"}]},
        "panels": panels,
    }


def dashboard_text():
    """The dashboard file's text: sorted, indented JSON (Grafana imports it as it is)."""
    return json.dumps(dashboard(), indent=2, sort_keys=True) + "\n"
