# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint_canary's target, checked before the first fork or byte: the path (real, opened
without following a link), the mount it is on (NFS unless allow_local) and the host's limits
(memory, open files, free space) for the whole run.
"""

from __future__ import annotations

import os
import resource
import time

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import limits as canary_limits
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import options
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import outcome
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import shapes
from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import NFS_FSTYPES, nfs_server_of, parse_mountinfo
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.host import canary_cleanup
from ansible_collections.ckptio.nfs.plugins.module_utils.host import canary_places
from ansible_collections.ckptio.nfs.plugins.module_utils.host import proc_text


class Refused(Exception):
    """The canary cannot run as asked; msg names why, result holds what the failure returns with it."""

    def __init__(self, msg, **result):
        super().__init__(msg)
        self.result = result


def open_target(path, keep, shared=None):
    """(canary_cleanup.Workdir over the opened real path; shared: the job's directory name) or Refused; the name is never used again."""
    if not os.path.isabs(path):
        raise Refused("path must be absolute, got %r" % path)
    real = os.path.realpath(path)
    if real != os.path.normpath(path):
        raise Refused("path %s passes through a symbolic link (it resolves to %s); give the real path" % (path, real))
    if not os.path.isdir(real):
        raise Refused("path %s is not an existing directory" % path)
    try:
        return canary_cleanup.Workdir(real, keep, shared)
    except OSError as exc:
        raise Refused("path %s cannot be opened without following a symbolic link (%s); give the real path"
                      % (path, file_read.describe_error(exc)))


def check_mount(path, real, parent_fd, allow_local, mountinfo_path):
    """(the mount shown in the result, the NFS servers the ranks' traffic goes to) or Refused.

    The mount is found by path in mountinfo, then the opened fd must be on that mount's device
    (os.fstat(fd).st_dev against mountinfo's MAJ:MIN): a path swapped between the checks
    opens something else, and that is refused instead of written.
    """
    mounts = parse_mountinfo(file_read.read(mountinfo_path, kernel=True) or "")
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
        raise Refused("path %s is on the NFS mount %s (device %s) but the directory opened is on device %d:%d:"
                      " the path changed while it was checked; refusing to write"
                      % (path, mount["mount_point"], mount.get("device"), device[0], device[1]), mount=shown)
    raise Refused("path %s is on %s (%s), not NFS; set allow_local=true to test a local file system"
                  % (path, shown.get("mount_point", "an unknown mount"), shown.get("fstype", "unknown type")), mount=shown)


def _open_fd_count():
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 16


def check_limits(params, real, parent_fd, meminfo_path, check_mode):
    """Memory and open files for the whole run (free space: check_space); raises Refused naming every shortfall.
    Raises the soft open-files limit when the run needs it and may (not in check mode)."""
    ranks = params["ranks"]
    errors = []
    available = canary_limits.mem_available(file_read.read(meminfo_path, kernel=True))
    errors.append(canary_limits.memory_error(ranks, params["block_size"], available, 2 if params["restore"] else 1))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    new_soft, error = canary_limits.fd_limit_plan(ranks, _open_fd_count(), soft, hard)
    errors.append(error)
    if new_soft is not None and not check_mode:
        resource.setrlimit(resource.RLIMIT_NOFILE, (new_soft, hard))
    errors = [e for e in errors if e]
    if errors:
        raise Refused("; ".join(errors))


def _paths(params):
    """The NFS paths the ranks spread over: paths when given, else path alone, each normalised (os.path.normpath:
    no trailing slash, no `.` or `x/..`), so `X` and `X/` are one directory named twice, refused (issue 45)."""
    return [os.path.normpath(path) for path in (params["paths"] or [params["path"]])]


def open_places(params, mountinfo_path):
    """(the Places: a Workdir per NFS path and the local path's, the mount of each path, the NFS servers) or Refused.

    Every path is checked as path always was (real, opened without a link, NFS unless allow_local);
    the local path must be a real directory that is not NFS (a burst buffer on the mount under test
    would measure the mount twice).
    """
    paths = _paths(params)
    if len(set(paths)) != len(paths):
        raise Refused("paths must not name a directory twice, got %s (normalised: %s)"
                      % (", ".join(params["paths"]), ", ".join(paths)))
    workdirs, mounts, servers = [], [], []
    for path in paths:
        label = "path" if not params["paths"] else "paths entry"
        try:
            workdir = open_target(path, params["keep"], shapes.job_dir(params))
        except Refused as exc:
            raise Refused("%s: %s" % (label, exc), **exc.result) if params["paths"] else exc
        workdirs.append(workdir)
        try:
            mount, path_servers = check_mount(path, workdir.real, workdir.parent_fd, params["allow_local"], mountinfo_path)
        except Refused as exc:
            raise Refused("%s: %s" % (label, exc), **exc.result) if params["paths"] else exc
        mounts.append(mount)
        servers += [server for server in path_servers if server not in servers]
    local = None
    if params["local_path"]:
        try:
            local = open_target(params["local_path"], params["keep"])
        except Refused as exc:
            raise Refused("local_path: %s" % exc)
        mount = canary.mount_for_path(parse_mountinfo(file_read.read(mountinfo_path, kernel=True) or ""), local.real)
        if mount is not None and mount["fstype"] in NFS_FSTYPES:
            raise Refused("local_path %s is on the NFS mount %s: a burst buffer must be node-local (NVMe, tmpfs)"
                          % (params["local_path"], mount["mount_point"]))
    return canary_places.Places(workdirs, local), mounts, servers


def check_space(params, places, shape_plan):
    """Each NFS path's bytes (its ranks') and, with local_path, this host's bytes on the local path; Refused naming them."""
    errors = []
    per_path = shapes.bytes_by_path(shape_plan, len(places.nfs))
    for workdir, needed in zip(places.nfs, per_path):
        vfs = os.fstatvfs(workdir.parent_fd)
        free, total = vfs.f_bavail * vfs.f_frsize, vfs.f_blocks * vfs.f_frsize
        if len(per_path) == 1 and shape_plan.name in shapes.LAYOUT_SHAPES:
            errors.append(canary_limits.space_error(workdir.real, params["ranks"], params["bytes_per_rank"], free, total))
        else:
            errors.append(canary_limits.bytes_space_error(workdir.real, needed, free, total))
    if places.local is not None:
        vfs = os.fstatvfs(places.local.parent_fd)
        error = canary_limits.bytes_space_error(places.local.real, sum(per_path), vfs.f_bavail * vfs.f_frsize,
                                                vfs.f_blocks * vfs.f_frsize)
        errors.append("local_path has no room for this host's checkpoint: %s" % error if error else None)
    errors = [e for e in errors if e]
    if errors:
        raise Refused("; ".join(errors))


def prepare(module, host):
    """Check the options, the targets and the limits: (Places, NFS servers, the result before anything ran, ShapePlan)."""
    params = module.params
    errors = options.option_errors(params)
    if errors:
        raise Refused("; ".join(errors))
    places, mounts, servers = open_places(params, host.mountinfo)
    shape_plan = shapes.resolve(params, len(places.nfs))
    error = options.drain_error(params, shapes.bytes_by_path(shape_plan, len(places.nfs)))
    if error:
        raise Refused(error)
    check_limits(params, places.nfs[0].real, places.nfs[0].parent_fd, host.meminfo, module.check_mode)
    check_space(params, places, shape_plan)
    now = time.time()
    result = outcome.initial_result(params, mounts[0], shape_plan.rank_plans(), options.start_at(params, now),
                                    os.path.join(places.nfs[0].real, canary.WORKDIR_PREFIX + "<host>-<pid>-<token>"))
    result["shape"] = shape_plan.summary()
    if params["paths"]:
        result["mounts"] = mounts
    error = options.start_error(params, now)
    if error:
        raise Refused(error)
    warning = options.late_start_warning(params, now)
    if warning:
        module.warn(warning)
    return places, servers, result, shape_plan
