#!/usr/bin/env bash
# The kernel matrix (#17): boot the lab on each Debian release, kernel and userland, and record
# what the collection depends on, measured there.
#
#   scripts/lab-matrix.sh [SUITE...]     default: bullseye bookworm trixie
#   scripts/test.sh lab-matrix           the same, through the test harness
#
# Per suite (one server, one client: CKPTIO_LAB_CLIENTS=1 spares the host's CPUs under TCG):
#   1. baseline facts of server and client (tests/lab_matrix/guest_facts.py)
#   2. the client unmounts; ckptio.nfs.tune_servers persists threads; nfs-server restarts; the
#      live thread count is compared with the persisted one; where the userland starts rpc.nfsd
#      with a count argument, again with server_tuning_persist_command_line=true
#   3. the client mounts again, ckptio.nfs.tune_clients tunes it; live values vs the tuning
#   4. a fresh session's slot grant, from the nfs4_sequence_done tracepoint; pool_stats around
#      the same writes with 1 live nfsd thread and with 8 (the starvation signal); the client reboots
#      and what it persisted (modprobe.d, fstab) is compared with what its kernel runs
#   5. ckptio.nfs.nfsd_stats (pool_stats columns, min_threads) and a small canary with its
#      diagnosis (ckptio.nfs.validate_checkpoint)
# Results: tests/output/lab-matrix/<suite>/ (facts JSON, raw files, the canary's bundle) and
# tests/output/lab-matrix/matrix.md, the table docs/kernels.md quotes. Not part of CI: about
# 15 minutes a suite under TCG.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${CKPTIO_MATRIX_OUT:-$REPO/tests/output/lab-matrix}
SUITES=("$@")
[ ${#SUITES[@]} -gt 0 ] || SUITES=(bullseye bookworm trixie)
export CKPTIO_LAB_CLIENTS=1
export CKPTIO_LAB_PORT_BASE=${CKPTIO_LAB_PORT_BASE:-22400}
INVENTORY=$REPO/inventories/lab/hosts.yml
THREADS_WANTED=8  # inventories/lab/group_vars/nfs_servers.yml server_tuning_threads

env_file=$("$REPO/scripts/setup.sh")
# shellcheck disable=SC1090
source "$env_file"

log() { printf '[matrix %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
lab() { "$REPO/scripts/lab" "$@"; }
facts() {  # host mode json-name [args...]: run guest_facts.py, keep its JSON and raw files
  local host=$1 mode=$2 name=$3
  shift 3
  lab ssh "$host" python3 - "$mode" "/root/matrix-$name" "$@" < "$REPO/tests/lab_matrix/guest_facts.py" > "$dir/$name.json"
  mkdir -p "$dir/raw-$name"
  lab ssh "$host" tar -C "/root/matrix-$name" -cf - . | tar -C "$dir/raw-$name" -xf -
}
playbook() { ansible-playbook -i "$INVENTORY" "$@"; }
# pool_stats around 4 writers x 16 MiB (fsync) with N live nfsd threads: what starvation looks
# like in this kernel's counters.
starvation() {
  local threads=$1
  lab ssh nfs1 "echo $threads > /proc/fs/nfsd/threads"
  lab ssh nfs1 cat /proc/fs/nfsd/pool_stats > "$dir/starvation-$threads-before.txt"
  # shellcheck disable=SC2016 # expands on nfs2
  lab ssh nfs2 'for i in 1 2 3 4; do dd if=/dev/zero of=/mnt/nfs/.ckptio-starve-$i bs=1M count=16 conv=fsync status=none & done; wait; rm -f /mnt/nfs/.ckptio-starve-*'
  lab ssh nfs1 cat /proc/fs/nfsd/pool_stats > "$dir/starvation-$threads-after.txt"
}

# nfs-server restart with the kernel's shortest grace period (10 s, as molecule/lab/server-stop.yml).
restart_server() {
  lab ssh nfs1 'systemctl stop nfs-server && echo 10 > /proc/fs/nfsd/nfsv4gracetime && systemctl start nfs-server'
  lab ssh nfs1 cat /proc/fs/nfsd/threads
}

run_suite() {
  local suite=$1 dir=$OUT/$1 live
  export CKPTIO_LAB_SUITE=$suite
  rm -rf "$dir" && mkdir -p "$dir"
  local start
  start=$(date +%s)
  log "$suite: lab up"
  lab up
  cp "$(lab image)/packages.txt" "$dir/packages.txt"
  facts nfs1 server server-baseline
  facts nfs2 client client-baseline

  log "$suite: server tuning, then restarts"
  lab ssh nfs2 umount /mnt/nfs
  playbook "$REPO/playbooks/tune_servers.yml" > "$dir/tune_servers.log" 2>&1
  live=$(restart_server)
  printf '{"persisted": %s, "live_after_restart": %s, "persist_command_line": false}\n' "$THREADS_WANTED" "$live" > "$dir/threads-restart.json"
  if lab ssh nfs1 test -e /usr/lib/systemd/scripts/nfs-utils_env.sh -o -e /lib/systemd/scripts/nfs-utils_env.sh; then
    playbook "$REPO/playbooks/tune_servers.yml" -e server_tuning_persist_command_line=true > "$dir/tune_servers_command_line.log" 2>&1
    live=$(restart_server)
    printf '{"persisted": %s, "live_after_restart": %s, "persist_command_line": true}\n' "$THREADS_WANTED" "$live" > "$dir/threads-restart-command-line.json"
  fi
  facts nfs1 server server-tuned

  log "$suite: client tuning"
  lab ssh nfs2 mount /mnt/nfs
  playbook "$REPO/playbooks/tune_clients.yml" > "$dir/tune_clients.log" 2>&1
  facts nfs2 client client-tuned
  facts nfs2 slots slots /mnt/nfs
  facts nfs1 server server-after-slots

  log "$suite: pool_stats with 1 nfsd thread, then $THREADS_WANTED"
  starvation 1
  starvation "$THREADS_WANTED"

  log "$suite: client reboot, persisted vs live"
  local boot_id
  boot_id=$(lab ssh nfs2 cat /proc/sys/kernel/random/boot_id)
  # `systemctl reboot` asks logind over D-Bus first, and minbase has no D-Bus ("Failed to connect
  # to bus"): start the target through systemd's own socket instead.
  lab ssh nfs2 systemctl start --no-block reboot.target || true
  local n=0
  until [ "$(lab ssh nfs2 cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo "$boot_id")" != "$boot_id" ]; do
    n=$((n + 1)); [ $n -lt 180 ] || { log "$suite: nfs2 did not come back"; return 1; }; sleep 5
  done
  # shellcheck disable=SC2016 # expands on nfs2
  lab ssh nfs2 'n=0; until mountpoint -q /mnt/nfs; do n=$((n + 1)); [ $n -lt 60 ] || exit 1; sleep 5; done'
  lab ssh nfs2 python3 - /mnt/nfs < "$REPO/molecule/lab/files/persisted_vs_live.py" > "$dir/client-persisted-vs-live.json"

  log "$suite: nfsd_stats and a small canary"
  ANSIBLE_LOAD_CALLBACK_PLUGINS=1 ANSIBLE_STDOUT_CALLBACK=ansible.builtin.json \
    ansible -i "$INVENTORY" nfs1 -m ckptio.nfs.nfsd_stats > "$dir/nfsd_stats.json" 2> "$dir/nfsd_stats.err" || true
  playbook "$REPO/playbooks/validate_checkpoint.yml" -e label="matrix-$suite" \
    -e canary_validation_reports_dir="$dir/reports" -e canary_validation_ranks=2 \
    -e canary_validation_bytes_per_rank=4194304 > "$dir/validate.log" 2>&1 || log "$suite: validate_checkpoint failed (see $dir/validate.log)"
  lab down
  echo $(( $(date +%s) - start )) > "$dir/seconds"
  log "$suite: done in $(cat "$dir/seconds") s"
}

rc=0
for suite in "${SUITES[@]}"; do
  if ! (run_suite "$suite"); then
    log "$suite: failed"
    CKPTIO_LAB_SUITE=$suite lab down || true
    rc=1
  fi
done
python3 "$REPO/tests/lab_matrix/table.py" "$OUT" > "$OUT/matrix.md" || rc=1
cat "$OUT/matrix.md"
exit $rc
