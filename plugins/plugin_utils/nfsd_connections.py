# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side connection budget of an NFS server: what the play's clients open, what to set.

Not filters of their own: the one public filter ckptio.nfs.internal (plugins/filter/internal.py)
calls them by name, so `ansible-doc -t filter -l ckptio.nfs` lists only what users call. The
documentation of each step is in the YAML file of the same name next to this one.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfsd_connections


def _host_value(hostvars, host, name, default):
    try:
        variables = hostvars[host]
    except KeyError:
        raise AnsibleFilterError("nfsd_connection_need: %s is not in hostvars" % host)
    value = variables.get(name, default) if hasattr(variables, "get") else default
    return default if value is None else value


def _whole_text(value):
    """A whole number given as text ("25": ansible-core before 2.19 renders a role's `{{ x | int }}` option so)
    as that number; anything else as given, for connection_need to judge."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return value


def nfsd_connection_need(hosts, hostvars, server_names, profiles=None, margin_percent=nfsd_connections.DEFAULT_MARGIN_PERCENT,
                         extra=0):
    if isinstance(hosts, (str, bytes)) or not hasattr(hosts, "__iter__"):
        raise AnsibleFilterError("nfsd_connection_need: expected a list of client host names, got %r" % (hosts,))
    if isinstance(server_names, (str, bytes)):
        server_names = [server_names]
    profiles = profiles or {}
    if not isinstance(profiles, Mapping):
        raise AnsibleFilterError("nfsd_connection_need: profiles must map a client_tuning profile name to its data")
    clients = []
    for host in hosts:
        profile_name = _host_value(hostvars, host, "client_tuning_profile", "checkpoint")
        profile = profiles.get(profile_name) or {}
        mounts = _host_value(hostvars, host, "client_tuning_mounts", [])
        mount_options = _host_value(hostvars, host, "client_tuning_mount_options", {})
        if not isinstance(mounts, list) or not isinstance(mount_options, Mapping):
            raise AnsibleFilterError("nfsd_connection_need: %s: client_tuning_mounts must be a list and "
                                     "client_tuning_mount_options a mapping" % host)
        clients.append({"host": host, "mounts": mounts, "mount_options": dict(mount_options),
                        "profile_options": dict(profile.get("mount_options") or {})})
    try:
        return nfsd_connections.connection_need(clients, [str(name) for name in server_names if name],
                                                margin_percent=_whole_text(margin_percent), extra=_whole_text(extra))
    except ValueError as exc:
        raise AnsibleFilterError("nfsd_connection_need: %s" % exc)


def nfsd_max_connections(need, threads, setting="auto"):
    if isinstance(need, Mapping):
        need = need.get("need")
    if isinstance(need, bool) or not isinstance(need, int) or need < 0:
        raise AnsibleFilterError("nfsd_max_connections: need must be a whole number >= 0 (or nfsd_connection_need's result)")
    if isinstance(threads, bool):
        raise AnsibleFilterError("nfsd_max_connections: threads must be a whole number, got %r" % (threads,))
    try:
        threads = int(threads)
    except (TypeError, ValueError):
        raise AnsibleFilterError("nfsd_max_connections: threads must be a whole number, got %r" % (threads,))
    # The thread count itself is validated by nfsd_threads; 0 threads (nfsd stopped) is the
    # kernel's formula too.
    threads = max(threads, 0)
    try:
        result = nfsd_connections.max_connections_setting(setting, need, threads)
    except ValueError as exc:
        raise AnsibleFilterError("nfsd_max_connections: %s" % exc)
    result["need"] = need
    return result


# The steps ckptio.nfs.internal calls, by name.
STEPS = {
    "nfsd_connection_need": nfsd_connection_need,
    "nfsd_max_connections": nfsd_max_connections,
}
