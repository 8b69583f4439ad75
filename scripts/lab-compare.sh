#!/usr/bin/env bash
# Architectures side by side on the built-in lab, in one command from a clean clone (issue 28):
#
#   scripts/lab-compare.sh OUTDIR          setup -> lab up -> tune servers and clients -> compare_architectures
#                                          -> OUTDIR/<time>-compare/{compare.md,compare.json,compare.png} -> lab down
#   CKPTIO_COMPARE_TUNED=1 ...             skip the tuning (the lab is tuned already)
#   CKPTIO_COMPARE_KEEP=1 ...              leave the lab running afterwards (scripts/lab down stops it)
#   CKPTIO_COMPARE_OPTIONS='[{...}]' ...   other options than the five below (JSON, as ckptio_compare_options)
#
# The options, one canary_validation run each on both clients, same ranks and bytes (the lab's
# group_vars), back to back (playbooks/compare_architectures.yml):
#   shared_file    the seed's pattern: one file on /mnt/nfs
#   file_per_rank  one file per rank on /mnt/nfs
#   two_exports    file per rank over /mnt/nfs and /mnt/nfs-b (nfs1's second export, on its own virtual
#                  disk; the same server, so the same NFSv4.1 session and connections: a storage split,
#                  not a second server - a fourth TCG VM does not fit the 2-core host)
#   async_local    file per rank on the client VM's own disk (/var/tmp/ckptio-burst), drained to
#                  /mnt/nfs in the background; the interval the drain must fit: 1,800 s (the seed's)
#   torch_dcp      PyTorch DCP's FileSystemWriter shape on /mnt/nfs (.metadata.tmp + rename)
# Absolute MB/s measure the emulator: read the ratios. Needs the collection's environment
# (scripts/setup.sh is run here) and QEMU; CKPTIO_LAB_PORT_BASE picks the lab's ports as for scripts/lab.
set -euo pipefail
shopt -s inherit_errexit
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:?usage: scripts/lab-compare.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
BURST=/var/tmp/ckptio-burst
DEFAULT_OPTIONS='[{"name": "shared_file", "shape": "shared_file"},
  {"name": "file_per_rank", "shape": "file_per_rank"},
  {"name": "two_exports", "shape": "file_per_rank", "paths": ["/mnt/nfs", "/mnt/nfs-b"]},
  {"name": "async_local", "shape": "file_per_rank", "local_path": "'$BURST'", "checkpoint_interval_seconds": 1800},
  {"name": "torch_dcp", "shape": "torch_dcp"}]'
OPTIONS=${CKPTIO_COMPARE_OPTIONS:-$DEFAULT_OPTIONS}

TUNED_MOUNTS='{"client_tuning_mounts": [{"src": "nfs1:/srv/nfs", "path": "/mnt/nfs"}, {"src": "nfs1:/srv/nfs-b", "path": "/mnt/nfs-b"}]}'

step() { printf '\n=== [%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
started=$(date +%s)

step "setup (apt packages, venv, collection paths)"
# shellcheck disable=SC1090
source "$("$REPO/scripts/setup.sh")"
cd "$REPO"
inventory=inventories/lab/hosts.yml

step "lab up (nfs1 serves /srv/nfs and /srv/nfs-b; nfs2 and nfs3 mount both)"
if [ -z "${CKPTIO_COMPARE_KEEP:-}" ]; then
  trap '"$REPO/scripts/lab" down' EXIT
fi
CKPTIO_LAB_SECOND_EXPORT=1 scripts/lab up
for client in nfs2 nfs3; do scripts/lab ssh "$client" mkdir -p "$BURST"; done

if [ -z "${CKPTIO_COMPARE_TUNED:-}" ]; then
  step "tune the server and the clients (the architectures are compared on a tuned lab)"
  ansible-playbook -i "$inventory" -e "ckptio_report_dir=$out" playbooks/tune-servers.yml >"$out/tune-servers.log" 2>&1
  # Both mounts are tuned, then both unmounted and mounted again: they share nfs1's one NFS client
  # (nconnect and the v4.1 session are per server, set by the first mount), and client_tuning
  # remounts one mount at a time, so each kept the other's old client ("pending" in its log).
  ansible-playbook -i "$inventory" -e "ckptio_report_dir=$out" -e "$TUNED_MOUNTS" playbooks/tune-clients.yml \
    >"$out/tune-clients.log" 2>&1
  for client in nfs2 nfs3; do scripts/lab ssh "$client" "umount /mnt/nfs-b /mnt/nfs && mount /mnt/nfs && mount /mnt/nfs-b"; done
fi

step "compare_architectures: $(printf '%s' "$OPTIONS" | tr -d '\n' | grep -o '"name": "[^"]*"' | cut -d'"' -f4 | tr '\n' ' ')"
status=0
ansible-playbook -i "$inventory" playbooks/compare-architectures.yml -e "canary_validation_reports_dir=$out" \
  -e "{\"ckptio_compare_options\": $OPTIONS}" >"$out/compare.log" 2>&1 || status=$?
compare=$(find "$out" -maxdepth 1 -type d -name '*-compare' -printf '%T@ %p\n' | sort -n | tail -n 1 | cut -d' ' -f2-)
{
  echo "made by: scripts/lab-compare.sh OUTDIR ($(date -u +%Y-%m-%dT%H:%MZ)), commit $(git rev-parse --short HEAD)"
  echo "lab: QEMU TCG, one vCPU and 2 GiB per VM; nfs1 exports /srv/nfs (root disk) and /srv/nfs-b (its own virtio disk)"
  echo "kernel: $(scripts/lab ssh nfs1 uname -r)"
  echo "client mounts (nfs2): $(scripts/lab ssh nfs2 findmnt -t nfs4 -no TARGET,SOURCE,OPTIONS | tr '\n' ';')"
  echo "tuned: $([ -z "${CKPTIO_COMPARE_TUNED:-}" ] && echo 'tune-servers.yml + tune-clients.yml in this run' || echo 'before this run (CKPTIO_COMPARE_TUNED=1)')"
  echo "ansible-playbook exit status: $status (log: compare.log)"
} > "${compare:-$out}/NOTES.txt"
if [ -n "$compare" ] && [ -f "$compare/compare.md" ]; then
  cat "$compare/compare.md"
  printf '\ncomparison: %s\n' "$compare"
else
  echo "no compare.md under $out (see $out/compare.log)" >&2
  status=${status:-1}; [ "$status" -ne 0 ] || status=1
fi
printf 'lab-compare finished in %ss\n' $(( $(date +%s) - started )) >&2
exit "$status"
