"""The lab heals what a slow boot broke (scripts/lab-heal.sh), driven against a fake guest.

Under host load a VM's boot timed out proc-fs-nfsd.mount and systemd-networkd (systemd's start
timeout); `lab up` then waited 600 s for nfs-server and died, although restarting the two units
fixed it at once (docs/lab.md). These tests run the lab's own shell functions with `lab_ssh`
replaced by a fake systemd whose state lives in files, so each case is exact and takes no VM.
"""

from __future__ import annotations

import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
HEAL = REPO / "scripts" / "lab-heal.sh"

# A fake guest: failed units in $STATE/failed (one per line), units that fail again on every
# restart in $STATE/stubborn, active units in $STATE/active, the boot's states in $STATE/boot
# (one consumed per call, the last one kept), and every command appended to $STATE/calls.
FAKE = r"""
log() { printf '[lab] %s\n' "$*" >&2; }
die() { printf '[lab] ERROR: %s\n' "$*" >&2; exit 1; }
lab_ssh() {
  local host=$1; shift
  echo "$host $*" >> "$STATE/calls"
  [ "$1" = timeout ] && shift 2
  local verb=$2; shift 2
  case "$verb" in
    is-system-running)
      local first; first=$(head -n 1 "$STATE/boot")
      [ "$(wc -l < "$STATE/boot")" -gt 1 ] && sed -i 1d "$STATE/boot"
      echo "$first" ;;
    list-units) while read -r u; do [ -n "$u" ] && echo "$u loaded failed failed fake"; done < "$STATE/failed" ;;
    list-jobs) ;;
    reset-failed) ;;
    restart|start)
      local u
      for u in "$@"; do
        if grep -qx "$u" "$STATE/stubborn"; then continue; fi
        grep -vx "$u" "$STATE/failed" > "$STATE/f.tmp" || true; mv "$STATE/f.tmp" "$STATE/failed"
        # nfs-server's start pulls in proc-fs-nfsd.mount, as systemd does
        if [ "$u" = nfs-server ] || [ "$u" = nfs-server.service ]; then
          grep -vx proc-fs-nfsd.mount "$STATE/failed" > "$STATE/f.tmp" || true; mv "$STATE/f.tmp" "$STATE/failed"
        fi
        grep -qx "$u" "$STATE/active" || echo "$u" >> "$STATE/active"
      done ;;
    is-active)
      if grep -qx "$1" "$STATE/active"; then echo active; return 0; fi
      if grep -qx "$1" "$STATE/failed" || grep -qx "$1.service" "$STATE/failed"; then echo failed; else echo activating; fi
      return 3 ;;
  esac
}
BOOT_TIMEOUT=${BOOT_TIMEOUT:-60}
WAIT_REPORT=0
HEAL_PAUSE=0
"""


def run(tmp_path, script, failed=(), stubborn=(), active=(), boot=("degraded",), env=None):
    state = tmp_path / "state"
    state.mkdir()
    for name, lines in (("failed", failed), ("stubborn", stubborn), ("active", active), ("boot", boot)):
        (state / name).write_text("".join(f"{line}\n" for line in lines))
    (state / "calls").write_text("")
    program = f"{FAKE}\nsource {HEAL}\n{script}\n"
    result = subprocess.run(
        ["bash", "-c", program], env={"STATE": str(state), "PATH": "/usr/bin:/bin", **(env or {})},
        capture_output=True, text=True, timeout=60, check=False,
    )
    return result, (state / "calls").read_text(), (state / "failed").read_text().split()


def test_units_a_slow_boot_failed_are_restarted_and_named(tmp_path):
    result, calls, failed = run(
        tmp_path, "heal_units nfs1; echo rc=$?", failed=("systemd-networkd.service", "proc-fs-nfsd.mount"))
    assert "rc=0" in result.stdout
    assert failed == []
    assert "nfs1 timeout 300 systemctl restart systemd-networkd.service proc-fs-nfsd.mount" in calls
    assert "nfs1: units failed during boot: systemd-networkd.service proc-fs-nfsd.mount; restarting them (round 1 of 3)" in result.stderr


def test_a_healthy_boot_restarts_nothing(tmp_path):
    result, calls, _failed = run(tmp_path, "heal_units nfs2; echo rc=$?")
    assert "rc=0" in result.stdout
    assert "restart" not in calls
    assert result.stderr == ""


def test_restarts_are_bounded_and_what_stays_failed_is_said(tmp_path):
    result, calls, failed = run(tmp_path, "heal_units nfs1; echo rc=$?", failed=("broken.service",), stubborn=("broken.service",))
    assert "rc=1" in result.stdout
    assert failed == ["broken.service"]
    assert calls.count("systemctl restart broken.service") == 3
    assert "nfs1: still failed after 3 rounds of restarts: broken.service" in result.stderr


def test_the_wait_for_nfs_server_heals_instead_of_waiting(tmp_path):
    # the boot's picture under load: the mount timed out, so nfs-server failed on its dependency
    result, calls, failed = run(
        tmp_path, "wait_for_unit nfs1 nfs-server 30; echo rc=$?",
        failed=("proc-fs-nfsd.mount", "nfs-server.service"))
    assert "rc=0" in result.stdout, result.stderr
    assert failed == []
    assert "restarting them (round 1 of 3)" in result.stderr


def test_a_wait_that_times_out_says_what_it_waited_for(tmp_path):
    result, _calls, _failed = run(
        tmp_path, "wait_for_unit nfs1 nfs-server 0; echo rc=$?",
        failed=("nfs-server.service",), stubborn=("nfs-server.service", "nfs-server"))
    assert "rc=" not in result.stdout  # die exits
    assert "nfs1: nfs-server not active after 0s (state 'failed', failed units: nfs-server.service" in result.stderr


@pytest.mark.parametrize("boot", [("starting", "starting", "degraded"), ("initializing", "running")])
def test_the_boot_wait_reports_systemd_state_until_it_settles(tmp_path, boot):
    result, calls, _failed = run(tmp_path, "wait_for_boot nfs3; echo rc=$?", boot=boot)
    assert "rc=0" in result.stdout
    assert f"waiting for nfs3 to finish booting: systemd '{boot[0]}'" in result.stderr
    assert calls.count("is-system-running") == len(boot)


def test_a_boot_that_never_settles_is_bounded(tmp_path):
    result, _calls, _failed = run(tmp_path, "wait_for_boot nfs3; echo rc=$?", boot=("starting",), env={"BOOT_TIMEOUT": "0"})
    assert "rc=0" in result.stdout
    assert "nfs3: systemd still 'starting' after 0s; healing what failed so far" in result.stderr
