# shellcheck shell=bash
# The lab's healing of a slow boot, sourced by scripts/lab (and by tests/unit/test_lab_heal.py
# with a fake lab_ssh). Needs from the caller: lab_ssh HOST CMD..., log, die, BOOT_TIMEOUT,
# WAIT_REPORT.
#
# A boot on an oversubscribed host can time out units (systemd's start timeout: nfsd's
# proc-fs-nfsd.mount, systemd-networkd; measured here under load, docs/lab.md) and leave them
# failed for good: a longer wait never helps, a restart does at once. So: wait until systemd
# has finished booting (bounded, reporting its state), then restart whatever failed, in a
# bounded number of rounds, and say what was healed. The kernel command line already gives
# units 300 s instead of 90 s (systemd.default_timeout_start_sec), which makes this rarer.
HEAL_ROUNDS=3
# Seconds between polls and between rounds (tests set 0).
HEAL_PAUSE=${HEAL_PAUSE:-3}

systemd_state() { lab_ssh "$1" systemctl is-system-running 2>/dev/null || true; }
failed_units() { lab_ssh "$1" systemctl list-units --state=failed --plain --no-legend --no-pager 2>/dev/null | awk '{print $1}' | tr '\n' ' ' | sed 's/ *$//'; }

wait_for_boot() {
  local host=$1 begin now next deadline state
  begin=$(date +%s); deadline=$(( begin + BOOT_TIMEOUT )); next=$(( begin + WAIT_REPORT ))
  while :; do
    state=$(systemd_state "$host")
    case "$state" in
      initializing|starting|"") ;;
      *) return 0 ;;
    esac
    now=$(date +%s)
    if [ "$now" -ge "$deadline" ]; then
      log "$host: systemd still '${state:-unreachable}' after ${BOOT_TIMEOUT}s; healing what failed so far"
      return 0
    fi
    if [ "$now" -ge "$next" ]; then
      log "waiting for $host to finish booting: systemd '${state:-unreachable}', jobs queued: $(lab_ssh "$host" systemctl list-jobs --no-legend --no-pager 2>/dev/null | wc -l), $(( now - begin ))s of ${BOOT_TIMEOUT}s"
      next=$(( now + WAIT_REPORT ))
    fi
    sleep "$HEAL_PAUSE"
  done
}

heal_units() {
  local host=$1 round failed
  for round in $(seq 1 "$HEAL_ROUNDS"); do
    failed=$(failed_units "$host")
    [ -n "$failed" ] || return 0
    log "$host: units failed during boot: $failed; restarting them (round $round of $HEAL_ROUNDS)"
    # shellcheck disable=SC2086  # one argument per unit
    lab_ssh "$host" systemctl reset-failed $failed || true
    # shellcheck disable=SC2086
    lab_ssh "$host" timeout 300 systemctl restart $failed || log "$host: restarting $failed did not finish cleanly"
    sleep "$HEAL_PAUSE"
  done
  failed=$(failed_units "$host")
  [ -z "$failed" ] || log "$host: still failed after $HEAL_ROUNDS rounds of restarts: $failed"
  [ -z "$failed" ]
}

# Wait until UNIT is active on HOST, reporting its state; a unit that failed is healed (bounded)
# instead of waited for.
wait_for_unit() {
  local host=$1 unit=$2 limit=$3 begin now next deadline state
  begin=$(date +%s); deadline=$(( begin + limit )); next=$(( begin + WAIT_REPORT ))
  while :; do
    state=$(lab_ssh "$host" systemctl is-active "$unit" 2>/dev/null || true)
    [ "$state" = active ] && return 0
    if [ "$state" = failed ] || [ -n "$(failed_units "$host")" ]; then
      heal_units "$host" || true
      lab_ssh "$host" timeout 300 systemctl start "$unit" || true
      state=$(lab_ssh "$host" systemctl is-active "$unit" 2>/dev/null || true)
      [ "$state" = active ] && { log "$host: $unit active after healing"; return 0; }
    fi
    now=$(date +%s)
    [ "$now" -lt "$deadline" ] || die "$host: $unit not active after ${limit}s (state '$state', failed units: $(failed_units "$host"); journal: scripts/lab ssh $host journalctl -b -u $unit)"
    if [ "$now" -ge "$next" ]; then
      log "waiting for $unit on $host: '${state:-unreachable}', $(( now - begin ))s of ${limit}s"
      next=$(( now + WAIT_REPORT ))
    fi
    sleep "$HEAL_PAUSE"
  done
}
