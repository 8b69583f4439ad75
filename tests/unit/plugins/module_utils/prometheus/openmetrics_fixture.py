# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""OpenMetrics text with timestamps of a fixture capture, made by our own exposition code (issue 48's tests).

Each client's mountstats_before.txt and mountstats_after.txt (real lab captures, tests/fixtures/captures/) go
through kernel_text's parser and telemetry/exposition.mount_samples as the textfile collector would have
exported them, stamped with the time of the host sample read with them (host_before.json / host_after.json);
the server's nfsd and pool_stats files through exposition.server_samples; node_exporter's node_cpu_seconds_total
(USER_HZ ticks / 100), node_network_*_bytes_total and node_disk_* (diskstats, as node_exporter's diskstats collector
scales it) from the same host samples. Each host is instance
"<host>:9100". `promtool tsdb create-blocks-from openmetrics` turns the text into a TSDB.
"""

from __future__ import annotations

import json
import os

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import host_evidence
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import iter_mountstats
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.nfsd_stats import parse_nfsd_stats, parse_pool_stats, parse_single_number
from ansible_collections.ckptio.nfs.plugins.module_utils.telemetry import exposition

USER_HZ = 100.0


def _read(path):
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        return handle.read()


def _sample(directory, name):
    text = _read(os.path.join(directory, name))
    return json.loads(text) if text else None


def _node_series(sample):
    """[(metric, labels, value)] node_exporter would export of a host sample: CPU seconds and link bytes."""
    found = []
    parsed = host_evidence.parse_proc_stat(sample.get("proc_stat") or "")
    for name, counts in sorted(parsed["cpus"].items()):
        for mode in host_evidence.CPU_STATES:
            found.append(("node_cpu_seconds_total", {"cpu": name[3:], "mode": mode}, counts[mode] / USER_HZ))
    for device, interface in sorted((sample.get("interfaces") or {}).items()):
        statistics = interface.get("statistics") or {}
        for metric, key in (("node_network_receive_bytes_total", "rx_bytes"), ("node_network_transmit_bytes_total", "tx_bytes")):
            if statistics.get(key) is not None:
                found.append((metric, {"device": device}, float(statistics[key])))
        if interface.get("speed_mbps"):
            found.append(("node_network_speed_bytes", {"device": device}, interface["speed_mbps"] * 1e6 / 8))
    for device, counts in sorted(host_evidence.parse_diskstats(sample.get("diskstats") or "").items()):
        for metric, key, scale in (("node_disk_reads_completed_total", "reads", 1), ("node_disk_read_bytes_total", "sectors_read", 512),
                                   ("node_disk_writes_completed_total", "writes", 1), ("node_disk_written_bytes_total", "sectors_written", 512),
                                   ("node_disk_write_time_seconds_total", "write_ms", 0.001), ("node_disk_io_time_seconds_total", "io_ticks_ms", 0.001)):
            found.append((metric, {"device": device}, counts[key] * scale))
    return found


def _ours(samples, families):
    return [(families[key].name, labels, float(value)) for key, labels, value in samples]


def host_points(capture, mount_point):
    """[(time, instance, metric, labels, value)] of every host of a capture directory, at its two samples."""
    points = []
    for host in sorted(os.listdir(os.path.join(capture, "clients"))):
        directory = os.path.join(capture, "clients", host)
        for when in ("before", "after"):
            sample = _sample(directory, "host_%s.json" % when)
            mounts = exposition.select_mounts(iter_mountstats(_read(os.path.join(directory, "mountstats_%s.txt" % when))), [mount_point])
            series = [item for mount in mounts for item in _ours(exposition.mount_samples(mount), exposition.CLIENT)]
            points += [(sample["time"], host, metric, labels, value) for metric, labels, value in series + _node_series(sample)]
    for host in sorted(os.listdir(os.path.join(capture, "servers"))):
        directory = os.path.join(capture, "servers", host)
        for when in ("before", "after"):
            sample = _sample(directory, "host_%s.json" % when)
            pool = _read(os.path.join(directory, "pool_stats_%s.txt" % when))
            threads = _read(os.path.join(directory, "threads.txt"))
            series = _ours(exposition.server_samples(parse_nfsd_stats(_read(os.path.join(directory, "nfsd_%s.txt" % when))),
                                                     parse_pool_stats(pool) if pool else None,
                                                     parse_single_number(threads) if threads else None), exposition.SERVER)
            points += [(sample["time"], host, metric, labels, value) for metric, labels, value in series + _node_series(sample)]
    return points


def _label_text(labels):
    return ",".join('%s="%s"' % (key, exposition.escape_label(value)) for key, value in sorted(labels.items()))


def openmetrics(points):
    """The OpenMetrics text: one family at a time (the format wants a family's samples together), each series' samples
    in time order, no TYPE lines (every family unknown: promtool then takes the names as they are), # EOF last."""
    lines = []
    for metric in sorted(set(point[2] for point in points)):
        mine = sorted((point for point in points if point[2] == metric), key=lambda point: (point[1], _label_text(point[3]), point[0]))
        for time, host, _metric, labels, value in mine:
            lines.append("%s{%s} %r %.3f" % (metric, _label_text(dict(labels, instance="%s:9100" % host, job="node")), value, time))
    return "\n".join(lines + ["# EOF"]) + "\n"


def window(points):
    """(start, end) on whole seconds where every host's first sample is the latest at start and its last the latest at
    end: the latest first sample (rounded up) and the latest last sample (rounded up); each host's samples bracket
    the window, as Prometheus' lookback shows them at those two times."""
    firsts, lasts = {}, {}
    for time, host, _metric, _labels, _value in points:
        firsts[host] = min(firsts.get(host, time), time)
        lasts[host] = max(lasts.get(host, time), time)
    start, end = float(int(max(firsts.values())) + 1), float(int(max(lasts.values())) + 1)
    assert start <= min(lasts.values()), "a host's last sample comes before another's first"
    return start, end
