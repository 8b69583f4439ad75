#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: prometheus_bundle
short_description: Build a bundle of a past checkpoint from Prometheus, for the same diagnosis as a canary's
version_added: 0.7.0
description:
  - Reads the series the collection's textfile collector exported (C(ckptio_nfs_client_*), C(ckptio_nfs_server_*)) and
    node_exporter's own (CPU, links, TCP loss, disks) from the Prometheus HTTP API (C(/api/v1/query_range), GET only),
    over a window given by O(start) and O(end), or over each of the last O(last) checkpoints, found as write bursts of
    C(ckptio_nfs_client_bytes_total{direction="write"}) in the O(range) before now.
  - Writes one bundle directory a window under O(dest) (C(context.yml) whose C(source) is V(prometheus), with the URL, every query,
    the window and what it rests on; C(prometheus/<query>.json) the API's answers verbatim, one file a query). The
    bundle is diagnosed like any other with M(ckptio.nfs.diagnose_bundle), offline, again and again (docs/capture-bundle.md).
  - Raw selectors only, asked with a margin of max(4 steps, 60 s) around each window, with the collector's own run time
    (C(ckptio_nfs_collector_last_run_timestamp_seconds)); the increases are taken in Python between the collector's
    runs around the window's edges (docs/capture-bundle.md). A counter that went down or a mount age that fell (a
    remount) excludes that client, never averaged over.
  - Every option is checked before any request is sent; a wrong one fails naming the option.
  - Runs on the controller (a play with C(hosts) set to C(localhost)).
author:
  - ckptio.nfs contributors (@ckptio)
options:
  url:
    description: The Prometheus server's base URL (V(http://prometheus:9090)); http or https; credentials in it are refused.
    type: str
    required: true
  mount_point:
    description: The checkpoint mount point, as the collector labels it (C(mountpoint)).
    type: str
    required: true
  start:
    description: The window's start, RFC 3339 with a zone (V(2026-12-01T03:00:00Z)) or epoch seconds; with O(end).
    type: str
  end:
    description: The window's end, as O(start).
    type: str
  last:
    description: Diagnose the last N checkpoints instead, found as write bursts in O(range) before now (1 to 100).
    type: int
  range:
    description: How far back O(last) looks, seconds or with a unit (V(6h), V(90m), V(2d)).
    type: str
    default: 6h
  step:
    description:
      - The grid of the answers, seconds or with a unit; normally the scrape interval. A checkpoint found with O(last)
        is found on this grid; its edges are then the collector's runs around its writes (the grid's without them).
    type: str
    default: 15s
  label:
    description: The bundles' label (their directory name under O(dest)); default C(prometheus-<window start, UTC>).
    type: str
  checkpoint_bytes:
    description: Your checkpoint's size in bytes, the target's first half (with O(window_seconds)); without both every
      figure is reported and none judged against a target.
    type: int
  window_seconds:
    description: The seconds the checkpoint may take, the target's second half (with O(checkpoint_bytes)).
    type: float
  dest:
    description: The directory the bundles are written under (created 0755 when missing).
    type: path
    required: true
  timeout:
    description: Seconds each HTTP request may take.
    type: float
    default: 30
extends_documentation_fragment:
  - ckptio.nfs.attributes
attributes:
  check_mode:
    support: full
    details: Sends the queries (GET only) and returns the bundles that would be written; writes nothing.
  diff_mode:
    support: full
    details: Lists the files that would be written or changed.
seealso:
  - module: ckptio.nfs.diagnose_bundle
"""

EXAMPLES = r"""
- name: Bundle last night's checkpoint from Prometheus
  ckptio.nfs.prometheus_bundle:
    url: http://prometheus:9090
    mount_point: /mnt/ckpt
    start: "2026-12-01T03:00:00Z"
    end: "2026-12-01T03:20:00Z"
    dest: /srv/bundles
  register: from_prometheus
  delegate_to: localhost

- name: The last 3 checkpoints of the past 12 hours
  ckptio.nfs.prometheus_bundle:
    url: http://prometheus:9090
    mount_point: /mnt/ckpt
    last: 3
    range: 12h
    dest: /srv/bundles
  delegate_to: localhost
"""

RETURN = r"""
bundles:
  description: The bundle directories, one a window, oldest first.
  returned: always
  type: list
  elements: str
windows:
  description: Each bundle's window as in its C(context.yml) (C(kind) given or burst, C(start_at), C(end_at), C(seconds),
    C(step), C(rests_on)).
  returned: always
  type: list
  elements: dict
queries:
  description: The selectors asked, C({name, selector, file}).
  returned: always
  type: list
  elements: dict
changed_files:
  description: The files written (in check mode, that would be).
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle_part
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle import CONTEXT_FILE
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read, file_write, http_get
from ansible_collections.ckptio.nfs.plugins.module_utils.prometheus import queries, series, source

ARGUMENT_SPEC = dict(
    url=dict(type="str", required=True),
    mount_point=dict(type="str", required=True),
    start=dict(type="str"),
    end=dict(type="str"),
    last=dict(type="int"),
    range=dict(type="str", default="6h"),
    step=dict(type="str", default="15s"),
    label=dict(type="str"),
    checkpoint_bytes=dict(type="int"),
    window_seconds=dict(type="float"),
    dest=dict(type="path", required=True),
    timeout=dict(type="float", default=30.0),
)


def fetcher(module, url, timeout):
    """fetch(selector, start, end, step) -> the answer's text, through host/http_get; fails the module naming the query."""
    def fetch(selector, start, end, step):
        params = {"query": selector, "start": "%.3f" % start, "end": "%.3f" % end, "step": "%g" % step}
        try:
            _status, text = http_get.get(url + "/api/v1/query_range", params, timeout=timeout, limit=series.MAX_BYTES)
        except http_get.HttpRefused as exc:
            module.fail_json(msg="url: %s (query %s)" % (exc, selector))
        return text
    return fetch


def _label(req, index, count):
    """The given label (numbered with several windows), or None: source.context_of then names it by its start."""
    if req.label:
        return req.label if count == 1 else "%s-%d" % (req.label, index + 1)
    return None


def _bundle_files(req, window, fetch, label):
    asked, texts = source.answers(req, window, fetch)
    context = source.context_of(req._replace(label=label), window, asked)
    files = [(CONTEXT_FILE, bundle_part.context_text(context))]
    files += [("%s/%s.json" % (queries.RESPONSES_DIR, name), texts[name]) for name, _selector in asked]
    return context, files


def _write(module, directory, files, dest):
    changed = []
    for relative, content in files:
        path = os.path.join(directory, relative)
        try:
            if file_write.write_if_changed(module, path, content, make_parent=True, inside=dest):
                changed.append(path)
        except (OSError, file_read.FileRefused) as exc:
            module.fail_json(msg="dest: %s: %s" % (path, file_read.describe_error(exc)))
    return changed


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    try:
        http_get.check_url(params["url"])
        req = source.request(params["url"], params["mount_point"], params["start"], params["end"], params["last"],
                             params["range"], params["step"], params["label"],
                             checkpoint_bytes=params["checkpoint_bytes"], window_seconds=params["window_seconds"])
    except (queries.QueryError, http_get.HttpRefused) as exc:
        module.fail_json(msg=str(exc))
    if params["timeout"] <= 0:
        module.fail_json(msg="timeout must be more than 0 seconds, got %r" % params["timeout"])
    dest = os.path.abspath(params["dest"])
    fetch = fetcher(module, req.url, params["timeout"])
    bundles, windows, changed, asked = [], [], [], []
    try:
        found = source.windows(req, fetch)
        for index, window in enumerate(found):
            context, files = _bundle_files(req, window, fetch, _label(req, index, len(found)))
            directory = os.path.join(dest, context["label"])
            # write_if_changed writes nothing in check mode and says what would change.
            changed += _write(module, directory, files, dest)
            bundles.append(directory)
            windows.append(window)
            asked = context[queries.SOURCE]["queries"]
    except (queries.QueryError, series.SeriesError) as exc:
        module.fail_json(msg=str(exc))
    result = dict(changed=bool(changed), bundles=bundles, windows=windows, queries=asked, changed_files=changed)
    if module._diff:
        result["diff"] = {"before": "", "after": "".join("%s\n" % path for path in changed), "after_header": dest}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
