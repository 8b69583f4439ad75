# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One client's host evidence as figures: what the CPU, link and loss layers read of its host samples.

Worked out where the client is read (diagnosis/run.py, in a forked worker above 512 clients), so
the figures come back, not the samples (10 kB a client, pickled back and read again by three layers
in the module's one process: tests/bench/README.md). Each figure is the one the layer made from the
samples before: host_evidence.cpu_window, host_evidence.link_rows, network_loss.tcp_window.
"""

from __future__ import annotations

import dataclasses

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import host_evidence
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.network_loss import tcp_window


CANARY_SAMPLES = "the canary's own samples at its ranks' start and end"


STATISTICS_WINDOW = "the statistics window"


LINKS_SCALED = "the statistics window, scaled to the checkpoint's duration"


@dataclasses.dataclass(frozen=True)
class ClientEvidence:
    """cpu: (cpu_window, sample seconds or None, how) or None without a pair of samples;
    links: link rows (host, side, measured_over set); addresses: the NFS servers' addresses the
    links' sample names; tcp: tcp_window over the loss layer's pair, with tcp_how; probe: probe.json's
    value (without iperf3's raw output)."""
    cpu: object
    links: tuple
    addresses: tuple
    tcp: dict
    tcp_how: str
    probe: object


def sample(value):
    """A host sample from the bundle (parsed JSON), or None when absent or not a sample."""
    return value if isinstance(value, dict) and value.get("format") == 1 else None


def client_samples(files):
    """(before, after) over the stats window and (start, end) over the canary's ranks, or Nones."""
    canary = files.get("canary") if isinstance(files.get("canary"), dict) else {}
    samples = canary.get("host_samples") or {}
    return (sample(files.get("host_before")), sample(files.get("host_after")),
            sample(samples.get("start")), sample(samples.get("end")))


def uses_checkpoint_seconds(files):
    """Whether client_evidence scales the client's link rows to the run's checkpoint seconds: with a pair of
    samples over the statistics window and none at the canary's ranks' start and end."""
    before, after, start, end = client_samples(files)
    return not (start and end) and bool(before and after)


def _cpu(before, after, start, end):
    if start and end:
        return host_evidence.cpu_window(start["proc_stat"], end["proc_stat"]), None, CANARY_SAMPLES
    if before and after:
        return host_evidence.cpu_window(before["proc_stat"], after["proc_stat"]), after["time"] - before["time"], STATISTICS_WINDOW
    return None


def _links(host, pair, busy_seconds, how):
    """(link rows, server addresses) of the client's pair of samples, as network._link_rows made them."""
    first, last = pair
    addresses = tuple(last.get("nfs_server_addresses") or [])
    rows = tuple(dict(row, host=host, side="client", measured_over=how)
                 for row in host_evidence.link_rows(first, last, list(addresses), "client", busy_seconds=busy_seconds))
    return rows, addresses


def client_evidence(host, files, checkpoint_seconds):
    """ClientEvidence of one usable client's files; checkpoint_seconds: the run's (run.checkpoint_seconds)."""
    before, after, start, end = client_samples(files)
    links, addresses = (), ()
    if start and end:
        # The canary sampled this host when its ranks started and ended: exact window.
        links, addresses = _links(host, (start, end), None, CANARY_SAMPLES)
        tcp, tcp_how = tcp_window(start, end), "the canary's own samples"
    else:
        if before and after:
            links, addresses = _links(host, (before, after), checkpoint_seconds, LINKS_SCALED)
        tcp, tcp_how = tcp_window(before, after), STATISTICS_WINDOW
    return ClientEvidence(_cpu(before, after, start, end), links, addresses, tcp, tcp_how, kept_probe(files.get("probe")))


def kept_probe(probe):
    """What the evidence keeps of probe.json's value: all of it but iperf3's raw output (bundles before 0.5.0)."""
    if isinstance(probe, dict):
        return dict((key, value) for key, value in probe.items() if key != "iperf3")
    return probe
