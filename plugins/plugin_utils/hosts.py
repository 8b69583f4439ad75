# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which hosts of a group have (or lack) a variable, and what each holds: the roles' one way to ask
it, instead of a select/map/selectattr chain in each task. Steps behind ckptio.nfs.internal; documentation
and argument spec in hosts_with.yml and host_values.yml next to this one.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

_ABSENT = object()


def _names(value, option):
    if value is None:
        return []
    names = [value] if isinstance(value, str) else list(value)
    if not all(isinstance(name, str) and name for name in names):
        raise AnsibleFilterError("hosts_with: %s must be variable names, got %r" % (option, value))
    return names


def _lookup(variables, path):
    """The value at a dotted path (a.b: key b of variable a), or _ABSENT."""
    value = variables
    for key in path.split("."):
        if not isinstance(value, Mapping) or key not in value:
            return _ABSENT
        value = value[key]
    return value


def hosts_with(hosts, hostvars, defined=None, undefined=None):
    """The hosts (in their order) known to hostvars whose every `defined` path is set and every `undefined` one is not."""
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("hosts_with: give hostvars (the play's magic variable)")
    defined, undefined = _names(defined, "defined"), _names(undefined, "undefined")
    found = []
    for host in hosts or []:
        if host not in hostvars:
            continue
        variables = hostvars[host]
        if all(_lookup(variables, path) is not _ABSENT for path in defined) and \
                all(_lookup(variables, path) is _ABSENT for path in undefined):
            found.append(host)
    return found


def host_values(hosts, hostvars, path, default=_ABSENT):
    """The value at path (dotted: a key inside a variable) of each host, in the hosts' order.

    Without a default a host that lacks it (or that hostvars does not know) gives nothing; with one
    (null included) it gives the default, so the list stays aligned with the hosts.
    """
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("host_values: give hostvars (the play's magic variable)")
    if not isinstance(path, str) or not path:
        raise AnsibleFilterError("host_values: path must be a variable name, got %r" % (path,))
    values = []
    for host in hosts or []:
        value = _lookup(hostvars[host], path) if host in hostvars else _ABSENT
        if value is _ABSENT:
            value = default
        if value is not _ABSENT:
            values.append(value)
    return values


# The steps ckptio.nfs.internal calls, by name.
STEPS = {
    "hosts_with": hosts_with,
    "host_values": host_values,
}
