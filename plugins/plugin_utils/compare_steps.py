# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The architecture comparison's steps (ckptio.nfs.compare_architectures, through ckptio.nfs.internal): which options run, and
where each left its bundle. The logic is module_utils/compare/plan.py; documentation and spec in
compare_options.yml and compare_bundles.yml next to this one.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.module_utils.compare import plan


def compare_options(options, mount, paths=None, local_path="", layout="shared_file"):
    try:
        return plan.compare_options(options, mount, paths, local_path, layout)
    except plan.PlanError as exc:
        raise AnsibleFilterError(str(exc))


def compare_bundles(options, context_files, reports_dir, since=""):
    return plan.option_bundles(options, list(context_files or []), reports_dir, since)


# The steps ckptio.nfs.internal calls, by name.
STEPS = {
    "compare_options": compare_options,
    "compare_bundles": compare_bundles,
}
