# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The canary's self-contained runner for a Slurm job step (module_utils/slurm/job.py says the design).

build() writes a Python zip application: ckptio.nfs's checkpoint_canary module and this
collection's module_utils, and ansible-core's module_utils (what AnsiballZ ships for a module;
the nodes do not have Ansible or the collection installed), with SUPERVISOR as its __main__.
`python3 canary.pyz ARGS_JSON` on a node then:

1. runs the module in a child process in its own session (ansible-core's documented direct
   invocation: `python3 -m ...checkpoint_canary ARGS_JSON`), its JSON result into
   result.json.part, renamed to result.json when the child exits;
2. waits until the play has read the result and removed the job directory, at most
   COLLECT_SECONDS (the args' _ckptio_collect_seconds), then removes the directory itself;
3. on SIGTERM or SIGINT (scancel, the job's time limit) sends the signal to the child's session,
   SIGKILL after a few seconds, then removes what a killed canary leaves: its work directories
   (named ckptio-canary-<host>-<child pid>-<token> under each of its paths) and the job directory.

It writes nothing outside the job directory and the canary's own work directories.

    python3 -m ansible_collections.ckptio.nfs.plugins.module_utils.slurm.runner DEST

builds the zip at DEST (run on the controller with the collection on PYTHONPATH).
"""

from __future__ import annotations

import os
import sys
import zipfile

MODULE = "ansible_collections.ckptio.nfs.plugins.modules.checkpoint_canary"

SUPERVISOR = r'''# ckptio.nfs canary runner (module_utils/slurm/runner.py); run: python3 canary.pyz ARGS_JSON
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

MODULE = %(module)r
WORKDIR = re.compile(r"^ckptio-canary-.+-%%d-[0-9a-f]{8}$")
KILL_WAIT = 3.0
# Without the job's bound in its arguments (args.json of an older play): a day, the longest any canary waits.
RUN_BOUND = 86400.0
LOG = "runner.log"
stop = []


def on_signal(number, _frame):
    stop.append(number)


def say(text):
    """A line in the node's runner.log (and on the step's output: the job's batch log)."""
    line = "%%s %%s: %%s\n" %% (time.strftime("%%H:%%M:%%S"), os.uname()[1], text)
    sys.stdout.write(line)
    sys.stdout.flush()
    try:
        with open(LOG, "a") as stream:
            stream.write(line)
    except OSError:
        pass


def remove_workdirs(args, pid):
    """The canary's work directories a killed canary left (its own cleanup did not run)."""
    pattern = re.compile(WORKDIR.pattern %% pid)
    parents = list(args.get("paths") or []) or [args.get("path")]
    parents.append(args.get("local_path"))
    for parent in parents:
        if not parent or not os.path.isdir(parent):
            continue
        for name in os.listdir(parent):
            full = os.path.join(parent, name)
            if pattern.match(name) and os.path.isdir(full) and not os.path.islink(full):
                shutil.rmtree(full, ignore_errors=True)
                say("removed %%s (the canary was stopped)" %% full)


def main():
    global LOG
    args_path = os.path.abspath(sys.argv[1])
    directory = os.path.dirname(args_path)
    LOG = os.path.join(directory, LOG)
    with open(args_path) as stream:
        args = json.load(stream)["ANSIBLE_MODULE_ARGS"]
    collect = float(args.pop("_ckptio_collect_seconds", 300))
    # Every wait below is bounded on the monotonic clock (a wall clock stepped back would stretch it): the
    # canary by the job's bound, the kill by KILL_WAIT, the wait for the play by collect.
    run_bound = float(args.pop("_ckptio_run_seconds", None) or RUN_BOUND)
    with open(args_path + ".module", "w") as stream:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, stream)
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, on_signal)
    result = os.path.join(directory, "result.json")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(sys.argv[0]))
    with open(result + ".part", "w") as out, open(LOG, "a") as err:
        child = subprocess.Popen([sys.executable, "-m", MODULE, args_path + ".module"], stdout=out, stderr=err,
                                 stdin=subprocess.DEVNULL, env=env, cwd=directory, start_new_session=True)
        say("canary pid %%d" %% child.pid)
        deadline = time.monotonic() + run_bound
        while child.poll() is None and not stop and time.monotonic() < deadline:
            time.sleep(0.2)
    if not stop and child.poll() is None:
        say("the canary ran past the job's bound of %%d s: stopping it" %% run_bound)
        stop.append(signal.SIGALRM)
    if stop:
        say("signal %%d: stopping the canary" %% stop[0])
        for number, wait in ((signal.SIGTERM, KILL_WAIT), (signal.SIGKILL, KILL_WAIT)):
            try:
                os.killpg(child.pid, number)
            except OSError:
                pass
            deadline = time.monotonic() + wait
            while child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
        remove_workdirs(args, child.pid)
        shutil.rmtree(directory, ignore_errors=True)
        say("job directory %%s removed" %% directory)
        return 128 + stop[0]
    os.replace(result + ".part", result)
    say("canary exited %%d; result.json written" %% child.returncode)
    deadline = time.monotonic() + collect
    while os.path.isdir(directory) and time.monotonic() < deadline and not stop:
        time.sleep(0.5)
    if os.path.isdir(directory):
        shutil.rmtree(directory, ignore_errors=True)
        say("job directory %%s removed (not collected within %%d s)" %% (directory, collect))
    return 0


sys.exit(main())
''' % {"module": MODULE}


def collection_root():
    """The collection's root directory (…/ansible_collections/ckptio/nfs) of this file."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _python_files(top, arc_top):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(name for name in dirnames if name != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                full = os.path.join(dirpath, name)
                yield arc_top + "/" + os.path.relpath(full, top).replace(os.sep, "/"), full


def members(root, ansible_module_utils):
    """[(name in the zip, source path)]: the module, the collection's module_utils, ansible's module_utils."""
    found = [("ansible_collections/ckptio/nfs/plugins/modules/checkpoint_canary.py",
              os.path.join(root, "plugins", "modules", "checkpoint_canary.py"))]
    found.extend(_python_files(os.path.join(root, "plugins", "module_utils"), "ansible_collections/ckptio/nfs/plugins/module_utils"))
    found.extend(_python_files(ansible_module_utils, "ansible/module_utils"))
    return found


def packages(names):
    """Every package directory of the members that needs an __init__.py (zipimport finds no namespace packages)."""
    present = set(names)
    wanted = set()
    for name in names:
        parts = name.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            init = "/".join(parts[:depth]) + "/__init__.py"
            if init not in present:
                wanted.add(init)
    return sorted(wanted)


def build(dest, root=None, ansible_module_utils=None):
    """Write the runner zip at dest; {path, files}."""
    if ansible_module_utils is None:
        import ansible.module_utils  # the controller's ansible-core: what AnsiballZ would ship
        ansible_module_utils = os.path.dirname(ansible.module_utils.__file__)
    found = members(root or collection_root(), ansible_module_utils)
    temp = dest + ".part"
    with zipfile.ZipFile(temp, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("__main__.py", SUPERVISOR)
        for name in packages([name for name, _path in found]):
            archive.writestr(name, "")
        for name, path in found:
            archive.write(path, name)
    os.chmod(temp, 0o600)
    os.replace(temp, dest)
    return {"path": dest, "files": len(found)}


if __name__ == "__main__":
    sys.stdout.write(build(sys.argv[1])["path"] + "\n")
