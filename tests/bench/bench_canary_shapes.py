# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Canary shapes vs a plain writer: the same files and sizes on one local directory, in one run (issue 28).

For each shape the canary (the real module, a separate process, as Ansible runs it) and a plain
writer (JOBS forked processes doing open/write/fsync/close of exactly the files the shape's plan
names, with the same block size; directories made up front) write into the same directory,
alternating who goes first, ROUNDS times. Both are timed by the same rule: total bytes / (latest
end - earliest start). Prints each round, then per shape the median ratio canary/plain (goal
>= 0.9: the canary's own cost - barriers, metadata ops, its harness - stays out of the figure)
with the spread (min-max), and the command to rerun.

    source scripts/activate
    python tests/bench/bench_canary_shapes.py [--dir /dev/shm/bench] [--jobs 4] [--size-mib 64] [--rounds 3]
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_canary_vs_fio import _collections_root  # noqa: E402  (the one staging of this checkout)

sys.path.insert(0, _collections_root())

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import shapes  # noqa: E402

MIB = 1024 * 1024
# MLPerf llama3 8b is 105 GB over 8 ranks: 13.1 GB a rank; 70b 14.25 GB a rank. Scaled to ~size-mib.
MLPERF_PER_RANK = {"mlperf_llama3_8b": 105e9 / 8, "mlperf_llama3_70b": 912e9 / 64}
SHAPES = ("shared_file", "file_per_rank", "torch_dcp", "megatron", "mlperf_llama3_8b", "mlperf_llama3_70b")


def module_args(shape, directory, jobs, size, block):
    args = {"path": directory, "ranks": jobs, "bytes_per_rank": size, "block_size": block, "shape": shape,
            "fsync": True, "allow_local": True, "timeout": 3600, "start_at": time.time() + 1.5}
    if shape in MLPERF_PER_RANK:
        args["shape_scale"] = size / MLPERF_PER_RANK[shape]
    return args


def run_canary(args):
    args = dict(args, start_at=time.time() + 1.5)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_collections_root(), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-m", "ansible_collections.ckptio.nfs.plugins.modules.checkpoint_canary"],
                          input=json.dumps({"ANSIBLE_MODULE_ARGS": args}), capture_output=True, text=True, env=env, check=False)
    result = json.loads(proc.stdout)
    if result.get("failed"):
        raise SystemExit("canary failed: %s" % result.get("msg"))
    return result["summary"]["throughput_bytes_per_second"]


def _write_files(directory, files, block, start_at, write_end):
    buffer = os.urandom(block)
    time.sleep(max(0.0, start_at - time.time()))
    start = time.time()
    written = 0
    for item in files:
        flags = os.O_WRONLY | (os.O_CREAT if item["create"] else 0)
        fd = os.open(os.path.join(directory, item["name"]), flags, 0o600)
        position, end = item["offset"], item["offset"] + item["length"]
        while position < end:
            position += os.pwrite(fd, buffer[:min(block, end - position)], position)
        written += item["length"]
        os.fsync(fd)
        os.close(fd)
    os.write(write_end, json.dumps([start, time.time(), written]).encode())


def run_plain(args):
    """JOBS forked writers of the plan's files (open/write/fsync/close), started together."""
    plan = shapes.resolve(dict(args, layout="shared_file", files_per_rank=1, direct=False, restore=False,
                               thread_count=1, num_checkpoints=1, first_rank=0, shape_scale=args.get("shape_scale", 1.0)))
    directory = tempfile.mkdtemp(prefix="plain-", dir=args["path"])
    try:
        names = {item["name"] for rank in plan.ranks for item in rank.files()}
        for name in names:
            if "/" in name:
                os.makedirs(os.path.join(directory, os.path.dirname(name)), exist_ok=True)
        for _path_index, name in plan.shared_files:
            open(os.path.join(directory, name), "wb").close()
        start_at = time.time() + 1.0
        children = []
        for rank in plan.ranks:
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read_end)
                try:
                    _write_files(directory, rank.files(), args["block_size"], start_at, write_end)
                finally:
                    os._exit(0)
            os.close(write_end)
            children.append((pid, read_end))
        spans = []
        for pid, read_end in children:
            data = b""
            while True:
                chunk = os.read(read_end, 4096)
                if not chunk:
                    break
                data += chunk
            os.close(read_end)
            os.waitpid(pid, 0)
            spans.append(json.loads(data))
        return sum(s[2] for s in spans) / (max(s[1] for s in spans) - min(s[0] for s in spans))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default=None, help="directory to write in (default: a temp dir under /dev/shm)")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--size-mib", type=int, default=64, help="MiB per rank")
    parser.add_argument("--block-kib", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    options = parser.parse_args()
    base = options.dir or tempfile.mkdtemp(prefix="ckptio-bench-", dir="/dev/shm")
    os.makedirs(base, exist_ok=True)
    ratios = {}
    try:
        for round_number in range(1, options.rounds + 1):
            for shape in options.shapes.split(","):
                args = module_args(shape, base, options.jobs, options.size_mib * MIB, options.block_kib * 1024)
                if round_number % 2:
                    canary_bps, plain_bps = run_canary(args), run_plain(args)
                else:
                    plain_bps = run_plain(args)
                    canary_bps = run_canary(args)
                ratios.setdefault(shape, []).append(canary_bps / plain_bps)
                print("round %d %-18s canary %8.1f MB/s  plain %8.1f MB/s  ratio %.3f"
                      % (round_number, shape, canary_bps / 1e6, plain_bps / 1e6, ratios[shape][-1]), flush=True)
    finally:
        if not options.dir:
            shutil.rmtree(base, ignore_errors=True)
    worst = None
    for shape, values in ratios.items():
        median = statistics.median(values)
        worst = median if worst is None else min(worst, median)
        print("%-18s median canary/plain %.3f (%.3f-%.3f) over %d rounds" % (shape, median, min(values), max(values), len(values)))
    print("rerun: python tests/bench/bench_canary_shapes.py --jobs %d --size-mib %d --block-kib %d --rounds %d%s"
          % (options.jobs, options.size_mib, options.block_kib, options.rounds, " --dir %s" % options.dir if options.dir else ""))
    return 0 if worst is not None and worst >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
