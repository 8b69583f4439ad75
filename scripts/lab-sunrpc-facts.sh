#!/usr/bin/env bash
# Measure which RPC slot-table views a lab kernel has (issue 47, docs/kernels.md): sunrpc sysfs,
# debugfs rpc_clnt tasks, the sunrpc/nfs4 tracepoints; verbatim copies and samples under load.
#
#   scripts/lab-sunrpc-facts.sh SUITE...   each of bullseye, bookworm, trixie: lab up (1 client)
#                                          unless a lab runs already, probe nfs2, lab down if it
#                                          booted it; files into tests/fixtures/kernels/SUITE/sunrpc/
# The guest side is tests/lab_matrix/sunrpc_facts.py; CKPTIO_LAB_SUITE must match a running lab.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -gt 0 ] || { echo "usage: scripts/lab-sunrpc-facts.sh SUITE..." >&2; exit 2; }
for suite in "$@"; do
  export CKPTIO_LAB_SUITE=$suite
  booted=0
  if ! "$REPO/scripts/lab" status >/dev/null 2>&1; then
    CKPTIO_LAB_CLIENTS=1 "$REPO/scripts/lab" up
    booted=1
  fi
  dir=$REPO/tests/fixtures/kernels/$suite/sunrpc
  rm -rf "$dir"
  mkdir -p "$dir"
  "$REPO/scripts/lab" ssh nfs2 rm -rf /root/sunrpc-facts
  "$REPO/scripts/lab" ssh nfs2 python3 - /root/sunrpc-facts /mnt/nfs < "$REPO/tests/lab_matrix/sunrpc_facts.py"
  "$REPO/scripts/lab" ssh nfs2 tar -C /root/sunrpc-facts -cf - . | tar -C "$dir" -xf -
  # The tasks of every sample make megabytes under the 2-slot baseline: keep every 20th, each verbatim.
  [ ! -f "$dir/load/rpc_tasks.txt" ] || python3 "$REPO/tests/lab_matrix/trim_samples.py" "$dir/load/rpc_tasks.txt" 20
  [ "$booted" = 0 ] || "$REPO/scripts/lab" down
done
