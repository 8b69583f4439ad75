# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A metadata storm: many small files, so the ranks' time goes to OPEN/CREATE/SETATTR/CLOSE
round trips instead of WRITE. Pure logic on the clients' mountstats deltas and D-state samples.

Each small file costs a fixed train of synchronous round trips (NFSv4: OPEN with create,
SETATTR, the WRITEs, CLOSE; with fsync a COMMIT), so below some size the file count, not the
bytes, sets the time, and the server's disk idles. Lab (kernel 6.1, tuned, 256 files x 4 KiB per
rank, tests/fixtures/captures/small_files): OPEN + SETATTR + CLOSE took two thirds of the
request time while the server's disk was 0.65 % busy.

Thresholds:
- METADATA_TIME_SHARE 0.5: metadata ops took at least half of the clients' request time
  (ops x avg exe, RFC 8881's synchronous OPEN/CLOSE included): they, not the data, set the pace.
- METADATA_OPS_PER_MIB 4: a checkpoint file of 64 MiB or more costs well under one metadata op
  per MiB; 4 per MiB means files of about 1 MiB or less (3-4 metadata ops each).
- STORAGE_IDLE_SHARE 0.5: the server's busiest disk had I/O in flight less than half the time.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import signals

METADATA_TIME_SHARE = signals.METADATA_TIME_SHARE.threshold
METADATA_OPS_PER_MIB = signals.METADATA_OPS_PER_MIB.threshold
STORAGE_IDLE_SHARE = signals.STORAGE_IDLE_SHARE.threshold
MIB = 1048576.0
# Wait sites of a task creating or opening a file on NFS (/proc/PID/wchan or the stack's first
# frame): fs/nfs/nfs4proc.c and dir.c, fs/namei.c's open path.
CREATE_OPEN_SITES = ("nfs4_do_open", "nfs4_run_open_task", "_nfs4_do_open", "nfs4_open", "nfs_atomic_open", "nfs4_atomic_open",
                     "nfs4_proc_setattr", "nfs4_do_setattr", "_nfs4_do_setattr", "nfs4_do_close", "nfs4_close",
                     "nfs_create", "nfs4_proc_create", "nfs_lookup", "nfs4_proc_lookup", "lookup_open", "path_openat",
                     "do_filp_open", "nfs_mkdir", "nfs4_proc_mkdir")


# A wait site is a name, or a name and an offset ("nfs4_do_open+0x1a4/0x2c0"): its part before
# the first "+" in a set is the same test as == or startswith(name + "+") over the names (no name
# holds a "+"), without a scan of 20 names per site (860,000 tests at 16,384 clients: 0.5 s).
_CREATE_OPEN_NAMES = frozenset(CREATE_OPEN_SITES)


def _op_figures(clients, metadata_ops):
    """(request time of every op, of the metadata ops, metadata op count, files closed, bytes written)
    over the clients, in one pass over their ops (four passes took 0.4 s at 16,384 clients); each
    total adds the same figures in the same order as a pass of its own did."""
    metadata_ops = frozenset(metadata_ops)
    all_time = metadata_time = 0.0
    metadata_counts, closes, written = [], [], []
    for client in clients:
        delta = client["delta"]
        for name, op in delta["ops"].items():
            all_time += op["ops"] * op["avg_exe_ms"]
            if name in metadata_ops:
                metadata_time += op["ops"] * op["avg_exe_ms"]
                metadata_counts.append(op["ops"])
        written.append(delta["write_bytes"])
        closes.append((delta["ops"].get("CLOSE") or {}).get("ops", 0))
    return all_time, metadata_time, sum(metadata_counts), sum(closes), sum(written)


def _dstate_sites(clients):
    """(samples in create/open paths, D-state samples with a known site) over the clients."""
    in_paths = known = 0
    for client in clients:
        counts = (client.get("dstate") or {}).get("wchan_counts") or {}
        for site, count in counts.items():
            known += count
            if site.partition("+")[0] in _CREATE_OPEN_NAMES:
                in_paths += count
    return in_paths, known


def assess(evidence, clients, metadata_ops, disk_busy, server_cpu_saturated):
    """{"storm": bool, "time_share", "ops_per_mib", "files", "bytes_per_file", "dstate_share"}; evidence rows for access_pattern."""
    all_time, metadata_time, count, files, written = _op_figures(clients, metadata_ops)
    share = metadata_time / all_time if all_time else None
    if any(set(metadata_ops) - set(client["delta"].get("ops_counted") or metadata_ops) for client in clients):
        # A source that counts some ops only (prometheus/rows.py: WRITE, COMMIT, READ) measured no metadata op: not 0.
        share = None
    per_mib = count / (written / MIB) if written else None
    in_paths, known = _dstate_sites(clients)
    result = {"storm": False, "time_share": share, "ops_per_mib": per_mib, "files": files,
              "bytes_per_file": written / files if files else None, "dstate_share": in_paths / float(known) if known else None}
    if share is None:
        return result
    storage_idle = disk_busy is None or disk_busy < STORAGE_IDLE_SHARE
    storm = share >= METADATA_TIME_SHARE and (per_mib or 0) >= METADATA_OPS_PER_MIB and storage_idle
    result["storm"] = evidence.add(
        "access_pattern", "metadata ops' share of the request time (OPEN/CREATE/SETATTR/CLOSE/GETATTR/LOOKUP/...)", share,
        ">= %.2f, with >= %.0f metadata ops per MiB written and the server's disk < %.2f busy" % (
            METADATA_TIME_SHARE, METADATA_OPS_PER_MIB, STORAGE_IDLE_SHARE), storm,
        "%d metadata ops for %.1f MiB written (%s per MiB), %d files closed (%s each); server disk %s busy%s%s" % (
            count, written / MIB, "%.1f" % per_mib if per_mib is not None else "-", files,
            "%.0f KiB" % (result["bytes_per_file"] / 1024) if result["bytes_per_file"] else "-",
            "%.1f %%" % (100 * disk_busy) if disk_busy is not None else "unmeasured",
            "; %d of %d D-state samples in create/open paths" % (in_paths, known) if known else "",
            "; the server's CPUs were saturated too" if server_cpu_saturated else ""))
    return result


def shape_rec(storm, canary):
    """Which part of the checkpoint's shape to change, from what the window shows."""
    per_file = storm["bytes_per_file"]
    # context.yml's canary.ranks counts every rank of every client (canary/plan.py: len(ranks))
    ranks = canary.get("ranks") or 0
    files_per_rank = storm["files"] / float(ranks) if ranks else None
    return {"layer": "access_pattern", "setting": "checkpoint shape", "value": None,
            "action": "fewer, larger files per rank: %s%s files of %s each now - aim for 64 MiB or more per file" % (
                "%.0f " % files_per_rank if files_per_rank else "", "per rank," if files_per_rank else "",
                "%.0f KiB" % (per_file / 1024) if per_file else "a few KiB"),
            "how": "pack the rank's tensors into one file (or a few) per rank (PyTorch DCP FileSystemWriter writes one file "
                   "per rank; torch.save of a dict instead of one file per tensor); give each rank its own directory rather "
                   "than one shared directory, so creates do not serialise on the directory's lock on the server",
            "reason": "metadata ops took %.0f %% of the request time (%.0f per MiB written) while the server's disk idled: "
                      "each file costs OPEN, SETATTR and CLOSE round trips, so the file count, not the bytes, sets the time" % (
                          100 * storm["time_share"], storm["ops_per_mib"] or 0)}


def drain_rec(storm):
    """The other way out of a storm the training waits on: the files' round trips off its critical path."""
    return {"layer": "access_pattern", "setting": "checkpoint staging", "value": None,
            "action": "write the checkpoint to node-local storage and drain it to NFS in the background (one archive per rank)",
            "how": "a local NVMe burst buffer or an async checkpoint writer (PyTorch DCP async_save): the ranks block only "
                   "for local writes; the drain pays the NFS round trips while training runs, packed into one file per rank",
            "reason": "each of the %d files cost its own OPEN, SETATTR and CLOSE round trips, which the ranks waited for" % (
                storm["files"] or 0)}
