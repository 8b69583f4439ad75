# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lab benchmark: checkpoint writes before and after tuning, against the lab's own ceiling.

    source scripts/activate; python3 tests/bench/lab_ratios.py [--bytes-per-rank N] [--ranks N] [--keep]

One run, side by side on the same VMs: a fresh lab (scripts/lab down + up, so the baseline is
the lab's broken starting point), then
  1. baseline   playbooks/validate-checkpoint.yml on both clients at once (the canary)
  2. ceiling a  the same bytes written with dd + fsync on the server's export disk, locally
  3. tune       playbooks/tune-servers.yml and tune-clients.yml
  4. tuned      the canary again, with the role's TCP probe (-e canary_validation_probe=true):
     ceiling b  iperf3 from both clients to the server over the lab link at once, as many
                streams as the tuned mount's nconnect; the sum of what the server received
                (clients/*/probe.json of the tuned bundle)
and prints tuned/baseline and tuned/ceiling (ceiling = the lower of a and b). Absolute MB/s
measure the emulator (QEMU TCG on a shared host); only the ratios mean something.
Goals: tuned >= 3x baseline, tuned >= 0.8x ceiling. A benchmark, not a test: it asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import yaml  # from the activated env (ansible-core depends on PyYAML)

REPO = Path(__file__).resolve().parents[2]
LAB = REPO / "scripts" / "lab"
INVENTORY = REPO / "inventories" / "lab" / "hosts.yml"
SERVER = "nfs1"
CLIENTS = ("nfs2", "nfs3")
EXPORT = "/srv/nfs"
MB = 1e6


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=True, text=True, cwd=REPO, **kwargs)


def lab_ssh(host: str, script: str) -> str:
    return run([str(LAB), "ssh", host, script], capture_output=True).stdout


def timed_remote(host: str, script: str) -> float:
    """Seconds the script took, measured inside the VM (no ssh start-up in the figure)."""
    out = lab_ssh(host, f"s=$(date +%s.%N); {script} >/dev/null 2>&1; e=$(date +%s.%N); echo $s $e")
    start, end = (float(x) for x in out.split()[-2:])
    return end - start


def local_disk_mb_s(total_bytes: int) -> float:
    count = total_bytes // (1 << 20)
    target = f"{EXPORT}/ckptio-bench-local"
    seconds = timed_remote(SERVER, f"dd if=/dev/zero of={target} bs=1M count={count} conv=fsync")
    lab_ssh(SERVER, f"rm -f {target}")
    return total_bytes / seconds / MB


def probe_mb_s(bundle: Path) -> float:
    """What the lab link carried in the tuned run's TCP probe: received bits/s summed over clients.

    The clients sent at the same start_at to their own iperf3 listener on the server, so the
    server's aggregate is the sum over them (docs/capture-bundle.md, probe.json). A client
    without a result makes the ceiling meaningless: fail, naming it.
    """
    results = {}
    for client in CLIENTS:
        path = bundle / "clients" / client / "probe.json"
        if not path.is_file():
            raise RuntimeError(f"{bundle.name}: no {path.relative_to(bundle)} (did the probe run?)")
        probe = json.loads(path.read_text())
        summary = probe.get("summary") or {}
        if summary.get("error") or not summary.get("received_bits_per_second"):
            raise RuntimeError(f"{bundle.name}: the probe from {client} failed: {summary.get('error') or probe.get('msg')}")
        results[client] = summary
    starts = [summary["start_epoch"] for summary in results.values() if summary.get("start_epoch") is not None]
    if starts and max(starts) - min(starts) > 1:
        log(f"probe start spread {max(starts) - min(starts)} s: the clients did not all send in the same window")
    return sum(summary["received_bits_per_second"] for summary in results.values()) / 8 / MB


def canary(label: str, extra_vars: list[str], compare_to: str | None = None) -> tuple[float, Path]:
    """Run validate-checkpoint.yml; return the aggregate MB/s of its bundle and the bundle.

    The figure comes from the bundle's context.yml (MLPerf Storage rule: total bytes / (latest
    end - earliest start)), written before the report step, so a failing report step still
    leaves the measurement; the playbook's exit status is printed, not hidden.
    """
    reports = REPO / "reports"
    before = set(reports.glob(f"*-{label}")) if reports.is_dir() else set()
    argv = ["ansible-playbook", "-i", str(INVENTORY), "playbooks/validate-checkpoint.yml", "-e", f"label={label}"]
    if compare_to:
        argv += ["-e", f"compare_to={compare_to}"]
    for item in extra_vars:
        argv += ["-e", item]
    result = subprocess.run(argv, cwd=REPO, stdout=subprocess.DEVNULL, check=False)
    if result.returncode != 0:
        log(f"validate-checkpoint.yml ({label}) exited {result.returncode}; reading the bundle's context.yml")
    new = set(reports.glob(f"*-{label}")) - before
    if not new:
        raise RuntimeError(f"validate-checkpoint.yml ({label}) wrote no bundle under {reports}")
    bundle = max(new, key=lambda p: p.stat().st_mtime)
    context = yaml.safe_load((bundle / "context.yml").read_text())
    return float(context["canary"]["bytes"]) / float(context["canary"]["seconds"]) / MB, bundle


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=4, help="canary ranks per client (default 4)")
    parser.add_argument("--bytes-per-rank", type=int, default=16 << 20, help="bytes per rank (default 16 MiB)")
    parser.add_argument("--keep", action="store_true", help="leave the lab running afterwards")
    args = parser.parse_args()
    total = args.ranks * args.bytes_per_rank * len(CLIENTS)
    extra = [f"canary_validation_ranks={args.ranks}", f"canary_validation_bytes_per_rank={args.bytes_per_rank}"]
    phases: dict[str, float] = {}

    started = time.monotonic()
    log("fresh lab (the baseline must be the lab's starting point)")
    run([str(LAB), "down"])
    try:
        run([str(LAB), "up"])
        phases["lab up"] = time.monotonic() - started

        t = time.monotonic()
        baseline, baseline_bundle = canary("bench-baseline", extra)
        phases["baseline canary"] = time.monotonic() - t
        log(f"baseline {baseline:.2f} MB/s")

        t = time.monotonic()
        local = local_disk_mb_s(total)
        phases["disk ceiling"] = time.monotonic() - t
        log(f"ceiling: local disk {local:.2f} MB/s")

        t = time.monotonic()
        run(["ansible-playbook", "-i", str(INVENTORY), "playbooks/tune-servers.yml"], stdout=subprocess.DEVNULL)
        run(["ansible-playbook", "-i", str(INVENTORY), "playbooks/tune-clients.yml"], stdout=subprocess.DEVNULL)
        phases["tuning"] = time.monotonic() - t

        t = time.monotonic()
        tuned, tuned_bundle = canary("bench-tuned", extra + ["canary_validation_probe=true"], compare_to=str(baseline_bundle))
        phases["tuned canary + TCP probe"] = time.monotonic() - t
        tcp = probe_mb_s(tuned_bundle)
        log(f"ceiling: TCP probe {tcp:.2f} MB/s")
    finally:
        if not args.keep:
            run([str(LAB), "down"])

    ceiling = min(local, tcp)
    rerun = " ".join(shlex.quote(a) for a in ["python3", "tests/bench/lab_ratios.py", *sys.argv[1:]])
    print(f"\nlab ratios ({len(CLIENTS)} clients x {args.ranks} ranks x {args.bytes_per_rank} B, "
          f"{total / MB:.0f} MB per write; MB = 10^6 B)")
    print(f"  baseline NFS write        {baseline:8.2f} MB/s   ({baseline_bundle.name})")
    print(f"  tuned NFS write           {tuned:8.2f} MB/s   ({tuned_bundle.name})")
    print(f"  ceiling a: server disk    {local:8.2f} MB/s")
    print(f"  ceiling b: TCP probe      {tcp:8.2f} MB/s   (iperf3, {tuned_bundle.name}/clients/*/probe.json)")
    print(f"  tuned / baseline          {tuned / baseline:8.2f}x   (goal >= 3)")
    print(f"  tuned / ceiling           {tuned / ceiling:8.2f}x   (goal >= 0.8)")
    print("  phases: " + ", ".join(f"{name} {seconds:.0f}s" for name, seconds in phases.items()))
    print(f"  rerun: {rerun}")
    return 0


if __name__ == "__main__":
    os.chdir(REPO)
    sys.exit(main())
