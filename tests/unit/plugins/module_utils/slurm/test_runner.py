"""module_utils/slurm/runner.py: the canary's self-contained runner a Slurm job step starts (issue 29).

Run here as srun runs it on a node (`python3 canary.pyz ARGS_JSON`, no Ansible or collection on
its path): the module's own JSON result, the directory removed once read, and on SIGTERM
(scancel) nothing left - no canary process, no work directory, no job directory.
"""
from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import time
import zipfile

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import barrier
from ansible_collections.ckptio.nfs.plugins.module_utils.host import processes, slurm_supervisor
from ansible_collections.ckptio.nfs.plugins.module_utils.slurm import job, runner


def build(tmp_path):
    directory = tmp_path / "ckptio-slurm-t"
    directory.mkdir(mode=0o700)
    data = tmp_path / "data"
    data.mkdir()
    runner.build(str(directory / job.RUNNER))
    return directory, data


def start(directory, data, collect=30, **options):
    args = {"path": str(data), "ranks": 2, "bytes_per_rank": 1048576, "allow_local": True}
    args.update(options)
    document = job.runner_args(args, str(directory / "barrier"), 0, str(directory / "tmp"), collect)
    (directory / job.ARGS).write_text(json.dumps(document))
    # A clean environment: the runner needs nothing but its zip (the nodes have no Ansible).
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    log = open(str(directory.parent / "runner.log"), "w")
    return subprocess.Popen([sys.executable, str(directory / job.RUNNER), str(directory / job.ARGS)],
                            stdout=log, stderr=subprocess.STDOUT, cwd=str(directory.parent), env=env)


def release(directory):
    """What barrier_signal.yml does over ssh: go.json, echoing the run id of ready.json, a second ahead."""
    ready = directory / "barrier" / barrier.READY_FILE
    assert wait_for(ready.exists), (directory.parent / "runner.log").read_text()
    run_id = json.loads(ready.read_text())["run_id"]
    (directory / "barrier" / barrier.GO_FILE).write_text(json.dumps(barrier.go_document(time.time() + 1, 0.0, run_id)))


def wait_for(predicate, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_the_zip_holds_the_module_its_module_utils_and_ansibles_and_a_package_file_for_each_level(tmp_path):
    runner.build(str(tmp_path / "canary.pyz"))
    names = set(zipfile.ZipFile(str(tmp_path / "canary.pyz")).namelist())
    assert "__main__.py" in names
    assert "ansible_collections/ckptio/nfs/plugins/modules/checkpoint_canary.py" in names
    assert "ansible_collections/ckptio/nfs/plugins/module_utils/host/canary/run.py" in names
    assert "ansible/module_utils/basic.py" in names
    for package in ("ansible", "ansible_collections", "ansible_collections/ckptio", "ansible_collections/ckptio/nfs",
                    "ansible_collections/ckptio/nfs/plugins", "ansible_collections/ckptio/nfs/plugins/modules"):
        assert package + "/__init__.py" in names
    assert not any("__pycache__" in name for name in names)


def test_the_runner_writes_the_modules_result_and_exits_once_the_play_removed_its_directory(tmp_path):
    directory, data = build(tmp_path)
    process = start(directory, data)
    try:
        release(directory)
        assert wait_for((directory / job.RESULT).exists), (tmp_path / "runner.log").read_text()
        result = json.loads((directory / job.RESULT).read_text())
        assert not result.get("failed"), result
        assert [rank["rank"] for rank in result["ranks"]] == [0, 1]
        assert result["cleaned_up"] is True and os.listdir(str(data)) == []
        assert process.poll() is None  # it keeps the result for the play
        # what slurm_collect.yml does once it has read result.json
        subprocess.check_call(["rm", "-rf", str(directory)])
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()


def test_a_result_nobody_collects_is_removed_after_the_bound(tmp_path):
    directory, data = build(tmp_path)
    process = start(directory, data, collect=1)
    release(directory)
    assert process.wait(timeout=60) == 0
    assert not directory.exists() and os.listdir(str(data)) == []


def test_on_sigterm_the_canary_its_work_directory_and_the_job_directory_go(tmp_path):
    directory, data = build(tmp_path)
    # A barrier nobody releases: the canary prepares (work directory, ranks forked) and waits for go.
    process = start(directory, data, barrier_timeout=120)
    try:
        assert wait_for((directory / "barrier" / "ready.json").exists), (tmp_path / "runner.log").read_text()
        [workdir] = os.listdir(str(data))
        assert workdir.startswith("ckptio-canary-")
        canary_pid = int(workdir.split("-")[-2])
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 128 + signal.SIGTERM
        assert os.listdir(str(data)) == []
        assert not directory.exists()
        assert not os.path.exists("/proc/%d" % canary_pid) or open("/proc/%d/stat" % canary_pid).read().split()[2] == "Z"
        log = (tmp_path / "runner.log").read_text()
        assert "signal 15: stopping the canary" in log and "removed" in log
    finally:
        if process.poll() is None:
            process.kill()


def test_a_canary_that_runs_past_the_jobs_bound_is_stopped_by_the_runner(tmp_path):
    directory, data = build(tmp_path)
    # A barrier nobody releases and a job bound of 2 s: the runner stops the canary itself, without scancel.
    document = job.runner_args({"path": str(data), "ranks": 2, "bytes_per_rank": 1048576, "allow_local": True,
                                "barrier_timeout": 120}, str(directory / "barrier"), 0, str(directory / "tmp"), 30, 2)
    assert document["ANSIBLE_MODULE_ARGS"]["_ckptio_run_seconds"] == 2.0
    (directory / job.ARGS).write_text(json.dumps(document))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    with open(str(tmp_path / "runner.log"), "w") as log:
        process = subprocess.Popen([sys.executable, str(directory / job.RUNNER), str(directory / job.ARGS)],
                                   stdout=log, stderr=subprocess.STDOUT, cwd=str(tmp_path), env=env)
    try:
        assert process.wait(timeout=60) == 128 + signal.SIGALRM
        assert os.listdir(str(data)) == [] and not directory.exists()
        assert "the canary ran past the job's bound of 2 s: stopping it" in (tmp_path / "runner.log").read_text()
    finally:
        if process.poll() is None:
            process.kill()


def test_the_runners_waits_are_on_the_monotonic_clock_and_bounded():
    # The supervisor has no wait loop of its own: each of its waits is processes.wait_until (the canary's run,
    # the play's collection) or processes.terminate_group (the kill), whose one loop ends on a monotonic deadline.
    tree = ast.parse(open(slurm_supervisor.__file__).read())
    assert not [node for node in ast.walk(tree) if isinstance(node, (ast.While, ast.For)) and _sleeps(node)]
    calls = [ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)]
    assert calls.count("processes.wait_until") == 2 and calls.count("processes.terminate_group") == 1, calls
    assert "time.time" not in calls and "time.sleep" not in calls
    [wait_until] = [node for node in ast.parse(open(processes.__file__).read()).body
                    if isinstance(node, ast.FunctionDef) and node.name == "wait_until"]
    source = ast.unparse(wait_until)
    assert "time.monotonic()" in source and "time.time()" not in source


def _sleeps(node):
    return any(isinstance(call, ast.Call) and ast.unparse(call.func) == "time.sleep" for call in ast.walk(node))


def test_the_zips_main_is_the_supervisor_file_itself(tmp_path):
    runner.build(str(tmp_path / "canary.pyz"))
    with zipfile.ZipFile(str(tmp_path / "canary.pyz")) as archive:
        main = archive.read("__main__.py")
        assert main == archive.read("ansible_collections/ckptio/nfs/plugins/module_utils/host/slurm_supervisor.py")
    with open(slurm_supervisor.__file__, "rb") as stream:
        assert main == stream.read()


def test_the_role_builds_the_zip_by_running_runner_py_as_a_script(tmp_path):
    # slurm_ship.yml: `{{ ansible_playbook_python }} .../plugins/module_utils/slurm/runner.py DEST`, no collection on the path.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    subprocess.check_call([sys.executable, runner.__file__, str(tmp_path / "canary.pyz")], env=env, cwd=str(tmp_path))
    assert "__main__.py" in zipfile.ZipFile(str(tmp_path / "canary.pyz")).namelist()
