# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host's side of the two-phase start: the per-run directory, ready.json, the wait for go, done.json,
and the restore phase's written.json and wait for read_go.json.

One implementation for every module that starts on the controller's go (checkpoint_canary's
ranks, tcp_probe's senders). The formats and the go plan are pure and live in
module_utils/canary/barrier.py; the files are read and written through host/file_read.py and file_write.py (a go
file is renamed into place, so a half-written go is never read).
"""

from __future__ import annotations

import json
import os
import time

from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_write
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import barrier

# A stat and an open every 20 ms in the module's own process: nothing new starts on the host,
# and go is read within 20 ms of being written (it is written a margin ahead of go).
POLL_SECONDS = 0.02


def path(directory, name):
    return os.path.join(directory, name)


def prepare_dir(directory):
    """Create the per-run directory 0700, or accept an existing private directory of this user (the
    controller may have created it to put an abort file in): file_write.private_dir_error, so a
    directory of another user, a group- or world-writable one, or a symlink is refused. Returns
    an error message or None."""
    error = file_write.private_dir_error(directory, "barrier_dir", create=True)
    if error:
        return error
    if os.path.lexists(path(directory, barrier.READY_FILE)):
        return "barrier_dir %s already holds %s: give every run its own directory" % (directory, barrier.READY_FILE)
    return None


def run_id(directory):
    """The run id this module wrote into ready.json in directory (None when there is none)."""
    try:
        document = json.loads(file_read.read(path(directory, barrier.READY_FILE), file_read.SMALL_LIMIT) or "null")
    except (OSError, ValueError):
        return None
    value = document.get("run_id") if isinstance(document, dict) else None
    return value if isinstance(value, str) else None


def write_json(module, directory, name, document):
    """Write one barrier file (never through a link: file_write.write_file's default); written.json
    carries the run id of ready.json, which the controller echoes in read_go.json."""
    if name == barrier.WRITTEN_FILE and "run_id" not in document:
        document = dict(document, run_id=run_id(directory) or barrier.new_run_id())
    file_write.write_file(module, path(directory, name), json.dumps(document) + "\n", mode=0o600)


def _read_signal_file(directory, name):
    """(text or None when absent, refusal message or None): go and abort files are read bounded, never through a link."""
    try:
        return file_read.read(path(directory, name), file_read.SMALL_LIMIT), None
    except OSError as exc:
        return None, "%s refused: %s" % (name, file_read.describe_error(exc))


def wait_for_go(module, directory, ready_document, timeout):
    """Write ready.json, then wait for go.json or abort.json (abort wins) at most `timeout` seconds.

    Returns (go epoch on this host's clock, or None to abort; the barrier record: ready_at,
    signal, go_at, go_late_seconds, abort). A go that arrives after its time is warned about: the
    host starts late, and the start spread shows by how much.
    """
    return _announce_and_wait(module, directory, (barrier.READY_FILE, "ready_at", ready_document),
                              barrier.GO_FILE, timeout, "go")


def wait_for_read_go(module, directory, written_document, timeout):
    """The restore phase's barrier: write written.json, then wait for read_go.json or abort.json.

    The same contract as wait_for_go (abort.json, present at either barrier, calls the run off):
    returns (read go epoch on this host's clock or None to abort; {written_at, signal, go_at,
    go_late_seconds, abort}).
    """
    return _announce_and_wait(module, directory, (barrier.WRITTEN_FILE, "written_at", written_document),
                              barrier.READ_GO_FILE, timeout, "read go")


def _announce_and_wait(module, directory, announce, go_name, timeout, what):
    """Write the announce file (name, its time key, document), then poll go_name and abort.json.

    The announce file carries this run's id (ready.json a new one, written.json ready.json's);
    a go is obeyed only when it echoes that id and its go_at is finite and within `timeout` of
    now (barrier.parse_signal): a stale or far-future go file is an abort naming why.
    """
    name, time_key, document = announce
    if "run_id" not in document:
        document = dict(document, run_id=(run_id(directory) if name != barrier.READY_FILE else None) or barrier.new_run_id())
    announced = float(document[time_key])
    deadline = announced + timeout
    info = {time_key: round(announced, 6), "signal": None, "go_at": None, "go_late_seconds": None, "abort": None,
            "run_id": document["run_id"]}
    try:
        write_json(module, directory, name, document)
    except OSError as exc:
        # A link or a directory planted at our own file (file_read.FileRefused) or a full tmpfs: the
        # controller never hears from this host, so this run is off, named, never a traceback (issue 45).
        info.update(signal="abort", abort="could not write %s: %s" % (path(directory, name), exc))
        return None, info
    while True:
        go_text, go_refused = _read_signal_file(directory, go_name)
        abort_text, abort_refused = _read_signal_file(directory, barrier.ABORT_FILE)
        if abort_refused or go_refused:
            abort_text = json.dumps({"abort": abort_refused or go_refused})
        kind, value = barrier.parse_signal(go_text, abort_text, document["run_id"], time.time(), timeout)
        if kind == "go":
            late = time.time() - value
            info.update(signal="go", go_at=value, go_late_seconds=round(max(0.0, late), 6),
                        go_controller=barrier.go_controller_of(go_text))
            if late > barrier.LATE_GO_SECONDS:
                module.warn("%s arrived %.2f s after the go time: this host starts late "
                            "(the report's start spread shows by how much)" % (what, late))
            return value, info
        if kind == "abort":
            info.update(signal="abort", abort=value)
            return None, info
        if time.time() >= deadline:
            info.update(signal="abort", abort="no %s within barrier_timeout=%ss" % (what, timeout))
            return None, info
        time.sleep(POLL_SECONDS)


def write_done(module, directory, failed):
    """done.json, right before the module exits: the role's one wait after go returns on it."""
    try:
        write_json(module, directory, barrier.DONE_FILE, {"done_at": round(time.time(), 6), "failed": bool(failed)})
    except OSError as exc:
        module.warn("could not write %s: %s" % (path(directory, barrier.DONE_FILE), exc))
