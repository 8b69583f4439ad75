# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What two host samples say about CPUs, disks and the links that carry NFS. Pure logic.

A sample is what host_reader.read_host_sample returns (docs/capture-bundle.md). Nothing here
reads a file; the diagnosis calls these functions on the bundle's host_before.json /
host_after.json (and the canary's samples at the start and end of its ranks).

Rules behind the numbers:
- /proc/stat (proc(5)): cpu lines count USER_HZ ticks per state; busy = all states but idle and
  iowait; shares are of the ticks that passed, so no clock and no HZ is needed.
- /proc/diskstats (Documentation/admin-guide/iostats.rst): field 10 after the name is the time
  the device had I/O in flight (ms): its delta over the window is the device's busy share.
- /sys/class/net/IF/speed is Mb/s; -1 (virtio) or unreadable (no carrier) is unknown, never 0.
  A bond, team or bridge carries what its members carry: its capacity is its own speed when the
  kernel reports one (bonding sums its active slaves) or the sum of its members' known speeds.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import struct

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.numbers import kernel_number

# The interfaces' directory on the host a sample was taken on (sysfs-class-net): where host_reader read
# each speed_mbps, named for the reader of a link row. A host path, not a place this code reads: the
# pure floor names it and host/host_root.py roots it (HostRoot.sys_class_net), so it is written once.
SYS_CLASS_NET = "/sys/class/net"
CPU_STATES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
# The interface counters that count loss (sysfs-class-net-statistics): rx_crc_errors, missed and
# fifo exist only where the driver keeps them (virtio has none).
LOSS_STATISTICS = ("rx_dropped", "tx_dropped", "rx_errors", "tx_errors", "rx_crc_errors", "rx_missed_errors", "rx_fifo_errors")
# Devices that never hold an export: their busy share is noise for the storage layer.
_IGNORED_DISK_PREFIXES = ("loop", "ram", "zram", "sr", "fd")


def parse_proc_stat(text):
    """{"cpu": {state: ticks}, "cpus": {"cpu0": {...}, ...}} from /proc/stat's cpu lines."""
    total = None
    cpus = {}
    for line in (text or "").splitlines():
        words = line.split()
        if not words or not words[0].startswith("cpu"):
            continue
        try:
            values = [kernel_number(word, "cpu ticks", integer=True) for word in words[1:1 + len(CPU_STATES)]]
        except ValueError:
            continue
        values += [0] * (len(CPU_STATES) - len(values))
        counts = dict(zip(CPU_STATES, values))
        if words[0] == "cpu":
            total = counts
        else:
            cpus[words[0]] = counts
    return {"cpu": total, "cpus": cpus}


def _cpu_shares(before, after):
    delta = dict((state, after[state] - before[state]) for state in CPU_STATES)
    if any(value < 0 for value in delta.values()):
        return None
    ticks = sum(delta.values())
    if ticks <= 0:
        return None
    shares = dict((state, delta[state] / float(ticks)) for state in CPU_STATES)
    return {"ticks": ticks, "busy": 1.0 - shares["idle"] - shares["iowait"], "user": shares["user"] + shares["nice"],
            "system": shares["system"], "softirq": shares["irq"] + shares["softirq"], "iowait": shares["iowait"],
            "steal": shares["steal"], "idle": shares["idle"]}


def cpu_window(before_text, after_text, own_cpu_seconds=0.0, window_seconds=None):
    """CPU shares over the window, all CPUs and the busiest one; None when the text has no cpu line.

    reset: the ticks went backwards (a reboot between the samples): no shares are given.
    own_cpu_seconds: CPU the sampler itself used inside the window (the later sample's module
    start); with window_seconds it is taken out of the busy share, as system/user work nobody
    else did (ticks per CPU-second = the window's ticks / (window x CPUs)).
    """
    return cpu_window_counts(parse_proc_stat(before_text), parse_proc_stat(after_text), own_cpu_seconds, window_seconds)


def cpu_window_counts(before, after, own_cpu_seconds=0.0, window_seconds=None):
    """cpu_window() of two parse_proc_stat() results ({"cpu": counts, "cpus": {name: counts}}, counts by CPU_STATES):
    the one arithmetic for /proc/stat's ticks and for node_exporter's node_cpu_seconds_total (prometheus/rows.py)."""
    if not before["cpu"] or not after["cpu"]:
        return None
    shares = _cpu_shares(before["cpu"], after["cpu"])
    if shares is None:
        return {"reset": True, "cpus": len(after["cpus"]) or None}
    cpus = len(after["cpus"]) or 1
    if own_cpu_seconds and window_seconds and window_seconds > 0:
        own_share = min(shares["busy"], own_cpu_seconds / (window_seconds * cpus))
        shares = dict(shares, busy=shares["busy"] - own_share, sampler_share=own_share)
    busiest = None
    for name in sorted(set(before["cpus"]) & set(after["cpus"])):
        one = _cpu_shares(before["cpus"][name], after["cpus"][name])
        if one and (busiest is None or one["busy"] > busiest["busy"]):
            busiest = dict(one, name=name)
    result = dict(shares, reset=False, cpus=len(after["cpus"]) or 1)
    result["busiest_cpu"] = busiest
    return result


def parse_diskstats(text):
    """{device: {"writes", "sectors_written", "io_ticks_ms", ...}} from /proc/diskstats."""
    disks = {}
    for line in (text or "").splitlines():
        words = line.split()
        if len(words) < 14:
            continue
        try:
            numbers = [kernel_number(word, "diskstats", integer=True) for word in words[3:14]]
        except ValueError:
            continue
        disks[words[2]] = {"reads": numbers[0], "sectors_read": numbers[2], "writes": numbers[4],
                           "sectors_written": numbers[6], "write_ms": numbers[7], "io_ticks_ms": numbers[9]}
    return disks


def disk_window(before_text, after_text, seconds):
    """Per device with I/O in the window: busy share (io_ticks / window), writes, bytes written."""
    return disk_window_counts(parse_diskstats(before_text), parse_diskstats(after_text), seconds)


def disk_window_counts(before, after, seconds):
    """disk_window() of two parse_diskstats() results: the one arithmetic for /proc/diskstats and for node_exporter's
    node_disk_* counters (prometheus/rows.py)."""
    rows = []
    if not seconds or seconds <= 0:
        return rows
    for name in sorted(set(before) & set(after)):
        if name.startswith(_IGNORED_DISK_PREFIXES):
            continue
        delta = dict((key, after[name][key] - before[name][key]) for key in after[name])
        if any(value < 0 for value in delta.values()):
            rows.append({"device": name, "reset": True})
            continue
        if not delta["writes"] and not delta["reads"]:
            continue
        rows.append({"device": name, "reset": False, "busy": min(1.0, delta["io_ticks_ms"] / (1000.0 * seconds)),
                     "writes": delta["writes"], "bytes_written": delta["sectors_written"] * 512,
                     "avg_write_ms": delta["write_ms"] / float(delta["writes"]) if delta["writes"] else None})
    return rows


def members(sample, name, seen=None):
    """The interfaces below name (bond slaves, bridge ports, a VLAN's parent), recursively, leaves last."""
    seen = set() if seen is None else seen
    found = []
    for lower in (sample.get("interfaces") or {}).get(name, {}).get("lower") or []:
        if lower in seen:
            continue
        seen.add(lower)
        found.append(lower)
        found.extend(members(sample, lower, seen))
    return found


def capacity_mbps(sample, name):
    """(Mb/s, how it was found) of one interface; (None, why) when no speed is known."""
    interfaces = sample.get("interfaces") or {}
    interface = interfaces.get(name) or {}
    if interface.get("speed_mbps"):
        # Where the host sampler read it (host_root.HostRoot.sys_class_net on that host).
        return interface["speed_mbps"], "%s/%s/speed" % (SYS_CLASS_NET, name)
    lower = interface.get("lower") or []
    if not lower:
        return None, "%s reports no speed (-1 or unreadable, as virtio does)" % name
    speeds = [capacity_mbps(sample, member) for member in lower]
    if interface.get("kind") == "vlan" or len(lower) == 1:
        speed, how = speeds[0]
        return speed, ("%s via %s" % (how, name)) if speed else how
    if all(speed for speed, _how in speeds):
        return sum(speed for speed, _how in speeds), "sum of %s members' speeds (%s)" % (name, ", ".join(lower))
    return None, "%s members without a known speed: %s" % (name, ", ".join(
        member for member, (speed, _how) in zip(lower, speeds) if not speed))


def _ipv4_from_hex(text):
    """/proc/net/route prints addresses as host-order (little-endian on x86) 32-bit hex."""
    return ipaddress.IPv4Address(socket.inet_ntoa(struct.pack("=I", int(text, 16))))


# Route tables parsed once per distinct text: the hosts of one subnet print the same /proc/net/route
# (a 16,384-client bundle parsed it 16,384 times, tests/bench/README.md). The parsed routes are
# immutable (tuples of ipaddress objects and strings); the bound keeps a few distinct tables.
ROUTE_TABLES_CACHED = 64


def parse_route(text):
    """IPv4 routes of /proc/net/route: [(network, interface, gateway, metric)], only routes that are up."""
    return list(_ipv4_routes(text or ""))


@functools.lru_cache(maxsize=ROUTE_TABLES_CACHED)
def _ipv4_routes(text):
    routes = []
    for line in text.splitlines()[1:]:
        words = line.split()
        if len(words) < 8:
            continue
        try:
            destination, gateway, mask = (_ipv4_from_hex(words[index]) for index in (1, 2, 7))
            flags, metric = int(words[3], 16), int(words[6])
            network = ipaddress.IPv4Network("%s/%s" % (destination, mask), strict=False)
        except ValueError:
            continue
        if flags & 0x1:  # RTF_UP
            routes.append((network, words[0], None if int(gateway) == 0 else str(gateway), metric))
    return tuple(routes)


def parse_ipv6_route(text):
    """IPv6 routes of /proc/net/ipv6_route: [(network, interface, gateway, metric)]."""
    return list(_ipv6_routes(text or ""))


@functools.lru_cache(maxsize=ROUTE_TABLES_CACHED)
def _ipv6_routes(text):
    routes = []
    for line in text.splitlines():
        words = line.split()
        if len(words) < 10:
            continue
        try:
            network = ipaddress.IPv6Network((int(words[0], 16), int(words[1], 16)))
            gateway = ipaddress.IPv6Address(int(words[4], 16))
            metric, flags = int(words[5], 16), int(words[8], 16)
        except ValueError:
            continue
        if flags & 0x1:
            routes.append((network, words[9], None if int(gateway) == 0 else str(gateway), metric))
    return tuple(routes)


def parse_fib_trie_locals(text):
    """IPv4 addresses this host holds: the `/32 host LOCAL` leaves of /proc/net/fib_trie."""
    addresses = set()
    last = None
    for line in (text or "").splitlines():
        stripped = line.strip()
        if stripped.startswith("|--"):
            last = stripped[3:].strip()
        elif stripped.startswith("/32 host LOCAL") and last:
            try:
                addresses.add(str(ipaddress.IPv4Address(last)))
            except ValueError:
                pass
    return addresses


def parse_if_inet6(text):
    """{address: interface} from /proc/net/if_inet6."""
    held = {}
    for line in (text or "").splitlines():
        words = line.split()
        if len(words) < 6:
            continue
        try:
            held[str(ipaddress.IPv6Address(int(words[0], 16)))] = words[5]
        except ValueError:
            continue
    return held


def route_to(sample, address):
    """(interface, gateway) the route to address leaves by: longest prefix, then lowest metric."""
    try:
        target = ipaddress.ip_address(address)
    except ValueError:
        return None, None
    tables = sample.get("net") or {}
    return _route_choice(tables.get("route" if target.version == 4 else "ipv6_route") or "", target)


@functools.lru_cache(maxsize=ROUTE_TABLES_CACHED * 4)
def _route_choice(text, target):
    """route_to() in one table (its text: parsed once) for one address: the same answer for every host that prints it."""
    best = None
    for network, interface, gateway, metric in (_ipv4_routes(text) if target.version == 4 else _ipv6_routes(text)):
        if target in network and (best is None or (network.prefixlen, -metric) > (best[0].prefixlen, -best[3])):
            best = (network, interface, gateway, metric)
    return (best[1], best[2]) if best else (None, None)


def holder_of(sample, address):
    """The interface that holds a local address (the one whose connected route contains it)."""
    try:
        target = ipaddress.ip_address(address)
    except ValueError:
        return None
    tables = sample.get("net") or {}
    if target.version == 6:
        return parse_if_inet6(tables.get("if_inet6")).get(str(target))
    if str(target) not in parse_fib_trie_locals(tables.get("fib_trie")):
        return None
    connected = [(network, interface) for network, interface, gateway, _metric in parse_route(tables.get("route"))
                 if gateway is None and network.prefixlen > 0 and target in network]
    return max(connected, key=lambda item: item[0].prefixlen)[1] if connected else None


def nfs_interfaces(sample, server_addresses, side):
    """The top interfaces that carry NFS: a client's route to each server, a server's holder of the address."""
    names = []
    interfaces = sample.get("interfaces") or {}
    for address in sorted(set(server_addresses)):
        name = route_to(sample, address)[0] if side == "client" else holder_of(sample, address)
        if name in interfaces and name not in names:
            names.append(name)
    return names


def link_rows(before, after, server_addresses, side, busy_seconds=None):
    """One row per NFS interface: bytes moved, capacity, utilisation over the window.

    busy_seconds: how long the traffic really flowed (the checkpoint's duration) when that is
    shorter than the window between the samples: utilisation_during assumes all the window's
    bytes moved then, which is what a checkpoint's window holds (nothing else moves gigabytes).
    """
    if not before or not after:
        return []
    seconds = (after.get("time") or 0) - (before.get("time") or 0)
    rows = []
    for name in nfs_interfaces(after, server_addresses, side):
        first = ((before.get("interfaces") or {}).get(name) or {}).get("statistics") or {}
        last = ((after.get("interfaces") or {}).get(name) or {}).get("statistics") or {}
        delta = dict((key, last[key] - first[key]) for key in last if key in first)
        reset = any(value < 0 for value in delta.values())
        speed, how = capacity_mbps(after, name)
        interface = after["interfaces"][name]
        row = {"interface": name, "kind": interface.get("kind"), "members": members(after, name),
               "operstate": interface.get("operstate"), "mtu": interface.get("mtu"), "speed_mbps": speed,
               "speed_source": how, "window_seconds": seconds, "reset": reset,
               "tx_bytes": None if reset else delta.get("tx_bytes"), "rx_bytes": None if reset else delta.get("rx_bytes"),
               "dropped": None if reset else delta.get("tx_dropped", 0) + delta.get("rx_dropped", 0),
               "errors": None if reset else delta.get("tx_errors", 0) + delta.get("rx_errors", 0),
               # Each drop and error counter the driver keeps (crc, missed, fifo where present).
               "loss_counters": None if reset else dict((key, delta[key]) for key in LOSS_STATISTICS if key in delta),
               "utilisation": None, "utilisation_during": None, "busy_seconds": None}
        if not reset and seconds > 0 and "tx_bytes" in delta and "rx_bytes" in delta:
            moved = max(delta["tx_bytes"], delta["rx_bytes"])
            row["bytes_per_second"] = moved / seconds
            if speed:
                capacity = speed * 1e6 / 8
                row["utilisation"] = moved / (capacity * seconds)
                during = busy_seconds if busy_seconds and 0 < busy_seconds < seconds else seconds
                row["busy_seconds"] = during
                row["utilisation_during"] = moved / (capacity * during)
        rows.append(row)
    return rows
