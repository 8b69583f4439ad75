#!/usr/bin/env bash
# Take what people paste during an incident, for real, on the lab (tests/fixtures/paste/).
#
#   scripts/lab-paste-captures.sh OUTDIR
#
# On a running lab in its seed-like starting point (scripts/lab up: v4.1 with 2 session slots,
# nconnect=1, 64 KiB, 2 nfsd threads, 20 ms on the server's link), nfs2 also mounts the same
# export over NFSv3 with a short timeout, writes to both mounts while the statistics tools run,
# then loses its lab link for a while so tasks hang and the server "is not responding". Saved,
# verbatim, under OUTDIR/<suite>/ (the guests' own nfs-utils and kernel):
#   client: mountstats_{before,during1,during2,after}.txt (cat /proc/self/mountstats),
#           nfsiostat.txt (nfsiostat 5 3, during the writes), nfsiostat_mount.txt (one mount),
#           mountstats_cmd.txt / mountstats_cmd_rpc.txt (nfs-utils' mountstats command),
#           nfsstat_c{,_v}_{before,after}.txt, nfsstat_m.txt, rpc_nfs_{before,after}.txt,
#           dmesg.txt and journalctl_k.txt (hung tasks, "not responding" / "OK")
#   server: nfsd_{before,during,after}.txt (cat /proc/net/rpc/nfsd), pool_stats_{...}.txt,
#           nfsstat_s{,_v}_{before,after}.txt, threads.txt
# plus NOTES.txt (what was set, versions, times). The lab is left as it was found (the extra
# mount unmounted, the link restored, hung_task_timeout_secs put back).
# Commands in single quotes run in the guest: their $ expand there.
# shellcheck disable=SC2016
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:?usage: scripts/lab-paste-captures.sh OUTDIR}
lab() { "$REPO/scripts/lab" ssh "$@"; }
log() { printf '[paste %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
client=nfs2
server=nfs1
suite=$(lab "$server" '. /etc/os-release; echo $VERSION_CODENAME')
dir="$out/$suite"
mkdir -p "$dir"

server_snapshot() {
  lab "$server" cat /proc/net/rpc/nfsd > "$dir/nfsd_$1.txt"
  lab "$server" cat /proc/fs/nfsd/pool_stats > "$dir/pool_stats_$1.txt"
}
client_tools() {
  lab "$client" nfsstat -c > "$dir/nfsstat_c_$1.txt"
  lab "$client" nfsstat -c -v > "$dir/nfsstat_c_v_$1.txt"
  lab "$client" cat /proc/net/rpc/nfs > "$dir/rpc_nfs_$1.txt"
  lab "$server" nfsstat -s > "$dir/nfsstat_s_$1.txt"
  lab "$server" nfsstat -s -v > "$dir/nfsstat_s_v_$1.txt"
}

log "a second mount of the same export over NFSv3 (short timeout: 'not responding' within seconds)"
lab "$client" 'mkdir -p /mnt/nfs3 && { mountpoint -q /mnt/nfs3 || mount -t nfs -o vers=3,proto=tcp,nolock,rsize=65536,wsize=65536,hard,timeo=30,retrans=2 nfs1:/srv/nfs /mnt/nfs3; }'
old_hung=$(lab "$client" cat /proc/sys/kernel/hung_task_timeout_secs)
trap 'lab "$client" "tc qdisc del dev lab0 root 2>/dev/null; echo $old_hung > /proc/sys/kernel/hung_task_timeout_secs; pkill -x dd; sleep 2; umount /mnt/nfs3; rm -f /mnt/nfs/paste-*" || true' EXIT
lab "$client" 'dmesg -C; rm -f /mnt/nfs/paste-*'

server_snapshot before
client_tools before
lab "$client" cat /proc/self/mountstats > "$dir/mountstats_before.txt"

log "writes: 4 writers on the v4.1 mount, 2 on the v3 mount, 48 MiB each with fsync"
lab "$client" 'for i in 1 2 3 4; do nohup dd if=/dev/zero of=/mnt/nfs/paste-v41-$i bs=1M count=48 conv=fsync >/dev/null 2>&1 & done
for i in 1 2; do nohup dd if=/dev/zero of=/mnt/nfs3/paste-v3-$i bs=1M count=48 conv=fsync >/dev/null 2>&1 & done'
sleep 5
lab "$client" cat /proc/self/mountstats > "$dir/mountstats_during1.txt"
server_snapshot during
lab "$client" nfsiostat 5 3 > "$dir/nfsiostat.txt"
lab "$client" nfsiostat 5 2 /mnt/nfs > "$dir/nfsiostat_mount.txt"
lab "$client" mountstats /mnt/nfs > "$dir/mountstats_cmd.txt"
lab "$client" mountstats --rpc /mnt/nfs > "$dir/mountstats_cmd_rpc.txt" || true
lab "$client" cat /proc/self/mountstats > "$dir/mountstats_during2.txt"
log "waiting for the writes to end"
lab "$client" 'while pgrep -x dd >/dev/null; do sleep 2; done'
server_snapshot after
client_tools after
lab "$client" cat /proc/self/mountstats > "$dir/mountstats_after.txt"
lab "$client" nfsstat -m > "$dir/nfsstat_m.txt"
lab "$server" cat /proc/fs/nfsd/threads > "$dir/threads.txt"

log "the link goes away for 45 s under writes: hung tasks (10 s), 'not responding', then 'OK'"
lab "$client" 'echo 10 > /proc/sys/kernel/hung_task_timeout_secs
for i in 1 2; do nohup dd if=/dev/zero of=/mnt/nfs/paste-hang-$i bs=1M count=16 conv=fsync >/dev/null 2>&1 & done
nohup dd if=/dev/zero of=/mnt/nfs3/paste-hang-v3 bs=1M count=16 conv=fsync >/dev/null 2>&1 &
sleep 2; tc qdisc replace dev lab0 root netem loss 100%'
sleep 45
lab "$client" 'tc qdisc del dev lab0 root'
log "link back; waiting for the writers"
lab "$client" 'n=0; while pgrep -x dd >/dev/null && [ $n -lt 150 ]; do sleep 2; n=$((n+1)); done'
sleep 5
lab "$client" dmesg > "$dir/dmesg.txt"
lab "$client" journalctl -k -b --no-pager > "$dir/journalctl_k.txt"

{
  echo "made by: scripts/lab-paste-captures.sh OUTDIR ($(date -u +%Y-%m-%dT%H:%MZ)), commit $(git -C "$REPO" rev-parse --short HEAD)"
  echo "suite: $suite; kernel: $(lab "$client" uname -r)"
  echo "nfs-utils (client): $(lab "$client" "dpkg-query -W -f '\${Version}' nfs-common")"
  echo "lab: QEMU TCG, one vCPU and 2 GiB per VM; $server serves /srv/nfs; $client mounts it on /mnt/nfs (v4.1) and /mnt/nfs3 (v3)"
  echo "client mounts: $(lab "$client" grep ' nfs' /proc/mounts | tr '\n' ' ')"
  echo "client session slots setting: $(lab "$client" cat /sys/module/nfs/parameters/max_session_slots)"
  echo "server threads: $(cat "$dir/threads.txt")"
  echo "load: 4 x dd 48 MiB conv=fsync on /mnt/nfs, 2 on /mnt/nfs3; statistics during it;"
  echo "      then hung_task_timeout_secs=10, 3 more writers, the client's lab link dropped (netem loss 100%) for 45 s"
} > "$dir/NOTES.txt"
log "saved in $dir"
