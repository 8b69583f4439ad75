#!/usr/bin/env bash
# The main job on the built-in lab, from a fresh Debian/Ubuntu machine, in one command:
#
#   scripts/main-job.sh            setup -> lab up -> baseline -> tune servers and clients ->
#                                  tuned -> before/after comparison and diagnosis -> lab down
#   scripts/main-job.sh --keep     leave the lab running afterwards (scripts/lab down stops it)
#
# The baseline and tuned runs are playbooks/validate-checkpoint.yml (the canary on every client
# at once, mountstats/nfsd statistics before and after, a capture bundle and its diagnosis in
# reports/<time>-<label>/). Absolute MB/s here measure the emulator: read the ratio.
set -euo pipefail
shopt -s inherit_errexit

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
keep=0
for arg in "$@"; do
  case "$arg" in
    --keep) keep=1 ;;
    -h|--help) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $arg (try --help)" >&2; exit 2 ;;
  esac
done

step() { printf '\n=== [%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
started=$(date +%s)

step "setup (apt packages, venv, collection paths)"
env_file=$("$REPO/scripts/setup.sh")
# shellcheck disable=SC1090
source "$env_file"
cd "$REPO"

step "lab up (one NFS server, two clients, real kernels under QEMU)"
if [ $keep -eq 0 ]; then
  trap '"$REPO/scripts/lab" down' EXIT
fi
scripts/lab up
inventory=inventories/lab/hosts.yml
reports=$REPO/reports
mkdir -p "$reports"

latest_bundle() { find "$reports" -maxdepth 1 -type d -name "*-$1" -printf '%T@ %p\n' | sort -n | tail -n 1 | cut -d' ' -f2-; }

# A failed validation run still leaves its bundle (statistics, diagnosis): carry on, show what
# there is, and exit non-zero at the end.
failures=0
step "baseline: canary on both clients with the lab's broken starting point"
# Both runs probe the lab link's TCP capacity (iperf3, streams = nconnect), so the diagnosis
# measures the network instead of leaving it unmeasured (virtio reports no link speed).
ansible-playbook -i "$inventory" playbooks/validate-checkpoint.yml -e label=baseline -e canary_validation_probe=true \
  || failures=$((failures + 1))
baseline=$(latest_bundle baseline)
[ -n "$baseline" ] || { echo "no baseline bundle under $reports" >&2; exit 1; }

step "tune the server (playbooks/tune-servers.yml)"
ansible-playbook -i "$inventory" -e "ckptio_report_dir=$reports" playbooks/tune-servers.yml

step "tune the clients (playbooks/tune-clients.yml)"
ansible-playbook -i "$inventory" -e "ckptio_report_dir=$reports" playbooks/tune-clients.yml

step "tuned: the same canary, compared with the baseline"
ansible-playbook -i "$inventory" playbooks/validate-checkpoint.yml -e label=tuned -e "compare_to=$baseline" \
  -e canary_validation_probe=true || failures=$((failures + 1))
tuned=$(latest_bundle tuned)

step "before/after comparison and diagnosis"
if [ -f "$tuned/report.md" ]; then
  cat "$tuned/report.md"
else
  echo "no report.md in $tuned (the report step failed): the canary figures and diagnoses instead" >&2
  for bundle in "$baseline" "$tuned"; do
    printf '\n--- %s\n' "$bundle"
    sed -n '/^canary:/,$p' "$bundle/context.yml"
    [ -f "$bundle/diagnosis.md" ] && sed -n '1,/^## Evidence/p' "$bundle/diagnosis.md"
  done
fi
printf '\nbundles: %s\n         %s\n' "$baseline" "$tuned"
printf 'main job finished in %ss\n' $(( $(date +%s) - started ))
if [ $keep -eq 1 ]; then
  echo "the lab is still running: scripts/lab ssh nfs2, scripts/lab status, scripts/lab down"
fi
[ $failures -eq 0 ] || { echo "$failures validation run(s) failed (see above)" >&2; exit 1; }
