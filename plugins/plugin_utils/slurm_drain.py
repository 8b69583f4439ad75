# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The client_tuning Slurm drain hook's decisions (roles/client_tuning/tasks/slurm_drain.yml, slurm_resume.yml).

Called by name through ckptio.nfs.internal; documented in the YAML file of each step's name. The
parsing and the rules are in module_utils/slurm/nodes.py: these only take the registered command
results apart.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.module_utils.slurm import nodes


def _result(value, step):
    if not isinstance(value, Mapping):
        raise AnsibleFilterError("ckptio.nfs.internal('%s'): expects a registered command result, got %s"
                                 % (step, type(value).__name__))
    return value


def slurm_node(result, node, our_reason):
    """The node's facts from a registered `scontrol --oneliner show node NODE` result."""
    result = _result(result, "slurm_node")
    found = nodes.find_node(result.get("stdout", ""), str(node))
    if found is not None:
        return nodes.node_view(found, our_reason)
    # scontrol prints "Node NAME not found" on stdout (rc 1, Slurm 22.05 in the lab). A command that timed out
    # (the task's timeout, with ignore_errors) has no rc, only failed and ansible-core's msg.
    said = (result.get("stderr") or result.get("stdout") or result.get("msg") or "").strip()
    if result.get("rc", 0) != 0 or result.get("failed"):
        return nodes.unknown_view(str(node), "scontrol show node %s: %s" % (node, said or "rc %s" % result.get("rc")))
    return nodes.unknown_view(str(node), "scontrol lists no node %s" % node)


def slurm_ready(view, squeue):
    """{ready, why, jobs}: whether the node may be unmounted, from its facts and a registered squeue result."""
    squeue = _result(squeue, "slurm_ready")
    if squeue.get("rc", 0) != 0:
        said = (squeue.get("stderr") or squeue.get("msg") or "").strip()
        return {"ready": False, "why": "its jobs could not be read: squeue: %s" % said, "jobs": []}
    jobs = nodes.parse_job_ids(squeue.get("stdout", ""))
    ready, why = nodes.ready_to_unmount(view, jobs)
    return {"ready": ready, "why": why, "jobs": jobs}


def slurm_poll(wait_seconds, poll_seconds, command_seconds=60):
    """{retries, delay, timeout} of an until loop that polls every POLL seconds for at most WAIT seconds, each
    Slurm command bounded by COMMAND seconds (the tasks' timeout).

    ansible-core runs an until task once and then up to `retries` times more, `delay` apart: the
    bound rounds up to whole polls, and at least one retry, one second apart, always happens. A
    timeout of 0 is no timeout to ansible-core: the command bound must be at least 1 s.
    """
    try:
        wait, poll, command = int(wait_seconds), int(poll_seconds), int(command_seconds)
    except (TypeError, ValueError):
        raise AnsibleFilterError("client_tuning_slurm_wait_seconds, client_tuning_slurm_poll_seconds and "
                                 "client_tuning_slurm_command_seconds must be whole seconds, got %r, %r and %r"
                                 % (wait_seconds, poll_seconds, command_seconds))
    if command < 1:
        raise AnsibleFilterError("client_tuning_slurm_command_seconds must be at least 1 (0 would be no bound), got %r"
                                 % (command_seconds,))
    delay = max(1, poll)
    return {"retries": max(1, -(-wait // delay)), "delay": delay, "timeout": command}


STEPS = {
    "slurm_node": slurm_node,
    "slurm_ready": slurm_ready,
    "slurm_poll": slurm_poll,
}
