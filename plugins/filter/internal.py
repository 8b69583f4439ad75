# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one filter behind which the roles' and playbooks' own controller-side steps sit.

A filter plugin of a collection is public: `ansible-doc -t filter -l` lists it. A role inside a
collection cannot carry its own filter_plugins (ansible-core adds a role's plugin directories
only for roles outside a collection, playbook/role/__init__.py), so the twelve steps of
client_tuning, server_tuning and the rolling/audit playbooks live in plugins/plugin_utils and
are called through this filter: `{{ value | ckptio.nfs.internal('client_tuning_report', ...) }}`.
Documentation for the filter is in internal.yml next to this one, for each step in the YAML file
of the step's name in plugins/plugin_utils.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.plugin_utils import (
    client_tuning, nfsd_connections, rollout, server_tuning, slurm_canary, slurm_drain, tuning_profile)

STEPS = {}
for _module in (client_tuning, server_tuning, nfsd_connections, rollout, tuning_profile, slurm_drain, slurm_canary):
    STEPS.update(_module.STEPS)


def internal(value, step, *args, **kwargs):
    try:
        function = STEPS[step]
    except (KeyError, TypeError):
        raise AnsibleFilterError("ckptio.nfs.internal: no step %r; the steps are %s" % (step, ", ".join(sorted(STEPS))))
    return function(value, *args, **kwargs)


class FilterModule:
    """The collection's own roles' and playbooks' steps (not for direct use)."""

    def filters(self):
        return {"internal": internal}
