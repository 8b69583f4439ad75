# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action for ckptio.nfs.bundle_part: write one part of a capture bundle on the controller, in one call.

What goes in each file is decided in Python (plugin_utils/bundle_steps.part_files over
module_utils/bundle/bundle_part.py, and a client's figures.json from diagnosis/host_figures.py);
every file is written by the one atomic writer (module_utils/host/file_write.py), never through a
link, inside the bundle directory only. Runs on the controller: no connection to the host, no
module sent. Check mode writes nothing and says what would change.
"""
from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.ckptio.nfs.plugins.module_utils.host.file_write import write_outputs
from ansible_collections.ckptio.nfs.plugins.plugin_utils import bundle_steps

ARGUMENT_SPEC = {
    "bundle": {"type": "path", "required": True},
    "part": {"type": "str", "required": True, "choices": ["clients", "servers", "context"]},
    "host": {"type": "str"},
    "before": {"type": "raw"},
    "after": {"type": "raw"},
    "dstate_text": {"type": "str"},
    "records": {"type": "dict"},
    "samples": {"type": "dict"},
    "context": {"type": "dict"},
    "rpc_samples": {"type": "dict"},
}


class _Writer:
    """What the atomic writer asks of its caller (an AnsibleModule on a host): check mode, the move into
    place (a rename in the same directory, as AnsibleModule.atomic_move does on one filesystem), and a
    failure, raised here as the action's."""

    def __init__(self, check_mode):
        self.check_mode = check_mode

    @staticmethod
    def atomic_move(source, destination):
        os.rename(source, destination)

    @staticmethod
    def fail_json(msg, **_kwargs):
        raise AnsibleActionFail(msg)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        try:
            files = bundle_steps.part_files(args["part"], args["host"], args["before"], args["after"], args["dstate_text"],
                                            args["records"], args["samples"], args["context"],
                                            args["rpc_samples"])
        except ValueError as exc:
            raise AnsibleActionFail("bundle_part: %s" % exc)
        bundle = args["bundle"]
        if not os.path.isdir(bundle):
            raise AnsibleActionFail("bundle_part: the bundle directory %s does not exist" % bundle)
        outputs = [(os.path.join(bundle, item["name"]), item["content"]) for item in files]
        rows = write_outputs(_Writer(self._task.check_mode), outputs, inside=bundle, make_parent=True)
        result.update(changed=any(row["changed"] for row in rows), files=[row["path"] for row in rows],
                      written=[row["path"] for row in rows if row["changed"]])
        if self._task.diff:
            result["diff"] = [{"before_header": row["path"], "after_header": row["path"], "before": row["before"] or "",
                               "after": content} for row, (_path, content) in zip(rows, outputs) if row["changed"]]
        return result
