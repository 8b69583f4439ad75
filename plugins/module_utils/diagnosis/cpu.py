# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CPU layers: server_cpu and client_cpu, from the hosts' /proc/stat samples.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import host_evidence
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.evidence import rounded, scaled_share
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.run import server_samples
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals


# CPUs busy (all states but idle and iowait) over the checkpoint, averaged over the host's CPUs.
# Lab (TCG, one vCPU): a CPU-bound server ran 92-100 % busy; an idle one 4 %. 85 % leaves room
# for sampling noise while still meaning "no idle CPU to take more work".
CPU_BUSY_LIMIT = signals.CPU_BUSY.threshold


# A checkpoint window much shorter than the window between two host samples makes scaled
# figures (busy share during the checkpoint) weak: say so.
WEAK_SCALING_FACTOR = signals.WEAK_SCALING_FACTOR.threshold


def _cpu_rows(client_evidence, servers, checkpoint_seconds):
    """(side, host, cpu window, sample seconds, how): the clients' as their ClientEvidence holds them, then the servers'."""
    rows = [("client", host) + figures.cpu for host, figures in sorted(client_evidence.items()) if figures.cpu]
    for server in servers:
        if server.get("figures") is not None:
            # Figures from another source than host samples (prometheus/rows.py: node_exporter's series).
            if server["figures"].get("cpu") is not None:
                rows.append(("server", server["host"]) + tuple(server["figures"]["cpu"]))
            continue
        before, after, busy_seconds, how = server_samples(server, checkpoint_seconds)
        if before and after:
            seconds = after["time"] - before["time"]
            window = host_evidence.cpu_window(before["proc_stat"], after["proc_stat"],
                                              own_cpu_seconds=after.get("sampler_cpu_seconds") or 0.0, window_seconds=seconds)
            rows.append(("server", server["host"], window, seconds, how))
    return rows


def cpu_layers(evidence, client_evidence, servers, checkpoint_seconds):
    """server_cpu / client_cpu: CPUs without idle time during the checkpoint."""
    result = {"server_saturated": False, "client_saturated": False, "server_measured": False, "client_measured": False,
              "server_weak": False, "hosts": {}}
    for side, host, window, sample_seconds, how in _cpu_rows(client_evidence, servers, checkpoint_seconds):
        layer = "%s_cpu" % side
        if window is None or window.get("reset"):
            evidence.add(layer, "CPU counters on %s" % host, None, "readable, no reset", True,
                         "/proc/stat missing or went backwards between the samples (reboot): not used")
            continue
        busy = scaled_share(window["busy"], sample_seconds, checkpoint_seconds)
        scaled = bool(sample_seconds and checkpoint_seconds and checkpoint_seconds < sample_seconds)
        # More busy time in the window than the checkpoint lasted: the rest of the window was
        # busy too (the harness), so the scaled share is an upper estimate.
        overflow = bool(scaled and window["busy"] * sample_seconds > signals.SCALED_BUSY_MARGIN.threshold * checkpoint_seconds)
        weak = bool(sample_seconds and checkpoint_seconds and sample_seconds > WEAK_SCALING_FACTOR * checkpoint_seconds) or overflow
        busiest = window.get("busiest_cpu") or {}
        saturated = evidence.add(
            layer, "CPU busy during the checkpoint on %s" % host, busy, ">= %.2f of %d CPU(s)" % (CPU_BUSY_LIMIT, window["cpus"]),
            busy >= CPU_BUSY_LIMIT,
            "%s: user %.0f %%, system %.0f %%, irq+softirq %.0f %%, iowait %.0f %%, steal %.0f %% of all CPUs; busiest %s %.0f %% "
            "(softirq %.0f %%)%s%s%s" % (
                how, 100 * window["user"], 100 * window["system"], 100 * window["softirq"], 100 * window["iowait"],
                100 * window["steal"], busiest.get("name", "-"), 100 * busiest.get("busy", 0), 100 * busiest.get("softirq", 0),
                "; the sampler's own %.0f %% taken out" % (100 * window["sampler_share"]) if window.get("sampler_share") else "",
                "; scaled from %.0f s of samples to the %.0f s checkpoint (assumes the host idled outside it)" % (
                    sample_seconds, checkpoint_seconds) if scaled else "",
                " - weak: the window held more busy time than the checkpoint lasted, an upper estimate" if overflow else
                " - weak: the checkpoint is a small part of the window" if weak else ""))
        result["%s_measured" % side] = True
        result["%s_saturated" % side] = result["%s_saturated" % side] or saturated
        if side == "server" and saturated and weak:
            result["server_weak"] = True
        result["hosts"][host] = {"side": side, "busy": rounded(busy), "softirq": rounded(window["softirq"]),
                                 "iowait": rounded(window["iowait"]), "cpus": window["cpus"], "measured_over": how}
    return result
