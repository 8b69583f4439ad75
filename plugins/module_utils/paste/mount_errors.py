# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""mount.nfs's errors as people paste them: from a shell, from kubelet's FailedMount events ("MountVolume.SetUp failed
... Output: mount.nfs: ...") or a CSI driver's log. Recognise them and say what each is (issue 44). Pure.

The messages are nfs-utils' (utils/mount/error.c mount_error, sys_mount_errors, and the strerror of the mount(2)
errno it reports); each is a fault - the mount never happened - and says where to look:
- "Connection timed out", "No route to host", "Network is unreachable", a name that does not resolve: the client's
  requests do not reach the server's NFS port (a firewall or security group, a route, the server's address);
- "Connection refused": the server's host answered, nothing listens on the port (the NFS service is down);
- "access denied by server", "reason given by server: No such file or directory", "requested NFS version or
  transport protocol is not supported", mount(8)'s "wrong fs type ... need a /sbin/mount.<type> helper": the export,
  the version asked for, or the node's missing NFS client package - configuration.
"""

from __future__ import annotations

import re

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import text_figures as tf

KIND = "mount_errors"
TAKEN_FOR = "mount.nfs errors (a shell, kubelet's FailedMount events, a CSI driver's log)"
CAN_SHOW = "why an NFS mount failed: the path to the server, the service on it, the export or the client's packages"

_SOURCE = "nfs-utils utils/mount/error.c (mount_error, sys_mount_errors)"
_PATH_CHECK = ("from the client: `rpcinfo -t SERVER nfs 4` (or 3), `nc -vz SERVER 2049`, `ip route get SERVER`; open TCP "
               "2049 (and 111, 20048 for v3) in every firewall and security group on the way")
# (phrase in the message, fault name, kind, what, fix)
ERRORS = (
    ("Connection timed out", "mount_timed_out", "path",
     "the mount's requests got no answer from the server's NFS port: a firewall or security group dropping them, a "
     "route, or a server that is not up (vagrant-winnfsd#103: the firewall)", _PATH_CHECK),
    ("No route to host", "mount_no_route", "path", "no route to the server (or a firewall rejecting with host-unreachable)",
     _PATH_CHECK),
    ("Network is unreachable", "mount_no_route", "path", "the client has no route to the server's network", _PATH_CHECK),
    ("Failed to resolve server", "mount_name_unresolved", "misconfiguration",
     "the server's name does not resolve on this client", "fix the name or DNS on the client (`getent hosts SERVER`)"),
    ("Connection refused", "mount_refused", "other",
     "the server's host answered but nothing listens on its NFS port: the NFS service is down or listens elsewhere",
     "on the server: `systemctl status nfs-server` (or the user-space server), `ss -ltn sport = :2049`, `rpcinfo -p`"),
    ("access denied by server", "mount_access_denied", "misconfiguration",
     "the server's exports do not allow this client (its address, or sec=) for that path",
     "on the server: `exportfs -v`; add the client's address or network to the export and `exportfs -ra`"),
    ("reason given by server: No such file or directory", "mount_no_such_export", "misconfiguration",
     "the path is not exported (or, with NFSv4, not under the pseudo root as written)",
     "on the server: `exportfs -v`; mount the exported path (NFSv4: relative to fsid=0 when there is one)"),
    ("not supported", "mount_version_unsupported", "misconfiguration",
     "the server does not offer the NFS version or transport asked for (vers=, proto=)",
     "mount with a version the server serves (`rpcinfo -p SERVER`, or /proc/fs/nfsd/versions on it)"),
    ("helper program", "mount_helper_missing", "misconfiguration",
     "the node has no NFS mount helper (/sbin/mount.nfs): its NFS client package is not installed",
     "install nfs-common (Debian, Ubuntu) or nfs-utils (RHEL, Fedora, SUSE) on every node that mounts"),
)
_MOUNT = re.compile(r"\bmount(?:\.nfs4?)?: (.{1,300})")


def recognise(text):
    """True when a mount.nfs (or mount's helper) error of ERRORS is in the text."""
    if "mount" not in text:
        return False
    return any(_error(line) for _number, line in tf.lines(text))


def read(text):
    """Findings: each error once (its first line, how many times), a fault each."""
    found = {}
    for number, line in tf.lines(text):
        entry = _error(line)
        if entry:
            row = found.setdefault(entry[1], [number, line, entry, 0])
            row[3] += 1
    findings = []
    for number, line, (_phrase, name, kind, what, fix), count in found.values():
        fault = dict(tf.fault(name, "the NFS mount failed: %s" % what, fix, _SOURCE), kind=kind)
        findings.append(tf.finding(None, "mount error %s" % name, count, "%s%s" % (
            line.strip()[:200], " (%d times)" % count if count > 1 else ""), number, fault=fault))
    return findings


def is_mount_error(line):
    """True when the line is a mount error read here (io_errors leaves it to this reader)."""
    return _error(line) is not None


def _error(line):
    """The ERRORS row of a mount error line, or None."""
    found = _MOUNT.search(line)
    message = found.group(1) if found else line if "helper program" in line and "mount." in line else None
    if message is None:
        return None
    return next((entry for entry in ERRORS if entry[0] in message), None)
