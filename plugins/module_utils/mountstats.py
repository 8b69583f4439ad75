# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse /proc/self/mountstats (the NFS client's per-mount statistics).

Pure functions: callers pass text or any iterable of lines (an open file streams, so a
1,000-mount file is never held in memory twice).

Format (kernel fs/nfs/super.c nfs_show_stats, net/sunrpc/stats.c rpc_clnt_show_stats,
net/sunrpc/xprtsock.c xs_*_print_stats; nfs-utils' mountstats is the reference reader):

    device SRV:/export mounted on /mnt with fstype nfs4 statvers=1.1
        opts:   rw,vers=4.1,rsize=...          age:    SECONDS
        events: 27 counters                    bytes:  8 counters
        RPC iostats version: 1.1  p/v: 100003/4 (nfs)
        xprt:   tcp|udp|rdma COUNTERS...       (nconnect=N prints N lines)
        per-op statistics
                WRITE: ops trans timeouts bytes_sent bytes_recv queue_ms rtt_ms execute_ms [errors]

Per-op lines are kept as their text until a caller asks for the numbers: most of the ~70
op lines of a mount never change between two samples, and comparing two strings is far
cheaper than converting nine integers twice (see tests/bench/bench_mountstats.py).
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.mountinfo import split_options, unescape_path

NFS_FSTYPES = ("nfs", "nfs4")

# Kernel enum nfs_stat_eventcounters (include/linux/nfs_iostat.h), in print order.
EVENT_NAMES = (
    "inoderevalidates", "dentryrevalidates", "datainvalidates", "attrinvalidates",
    "vfsopen", "vfslookup", "vfsaccess", "vfsupdatepage", "vfsreadpage", "vfsreadpages",
    "vfswritepage", "vfswritepages", "vfsgetdents", "vfssetattr", "vfsflush", "vfsfsync",
    "vfslock", "vfsrelease", "congestionwait", "setattrtrunc", "extendwrite", "sillyrename",
    "shortread", "shortwrite", "delay", "pnfs_read", "pnfs_write",
)

# Kernel enum nfs_stat_bytecounters.
BYTE_NAMES = (
    "normalreadbytes", "normalwritebytes", "directreadbytes", "directwritebytes",
    "serverreadbytes", "serverwritebytes", "readpages", "writepages",
)

OP_FIELDS = ("ops", "transmissions", "timeouts", "bytes_sent", "bytes_recv", "queue_ms", "rtt_ms", "execute_ms", "errors")

# xprt counters by transport and field count. Old kernels print fewer fields (no max_slots,
# sending_u, pending_u), so the name list is chosen by how many numbers the line carries.
_TCP_FIELDS = ("srcport", "bind_count", "connect_count", "connect_time", "idle_time", "sends", "recvs",
               "bad_xids", "req_u", "bklog_u", "max_slots", "sending_u", "pending_u")
_UDP_FIELDS = ("srcport", "bind_count", "sends", "recvs", "bad_xids", "req_u", "bklog_u",
               "max_slots", "sending_u", "pending_u")
# xprtrdma (net/sunrpc/xprtrdma/transport.c xprt_rdma_print_stats): the generic counters
# first, then RDMA-specific ones we keep unnamed (they change between kernels).
_RDMA_FIELDS = ("srcport", "bind_count", "connect_count", "connect_time", "idle_time", "sends", "recvs",
                "bad_xids", "req_u", "bklog_u")
XPRT_FIELDS = {"tcp": _TCP_FIELDS, "udp": _UDP_FIELDS, "rdma": _RDMA_FIELDS}

# Counters that accumulate per transport: with nconnect they are summed over the lines.
XPRT_SUMMED = ("sends", "recvs", "bad_xids", "req_u", "bklog_u", "sending_u", "pending_u", "connect_count", "bind_count")


class MountStats:
    """One mount's statistics; per-op numbers are parsed on first use."""

    __slots__ = ("device", "mount_point", "fstype", "statvers", "opts", "age", "events", "bytes",
                 "rpc_version", "program", "xprts", "op_lines", "other", "_ops")

    def __init__(self, device, mount_point, fstype, statvers):
        self.device = device
        self.mount_point = mount_point
        self.fstype = fstype
        self.statvers = statvers
        self.opts = {}
        self.age = None
        self.events = {}
        self.bytes = {}
        self.rpc_version = None
        self.program = None
        # [(protocol, (int, ...)), ...] one entry per xprt line, in file order.
        self.xprts = []
        # {"WRITE": " 4477 4477 0 ...\n"}: the text after the colon.
        self.op_lines = {}
        # Lines of the mount block we do not interpret (caps:, nfsv4:, sec:, impl_id:, new
        # ones from newer kernels): kept by label so nothing is silently lost.
        self.other = {}
        self._ops = None

    @property
    def is_nfs(self):
        return self.fstype in NFS_FSTYPES

    @property
    def nfs_version(self):
        """'3', '4.0', '4.1', '4.2' from opts (mountstats always prints vers= for NFS)."""
        vers = self.opts.get("vers")
        if vers is None:
            return "4" if self.fstype == "nfs4" else "3"
        if vers == "4":
            return "4.%s" % self.opts.get("minorversion", "0")
        return vers

    @property
    def nconnect(self):
        return int(self.opts.get("nconnect") or 1)

    def op(self, name):
        """Numbers of one op as a dict of OP_FIELDS (errors None before iostats 1.1)."""
        return op_values_as_dict(self.ops.get(name))

    @property
    def ops(self):
        """{name: tuple of ints}: 8 numbers, or 9 when the kernel prints the errors column."""
        if self._ops is None:
            self._ops = dict((name, parse_op_values(text)) for name, text in self.op_lines.items())
        return self._ops

    def xprt_dicts(self):
        """One dict per xprt line: named counters, plus `extra` for fields we do not name."""
        result = []
        for protocol, values in self.xprts:
            result.append(xprt_values_as_dict(protocol, values))
        return result

    def xprt_totals(self):
        """Counters summed over all transports (nconnect) and per-connection max_slots."""
        return sum_xprts(self.xprts)

    def as_dict(self):
        """Everything, JSON-ready, with field names (what the module returns)."""
        return {
            "device": self.device,
            "mount_point": self.mount_point,
            "fstype": self.fstype,
            "statvers": self.statvers,
            "nfs_version": self.nfs_version if self.is_nfs else None,
            "opts": dict(self.opts),
            "age": self.age,
            "events": dict(self.events),
            "bytes": dict(self.bytes),
            "rpc_iostats_version": self.rpc_version,
            "program": self.program,
            "xprt": self.xprt_dicts(),
            "xprt_totals": self.xprt_totals(),
            "ops": dict((name, op_values_as_dict(values)) for name, values in self.ops.items()),
            "other": dict(self.other),
        }


def parse_op_values(text):
    """' 4477 4477 0 269402488 ...' -> tuple of ints; junk fields end the list."""
    values = []
    for word in text.split():
        try:
            values.append(int(word))
        except ValueError:
            break
    return tuple(values)


def op_values_as_dict(values):
    if values is None:
        return None
    result = dict(zip(OP_FIELDS, values))
    for name in OP_FIELDS[len(values):]:
        # statvers 1.0 kernels print 8 numbers: no errors column. Missing counters are None,
        # never 0, so nobody reads "no errors" where the kernel did not count them.
        result[name] = None
    if len(values) > len(OP_FIELDS):
        result["extra"] = list(values[len(OP_FIELDS):])
    return result


def xprt_values_as_dict(protocol, values):
    names = XPRT_FIELDS.get(protocol, ())
    result = {"protocol": protocol}
    result.update(zip(names, values))
    if len(values) > len(names):
        result["extra"] = list(values[len(names):])
    return result


def sum_xprts(xprts):
    """Sum the per-transport counters; keep max_slots per connection (a high-water mark)."""
    totals = dict((name, 0) for name in XPRT_SUMMED)
    max_slots = []
    protocols = []
    for protocol, values in xprts:
        named = xprt_values_as_dict(protocol, values)
        protocols.append(protocol)
        for name in XPRT_SUMMED:
            totals[name] += named.get(name, 0)
        if "max_slots" in named:
            max_slots.append(named["max_slots"])
    totals["transports"] = len(xprts)
    totals["protocols"] = sorted(set(protocols))
    totals["max_slots"] = max_slots
    return totals


def _parse_device_line(line):
    """'device SRC mounted on MP with fstype T [statvers=V]' -> MountStats or None."""
    words = line.split()
    # Paths are escaped by the kernel (\040 for space), so they never contain blanks.
    if len(words) < 8 or words[2] != "mounted" or words[3] != "on" or words[6] != "fstype":
        return None
    statvers = None
    for word in words[8:]:
        if word.startswith("statvers="):
            statvers = word[len("statvers="):]
    return MountStats(unescape_path(words[1]), unescape_path(words[4]), words[7], statvers)


def _parse_header_line(mount, line):
    label, sep, rest = line.strip().partition(":")
    if not sep:
        return
    if label == "xprt":
        words = rest.split()
        if not words:
            return
        values = []
        for word in words[1:]:
            try:
                values.append(int(word))
            except ValueError:
                break
        mount.xprts.append((words[0], tuple(values)))
    elif label == "opts":
        mount.opts = split_options(rest.strip())
    elif label == "age":
        try:
            mount.age = int(rest.split()[0])
        except (IndexError, ValueError):
            mount.age = None
    elif label == "events":
        mount.events = _named_counters(EVENT_NAMES, rest)
    elif label == "bytes":
        mount.bytes = _named_counters(BYTE_NAMES, rest)
    elif label.startswith("RPC iostats version"):
        # 'RPC iostats version: 1.1  p/v: 100003/4 (nfs)'
        words = rest.split()
        mount.rpc_version = words[0] if words else None
        if len(words) >= 3 and words[1] == "p/v:":
            mount.program = words[2]
    else:
        mount.other[label] = rest.strip()


def _named_counters(names, text):
    counters = {}
    extra = []
    for index, word in enumerate(text.split()):
        try:
            value = int(word)
        except ValueError:
            continue
        if index < len(names):
            counters[names[index]] = value
        else:
            extra.append(value)
    if extra:
        counters["extra"] = extra
    return counters


def iter_mountstats(lines, nfs_only=True):
    """Yield a MountStats per mount block of `lines` (text or any iterable of lines).

    Unknown lines are skipped (a parser for live kernel output must not crash on a line it
    has not seen); fields newer kernels append are kept as `extra`.
    """
    if isinstance(lines, str):
        lines = lines.splitlines()
    mount = None
    in_ops = False
    for line in lines:
        if line.startswith("device "):
            if mount is not None and (mount.is_nfs or not nfs_only):
                yield mount
            mount = _parse_device_line(line)
            in_ops = False
            continue
        if mount is None:
            continue
        if in_ops:
            name, sep, rest = line.partition(":")
            if sep:
                mount.op_lines[name.strip()] = rest
            continue
        if "per-op statistics" in line:
            in_ops = True
            continue
        _parse_header_line(mount, line)
    if mount is not None and (mount.is_nfs or not nfs_only):
        yield mount


def parse_mountstats(lines, nfs_only=True):
    """List of as_dict() views of every (NFS) mount: the module's `mounts` result."""
    return [mount.as_dict() for mount in iter_mountstats(lines, nfs_only=nfs_only)]
