#!/usr/bin/env bash
# The Slurm lab case (issue 29): a rolling remount through the scheduler, on real slurmctld/slurmd.
#
#   scripts/lab-slurm.sh [--capture DIR]
#
# Boots the lab with Slurm (CKPTIO_LAB_SLURM=1 scripts/lab up: slurmctld on nfs1, slurmd on nfs2
# and nfs3, partition "lab") unless it runs already, then, with the client_tuning Slurm hook
# (tasks/slurm_drain.yml / slurm_resume.yml, scontrol on nfs1):
#   wait_for_job   a job (sbatch) runs on nfs2; tune-clients.yml drains nfs2 and waits; while the
#                  job runs the mount keeps its old options (asserted every poll); the job ends
#                  (released once the drain was seen and held HOLD seconds: Ansible's own pace
#                  under TCG varies by minutes, a fixed sleep would end before or long after the
#                  drain); the play remounts with the new options and resumes nfs2: idle again
#   not_in_time    a job on nfs3 held until cancelled and a 20 s bound: nfs3 is skipped (the play reports it),
#                  nothing unmounted, the node resumed (not left drained), the job cancelled
#   operators_drain  nfs3 drained by "someone else" (reason "hw check"): remounted (drained, no
#                  job) and left drained with that reason
# and, with the canary as a Slurm job (canary_validation_launcher=slurm, docs/slurm.md):
#   canary_bundle  validate-checkpoint.yml once over ssh and once through sbatch/srun (2 ranks a
#                  node, 8 MiB each); squeue shows the job running on nfs2 and nfs3; the two bundles
#                  have the same files and, in every JSON/YAML file, the same keys (canary.json's
#                  ranks too); afterwards nothing is left (queue, job directories, work
#                  directories, runner processes)
#   canary_interrupted  the play is killed (SIGKILL to its process group: none of its own clean-up
#                  runs) once the job runs and every node is ready, then the job is cancelled
#                  (`scancel`, as an operator or the next run would): the runner stops the canary
#                  and removes everything within Slurm's KillWait
#   canary_abandoned  the same kill, and nobody cancels: the job ends by itself (the canary's
#                  barrier bound, then the runner's collect bound) and leaves nothing
# and checks that nothing is left in the queue. Prints the timings; exit 0 when every case held.
# CKPTIO_LAB_SLURM_CASES picks cases (default: all, in the order above).
# --capture DIR also writes verbatim scontrol/squeue output (the unit tests' tests/fixtures/slurm/).
# Not a CI stage: the cases wait for jobs, 20-40 minutes under TCG on the loaded 2-core host
# (measured 2026-12-02: the first play reached the drain after 841 s at load ~9) besides lab up.
# The lab stays up: scripts/lab down when done. Environment as scripts/lab (CKPTIO_LAB_PORT_BASE ...),
# CKPTIO_LAB_SLURM_HOLD_SECONDS (how long the job keeps running once nfs2 is draining, default 30).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
capture=""
if [ "${1:-}" = --capture ]; then capture=${2:?--capture DIR}; mkdir -p "$capture"; fi
HOLD_SECONDS=${CKPTIO_LAB_SLURM_HOLD_SECONDS:-30}
CASES=" ${CKPTIO_LAB_SLURM_CASES:-wait_for_job not_in_time operators_drain canary_bundle canary_interrupted canary_abandoned} "
want() { case "$CASES" in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
RELEASE=/run/ckptio-lab-slurm-release
POLL=5
export CKPTIO_LAB_SLURM=1
# An environment already sourced (source "$(scripts/setup.sh)") is used as it is: a lab kept in its
# own CKPTIO_CACHE would otherwise make setup.sh build a second venv there.
if [ -z "${VIRTUAL_ENV:-}" ] || ! command -v ansible-playbook >/dev/null; then
  # shellcheck source=/dev/null
  source "$("$REPO/scripts/setup.sh")"
fi
cd "$REPO"
inventory=inventories/lab/hosts.yml
# ssh hands the remote shell one line: each argument is quoted for it (reasons and --wrap hold spaces).
on() { local host=$1; shift; "$REPO/scripts/lab" ssh "$host" "$(printf '%q ' "$@")"; }
log() { printf '[lab-slurm %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
fail() { printf '[lab-slurm] FAILED: %s\n' "$*" >&2; exit 1; }
node_state() { on nfs1 sinfo -h -N -n "$1" -o %t | head -n1; }
node_reason() { on nfs1 sinfo -h -N -n "$1" -o %E | head -n1; }
mount_opts() { on "$1" findmnt -n -o OPTIONS /mnt/nfs; }
# The lab's baseline has rsize=65536 and nconnect absent/1; the checkpoint profile 1 MiB, nconnect=4.
is_baseline() { case "$1" in *rsize=65536*) return 0 ;; *) return 1 ;; esac; }
is_tuned() { case "$1" in *rsize=1048576*nconnect=4*|*nconnect=4*rsize=1048576*) return 0 ;; *) return 1 ;; esac; }
queue() { on nfs1 squeue -h -o '%i %T %N'; }
tune() {  # tune-clients.yml on one client with the Slurm hook; extra -e pairs follow
  local host=$1; shift
  # localhost too: the summary play runs there, and only it fails the run when a host failed
  # (docs/operations.md: a --limit without localhost ends with rc 0 and no summary).
  # ckptio_clients=$host too: only this client's line in the summary (before 0.5.0 a host outside
  # --limit counted as NOT_ATTEMPTED and failed the run; now it is named as not in this run).
  ansible-playbook -i "$inventory" playbooks/tune-clients.yml --limit "$host,localhost" -e ckptio_clients="$host" \
    -e client_tuning_drain_tasks=tasks/slurm_drain.yml -e client_tuning_undrain_tasks=tasks/slurm_resume.yml \
    -e client_tuning_slurm_controller=nfs1 -e client_tuning_slurm_poll_seconds=$POLL \
    -e ckptio_report_dir="$work/reports" "$@"
}
work=$(mktemp -d /tmp/lab-slurm.XXXXXX)
since() { echo $(( $(date +%s) - $1 ))s; }

start=$(date +%s)
"$REPO/scripts/lab" up
log "lab up (with Slurm) in $(since "$start")"
[ -f "$inventory" ] || fail "no $inventory"
for host in nfs2 nfs3; do
  # The remount cases need the lab's baseline mounts and idle nodes; the canary's cases neither.
  want wait_for_job || want not_in_time || want operators_drain || continue
  opts=$(mount_opts $host)
  is_baseline "$opts" || fail "$host's /mnt/nfs is not the lab's baseline ($opts): run on a fresh lab (scripts/lab down; scripts/lab-slurm.sh)"
  [ "$(node_state $host)" = idle ] || fail "$host is $(node_state $host) in Slurm, not idle"
done

if [ -n "$capture" ]; then
  on nfs1 scontrol --oneliner show node nfs2 > "$capture/show-node-idle.txt"
  on nfs1 scontrol --oneliner show node nfs9 > "$capture/show-node-unknown.txt" 2>&1 || true
  on nfs1 sinfo --version > "$capture/VERSION.txt"
fi

# ---- wait_for_job ------------------------------------------------------------------------------
if want wait_for_job; then
log "wait_for_job: a job on nfs2 that runs until released (at most 900 s)"
on nfs2 rm -f "$RELEASE"
job=$(on nfs1 sbatch --parsable --nodelist=nfs2 --job-name=ckptio-hold --output=/dev/null \
  --wrap "for i in \$(seq 900); do [ -e $RELEASE ] && exit 0; sleep 1; done")
job_start=$(date +%s)
for _ in $(seq 1 60); do [ "$(on nfs1 squeue -h -j "$job" -o %T)" = RUNNING ] && break; sleep 2; done
[ "$(on nfs1 squeue -h -j "$job" -o %T)" = RUNNING ] || fail "job $job did not start: $(queue)"
log "job $job runs on nfs2"
play_start=$(date +%s)
tune nfs2 -e client_tuning_slurm_wait_seconds=600 > "$work/wait_for_job.log" 2>&1 &
play=$!
drain_seen="" pending_polls=0
while kill -0 $play 2>/dev/null; do
  state=$(node_state nfs2) opts=$(mount_opts nfs2)
  running=$(on nfs1 squeue -h -j "$job" -o %T 2>/dev/null || true)
  case "$state" in drng*|drain*) [ -n "$drain_seen" ] || { drain_seen=$(date +%s); log "nfs2 is $state ($(node_reason nfs2)) after $(since "$play_start") of the play"; } ;; esac
  if [ -n "$running" ]; then
    is_baseline "$opts" || { kill $play; fail "nfs2's mount changed ($opts) while job $job was $running"; }
    pending_polls=$((pending_polls + 1))
    if [ -n "$drain_seen" ] && [ "$(( $(date +%s) - drain_seen ))" -ge "$HOLD_SECONDS" ] && [ -z "${released:-}" ]; then
      released=$(date +%s); on nfs2 touch "$RELEASE"; log "job $job released after $(since "$drain_seen") of draining"
    fi
    if [ -n "$capture" ] && [ -n "$drain_seen" ] && [ ! -f "$capture/show-node-draining.txt" ]; then
      on nfs1 scontrol --oneliner show node nfs2 > "$capture/show-node-draining.txt"
      on nfs1 squeue --noheader --nodelist nfs2 --states RUNNING,COMPLETING,CONFIGURING,SUSPENDED,STOPPED --format %i > "$capture/squeue-running.txt"
    fi
  elif [ -z "${job_end:-}" ]; then
    job_end=$(date +%s); log "job $job ended after $(since "$job_start"); nfs2 is $state"
  fi
  sleep $POLL
done
wait $play || { tail -n 40 "$work/wait_for_job.log" >&2; fail "tune-clients.yml on nfs2 failed (log $work/wait_for_job.log)"; }
play_end=$(date +%s)
[ -n "$drain_seen" ] || fail "nfs2 was never seen draining"
[ -n "${released:-}" ] || fail "the job ended before this script released it: $(queue)"
opts=$(mount_opts nfs2)
is_tuned "$opts" || fail "nfs2's mount after the play: $opts (wanted nconnect=4, rsize=1048576)"
[ "$(node_state nfs2)" = idle ] || fail "nfs2 after the play is $(node_state nfs2), not idle"
log "wait_for_job held: job ran $(( ${job_end:-$play_end} - job_start ))s; the mount stayed at its old options for $pending_polls polls while it ran; play $(( play_end - play_start ))s, remounted $(( play_end - ${job_end:-$play_end} ))s or less after the job ended; nfs2 idle"

fi

# ---- not_in_time -------------------------------------------------------------------------------
if want not_in_time; then
# The job outlives any play (Ansible reached the drain after 150-840 s here): cancelled below.
log "not_in_time: a job on nfs3 held until cancelled, a 20 s bound"
job=$(on nfs1 sbatch --parsable --nodelist=nfs3 --job-name=ckptio-long --output=/dev/null --wrap "sleep 3600")
for _ in $(seq 1 60); do [ "$(on nfs1 squeue -h -j "$job" -o %T)" = RUNNING ] && break; sleep 2; done
play_start=$(date +%s)
if tune nfs3 -e client_tuning_slurm_wait_seconds=20 > "$work/not_in_time.log" 2>&1; then
  fail "tune-clients.yml passed on nfs3 while a job ran there (log $work/not_in_time.log)"
fi
grep -q "Slurm node nfs3 skipped, nothing unmounted" "$work/not_in_time.log" || { tail -n 40 "$work/not_in_time.log" >&2; fail "no skip reported for nfs3"; }
opts=$(mount_opts nfs3)
is_baseline "$opts" || fail "nfs3's mount changed although the node did not drain: $opts"
state=$(node_state nfs3)
case "$state" in drng*|drain*) fail "nfs3 left $state by the run" ;; esac
log "not_in_time held: skipped after $(since "$play_start"), mount unchanged, nfs3 $state (resumed)"
if [ -n "$capture" ]; then
  on nfs1 scontrol update nodename=nfs3 state=drain "reason=ckptio.nfs client_tuning remounts the checkpoint mounts"
  on nfs1 scontrol --oneliner show node nfs3 > "$capture/show-node-draining-nfs3.txt"
  on nfs1 scontrol update nodename=nfs3 state=resume
fi
on nfs1 scancel "$job"
for _ in $(seq 1 30); do [ -z "$(queue)" ] && break; sleep 2; done

fi

# ---- operators_drain ---------------------------------------------------------------------------
if want operators_drain; then
log "operators_drain: nfs3 drained with reason 'hw check ticket=42'"
on nfs1 scontrol update nodename=nfs3 state=drain "reason=hw check ticket=42"
for _ in $(seq 1 30); do [ "$(node_state nfs3)" = drain ] && break; sleep 2; done
[ -z "$capture" ] || on nfs1 scontrol --oneliner show node nfs3 > "$capture/show-node-drained-other.txt"
play_start=$(date +%s)
tune nfs3 -e client_tuning_slurm_wait_seconds=120 > "$work/operators_drain.log" 2>&1 \
  || { tail -n 40 "$work/operators_drain.log" >&2; fail "tune-clients.yml on the drained nfs3 failed"; }
opts=$(mount_opts nfs3)
is_tuned "$opts" || fail "nfs3 (drained, no job) not remounted: $opts"
[ "$(node_state nfs3)" = drain ] || fail "nfs3 is $(node_state nfs3): the operator's drain was not kept"
[ "$(node_reason nfs3)" = "hw check ticket=42" ] || fail "nfs3's reason is now '$(node_reason nfs3)'"
log "operators_drain held: remounted in $(since "$play_start"), nfs3 still drained: $(node_reason nfs3)"
if [ -n "$capture" ]; then
  # Our own drain of an idle node: drained, no job (the hook's ready state).
  on nfs1 scontrol update nodename=nfs2 state=drain "reason=ckptio.nfs client_tuning remounts the checkpoint mounts"
  sleep 2
  on nfs1 scontrol --oneliner show node nfs2 > "$capture/show-node-drained.txt"
  on nfs1 scontrol update nodename=nfs2 state=resume
fi
on nfs1 scontrol update nodename=nfs3 state=resume
fi

# ---- the canary as a Slurm job -----------------------------------------------------------------
# validate-checkpoint.yml, small (2 ranks of 8 MiB a node): the 1-CPU VMs count one CPU a node, so
# the job asks --overcommit for 2 tasks a node.
validate() {  # NAME LAUNCHER [-e ...]: the play's log in $work/NAME.log, its bundle in $work/reports-NAME
  local name=$1 launcher=$2; shift 2
  ansible-playbook -i "$inventory" playbooks/validate-checkpoint.yml -e "label=$name" \
    -e "canary_validation_reports_dir=$work/reports-$name" -e canary_validation_launcher="$launcher" \
    -e canary_validation_ranks=2 -e canary_validation_bytes_per_rank=8388608 -e canary_validation_timeout=300 \
    -e canary_validation_slurm_controller=nfs1 -e canary_validation_slurm_overcommit=true "$@"
}
# Anything of ours on a node: the job's directory (and the barrier inside it), a canary work
# directory on the NFS mount, a runner or canary process.
leftovers() {
  local host
  for host in nfs2 nfs3; do
    on "$host" find /dev/shm /mnt/nfs -maxdepth 1 \( -name 'ckptio-slurm-*' -o -name 'ckptio-canary-*' \) | sed "s/^/$host: /"
    on "$host" pgrep -af 'canary[.]pyz|checkpoint_canary' | sed "s/^/$host: process /" || true
  done
}
nothing_left() {  # WHAT BOUND: waits (bounded) until the queue is empty and nothing is left on the nodes
  local what=$1 bound=$2 begin left
  begin=$(date +%s)
  while :; do
    left="$(queue)$(leftovers)"
    [ -z "$left" ] && break
    [ "$(( $(date +%s) - begin ))" -lt "$bound" ] || fail "$what: left after ${bound}s: ${left//$'\n'/; }"
    sleep $POLL
  done
  log "$what: queue empty, nothing of ours on nfs2/nfs3 after $(since "$begin")"
}
watch_queue() {  # squeue's lines for our jobs, every POLL seconds, into FILE, until PID ends
  local file=$1 pid=$2
  while kill -0 "$pid" 2>/dev/null; do
    on nfs1 squeue -h -o '%i %j %T %D %N' 2>/dev/null | grep ckptio-canary >> "$file" || true
    sleep $POLL
  done
}

if want canary_bundle; then
log "canary_bundle: validate-checkpoint.yml over ssh"
case_start=$(date +%s)
validate ssh ssh > "$work/canary-ssh.log" 2>&1 || { tail -n 40 "$work/canary-ssh.log" >&2; fail "validate over ssh failed (log $work/canary-ssh.log)"; }
log "over ssh in $(since "$case_start"); now through Slurm"
case_start=$(date +%s)
validate slurm slurm > "$work/canary-slurm.log" 2>&1 &
play=$!
: > "$work/canary-queue.txt"
watch_queue "$work/canary-queue.txt" $play
wait $play || { tail -n 40 "$work/canary-slurm.log" >&2; fail "validate through Slurm failed (log $work/canary-slurm.log)"; }
log "through Slurm in $(since "$case_start"); squeue saw: $(sort -u "$work/canary-queue.txt" | tr '\n' ';')"
grep -q "RUNNING 2 nfs\[2-3\]" "$work/canary-queue.txt" || fail "squeue never showed the canary's job running on nfs[2-3]"
grep -o "Slurm job [0-9]* (ckptio-canary-[^)]*) runs the canary on 2 node(s), 2 rank(s) each" "$work/canary-slurm.log" | head -n1 >&2 \
  || fail "the play did not say which job ran the canary"
# The same bundle: the same files, and in each JSON/YAML document the same keys (canary.json's ranks too).
python3 - "$work/reports-ssh" "$work/reports-slurm" <<'PY' || fail "the bundles differ (above)"
import json, os, sys, yaml
def bundle(top):
    [name] = os.listdir(top)
    return os.path.join(top, name)
def shape(root):
    found = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            keys = None
            if name.endswith(".json"):
                with open(path) as handle:
                    document = json.load(handle)
            elif name.endswith((".yml", ".yaml")):
                with open(path) as handle:
                    document = yaml.safe_load(handle)
            else:
                document = None
            if isinstance(document, dict):
                keys = sorted(document)
                if isinstance(document.get("ranks"), list) and document["ranks"]:
                    keys.append("ranks[]: " + ",".join(sorted(document["ranks"][0])))
            found[rel] = keys
    return found
ssh, slurm = (shape(bundle(top)) for top in sys.argv[1:3])
differ = sorted(set(ssh) ^ set(slurm))
for rel in differ:
    print("only %s: %s" % ("over ssh" if rel in ssh else "through Slurm", rel))
for rel in sorted(set(ssh) & set(slurm)):
    if ssh[rel] != slurm[rel]:
        differ.append(rel)
        print("%s: keys over ssh %s, through Slurm %s" % (rel, ssh[rel], slurm[rel]))
checked = sum(1 for keys in ssh.values() if keys is not None)
print("bundles: %d files each, %d JSON/YAML documents' keys compared, %d difference(s)" % (len(ssh), checked, len(differ)))
sys.exit(1 if differ else 0)
PY
nothing_left canary_bundle 300
log "canary_bundle held in $(since "$case_start") (the Slurm run)"
fi

# canary_abandoned uses it too (CKPTIO_LAB_SLURM_CASES=canary_abandoned alone: 'interrupted: command not found').
# The play is started in a session of its own and killed with its workers once every node is ready.
interrupted() {  # NAME: starts the play, waits until the job runs and both nodes wrote ready.json, kills it
  local name=$1 begin pgid ready
  begin=$(date +%s)
  setsid bash -c 'exec "$@"' _ ansible-playbook -i "$inventory" playbooks/validate-checkpoint.yml -e "label=$name" \
    -e "canary_validation_reports_dir=$work/reports-$name" -e canary_validation_launcher=slurm \
    -e canary_validation_ranks=2 -e canary_validation_bytes_per_rank=8388608 -e canary_validation_barrier_timeout=60 \
    -e canary_validation_slurm_collect_seconds=30 -e canary_validation_slurm_controller=nfs1 \
    -e canary_validation_slurm_overcommit=true > "$work/$name.log" 2>&1 &
  pgid=$!
  while :; do
    ready=0
    for host in nfs2 nfs3; do
      [ -n "$(on $host find /dev/shm -maxdepth 3 -path '/dev/shm/ckptio-slurm-*/barrier/ready.json')" ] && ready=$((ready + 1))
    done
    [ "$ready" = 2 ] && break
    kill -0 $pgid 2>/dev/null || { tail -n 30 "$work/$name.log" >&2; fail "$name: the play ended before the nodes were ready"; }
    [ "$(( $(date +%s) - begin ))" -lt 1200 ] || fail "$name: the nodes not ready after 1200 s"
    sleep 2
  done
  kill -KILL -- -$pgid
  wait $pgid 2>/dev/null || true
  log "$name: play killed $(since "$begin") after its start, both nodes ready; queue: $(queue | tr '\n' ';')"
}
if want canary_interrupted; then
case_start=$(date +%s)
interrupted cancelled
job=$(queue | awk '{print $1}' | head -n1)
[ -n "$job" ] || fail "cancelled: no job in the queue"
on nfs1 scancel "$job"
log "cancelled: scancel $job"
nothing_left "cancelled (scancel $job)" 120
log "canary_interrupted held in $(since "$case_start")"
fi

if want canary_abandoned; then
case_start=$(date +%s)
interrupted abandoned
[ -n "$(queue)" ] || fail "abandoned: the job was not in the queue when the play was killed"
# Nobody cancels: the canary waits for go at most barrier_timeout + 120 s and aborts, then the
# runner keeps its result 30 s for a play that is gone, removes its directory and the job ends.
nothing_left "abandoned (the job ends by itself)" 600
log "canary_abandoned held in $(since "$case_start")"
fi

[ -z "$(queue)" ] || fail "jobs left in the queue: $(queue)"
log "all cases held in $(since "$start") (logs in $work); the queue is empty. scripts/lab down when done."
