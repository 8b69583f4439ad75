# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one filter behind which the roles' and playbooks' own controller-side steps sit.

A filter plugin of a collection is public: `ansible-doc -t filter -l` lists it. A role inside a
collection cannot carry its own filter_plugins (ansible-core adds a role's plugin directories
only for roles outside a collection, playbook/role/__init__.py), so the steps of the roles and
playbooks live in plugins/plugin_utils and are called through this filter:
`{{ value | ckptio.nfs.internal('client_tuning_report', ...) }}` (the rule: docs/architecture.md,
"Public or internal"). Each step is checked against its own argument spec before it runs: the
options of the YAML file of its name in plugins/plugin_utils (plugin_utils/step_spec.py).
Documentation for the filter is in internal.yml next to this one.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.plugin_utils import (
    bundle_steps, canary_steps, capture_steps, client_tuning, compare_steps, hosts, nfsd_connections, rollout, server_tuning,
    slurm_canary, slurm_drain, step_spec, tuning_profile)

MODULES = (client_tuning, server_tuning, nfsd_connections, rollout, tuning_profile, slurm_drain, slurm_canary, canary_steps,
           capture_steps, bundle_steps, hosts, compare_steps)
FUNCTIONS = {}
for _module in MODULES:
    FUNCTIONS.update(_module.STEPS)
# Each step with the argument spec its documentation gives (checked when it is called).
STEPS = step_spec.steps(FUNCTIONS)


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
