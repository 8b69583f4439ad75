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

The delta (module_utils/kernel_text/stats_delta.py) reads two samples of a mount through SamplePair
(module_utils/kernel_text/sample_pair.py), the one place that knows which parts of two samples can be
compared as text; the shape helpers it shares with xprt_columns() live here.
"""

from __future__ import annotations

import re

from functools import lru_cache
from itertools import islice

from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import split_options, unescape_path
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.numbers import (
    KERNEL_COUNTER_MAX,
    above_kernel_counter,
    has_long_digit_run,
    shown,
)

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

# What one connect adds to a transport's connect_count, by protocol. TCP counts the connect's
# start and its establishment (xs_stream_start_connect, xs_tcp_state_change in
# net/sunrpc/xprtsock.c): 2 on every fresh v3 and v4.1 mount of the lab on 5.10, 6.1 and 6.12
# (tests/fixtures/paste/*/mountstats_before.txt). RDMA counts the established connect only
# (xprt_rdma_connect_worker, net/sunrpc/xprtrdma/transport.c). UDP has no connect_count.
CONNECTS_PER_CONNECT = {"tcp": 2, "rdma": 1}

# The kernel closes a transport nobody used for 5 minutes and opens it again on the next request
# (XS_IDLE_DISC_TO, net/sunrpc/xprtsock.c; RPCRDMA_IDLE_DISC_TO in xprtrdma); while it is closed
# its xprt line prints idle_time 0 (xs_tcp_print_stats prints it only while connected). Measured
# on the lab, 6.1 (tests/fixtures/samples/idle_reopen/NOTES.txt): a v3 mount unused for 5 min had
# no socket and idle_time 0, and its next write raised connect_count 2 -> 4; the v4.1 mount's
# transport stayed open (its lease renewal uses it every ~60 s).
IDLE_CLOSE_SECONDS = 300


def connects_per_connect(protocols):
    """connect_count added by one connect of a mount's transports (protocols: their names)."""
    return max([CONNECTS_PER_CONNECT.get(protocol, 0) for protocol in protocols or ["tcp"]])


def connects_since_mount_unexplained(connect_count, protocols, transports, seconds):
    """connect_count since the mount beyond what a healthy mount makes: each transport's first
    connect, and one reopening per IDLE_CLOSE_SECONDS of its life (an unused transport is closed
    and opened again); what is left can only be churn (lost or dropped connections)."""
    allowed = connects_per_connect(protocols) * (transports or 1) * (1 + int((seconds or 0) // IDLE_CLOSE_SECONDS))
    return max(0, (connect_count or 0) - allowed)


class MountStats:
    """One mount's statistics. Sections are kept as text and parsed on first use: a delta
    mostly compares text, and only converts the numbers that moved."""

    __slots__ = ("device", "mount_point", "fstype", "statvers", "age", "rpc_version", "program", "other",
                 "opts_text", "events_text", "bytes_text", "xprt_lines", "ops_text", "truncated",
                 "not_kernel_values",
                 "_opts", "_events", "_bytes", "_xprts", "_op_lines", "_ops")

    def __init__(self, device, mount_point, fstype, statvers):
        self.device = device
        self.mount_point = mount_point
        self.fstype = fstype
        self.statvers = statvers
        self.age = None
        self.rpc_version = None
        self.program = None
        # Lines of the mount block we do not interpret (caps:, nfsv4:, sec:, impl_id:, new
        # ones from newer kernels): kept by label so nothing is silently lost.
        self.other = {}
        self.opts_text = ""
        self.events_text = ""
        self.bytes_text = ""
        self.xprt_lines = []
        # Everything after the "per-op statistics" line.
        self.ops_text = ""
        # Why the block lacks what the kernel always prints (a capture cut short), or None.
        self.truncated = None
        # Why a counter of the block is no kernel value (above 2^64: numbers.py), or None; such a
        # counter is read as 0, so no figure is made of it, and the delta is not usable.
        self.not_kernel_values = None
        self._opts = self._events = self._bytes = self._xprts = self._op_lines = self._ops = None

    @property
    def is_nfs(self):
        return self.fstype in NFS_FSTYPES

    @property
    def opts(self):
        if self._opts is None:
            # nfs-utils' mountstats joins the line's words before splitting on commas: a blank
            # after a comma ("acregmax=60, acdirmin=30") must not make a key " acdirmin".
            self._opts = split_options("".join(self.opts_text.split()))
        return self._opts

    @property
    def events(self):
        if self._events is None:
            self._events = _named_counters(EVENT_NAMES, self.events_text)
        return self._events

    @property
    def bytes(self):
        if self._bytes is None:
            self._bytes = _named_counters(BYTE_NAMES, self.bytes_text)
        return self._bytes

    @property
    def xprts(self):
        """[(protocol, (int, ...)), ...] one entry per xprt line, in file order."""
        if self._xprts is None:
            self._xprts = [parsed for parsed in (_parse_xprt_line(line) for line in self.xprt_lines) if parsed]
        return self._xprts

    @property
    def op_lines(self):
        """{"WRITE": " 4477 4477 0 ...": the text after the colon}."""
        if self._op_lines is None:
            self._op_lines = {}
            for line in self.ops_text.split("\n"):
                name, sep, rest = line.partition(":")
                if sep:
                    self._op_lines[name.strip()] = rest
        return self._op_lines

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

    def identity(self):
        """(mount point, device, fstype, vers, proto): what names one mount block in both samples.

        vers and proto are taken from the opts: text without splitting the whole line: a delta
        keys every block of the before sample, and most are never paired with anything that
        needs their other options.
        """
        return (self.mount_point, self.device, self.fstype, _option_text(self.opts_text, "vers"),
                _option_text(self.opts_text, "proto"))

    def xprt_dicts(self):
        """One dict per xprt line: named counters, plus `extra` for fields we do not name."""
        return [xprt_values_as_dict(protocol, values) for protocol, values in self.xprts]

    def xprt_columns(self):
        return xprt_columns(self.xprt_lines)

    def xprt_totals(self):
        """Counters summed over all transports (nconnect) and per-connection max_slots."""
        return totals_from_columns(self.xprt_columns())

    def as_dict(self):
        """Everything, JSON-ready, with field names (what the module returns); `not_kernel_values` only when a counter
        was refused."""
        view = {
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
            "truncated": self.truncated,
        }
        if self.not_kernel_values:
            view["not_kernel_values"] = self.not_kernel_values
        return view


def parse_op_values(text):
    """' 4477 4477 0 269402488 ...' -> tuple of ints; junk fields end the list."""
    try:
        # Kernel output is all numbers: one conversion pass in C, the loop below only for junk.
        return tuple(map(int, text.split()))
    except ValueError:
        pass
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


def _parse_xprt_line(line):
    words = line.split()
    if len(words) < 2 or words[0] != "xprt:":
        return None
    try:
        return words[1], tuple(map(int, words[2:]))
    except ValueError:
        pass
    values = []
    for word in words[2:]:
        try:
            values.append(int(word))
        except ValueError:
            break
    return words[1], tuple(values)


# The counters deltas need; srcport and connect_time are left as text on the fast path.
_COLUMNS_USED = frozenset(XPRT_SUMMED + ("max_slots", "idle_time"))


def xprt_columns(xprt_lines):
    """{"protocols": [...], "columns": {name: [value per transport]}} for the xprt lines."""
    if xprt_lines:
        columns = _strided_xprt_columns(xprt_lines)
        if columns is not None:
            return columns
    # Mixed or odd lines: one at a time.
    parsed = [xprt for xprt in (_parse_xprt_line(line) for line in xprt_lines) if xprt]
    columns = {}
    for index, (protocol, values) in enumerate(parsed):
        named = xprt_values_as_dict(protocol, values)
        for name in set(columns) | set(named):
            if name in ("protocol", "extra"):
                continue
            columns.setdefault(name, [None] * index).append(named.get(name))
    return {"protocols": [protocol for protocol, _values in parsed], "columns": columns}


def _strided_xprt_columns(xprt_lines):
    """xprt_columns() of lines that share protocol and width, from one split of their joined
    text and a strided slice per counter (no Python loop per line), or None."""
    words, shape = xprt_words(xprt_lines)
    if shape is None:
        return None
    protocol, width = shape
    try:
        columns = dict((name, list(map(int, words[offset::width]))) for offset, name in used_xprt_positions(protocol, width))
    except ValueError:
        return None
    return {"protocols": [protocol] * len(xprt_lines), "columns": columns}


def xprt_words(xprt_lines):
    """(the words of the joined xprt lines, their xprt_words_shape())."""
    words = " ".join(xprt_lines).split()
    return words, xprt_words_shape(words, len(xprt_lines))


def xprt_words_shape(words, count):
    """(protocol, words per line) when the words of `count` joined xprt lines are `count` lines
    of the same protocol and width, else None."""
    if not count:
        return None
    width = len(words) // count
    protocol = words[1] if len(words) > 1 else None
    if (width > 2 and width * count == len(words) and words[0::width].count("xprt:") == count
            and words[1::width].count(protocol) == count):
        return protocol, width
    return None


@lru_cache(maxsize=None)
def used_xprt_positions(protocol, width):
    """(word offset in a line, counter name) of the counters deltas and totals use."""
    names = XPRT_FIELDS.get(protocol, ())
    return tuple((2 + position, name) for position, name in enumerate(names[:width - 2]) if name in _COLUMNS_USED)


def column_total(column):
    """Sum of one counter over the transports; a transport whose line lacks it holds None there."""
    try:
        return sum(column)
    except TypeError:
        # Mixed forms (an old kernel's shorter line beside a new one).
        return sum(value for value in column if value is not None)


def totals_from_columns(xprt):
    """Sum the per-transport counters; keep max_slots per connection (a high-water mark)."""
    columns = xprt["columns"]
    totals = {}
    for name in XPRT_SUMMED:
        totals[name] = column_total(columns.get(name, ()))
    totals["transports"] = len(xprt["protocols"])
    totals["protocols"] = sorted(set(xprt["protocols"]))
    totals["max_slots"] = [value for value in columns.get("max_slots", ()) if value is not None]
    return totals


def _option_text(opts_text, name):
    """The value of one option in an opts: line, or None."""
    key = name + "="
    text = opts_text.lstrip()
    if text.startswith(key):
        start = len(key)
    else:
        found = text.find("," + key)
        if found < 0:
            return None
        start = found + 1 + len(key)
    end = text.find(",", start)
    return text[start:end if end >= 0 else len(text)].strip()


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
    return MountStats(_unescape(words[1]), _unescape(words[4]), words[7], statvers)


def _unescape(path):
    # Most paths carry no escape, or only \040 for a space: skip the regular expression for them.
    if "\\" not in path:
        return path
    if path.count("\\") == path.count("\\040"):
        return path.replace("\\040", " ")
    return unescape_path(path)


def _named_counters(names, text):
    words = text.split()
    try:
        values = list(map(int, words))
    except ValueError:
        return _named_counters_skipping_junk(names, words)
    # All numbers (what the kernel prints): name them in one zip.
    counters = dict(zip(names, values))
    if len(values) > len(names):
        counters["extra"] = values[len(names):]
    return counters


def _named_counters_skipping_junk(names, words):
    counters = {}
    extra = []
    for index, word in enumerate(words):
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


_DEVICE = "\ndevice "
_LINES_PER_CHUNK = 8192
_CHARS_PER_READ = 1 << 18


def _split_blocks(text):
    """Mount blocks ("device ..." up to the next one) of a text; junk before the first is skipped."""
    if text.startswith("device "):
        position = 0
    else:
        position = text.find(_DEVICE)
        if position < 0:
            return
        position += 1
    while True:
        following = text.find(_DEVICE, position)
        if following < 0:
            yield text[position:]
            return
        yield text[position:following + 1]
        position = following + 1


def _split_nfs_blocks(text):
    """The blocks of _split_blocks(text) whose device line has " fstype nfs" (what _parse_block_lines keeps
    with nfs_only), found in C: the others (25 of 27 in the lab's captures) are never cut out of the text."""
    found = text.find(" fstype nfs")
    while found >= 0:
        start = text.rfind(_DEVICE, 0, found) + 1
        following = text.find(_DEVICE, found)
        # On the device line (the kernel escapes blanks in paths) of a block (not junk before the first).
        if (start or text.startswith("device ")) and text.find("\n", start, found) < 0:
            yield text[start:following + 1] if following >= 0 else text[start:]
        if following < 0:
            return
        found = text.find(" fstype nfs", following + 1)


def _iter_blocks(source, nfs_only=False):
    split = _split_nfs_blocks if nfs_only else _split_blocks
    if isinstance(source, str):
        yield from split(source)
        return
    read = getattr(source, "read", None)
    if read is not None:
        # An open file: fixed-size reads skip making a string per line (a third of the parse
        # time on a 1,000-mount file) and keep memory flat whatever the file size.
        chunks = iter(lambda: read(_CHARS_PER_READ), "")
    else:
        # Any other iterable of lines: join a few thousand at a time in C.
        chunks = _joined_line_chunks(iter(source))
    pending = ""
    for chunk in chunks:
        pending += chunk
        # Hand on every complete block, carry the unfinished last one over.
        last = pending.rfind(_DEVICE)
        if last < 0:
            continue
        yield from split(pending[:last + 1])
        pending = pending[last + 1:]
    yield from split(pending)


def _joined_line_chunks(lines_iterator):
    while True:
        lines = list(islice(lines_iterator, _LINES_PER_CHUNK))
        if not lines:
            return
        yield "".join(lines) if lines[0].endswith("\n") else "\n".join(lines) + "\n"


def _parse_block(block, nfs_only):
    mount = _parse_block_lines(block, nfs_only)
    if mount is not None and mount.is_nfs:
        if has_long_digit_run(block):
            mount.not_kernel_values = refuse_out_of_range(mount)
        mount.truncated = truncation(mount, "per-op statistics" in block)
    return mount


def refuse_out_of_range(mount):
    """A sentence naming each counter of mount above 2^64 (no kernel value: numbers.py), each set to 0
    in the text so no figure is made of it, or None. Asked only of a block that holds a run of 20 digits
    (has_long_digit_run: a mount point may hold one too)."""
    found = []
    if mount.age is not None and mount.age > KERNEL_COUNTER_MAX:
        found.append("age is %s: above 2^64, not a kernel counter" % shown(mount.age))
        mount.age = 0
    if has_long_digit_run(mount.events_text):
        mount.events_text = _zero_out_of_range("events", mount.events_text, EVENT_NAMES, found)
    if has_long_digit_run(mount.bytes_text):
        mount.bytes_text = _zero_out_of_range("bytes", mount.bytes_text, BYTE_NAMES, found)
    if any(has_long_digit_run(line) for line in mount.xprt_lines):
        mount.xprt_lines = [_zero_out_of_range_in_line(line, None, found) for line in mount.xprt_lines]
    if has_long_digit_run(mount.ops_text):
        mount.ops_text = "\n".join(_zero_out_of_range_in_line(line, OP_FIELDS, found) for line in mount.ops_text.split("\n"))
    return "; ".join(found) or None


def _zero_out_of_range_in_line(line, names, found):
    label, sep, rest = line.partition(":")
    return label + sep + _zero_out_of_range(label.strip(), rest, names, found) if sep else line


def _zero_out_of_range(label, text, names, found):
    """text (the numbers after LABEL:; of an xprt line, the protocol first, when names is None) with each
    number above 2^64 made 0, and a sentence naming it (label and field) added to found."""
    if not has_long_digit_run(text):
        return text
    parts = _BLANKS.split(text)
    index = -1 if names is None else 0
    for position, part in enumerate(parts):
        if not part or part.isspace():
            continue
        if index < 0:
            names, index = XPRT_FIELDS.get(part, ()), 0
            continue
        if above_kernel_counter(part):
            field = names[index] if index < len(names) else "field %d" % (index + 1)
            found.append("%s %s is %s: above 2^64, not a kernel counter" % (label, field, shown(part)))
            parts[position] = "0"
        index += 1
    return "".join(parts)


def expected_op_fields(rpc_version):
    """Counters on every per-op line: 8 in RPC iostats 1.0, 9 (with errors) from 1.1 on."""
    return 8 if rpc_version == "1.0" else 9


def truncation(mount, has_ops_marker):
    """Why an NFS mount block lacks lines the kernel always prints, or None when it is whole.

    For an NFS mount nfs_show_stats() (fs/nfs/super.c) always prints opts:, age:, events:,
    bytes:, then rpc_clnt_show_stats() (net/sunrpc/stats.c) the RPC iostats line, the xprt
    lines, "per-op statistics" and one line per procedure of the version, each with every
    counter of its iostats version, ending in a newline. A capture cut short (a copy that
    stopped, a full disk) loses the end of that: the cut is in the last op line there is, so
    only that line is read here (the whole section would cost a split per block; see
    tests/bench/bench_mountstats.py). A line cut at its end is seen only with the other
    sample: SamplePair.op_list_cut() compares the two op lists.
    """
    if not has_ops_marker:
        return "the block ends before its per-op statistics"
    missing = [label for label, present in (("opts", mount.opts_text), ("age", mount.age is not None),
                                            ("RPC iostats version", mount.rpc_version)) if not present]
    if missing:
        return "no %s line before the per-op statistics" % " / ".join(missing)
    ops_text = mount.ops_text
    body = ops_text.rstrip("\n")
    if not body.strip():
        return "no op line after \"per-op statistics\""
    last_line = body[body.rfind("\n") + 1:]
    name, sep, rest = last_line.partition(":")
    wanted = expected_op_fields(mount.rpc_version)
    values = parse_op_values(rest) if sep else ()
    if len(values) < wanted:
        return "the %s line has %d of %d counters (RPC iostats %s)" % (name.strip(), len(values), wanted, mount.rpc_version)
    if len(body) == len(ops_text):
        # The kernel ends every line with a newline: the last number may be cut short.
        return "the last line has no newline (cut inside it): %r" % last_line[:60]
    return None


def _parse_block_lines(block, nfs_only):
    end_of_line = block.find("\n")
    if end_of_line < 0:
        end_of_line = len(block)
    # Most blocks of a client's file are not NFS (proc, sysfs, tmpfs...: 25 of 27 in the lab's
    # captures); the kernel escapes blanks in paths, so " fstype nfs" is only ever the fstype.
    if nfs_only and " fstype nfs" not in block[:end_of_line]:
        return None
    mount = _parse_device_line(block[:end_of_line])
    if mount is None or (nfs_only and not mount.is_nfs):
        return None
    marker = block.find("per-op statistics", end_of_line)
    if marker < 0:
        head = block[end_of_line + 1:]
    else:
        head = block[end_of_line + 1:marker]
        ops_start = block.find("\n", marker)
        # A block cut inside the marker line has a marker but no op line: "\n" keeps that visible.
        mount.ops_text = block[ops_start + 1:] if ops_start >= 0 else ""
    # The kernel prints the xprt lines last, one per transport (16 with nconnect=16): when that
    # run is intact, take it with one split instead of testing each line.
    xprt_at = head.find("\txprt:")
    if xprt_at >= 0 and (xprt_at == 0 or head[xprt_at - 1] == "\n"):
        tail = head[xprt_at:].split("\n")
        if head.count("\n\txprt:", xprt_at) == len(tail) - 2:
            _parse_head_lines(mount, head[:xprt_at].split("\n"))
            mount.xprt_lines.extend(tail[:-1])
            # What precedes "per-op statistics" on its line (a tab).
            _parse_head_lines(mount, tail[-1:])
            return mount
    _parse_head_lines(mount, head.split("\n"))
    return mount


def _parse_head_lines(mount, lines):
    """The lines between the device line and "per-op statistics", in file order."""
    for line in lines:
        if line.startswith("\txprt:"):
            mount.xprt_lines.append(line)
            continue
        label, sep, rest = line.strip().partition(":")
        if not sep:
            continue
        if label == "opts":
            mount.opts_text = rest
        elif label == "age":
            try:
                mount.age = int(rest.split()[0])
            except (IndexError, ValueError):
                mount.age = None
        elif label == "events":
            mount.events_text = rest
        elif label == "bytes":
            mount.bytes_text = rest
        elif label == "xprt":
            mount.xprt_lines.append(line.strip())
        elif label.startswith("RPC iostats version"):
            # 'RPC iostats version: 1.1  p/v: 100003/4 (nfs)'
            words = rest.split()
            mount.rpc_version = words[0] if words else None
            if len(words) >= 3 and words[1] == "p/v:":
                mount.program = words[2]
        else:
            mount.other[label] = rest.strip()


def iter_mountstats(lines, nfs_only=True):
    """Yield a MountStats per mount block of `lines` (text, an open file, or any iterable of
    lines with or without line ends).

    Unknown lines are skipped (a parser for live kernel output must not crash on a line it
    has not seen); fields newer kernels append are kept as `extra`.
    """
    for block in _iter_blocks(lines, nfs_only):
        mount = _parse_block(block, nfs_only)
        if mount is not None:
            yield mount


_OP_LINE = re.compile(r"^\s*[A-Z][A-Z0-9_]*:(\s+\d+){8,}\s*$")


def parse_mount_lines(text):
    """A MountStats of lines cut out of one mount block without its device line (a paste of its
    `opts:`, `age:`, `xprt:` or op lines), or None when they hold none of those.

    The same readers as a whole block; device, mount point and fstype are None, and `truncated`
    says the block is a fragment, so nothing reads it as a whole mount. Op lines are taken with
    or without their "per-op statistics" line (one with at least 8 counters: iostats 1.0).
    """
    mount = MountStats(None, None, None, None)
    head, ops = [], []
    for line in text.split("\n"):
        (ops if _OP_LINE.match(line) else head).append(line)
    _parse_head_lines(mount, [line for line in head if line.strip() != "per-op statistics"])
    mount.ops_text = "".join(line.strip() + "\n" for line in ops)
    if not (mount.opts_text or mount.xprt_lines or mount.ops_text or mount.age is not None):
        return None
    mount.truncated = "lines cut out of a mount block (no device line)"
    return mount


def parse_mountstats(lines, nfs_only=True):
    """List of as_dict() views of every (NFS) mount: the module's `mounts` result."""
    return [mount.as_dict() for mount in iter_mountstats(lines, nfs_only=nfs_only)]


# ---------------------------------------------------------------- the "before" of a since-mount delta
# Lines of a mount block whose numbers are counters (zeroed); every other line (opts, caps,
# nfsv4, sec, impl_id, the RPC iostats line) says what the mount is and is kept as it is.
_COUNTER_LABELS = ("age", "events", "bytes")


def since_mount_sample(text):
    """Mountstats text with the NFS mount blocks of `text` and every counter zero.

    The "before" sample of a delta over a mount's whole life (one snapshot saved by hand): the
    kernel starts each counter at zero when it mounts (nfs_alloc_iostats, rpc_alloc_iostats), and
    `age:` is the seconds since then, so after - zero over age is the since-mount average that
    nfsiostat's first report prints. Each op line keeps its number of counters and the xprt
    lines their source port (not a counter), so the zero sample pairs with `text` exactly as two
    kernel samples do (SamplePair, stats_delta.mount_delta). Other file systems' blocks are left out.
    """
    lines = []
    in_nfs = in_ops = False
    for line in text.split("\n"):
        if line.startswith("device "):
            mount = _parse_device_line(line)
            in_nfs, in_ops = mount is not None and mount.is_nfs, False
            if in_nfs:
                lines.append(line)
            continue
        if not in_nfs:
            continue
        lines.append(_zeroed_line(line, in_ops))
        in_ops = in_ops or line.strip() == "per-op statistics"
    return "\n".join(lines) + "\n" if lines else ""


def _zeroed_line(line, in_ops):
    """One line of the zero sample: its counters 0, its blanks as they were."""
    label, sep, rest = line.partition(":")
    name = label.strip()
    if not sep or not (in_ops or name in _COUNTER_LABELS or name == "xprt"):
        return line
    # "xprt: tcp SRCPORT counters...": the protocol and the port name the transport.
    keep = 2 if name == "xprt" and not in_ops else 0
    parts = _BLANKS.split(rest)
    seen = 0
    for index, part in enumerate(parts):
        if part and not part.isspace():
            if seen >= keep:
                parts[index] = "0"
            seen += 1
    return label + sep + "".join(parts)


_BLANKS = re.compile(r"(\s+)")
