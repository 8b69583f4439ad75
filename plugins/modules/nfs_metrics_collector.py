#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nfs_metrics_collector
short_description: Install or remove the NFS checkpoint textfile collector for node_exporter
version_added: 0.6.0
description:
  - Installs, on an NFS client or server, a collector that writes this host's checkpoint figures for Prometheus every
    O(interval) seconds as C(ckptio_nfs.prom) in node_exporter's textfile directory; or removes it.
  - 'Per checkpoint mount, whatever nconnect is, at most 30 series: bytes written and read, WRITE/COMMIT/READ requests
    and their queue, RTT and execute seconds, retransmits, requests in flight against the slot table where the kernel
    shows them; on a server nfsd threads and its pools'' counters. Each series'' HELP text says what a bad value points at.'
  - 'What it installs, and nothing else: the program O(install_directory)/ckptio-nfs-metrics.pyz (a zip of the
    collection''s own parsers), C(ckptio-nfs-metrics.service) and C(ckptio-nfs-metrics.timer) in O(unit_directory);
    then C(systemctl daemon-reload) and C(systemctl enable --now ckptio-nfs-metrics.timer). O(state=absent) disables the
    timer and removes those files and C(ckptio_nfs.prom); it touches no other file.'
  - The textfile directory must exist (node_exporter's package makes it). On a host without node_exporter the module
    fails naming O(textfile_directory), before any change.
author:
  - ckptio.nfs contributors (@ckptio)
options:
  state:
    description:
      - V(present) installs (or updates) the collector and starts its timer; V(absent) stops and removes it.
    type: str
    choices: [present, absent]
    default: present
  textfile_directory:
    description:
      - node_exporter's C(--collector.textfile.directory). The default is the directory Debian's and Ubuntu's
        C(prometheus-node-exporter) package creates and passes.
    type: path
    default: /var/lib/prometheus/node-exporter
  mount_points:
    description:
      - The checkpoint mounts to export. Empty exports every NFS mount of the host.
    type: list
    elements: path
    default: []
  interval:
    description:
      - Seconds between two runs, from 5 to 3600. Use the Prometheus scrape interval or a little less.
    type: int
    default: 15
  install_directory:
    description:
      - Where the program is installed. Created (0755) when missing.
    type: path
    default: /usr/local/lib/ckptio-nfs
  unit_directory:
    description:
      - Where the service and timer units are written.
    type: path
    default: /etc/systemd/system
extends_documentation_fragment:
  - ckptio.nfs.attributes
attributes:
  check_mode:
    support: full
    details: Reports which files and units would change; writes nothing and runs no systemctl command that changes state.
  diff_mode:
    support: full
    details: The unit files' before and after text; the program is reported by its size and SHA-256.
notes:
  - Needs systemd on the host and Python 3 at the interpreter Ansible uses there (the unit runs the program with it).
  - Load C(prometheus/ckptio-nfs.rules.yml) into Prometheus for alerts that name the layer, and import
    C(prometheus/ckptio-nfs-dashboard.json) into Grafana.
seealso:
  - module: ckptio.nfs.nfs_client_stats
"""

EXAMPLES = r"""
- name: Export the checkpoint mount's figures to node_exporter every 15 s
  ckptio.nfs.nfs_metrics_collector:
    mount_points: [/mnt/ckpt]

- name: Remove the collector
  ckptio.nfs.nfs_metrics_collector:
    state: absent
"""

RETURN = r"""
changed_files:
  description: The files written or removed (in check mode, that would be).
  returned: always
  type: list
  elements: str
  sample: [/usr/local/lib/ckptio-nfs/ckptio-nfs-metrics.pyz, /etc/systemd/system/ckptio-nfs-metrics.timer]
commands:
  description: The systemctl commands run (in check mode, that would run), each as an argv list.
  returned: always
  type: list
  elements: list
  sample: [[systemctl, daemon-reload], [systemctl, enable, --now, ckptio-nfs-metrics.timer]]
textfile:
  description: The file the collector writes.
  returned: always
  type: str
  sample: /var/lib/prometheus/node-exporter/ckptio_nfs.prom
message:
  description: One line for a person.
  returned: always
  type: str
  sample: "collector installed: ckptio_nfs.prom every 15 s in /var/lib/prometheus/node-exporter"
"""

import hashlib
import os
import sys

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read, file_write
from ansible_collections.ckptio.nfs.plugins.module_utils.host import metrics_collector as collector
# Not called here: imported so that AnsiballZ packs it - install.program_bytes() reads its source as the zip's
# __main__.py (AnsiballZ follows imports, not importlib.import_module names).
from ansible_collections.ckptio.nfs.plugins.module_utils.host import metrics_zip_main  # noqa: F401 pylint: disable=unused-import
from ansible_collections.ckptio.nfs.plugins.module_utils.telemetry import install

INTERVAL_RANGE = (5, 3600)
TIMER = install.UNIT + ".timer"
SERVICE = install.UNIT + ".service"


def validate(params):
    """The first option that is wrong, as a message naming it, or None."""
    low, high = INTERVAL_RANGE
    if not low <= params["interval"] <= high:
        return "interval: %d is outside %d..%d seconds" % (params["interval"], low, high)
    for name in ("textfile_directory", "install_directory", "unit_directory"):
        if not os.path.isabs(params[name]):
            return "%s: %s is not an absolute path" % (name, params[name])
    for point in params["mount_points"]:
        if not os.path.isabs(point):
            return "mount_points: %s is not an absolute path" % point
    if params["state"] == "present" and not os.path.isdir(params["textfile_directory"]):
        return ("textfile_directory: %s does not exist: install node_exporter (Debian: prometheus-node-exporter) or set "
                "textfile_directory to its --collector.textfile.directory" % params["textfile_directory"])
    return None


def wanted_files(params):
    """{path: (bytes, mode)} of what state=present installs."""
    program = os.path.join(params["install_directory"], install.PROGRAM)
    service = install.service_text(sys.executable or "/usr/bin/python3", program, params["textfile_directory"],
                                   params["mount_points"])
    return {
        program: (install.program_bytes(), 0o644),
        os.path.join(params["unit_directory"], SERVICE): (service.encode("utf-8"), 0o644),
        os.path.join(params["unit_directory"], TIMER): (install.timer_text(params["interval"]).encode("utf-8"), 0o644),
    }


class Unreadable(Exception):
    """A file at one of our paths that is not ours to read (a link, a FIFO, too large): named, never followed."""


def _current(path):
    try:
        return file_read.read(path, binary=True)
    except OSError as exc:
        raise Unreadable("%s: %s" % (path, file_read.describe_error(exc)))


def plan(params, systemctl_state):
    """(files to write {path: (bytes, mode)}, files to remove [path], commands [argv], {path: bytes or None} of the
    files to write as they are now) - nothing done.

    Each installed file is read once, here, and the program built once (install.program_bytes: the same bytes for
    the same sources), so a second run compares content with content and changes nothing; the diff reuses the reads.
    """
    textfile = os.path.join(params["textfile_directory"], collector.TEXTFILE_NAME)
    if params["state"] == "absent":
        ours = [os.path.join(params["install_directory"], install.PROGRAM),
                os.path.join(params["unit_directory"], SERVICE), os.path.join(params["unit_directory"], TIMER), textfile]
        remove = [path for path in ours if os.path.lexists(path)]
        commands = []
        if systemctl_state["enabled"] or systemctl_state["active"]:
            commands.append(["systemctl", "disable", "--now", TIMER])
        if any(path.startswith(params["unit_directory"]) for path in remove):
            commands.append(["systemctl", "daemon-reload"])
        return {}, remove, commands, {}
    wanted = wanted_files(params)
    now = dict((path, _current(path)) for path in sorted(wanted))
    write = dict((path, content) for path, content in wanted.items() if now[path] != content[0])
    commands = []
    if any(path.startswith(params["unit_directory"]) for path in write):
        commands.append(["systemctl", "daemon-reload"])
    if write or not (systemctl_state["enabled"] and systemctl_state["active"]):
        # Restarting the timer after a unit change makes the new interval count from now.
        commands.append(["systemctl", "enable", "--now", TIMER])
        if write and systemctl_state["active"]:
            commands.append(["systemctl", "restart", TIMER])
    return write, [], commands, dict((path, now[path]) for path in write)


def systemctl_state(module):
    """{"enabled", "active"} of the timer, read with systemctl (read-only queries, also in check mode)."""
    systemctl = module.get_bin_path("systemctl")
    if systemctl is None:
        module.fail_json(msg="systemctl not found: the collector runs from a systemd timer; this host has no systemd")
    enabled = module.run_command([systemctl, "is-enabled", TIMER])[0] == 0
    active = module.run_command([systemctl, "is-active", TIMER])[0] == 0
    return {"enabled": enabled, "active": active, "systemctl": systemctl}


def _digest(content):
    return "absent" if content is None else "%d bytes, sha256 %s" % (len(content), hashlib.sha256(content).hexdigest())


def diff_of(write, remove, before_bytes):
    """The diff of a plan: unit files as text, the program by size and SHA-256; before_bytes is plan()'s read."""
    before, after = [], []
    for path, (content, _mode) in sorted(write.items()):
        old = before_bytes.get(path)
        if path.endswith(".pyz"):
            after.append("%s: %s\n" % (path, _digest(content)))
            before.append("%s: %s\n" % (path, _digest(old)))
        else:
            after.append("# %s\n%s" % (path, content.decode("utf-8")))
            before.append("# %s\n%s" % (path, "" if old is None else old.decode("utf-8", "replace")))
    for path in remove:
        before.append("%s: present\n" % path)
        after.append("%s: absent\n" % path)
    return {"before": "".join(before), "after": "".join(after), "before_header": "collector files",
            "after_header": "collector files"}


def apply(module, write, remove, commands, systemctl):
    for path, (content, mode) in sorted(write.items()):
        file_write.write_file(module, path, content, mode=mode, make_parent=True)
    for path in remove:
        file_write.remove_file(module, path)
    for argv in commands:
        rc, _out, err = module.run_command([systemctl] + argv[1:])
        if rc != 0:
            module.fail_json(msg="%s failed (rc %d): %s" % (" ".join(argv), rc, err.strip()), rc=rc)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["present", "absent"], default="present"),
            textfile_directory=dict(type="path", default="/var/lib/prometheus/node-exporter"),
            mount_points=dict(type="list", elements="path", default=[]),
            interval=dict(type="int", default=15),
            install_directory=dict(type="path", default="/usr/local/lib/ckptio-nfs"),
            unit_directory=dict(type="path", default="/etc/systemd/system"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problem = validate(params)
    if problem:
        module.fail_json(msg=problem)
    state = systemctl_state(module)
    try:
        write, remove, commands, before = plan(params, state)
    except Unreadable as exc:
        module.fail_json(msg="refused, nothing changed: %s" % exc)
    # From plan()'s reads, taken before the gate: after it the files hold the new text.
    diff = diff_of(write, remove, before) if module._diff else None  # pylint: disable=protected-access
    changed = bool(write or remove or commands)
    if changed and not module.check_mode:
        try:
            apply(module, write, remove, commands, state["systemctl"])
        except OSError as exc:
            module.fail_json(msg="cannot install the collector: %s" % file_read.describe_error(exc))
    textfile = os.path.join(params["textfile_directory"], collector.TEXTFILE_NAME)
    if params["state"] == "absent":
        message = "collector removed" if changed else "collector absent already"
    else:
        message = "collector %s: %s every %d s in %s" % (
            "installed" if changed else "in place", collector.TEXTFILE_NAME, params["interval"], params["textfile_directory"])
    result = dict(changed=changed, changed_files=sorted(write) + sorted(remove), commands=commands, textfile=textfile,
                  message=message)
    if diff is not None:
        result["diff"] = diff
    module.exit_json(**result)


if __name__ == "__main__":
    main()
