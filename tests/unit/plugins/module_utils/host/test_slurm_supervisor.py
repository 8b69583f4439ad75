"""host/processes.py's wait, terminate and reap on real child processes, and host/slurm_supervisor.py (the
Slurm runner zip's __main__) driving a stand-in canary: its result, its bounds, the kill of its session
(issue 46: the supervisor was a program in a string that no test imported)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan
from ansible_collections.ckptio.nfs.plugins.module_utils.host import processes, slurm_supervisor
from ansible_collections.ckptio.nfs.plugins.module_utils.slurm import job

# A child that ignores SIGTERM and says so on stdout once it does.
STUBBORN = "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"


def start(code, **options):
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True, **options)
    assert child.stdout.readline().strip() == b"ready"
    return child


def gone(pid):
    """Not running any more: no /proc entry, or a zombie (a re-parented process's reaper is not us)."""
    try:
        with open("/proc/%d/stat" % pid) as stream:
            return stream.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def test_wait_until_returns_once_done_and_false_at_its_bound_without_sleeping_past_it():
    calls = []
    assert processes.wait_until(lambda: len(calls) >= 3, 5, 0.01, between=lambda: calls.append(1))
    assert len(calls) == 3
    started = time.monotonic()
    assert processes.wait_until(lambda: False, 0.3, interval=30) is False
    assert 0.3 <= time.monotonic() - started < 1.0


def test_terminate_group_stops_a_child_that_obeys_sigterm_at_once():
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    started = time.monotonic()
    assert processes.terminate_group(child.pid, 5, lambda: child.poll() is not None)
    assert time.monotonic() - started < 2
    assert child.returncode == -signal.SIGTERM


def test_terminate_group_kills_a_child_that_ignores_sigterm_after_the_grace_and_reaps_it():
    child = start(STUBBORN)
    started = time.monotonic()
    # Without exited: the default reaps the child (waitpid), as the canary's own children are.
    assert processes.terminate_group(child.pid, 0.5)
    assert 0.5 <= time.monotonic() - started < 3
    assert not os.path.exists("/proc/%d" % child.pid)


def test_terminate_group_kills_what_the_child_left_in_its_group_even_when_the_child_obeyed_sigterm():
    # The child forks a grandchild that ignores SIGTERM, then sleeps; SIGTERM ends the child, not the grandchild.
    code = textwrap.dedent("""
        import os, signal, subprocess, sys, time
        grandchild = subprocess.Popen([sys.executable, "-c", %r], stdout=subprocess.PIPE)
        grandchild.stdout.readline()
        print("ready", grandchild.pid, flush=True)
        time.sleep(60)
    """) % STUBBORN
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    words = child.stdout.readline().split()
    assert words[0] == b"ready"
    grandchild = int(words[1])
    started = time.monotonic()
    assert processes.terminate_group(child.pid, 5, lambda: child.poll() is not None)
    # SIGKILL went to the group at once after the child left: no wait for the grace.
    assert time.monotonic() - started < 3
    assert child.returncode == -signal.SIGTERM
    assert processes.wait_until(lambda: gone(grandchild), 5)


def test_terminate_signals_pids_and_names_the_ones_that_needed_sigkill():
    obeys = subprocess.Popen(["sleep", "60"], start_new_session=True)
    stubborn = start(STUBBORN)
    assert processes.terminate([obeys.pid, stubborn.pid], 0.5) == {stubborn.pid}
    assert obeys.wait(5) == -signal.SIGTERM and stubborn.wait(5) == -signal.SIGKILL


def test_kill_children_and_reap_within_reap_our_children():
    children = [subprocess.Popen(["sleep", "60"]) for _index in range(2)]
    exited = processes.kill_children([child.pid for child in children], 5)
    assert exited == dict((child.pid, True) for child in children)
    child = subprocess.Popen(["sleep", "0.2"])
    processes.reap_within([child.pid], 5)
    assert processes.reap(child.pid) and not os.path.exists("/proc/%d" % child.pid)


# The supervisor on a stand-in canary: `python -m <module>` with the job directory's args file, as on a node.
CANARIES = {
    "canary_done": """
        import json, sys
        args = json.load(open(sys.argv[1]))["ANSIBLE_MODULE_ARGS"]
        print(json.dumps({"changed": False, "args": args}))
    """,
    "canary_stubborn": """
        import json, os, signal, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        args = json.load(open(sys.argv[1]))["ANSIBLE_MODULE_ARGS"]
        os.mkdir(os.path.join(args["path"], "%shost-%d-0123abcd" % (PREFIX, os.getpid())))
        open(os.path.join(os.path.dirname(sys.argv[1]), "started"), "w").write("%d" % os.getpid())
        time.sleep(60)
    """,
}
DRIVER = ("import sys\nfrom ansible_collections.ckptio.nfs.plugins.module_utils.host import slurm_supervisor\n"
          "sys.exit(slurm_supervisor.supervise(*sys.argv[1:]))")


def supervise(tmp_path, canary, **runner_args):
    canaries = tmp_path / "canaries"
    canaries.mkdir()
    for name, source in CANARIES.items():
        (canaries / (name + ".py")).write_text("PREFIX = %r\n" % plan.WORKDIR_PREFIX + textwrap.dedent(source))
    directory = tmp_path / "job"
    directory.mkdir()
    data = tmp_path / "data"
    data.mkdir()
    args = dict({"path": str(data), "ranks": 2}, **runner_args)
    (directory / job.ARGS).write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    output = open(str(tmp_path / "stdout"), "w")
    process = subprocess.Popen([sys.executable, "-c", DRIVER, str(directory / job.ARGS), str(canaries), canary],
                               stdout=output, stderr=subprocess.STDOUT)
    return process, directory, data


def test_the_supervisor_writes_the_canarys_result_and_removes_an_uncollected_directory_at_its_bound(tmp_path):
    process, directory, _data = supervise(tmp_path, "canary_done", _ckptio_collect_seconds=1, _ckptio_run_seconds=60)
    assert processes.wait_until((directory / job.RESULT).exists, 30)
    # The module's arguments without the runner's own two.
    assert json.loads((directory / job.RESULT).read_text()) == {"changed": False, "args": {"path": str(tmp_path / "data"), "ranks": 2}}
    started = time.monotonic()
    assert process.wait(30) == 0
    assert 0.5 < time.monotonic() - started < 5
    assert not directory.exists()
    lines = (tmp_path / "stdout").read_text().splitlines()
    assert [line.split(": ", 1)[1] for line in lines][1:] == [
        "canary exited 0; result.json written",
        "job directory %s removed (not collected within 1 s)" % directory]
    assert lines[0].split(": ", 1)[1].startswith("canary pid ")
    assert lines[0].split(" ")[1] == os.uname()[1] + ":"


def test_on_sigterm_the_supervisor_kills_a_canary_that_ignores_it_and_removes_its_workdir_and_the_job(tmp_path):
    process, directory, data = supervise(tmp_path, "canary_stubborn", _ckptio_collect_seconds=30)
    other = data / ("%shost-1-0123abcd" % plan.WORKDIR_PREFIX)  # another canary's (pid 1): left alone
    other.mkdir()
    assert processes.wait_until((directory / "started").exists, 30), (tmp_path / "stdout").read_text()
    canary = int((directory / "started").read_text())
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    assert process.wait(30) == 128 + signal.SIGTERM
    # The canary ignored SIGTERM: SIGKILL came after KILL_WAIT, not before.
    assert slurm_supervisor.KILL_WAIT <= time.monotonic() - started < 2 * slurm_supervisor.KILL_WAIT + 2
    assert gone(canary)
    assert os.listdir(str(data)) == [other.name] and not directory.exists()
    log = (tmp_path / "stdout").read_text()
    assert "signal 15: stopping the canary" in log
    assert "removed %s (the canary was stopped)" % (data / ("%shost-%d-0123abcd" % (plan.WORKDIR_PREFIX, canary))) in log
    assert "job directory %s removed" % directory in log


def test_a_canary_past_the_jobs_bound_is_stopped_with_sigalrms_status(tmp_path):
    process, directory, data = supervise(tmp_path, "canary_stubborn", _ckptio_collect_seconds=30, _ckptio_run_seconds=1)
    assert process.wait(30) == 128 + signal.SIGALRM
    assert os.listdir(str(data)) == [] and not directory.exists()
    log = (tmp_path / "stdout").read_text()
    assert "the canary ran past the job's bound of 1 s: stopping it" in log and "signal 14: stopping the canary" in log


def test_the_workdir_pattern_is_the_canarys_name_for_that_pid_only():
    pattern = slurm_supervisor.workdir_pattern(4711)
    assert pattern.match(plan.WORKDIR_PREFIX + "node01-4711-1a2b3c4d")
    assert not pattern.match(plan.WORKDIR_PREFIX + "node01-47110-1a2b3c4d")
    assert not pattern.match(plan.WORKDIR_PREFIX + "node01-4711-1a2b3c4d.x")
    assert not pattern.match("other-node01-4711-1a2b3c4d")
