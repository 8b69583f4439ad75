#!/usr/bin/env bash
# A canary and Prometheus on the same window (issue 48): the lab's canary bundle and the series
# Prometheus scraped from the three VMs during it, for the diagnosis-from-Prometheus to be checked
# against the canary's own bundle.
#
#   scripts/lab-prometheus.sh OUTDIR SCENARIO     SCENARIO: seed_like_v41 | healthy
#   scripts/lab-prometheus.sh --remove            stop and remove the collector and node_exporter
#
# On a running bookworm lab (scripts/lab up):
# 1. node_exporter from Debian's prometheus-node-exporter in nfs1, nfs2 and nfs3: the .deb and any
#    dependency a VM lacks are fetched on this host with `apt-get download` (the host's apt must be
#    the VMs' suite; cached in $CKPTIO_CACHE/lab-debs-SUITE) and installed with dpkg -i, the way
#    the lab once put iperf3 in; its textfile directory is Debian's /var/lib/prometheus/node-exporter.
#    Then our collector with playbooks/monitor.yml at 5 s (ckptio_monitor_interval, the module's
#    minimum). Both are skipped when already there (a second scenario of the same lab).
# 2. Prometheus ($CKPTIO_PROMETHEUS, Debian's 2.42 binary that scripts/setup.sh extracts) on THIS
#    host, not in a VM: the TCG server VM is itself the lab's bottleneck (docs/lab.md), and a
#    Prometheus there would change what is measured. It scrapes each VM's node_exporter every 5 s
#    through an `ssh -L` tunnel (scripts/lab forwards only ssh), each target labelled
#    instance=<VM name>; its data directory is OUTDIR/SCENARIO-tsdb.
# 3. The canary exactly as scripts/lab-captures.sh runs it (it is called, with the scenario's set-up
#    and NOTES.txt), with a checkpoint big enough that its window lasts >= 100 s (20 scrapes):
#    CKPTIO_PROM_BYTES_PER_RANK (default 24 MiB for seed_like_v41, 64 MiB for healthy; 4 ranks on
#    each of the 2 clients), the target scaled with it (same 6.7 MB/s as the lab's 64 MiB in 10 s).
# 4. After the window + 60 s: `query_range` over [start - 60 s, end + 60 s], step 5 s, one JSON per
#    selector (below) with the exact query in query.txt, into OUTDIR/SCENARIO-prometheus/; then
#    Prometheus is stopped (SIGTERM, it closes its head and WAL cleanly) and its whole data
#    directory copied to $CKPTIO_V48_DIR/SCENARIO-tsdb (default /var/tmp/ckptio-v48, outside the
#    repository), with the bundle and the exports beside it.
# The fixtures (tests/fixtures/captures/v48_bookworm_SCENARIO, tests/fixtures/prometheus/
# v48_bookworm_SCENARIO) are copied from OUTDIR by hand (their NOTES.txt says how).
# Every process it starts (tunnels, Prometheus) is stopped on exit, also on failure.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$("$REPO/scripts/setup.sh")"
cd "$REPO"
inventory=inventories/lab/hosts.yml
lab() { "$REPO/scripts/lab" ssh "$@"; }
log() { printf '[prometheus %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf '[prometheus] ERROR: %s\n' "$*" >&2; exit 1; }

HOSTS=(nfs1 nfs2 nfs3)
PORT_BASE=${CKPTIO_LAB_PORT_BASE:-22300}
PROM_PORT=$((PORT_BASE + 90))
declare -A TUNNEL_PORT=([nfs1]=$((PORT_BASE + 91)) [nfs2]=$((PORT_BASE + 92)) [nfs3]=$((PORT_BASE + 93)))
declare -A SSH_PORT=([nfs1]=$((PORT_BASE + 1)) [nfs2]=$((PORT_BASE + 2)) [nfs3]=$((PORT_BASE + 3)))
INTERVAL=5
MARGIN=60
V48_DIR=${CKPTIO_V48_DIR:-/var/tmp/ckptio-v48}
TEXTFILE_DIR=/var/lib/prometheus/node-exporter
# name|query: one query_range export each.
SELECTORS=(
  'ckptio_nfs|{__name__=~"ckptio_nfs_.+"}'
  'node_cpu_seconds_total|node_cpu_seconds_total'
  'node_network_receive_bytes_total|node_network_receive_bytes_total'
  'node_network_transmit_bytes_total|node_network_transmit_bytes_total'
  'node_netstat_Tcp|{__name__=~"node_netstat_Tcp_.+"}'
  'node_disk_io_time_seconds_total|node_disk_io_time_seconds_total'
)

[ -f "$inventory" ] || die "no $inventory: scripts/lab up first"

# --- remove ------------------------------------------------------------------------------------
if [ "${1:-}" = --remove ]; then
  ansible-playbook -i "$inventory" playbooks/monitor.yml -e ckptio_monitor_state=absent >&2
  for host in "${HOSTS[@]}"; do lab "$host" "dpkg -r prometheus-node-exporter >/dev/null 2>&1 || true"; done
  log "collector and node_exporter removed from ${HOSTS[*]}"
  exit 0
fi

out=${1:?usage: scripts/lab-prometheus.sh OUTDIR SCENARIO (or --remove)}
scenario=${2:?usage: scripts/lab-prometheus.sh OUTDIR SCENARIO}
case "$scenario" in
  seed_like_v41) bytes_per_rank=${CKPTIO_PROM_BYTES_PER_RANK:-25165824} ;;
  healthy) bytes_per_rank=${CKPTIO_PROM_BYTES_PER_RANK:-67108864} ;;
  *) die "scenario must be seed_like_v41 or healthy, got $scenario" ;;
esac
[ -x "${CKPTIO_PROMETHEUS:-}" ] || die "CKPTIO_PROMETHEUS is not set or not executable: run scripts/setup.sh"
mkdir -p "$out"
out=$(cd "$out" && pwd)
# shellcheck disable=SC2016 # expanded by the VM's shell
suite=$(lab nfs1 '. /etc/os-release && echo $VERSION_CODENAME')
# shellcheck disable=SC1091
host_suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ "$suite" = "$host_suite" ] || die "the lab runs $suite, this host's apt gives $host_suite packages: run a $host_suite lab"

# --- 1. node_exporter and the collector ----------------------------------------------------
debs=$CKPTIO_CACHE/lab-debs-$suite
mkdir -p "$debs"
fetch_deb() {  # fetch_deb PACKAGE: prints the cached .deb's path
  local found
  found=$(find "$debs" -maxdepth 1 -name "${1}_*.deb" | head -n 1)
  if [ -z "$found" ]; then
    (cd "$debs" && apt-get download -q "$1" >&2)
    found=$(find "$debs" -maxdepth 1 -name "${1}_*.deb" | head -n 1)
  fi
  [ -n "$found" ] || die "apt-get download $1 gave no .deb"
  printf '%s\n' "$found"
}
deb_depends() {  # first alternative of each Depends/Pre-Depends, without versions
  dpkg-deb -f "$1" Pre-Depends Depends | sed -e 's/^[A-Za-z-]*: //' | tr ',' '\n' \
    | sed -e 's/|.*//' -e 's/(.*)//' -e 's/:any//' -e 's/[[:space:]]//g' | grep -v '^$' || true
}
install_node_exporter() {
  local host=$1 want=(prometheus-node-exporter) have=() todo deb dep remote=/var/tmp/ckptio-debs
  if lab "$host" "dpkg-query -W -f='\${Status}' prometheus-node-exporter 2>/dev/null | grep -q 'ok installed'"; then
    log "$host: node_exporter already installed"
    return 0
  fi
  # The dependencies the VM lacks, and theirs (one .deb per package, cached).
  local files=() seen=" "
  while [ ${#want[@]} -gt 0 ]; do
    todo=${want[0]}; want=("${want[@]:1}")
    case "$seen" in *" $todo "*) continue ;; esac
    seen+="$todo "
    if [ "$todo" != prometheus-node-exporter ] && \
        lab "$host" "dpkg-query -W -f='\${Status}' $todo 2>/dev/null | grep -q 'ok installed'"; then
      continue
    fi
    deb=$(fetch_deb "$todo")
    files+=("$deb")
    mapfile -t have < <(deb_depends "$deb")
    for dep in "${have[@]}"; do want+=("$dep"); done
  done
  log "$host: installing ${files[*]##*/}"
  lab "$host" "rm -rf $remote && mkdir -p $remote"
  for deb in "${files[@]}"; do
    lab "$host" "cat > $remote/${deb##*/}" < "$deb"
  done
  lab "$host" "DEBIAN_FRONTEND=noninteractive dpkg -i $remote/*.deb >/dev/null && rm -rf $remote && \
    systemctl enable --now prometheus-node-exporter >/dev/null 2>&1 && test -d $TEXTFILE_DIR"
}
start=$(date +%s)
for host in "${HOSTS[@]}"; do install_node_exporter "$host"; done
log "node_exporter in ${HOSTS[*]} ($(( $(date +%s) - start ))s); the collector (monitor.yml, ${INTERVAL}s)"
ansible-playbook -i "$inventory" playbooks/monitor.yml -e ckptio_monitor_interval=$INTERVAL > "$out/$scenario-monitor.log" 2>&1 \
  || { tail -n 30 "$out/$scenario-monitor.log" >&2; die "monitor.yml failed (log $out/$scenario-monitor.log)"; }
node_exporter_version=$(lab nfs1 "dpkg-query -W -f='\${Version}' prometheus-node-exporter")

# --- 2. Prometheus on this host, tunnels to each VM --------------------------------------------
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
key=$(awk '/ansible_ssh_private_key_file:/ {print $2}' "$inventory")
for host in "${HOSTS[@]}"; do
  ssh -N -i "$key" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \
    -o ExitOnForwardFailure=yes -o ServerAliveInterval=15 \
    -L "127.0.0.1:${TUNNEL_PORT[$host]}:127.0.0.1:9100" -p "${SSH_PORT[$host]}" root@127.0.0.1 &
  pids+=($!)
done
tsdb=$out/$scenario-tsdb
rm -rf "$tsdb"
mkdir -p "$tsdb"
{
  printf 'global:\n  scrape_interval: %ss\n  scrape_timeout: %ss\n  evaluation_interval: %ss\n' "$INTERVAL" "$INTERVAL" "$INTERVAL"
  printf 'scrape_configs:\n  - job_name: node\n    static_configs:\n'
  for host in "${HOSTS[@]}"; do
    printf '      - targets: ["127.0.0.1:%s"]\n        labels: {instance: %s}\n' "${TUNNEL_PORT[$host]}" "$host"
  done
} > "$out/$scenario-prometheus.yml"
"$CKPTIO_PROMETHEUS" --config.file="$out/$scenario-prometheus.yml" --storage.tsdb.path="$tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" > "$out/$scenario-prometheus.log" 2>&1 &
prom_pid=$!
pids+=("$prom_pid")
api=http://127.0.0.1:$PROM_PORT/api/v1
# Every target up before the canary starts (a first scrape under TCG can take seconds).
begin=$(date +%s)
until [ "$(curl -fsS "$api/query" --data-urlencode 'query=sum(up)' 2>/dev/null \
    | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(int(float(r[0]["value"][1])) if r else 0)' 2>/dev/null)" = 3 ]; do
  kill -0 "$prom_pid" 2>/dev/null || { tail -n 20 "$out/$scenario-prometheus.log" >&2; die "Prometheus exited"; }
  [ $(( $(date +%s) - begin )) -lt 180 ] || die "not every target up after 180s: $(curl -fsS "$api/targets" | head -c 2000)"
  sleep 2
done
log "Prometheus $("$CKPTIO_PROMETHEUS" --version 2>&1 | head -n 1 | awk '{print $3}') scrapes ${HOSTS[*]} every ${INTERVAL}s ($api)"
# Two scrapes of the collector's figures before the window's margin starts.
sleep $(( 2 * INTERVAL ))

# --- 3. the canary, as lab-captures.sh runs it -------------------------------------------------
total=$(( bytes_per_rank * 4 * 2 ))
window=$(( 10 * total / 67108864 ))
canary_args="-e canary_validation_bytes_per_rank=$bytes_per_rank -e ckptio_checkpoint_bytes=$total -e ckptio_checkpoint_window_seconds=$window"
log "canary $scenario: $bytes_per_rank bytes per rank, target $total bytes in ${window}s"
CKPTIO_CAPTURES_CANARY_ARGS=$canary_args "$REPO/scripts/lab-captures.sh" "$out/captures" "$scenario"
bundle=$out/captures/$scenario
[ -f "$bundle/context.yml" ] || die "the canary left no bundle (log $out/captures/$scenario.log)"
read -r w_start w_end < <(python3 - "$bundle/context.yml" <<'PY'
import sys, yaml
canary = yaml.safe_load(open(sys.argv[1]))["canary"]
print(canary["start_at"], canary["start_at"] + canary["seconds"])
PY
)
q_start=$(python3 -c "import math,sys; print(math.floor(float(sys.argv[1])) - $MARGIN)" "$w_start")
q_end=$(python3 -c "import math,sys; print(math.ceil(float(sys.argv[1])) + $MARGIN)" "$w_end")
now=$(date +%s)
if [ "$now" -lt $(( q_end + 2 * INTERVAL )) ]; then
  log "waiting $(( q_end + 2 * INTERVAL - now ))s for the margin after the window to be scraped"
  sleep $(( q_end + 2 * INTERVAL - now ))
fi

# --- 4. exports, Prometheus stopped, data directory copied --------------------------------------
exports=$out/$scenario-prometheus
rm -rf "$exports"
mkdir -p "$exports"
for entry in "${SELECTORS[@]}"; do
  name=${entry%%|*}; query=${entry#*|}
  mkdir -p "$exports/$name"
  curl -fsS "$api/query_range" --data-urlencode "query=$query" --data-urlencode "start=$q_start" \
    --data-urlencode "end=$q_end" --data-urlencode "step=$INTERVAL" > "$exports/$name/query_range.json"
  printf 'GET %s/query_range\nquery=%s\nstart=%s\nend=%s\nstep=%s\n' "/api/v1" "$query" "$q_start" "$q_end" "$INTERVAL" \
    > "$exports/$name/query.txt"
done
targets=$(curl -fsS "$api/targets" | python3 -c 'import json,sys; print(", ".join("%s %s %s" % (t["labels"]["instance"], t["scrapeUrl"], t["health"]) for t in json.load(sys.stdin)["data"]["activeTargets"]))')
kill -TERM "$prom_pid"
wait "$prom_pid" || true
grep -q 'See you next time' "$out/$scenario-prometheus.log" || log "Prometheus did not log a clean stop: see $out/$scenario-prometheus.log"
{
  echo "scenario: $scenario (issue 48: a canary and Prometheus on the same window)"
  echo "made by: scripts/lab-prometheus.sh OUTDIR $scenario ($(date -u +%Y-%m-%dT%H:%MZ)), commit $(git rev-parse --short HEAD)"
  echo "prometheus: $("$CKPTIO_PROMETHEUS" --version 2>&1 | head -n 1) on the controller (this host), not in a VM: the TCG server VM is the lab's bottleneck and a Prometheus there would change what is measured"
  echo "scrape: every ${INTERVAL}s (timeout ${INTERVAL}s), job node, through ssh -L tunnels to each VM's 127.0.0.1:9100; targets at the end: $targets"
  echo "node_exporter: Debian prometheus-node-exporter $node_exporter_version in nfs1, nfs2, nfs3 (textfile directory $TEXTFILE_DIR)"
  echo "collector: ckptio.nfs.nfs_metrics_collector via playbooks/monitor.yml, interval ${INTERVAL}s (clients: /mnt/nfs; server: nfsd)"
  echo "canary: scripts/lab-captures.sh OUTDIR $scenario with $canary_args"
  echo "canary window (controller clock, unix s): $w_start .. $w_end ($(date -u -d "@${w_start%.*}" +%FT%TZ) .. $(date -u -d "@${w_end%.*}" +%FT%TZ))"
  echo "query_range: start=$q_start end=$q_end step=$INTERVAL (the window +- ${MARGIN}s); one directory per selector, query.txt = the request"
  echo "tsdb: the whole data directory after a clean stop (SIGTERM) in $V48_DIR/$scenario-tsdb"
} > "$exports/NOTES.txt"
mkdir -p "$V48_DIR"
rm -rf "${V48_DIR:?}/$scenario-tsdb" "${V48_DIR:?}/$scenario-prometheus" "${V48_DIR:?}/$scenario-bundle"
cp -a "$tsdb" "$V48_DIR/$scenario-tsdb"
cp -a "$exports" "$V48_DIR/$scenario-prometheus"
cp -a "$bundle" "$V48_DIR/$scenario-bundle"
log "done: bundle $bundle, exports $exports, tsdb $V48_DIR/$scenario-tsdb ($(du -sh "$tsdb" | cut -f1))"
