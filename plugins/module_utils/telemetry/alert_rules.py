# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus alert rules that fire on the conditions the diagnosis reads, with its thresholds.

The thresholds come from diagnosis/signals.py (the one table) and the metric names from
telemetry/exposition.py, so an alert cannot disagree with the diagnosis or name a series the
collector does not write. scripts/prometheus-rules.py writes the rules file users load
(prometheus/ckptio-nfs.rules.yml); test_alert_rules.py fails when that file and this one differ,
and runs `promtool check rules` and `promtool test rules` on it.

Each alert's annotations name the layer (the diagnosis's layer names) and the first action.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals
from ansible_collections.ckptio.nfs.plugins.module_utils.telemetry import exposition

GROUP = "ckptio-nfs"
# The rate window: at least four scrapes at node_exporter's usual 15 s interval, and short
# enough that a 5-minute checkpoint fills it (the seed's target: 2.4 TB in 5 minutes).
RATE_WINDOW = "2m"
# How long a condition must hold: half a checkpoint's target window, so one burst's start does not page.
HOLD = "2m"
# The collector writes every 15 s by default; four missed runs is a stopped timer, not a slow one.
STALE_SECONDS = 60
# Below this many checkpoint bytes per second a mount is not writing a checkpoint: its ratios are noise.
WRITING_BYTES_PER_SECOND = 1e6
# Series of one mount match on every label but the ones that split a mount's figures, so labels a
# user's scrape adds (job, cluster, ...) are kept and matched, never dropped.
SPLIT = "op, direction"


def _name(key, families=None):
    """A family's metric name (families: exposition.CLIENT unless given)."""
    return (exposition.CLIENT if families is None else families)[key].name


def _rate(key, selector="", families=None):
    return "rate(%s%s[%s])" % (_name(key, families), selector, RATE_WINDOW)


WRITE = '{op="WRITE"}'


def _writing():
    return "%s > %g" % (_rate("bytes", '{direction="write"}'), WRITING_BYTES_PER_SECOND)


def _on_mount(left, right):
    return "(%s) and ignoring(%s) (%s)" % (left, SPLIT, right)


def rules():
    """The rule groups, as the dict Prometheus' rules file holds."""
    queue = signals.QUEUE_TO_RTT
    floor_seconds = signals.QUEUE_MS_FLOOR.threshold / 1000.0
    queue_per_request = "%s / %s" % (_rate("queue", WRITE), _rate("requests", WRITE))
    queue_over_rtt = "%s / %s" % (_rate("queue", WRITE), _rate("rtt", WRITE))
    no_idle = signals.NO_IDLE_THREAD
    retrans = signals.RETRANS_PER_OP
    woken = _rate("woken", families=exposition.SERVER)
    packets = _rate("packets", families=exposition.SERVER)
    alerts = [
        _alert(
            "CkptioNfsQueueDominatesRtt",
            _on_mount("(%s) >= %g and (%s) >= %g" % (queue_over_rtt, queue.threshold, queue_per_request, floor_seconds),
                      _writing()),
            "client_rpc_slots", "warning",
            "WRITEs on {{ $labels.mountpoint }} ({{ $labels.instance }}) wait longer for an RPC slot than on the wire",
            "Queue time per WRITE is {{ $value | humanize }} times its RTT while the mount writes (signals.py %s >= %g, "
            "%s >= %g ms). Layer: client RPC slots. First action: raise the slot count (sunrpc slot table on v3/v4.0, "
            "the server's session slots on v4.1+) or nconnect; run ckptio.nfs.validate to prove it."
            % (queue.name, queue.threshold, signals.QUEUE_MS_FLOOR.name, signals.QUEUE_MS_FLOOR.threshold)),
        _alert(
            "CkptioNfsSlotTableFull",
            _on_mount("(%s >= %s > 0) and %s > 0" % (
                _name("slots_allocated"), _name("slot_table_size"), _name("backlog_queue")), _writing()),
            "client_rpc_slots", "warning",
            "The RPC slot table of {{ $labels.mountpoint }} ({{ $labels.instance }}) is full",
            "The transports serving this mount allocated every slot and requests wait for one while it writes (sunrpc sysfs "
            "num_reqs = max_num_slots, backlog_q_len > 0). Layer: client RPC slots, unless the reply wait dominates "
            "(ckptio_nfs_client_rpc_pending_queue_length high, backlog empty: the server). First action: more slots or nconnect."),
        _alert(
            "CkptioNfsSessionSlotWaits",
            "%s > 0" % _name("session_waiters"),
            "client_rpc_slots", "warning",
            "RPCs on {{ $labels.mountpoint }} ({{ $labels.instance }}) wait for an NFSv4.1 session slot",
            "{{ $value }} tasks wait on the 'ForeChannel Slot table' queue (debugfs). Layer: client RPC slots (the "
            "session's slot count, set by the server). First action: raise the server's session slots; nconnect does not help."),
        _alert(
            "CkptioNfsServerThreadsStarved",
            "(1 - %s / %s) >= %g and %s > 0" % (woken, packets, no_idle.threshold, packets),
            "server_threads", "warning",
            "nfsd on {{ $labels.instance }}: most requests find no idle thread",
            "{{ $value | humanizePercentage }} of arriving packets found no idle nfsd thread (signals.py %s >= %g). "
            "Layer: server threads. First action: raise nfsd threads (ckptio.nfs.nfsd_threads)."
            % (no_idle.name, no_idle.threshold)),
        _alert(
            "CkptioNfsRetransmits",
            _on_mount("%s / sum without(op) (%s) >= %g" % (_rate("retransmits"), _rate("requests"), retrans.threshold),
                      _writing()),
            "network", "warning",
            "RPCs on {{ $labels.mountpoint }} ({{ $labels.instance }}) are being retransmitted",
            "{{ $value | humanizePercentage }} of requests were sent again (signals.py %s >= %g): over TCP only after a "
            "timeout or a lost connection. Layer: network (loss, MTU, a server that stopped answering). First action: "
            "check the path's retransmits and drops; tuning slots will not help." % (retrans.name, retrans.threshold)),
        _alert(
            "CkptioNfsCollectorStale",
            "time() - %s > %d" % (exposition.COLLECTOR["last_run"].name, STALE_SECONDS),
            "window", "info",
            "The ckptio NFS collector on {{ $labels.instance }} stopped writing",
            "Its figures are stale: no alert above can fire for this host. Check the ckptio-nfs-metrics timer.",
            hold="1m"),
    ]
    return {"groups": [{"name": GROUP, "rules": alerts}]}


def _alert(name, expr, layer, severity, summary, description, hold=HOLD):
    return {
        "alert": name,
        "expr": expr,
        "for": hold,
        "labels": {"severity": severity, "layer": layer},
        "annotations": {"summary": summary, "description": description},
    }


def rules_text():
    """The rules file's text (controller side: PyYAML comes with ansible-core); block style, keys in rule order,
    long expressions folded at 110 columns (a folded plain scalar reads back as the same one-line string)."""
    import yaml  # pylint: disable=import-outside-toplevel

    header = ("# Prometheus alert rules of ckptio.nfs, written by scripts/prometheus-rules.py from\n"
              "# plugins/module_utils/telemetry/alert_rules.py (thresholds: diagnosis/signals.py). Do not edit.\n")

    class IndentedDumper(yaml.SafeDumper):  # pylint: disable=too-many-ancestors
        """Lists indented under their key, as yamllint (ansible-lint's yaml rule) wants them."""

        def increase_indent(self, flow=False, indentless=False):
            return super().increase_indent(flow, False)

    return header + yaml.dump(rules(), Dumper=IndentedDumper, sort_keys=False, default_flow_style=False, width=110,
                              allow_unicode=False)
