# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why each measured layer that is neither limiting nor contributing was ruled out, with its own figure (issue 43).

"Not the server's storage: its busiest disk was 0.6 % busy." A layer that was not measured is listed as
unmeasured by the verdict (verdict._unmeasured), never here: nothing rules out what was not looked at.
Pure: reads the layers' findings (diagnose.py's `found`) and the figures the layers read.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import slot_table
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.verdict import LAYERS
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human


def why_not(found, figures, decision):
    """[{"layer", "why"}] for every layer of LAYERS (none aside) that was measured and not named, in LAYERS' order."""
    named = set((decision.limiting,) + decision.contributing + decision.unmeasured)
    reasons = {
        "network": _network, "server_cpu": _server_cpu, "client_cpu": _client_cpu, "client_rpc_slots": _slots,
        "server_threads": _threads, "server_storage": _storage, "access_pattern": _access,
    }
    rows = []
    for layer in LAYERS:
        if layer == "none" or layer in named:
            continue
        rows.append({"layer": layer, "why": reasons[layer](found, figures)})
    return rows


def _network(found, _figures):
    net = found["net"]
    loss = net["loss"]
    text = {"clear": "not the network: the links were far from full (%s)",
            "busy": "not the network: the links were measured below full (%s) and the send side did not back up",
            "partial": "not the network as far as it was measured (%s)"}.get(net["state"], "not the network (%s)") % (
        net["headline"].split(": ", 1)[-1])
    if loss["state"] == "clean":
        text += "; %s" % loss["summary"].replace("loss: clean", "no loss")
    elif loss["state"] == "unmeasured":
        text += "; loss unmeasured"
    return text


def _busiest(found, side):
    hosts = [(row["busy"], host) for host, row in found["cpu"]["hosts"].items() if row["side"] == side and row["busy"] is not None]
    return max(hosts) if hosts else (None, None)


def _cpu(found, side, whose):
    """The busiest host of a side against the CPU signal; whose: "the server's", "the clients'"."""
    busy, host = _busiest(found, side)
    if busy is None:
        return "not %s CPUs: their counters were unusable (reset or missing)" % whose
    return "not %s CPUs: the busiest %s, %s, was %s busy (< %s)" % (
        whose, side, host, human.share(busy), human.share(signals.CPU_BUSY.threshold))


def _server_cpu(found, _figures):
    return _cpu(found, "server", "the server's")


def _client_cpu(found, _figures):
    return _cpu(found, "client", "the clients'")


def _slots(found, figures):
    seen = slot_table.why_not_text(found["slots"].table)
    if seen:
        return seen
    write = figures["write"]
    if not write["ops"]:
        return "not the client's RPC slots: no WRITE in the window"
    if found["send"].backed_up and signals.queue_dominates(write["avg_queue_ms"], write["avg_rtt_ms"]):
        return ("not the client's RPC slots alone: WRITEs queued %s against %s on the wire, but requests also waited to be sent "
                "(sending_u per send >= %s, RTT inflated): the wait is not the slots' alone" % (
                    _ms(write["avg_queue_ms"]), _ms(write["avg_rtt_ms"]), human.number(signals.SENDING_PER_SEND.threshold)))
    return ("not the client's RPC slots: WRITEs queued %s against %s on the wire (queue < %sx RTT or < %s) and %s "
            "requests waited for a transport slot per send (< %s)" % (
                _ms(write["avg_queue_ms"]), _ms(write["avg_rtt_ms"]), human.number(signals.QUEUE_TO_RTT.threshold),
                _ms(signals.QUEUE_MS_FLOOR.threshold), human.number(figures["backlog_per_send"]),
                human.number(signals.BACKLOG_PER_SEND.threshold)))


def _threads(found, _figures):
    no_idle = found["threads"].no_idle
    if no_idle is None:
        return "not nfsd threads as far as measured: no pool_stats in the bundle (packets without an idle thread unknown)"
    return "not nfsd threads: %s of the packets found no idle nfsd thread (< %s)" % (
        human.share(no_idle), human.share(signals.NO_IDLE_THREAD_CONTRIBUTING.threshold))


def _storage(found, _figures):
    storage = found["storage"]
    if storage.ruled_out:
        return "not the server's storage: %s" % storage.ruled_out
    inflation = found["send"].rtt_inflation
    text = "not the server's storage: %s" % (
        "the WRITE RTT was %sx the idle RTT (< %sx)" % (human.number(inflation), human.number(signals.RTT_INFLATION.threshold))
        if inflation is not None else "no idle RTT to compare the WRITE RTT with")
    if storage.disk_busy is not None:
        text += " and its busiest disk was %s busy (< %s)" % (human.share(storage.disk_busy), human.share(signals.DISK_BUSY.threshold))
    return text


def _access(found, _figures):
    access = found["access"]
    if not access.shared_file:
        return "not the access pattern: %s, no metadata storm" % (
            "a file per rank" if access.layout == "file_per_rank" else "layout %s" % (access.layout or "unknown"))
    return "not the access pattern: one shared file, but its ranks did not wait on its lock (D-state samples) and no metadata storm"


def _ms(value):
    return human.seconds((value or 0.0) / 1000.0)
