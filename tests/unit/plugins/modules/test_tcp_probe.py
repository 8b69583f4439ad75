"""ckptio.nfs.tcp_probe (the sender) and ckptio.nfs.tcp_probe_listener: argv and error paths with
run_command patched, then the real iperf3 on loopback.

The end-to-end tests start real listeners on 127.0.0.1 and prove the two promises that matter
on a production server: after state=stopped nothing listens and no process of ours is left, and a
listener nobody stops is gone by itself after its hard limit (seconds + timeout's kill grace).
The cases are written with tcp_probe's `mode` up to 0.2.0 (listen, send, stop); _module_and_args
routes listen and stop to tcp_probe_listener (state started, stopped), as they are since 0.3.0.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

from ansible.module_utils import basic

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import barrier
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import probe as probe_utils
from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root
from ansible_collections.ckptio.nfs.plugins.module_utils.host import tcp_listeners
from ansible_collections.ckptio.nfs.plugins.modules import tcp_probe as module
from ansible_collections.ckptio.nfs.plugins.modules import tcp_probe_listener as listener
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, read_sample, run_module, tree_checksums

IPERF3 = shutil.which("iperf3")
needs_iperf3 = pytest.mark.skipif(IPERF3 is None, reason="iperf3 is not installed (Debian package iperf3; scripts/setup.sh installs it)")

# The lab client's NFS mount (kernel 6.1): mountinfo shows the server's address as addr=.
MOUNTINFO = (
    "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
    "40 22 0:36 / /mnt/nfs rw,relatime shared:80 - nfs4 10.0.0.1:/srv/nfs "
    "rw,vers=4.1,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,nconnect=4,timeo=600,retrans=2,sec=sys,"
    "clientaddr=10.0.0.2,local_lock=none,addr=10.0.0.1\n"
    "41 22 0:37 / /mnt/byname rw,relatime shared:81 - nfs4 nfs1.example:/srv/nfs rw,vers=4.2,hard,proto=tcp,addr=10.0.0.7\n"
)


def _module_and_args(args):
    """(module, arguments) of a case written with tcp_probe's mode up to 0.2.0: listen and stop are the listener's
    state started and stopped; a sender has no state_dir."""
    mode = args.get("mode")
    if mode in ("listen", "stop"):
        rest = dict((key, value) for key, value in args.items() if key != "mode")
        return listener, dict(rest, state="started" if mode == "listen" else "stopped")
    return module, dict((key, value) for key, value in args.items() if key != "state_dir")


def _run(args, **kwargs):
    return run_module(*_module_and_args(args), **kwargs)


def _fail(args, **kwargs):
    return fail_module(*_module_and_args(args), **kwargs)


class FakeRun:
    """module.run_command stand-in: records argv, answers with a canned (rc, stdout, stderr)."""

    def __init__(self, rc=0, out="", err=""):
        self.calls = []
        self.answer = (rc, out, err)

    def __call__(self, argv, **kwargs):
        self.calls.append(list(argv))
        return self.answer


@pytest.fixture
def fake_host(fake_root, tmp_path, monkeypatch):
    """mountinfo, TCP tables and programs of a client; run_command answers with iperf3 3.12's real result."""
    fake_root.write("/proc/self/mountinfo", MOUNTINFO)
    # The live TCP tables: the listener's tests bind real sockets on loopback.
    fake_root.link_live("/proc/net")
    programs = {"iperf3": "/usr/bin/iperf3", "timeout": "/usr/bin/timeout"}
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: programs.get(name))
    run = FakeRun(out=read_sample("iperf3", "iperf3-3.12-client-P2-t1-loopback.json"))
    monkeypatch.setattr(basic.AnsibleModule, "run_command", lambda self, argv, **kwargs: run(argv, **kwargs))
    return {"programs": programs, "run": run, "tmp": tmp_path}


def test_send_defaults_to_the_mounts_addr_and_nconnect(fake_host):
    result = _run({"mode": "send", "mount_point": "/mnt/nfs", "port": 5202, "seconds": 10})
    assert fake_host["run"].calls == [["/usr/bin/timeout", "-k", "5", "40", "/usr/bin/iperf3", "-c", "10.0.0.1",
                                       "-p", "5202", "-P", "4", "-t", "10", "-J"]]
    assert (result["server"], result["port"], result["streams"], result["seconds"]) == ("10.0.0.1", 5202, 4, 10)
    assert result["summary"]["received_bits_per_second"] == 17638961544.68928
    assert json.loads(result["raw"])["end"]["sum_received"]["bytes"] == 2205941760
    assert result["parsed"] == json.loads(result["raw"])
    assert result["changed"] is False


def test_send_uses_the_kernels_address_not_the_name_in_the_source(fake_host):
    result = _run({"mode": "send", "mount_point": "/mnt/byname/"})
    assert result["server"] == "10.0.0.7"
    # No nconnect in the options: one stream, as the NFS client has one connection.
    assert result["streams"] == 1


def test_send_explicit_server_and_streams_win(fake_host):
    result = _run({"mode": "send", "mount_point": "/mnt/nfs", "server": "10.9.9.9", "streams": 2})
    assert fake_host["run"].calls[0][5:11] == ["-c", "10.9.9.9", "-p", "5201", "-P", "2"]
    assert result["streams"] == 2


def test_send_check_mode_runs_nothing_and_says_what_it_would_do(fake_host):
    result = _run({"mode": "send", "mount_point": "/mnt/nfs", "seconds": 3}, check_mode=True)
    assert fake_host["run"].calls == []
    assert result["argv"][4:] == ["/usr/bin/iperf3", "-c", "10.0.0.1", "-p", "5201", "-P", "4", "-t", "3", "-J"]
    assert result["msg"] == "would send 4 stream(s) to 10.0.0.1:5201 for 3 s"
    assert "summary" not in result


def test_send_iperf3_error_fails_with_the_summary_and_raw(fake_host):
    refused = read_sample("iperf3", "iperf3-3.12-client-connection-refused.json")
    fake_host["run"].answer = (0, refused, "")  # iperf3 3.12 -J exits 0 here (measured)
    result = _fail({"mode": "send", "server": "10.0.0.1", "port": 5203})
    assert result["msg"] == "probe to 10.0.0.1:5203 failed: unable to connect to server: Connection refused"
    assert result["summary"]["error"] == "unable to connect to server: Connection refused"
    assert result["raw"] == refused


def test_send_killed_at_its_time_limit_says_so(fake_host):
    fake_host["run"].answer = (124, "", "")
    result = _fail({"mode": "send", "server": "10.0.0.1"})
    assert result["summary"]["error"] == "iperf3 printed no JSON (exit 124, its time limit): "
    assert result["rc"] == 124
    assert result["parsed"] is None


def test_send_waits_for_start_at_and_warns_when_late(fake_host):
    ahead = time.time() + 0.5
    _run({"mode": "send", "server": "10.0.0.1", "start_at": ahead})
    assert time.time() >= ahead
    late = _run({"mode": "send", "server": "10.0.0.1", "start_at": time.time() - 30})
    assert any("start_at was" in warning and "starts late" in warning for warning in late["warnings"])


def _release_when_ready(directory, document, delay=0.0):
    """The controller's side in a thread: wait for ready.json, then write go.json (or abort.json)."""
    import threading

    def release():
        deadline = time.time() + 10
        while not (directory / barrier.READY_FILE).exists() and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(delay)
        name = barrier.ABORT_FILE if "abort" in document else barrier.GO_FILE
        if name == barrier.GO_FILE:
            # The controller echoes the run id the host wrote into ready.json (step canary_barrier).
            document.setdefault("run_id", json.loads((directory / barrier.READY_FILE).read_text())["run_id"])
        (directory / (name + ".tmp")).write_text(json.dumps(document))
        os.rename(str(directory / (name + ".tmp")), str(directory / name))

    thread = threading.Thread(target=release)
    thread.start()
    return thread


def test_send_with_a_barrier_says_ready_sends_at_go_and_writes_done(fake_host):
    directory = fake_host["tmp"] / "barrier"
    go_at = time.time() + 0.4
    thread = _release_when_ready(directory, barrier.go_document(go_at, 0.0))
    result = _run({"mode": "send", "mount_point": "/mnt/nfs", "barrier_dir": str(directory),
                   "barrier_timeout": 10, "start_at": time.time() + 100})
    thread.join()
    ready = json.loads((directory / barrier.READY_FILE).read_text())
    done = json.loads((directory / barrier.DONE_FILE).read_text())
    assert ready["ranks"] == 1 and ready["ready_at"] <= go_at
    # Sent at go (not at the ignored start_at), after ready; done after the send.
    assert result["start_at"] == pytest.approx(go_at, abs=1e-6)
    assert go_at <= result["started_at"] < go_at + 1.0
    assert result["barrier"]["signal"] == "go" and done["failed"] is False and done["done_at"] >= result["started_at"]
    assert len(fake_host["run"].calls) == 1
    assert (directory.stat().st_mode & 0o777) == 0o700


def test_a_late_go_is_warned_about_once(fake_host):
    directory = fake_host["tmp"] / "barrier"
    thread = _release_when_ready(directory, barrier.go_document(time.time() - 2.0, 0.0))
    result = _run({"mode": "send", "server": "10.0.0.1", "barrier_dir": str(directory), "barrier_timeout": 10})
    thread.join()
    late = [warning for warning in result.get("warnings", []) if "late" in warning]
    assert len(late) == 1 and late[0].startswith("go arrived"), late


def test_send_aborted_by_the_controller_sends_nothing_and_fails_naming_why(fake_host):
    directory = fake_host["tmp"] / "barrier"
    thread = _release_when_ready(directory, barrier.abort_document("not ready within the barrier bound"))
    result = _fail({"mode": "send", "server": "10.0.0.1", "barrier_dir": str(directory), "barrier_timeout": 10})
    thread.join()
    assert fake_host["run"].calls == []
    assert result["msg"] == "probe aborted before sending: not ready within the barrier bound"
    assert json.loads((directory / barrier.DONE_FILE).read_text())["failed"] is True


def test_send_without_go_within_the_barrier_timeout_sends_nothing(fake_host):
    directory = fake_host["tmp"] / "barrier"
    started = time.time()
    result = _fail({"mode": "send", "server": "10.0.0.1", "barrier_dir": str(directory), "barrier_timeout": 0.3})
    assert 0.3 <= time.time() - started < 5
    assert fake_host["run"].calls == []
    assert result["msg"] == "probe aborted before sending: no go within barrier_timeout=0.3s"


def test_send_refuses_a_barrier_dir_that_already_holds_a_ready_file(fake_host):
    directory = fake_host["tmp"] / "barrier"
    directory.mkdir(mode=0o700)
    (directory / barrier.READY_FILE).write_text("{}")
    result = _fail({"mode": "send", "server": "10.0.0.1", "barrier_dir": str(directory)})
    assert "already holds ready.json: give every run its own directory" in result["msg"]
    assert fake_host["run"].calls == []


def test_send_check_mode_with_a_barrier_writes_nothing(fake_host):
    directory = fake_host["tmp"] / "barrier"
    result = _run({"mode": "send", "server": "10.0.0.1", "barrier_dir": str(directory)}, check_mode=True)
    assert not directory.exists() and fake_host["run"].calls == [] and "barrier" not in result


@pytest.mark.parametrize("args, message", [
    ({"mode": "send"}, "server or mount_point is required with mode=send"),
    ({"mode": "send", "mount_point": "/mnt/none"}, "mount_point /mnt/none is not an NFS mount on "),
    ({"mode": "send", "server": "10.0.0.1", "streams": 129}, "streams must be 0 (the mount's nconnect) to 128, got 129"),
    ({"mode": "send", "server": "10.0.0.1", "port": 0}, "port must be 1..65535, got 0"),
    ({"mode": "send", "server": "10.0.0.1", "seconds": 0}, "seconds must be 1 or more, got 0"),
    ({"mode": "send", "server": "10.0.0.1", "barrier_dir": "run/b"}, "barrier_dir must be absolute, got 'run/b'"),
    ({"mode": "send", "server": "10.0.0.1", "barrier_timeout": 0}, "barrier_timeout must be a finite number greater than 0, got 0.0"),
    ({"mode": "stop", "state_dir": "relative/dir"}, "state_dir must be an absolute path, got relative/dir"),
    ({"mode": "listen", "ports": [5201]}, "addresses: give the addresses the clients mount (mode=listen)"),
    ({"mode": "listen", "addresses": ["127.0.0.1"]}, "ports: give one port per client (mode=listen)"),
    ({"mode": "listen", "addresses": ["127.0.0.1"], "ports": [5201, 5201]}, "ports must be distinct numbers 1..65535"),
    ({"mode": "listen", "addresses": ["127.0.0.1"], "ports": [70000]}, "ports must be distinct numbers 1..65535"),
    ({"mode": "listen", "addresses": ["nfs1.example"], "ports": [5201]}, "addresses: 'nfs1.example' is not an IP address"),
])
def test_bad_options_fail_naming_the_option_before_anything_runs(fake_host, args, message):
    result = _fail(args)
    assert result["msg"].startswith(message)
    assert fake_host["run"].calls == []


@pytest.mark.parametrize("mode_args", [
    {"mode": "send", "server": "10.0.0.1"},
    {"mode": "listen", "addresses": ["127.0.0.1"], "ports": [5201]},
])
def test_missing_iperf3_names_the_host_the_package_and_the_role_option(fake_host, mode_args, tmp_path):
    del fake_host["programs"]["iperf3"]
    result = _fail(dict(mode_args, state_dir=str(tmp_path / "state")))
    assert result["msg"] == ("iperf3 is not installed on %s: install the package iperf3 (Debian, Ubuntu, RHEL), or set "
                             "canary_validation_probe_install=true (role canary_validation)" % os.uname().nodename)
    assert fake_host["run"].calls == []
    assert not (tmp_path / "state").exists()


def test_listen_refuses_when_no_address_is_local(fake_host, tmp_path):
    # TEST-NET addresses (RFC 5737) are nobody's.
    result = _fail({"mode": "listen", "addresses": ["192.0.2.1", "198.51.100.7"], "ports": [5201],
                    "state_dir": str(tmp_path / "state")})
    assert result["msg"] == "none of addresses 192.0.2.1, 198.51.100.7 is an address of %s" % os.uname().nodename
    assert not (tmp_path / "state").exists()


def test_listen_on_a_link_local_address_without_zone_fails_naming_addresses(fake_host, tmp_path):
    result = _fail({"mode": "listen", "addresses": ["fe80::1%lo"], "ports": [5201],
                    "state_dir": str(tmp_path / "state")})
    # EINVAL where IPv6 is up (a link-local bind needs its interface); not local without IPv6.
    assert result["msg"] in ("addresses: cannot bind to fe80::1 to test it: Invalid argument",
                             "none of addresses fe80::1 is an address of %s" % os.uname().nodename)
    assert not (tmp_path / "state").exists()


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_listen_refuses_a_port_in_use_and_starts_nothing(fake_host, tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = _fail({"mode": "listen", "addresses": ["127.0.0.1", "192.0.2.1"], "ports": [port],
                        "state_dir": str(tmp_path / "state")})
    assert result["msg"] == "ports already in use on %s: 127.0.0.1:%d" % (os.uname().nodename, port)
    assert not (tmp_path / "state").exists()


def test_listen_check_mode_plans_local_addresses_and_starts_nothing(fake_host, tmp_path):
    state = tmp_path / "state"
    result = _run({"mode": "listen", "addresses": ["192.0.2.1", "127.0.0.1"], "ports": [5291, 5292],
                   "seconds": 30, "state_dir": str(state)}, check_mode=True)
    assert result["listeners"] == [{"address": "127.0.0.1", "port": 5291, "pid": None},
                                   {"address": "127.0.0.1", "port": 5292, "pid": None}]
    assert result["not_local"] == ["192.0.2.1"]
    assert result["changed"] is True
    assert not state.exists()


def test_stop_without_records_changes_nothing(tmp_path):
    state = tmp_path / "state"
    assert _run({"mode": "stop", "state_dir": str(state)})["changed"] is False
    state.mkdir()
    (state / "unrelated.txt").write_text("keep me\n")
    before = tree_checksums(str(tmp_path))
    result = _run({"mode": "stop", "state_dir": str(state)})
    assert result["changed"] is False
    assert tree_checksums(str(tmp_path)) == before


# --- real iperf3 on loopback ---------------------------------------------------------------------

def our_processes(ports):
    """Running (not zombie) timeout/iperf3 processes whose argv is a listener on one of ports."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                words = handle.read().decode(errors="replace").split("\0")
            with open("/proc/%s/stat" % entry) as handle:
                state = handle.read().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state in ("Z", "X") or "-s" not in words or "-p" not in words:
            continue
        if os.path.basename(words[0]) in ("timeout", "iperf3") and int(words[words.index("-p") + 1]) in ports:
            found.append((int(entry), words))
    return found


def listening(ports):
    sockets = tcp_listeners.listening_now(host_root.HostRoot("/"))
    return sorted((address, port) for address, port in sockets if port in ports)


def wait_until(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


@needs_iperf3
def test_listen_send_stop_on_loopback_leaves_nothing(tmp_path):
    state = tmp_path / "state"
    ports = [free_port(), free_port()]
    ports = sorted(set(ports))
    listen = _run({"mode": "listen", "addresses": ["127.0.0.1", "192.0.2.1"], "ports": ports,
                   "seconds": 60, "state_dir": str(state)})
    assert [(row["address"], row["port"]) for row in listen["listeners"]] == [("127.0.0.1", port) for port in ports]
    assert listening(ports) == [("127.0.0.1", port) for port in ports]
    assert oct(os.stat(state).st_mode & 0o777) == "0o700"
    assert sorted(os.listdir(state)) == sorted([probe_utils.state_file_name("127.0.0.1", p) for p in ports]
                                               + [probe_utils.log_file_name("127.0.0.1", p) for p in ports])

    sent = _run({"mode": "send", "server": "127.0.0.1", "port": ports[0], "streams": 2, "seconds": 1,
                 "start_at": time.time() + 0.2})
    assert sent["summary"]["error"] is None
    assert sent["summary"]["received_bits_per_second"] > 0
    assert sent["summary"]["streams"] == 2
    assert json.loads(sent["raw"])["start"]["test_start"]["num_streams"] == 2

    stop = _run({"mode": "stop", "state_dir": str(state)})
    assert stop["changed"] is True
    assert listening(ports) == []
    assert our_processes(ports) == []
    assert not state.exists()
    # The second port's listener was still waiting: stop ended it with SIGTERM.
    by_port = dict((row["port"], row) for row in stop["stopped"])
    assert by_port[ports[1]]["signal"] == "SIGTERM" and by_port[ports[1]]["pids"]
    # Idempotent: nothing recorded any more.
    assert _run({"mode": "stop", "state_dir": str(state)})["changed"] is False


@needs_iperf3
def test_a_listener_nobody_stops_is_gone_after_its_hard_limit(tmp_path):
    state = tmp_path / "state"
    port = free_port()
    limit = 2
    started = time.monotonic()
    _run({"mode": "listen", "addresses": ["127.0.0.1"], "ports": [port], "seconds": limit, "state_dir": str(state)})
    assert listening([port]) == [("127.0.0.1", port)]
    assert our_processes([port])
    # timeout(1): SIGTERM at the limit, SIGKILL LISTEN_KILL_AFTER_SECONDS later; a second of slack.
    budget = limit + probe_utils.LISTEN_KILL_AFTER_SECONDS + 1 - (time.monotonic() - started)
    assert wait_until(lambda: not listening([port]) and not our_processes([port]), budget)
    # The record of a listener that ended by itself is cleaned up by stop, which has nothing to kill.
    stop = _run({"mode": "stop", "state_dir": str(state)})
    assert [row["pids"] for row in stop["stopped"]] == [[]]
    assert not state.exists()


@needs_iperf3
def test_send_to_nobody_fails_with_iperf3s_message(tmp_path):
    result = _fail({"mode": "send", "server": "127.0.0.1", "port": free_port(), "seconds": 1})
    assert "Connection refused" in result["summary"]["error"]
    assert json.loads(result["raw"])["error"] == result["summary"]["error"]


@needs_iperf3
def test_stop_never_signals_a_recycled_pid(tmp_path):
    """A record whose pid now belongs to something else: that process survives the stop."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        argv = probe_utils.listen_argv("/usr/bin/timeout", IPERF3, "127.0.0.1", 5299, 60)
        (state / probe_utils.state_file_name("127.0.0.1", 5299)).write_text(
            json.dumps({"address": "127.0.0.1", "port": 5299, "pid": stranger.pid, "argv": argv}))
        result = _run({"mode": "stop", "state_dir": str(state)})
        assert result["stopped"] == [{"address": "127.0.0.1", "port": 5299, "pids": [], "signal": None, "log": "",
                                      "left_alone": ["pid %d left alone: the record has no start time and executable "
                                                     "to prove the process is ours" % stranger.pid]}]
        assert "not signalled (not proven ours): pid %d" % stranger.pid in result["msg"]
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


@needs_iperf3
def test_a_listener_that_cannot_start_fails_and_leaves_nothing(tmp_path, monkeypatch):
    # /bin/false in iperf3's place exits at once: the module must not wait the whole bound for it.
    real = basic.AnsibleModule.get_bin_path
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path",
                        lambda self, name, *a, **k: "/bin/false" if name == "iperf3" else real(self, name, *a, **k))
    state = tmp_path / "state"
    port = free_port()
    started = time.monotonic()
    result = _fail({"mode": "listen", "addresses": ["127.0.0.1"], "ports": [port], "state_dir": str(state)})
    assert time.monotonic() - started < tcp_listeners.LISTEN_WAIT_SECONDS
    assert result["msg"] == ("not listening (waited up to %d s): 127.0.0.1:%d (no output); the listeners started are stopped"
                             % (tcp_listeners.LISTEN_WAIT_SECONDS, port))
    assert not state.exists()
    assert our_processes([port]) == []
