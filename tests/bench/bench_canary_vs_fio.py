# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Canary vs fio: the same sequential write on one local directory, in one run.

Both write JOBS files of SIZE bytes each in BLOCK-byte writes, from JOBS processes, with an
fsync at the end of each file (fio: --fsync_on_close=1 --end_fsync=1), into the same directory,
alternating canary and fio ROUNDS times so a drifting disk cache hurts both alike. Prints each
round, the median ratio canary/fio (goal >= 0.9: the canary measures storage, not itself) and
the command to rerun.

    source scripts/activate
    python tests/bench/bench_canary_vs_fio.py [--dir DIR] [--jobs 4] [--size-mib 256] [--block-kib 1024] [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_canary(directory, jobs, size, block, direct=False):
    """The real module (a separate process, as Ansible runs it) with file_per_rank, fsync."""
    # start_at a moment ahead, as the playbook sets it: every rank is forked and waiting, so the
    # measured span is the write, not Python's fork loop.
    args = {"ANSIBLE_MODULE_ARGS": {"path": directory, "ranks": jobs, "bytes_per_rank": size, "block_size": block,
                                    "layout": "file_per_rank", "fsync": True, "allow_local": True, "timeout": 3600, "direct": direct,
                                    "start_at": time.time() + 1.5}}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_collections_root(), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-m", "ansible_collections.ckptio.nfs.plugins.modules.checkpoint_canary"],
                          input=json.dumps(args), capture_output=True, text=True, env=env, check=False)
    result = json.loads(proc.stdout)
    if result.get("failed"):
        raise SystemExit("canary failed: %s" % result.get("msg"))
    return result["summary"]["throughput_bytes_per_second"]


def _collections_root():
    """A directory holding ansible_collections/ckptio/nfs -> this checkout."""
    stage = os.path.join(tempfile.gettempdir(), "ckptio-bench-collections")
    link = os.path.join(stage, "ansible_collections", "ckptio", "nfs")
    # A link left by another checkout (or a removed worktree) would bench that code, or none.
    if os.path.islink(link) and os.readlink(link) != str(REPO):
        os.unlink(link)
    if not os.path.islink(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(REPO, link)
    return stage


def run_fio(directory, jobs, size, block, direct=False):
    """fio doing the same: JOBS processes, one file each, sequential writes, fsync at close.

    Throughput is fio's group bandwidth: total bytes over the group's runtime (the slowest job,
    fsync included), the same rule as the canary's aggregate. --fallocate=none: fio would
    otherwise pre-allocate the files outside the timed run, which a checkpoint writer does not.
    """
    proc = subprocess.run(["fio", "--name=ckpt", "--directory=%s" % directory, "--rw=write", "--bs=%d" % block,
                           "--size=%d" % size, "--numjobs=%d" % jobs, "--ioengine=psync", "--end_fsync=1",
                           "--fsync_on_close=1", "--group_reporting", "--output-format=json", "--unlink=1",
                           "--fallocate=none", "--direct=%d" % int(direct)],
                          capture_output=True, text=True, check=True)
    write = json.loads(proc.stdout)["jobs"][0]["write"]
    # With group_reporting, write.runtime (ms) is the group's wall time; job_runtime is the sum
    # over jobs and would understate fio.
    return write["io_bytes"] / (write["runtime"] / 1000.0)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default=None, help="directory to write in (default: a temp dir under /var/tmp)")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--size-mib", type=int, default=256, help="MiB per job")
    parser.add_argument("--block-kib", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--direct", action="store_true", help="O_DIRECT on both (not on tmpfs: use a disk)")
    options = parser.parse_args()
    if not shutil.which("fio"):
        raise SystemExit("fio is not installed (Debian: apt-get install fio)")
    base = options.dir or tempfile.mkdtemp(prefix="ckptio-bench-", dir="/var/tmp")
    size = options.size_mib * 1024 * 1024
    block = options.block_kib * 1024
    ratios = []
    try:
        for round_number in range(1, options.rounds + 1):
            # Alternate who goes first: writeback left over from one run must not favour the other.
            if round_number % 2:
                canary_bps = run_canary(base, options.jobs, size, block, options.direct)
                fio_bps = run_fio(base, options.jobs, size, block, options.direct)
            else:
                fio_bps = run_fio(base, options.jobs, size, block, options.direct)
                canary_bps = run_canary(base, options.jobs, size, block, options.direct)
            ratios.append(canary_bps / fio_bps)
            print("round %d: canary %.1f MB/s, fio %.1f MB/s, ratio %.3f"
                  % (round_number, canary_bps / 1e6, fio_bps / 1e6, ratios[-1]))
    finally:
        if not options.dir:
            shutil.rmtree(base, ignore_errors=True)
    median = statistics.median(ratios)
    print("median ratio canary/fio: %.3f (goal >= 0.9) over %d rounds of %d jobs x %d MiB, %d KiB blocks, fsync%s"
          % (median, len(ratios), options.jobs, options.size_mib, options.block_kib, ", O_DIRECT" if options.direct else ""))
    print("rerun: python tests/bench/bench_canary_vs_fio.py --jobs %d --size-mib %d --block-kib %d --rounds %d%s%s"
          % (options.jobs, options.size_mib, options.block_kib, options.rounds, " --dir %s" % options.dir if options.dir else "",
             " --direct" if options.direct else ""))
    return 0 if median >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
