# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The canary's supervisor on a Slurm node: the __main__ of the runner zip (module_utils/slurm/runner.py).

slurm/runner.py writes this file, as it is, as the zip's __main__.py beside checkpoint_canary and the
collection's and ansible-core's module_utils (the nodes do not have Ansible or the collection
installed); the unit tests import the same file. `python3 canary.pyz ARGS_JSON` on a node then:

1. runs the module in a child process in its own session (ansible-core's documented direct
   invocation: `python3 -m ...checkpoint_canary ARGS_JSON`), its JSON result into
   result.json.part, renamed to result.json when the child exits;
2. waits until the play has read the result and removed the job directory, at most the args'
   _ckptio_collect_seconds, then removes the directory itself;
3. on SIGTERM, SIGINT or SIGHUP (scancel, the job's time limit), or once the canary runs past the
   job's bound (_ckptio_run_seconds, then exit 128 + SIGALRM), stops the child's session
   (processes.terminate_group: SIGTERM, KILL_WAIT seconds, SIGKILL, KILL_WAIT seconds), then removes
   what a killed canary leaves: its work directories (<plan.WORKDIR_PREFIX><host>-<child pid>-<token>
   under each of its paths) and the job directory; exit 128 + the signal.

It writes nothing outside the job directory and the canary's own work directories. Every wait is
processes.wait_until's, bounded on the monotonic clock.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan
from ansible_collections.ckptio.nfs.plugins.module_utils.host import processes
from ansible_collections.ckptio.nfs.plugins.module_utils.slurm import job

MODULE = "ansible_collections.ckptio.nfs.plugins.modules.checkpoint_canary"
# SIGTERM, then SIGKILL to the canary's session, each followed by this long for the canary to exit.
KILL_WAIT = 3.0
# Without the job's bound in its arguments (args.json of an older play): a day, the longest any canary waits.
RUN_BOUND = 86400.0
# Without the play's bound on collecting the result (_ckptio_collect_seconds).
COLLECT_SECONDS = 300
RUN_POLL_SECONDS = 0.2
COLLECT_POLL_SECONDS = 0.5
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def workdir_pattern(pid):
    """The name of a work directory the canary with this pid makes (host/canary/cleanup.py: prefix, host, pid, 8 hex)."""
    return re.compile("^%s.+-%d-[0-9a-f]{8}$" % (re.escape(plan.WORKDIR_PREFIX), pid))


class Log:
    """The node's runner.log (job.LOG) in the job directory; each line also on stdout (the job's batch log)."""

    def __init__(self, path):
        self.path = path

    def say(self, text):
        line = "%s %s: %s\n" % (time.strftime("%H:%M:%S"), os.uname()[1], text)
        sys.stdout.write(line)
        sys.stdout.flush()
        try:
            with open(self.path, "a") as stream:
                stream.write(line)
        except OSError:
            pass


def catch_signals():
    """The stop signals received from now on, in order (a list the handler appends to)."""
    received = []

    def on_signal(number, _frame):
        received.append(number)

    for number in STOP_SIGNALS:
        signal.signal(number, on_signal)
    return received


def read_args(args_path):
    """(the module's arguments, collect seconds, run bound) of args.json; the module's own copy written beside it.

    The copy (ARGS_JSON.module) holds the arguments without the runner's two: the module would refuse them.
    """
    with open(args_path) as stream:
        args = json.load(stream)["ANSIBLE_MODULE_ARGS"]
    collect = float(args.pop("_ckptio_collect_seconds", COLLECT_SECONDS))
    run_bound = float(args.pop("_ckptio_run_seconds", None) or RUN_BOUND)
    with open(args_path + ".module", "w") as stream:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, stream)
    return args, collect, run_bound


def remove_workdirs(args, pid, log):
    """The canary's work directories a killed canary left (its own cleanup did not run)."""
    pattern = workdir_pattern(pid)
    parents = list(args.get("paths") or []) or [args.get("path")]
    parents.append(args.get("local_path"))
    for parent in parents:
        if not parent or not os.path.isdir(parent):
            continue
        for name in os.listdir(parent):
            full = os.path.join(parent, name)
            if pattern.match(name) and os.path.isdir(full) and not os.path.islink(full):
                shutil.rmtree(full, ignore_errors=True)
                log.say("removed %s (the canary was stopped)" % full)


def stop_canary(child, args, directory, log, number):
    """Stop the canary's session, remove what it left and the job directory; the exit status 128 + number."""
    log.say("signal %d: stopping the canary" % number)
    processes.terminate_group(child.pid, KILL_WAIT, lambda: child.poll() is not None)
    remove_workdirs(args, child.pid, log)
    shutil.rmtree(directory, ignore_errors=True)
    log.say("job directory %s removed" % directory)
    return 128 + number


def supervise(args_path, path_entry, module=MODULE):
    """Run `python -m module` on args_path's arguments (steps 1-3 above); the runner's exit status.

    path_entry: the child's PYTHONPATH (the zip itself on a node).
    """
    directory = os.path.dirname(args_path)
    log = Log(os.path.join(directory, job.LOG))
    args, collect, run_bound = read_args(args_path)
    stop = catch_signals()
    result = os.path.join(directory, job.RESULT)
    env = dict(os.environ, PYTHONPATH=path_entry)
    with open(result + ".part", "w") as out, open(log.path, "a") as err:
        child = subprocess.Popen([sys.executable, "-m", module, args_path + ".module"], stdout=out, stderr=err,
                                 stdin=subprocess.DEVNULL, env=env, cwd=directory, start_new_session=True)
        log.say("canary pid %d" % child.pid)
        processes.wait_until(lambda: child.poll() is not None or bool(stop), run_bound, RUN_POLL_SECONDS)
    if not stop and child.poll() is None:
        log.say("the canary ran past the job's bound of %d s: stopping it" % run_bound)
        stop.append(signal.SIGALRM)
    if stop:
        return stop_canary(child, args, directory, log, stop[0])
    os.replace(result + ".part", result)
    log.say("canary exited %d; %s written" % (child.returncode, job.RESULT))
    processes.wait_until(lambda: not os.path.isdir(directory) or bool(stop), collect, COLLECT_POLL_SECONDS)
    if os.path.isdir(directory):
        shutil.rmtree(directory, ignore_errors=True)
        log.say("job directory %s removed (not collected within %d s)" % (directory, collect))
    return 0


def main(argv=None):
    """`python3 canary.pyz ARGS_JSON`: argv[0] is the zip, the canary's PYTHONPATH."""
    argv = sys.argv if argv is None else argv
    return supervise(os.path.abspath(argv[1]), os.path.abspath(argv[0]))


if __name__ == "__main__":
    raise SystemExit(main())
