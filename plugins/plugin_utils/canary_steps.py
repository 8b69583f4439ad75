# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side decisions of roles/canary_validation: the MLPerf aggregate in context.yml, which
clients failed, the start lead, which server samples go into the bundle, the bundle's file names.

The logic is in module_utils/canary and module_utils/bundle (plan.py, bundle.py), where the modules use it
too; these wrappers only check their input. Steps behind ckptio.nfs.internal (docs/architecture.md, "Public or
internal"): each one's documentation and argument spec is the YAML file of its name next to this one.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import barrier, clock, probe, restore
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle


def _results(value, name):
    """A list of module results; a registered loop (a dict with `results`) gives its results."""
    if value is None:
        return []
    if isinstance(value, Mapping):
        value = value.get("results") or []
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise AnsibleFilterError("%s: expected a list of module results, got %s" % (name, type(value).__name__))
    results = list(value)
    for result in results:
        if result is not None and not isinstance(result, Mapping):
            raise AnsibleFilterError("%s: expected module results (dicts), got %s" % (name, type(result).__name__))
    return results


def _number(value, name, option, kind=float):
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise AnsibleFilterError("%s: %s must be a number, got %r" % (name, option, value))


def canary_context(results, mount_point, label, layout, target_window_seconds, target_checkpoint_bytes=0, network=None,
                   start_at=None, clocks=None, hosts=None, read_go_at=None, restore_window_seconds=0):
    results = _results(results, "canary_context")
    if clocks is not None:
        clocks = [entry if isinstance(entry, Mapping) else None for entry in clocks]
        hosts = list(hosts or [])
        if len(clocks) != len(results) or len(hosts) != len(results):
            raise AnsibleFilterError("canary_context: %d results, %d clocks and %d hosts must match"
                                     % (len(results), len(clocks), len(hosts)))
    block = canary.context_block(results, layout, None if start_at is None else _number(start_at, "canary_context", "start_at"),
                                 clocks, hosts)
    restore_block = restore.context_restore_block(
        results, None if read_go_at is None else _number(read_go_at, "canary_context", "read_go_at"), clocks,
        hosts if clocks is not None else ["client%d" % index for index in range(len(results))],
        _number(restore_window_seconds or 0, "canary_context", "restore_window_seconds"))
    return bundle.context_document(mount_point, label, _number(target_checkpoint_bytes, "canary_context", "target_checkpoint_bytes", int),
                                   _number(target_window_seconds, "canary_context", "target_window_seconds"),
                                   dict(network) if network else {}, block, restore_block)


def canary_failures(results, hosts):
    results = _results(results, "canary_failures")
    hosts = list(hosts or [])
    if len(hosts) != len(results):
        raise AnsibleFilterError("canary_failures: %d results for %d hosts" % (len(results), len(hosts)))
    return canary.failed_hosts(hosts, results)


def _announced(result):
    """A wait_for result on a ready/written file: the file came, and (written.json, waited for with
    barrier.WRITTEN_READY_PATTERN) it does not say read_ready false."""
    if not result or result.get("failed") or result.get("state") not in ("file", "present"):
        return False
    return (result.get("match_groupdict") or {}).get("read_ready", "true") == "true"


def canary_barrier(hosts, ready_results, clocks, launch_at, now=None, fanout_seconds=None, abort_reason=None):
    """The go plan (barrier.plan_go) from the wait for every client's ready.json (or written.json,
    for the read go: fanout_seconds is then the write start's, abort_reason says why a host does not read).
    now defaults to this controller's clock (a filter runs on the controller, as now().timestamp() does)."""
    hosts = list(hosts or [])
    ready_results = _results(ready_results, "canary_barrier")
    clocks = list(clocks or [])
    if len(ready_results) != len(hosts) or len(clocks) != len(hosts):
        raise AnsibleFilterError("canary_barrier: %d hosts, %d ready results and %d clocks must match"
                                 % (len(hosts), len(ready_results), len(clocks)))
    ready = dict((host, _announced(result)) for host, result in zip(hosts, ready_results))
    offsets = dict((host, clock.offset_of(dict(result)) if isinstance(result, Mapping) else None)
                   for host, result in zip(hosts, clocks))
    # The run id each host wrote into its ready/written file (wait_for's search_regex, barrier.RUN_ID_PATTERN),
    # echoed in its go file: the host obeys only a go of its own run.
    run_ids = dict((host, barrier.run_id_of(result.get("match_groupdict") if isinstance(result, Mapping) else None))
                   for host, result in zip(hosts, ready_results))
    now = time.time() if now is None else _number(now, "canary_barrier", "now")
    fanout = (now - _number(launch_at, "canary_barrier", "launch_at") if fanout_seconds is None
              else _number(fanout_seconds, "canary_barrier", "fanout_seconds"))
    return barrier.plan_go(ready, offsets, fanout, now, abort_reason, run_ids)


def canary_host_go(go_at, clock_result):
    """go (the controller's clock) on one host's own clock, as its go.json would carry it
    (barrier.go_document). clock_result is the host's clock_offset result; unmeasured (none, a
    skipped task, which has no offset, or a failed one) means the controller's clock, as for a client."""
    go_at = _number(go_at, "canary_host_go", "go_at")
    measured = isinstance(clock_result, Mapping) and not clock_result.get("failed")
    return barrier.go_document(go_at, clock.offset_of(dict(clock_result)) if measured else None)["go_at"]


def canary_server_samples(start_results, end_results, write_end_results=None):
    # With restore, the servers' end sample is the one taken when every client had written (in the
    # read barrier): the write's server shares must exclude the reads. A skipped or absent
    # write-end task (no restore) leaves the sample after the last rank ended.
    if isinstance(write_end_results, Mapping) and not write_end_results.get("skipped"):
        end_results = write_end_results
    # async_status over the start jobs: each result's item is the job, whose item is the host.
    found = [(result["item"]["item"], "host_start", result["host_sample"])
             for result in _results(start_results, "canary_server_samples") if result and "host_sample" in result]
    found += [(result["item"], "host_end", result["host_sample"])
              for result in _results(end_results, "canary_server_samples") if result and "host_sample" in result]
    hosts, samples = [], {}
    for host, key, sample in found:
        if host not in hosts:
            hosts.append(host)
        samples.setdefault(host, {})[key] = sample
    return {"hosts": hosts, "samples": samples}


def canary_waits(barrier_timeout, timeout, kill_grace, restore=False):
    """The role's waits from its options (barrier.waits)."""
    values = [_number(value, "canary_waits", option) for value, option in
              ((barrier_timeout, "barrier_timeout"), (timeout, "timeout"), (kill_grace, "kill_grace"))]
    return barrier.waits(*values, restore=bool(restore))


def canary_probe_errors(groups, hostvars, group_names):
    """Every failed probe step of the hosts of the named groups (probe.probe_errors)."""
    if not isinstance(groups, Mapping) or not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("canary_probe_errors: give groups and hostvars (the play's magic variables)")
    hosts = []
    for name in group_names:
        hosts.extend(host for host in groups.get(name) or [] if host not in hosts)
    return probe.probe_errors(hosts, lambda host: hostvars[host] if host in hostvars else None)


def bundle_files(kind):
    try:
        return bundle.file_names(kind)
    except ValueError as exc:
        raise AnsibleFilterError("bundle_files: %s" % exc)


# The steps ckptio.nfs.internal calls, by name.
STEPS = {
    "canary_context": canary_context,
    "canary_failures": canary_failures,
    "canary_barrier": canary_barrier,
    "canary_host_go": canary_host_go,
    "canary_server_samples": canary_server_samples,
    "canary_probe_errors": canary_probe_errors,
    "canary_waits": canary_waits,
    "bundle_files": bundle_files,
}
