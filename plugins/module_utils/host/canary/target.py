"""checkpoint_canary's target, read before the first fork or byte: the paths (real, opened without
following a link), the mount each is on (NFS unless allow_local), and the facts the plan checks the
run against (canary/preflight.Facts: free space, memory, open files). Nothing is made or changed here;
a target that cannot be used is an outcome.Refusal value naming why.
"""

from __future__ import annotations

import dataclasses
import os
import resource

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import limits as canary_limits
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import preflight
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import shapes
from ansible_collections.ckptio.nfs.plugins.module_utils.canary.outcome import Refusal
from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import NFS_FSTYPES, nfs_server_of, parse_mountinfo
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.host import proc_text
from ansible_collections.ckptio.nfs.plugins.module_utils.host.canary import cleanup as canary_cleanup
from ansible_collections.ckptio.nfs.plugins.module_utils.host.canary import places as canary_places


@dataclasses.dataclass(frozen=True)
class Target:
    """The opened places (host/canary/places.Places: every directory opened, nothing made in it yet)
    and what they showed (preflight.Facts)."""

    places: canary_places.Places
    facts: preflight.Facts


def open_target(path, keep, shared=None):
    """canary_cleanup.Workdir over the opened real path (shared: the job's directory name), or a Refusal; the name is never used again."""
    if not os.path.isabs(path):
        return Refusal("path must be absolute, got %r" % path)
    real = os.path.realpath(path)
    if real != os.path.normpath(path):
        return Refusal("path %s passes through a symbolic link (it resolves to %s); give the real path" % (path, real))
    if not os.path.isdir(real):
        return Refusal("path %s is not an existing directory" % path)
    try:
        return canary_cleanup.Workdir(real, keep, shared)
    except OSError as exc:
        return Refusal("path %s cannot be opened without following a symbolic link (%s); give the real path"
                       % (path, file_read.describe_error(exc)))


def check_mount(path, real, parent_fd, allow_local, mounts):
    """(the mount shown in the result, the NFS servers the ranks' traffic goes to), or a Refusal.

    The mount is found by path in mountinfo (mounts, parsed), then the opened fd must be on that
    mount's device (os.fstat(fd).st_dev against mountinfo's MAJ:MIN): a path swapped between the
    checks opens something else, and that is refused instead of written.
    """
    st_dev = os.fstat(parent_fd).st_dev
    device = (os.major(st_dev), os.minor(st_dev))
    by_path = canary.mount_for_path(mounts, real)
    mount = by_path if by_path and by_path["fstype"] in NFS_FSTYPES else None
    on_nfs = mount is not None and device in canary_limits.device_numbers([mount], NFS_FSTYPES)
    shown = canary_limits.mount_of_device(mounts, device, by_path) or by_path
    # Shown with undecodable bytes escaped (an export named caf\xe9): results must be valid UTF-8.
    shown = proc_text.json_safe({key: shown[key] for key in ("mount_point", "fstype", "source")}) if shown else {}
    # The server the ranks' traffic goes to (mountinfo addr=): its route names the NFS link.
    servers = [nfs_server_of(mount)] if on_nfs else []
    if on_nfs or allow_local:
        return shown, servers
    if mount is not None:
        return Refusal("path %s is on the NFS mount %s (device %s) but the directory opened is on device %d:%d:"
                       " the path changed while it was checked; refusing to write"
                       % (path, mount["mount_point"], mount.get("device"), device[0], device[1]), {"mount": shown})
    return Refusal("path %s is on %s (%s), not NFS; set allow_local=true to test a local file system"
                   % (path, shown.get("mount_point", "an unknown mount"), shown.get("fstype", "unknown type")), {"mount": shown})


def _open_fd_count():
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 16


def _paths(params):
    """The NFS paths the ranks spread over: paths when given, else path alone, each normalised (os.path.normpath:
    no trailing slash, no `.` or `x/..`), so `X` and `X/` are one directory named twice, refused (issue 45)."""
    return [os.path.normpath(path) for path in (params["paths"] or [params["path"]])]


def _named(refusal, params):
    """A path's refusal, named by its option when paths was given."""
    return Refusal("paths entry: %s" % refusal.msg, refusal.result) if params["paths"] else refusal


def open_places(params, mounts):
    """(the Places: a Workdir per NFS path and the local path's, the mount of each path, the NFS servers), or a Refusal.

    Every path is checked as path always was (real, opened without a link, NFS unless allow_local);
    the local path must be a real directory that is not NFS (a burst buffer on the mount under test
    would measure the mount twice).
    """
    paths = _paths(params)
    if len(set(paths)) != len(paths):
        return Refusal("paths must not name a directory twice, got %s (normalised: %s)"
                       % (", ".join(params["paths"]), ", ".join(paths)))
    workdirs, shown, servers = [], [], []
    for path in paths:
        workdir = open_target(path, params["keep"], shapes.job_dir(params))
        if isinstance(workdir, Refusal):
            return _named(workdir, params)
        workdirs.append(workdir)
        checked = check_mount(path, workdir.real, workdir.parent_fd, params["allow_local"], mounts)
        if isinstance(checked, Refusal):
            return _named(checked, params)
        shown.append(checked[0])
        servers += [server for server in checked[1] if server not in servers]
    local = None
    if params["local_path"]:
        local = open_target(params["local_path"], params["keep"])
        if isinstance(local, Refusal):
            return Refusal("local_path: %s" % local.msg)
        mount = canary.mount_for_path(mounts, local.real)
        if mount is not None and mount["fstype"] in NFS_FSTYPES:
            return Refusal("local_path %s is on the NFS mount %s: a burst buffer must be node-local (NVMe, tmpfs)"
                           % (params["local_path"], mount["mount_point"]))
    return canary_places.Places(workdirs, local), shown, servers


def _space(workdir):
    """(free, total) bytes of the file system holding the opened directory."""
    vfs = os.fstatvfs(workdir.parent_fd)
    return vfs.f_bavail * vfs.f_frsize, vfs.f_blocks * vfs.f_frsize


def read(params, host):
    """The Target (a host_root.HostRoot's mountinfo and meminfo), or the Refusal of a path that cannot be used."""
    opened = open_places(params, parse_mountinfo(file_read.read(host.mountinfo, kernel=True) or ""))
    if isinstance(opened, Refusal):
        return opened
    places, shown, servers = opened
    facts = preflight.Facts(
        reals=tuple(workdir.real for workdir in places.nfs), mounts=tuple(shown),
        space=tuple(_space(workdir) for workdir in places.nfs),
        local=(places.local.real,) + _space(places.local) if places.local is not None else None,
        servers=tuple(servers), meminfo=file_read.read(host.meminfo, kernel=True),
        nofile=resource.getrlimit(resource.RLIMIT_NOFILE), open_fds=_open_fd_count())
    return Target(places, facts)
