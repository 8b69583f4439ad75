# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the NFS server's counters: /proc/net/rpc/nfsd and /proc/fs/nfsd/{threads,pool_stats,...}.

Pure functions on text. Format of /proc/net/rpc/nfsd (kernel fs/nfsd/stats.c nfsd_show,
net/sunrpc/stats.c svc_seq_show; nfs-utils nfsstat reads the same lines):
    rc hits misses nocache | fh stale ... | io bytes_read bytes_written | th threads ...
    net packets udp tcp tcpconn | rpc calls badcalls badfmt badauth badclnt
    proc3 COUNT n0 n1 ... | proc4 COUNT ... | proc4ops COUNT n0 n1 ...  (index = op number)
Only the first number of `th` still means anything (the thread count); the histogram after it
has been zero since kernel 2.6.29 (parse_nfsd_stats keeps it as `th` for older kernels' pastes,
_thread_line). Unknown lines are kept by label under `other`; a line that
is not what its label says (binary garbage) yields what it holds and never stops the parse.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.numbers import NotAKernelValue, kernel_number

# NFSv3 procedures by number (RFC 1813).
NFS3_PROCS = (
    "NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ", "WRITE", "CREATE",
    "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK", "READDIR", "READDIRPLUS",
    "FSSTAT", "FSINFO", "PATHCONF", "COMMIT",
)
NFS4_PROCS = ("NULL", "COMPOUND")
# NFSv4 operations by number (RFC 7530, 8881, 7862, 8276); 0-2 are unused.
NFS4_OPS = (
    "OP0", "OP1", "OP2", "ACCESS", "CLOSE", "COMMIT", "CREATE", "DELEGPURGE", "DELEGRETURN",
    "GETATTR", "GETFH", "LINK", "LOCK", "LOCKT", "LOCKU", "LOOKUP", "LOOKUPP", "NVERIFY", "OPEN",
    "OPENATTR", "OPEN_CONFIRM", "OPEN_DOWNGRADE", "PUTFH", "PUTPUBFH", "PUTROOTFH", "READ",
    "READDIR", "READLINK", "REMOVE", "RENAME", "RENEW", "RESTOREFH", "SAVEFH", "SECINFO",
    "SETATTR", "SETCLIENTID", "SETCLIENTID_CONFIRM", "VERIFY", "WRITE", "RELEASE_LOCKOWNER",
    "BACKCHANNEL_CTL", "BIND_CONN_TO_SESSION", "EXCHANGE_ID", "CREATE_SESSION",
    "DESTROY_SESSION", "FREE_STATEID", "GET_DIR_DELEGATION", "GETDEVICEINFO", "GETDEVICELIST",
    "LAYOUTCOMMIT", "LAYOUTGET", "LAYOUTRETURN", "SECINFO_NO_NAME", "SEQUENCE", "SET_SSV",
    "TEST_STATEID", "WANT_DELEGATION", "DESTROY_CLIENTID", "RECLAIM_COMPLETE", "ALLOCATE", "COPY",
    "COPY_NOTIFY", "DEALLOCATE", "IO_ADVISE", "LAYOUTERROR", "LAYOUTSTATS", "OFFLOAD_CANCEL",
    "OFFLOAD_STATUS", "READ_PLUS", "SEEK", "WRITE_SAME", "CLONE", "GETXATTR", "SETXATTR",
    "LISTXATTRS", "REMOVEXATTR",
)

_NAMED_LINES = {
    "rc": ("hits", "misses", "nocache"),
    "fh": ("stale", "total_lookups", "anon_lookups", "dir_not_in_cache", "nondir_not_in_cache"),
    "io": ("bytes_read", "bytes_written"),
    "net": ("packets", "udp", "tcp", "tcp_connections"),
    "rpc": ("calls", "bad_calls", "bad_format", "bad_auth", "bad_client"),
}
_PROC_LINES = {"proc2": None, "proc3": NFS3_PROCS, "proc4": NFS4_PROCS, "proc4ops": NFS4_OPS}


def _ints(words, label=None, found=None):
    """Leading numbers of a line; the first word that is not one ends the list.

    A number no kernel prints (numbers.py: below 0, above 2^64, nan, inf) ends it too, and a
    sentence naming the line's label and the field's position goes to found (the parse's
    `not_kernel_values`), so a 400-digit counter is never a figure.
    """
    values = []
    for word in words:
        try:
            number = kernel_number(word, "")
        except NotAKernelValue as error:
            if found is not None and _is_number(word):
                found.append("%s field %d%s" % (label, len(values) + 1, str(error)))
            break
        values.append(number)
    return values


def _is_number(word):
    try:
        float(word)
    except (ValueError, OverflowError):
        return word.lstrip("+-").isdecimal()
    return True


def parse_nfsd_stats(text):
    """/proc/net/rpc/nfsd text -> dict (io, rpc, net, rc, fh: named; proc3/proc4ops: by op name)."""
    result = {"threads": None, "other": {}}
    found = []
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        label = words[0]
        values = _ints(words[1:], label, found)
        if label in _NAMED_LINES:
            names = _NAMED_LINES[label]
            entry = dict(zip(names, values))
            if len(values) > len(names):
                entry["extra"] = values[len(names):]
            result[label] = entry
        elif label == "th":
            result["threads"] = int(values[0]) if values else None
            result["th"] = _thread_line(values)
        elif label in _PROC_LINES:
            # First number is how many counters follow; newer kernels add ops at the end.
            counters = values[1:] if values else []
            names = _PROC_LINES[label] or ()
            result[label] = dict(
                (names[index] if index < len(names) else "%s_%d" % (label, index), int(value))
                for index, value in enumerate(counters))
        else:
            result["other"][label] = values
    if found:
        result["not_kernel_values"] = found
    return result


def _thread_line(values):
    """The `th` line: {"threads", "all_busy_count", "busy_seconds"} (busy_seconds None when not kept).

    Kernels before 2.6.29 (fs/nfsd/stats.c nfsd_proc_show, nfsd_svc.c nfsd()) printed "th THREADS
    FULLCNT" then ten "SEC.MSEC" figures: th_fullcnt counted the times every thread was busy, and
    th_usage[i] the seconds during which i*10 to (i+1)*10 % of the threads were busy. 2.6.29 stopped
    keeping them and later kernels print "th THREADS 0 0.000 ... 0.000" (the lab's 5.10 / 6.1 / 6.12):
    all zero means "not counted", never "never busy".
    """
    if not values:
        return None
    histogram = [float(value) for value in values[2:12]]
    kept = len(values) >= 12 and (values[1] or any(histogram))
    return {"threads": int(values[0]), "all_busy_count": int(values[1]) if kept else None,
            "busy_seconds": histogram if kept else None}


def parse_pool_stats(text):
    """/proc/fs/nfsd/pool_stats -> {columns, pools: [{pool, packets-arrived, ...}]}.

    The columns differ by kernel (overloads-avoided was dropped in 6.x, others may come):
    the header line names them, so we never assume positions.
    """
    columns = []
    pools = []
    found = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            columns = stripped.lstrip("#").split()
            continue
        if not columns:
            continue
        values = _ints(stripped.split(), "pool line %r" % stripped.split()[0][:24], found)
        if len(values) < 2:
            continue
        pool = dict(zip(columns, (int(value) for value in values)))
        pools.append(pool)
    result = {"columns": columns, "pools": pools}
    if found:
        result["not_kernel_values"] = found
    return result


def parse_single_number(text):
    """Content of /proc/fs/nfsd/threads, max_block_size, min_threads: an int, or None."""
    words = (text or "").split()
    try:
        return kernel_number(words[0], "", integer=True)
    except (IndexError, ValueError):
        return None


def parse_pool_threads(text):
    """/proc/fs/nfsd/pool_threads: one number per pool."""
    # isdecimal, not isdigit: int() refuses the superscript digits isdigit() accepts.
    return [int(word) for word in (text or "").split() if word.isdecimal()]


# ---------------------------------------------------------------- nfsstat -s tables
# `nfsstat -s` (nfs-utils utils/nfsstat/nfsstat.c) prints the counters of /proc/net/rpc/nfsd as
# tables: a "Server ...:" title, then lines of names and lines of their values ("count pct%" in
# the procedure tables). Each table below is one line of the kernel file; the names are
# nfsstat's, listed in the kernel's order (nfsstat prints `fh` in another order).
_NFSSTAT_NAMED = {
    "Server packet stats": ("net", ("packets", "udp", "tcp", "tcpconn")),
    "Server rpc stats": ("rpc", ("calls", "badcalls", "badfmt", "badauth", "badclnt")),
    "Server reply cache": ("rc", ("hits", "misses", "nocache")),
    "Server io stats": ("io", ("read", "write")),
    "Server file handle cache": ("fh", ("stale", "lookup", "anon", "ncachedir", "ncachenondir")),
}
# Procedure tables: nfsstat prints every procedure in number order, so a name's position is its
# index in the kernel line (nfsstat leaves out a version whose counters are all zero).
_NFSSTAT_PROCS = {"Server nfs v2": "proc2", "Server nfs v3": "proc3", "Server nfs v4": "proc4",
                  "Server nfs v4 operations": "proc4ops"}


def _nfsstat_tables(text):
    """{title: [(name, value), ...]} of nfsstat's "Server ...:" tables; ValueError when a title repeats."""
    tables = {}
    title = None
    names = []
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if line.rstrip().endswith(":") and not line[0].isspace():
            title = line.rstrip()[:-1]
            if title in tables:
                raise ValueError("the table %r is printed twice (several reports in one file: nfsstat -Z, or two runs)" % title)
            tables[title], names = [], []
            continue
        if title is None:
            continue
        numbers = [word for word in words if not word.endswith("%")]
        if numbers and all(word.isdigit() for word in numbers):
            tables[title].extend(zip(names, (int(word) for word in numbers)))
            names = []
        else:
            names = words
    return tables


def nfsstat_tables(text):
    """{title: [(name, count), ...]} of every table of nfsstat output ("Server ...:" or "Client ...:"; -c, -s, -v alike)."""
    return _nfsstat_tables(text)


def nfsd_text_from_nfsstat(text):
    """/proc/net/rpc/nfsd lines rebuilt from `nfsstat -s` output: (text, [kernel line labels]).

    Only what nfsstat printed comes back: plain `nfsstat -s` has the rpc and procedure tables,
    `-v` (or `-o all`) adds packets, the reply cache, io bytes and the file handle cache. The
    percentages are nfsstat's own arithmetic and dropped. ValueError when the text holds no
    server table, or one table twice (nfsstat -Z prints a report per interval).
    """
    tables = _nfsstat_tables(text)
    lines = []
    for title, (label, names) in _NFSSTAT_NAMED.items():
        values = dict(tables.get(title, ()))
        row = []
        for name in names:
            if name not in values:
                break
            row.append(values[name])
        if row:
            lines.append("%s %s" % (label, " ".join(str(value) for value in row)))
    for title, label in _NFSSTAT_PROCS.items():
        if tables.get(title):
            counts = [value for _name, value in tables[title]]
            lines.append("%s %d %s" % (label, len(counts), " ".join(str(value) for value in counts)))
    if not lines:
        raise ValueError("no nfsstat server table (\"Server rpc stats:\", \"Server nfs v4:\", ...)")
    return "\n".join(lines) + "\n", [line.split()[0] for line in lines]
