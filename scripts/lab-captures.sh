#!/usr/bin/env bash
# Take the diagnosis's real-kernel capture bundles on the lab (tests/fixtures/captures/).
#
#   scripts/lab-captures.sh OUTDIR [SCENARIO...]
#
# Scenarios (each sets the lab up, runs playbooks/validate-checkpoint.yml with the TCP probe,
# and puts the lab back):
#   seed_like_v41   the lab as `scripts/lab up` leaves it: v4.1, 2 session slots, nconnect=1,
#                   64 KiB, 2 nfsd threads, 20 ms on the server's link (run it first)
#   healthy         tuned servers and clients (tune-servers.yml, tune-clients.yml)
#   one_thread      tuned, then nfsd threads=1 live on the server
#   slow_storage    tuned, 64 threads, the export on a dm-delay disk (40 ms per write, mounted
#                   sync) so every WRITE waits on storage while threads sit idle
#   shaped_link     tuned, each client's lab link shaped to 24 Mbit/s (tc tbf, egress)
#   loss_2pct       tuned, netem loss 2 % on each client's lab egress (issue 26: a lossy path)
#   loss_5pct       tuned, netem loss 5 % on each client's lab egress
#   loss_2pct_one   tuned, netem loss 2 % on nfs3's lab egress only, nfs2 clean (issue 43: the
#                   loss on one client, one diagnosis for both)
#   loss_5pct_one   tuned, netem loss 5 % on nfs3's lab egress only, nfs2 clean
#   one_shaped      tuned, only nfs3's lab link shaped to 16 Mbit/s: one host sets the pace
#   small_files     tuned, file per rank, 256 files x 4 KiB per rank: a metadata storm
#   v47_baseline    seed_like_v41 with the canary's rpc_sampling=trace (issue 47): sunrpc_xprt.txt,
#                   rpc_tasks.txt and rpc_latency.txt beside the usual files
#   v47_tuned       healthy with rpc_sampling=trace
#   old_mount       tuned, then nfs3 remounted as before the tuning (nconnect=1, 64 KiB, a
#                   2-slot v4.1 session) while its max_session_slots setting reads the tuned value
# Incast (many clients into one server port) needs more senders and a switch buffer than the
# lab's two clients on a software bridge have: no scenario makes it.
# CKPTIO_CAPTURES_TUNED=1 skips the tuning playbooks when the lab is tuned already.
# CKPTIO_CAPTURES_CANARY_ARGS: extra ansible-playbook arguments for every canary run, split on
# spaces (scripts/lab-prometheus.sh sizes the checkpoint with it); NOTES.txt records them.
# Every bundle lands in OUTDIR/<scenario>/ with NOTES.txt (commands, kernel, what was set).
# Needs a running lab (scripts/lab up) and the collection's environment (scripts/setup.sh).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:?usage: scripts/lab-captures.sh OUTDIR [SCENARIO...]}
shift
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(seed_like_v41 healthy one_thread slow_storage shaped_link)
mkdir -p "$out"
out=$(cd "$out" && pwd)
source "$("$REPO/scripts/setup.sh")"
cd "$REPO"
inventory=inventories/lab/hosts.yml
lab() { "$REPO/scripts/lab" ssh "$@"; }
log() { printf '[captures %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

SLOW_DISK=/var/tmp/ckptio-slow.img
TBF_RATE=24mbit
ONE_SHAPED_RATE=16mbit

validate() {
  local name=$1 tmp
  shift
  tmp=$(mktemp -d)
  local extra=()
  read -r -a extra <<< "${CKPTIO_CAPTURES_CANARY_ARGS:-}"
  ansible-playbook -i "$inventory" playbooks/validate-checkpoint.yml -e "label=$name" \
    -e "canary_validation_reports_dir=$tmp" -e canary_validation_probe=true "$@" "${extra[@]}" >"$out/$name.log" 2>&1 || true
  rm -rf "${out:?}/$name"
  mv "$(find "$tmp" -mindepth 1 -maxdepth 1 -type d | head -n 1)" "$out/$name"
  rmdir "$tmp"
}

notes() {
  local name=$1 what=$2
  {
    echo "scenario: $name"
    echo "made by: scripts/lab-captures.sh OUTDIR $name ($(date -u +%Y-%m-%dT%H:%MZ)), commit $(git rev-parse --short HEAD)"
    echo "what was set: $what"
    [ -z "${CKPTIO_CAPTURES_CANARY_ARGS:-}" ] || echo "canary arguments added: $CKPTIO_CAPTURES_CANARY_ARGS"
    echo "lab: QEMU TCG, one vCPU and 2 GiB per VM; nfs1 serves /srv/nfs, nfs2 and nfs3 mount it on /mnt/nfs"
    echo "kernel: $(lab nfs1 uname -r)"
    echo "client mount (nfs2): $(lab nfs2 grep ' /mnt/nfs ' /proc/mounts)"
    echo "server threads: $(lab nfs1 cat /proc/fs/nfsd/threads)"
    echo "client qdisc (nfs2 lab0): $(lab nfs2 tc qdisc show dev lab0 | tr '\n' ' ')"
    echo "client qdisc (nfs3 lab0): $(lab nfs3 tc qdisc show dev lab0 | tr '\n' ' ')"
    echo "server export fs: $(lab nfs1 findmnt -no SOURCE,FSTYPE,OPTIONS -T /srv/nfs)"
    echo "verdict when made: $(grep -m1 -o '"[a-z_]*: achieved [^"]*"' "$out/$name.log" || echo '(see the log)')"
  } > "$out/$name/NOTES.txt"
}

tuned() {
  # CKPTIO_CAPTURES_TUNED=1: the lab is already tuned (an earlier scenario of the same session) -
  # the playbooks are idempotent but take minutes on TCG.
  [ -z "${CKPTIO_CAPTURES_TUNED:-}" ] || return 0
  ansible-playbook -i "$inventory" playbooks/tune-servers.yml >"$out/tune-servers.log" 2>&1
  ansible-playbook -i "$inventory" playbooks/tune-clients.yml >"$out/tune-clients.log" 2>&1
}

remount_clients() {
  local client
  for client in nfs2 nfs3; do lab "$client" umount /mnt/nfs; done
  "$@"
  for client in nfs2 nfs3; do lab "$client" mount /mnt/nfs; done
}

slow_export_on() {
  lab nfs1 "modprobe dm-delay && truncate -s 1G $SLOW_DISK && loop=\$(losetup -f --show $SLOW_DISK) && \
    echo \"0 \$(blockdev --getsz \$loop) delay \$loop 0 40\" | dmsetup create ckptio-slow && \
    mkfs.ext4 -q /dev/mapper/ckptio-slow && mount -o sync /dev/mapper/ckptio-slow /srv/nfs && chmod 0777 /srv/nfs && \
    exportfs -ra && echo 64 > /proc/fs/nfsd/threads"
}

slow_export_off() {
  # nfsd holds the exported file system until it stops (umount says "target is busy" otherwise).
  lab nfs1 "systemctl stop nfs-server && umount /srv/nfs && dmsetup remove ckptio-slow && losetup -D && rm -f $SLOW_DISK && \
    systemctl start nfs-server"
}

for scenario in "${scenarios[@]}"; do
  log "scenario $scenario"
  case "$scenario" in
    seed_like_v41)
      validate "$scenario"
      notes "$scenario" "nothing: the lab's broken baseline (inventories/lab/README.md)" ;;
    v47_baseline)
      validate "$scenario" -e canary_validation_rpc_sampling=trace -e canary_validation_probe=false
      notes "$scenario" "nothing: the lab's broken baseline; canary rpc_sampling=trace (sysfs xprt_info, debugfs tasks, tracepoints)" ;;
    v47_tuned)
      tuned
      validate "$scenario" -e canary_validation_rpc_sampling=trace -e canary_validation_probe=false
      notes "$scenario" "tune-servers.yml + tune-clients.yml; canary rpc_sampling=trace (sysfs xprt_info, debugfs tasks, tracepoints)" ;;
    healthy)
      tuned
      validate "$scenario"
      notes "$scenario" "tune-servers.yml + tune-clients.yml (checkpoint profile)" ;;
    one_thread)
      tuned
      lab nfs1 "echo 1 > /proc/fs/nfsd/threads"
      validate "$scenario"
      notes "$scenario" "tuned, then echo 1 > /proc/fs/nfsd/threads on nfs1"
      lab nfs1 "echo 8 > /proc/fs/nfsd/threads" ;;
    slow_storage)
      tuned
      remount_clients slow_export_on
      validate "$scenario"
      notes "$scenario" "tuned; export on dm-delay (40 ms per write) ext4 mounted sync; nfsd threads 64"
      remount_clients slow_export_off ;;
    shaped_link)
      tuned
      for client in nfs2 nfs3; do lab "$client" tc qdisc replace dev lab0 root tbf rate "$TBF_RATE" burst 32kb latency 400ms; done
      validate "$scenario"
      notes "$scenario" "tuned; tc qdisc replace dev lab0 root tbf rate $TBF_RATE burst 32kb latency 400ms on nfs2 and nfs3"
      for client in nfs2 nfs3; do lab "$client" tc qdisc del dev lab0 root; done ;;
    loss_2pct|loss_5pct)
      rate=${scenario#loss_}; rate=${rate%pct}%
      tuned
      for client in nfs2 nfs3; do lab "$client" tc qdisc replace dev lab0 root netem loss "$rate"; done
      validate "$scenario"
      notes "$scenario" "tuned; tc qdisc replace dev lab0 root netem loss $rate on nfs2 and nfs3"
      for client in nfs2 nfs3; do lab "$client" tc qdisc del dev lab0 root; done ;;
    loss_2pct_one|loss_5pct_one)
      rate=${scenario#loss_}; rate=${rate%pct_one}%
      tuned
      lab nfs3 tc qdisc replace dev lab0 root netem loss "$rate"
      validate "$scenario"
      notes "$scenario" "tuned; tc qdisc replace dev lab0 root netem loss $rate on nfs3 only (nfs2's lab0 keeps its default qdisc)"
      lab nfs3 tc qdisc del dev lab0 root ;;
    one_shaped)
      tuned
      lab nfs3 tc qdisc replace dev lab0 root tbf rate "$ONE_SHAPED_RATE" burst 32kb latency 400ms
      validate "$scenario"
      notes "$scenario" "tuned; tc qdisc replace dev lab0 root tbf rate $ONE_SHAPED_RATE burst 32kb latency 400ms on nfs3 only"
      lab nfs3 tc qdisc del dev lab0 root ;;
    small_files)
      tuned
      # 4 ranks x 256 files x 4 KiB = 1 MiB per rank; the target keeps the lab's 10 s window.
      validate "$scenario" -e canary_validation_layout=file_per_rank -e canary_validation_files_per_rank=256 \
        -e canary_validation_bytes_per_rank=1048576 -e canary_validation_block_size=4096 -e ckptio_checkpoint_bytes=8388608
      notes "$scenario" "tuned; canary layout file_per_rank, 256 files x 4 KiB per rank (4 ranks per client), target 8 MiB in 10 s" ;;
    old_mount)
      tuned
      # The session's slots are asked at CREATE_SESSION (mount time): 2 then, the setting back to
      # the tuned value after, as on a node whose mount predates the tuning.
      slots=$(lab nfs3 cat /sys/module/nfs/parameters/max_session_slots)
      lab nfs3 "umount /mnt/nfs && echo 2 > /sys/module/nfs/parameters/max_session_slots && \
        mount -t nfs4 -o vers=4.1,nconnect=1,rsize=65536,wsize=65536,hard,proto=tcp nfs1:/srv/nfs /mnt/nfs && \
        echo $slots > /sys/module/nfs/parameters/max_session_slots"
      validate "$scenario"
      notes "$scenario" "tuned; then on nfs3 only: umount, max_session_slots=2, mount -o vers=4.1,nconnect=1,rsize=65536,wsize=65536, max_session_slots=$slots again"
      echo "nfs3 mount: $(lab nfs3 grep ' /mnt/nfs ' /proc/mounts)" >> "$out/$scenario/NOTES.txt"
      lab nfs3 "umount /mnt/nfs && mount /mnt/nfs" ;;
    *) echo "unknown scenario: $scenario" >&2; exit 2 ;;
  esac
  log "scenario $scenario done: $out/$scenario"
done
