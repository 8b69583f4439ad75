"""client_tuning is safe by default (issue 23, item 6): the role never unmounts unless told to, and
the Slurm drain hook it ships drains the node, waits (bounded) until Slurm shows it drained with no
job before the unmount, skips it (resumed, nothing unmounted) when the bound passes, and resumes
the node after - only a drain with its own reason (issue 29): an operator's drain stays.

The hook files are walked task by task (RoleWalk from test_safety_bad_input.py, taught
ansible.builtin.command, until/retries and block/rescue here) against a fake Slurm that answers
scontrol show node (verbatim lab output, tests/fixtures/slurm/), squeue and scontrol update; every argv lands in world.commands next to the modules' own
commands (umount, mount), so the order the host would see is asserted as it is.
"""
from __future__ import annotations

import os

import pytest

from ansible_collections.ckptio.nfs.tests.unit.test_safety_bad_input import (
    Rejected, RoleWalk, build_world, load_yaml, role_base, role_dir, role_spec)

NODE = "gpu01"
CONTROLLER = "login1"
OURS = "ckptio.nfs client_tuning remounts the checkpoint mounts"
JOBS = "RUNNING,COMPLETING,CONFIGURING,SUSPENDED,STOPPED"
SHOW = ["scontrol", "--oneliner", "show", "node", NODE]
SQUEUE = ["squeue", "--noheader", "--nodelist", NODE, "--states", JOBS, "--format", "%i"]
DRAIN = ["scontrol", "update", "nodename=" + NODE, "state=drain", "reason=" + OURS]
RESUME = ["scontrol", "update", "nodename=" + NODE, "state=resume"]
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "slurm")


def node_line(state, reason=""):
    """A real scontrol line from the lab (nfs2), renamed to NODE, in STATE with REASON."""
    with open(os.path.join(FIXTURES, "show-node-idle.txt")) as handle:
        line = handle.read().strip().replace("nfs2", NODE)
    line = line.replace("State=IDLE ", "State=%s " % state)
    if reason:
        line += " Reason=%s [root@2026-12-02T14:00:00]" % reason
    return line + "\n"


IDLE = node_line("IDLE")
MIXED = node_line("MIXED")
DRAINING = node_line("MIXED+DRAIN", OURS)
DRAINED = node_line("IDLE+DRAIN", OURS)
OTHER_DRAINING = node_line("MIXED+DRAIN", "hw check")
OTHER_DRAINED = node_line("IDLE+DRAIN", "hw check")


class TaskFailed(Exception):
    """A task failed the way Ansible fails it (here: an until loop out of retries, or its timeout)."""


# A Slurm command that never answers (slurmctld hung): only a task's `timeout:` ends it.
HANG = "hang"


class FakeSlurm:
    """Answers in order per command (show, squeue, update; the last answer repeats)."""

    def __init__(self, show=(MIXED,), squeue=("",), update=("",)):
        self.answers = {"show": list(show), "squeue": list(squeue), "update": list(update)}

    def __call__(self, argv):
        kind = "squeue" if argv[0] == "squeue" else ("update" if argv[1] == "update" else "show")
        answers = self.answers[kind]
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, tuple) or answer == HANG:  # (rc, stdout, stderr), or no answer at all
            return answer
        return 0, answer, ""


class HookWalk(RoleWalk):
    """RoleWalk that also runs ansible.builtin.command (on the fake Slurm), until/retries,
    block/rescue and include_tasks, as Ansible does."""

    def __init__(self, world, params, slurm, check_mode=False):
        super().__init__(world, "client_tuning", "main", params, check_mode=check_mode, write_files=not check_mode)
        self.slurm = slurm
        self.debug = []
        self.polls = []
        self.delegated = []
        self.timeouts = []

    def run_file(self, name):
        """Walk tasks/<name> with the role's defaults and the params, as an included file runs."""
        self.entry = os.path.splitext(name)[0]
        self.run()

    def run(self):
        if self.entry in ("slurm_drain", "slurm_resume"):
            # Not entry points: no argument spec of their own; the role's defaults apply.
            base = role_dir(self.role)
            self.variables.update(self.trusted(load_yaml(os.path.join(base, "defaults", "main.yml"))))
            self.variables.update(self.params)
            self.variables.update({"role_path": base, "ansible_search_path": [base], "ansible_check_mode": self.check_mode,
                                   "inventory_hostname": NODE})
            from ansible.parsing.dataloader import DataLoader
            self.loader = DataLoader()
            self.loader.set_basedir(base)
            self.walk(load_yaml(os.path.join(base, "tasks", self.entry + ".yml")))
            return
        super().run()
        self.variables["inventory_hostname"] = NODE

    def walk(self, tasks):
        for task in tasks:
            if "block" in task and "rescue" in task:
                if not self.applies(task):
                    continue
                try:
                    self.walk(task["block"])
                except (TaskFailed, Rejected) as exc:
                    # As Ansible does: the rescue sees the failed task's result as ansible_failed_result.
                    self.variables["ansible_failed_result"] = {"failed": True, "msg": getattr(exc, "msg", None) or str(exc)}
                    self.walk(task["rescue"])
                continue
            super().walk([task])

    def run_task(self, task, action, args, extra):
        if action == "ansible.builtin.command":
            return self.command(task, args, extra)
        if action == "ansible.builtin.include_tasks":
            return self.include(task, args, extra)
        if action == "ansible.builtin.debug":
            self.debug.append(self.render(args.get("msg", ""), extra))
            return {}
        return super().run_task(task, action, args, extra)

    def include(self, task, args, extra):
        path = self.render(args["file"] if isinstance(args, dict) else args, extra)
        if not os.path.isabs(path):
            path = os.path.join(role_dir(self.role), "tasks", path)
        saved = {key: self.variables.get(key) for key in extra}
        self.variables.update(extra)
        self.walk(load_yaml(path))
        self.variables.update(saved)
        return {}

    def run_command(self, task, argv):
        argv = [str(arg) for arg in argv]
        self.world.commands.append(argv)
        if "delegate_to" in task:
            self.delegated.append(self.render(task["delegate_to"]))
        answer = self.slurm(argv)
        if answer == HANG:
            return self.timed_out(task, argv)
        rc, stdout, stderr = answer
        failed = rc != 0 and task.get("failed_when") is not False
        return {"rc": rc, "stdout": stdout, "stdout_lines": stdout.splitlines(), "stderr": stderr, "failed": failed,
                "changed": task.get("changed_when") is True}

    def timed_out(self, task, argv):
        """What ansible-core does with a command that does not answer: without `timeout:` it waits for ever
        (the play hangs, the node drained); with it the attempt fails (no retry; failed_when is not asked),
        a failed result when ignore_errors is set."""
        if not task.get("timeout"):
            raise AssertionError("task %r would hang for ever on %s: no timeout" % (task.get("name"), " ".join(argv)))
        seconds = int(self.render(task["timeout"]))
        assert seconds >= 1, "task %r: timeout %r is no bound" % (task.get("name"), task["timeout"])
        self.timeouts.append(seconds)
        msg = "The command action failed to execute in the expected time frame (%d) and was terminated" % seconds
        if task.get("ignore_errors"):
            return {"failed": True, "msg": msg, "timedout": {"period": seconds}}
        raise TaskFailed(msg)

    def command(self, task, args, extra):
        # Ansible skips a command in check mode unless the task says check_mode: false.
        if self.check_mode and task.get("check_mode") is not False:
            return {"skipped": True}
        argv = self.render(args["argv"], extra)
        if "until" not in task:
            result = self.run_command(task, argv)
            if result["failed"] and not task.get("ignore_errors"):
                raise TaskFailed(task.get("name"))
            return result
        retries = int(self.render(task["retries"], extra))
        delay = int(self.render(task["delay"], extra))
        self.polls.append({"retries": retries, "delay": delay})
        # ansible-core runs the task once and then up to `retries` times more, `delay` apart.
        for _attempt in range(retries + 1):
            result = self.run_command(task, argv)
            if result.get("timedout"):
                break
            self.variables[task["register"]] = result
            if self.condition(task["until"], extra):
                return result
        self.variables[task["register"]] = dict(result, failed=True, attempts=retries + 1)
        raise TaskFailed(task.get("name"))


@pytest.fixture
def world(fake_root, monkeypatch):
    return build_world(fake_root, monkeypatch)


def slurm_commands(world):
    return [argv for argv in world.commands if argv[0] in ("sinfo", "squeue", "scontrol")]


# ------------------------------------------------------------------ the role's default ----------
def test_the_role_never_unmounts_by_default():
    defaults = load_yaml(os.path.join(role_dir("client_tuning"), "defaults", "main.yml"))
    assert defaults["client_tuning_apply_policy"] == "never"
    spec = role_spec("client_tuning", "main")["client_tuning_apply_policy"]
    assert spec["default"] == "never"
    assert set(spec["choices"]) == {"never", "when_idle"}, "when_idle stays available"
    # Its risk is documented where users read the option.
    assert "middle of a job" in " ".join(spec["description"])
    for name in ("client_tuning_slurm_node", "client_tuning_slurm_reason", "client_tuning_slurm_wait_seconds",
                 "client_tuning_slurm_poll_seconds", "client_tuning_slurm_controller"):
        assert name in defaults and name in role_spec("client_tuning", "main"), name


def test_a_role_run_with_its_defaults_leaves_a_drifted_live_mount_alone_and_reports_it_pending(world):
    params = role_base(world, "client_tuning")
    # nconnect 8 differs from the live mount's: only an unmount would apply it.
    params.update(client_tuning_drain_tasks="tasks/slurm_drain.yml", client_tuning_undrain_tasks="tasks/slurm_resume.yml",
                  client_tuning_mount_options={"nconnect": 8})
    walk = HookWalk(world, params, FakeSlurm())
    walk.run()
    # The hook files are found in the role (first_found, before any change) ...
    assert walk.variables["__client_tuning_hook_files"]["drain"].endswith("roles/client_tuning/tasks/slurm_drain.yml")
    # ... but with the default policy nothing is unmounted, so no drain runs.
    assert slurm_commands(world) == []
    assert "umount" not in [argv[0] for argv in world.commands]
    report = walk.variables["client_tuning_report"]
    assert any("apply_policy is never" in line for line in report["pending"]), report["pending"]


# ------------------------------------------------------------------ tasks/slurm_drain.yml -------
def hook_params(**overrides):
    params = {"client_tuning_slurm_poll_seconds": 30, "client_tuning_slurm_wait_seconds": 100,
              "client_tuning_slurm_controller": CONTROLLER}
    params.update(overrides)
    return params


def test_drain_waits_until_slurm_shows_the_node_drained_then_resume_gives_it_back(world):
    slurm = FakeSlurm(show=(MIXED, DRAINING, DRAINING, DRAINED, DRAINED), squeue=("",))
    walk = HookWalk(world, hook_params(), slurm)
    walk.run_file("slurm_drain.yml")
    # 100 s at 30 s a poll: the first read and up to 4 more, 30 s apart.
    assert walk.polls == [{"retries": 4, "delay": 30}]
    assert slurm_commands(world) == [SHOW, DRAIN, SHOW, SHOW, SHOW, SQUEUE]
    walk.run_file("slurm_resume.yml")
    assert slurm_commands(world)[-2:] == [SHOW, RESUME]
    # Every Slurm command ran on the controller, none on the node.
    assert set(walk.delegated) == {CONTROLLER}


def test_a_node_that_does_not_drain_in_time_is_resumed_skipped_and_nothing_unmounted(world):
    slurm = FakeSlurm(show=(MIXED, DRAINING), squeue=("4711\n",))
    walk = HookWalk(world, hook_params(), slurm)
    with pytest.raises(Rejected) as failed:
        walk.run_file("slurm_drain.yml")
    assert slurm_commands(world) == [SHOW, DRAIN] + [SHOW] * 5 + [SHOW, RESUME]
    message = failed.value.msg
    assert message.startswith("Slurm node gpu01 skipped, nothing unmounted: did not drain (MIXED+DRAIN) within 100 s "
                              "(client_tuning_slurm_wait_seconds)."), message
    assert message.endswith("It was given back to Slurm (resumed)."), message


def skipped(world, slurm):
    """The message of a drain file that skipped the node."""
    walk = HookWalk(world, hook_params(), slurm)
    with pytest.raises(Rejected) as failed:
        walk.run_file("slurm_drain.yml")
    return failed.value.msg


def test_a_job_squeue_still_lists_stops_the_unmount_and_is_named(world):
    message = skipped(world, FakeSlurm(show=(MIXED, DRAINED), squeue=("4711\n",)))
    assert "skipped, nothing unmounted: still runs job(s) 4711 (IDLE+DRAIN)" in message
    assert slurm_commands(world)[-1] == RESUME


def test_an_unreadable_squeue_is_named_and_the_bound_rounds_up(world):
    slurm = FakeSlurm(show=(MIXED, DRAINED), squeue=((1, "", "slurm_load_jobs error: Unable to contact slurm controller"),))
    walk = HookWalk(world, hook_params(client_tuning_slurm_wait_seconds=61), slurm)
    with pytest.raises(Rejected) as failed:
        walk.run_file("slurm_drain.yml")
    assert walk.polls == [{"retries": 3, "delay": 30}]
    assert "its jobs could not be read: squeue: slurm_load_jobs error: Unable to contact slurm controller" in failed.value.msg


def test_a_node_an_operator_drained_is_not_drained_again_nor_resumed(world):
    slurm = FakeSlurm(show=(OTHER_DRAINING, OTHER_DRAINED), squeue=("",))
    walk = HookWalk(world, hook_params(), slurm)
    walk.run_file("slurm_drain.yml")
    walk.run_file("slurm_resume.yml")
    assert slurm_commands(world) == [SHOW, SHOW, SQUEUE]
    assert walk.debug[-1].startswith("Slurm node gpu01 stays as it was: its drain reason (hw check) is not ours")


def test_a_drain_another_reason_replaced_while_the_run_waited_is_left_alone(world):
    slurm = FakeSlurm(show=(MIXED, DRAINED, OTHER_DRAINED), squeue=("",))
    walk = HookWalk(world, hook_params(), slurm)
    walk.run_file("slurm_drain.yml")
    walk.run_file("slurm_resume.yml")
    assert RESUME not in slurm_commands(world)
    assert walk.debug[-1].startswith("Slurm node gpu01 stays IDLE+DRAIN: its drain reason (hw check) is not ours")


def test_our_own_drain_left_by_an_interrupted_run_is_ours_to_resume(world):
    slurm = FakeSlurm(show=(DRAINED,), squeue=("",))
    walk = HookWalk(world, hook_params(), slurm)
    walk.run_file("slurm_drain.yml")
    walk.run_file("slurm_resume.yml")
    assert slurm_commands(world) == [SHOW, SHOW, SQUEUE, SHOW, RESUME]


def test_drain_refuses_to_go_on_when_the_node_was_resumed_while_it_waited(world):
    message = skipped(world, FakeSlurm(show=(MIXED, IDLE), squeue=("",)))
    # The wait ends at once (nothing to wait for), nothing is unmounted, and nobody's node is resumed.
    assert "skipped, nothing unmounted: is no longer drained (IDLE): a job may start on it" in message
    assert RESUME not in slurm_commands(world)


def test_drain_refuses_a_node_slurm_does_not_know_before_draining(world):
    unknown = (1, "", "Node gpu99 not found\n")
    walk = HookWalk(world, hook_params(client_tuning_slurm_node="gpu99"), FakeSlurm(show=(unknown,)))
    with pytest.raises(Rejected) as failed:
        walk.run_file("slurm_drain.yml")
    assert failed.value.msg.startswith("client_tuning_slurm_node: scontrol show node gpu99: Node gpu99 not found;")
    assert "nothing was drained or unmounted" in failed.value.msg
    assert len(world.commands) == 1


# ------------------------------------------------------------------ a Slurm that does not answer ------
def test_a_wait_that_hangs_is_bounded_and_the_node_given_back(world):
    # The third read hangs (slurmctld stuck): that attempt times out, the rescue reads the node (drained, ours)
    # and gives it back; nothing is unmounted.
    slurm = FakeSlurm(show=(MIXED, DRAINING, HANG, DRAINING), squeue=("",))
    walk = HookWalk(world, hook_params(client_tuning_slurm_command_seconds=20), slurm)
    with pytest.raises(Rejected) as failed:
        walk.run_file("slurm_drain.yml")
    assert slurm_commands(world) == [SHOW, DRAIN, SHOW, SHOW, SHOW, RESUME] and walk.timeouts == [20]
    assert failed.value.msg.startswith("Slurm node gpu01 skipped, nothing unmounted: a Slurm command did not answer within 20 s "
                                       "(client_tuning_slurm_command_seconds) (MIXED+DRAIN)"), failed.value.msg
    assert failed.value.msg.endswith("It was given back to Slurm (resumed).")


def test_a_drain_command_that_hangs_is_read_back_and_given_back(world):
    # `scontrol update state=drain` does not answer: it may have drained the node, so the rescue reads it.
    slurm = FakeSlurm(show=(MIXED, DRAINED), update=(HANG, ""))
    walk = HookWalk(world, hook_params(), slurm)
    with pytest.raises(Rejected) as failed:
        walk.run_file("slurm_drain.yml")
    assert slurm_commands(world) == [SHOW, DRAIN, SHOW, RESUME]
    assert failed.value.msg.endswith("It was given back to Slurm (resumed).")


def test_a_slurm_that_stops_answering_names_the_node_still_drained_by_us(world):
    slurm = FakeSlurm(show=(MIXED, DRAINING, HANG), squeue=("",))
    walk = HookWalk(world, hook_params(), slurm)
    with pytest.raises(Rejected) as failed:
        walk.run_file("slurm_drain.yml")
    # Neither the wait's read nor the rescue's read answers: nothing resumed blindly, the node named.
    assert slurm_commands(world) == [SHOW, DRAIN, SHOW, SHOW, SHOW] and walk.timeouts == [60, 60]
    message = failed.value.msg
    assert "(state unknown)" in message and ("It may still be drained by this run (reason: %s): scontrol show node gpu01: "
                                             "The command action failed to execute in the expected time frame (60)" % OURS) in message
    assert message.endswith("give it back with scontrol update nodename=gpu01 state=resume"), message


def test_a_resume_that_hangs_names_the_node_still_drained_by_us(world):
    slurm = FakeSlurm(show=(MIXED, DRAINED, DRAINED), squeue=("",), update=("", HANG))
    walk = HookWalk(world, hook_params(), slurm)
    walk.run_file("slurm_drain.yml")
    with pytest.raises(Rejected) as failed:
        walk.run_file("slurm_resume.yml")
    assert slurm_commands(world)[-2:] == [SHOW, RESUME]
    assert failed.value.msg.startswith("Slurm node gpu01 may still be drained by this run (reason: %s): it could not be given "
                                       "back: The command action failed to execute in the expected time frame (60)" % OURS)
    assert failed.value.msg.endswith("give it back with scontrol update nodename=gpu01 state=resume")


def test_a_resume_whose_read_hangs_names_the_node_still_drained_by_us(world):
    slurm = FakeSlurm(show=(MIXED, DRAINED, HANG), squeue=("",))
    walk = HookWalk(world, hook_params(), slurm)
    walk.run_file("slurm_drain.yml")
    with pytest.raises(Rejected) as failed:
        walk.run_file("slurm_resume.yml")
    assert RESUME not in slurm_commands(world) and "may still be drained by this run" in failed.value.msg


def test_drain_in_check_mode_only_reads_and_says_what_it_would_do(world):
    slurm = FakeSlurm(show=(MIXED,), squeue=("4711\n",))
    walk = HookWalk(world, hook_params(), slurm, check_mode=True)
    walk.run_file("slurm_drain.yml")
    walk.run_file("slurm_resume.yml")
    assert slurm_commands(world) == [SHOW, SHOW]
    assert walk.debug[0] == "would drain Slurm node gpu01 (now MIXED) and wait up to 100 s until no job runs on it"


# ------------------------------------------------------------------ the hook inside the role ----
def test_with_when_idle_the_role_drains_and_waits_before_the_unmount(world):
    """The live mount's options differ from the profile's, so when_idle would unmount it: the
    drain file runs first and its wait ends before the module's first command."""
    params = role_base(world, "client_tuning")
    params.update(client_tuning_apply_policy="when_idle", client_tuning_mount_options={"nconnect": 8},
                  client_tuning_drain_tasks="tasks/slurm_drain.yml",
                  client_tuning_undrain_tasks="tasks/slurm_resume.yml", client_tuning_slurm_wait_seconds=100,
                  client_tuning_slurm_node=NODE, client_tuning_slurm_controller=CONTROLLER)
    slurm = FakeSlurm(show=(MIXED, DRAINING, DRAINED), squeue=("",))
    walk = HookWalk(world, params, slurm)
    walk.run()
    # The fake host refuses umount (commands are not run in these tests): the change is pending,
    # and the node this run drained is given back.
    order = [argv for argv in world.commands if argv[0] != "/usr/bin/lsattr"]
    assert order[:6] == [SHOW, DRAIN, SHOW, SHOW, SQUEUE, order[5]]
    assert order[5][0] == "umount", order
    assert order[-2:] == [SHOW, RESUME]


# ------------------------------------------------------------------ a held job ------------------
def when_idle_params(world, **overrides):
    params = role_base(world, "client_tuning")
    params.update(client_tuning_apply_policy="when_idle", client_tuning_mount_options={"nconnect": 8},
                  client_tuning_drain_tasks="tasks/slurm_drain.yml",
                  client_tuning_undrain_tasks="tasks/slurm_resume.yml", client_tuning_slurm_wait_seconds=100,
                  client_tuning_slurm_node=NODE, client_tuning_slurm_controller=CONTROLLER)
    params.update(overrides)
    return params


def live_options(world):
    with open(world.path("proc/self/mountinfo")) as handle:
        return [line.split(" - ", 1)[1] for line in handle if " nfs4 " in line]


def test_no_unmount_while_slurm_shows_the_held_job_the_options_stay_pending_until_it_ends(world):
    """A job held on the node for three polls (MIXED+DRAIN: Slurm counts it): every command before
    the unmount is a Slurm read that still showed it; the unmount comes only after Slurm showed the
    node drained with no job and squeue listed none."""
    before = live_options(world)
    held = (MIXED, DRAINING, DRAINING, DRAINING, DRAINED)
    walk = HookWalk(world, when_idle_params(world), FakeSlurm(show=held, squeue=("",)))
    walk.run()
    order = [argv for argv in world.commands if argv[0] != "/usr/bin/lsattr"]
    first_unmount = next(index for index, argv in enumerate(order) if argv[0] in ("umount", "mount"))
    assert order[:first_unmount] == [SHOW, DRAIN, SHOW, SHOW, SHOW, SHOW, SQUEUE], order
    assert order[first_unmount][0] == "umount"
    # The fake host refuses umount: the live options are the old ones, and the report says pending.
    assert live_options(world) == before
    assert walk.variables["client_tuning_report"]["pending"], walk.variables["client_tuning_report"]


def test_a_job_held_past_the_bound_leaves_the_mount_alone_with_its_options_pending(world):
    before = live_options(world)
    walk = HookWalk(world, when_idle_params(world), FakeSlurm(show=(MIXED, DRAINING), squeue=("4711\n",)))
    with pytest.raises(Rejected) as failed:
        walk.run()
    assert "skipped, nothing unmounted: did not drain (MIXED+DRAIN) within 100 s" in failed.value.msg
    assert not [argv for argv in world.commands if argv[0] in ("umount", "mount")], world.commands
    assert live_options(world) == before
    assert slurm_commands(world)[-1] == RESUME
