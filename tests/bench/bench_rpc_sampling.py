# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lab benchmark: what checkpoint_canary's rpc_sampling costs (issue 47), side by side in one run.

    source scripts/activate; python3 tests/bench/bench_rpc_sampling.py [--rounds N] [--ranks N] [--bytes-per-rank N] [--host nfs2]

Needs a running lab (scripts/lab up; tuned or not). Runs the canary module directly on one client
(`ansible HOST -m ckptio.nfs.checkpoint_canary`, no role, so Ansible's own polling is not in the
window) with rpc_sampling off, queues and trace in turn, --rounds times (interleaved, so host
load drifts alike over the three), and prints per mode the medians of
  - throughput (summary.throughput_bytes_per_second) and its ratio to off,
  - the canary process's CPU over the window (harness.canary_cpu_seconds) and its ratio to off,
  - the sampler's own CPU in the write window (rpc_samples.cost.window_cpu_seconds: the passes and
    the tracepoints' switches; the share its 5 % budget bounds) and all of it (cpu_seconds +
    trace_cpu_seconds: with trace also the instance's set-up before the go and the buffer's read and
    removal after the window), each as a share of one CPU over the window (summary.seconds), and the
    seconds spent before and after it,
  - the client's busy CPU over the window (harness.host_busy_cpu_seconds: the kernel's side of
    tracing shows here, not in the process) per MB written, and its ratio to off.
A benchmark, not a test: it asserts nothing. The lab's VMs are TCG-emulated on a shared host:
only the ratios mean something.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INVENTORY = REPO / "inventories" / "lab" / "hosts.yml"
MODES = ("off", "queues", "trace")


def canary(host: str, mode: str, ranks: int, bytes_per_rank: int) -> dict:
    args = f"path=/mnt/nfs ranks={ranks} bytes_per_rank={bytes_per_rank} timeout=900 rpc_sampling={mode}"
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1")
    out = subprocess.run(["ansible", "-i", str(INVENTORY), host, "-m", "ckptio.nfs.checkpoint_canary", "-a", args],
                         cwd=REPO, env=env, capture_output=True, text=True, check=False).stdout
    result = json.loads(out[out.index("{"):])["plays"][0]["tasks"][0]["hosts"][host]
    if result.get("failed"):
        raise SystemExit(f"canary failed ({mode}): {result.get('msg')}")
    return result


def figures(result: dict) -> dict:
    summary, harness = result["summary"], result["harness"]
    cost = (result.get("rpc_samples") or {}).get("cost") or {}
    seconds = summary["seconds"]
    mb = summary["total_bytes"] / 1e6
    return {
        "mb_s": summary["throughput_bytes_per_second"] / 1e6,
        "canary_cpu": harness["canary_cpu_seconds"],
        "window_share": cost.get("window_cpu_seconds", cost.get("cpu_seconds", 0.0) + cost.get("trace_cpu_seconds", 0.0)) / seconds,
        "sampler_share": (cost.get("cpu_seconds", 0.0) + cost.get("trace_cpu_seconds", 0.0)) / seconds,
        "around_s": cost.get("before_window_cpu_seconds", 0.0) + cost.get("after_window_cpu_seconds", 0.0),
        "busy_per_mb": (harness.get("host_busy_cpu_seconds") or 0.0) / mb,
        "passes": cost.get("passes", 0),
        "trace_kb": len((result.get("rpc_samples") or {}).get("rpc_latency") or "") / 1024,
        "tasks_kb": len((result.get("rpc_samples") or {}).get("rpc_tasks") or "") / 1024,
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--bytes-per-rank", type=int, default=16 * 1024 * 1024)
    parser.add_argument("--host", default="nfs2")
    options = parser.parse_args()
    rows = dict((mode, []) for mode in MODES)
    for round_number in range(options.rounds):
        for mode in MODES:
            started = time.time()
            row = figures(canary(options.host, mode, options.ranks, options.bytes_per_rank))
            rows[mode].append(row)
            print(f"[bench] round {round_number + 1} {mode}: " + json.dumps({k: round(v, 4) for k, v in row.items()})
                  + f" ({time.time() - started:.0f} s)", file=sys.stderr, flush=True)
    median = dict((mode, dict((key, statistics.median(r[key] for r in rows[mode])) for key in rows[mode][0])) for mode in MODES)
    off = median["off"]
    print(f"{options.host}: {options.ranks} ranks x {options.bytes_per_rank} B, {options.rounds} rounds, medians")
    print("| mode | MB/s | x off | canary CPU s | x off | sampler CPU in the window, share of one CPU | all of it | "
          "of which before/after the window, s | busy CPU s/MB | x off | passes | tasks KiB | trace KiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for mode in MODES:
        m = median[mode]
        print(f"| {mode} | {m['mb_s']:.2f} | {m['mb_s'] / off['mb_s']:.3f} | {m['canary_cpu']:.3f} | "
              f"{m['canary_cpu'] / off['canary_cpu']:.3f} | {100 * m['window_share']:.2f} % | {100 * m['sampler_share']:.2f} % | "
              f"{m['around_s']:.3f} | {m['busy_per_mb']:.4f} | "
              f"{m['busy_per_mb'] / off['busy_per_mb']:.3f} | {m['passes']:.0f} | {m['tasks_kb']:.0f} | {m['trace_kb']:.0f} |")


if __name__ == "__main__":
    main()
