# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kinds of incident text beyond the NFS statistics files, found anywhere in a paste (issue 44). Pure.

readings.read_file asks here after the statistics kinds (recognise.kind_of): every reader below that
recognises some line of the text gives its findings (readings.add_findings turns them into evidence rows,
suspects and faults), so a journal holding a kernel message, a mount line and a training step is read for
all three. The order is the order a person's paste is named by when no statistics kind took it.

- kernel messages: the catalogue built from the kernel's own printk formats (kernel_catalogue.py,
  docs/kernel-messages.md), every NFS, nfsd, lockd and sunrpc message of 5.10, 6.1 and 6.12, and the
  hung-task stack frames that say where a task waits (kernel_frames.py);
- training logs (training_log.py), packet captures (net_capture.py), disk statistics (disk_stats.py), bcc nfsslower (nfsslower.py),
  socket lines of port 2049 (ss_sockets.py), I/O errors a program printed (io_errors.py),
  NFS-Ganesha logs and dbus statistics (ganesha.py), mount.nfs errors (mount_errors.py),
  sar -n NFS/NFSD, perf and lock_stat (server_stats.py), benchmark outputs (benchmarks.py), mount lines,
  fstab, nfs.conf, udev rules and exports (config_texts.py).
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import (
    benchmarks, config_texts, disk_stats, ganesha, io_errors, kernel_catalogue, mount_errors, net_capture, nfsslower, server_stats, ss_sockets, training_log)
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.verdict import LAYERS

READERS = (training_log, io_errors, mount_errors, ganesha, net_capture, ss_sockets, disk_stats, server_stats, nfsslower, benchmarks, config_texts)
KERNEL_MESSAGES = "kernel_messages"
TAKEN_FOR = {KERNEL_MESSAGES: "NFS kernel messages (the catalogue of the kernel's own printk formats)"}
TAKEN_FOR.update((module.KIND, module.TAKEN_FOR) for module in READERS)
CAN_SHOW = {KERNEL_MESSAGES: "each catalogued NFS, nfsd, lockd or sunrpc message with what it means, the layer it speaks "
                             "for or the fault it is, and the source line that prints it; where a hung task waits"}
CAN_SHOW.update((module.KIND, module.CAN_SHOW) for module in READERS)
# What a catalogued message or a stack frame names that is no capacity layer: a fault.
FAULT_KINDS = {"fault_hang": "a hang", "fault_bug": "a known bug", "misconfiguration": "a misconfiguration"}
# What each reader's fault is (diagnosis.json faults[].kind): a hang, a known bug, a misconfiguration, a broken
# path, or the server's storage or service working below itself (a rebuild, a degraded array, a server asking to retry).
FAULT_KIND = {
    "soft_mount": "misconfiguration", "short_timeo": "misconfiguration", "no_attribute_cache": "misconfiguration",
    "readahead_rule_every_device": "misconfiguration", "small_io_size": "misconfiguration", "sync_mount": "misconfiguration",
    "udp_mount": "misconfiguration", "raid_rebuild": "server_storage", "raid_degraded": "server_storage",
    "server_delay": "server", "collective_timeout": "hang", "fragments": "path",
}
_KIND_OF_CATALOGUE = {"fault_hang": "hang", "fault_bug": "bug", "misconfiguration": "misconfiguration"}


def fault_kind(fault):
    """hang, bug, misconfiguration, path, server_storage, server or other."""
    return fault.get("kind") or FAULT_KIND.get(fault["name"]) or ("hang" if fault["name"].startswith("hung_in_") else "other")


# The messages the kernel_log reader already reads (outages, with their length): not counted twice.
_READ_BY_KERNEL_LOG = ("not responding", " OK")
MAX_HITS = 200


class TextReading:
    """One text read by this module's readers, each scan done once: the kinds that recognise a line of it (the
    catalogue's messages and hung tasks found then are kept for the findings), the findings of each kind, and
    the training log's window (kept for partial.training_window)."""

    def __init__(self, text):
        self.text = text
        self.kinds = [module.KIND for module in READERS if module.recognise(text)]
        self.messages = kernel_catalogue.find_messages(text)
        self.tasks = kernel_catalogue.find_stack_frames(text)
        if self.messages.hits or self.tasks.hits:
            self.kinds.append(KERNEL_MESSAGES)
        self.training = None

    def findings(self, kind, kernel_log_read=False):
        """The findings of one kind (see readings.add_findings for their shape)."""
        if kind == KERNEL_MESSAGES:
            return kernel_findings(self.messages, self.tasks, kernel_log_read)
        if kind == training_log.KIND:
            self.training = training_log.window(self.text)
            return training_log.findings_of(self.training)
        return next(module for module in READERS if module.KIND == kind).read(self.text)


def kernel_findings(messages, tasks, kernel_log_read=False):
    """Each catalogued message once (its first line, how many times) and each hung task's wait, as findings.

    A hand-annotated message that speaks for a layer points at it (weight 2: the kernel says so, e.g. "nfsd: too
    many open connections, consider increasing the number of nfsd threads"); one that names a hang, a bug or a
    misconfiguration is a fault with the annotation's fix; an unannotated message is a figure only (weight 0).
    messages, tasks: kernel_catalogue's find_messages and find_stack_frames of the text; kernel_log_read: the
    kernel_log reader already read this text's outages and hung tasks."""
    seen = {}
    for hit in messages.hits[:MAX_HITS * 10]:
        if kernel_log_read and any(mark in hit.message.format for mark in _READ_BY_KERNEL_LOG):
            continue
        entry = seen.setdefault(hit.message.format, [hit, 0])
        entry[1] += 1
    out = [_message_finding(hit, count) for hit, count in list(seen.values())[:MAX_HITS]]
    if not kernel_log_read:
        out += [finding for finding in (_task_finding(task) for task in tasks.hits) if finding]
    if messages.truncated:
        out.append(_plain("kernel messages read", None, "only the first %d MiB of the text were read" % (
            kernel_catalogue.MAX_TEXT // (1024 * 1024)), 1))
    return out


def _site(message):
    versions = sorted(set(version for version, _where, _function in message.sites))
    where = message.sites[-1][1] if message.sites else "-"
    return "%s (printed by %s)" % (where, ", ".join(versions))


def _message_finding(hit, count):
    message = hit.message
    what = message.layer_or_fault
    times = " (%d times)" % count if count > 1 else ""
    text = "%s%s: %s - %s" % (hit.text.strip()[:200], times, message.meaning, _site(message))
    if message.hand and what in LAYERS:
        return {"layer": what, "fault": None, "signal": "kernel message: %s" % message.format, "value": count,
                "threshold": "printed", "crossed": True, "weight": 2, "explanation": text + "; " + message.fix, "line": hit.line}
    if message.hand and what in FAULT_KINDS:
        fault = {"name": _fault_name(message.format), "what": "%s: %s" % (FAULT_KINDS[what], message.meaning),
                 "tuning_fixes": False, "fix": message.fix, "source": _site(message), "kind": _KIND_OF_CATALOGUE[what]}
        return {"layer": None, "fault": fault, "signal": "kernel message: %s" % message.format, "value": count,
                "threshold": "printed", "crossed": True, "weight": 0, "explanation": text, "line": hit.line}
    return _plain("kernel message: %s" % message.format, count, text, hit.line)


def _task_finding(task):
    """A hung task's wait: the frame the hand table knows, the layer or fault it names."""
    wait = task.waits_on
    if wait is None:
        return None
    who = "%s:%s" % (task.task, task.pid) if task.task else "a task (Call Trace without a hung-task line)"
    blocked = " blocked more than %d s" % task.seconds if task.seconds else ""
    text = "%s%s in %s: %s" % (who, blocked, wait.name, wait.meaning)
    if wait.layer_or_fault in LAYERS:
        return {"layer": wait.layer_or_fault, "fault": None, "signal": "hung task waiting in %s" % wait.name,
                "value": task.seconds, "threshold": "hung_task_timeout_secs", "crossed": True, "weight": 1,
                "explanation": text, "line": task.line}
    if wait.layer_or_fault in FAULT_KINDS:
        fault = {"name": "hung_in_%s" % wait.name.rstrip("*"), "kind": _KIND_OF_CATALOGUE[wait.layer_or_fault],
                 "what": "%s: %s" % (FAULT_KINDS[wait.layer_or_fault], wait.meaning),
                 "tuning_fixes": False, "fix": "see where it waits (%s) and the kernel's fixes for it; no capacity tuning "
                                               "frees a task stuck there" % wait.name,
                 "source": "kernel_frames.py (fs/nfs, fs/nfsd, net/sunrpc)"}
        return {"layer": None, "fault": fault, "signal": "hung task waiting in %s" % wait.name, "value": task.seconds,
                "threshold": "hung_task_timeout_secs", "crossed": True, "weight": 0, "explanation": text, "line": task.line}
    return None


def _fault_name(format_text):
    words = [word for word in "".join(char if char.isalnum() else " " for char in format_text).split()
             if not word.isdigit() and len(word) > 1][:5]
    return "_".join(words).lower() or "kernel_message"


def _plain(signal, value, explanation, line):
    return {"layer": None, "fault": None, "signal": signal, "value": value, "threshold": None, "crossed": False,
            "weight": 0, "explanation": explanation, "line": line}
