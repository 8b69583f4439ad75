# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one parser of the Prometheus HTTP API's `query_range` answer (issue 48), and what a counter did over it. Pure.

The answer (prometheus.io/docs/prometheus/latest/querying/api/#range-queries) is
{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {labels}, "values": [[unix time,
"value"], ...]}]}}. Anything else - an error answer, another result type, a value that is no finite number, more
than MAX_BYTES or MAX_POINTS - is refused with a SeriesError naming the query, never read in part.

Each point of a range query is the series' last sample at or before that step's time (within the server's
lookback, 5 min by default): the figures below rest on those points, at `step` seconds apart, not on the scrapes'
own times.
"""

from __future__ import annotations

import collections
import json
import math

# A checkpoint window of a few hours at a 15 s step over a thousand hosts' series stays far below this; a bigger
# answer is more than the diagnosis reads (and the bundle keeps it verbatim).
MAX_BYTES = 64 * 1024 * 1024
MAX_POINTS = 5 * 1000 * 1000

Series = collections.namedtuple("Series", "query labels points")
Series.__doc__ = """One series of an answer: the query's name, its labels ({name: value}), points ((time, value), ...)."""

Change = collections.namedtuple("Change", "first last increase reset seconds")
Change.__doc__ = """A counter over a window: first/last point, last - first, reset (it went down between two points:
a counter reset or a remount; the increase is then None, never summed across it), seconds between the points."""


class SeriesError(ValueError):
    """An answer this parser does not read; the message names the query."""


def _refuse(name, why):
    raise SeriesError("Prometheus answer to %s: %s" % (name, why))


def _value(text, name):
    try:
        value = float(text)
    except (TypeError, ValueError):
        _refuse(name, "a value is not a number: %r" % (text,))
    if not math.isfinite(value):
        _refuse(name, "a value is %s: not a counter or gauge reading this parser takes" % text)
    return value


def _points(values, name):
    if not isinstance(values, list):
        _refuse(name, "a series' values is not a list")
    points = []
    for pair in values:
        if not isinstance(pair, list) or len(pair) != 2 or isinstance(pair[0], bool) or not isinstance(pair[0], (int, float)):
            _refuse(name, "a point is not [time, \"value\"]: %r" % (pair,))
        if points and pair[0] <= points[-1][0]:
            _refuse(name, "the points' times do not rise")
        points.append((float(pair[0]), _value(pair[1], name)))
    return tuple(points)


def parse(text, name):
    """[Series] of a query_range answer's text; SeriesError naming the query for anything it cannot read."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if len(text) > MAX_BYTES:
        _refuse(name, "%d bytes, more than the %d this reader takes" % (len(text), MAX_BYTES))
    try:
        document = json.loads(text)
    except ValueError as exc:
        _refuse(name, "not JSON (%s)" % exc)
    if not isinstance(document, dict):
        _refuse(name, "not a JSON object")
    if document.get("status") != "success":
        _refuse(name, "status %r: %s %s" % (document.get("status"), document.get("errorType") or "", document.get("error") or ""))
    data = document.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        _refuse(name, "not a range query's matrix (resultType %r)" % (data.get("resultType") if isinstance(data, dict) else None,))
    series, count = [], 0
    for item in data["result"]:
        labels = item.get("metric") if isinstance(item, dict) else None
        if not isinstance(labels, dict) or not all(isinstance(value, str) for value in labels.values()):
            _refuse(name, "a series without a label set")
        points = _points(item.get("values"), name)
        count += len(points)
        if count > MAX_POINTS:
            _refuse(name, "more than %d points" % MAX_POINTS)
        series.append(Series(name, dict(labels), points))
    return series


def within(points, start, end):
    """The points with start <= time <= end."""
    return tuple(point for point in points if start <= point[0] <= end)


def change(points):
    """Change of a counter over its points (at least two), None with fewer."""
    if len(points) < 2:
        return None
    reset = any(later[1] < earlier[1] for earlier, later in zip(points, points[1:]))
    first, last = points[0], points[-1]
    return Change(first, last, None if reset else last[1] - first[1], reset, last[0] - first[0])


def fell(points):
    """True when a gauge that only rises while nothing restarts (a mount's age) went down between two points."""
    return any(later[1] < earlier[1] for earlier, later in zip(points, points[1:]))
