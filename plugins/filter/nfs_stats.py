# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side NFS statistics filters: deltas, capacity arithmetic, diagnosis.

Documentation for each filter is in the YAML file of the same name next to this one.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle import check_values
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle_values import BundleError
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.run import checkpoint_capacity as _capacity
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
from ansible_collections.ckptio.nfs.plugins.module_utils.host import parallel_map
from ansible_collections.ckptio.nfs.plugins.module_utils.host.parallel_map import WorkerDied
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.nfsd_stats import parse_nfsd_stats, parse_pool_stats
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.stats_delta import mountstats_delta as _mountstats_delta
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.stats_delta import nfsd_delta as _nfsd_delta
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.stats_delta import pool_stats_delta


def _text(value, key, name):
    """Accept the raw text or the registered result of our stats modules."""
    if isinstance(value, dict):
        if key not in value:
            raise AnsibleFilterError("%s: expected text or a result holding %s" % (name, key))
        value = value[key]
    if not isinstance(value, str):
        raise AnsibleFilterError("%s: expected text, got %s" % (name, type(value).__name__))
    return value


def mountstats_delta(after, before=None, interval_seconds=None, mount_points=None):
    after_text = _text(after, "raw_mountstats", "mountstats_delta")
    before_text = _text(before, "raw_mountstats", "mountstats_delta") if before is not None else None
    if interval_seconds is not None and float(interval_seconds) <= 0:
        raise AnsibleFilterError("mountstats_delta: interval_seconds must be greater than 0")
    return _mountstats_delta(after_text.splitlines(), before_text.splitlines() if before_text is not None else None,
                             interval_seconds=interval_seconds, mount_points=mount_points)


def nfsd_delta(after, before=None, pool_stats_after=None, pool_stats_before=None):
    after_text = _text(after, "raw_nfsd", "nfsd_delta")
    before_text = _text(before, "raw_nfsd", "nfsd_delta") if before is not None else None
    result = _nfsd_delta(parse_nfsd_stats(after_text), parse_nfsd_stats(before_text) if before_text is not None else None)
    if pool_stats_after is None and isinstance(after, dict):
        pool_stats_after = after.get("raw_pool_stats")
        if pool_stats_before is None and isinstance(before, dict):
            pool_stats_before = before.get("raw_pool_stats")
    if pool_stats_after:
        result["pool_stats"] = pool_stats_delta(parse_pool_stats(_text(pool_stats_after, "raw_pool_stats", "nfsd_delta")),
                                                parse_pool_stats(_text(pool_stats_before or "", "raw_pool_stats", "nfsd_delta")))
    else:
        result["pool_stats"] = None
    return result


def checkpoint_capacity(checkpoint_bytes, window_seconds, server_link_gbps=None, client_link_gbps=None, clients=None,
                        observed_bytes_per_second=None, write_size_bytes=1048576, rtt_ms=10.0):
    try:
        return _capacity(checkpoint_bytes, window_seconds, server_link_gbps=server_link_gbps, client_link_gbps=client_link_gbps,
                         clients=clients, observed_bytes_per_second=observed_bytes_per_second,
                         write_size_bytes=write_size_bytes, rtt_ms=rtt_ms)
    except BundleError as exc:
        raise AnsibleFilterError("checkpoint_capacity: %s" % exc)


def nfs_diagnosis(bundle):
    if not isinstance(bundle, dict):
        raise AnsibleFilterError("nfs_diagnosis: expected a dict {context, clients, servers}, got %s" % type(bundle).__name__)
    try:
        # The same schema as a bundle read from disk (bundle/bundle_values.py): no NaN, no words for numbers.
        return diagnose(check_values(bundle), parallel_map)
    except (BundleError, WorkerDied) as exc:
        # WorkerDied: a forked reader killed (the OOM killer) or stuck, named with its chunk (host/parallel_map.py).
        raise AnsibleFilterError("nfs_diagnosis: %s" % exc)


class FilterModule:
    """ckptio.nfs statistics filters."""

    def filters(self):
        return {
            "mountstats_delta": mountstats_delta,
            "nfsd_delta": nfsd_delta,
            "checkpoint_capacity": checkpoint_capacity,
            "nfs_diagnosis": nfs_diagnosis,
        }
