# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read one host sample: CPU, disks and network interfaces, as the capture bundle stores them.

The second (read-only) I/O exception in module_utils, beside file_read/file_write: three modules
(nfs_client_stats, nfsd_stats, checkpoint_canary) take the same sample, so the reading is
written once. It only reads /proc and /sys (through file_read.read, kernel=True) and runs no
command, so it is the same in check mode; everything it derives lives in the pure module
host_evidence.

Sample format (docs/capture-bundle.md, host_before.json / host_after.json):
    {"format": 1, "time": EPOCH, "uptime": SECONDS, "proc_stat": TEXT, "diskstats": TEXT,
     "interfaces": {IF: {"operstate", "speed_mbps", "mtu", "kind", "lower": [IF...],
                         "statistics": {NAME: INT}}},
     "net": {"route", "fib_trie", "if_inet6", "ipv6_route": TEXT}, "nfs_server_addresses": [ADDRESS...],
     "tcp": {"snmp": TEXT, "netstat": TEXT}, "errors": [TEXT...]}
"tcp" holds only the Tcp: / TcpExt: line pairs of /proc/net/snmp and /proc/net/netstat (the
loss counters module_utils/diagnosis/network_loss.py reads); samples from before it have no "tcp".
"""

from __future__ import annotations

import os
import resource
import time

from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read

SAMPLE_FORMAT = 1
NET_TABLES = ("route", "fib_trie", "if_inet6", "ipv6_route")
NET_TABLE_LIMIT = 262144
# The counters utilisation and loss are computed from (Documentation/ABI/testing/sysfs-class-net-statistics).
NET_STATISTICS = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_dropped", "tx_dropped", "rx_errors", "tx_errors",
                  # Where the driver keeps them (virtio has no CRC counter): a bad cable or optic
                  # (crc), a NIC ring the host did not drain (missed, fifo).
                  "rx_crc_errors", "rx_missed_errors", "rx_fifo_errors")
# /proc/net/snmp and /proc/net/netstat print "Prefix: names" then "Prefix: values" (proc(5));
# the TCP loss counters are on the Tcp: and TcpExt: pairs, the rest (Ip, Icmp, Udp...) is not kept.
TCP_FILES = (("snmp", "Tcp:"), ("netstat", "TcpExt:"))
TCP_FILE_LIMIT = 65536


def _number(text):
    try:
        return int((text or "").strip())
    except ValueError:
        return None


def _interface_kind(directory, uevent):
    """bond / bridge / vlan / team / ... from sysfs; 'physical' when backed by a device."""
    devtype = None
    for line in (uevent or "").splitlines():
        if line.startswith("DEVTYPE="):
            devtype = line.split("=", 1)[1].strip()
    if os.path.isdir(os.path.join(directory, "bonding")):
        return "bond"
    if os.path.isdir(os.path.join(directory, "bridge")):
        return "bridge"
    if devtype:
        return devtype
    if os.path.exists(os.path.join(directory, "device")):
        return "physical"
    return "virtual"


def read_interface(name, root):
    directory = os.path.join(root, name)
    # speed: Mb/s; -1 (virtio, no carrier) or EINVAL (link down) is unknown, never zero.
    speed = _number(file_read.read(os.path.join(directory, "speed"), kernel=True))
    try:
        lower = sorted(entry[len("lower_"):] for entry in os.listdir(directory) if entry.startswith("lower_"))
    except OSError:
        lower = []
    statistics = {}
    for counter in NET_STATISTICS:
        value = _number(file_read.read(os.path.join(directory, "statistics", counter), kernel=True))
        if value is not None:
            statistics[counter] = value
    return {
        "operstate": (file_read.read(os.path.join(directory, "operstate"), kernel=True) or "").strip() or None,
        "speed_mbps": speed if speed is not None and speed > 0 else None,
        "mtu": _number(file_read.read(os.path.join(directory, "mtu"), kernel=True)),
        "kind": _interface_kind(directory, file_read.read(os.path.join(directory, "uevent"), kernel=True)),
        "lower": lower,
        "statistics": statistics,
    }


def _read_capped(path, errors, limit):
    text = file_read.read(path, kernel=True)
    if text is None:
        errors.append("cannot read %s" % path)
        return ""
    if len(text) > limit:
        # A router's full table can be megabytes; hosts that serve or mount NFS hold a few lines.
        errors.append("%s is larger than %d bytes: not kept" % (path, limit))
        return ""
    return text


def _own_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return round(usage.ru_utime + usage.ru_stime + children.ru_utime + children.ru_stime, 3)


def read_host_sample(host, route_addresses=()):
    """One sample of host (a host_root.HostRoot), from /proc and /sys only (no command: it is safe in check mode).

    route_addresses: the NFS server addresses this host talks to (a client passes mountinfo
    `addr=`); the routing tables kept in the sample tell later which interface carries them.
    """
    root, proc = host.sys_class_net, host.proc
    errors = []
    sample = {"format": SAMPLE_FORMAT, "time": round(time.time(), 3), "uptime": None,
              "proc_stat": "", "diskstats": "", "interfaces": {},
              "nfs_server_addresses": sorted(set(route_addresses)), "net": {}, "errors": errors,
              # CPU this process (the module, with Python's start and Ansible's wrapper) used before
              # the sample: the measurement's own cost, which the diagnosis takes out again.
              "sampler_cpu_seconds": _own_cpu_seconds()}
    # The kernel decides facts the diagnosis states (module_utils/kernel_text/kernels.py).
    sample["kernel_release"] = (file_read.read(os.path.join(proc, "sys", "kernel", "osrelease"), kernel=True) or "").strip() or None
    uptime = (file_read.read(os.path.join(proc, "uptime"), kernel=True) or "").split()
    if uptime:
        try:
            sample["uptime"] = float(uptime[0])
        except ValueError:
            pass
    stat = file_read.read(os.path.join(proc, "stat"), kernel=True)
    if stat is None:
        errors.append("cannot read %s/stat" % proc)
    else:
        # Only the cpu lines: the rest (intr with thousands of counters) is large and unused.
        sample["proc_stat"] = "".join(line + "\n" for line in stat.splitlines() if line.startswith("cpu"))
    sample["diskstats"] = file_read.read(os.path.join(proc, "diskstats"), kernel=True) or ""
    try:
        names = sorted(os.listdir(root))
    except OSError as exc:
        errors.append("cannot list %s: %s" % (root, exc))
        names = []
    for name in names:
        if name != "lo":
            sample["interfaces"][name] = read_interface(name, root)
    # Addresses and routes, verbatim (proc(5)): host_evidence finds which interface holds an
    # address (fib_trie LOCAL entries, if_inet6) and which one a route to a server leaves by
    # (longest prefix in route / ipv6_route; policy routing rules are not followed).
    for name in NET_TABLES:
        sample["net"][name] = _read_capped(os.path.join(proc, "net", name), errors, NET_TABLE_LIMIT)
    sample["tcp"] = read_tcp_counters(proc, errors)
    return sample


def read_tcp_counters(proc, errors):
    """{"snmp": TEXT, "netstat": TEXT}: the Tcp: and TcpExt: lines of /proc/net/snmp and /proc/net/netstat."""
    counters = {}
    for name, prefix in TCP_FILES:
        text = _read_capped(os.path.join(proc, "net", name), errors, TCP_FILE_LIMIT)
        counters[name] = "".join(line + "\n" for line in text.splitlines() if line.startswith(prefix))
    return counters
