# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""diagnosis.md: what diagnose() found (diagnosis.json), rendered for a person.

Up to PER_HOST_LINES_MAX clients (or servers) every host has its line and every evidence row is
shown as diagnose() wrote it. Above it the per-host rows are folded: an evidence signal measured
on each host becomes one row (min / median / max, the hosts where it crossed), a recommendation
made for each host names the hosts once, long per-host lists inside a sentence are cut, and the
per-host lines become a summary: the distribution of per-host throughput and WRITE latency, the
slowest hosts, the outliers and the settings they share. diagnosis.json keeps every host.
"""

from __future__ import annotations

import re

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import paths as nfs_paths
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human
from ansible_collections.ckptio.nfs.plugins.module_utils.stats.rates import nearest_rank
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.headline import limit_label

# Per-host lines stay readable for a rack's worth of clients; above it diagnosis.md summarises
# (issue 15: 4,096 clients made a 4.9 MB diagnosis.md, a line and ~5 evidence rows per host).
PER_HOST_LINES_MAX = 16
# Hosts named in a folded row or list before "and N more".
NAMED_HOSTS = 8
# The slowest hosts shown with their figures.
SLOWEST_SHOWN = 5
# An outlier: half the median per-host throughput, or twice the median WRITE execution time.
# Copies of one job on one path differ by a few percent (healthy lab capture: 0.541 vs
# 0.550 MB/s, 7.83 vs 7.66 s per WRITE), so a factor of two is a host that differs, not noise.
OUTLIER_THROUGHPUT_SHARE = 0.5
OUTLIER_LATENCY_FACTOR = 2.0
# The settings compared between the outliers and the rest ("what they share").
SHARED_SETTINGS = ("nfs_version", "nconnect", "wsize", "proto", "max_slots")

_HOST_TOKEN = re.compile(r"[\w.-]+")
# Lists inside a sentence: "; " between hosts whose items hold ", " themselves, then ", ".
_LIST_SEPARATORS = (re.compile(r"(; )"), re.compile(r"(, )"))


def render_markdown(diagnosis):
    """diagnosis.md: the first screen (CONTRACT 3), then the figures, every signal with its threshold, the advice."""
    hosts = _folded_hosts(diagnosis)
    lines = _first_screen_lines(diagnosis)
    lines += ["", "**%s**" % _cut_host_lists(diagnosis["summary"], hosts), ""]
    lines += _figure_lines(diagnosis, hosts)
    lines += _restore_lines(diagnosis.get("restore"))
    lines += [""] + nfs_paths.markdown_lines(diagnosis.get("paths")) if diagnosis.get("paths") else []
    lines += _why_not_lines(diagnosis.get("why_not"))
    lines += ["", "## Evidence", ""] + _evidence_lines(diagnosis["evidence"], hosts)
    lines += ["", "## Recommendations", ""] + _recommendation_lines(diagnosis["recommendations"], hosts)
    lines += ["", "## Per host", ""]
    if hosts:
        lines.append("%d client(s) and %d server(s): above %d hosts of a kind this file summarises them; "
                     "diagnosis.json has every host's figures." % (
                         len(diagnosis["clients"]), len(diagnosis["servers"]), PER_HOST_LINES_MAX))
        lines.append("")
    lines += _client_lines(diagnosis["clients"])
    if hosts and diagnosis["servers"]:
        lines.append("")
    lines += _server_lines(diagnosis["servers"], bool(hosts))
    return "\n".join(lines) + "\n"


def _why_not_lines(rows):
    """Each measured layer that was not named, and the figure that rules it out (diagnosis/why_not.py)."""
    if not rows:
        return []
    return ["", "## Why not the other layers", ""] + ["- %s" % row["why"] for row in rows]


def _first_screen_lines(diagnosis):
    """The first screen as a text block (its 80 columns kept); a diagnosis.json from before it: a title."""
    screen = diagnosis.get("first_screen")
    if not screen:
        return ["# Checkpoint diagnosis: %s" % diagnosis["mount_point"]]
    return ["```text"] + list(screen) + ["```"]


def _figure_lines(diagnosis, hosts):
    """The figures behind the first screen, in the units a person reads."""
    network = diagnosis.get("network") or {"summary": "links: unmeasured (bundle diagnosed before link evidence existed)"}
    reasons = [_cut_host_lists(reason, hosts) for reason in diagnosis.get("confidence_reasons") or []]
    deciding = (diagnosis.get("headline") or {}).get("confidence_reason")
    if deciding and diagnosis["confidence"] == "high":
        # High rests on measurements: the deciding one is named, what was not measured is not a reason for it.
        reasons = [deciding] + ["not needed for this verdict: " + reason for reason in reasons]
    gap = human.factor(diagnosis["gap_factor"]) if diagnosis.get("gap_factor") else "none (no verdict against a target)"
    lines = ["## Figures", "", "| figure | value |", "|---|---|",
             "| target | %s |" % (human.rate(diagnosis["target_bytes_per_second"]) if diagnosis.get("target_bytes_per_second")
                                  else "not given"),
             "| achieved | %s (%s) |" % (human.rate(diagnosis["achieved_bytes_per_second"]), diagnosis["achieved_source"]),
             "| gap factor | %s |" % gap,
             "| %s | %s (confidence %s%s) |" % (
                 limit_label(diagnosis["verdict"]), diagnosis["limiting_layer"], diagnosis["confidence"], ": " + "; ".join(reasons) if reasons else ""),
             "| unmeasured | %s |" % (", ".join(diagnosis.get("unmeasured") or []) or "-"),
             "| %s | %s |" % ("what limits headroom" if diagnosis["verdict"] == "meets_target" else "contributing",
                              ", ".join(diagnosis["contributing"]) or "-"),
             "| verdict | %s (tuning the limiting layer can give up to %s%s; the gap is %s) |" % (
                 diagnosis["verdict"], human.factor(diagnosis["tuning_headroom_factor"]),
                 ": " + diagnosis["tuning_headroom_why"] if diagnosis.get("tuning_headroom_why") else "", gap),
             "| network | %s |" % _table_text(_cut_host_lists(network["summary"], hosts))]
    capacity = diagnosis["capacity"]
    if capacity.get("raw_link_bytes_per_second"):
        lines.append("| declared links | %s raw, %s practical; all clients summed: %s of raw |" % (
            human.rate(capacity["raw_link_bytes_per_second"]), human.rate(capacity["practical_link_bytes_per_second"]),
            human.share(capacity.get("observed_link_utilisation"))))
    return lines


def _restore_lines(restore):
    """The restore's verdict and what it rests on, its READ figures beside WRITE's; nothing without a restore."""
    if not restore:
        return []
    lines = ["", "## Restore (read-back)", "", "**%s%s**" % (restore["summary"][0].upper(), restore["summary"][1:]), "",
             "Cold cache: %s (%s). %s." % (restore.get("restore_cache") or "-", restore.get("guarantee") or "-",
                                           restore["read_ops_note"][0].upper() + restore["read_ops_note"][1:]), "",
             _cold_cache_line(restore.get("cold_cache")), "",
             "| op | ops | avg queue ms | avg RTT ms | avg exe ms | retrans |", "|---|---|---|---|---|---|"]
    for name in ("READ", "WRITE"):
        op = restore["ops"][name]
        cells = ["-" if op[key] is None else _figure(op[key]) for key in ("avg_queue_ms", "avg_rtt_ms", "avg_exe_ms")]
        lines.append("| %s | %s | %s | %s | %s | %s |" % tuple([name, op["ops"]] + cells + [op["retrans"]]))
    return lines


def _cold_cache_line(cold):
    """Measured, not assumed: how much of the restore came from the server."""
    if not cold or cold.get("cold") is None:
        return "Cold cache unmeasured: no client statistics bracket the read phase, or nothing was read back."
    verdict = "really cold" if cold["cold"] else "NOT cold: part of the restore came from the client's page cache"
    return "Cache %s: the server sent %s of the %s bytes read back (%.0f %%; %s)." % (
        verdict, cold["server_read_bytes"], cold["restore_bytes"], 100.0 * cold["server_share"], cold["rests_on"])


def _folded_hosts(diagnosis):
    """The host names whose per-host rows are folded: clients, servers, each only above the bound."""
    hosts = set()
    for kind in ("clients", "servers"):
        if len(diagnosis[kind]) > PER_HOST_LINES_MAX:
            hosts.update(diagnosis[kind])
    if len(diagnosis["clients"]) > PER_HOST_LINES_MAX:
        hosts.update(excluded["host"] for excluded in diagnosis.get("excluded_clients") or [])
    if not _LAST_FOLDED or _LAST_FOLDED[0] != hosts:
        _LAST_FOLDED[:] = [_FoldedHosts(hosts)]
    return _LAST_FOLDED[0]


class _FoldedHosts(frozenset):
    """The folded host names, and each text's _host_match against them, worked out once: every row
    of a 16,384-client evidence list is matched by fold_evidence, diagnosis.md and the returned
    result, network.summary's host list by the last two (311,000 matches, 1.7 s of process time)."""

    def __init__(self, hosts):
        super().__init__()
        self._matches = {}

    def match(self, text):
        """_host_match(text, self): a result depends on the text and the hosts only."""
        match = self._matches.get(text, _UNMATCHED)
        if match is _UNMATCHED:
            # The first pass misses on every text: a KeyError raised per miss cost 0.07 s at 16,384 clients.
            match = self._matches[text] = _host_match(text, self)
        return match


# Not yet matched (None is a text's match when it names no folded host).
_UNMATCHED = object()
# The last diagnosis's folded hosts, so that its passes (fold_evidence, render_markdown,
# returned_diagnosis) share their matches. One entry: it holds one diagnosis's texts at most.
_LAST_FOLDED = []


def _mentioned_host(text, hosts):
    """The first folded host named in text, or None."""
    match = hosts.match(text)
    return match[0] if match else None


def _host_match(text, hosts):
    """(host, start, end) of the first folded host named in text as a word, or None. The words are
    taken in C (a 16,384-client evidence list has 82,000 rows; _FoldedHosts.match keeps each
    result for the later passes); a word's place is found from the end of the one before, since
    only characters that are no part of a word lie between them."""
    if not text:
        return None
    words = _HOST_TOKEN.findall(text)
    if hosts.isdisjoint(words):
        return None
    position = 0
    for word in words:
        start = text.find(word, position)
        position = start + len(word)
        if word in hosts:
            return word, start, position
    return None


def _cut_host_lists(text, hosts):
    """text with each run of more than NAMED_HOSTS list items that name a folded host ("c1 8.45 MB/s;
    c2 8.45 MB/s; ...", "per client: c1 0, c2 0, ...") cut to its first items and its last one."""
    if not hosts or not text:
        return text
    for separator in _LIST_SEPARATORS:
        text = _cut_runs(text, separator, hosts)
    return text


def _cut_runs(text, separator, hosts):
    parts = separator.split(text)
    items, separators = parts[0::2], parts[1::2]
    named = [_mentioned_host(item, hosts) is not None for item in items]
    keep = [True] * len(items)
    more_after = {}
    start = 0
    while start < len(items):
        end = start
        while named[start] and end + 1 < len(items) and named[end + 1]:
            end += 1
        if end - start + 1 > NAMED_HOSTS:
            # Keep the first items and the last one (it may close a parenthesis the first opened).
            first_cut = start + NAMED_HOSTS - 1
            keep[first_cut:end] = [False] * (end - first_cut)
            more_after[first_cut - 1] = end - first_cut
        start = end + 1
    out = []
    for index, item in enumerate(items):
        if not keep[index]:
            continue
        if out:
            out.append(separators[index - 1])
        out.append(item)
        if index in more_after:
            out.append("%s... %d more host(s), every one in diagnosis.json" % (separators[index], more_after[index]))
    return "".join(out)


def _table_text(text):
    return text.replace("|", "/")


def _evidence_lines(evidence, hosts):
    lines = ["| layer | signal | value | threshold | crossed | explanation |", "|---|---|---|---|---|---|"]
    for row in _evidence_rows(evidence, hosts):
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            row["layer"] or _kind(row["signal"]), row["signal"], _cell(row["value"]), row["threshold"], row["crossed"],
            _table_text(_cut_host_lists(row["explanation"], hosts))))
    return lines


# Rows without a layer: what the capture itself says, or a symptom shared by several layers.
_CAPTURE_SIGNALS = ("capture", "statistics window", "unreadable bundle file")


def _kind(signal):
    return "capture" if signal.startswith(_CAPTURE_SIGNALS) else "symptom"


def _cell(value):
    """An evidence value as a person reads it: None is not measured, a float has at most 4 significant digits."""
    if value is None:
        return "not measured"
    if isinstance(value, float):
        return human.number(value, 4)
    return "%s" % (value,)


def fold_evidence(diagnosis):
    """diagnosis["evidence"] for diagnosis.json: above PER_HOST_LINES_MAX hosts of a kind, every
    host's row of a signal keeps its figures (layer, signal, value, threshold, crossed) but only the
    row diagnosis.md quotes (the first host that crossed, else the first) keeps its explanation; the
    others' is None (issue 27: 16,384 clients made a 45.7 MB diagnosis.json, most of it the same
    sentence per host). Every row of a smaller bundle is kept as diagnose() wrote it."""
    hosts = _folded_hosts(diagnosis)
    if not hosts:
        return diagnosis["evidence"]
    quoted = set()
    folded = set()
    for _key, members in _signal_groups(diagnosis["evidence"], hosts)[1].items():
        quoted.add(id(_example(members)[1]))
        folded.update(id(item) for _host, item in members)
    # A kept explanation that lists every host ("per client: c1 0, c2 0, ...") is cut as diagnosis.md cuts it.
    return [dict(item, explanation=_cut_host_lists(item["explanation"], hosts))
            if id(item) in quoted or id(item) not in folded else dict(item, explanation=None)
            for item in diagnosis["evidence"]]


def json_layout(diagnosis):
    """json.dumps arguments for diagnosis.json: indented for a person up to PER_HOST_LINES_MAX hosts
    of a kind; above it compact (a 16,384-client diagnosis.json was 70 MB indented, about half of it
    the indentation, and its text is held in memory while written: tests/bench/README.md)."""
    if _folded_hosts(diagnosis):
        return {"separators": (",", ":"), "sort_keys": True}
    return {"indent": 2, "sort_keys": True}


def returned_diagnosis(diagnosis):
    """The diagnosis a module returns once diagnosis.json is written: above PER_HOST_LINES_MAX hosts
    of a kind, without the folded hosts' entries in clients, servers, cpu, mounts, network.links,
    network.loss.hosts, network.loss.probe and evidence, network.summary's lists of them cut (every one is in
    diagnosis.json), and with per_host_left_out (how many hosts); None
    there when nothing is left out. A 16,384-client result held in a registered variable cost
    Ansible's controller 2.2 GB and minutes (tests/bench/bench_diagnose_scale.py, issue 27)."""
    hosts = _folded_hosts(diagnosis)
    if not hosts:
        return dict(diagnosis, per_host_left_out=None)
    returned = dict(diagnosis, per_host_left_out=len(hosts))
    for key in ("clients", "servers", "cpu"):
        returned[key] = dict((host, value) for host, value in (diagnosis.get(key) or {}).items() if host not in hosts)
    if isinstance(diagnosis.get("mounts"), dict):
        returned["mounts"] = dict((host, value) for host, value in diagnosis["mounts"].items() if host not in hosts)
    if isinstance(diagnosis.get("network"), dict):
        returned["network"] = _returned_network(diagnosis["network"], hosts)
    returned["evidence"] = [item for item in diagnosis["evidence"] if hosts.match(item["signal"]) is None]
    return returned


def _returned_network(network, hosts):
    """network without the folded hosts' link, loss and probe loss rows, its summary's lists of them cut as diagnosis.md cuts them."""
    network = dict(network, summary=_cut_host_lists(network.get("summary"), hosts))
    if network.get("links"):
        network["links"] = [row for row in network["links"] if row.get("host") not in hosts]
    loss = network.get("loss")
    if isinstance(loss, dict) and loss.get("hosts"):
        network["loss"] = dict(loss, hosts=[row for row in loss["hosts"] if row.get("host") not in hosts])
    if isinstance(loss, dict) and isinstance(loss.get("probe"), dict):
        # Each client's probe retransmits: 16,384 entries were 1.1 MB of the result and 0.45 s of exit_json's walk.
        network["loss"] = dict(network["loss"], probe=dict((host, row) for host, row in loss["probe"].items() if host not in hosts))
    return network


def _signal_groups(evidence, hosts):
    """(order, groups): the rows in order with, for a signal measured on folded hosts, its key
    (layer, signal with "<host>", threshold) in the place of its first host's row; groups {key: [(host, row)]}."""
    groups = {}
    order = []
    for item in evidence:
        match = hosts.match(item["signal"])
        if match is None:
            order.append(item)
            continue
        host, start, end = match
        signal = item["signal"][:start] + "<host>" + item["signal"][end:]
        key = (item["layer"], signal, item["threshold"])
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append((host, item))
    return order, groups


def _example(members):
    """The (host, row) a folded row quotes: the first that crossed, else the first."""
    return next(((host, item) for host, item in members if item["crossed"]), members[0])


def _evidence_rows(evidence, hosts):
    """The evidence table's rows: as diagnose() wrote them, or, for a signal measured on each of
    the folded hosts, one row per signal in the order of its first host's row."""
    order, groups = _signal_groups(evidence, hosts)
    return [_folded_evidence_row(row, groups[row]) if isinstance(row, tuple) else
            {"layer": row["layer"], "signal": row["signal"], "value": row["value"], "threshold": row["threshold"],
             "crossed": "yes" if row["crossed"] else "no", "explanation": row["explanation"]} for row in order]


def _folded_evidence_row(key, members):
    layer, signal, threshold = key
    crossed = [host for host, item in members if item["crossed"]]
    example_host, example = _example(members)
    values = [item["value"] for _host, item in members]
    return {"layer": layer, "signal": "%s (%d hosts)" % (signal, len(members)), "value": _value_range(values),
            "threshold": threshold,
            "crossed": "no" if not crossed else "yes on %d of %d: %s" % (len(crossed), len(members), _named(crossed)),
            "explanation": "e.g. %s: %s" % (example_host, example["explanation"])}


def _value_range(values):
    numbers = sorted(value for value in values if isinstance(value, (int, float)) and not isinstance(value, bool))
    if numbers and len(numbers) == len(values):
        if numbers[0] == numbers[-1]:
            return "%s on each" % _figure(numbers[0])
        return "min %s, median %s, max %s" % (_figure(numbers[0]), _figure(nearest_rank(numbers, 0.5)), _figure(numbers[-1]))
    distinct = sorted(set("%s" % (value,) for value in values))
    return ", ".join(distinct[:3]) + (" ..." if len(distinct) > 3 else "")


def _figure(value):
    return human.number(value, 4) if isinstance(value, float) else "%s" % (human.UNMEASURED if value is None else value)


def _named(hosts):
    """Up to NAMED_HOSTS host names, then how many more."""
    hosts = sorted(hosts)
    text = ", ".join(hosts[:NAMED_HOSTS])
    if len(hosts) > NAMED_HOSTS:
        text += " and %d more" % (len(hosts) - NAMED_HOSTS)
    return text


def _recommendation_lines(recommendations, hosts):
    """One line per recommendation; the same one made for several folded hosts names them once."""
    lines = []
    groups = {}
    for rec in recommendations:
        key = (rec["layer"], rec["setting"], "%s" % (rec["value"],), rec["how"])
        if rec.get("host") in hosts:
            if key in groups:
                groups[key]["hosts"].append(rec["host"])
                continue
            groups[key] = {"rec": rec, "hosts": [rec["host"]]}
            lines.append(groups[key])
        else:
            lines.append({"rec": rec, "hosts": [rec["host"]] if rec.get("host") else []})
    text = []
    for line in lines:
        rec = line["rec"]
        setting = rec["setting"] if rec["value"] is None else "%s = %s" % (
            rec["setting"], rec.get("value_text") or human.number(rec["value"]))
        where = ""
        if len(line["hosts"]) == 1:
            where = " on %s" % line["hosts"][0]
        elif line["hosts"]:
            where = " on %d hosts (%s)" % (len(line["hosts"]), _named(line["hosts"]))
        reason = rec["reason"] if len(line["hosts"]) < 2 else "on %s: %s" % (rec["host"], rec["reason"])
        text.append("- **%s**%s (%s): %s. Why: %s" % (setting, where, rec["layer"], rec["how"], _cut_host_lists(reason, hosts)))
    if not recommendations:
        text.append("- none: the target is met")
    return text


def _client_line(host, summary, throughput=False):
    return "- client %s: %sNFSv%s nconnect=%s wsize=%s, WRITE %s ops, RTT %s ms, exe %s ms, queue %s ms, backlog/send %s, max_slots %s" % (
        host, "%s MB/s, " % summary["write_mb_per_second"] if throughput else "", summary["nfs_version"], summary["nconnect"],
        summary["wsize"], summary["write_ops"], summary["write_avg_rtt_ms"],
        summary["write_avg_exe_ms"], summary["write_avg_queue_ms"], summary["backlog_per_send"], summary["max_slots"])


def _client_lines(clients):
    if len(clients) <= PER_HOST_LINES_MAX:
        return [_client_line(host, summary) for host, summary in sorted(clients.items())]
    lines = ["### Clients: distribution over %d hosts" % len(clients), "",
             "| per host | min | p10 | median | p90 | max |", "|---|---|---|---|---|---|"]
    for label, key in (("WRITE MB/s", "write_mb_per_second"), ("WRITE avg RTT ms", "write_avg_rtt_ms"),
                       ("WRITE avg exe ms", "write_avg_exe_ms"), ("WRITE avg queue ms", "write_avg_queue_ms"),
                       ("backlog per send", "backlog_per_send")):
        values = sorted(summary[key] or 0.0 for summary in clients.values())
        figures = [_figure(float(nearest_rank(values, percent / 100.0))) for percent in (0, 10, 50, 90, 100)]
        lines.append("| %s | %s |" % (label, " | ".join(figures)))
    slowest = sorted(clients, key=lambda host: (clients[host]["write_mb_per_second"], host))[:SLOWEST_SHOWN]
    lines += ["", "### Slowest clients (lowest WRITE MB/s)", ""]
    lines += [_client_line(host, clients[host], throughput=True) for host in slowest]
    return lines + [""] + _outlier_lines(clients)


def _outlier_lines(clients):
    """The outliers (OUTLIER_THROUGHPUT_SHARE, OUTLIER_LATENCY_FACTOR) and the settings every one of
    them has that some of the other hosts do not."""
    throughput = nearest_rank(sorted(summary["write_mb_per_second"] for summary in clients.values()), 0.5)
    latency = nearest_rank(sorted(summary["write_avg_exe_ms"] or 0.0 for summary in clients.values()), 0.5)
    outliers = sorted(host for host, summary in clients.items()
                      if summary["write_mb_per_second"] < OUTLIER_THROUGHPUT_SHARE * throughput
                      or (summary["write_avg_exe_ms"] or 0.0) > OUTLIER_LATENCY_FACTOR * latency)
    lines = ["### Outliers", ""]
    if not outliers:
        return lines + ["none: every client within %.0f %% of the median %s MB/s and under %.0fx the median WRITE exe %s ms" % (
            100 * (1 - OUTLIER_THROUGHPUT_SHARE), throughput, OUTLIER_LATENCY_FACTOR, latency)]
    lines.append("%d of %d clients below %.0f %% of the median %s MB/s or above %.0fx the median WRITE exe %s ms: %s" % (
        len(outliers), len(clients), 100 * OUTLIER_THROUGHPUT_SHARE, throughput, OUTLIER_LATENCY_FACTOR, latency, _named(outliers)))
    settings = dict((host, _settings(summary)) for host, summary in clients.items())
    # A set: with thousands of outliers a list's `in` is quadratic.
    outlier_set = set(outliers)
    others = [settings[host] for host in clients if host not in outlier_set]
    shared = []
    for name, value in settings[outliers[0]].items():
        if all(settings[host].get(name) == value for host in outliers):
            alike = sum(1 for other in others if other.get(name) == value)
            if alike < len(others):
                shared.append("%s=%s (%d of the %d other clients)" % (name, value, alike, len(others)))
    lines.append("")
    lines.append("What they share that the others do not all have: %s"
                 % ("; ".join(shared) if shared else "nothing among the mount options and slot settings"))
    return lines


def _settings(summary):
    """A client's mount options and slot settings, comparable between hosts."""
    settings = dict((name, "%s" % (summary.get(name),)) for name in SHARED_SETTINGS)
    settings.update(("sunrpc %s" % name, value) for name, value in sorted((summary.get("sunrpc") or {}).items()))
    return settings


def _server_lines(servers, summarised):
    ordered = sorted(servers.items(), key=lambda item: (-(item[1]["packets_without_idle_thread"] or 0.0), item[0]))
    if len(servers) <= PER_HOST_LINES_MAX:
        ordered = sorted(servers.items())
    lines = []
    if len(servers) > PER_HOST_LINES_MAX:
        lines += ["### Servers: the %d of %d with the most packets without an idle thread" % (PER_HOST_LINES_MAX, len(servers)), ""]
    elif summarised and servers:
        lines += ["### Servers", ""]
    for host, summary in ordered[:PER_HOST_LINES_MAX]:
        lines.append("- server %s: threads %s, %s written, %s RPC calls, packets without idle thread %s" % (
            host, human.number(summary["threads"]), human.size(summary["io_bytes_written"]), human.number(summary["rpc_calls"]),
            human.share(summary["packets_without_idle_thread"])))
    return lines
