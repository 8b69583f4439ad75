# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus as a source of bundles (issue 48), pure: the request checked before anything is sent, the windows
(given, or the last N write bursts of a range), the answers to ask for each, and a saved bundle's answers as the
in-memory bundle the one engine (diagnosis.diagnose) reads. The caller hands in `fetch(selector, start, end, step)`
-> the answer's text (host/http_get through the module), so nothing here does I/O.
"""

from __future__ import annotations

import collections
import re
import time

from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import capture
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle_values import BundleError
from ansible_collections.ckptio.nfs.plugins.module_utils.prometheus import queries, rows
from ansible_collections.ckptio.nfs.plugins.module_utils.prometheus import series as prom_series

Request = collections.namedtuple("Request", "url mount_point start end last range step label target")
OPTION = "ckptio_prometheus_%s"
NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def _option(name):
    return OPTION % name


def request(url, mount_point, start=None, end=None, last=None, range_text=None, step=None, label=None, now=None,
            checkpoint_bytes=None, window_seconds=None):
    """Request of the options, QueryError naming the option before any request is sent. checkpoint_bytes and
    window_seconds: the operator's target (both or neither), as for a canary (ckptio_checkpoint_bytes, ..._window_seconds)."""
    if not url:
        raise queries.QueryError("%s is required (http://HOST:9090)" % _option("url"))
    if not str(url).startswith(("http://", "https://")):
        raise queries.QueryError("%s must be an http:// or https:// URL, got %r" % (_option("url"), url))
    if not mount_point or not str(mount_point).startswith("/"):
        raise queries.QueryError("ckptio_mount_point must be the checkpoint mount's absolute path, got %r" % (mount_point,))
    given = start not in (None, "") or end not in (None, "")
    if given == (last not in (None, "")):
        raise queries.QueryError("give either %s and %s, or %s (the last N checkpoints)" % (_option("start"), _option("end"), _option("last")))
    target = _target(checkpoint_bytes, window_seconds)
    step = queries.duration(step if step not in (None, "") else queries.DEFAULT_STEP, _option("step"))
    now = time.time() if now is None else now
    if given:
        if start in (None, "") or end in (None, ""):
            raise queries.QueryError("%s and %s go together" % (_option("start"), _option("end")))
        first, second = _time(start, "start"), _time(end, "end")
        if second <= first:
            raise queries.QueryError("%s (%s) must be after %s (%s)" % (_option("end"), end, _option("start"), start))
        queries.grid(first, second, step)
        return Request(str(url).rstrip("/"), str(mount_point), first, second, None, None, step, label, target)
    count = _count(last)
    span = queries.duration(range_text if range_text not in (None, "") else queries.DEFAULT_RANGE, _option("range"))
    queries.grid(now - span, now, step)
    return Request(str(url).rstrip("/"), str(mount_point), now - span, now, count, span, step, label, target)


def _target(checkpoint_bytes, window_seconds):
    given = [value not in (None, "", 0, "0") for value in (checkpoint_bytes, window_seconds)]
    if not any(given):
        return None
    if not all(given):
        raise queries.QueryError("ckptio_checkpoint_bytes and ckptio_checkpoint_window_seconds go together")
    return (queries.duration(checkpoint_bytes, "ckptio_checkpoint_bytes"), queries.duration(window_seconds, "ckptio_checkpoint_window_seconds"))


def _time(value, name):
    try:
        return capture.parse_time(value, name)
    except capture.CaptureError as exc:
        raise queries.QueryError(str(exc).replace(capture.OPTION % name, _option(name)))


def _count(value):
    try:
        count = int(str(value))
    except ValueError:
        raise queries.QueryError("%s must be a whole number of checkpoints, got %r" % (_option("last"), value))
    if not 1 <= count <= queries.MAX_LAST:
        raise queries.QueryError("%s must be 1 to %d, got %r" % (_option("last"), queries.MAX_LAST, value))
    return count


def windows(req, fetch):
    """[context.yml prometheus.window] of the request: its own window, or its last N bursts (one query over the range)."""
    start, end = queries.grid(req.start, req.end, req.step)
    if req.last is None:
        # The window as given: the collector's runs around its edges place it (rows._Host), not the grid's last point.
        return [queries.window_block(req.start, req.end, req.step, "given")]
    selector = queries.burst_selector(req.mount_point)
    answer = prom_series.parse(fetch(selector, start, end, req.step), "burst search")
    found = queries.last_bursts(answer, req.last)
    # The collector's runs over the range (on the burst answer's hosts) move each burst's edges off the grid.
    runs = []
    for name, run_selector in queries.run_selectors(queries.instances({"burst": answer})):
        runs = prom_series.parse(fetch(run_selector, start, end, req.step), name)
    found = [queries.run_edged(burst, runs) for burst in found]
    return [queries.window_block(burst["start_at"], burst["end_at"], req.step, "burst",
                                 dict(burst, range_start_at=start, range_end_at=end, selector=selector)) for burst in found]


def answers(req, window, fetch):
    """([(name, selector)], {name: answer text}) of one window: our families first, node_exporter's on their hosts."""
    asked, texts = [], {}
    # The window with margins (queries.edge_margin, on the window's grid): the runs around its edges (rows._Host).
    margin = queries.edge_margin(req.step)
    start, end = window["start_at"] - margin, window["end_at"] + margin
    for name, selector in queries.client_selectors(req.mount_point) + queries.server_selectors():
        asked.append((name, selector))
        texts[name] = fetch(selector, start, end, req.step)
    found = queries.instances(queries.parse_answers(texts))
    if not any(name.startswith("client_") and prom_series.parse(text, name) for name, text in texts.items()):
        raise queries.QueryError("no %s series on %s in the window: is the collector on the clients, and the mount point right?"
                                 % ("ckptio_nfs_client_*", req.mount_point))
    for name, selector in queries.run_selectors(found) + queries.node_selectors(found):
        asked.append((name, selector))
        texts[name] = fetch(selector, start, end, req.step)
    return asked, texts


def context_of(req, window, asked):
    label = req.label or "prometheus-%s" % time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(window["start_at"]))
    target = req.target or (None, None)
    return queries.context_document(req.url, req.mount_point, label, window, asked, target[0], target[1])


def response_files(context):
    """[(name, relative file)] of a bundle's saved answers, from its context.yml; BundleError on a name it would not write."""
    block = context.get(queries.SOURCE)
    listed = block.get("queries") if isinstance(block, dict) else None
    if not isinstance(listed, list) or not listed:
        raise BundleError("context.yml: prometheus.queries must list the saved answers")
    files = []
    for item in listed:
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or not NAME.match(name) or item.get("file") != "%s/%s.json" % (queries.RESPONSES_DIR, name):
            raise BundleError("context.yml: prometheus.queries holds %r, not a query this collection writes" % (item,))
        files.append((name, item["file"]))
    return files


def bundle_of(context, texts):
    """The in-memory bundle of a saved bundle's answers ({name: text}): clients and servers as the engine's rows."""
    try:
        parsed = queries.parse_answers(texts)
    except prom_series.SeriesError as exc:
        raise BundleError(str(exc))
    window = rows.window_of(context)
    clients = rows.ClientRows(parsed, context.get("mount_point"), window)
    if not len(clients):
        raise BundleError("the saved answers hold no client series on %s" % context.get("mount_point"))
    return {"context": context, "clients": clients, "servers": rows.ServerViews(parsed, window), "problems": []}
