# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One option's row of the architecture comparison, from what its run left (pure: no file I/O).

Every figure is {"value", "rests_on"}; a figure the run does not have is None with "unmeasured: why",
and a figure from distorted counters (a remount or a reset between the samples) is None with
"distorted: ..." - never a guess and never carried into a verdict.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary
from ansible_collections.ckptio.nfs.plugins.module_utils.compare import throughput

# The metadata a checkpoint writer costs, as the op mix of the mountstats deltas shows it
# (issue 28: CREATE/OPEN, SETATTR, RENAME, GETATTR, COMMIT). NFSv4 opens (and creates) a regular
# file with OPEN, v3 with CREATE; v4's CREATE makes directories.
METADATA_GROUPS = (("CREATE/OPEN", ("CREATE", "OPEN", "OPEN_NOATTR")), ("SETATTR", ("SETATTR",)),
                   ("RENAME", ("RENAME",)), ("GETATTR", ("GETATTR",)), ("COMMIT", ("COMMIT",)))


def figure(value, rests_on):
    return {"value": value, "rests_on": rests_on}


def _metadata(deltas):
    """{group: figure} summed over every client's mountstats delta of the run's mounts."""
    deltas = list(deltas or [])
    if not deltas:
        return dict((name, figure(None, "unmeasured: no mountstats before/after in the bundle")) for name, _ops in METADATA_GROUPS)
    distorted = sorted(set(problem for delta in deltas if not delta.get("usable", True) for problem in delta.get("problems") or []))
    if distorted:
        why = "distorted: mountstats %s between the samples" % ", ".join(distorted)
        return dict((name, figure(None, why)) for name, _ops in METADATA_GROUPS)
    rests_on = "mountstats deltas of %d mount(s) on the clients" % len(deltas)
    return dict((name, figure(sum((delta.get("ops") or {}).get(op, {}).get("ops", 0) for delta in deltas for op in ops), rests_on))
                for name, ops in METADATA_GROUPS)


def _host_values(canaries, key):
    return dict((host, result.get(key)) for host, result in sorted((canaries or {}).items())
                if isinstance(result, dict) and result.get(key) is not None)


def _blocking(spec, canaries, ours):
    """What the optimizer waits: with a local path the slowest host's blocking_seconds (a synchronous
    step waits for every rank), without one the checkpoint itself (ours' seconds)."""
    if not spec.get("local_path"):
        return figure(ours["seconds"], "direct writes: ranks block until the checkpoint is on NFS (its span, ours)"
                      if ours["seconds"] is not None else "unmeasured: no finished checkpoint")
    per_host = _host_values(canaries, "blocking_seconds")
    if not per_host:
        return figure(None, "unmeasured: no blocking_seconds in canary.json")
    # A time that is none (below 0, inf) would make bytes / blocking seconds rank first or last: refused.
    bad = ["%s: %r" % (host, value) for host, value in per_host.items() if not (throughput.finite(value) and value >= 0)]
    if bad:
        return figure(None, "refused: blocking_seconds no time the optimizer waited (%s)" % ", ".join(bad))
    return figure(max(per_host.values()), "slowest host's blocking_seconds (local path %s), %d host(s)" % (spec["local_path"], len(per_host)))


def _drain(spec, canaries):
    """(drain seconds figure, fits: True/False/None): latest drain end - earliest drain start over hosts."""
    if not spec.get("local_path"):
        return figure(None, "no drain: direct writes"), None
    drains = [drain for drain in _host_values(canaries, "drain").values() if isinstance(drain, dict)]
    spans = [drain for drain in drains if drain.get("start") is not None and drain.get("end") is not None]
    if not drains or len(spans) != len(drains):
        return figure(None, "unmeasured: a host has no drain start/end in canary.json"), None
    refused = throughput.inconsistent([dict(drain, host=host, rank="drain") for host, drain in
                                       _host_values(canaries, "drain").items() if isinstance(drain, dict)])
    if refused:
        return figure(None, throughput.refusal(refused)), None
    fits = [drain.get("fits_interval") for drain in drains]
    verdict = None if any(value is None for value in fits) else all(fits)
    seconds = max(drain["end"] for drain in spans) - min(drain["start"] for drain in spans)
    limits = sorted(set(drain.get("rate_limit") or 0 for drain in drains))
    note = "latest drain end - earliest drain start over %d host(s)" % len(drains)
    if any(limits):
        note += ", rate limit %s B/s per host" % "/".join(str(limit) for limit in limits)
    return figure(seconds, note + " (each host's clock)"), verdict


def _read_from(canaries):
    """(whose files the hosts read, the cache flag or None): from each host's summary.restore.read_from
    (canary/restore.read_from). A read a cache could serve is flagged, never averaged with cold ones."""
    found = dict((host, ((result.get("summary") or {}).get("restore") or {}).get("read_from"))
                 for host, result in sorted((canaries or {}).items()) if isinstance(result, dict))
    found = dict((host, value) for host, value in found.items() if isinstance(value, dict))
    if not found:
        return "whose files: not recorded", None
    risks = ["%s: %s" % (host, value["cache_risk"]) for host, value in found.items() if value.get("cache_risk")]
    shifts = sorted(set(value.get("recovery_rank_shift") or 0 for value in found.values()))
    if all(value.get("other_host") for value in found.values()):
        whose = "each rank read another host's files (recovery_rank_shift %s; no client read what it wrote)" % "/".join(map(str, shifts))
    else:
        whose = "each rank read its own host's files"
    return whose, ("could be served by a cache - " + "; ".join(risks)) if risks else None


def _restore(ranks, canaries=None):
    refused = throughput.inconsistent(ranks or [], "read_start", "read_end")
    if refused:
        return figure(None, throughput.refusal(refused)), None
    summary = canary.aggregate(ranks, fields=canary.READ_FIELDS)
    if not summary["finished_ranks"]:
        return figure(None, "unmeasured: no read-back in this run"), None
    whose, flag = _read_from(canaries)
    rests_on = "read bytes / (latest read end - earliest read start), every rank; %s" % whose
    return figure(summary["throughput_bytes_per_second"], rests_on + ("; FLAGGED: %s" % flag if flag else "")), flag


def _diagnosis(diagnosis):
    if not isinstance(diagnosis, dict):
        return figure(None, "unmeasured: no diagnosis.json"), figure(None, "unmeasured: no diagnosis.json")
    return (figure(diagnosis.get("limiting_layer"), "diagnosis.json limiting_layer"),
            figure(diagnosis.get("verdict"), "diagnosis.json verdict"))


def _judged(spec, ours, blocking, fits):
    """The figure judged against the target: the write throughput (direct writes) or, through a local
    path, bytes over the optimizer's blocking seconds - only when the drain fits the interval."""
    if not spec.get("local_path"):
        return figure(ours["bytes_per_second"], "ours (write throughput)" if ours["bytes_per_second"] else
                      "unmeasured: %s" % (ours["problem"] or "no span"))
    if not blocking["value"]:
        return figure(None, blocking["rests_on"])
    if fits is not True:
        return figure(None, "unmeasured: the drain %s the checkpoint interval" % ("does not fit" if fits is False else "was not checked against"))
    return figure(ours["bytes"] / blocking["value"], "bytes / blocking seconds (the drain fits the interval)")


def _error(canaries):
    """The option's failure, "host: message; ..." from each host's canary.json msg (the module's failure), or None."""
    failed = ["%s: %s" % (host, result["msg"]) for host, result in sorted((canaries or {}).items())
              if isinstance(result, dict) and result.get("msg")]
    return "; ".join(failed) or None


def option_row(name, spec, context, diagnosis, ranks, deltas, canaries):
    """One option: name, shape, placement, both throughput figures, blocking, drain, restore,
    metadata ops, limiting layer and verdict (its diagnosis), the figure judged against the target."""
    spec = dict(spec or {})
    context = context or {}
    figures = throughput.two_figures(ranks)
    ours = figures["ours"]
    blocking = _blocking(spec, canaries, ours)
    drain, fits = _drain(spec, canaries)
    limiting, verdict = _diagnosis(diagnosis)
    target = context.get("target") or {}
    restore, restore_flag = _restore(ranks, canaries)
    return {
        "name": name,
        "error": _error(canaries),
        "shape": spec.get("shape") or (context.get("canary") or {}).get("layout") or "unmeasured",
        "paths": list(spec.get("paths") or ([context["mount_point"]] if context.get("mount_point") else [])),
        "local_path": spec.get("local_path") or None,
        "bytes": ours["bytes"],
        "throughput": figures,
        "blocking_seconds": blocking,
        "drain_seconds": drain,
        "drain_fits_interval": fits,
        "restore": restore,
        "restore_published": throughput.published_read(ranks),
        "restore_cache_flag": restore_flag,
        "metadata_ops": _metadata(deltas),
        "limiting_layer": limiting,
        "diagnosis_verdict": verdict,
        # What the option's own diagnosis judged against the target (diagnosis.json achieved_source): for a burst
        # buffer the drain to NFS, where the comparison judges the optimizer's blocking seconds.
        "diagnosis_judged": diagnosis.get("achieved_source") if isinstance(diagnosis, dict) else None,
        "judged": _judged(spec, ours, blocking, fits),
        "target": {"checkpoint_bytes": target.get("checkpoint_bytes") or 0, "window_seconds": target.get("window_seconds") or 0},
    }
