"""Issue 45, "Trusting what is there", tcp_probe_listener: stop signals a recorded process only when its recorded
command line is an iperf3 server on the recorded address and port, and a listener whose record cannot be
written is stopped at once. Each test failed on the code before the fix. (Apart from the canary's tests: their
live_host fixture is autouse and would show these a fake /proc.)"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest

from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module


def _record(state, record):
    from ansible_collections.ckptio.nfs.plugins.module_utils.canary import probe as probe_utils
    state.mkdir(mode=0o700, exist_ok=True)
    (state / probe_utils.state_file_name(record["address"], record["port"])).write_text(json.dumps(record))


def _start_tick(pid):
    from ansible_collections.ckptio.nfs.plugins.module_utils.canary import probe as probe_utils
    with open("/proc/%d/stat" % pid) as handle:
        return probe_utils.stat_start_time(handle.read())


@pytest.mark.parametrize("case", ["not-iperf3-at-all", "another-port"])
def test_stop_never_signals_a_recorded_process_that_is_not_an_iperf3_listener_on_the_recorded_port(tmp_path, case):
    """Before: a record whose start time, executable and argv matched a live process was proof enough, whatever
    the argv was (a planted record naming `sleep 60` got it SIGTERMed)."""
    from ansible_collections.ckptio.nfs.plugins.module_utils.canary import probe as probe_utils
    from ansible_collections.ckptio.nfs.plugins.modules import tcp_probe_listener
    if case == "not-iperf3-at-all":
        argv = [shutil.which("sleep"), "60"]
    else:
        fake = tmp_path / "iperf3"
        fake.write_text("#!/bin/sh\nexec sleep 60\n")
        fake.chmod(0o755)
        argv = probe_utils.listen_argv(shutil.which("timeout"), str(fake), "127.0.0.1", 5300, 60)
    stranger = subprocess.Popen(argv, start_new_session=True)
    state = tmp_path / "state"
    try:
        time.sleep(0.2)
        _record(state, {"address": "127.0.0.1", "port": 5299, "pid": stranger.pid, "argv": argv,
                        "starttime": _start_tick(stranger.pid), "exe": os.path.realpath(argv[0]),
                        "child_exe": os.path.realpath(shutil.which("sleep"))})
        result = run_module(tcp_probe_listener, {"state": "stopped", "state_dir": str(state)})
        assert stranger.poll() is None, "a process that is no iperf3 listener on port 5299 was signalled"
        assert result["stopped"][0]["pids"] == []
        assert "not an iperf3 listener on 127.0.0.1:5299" in " ".join(result["stopped"][0]["left_alone"]), result
    finally:
        if stranger.poll() is None:
            os.killpg(stranger.pid, 9)
        stranger.wait()


@pytest.mark.skipif(shutil.which("iperf3") is None or shutil.which("timeout") is None, reason="needs iperf3 and timeout")
def test_a_listener_whose_record_cannot_be_written_is_stopped_and_the_failure_names_the_file(tmp_path):
    """Before: the listener kept running (nothing recorded it, so nothing stopped it) while the message said
    the listeners started were stopped."""
    from ansible_collections.ckptio.nfs.plugins.module_utils.canary import probe as probe_utils
    from ansible_collections.ckptio.nfs.plugins.modules import tcp_probe_listener
    from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_tcp_probe import free_port, our_processes
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    port = free_port()
    record = state / probe_utils.state_file_name("127.0.0.1", port)
    record.mkdir()
    result = fail_module(tcp_probe_listener, {"state": "started", "addresses": ["127.0.0.1"], "ports": [port],
                                              "seconds": 60, "state_dir": str(state)})
    assert str(record) in result["msg"]
    assert our_processes([port]) == [], "the listener whose record could not be written is still listening"
