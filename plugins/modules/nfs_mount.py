#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nfs_mount
short_description: Manage one NFS mount in fstab and live, without silently ignored remounts
version_added: "0.1.0"
description:
  - Manages one NFS mount and compares three views of it, the wanted options, the fstab
    entry, and the live mount read from C(/proc/self/mountinfo) and the mountstats C(opts:) line
    (which show the values the kernel negotiated).
  - Returns C(drift) for fstab and for the live mount separately, and C(pending) for options
    that are persisted in fstab but not live yet, each with the reason.
  - A plain C(mount -o remount) silently ignores C(nconnect) and cannot change C(rsize),
    C(wsize), C(vers), C(proto), C(timeo), C(retrans), C(sec) or the attribute cache times
    (ansible.posix.mount issue 85). Such changes need C(umount) and C(mount). The module does
    that only when O(apply_policy=when_idle) and nothing holds the mount (no open file,
    current or root directory, memory map or mount below it). Otherwise it persists the change
    in fstab, names the holders (pid, command, how) and reports the change as C(pending). It
    never uses C(umount -l) or C(umount -f).
  - Other options (C(ro), C(noatime), C(noexec), ...) are applied with C(mount -o remount) and
    verified afterwards.
  - C(nconnect) is fixed per server and NFS version by the first mount. When other mounts of
    the same server exist, they are listed in C(same_server_mounts) and a warning says that all
    of them must be unmounted before a new C(nconnect) takes effect. The module never unmounts
    them.
  - After mounting, the live options are verified. When the server negotiated C(rsize) or
    C(wsize) down (the server's C(/proc/fs/nfsd/max_block_size) caps them), C(negotiated) and a
    warning say so. Such a mount counts as applied on later runs, so the module does not remount
    it again and again. It counts as applied only when the mount was made after the last change
    to the fstab file.
  - fstab edits change only the line for O(path). Comments, blank lines, tabs, other entries
    and a missing final newline stay byte for byte. Writes are atomic.
  - The fstab is read, planned and written under an exclusive lock (C(flock) on
    C(.fstab.ckptio.lock) beside it), so parallel runs lose no entry. A symlinked fstab stays
    a link; its target gets the new content. Only a missing fstab counts as empty; an
    unreadable one fails the module.
author:
  - ckptio.nfs maintainers (@ckptio)
options:
  src:
    description:
      - The NFS export as C(server:/export); an IPv6 server as C([address]:/export).
      - Required when O(state) is V(mounted) or V(present).
    type: str
  path:
    description:
      - Absolute mount point. Spaces and tabs are allowed; fstab gets them as C(\040) and C(\011).
      - Other control or Unicode whitespace characters (CR, VT, FF, U+0085, U+00A0, U+2028...) are refused,
        and so are C(.) and C(..) components. Repeated and trailing slashes are removed, so
        C(/mnt//nfs) and C(/mnt/nfs/) manage the entry of C(/mnt/nfs).
      - With O(state=mounted) the directory must exist (create it with M(ansible.builtin.file)).
    type: str
    required: true
  fstype:
    description:
      - Filesystem type for fstab and C(mount -t).
    type: str
    choices: [nfs, nfs4]
    default: nfs4
  opts:
    description:
      - "NFS mount options as a dict, for example C({vers: 4.1, nconnect: 4, wsize: 1048576, hard: true})."
      - C(true) writes a flag (C(hard)), C(false) its negation (C(nolock) for C(lock), C(soft) for
        C(hard), C(rw) for C(ro)). C(nfsvers) is the same as C(vers); C(minorversion) folds into C(vers).
      - C(nconnect) must be 1..16; C(rsize) and C(wsize) multiples of 4096 in
        4096..1048576; C(vers) one of 3, 4, 4.0, 4.1, 4.2.
      - Option names must be known NFS or mount options (nfs(5), mount(8)) or C(x-*) options.
      - "Values may contain only letters, digits and C(. _ : / @ + % -), so no value can add an
        option or split the fstab line."
      - The fstab line is owned by this module. Options it finds there that are not in O(opts) are
        drift, unless they only restate a kernel default.
    type: dict
    default: {}
  state:
    description:
      - V(mounted) writes the fstab entry and makes the live mount match it.
      - V(present) writes the fstab entry only; a live mount is left alone and its differences are
        reported as pending.
      - V(unmounted) keeps the fstab entry and unmounts when idle.
      - V(absent) removes the fstab entry and unmounts when idle.
    type: str
    choices: [mounted, present, unmounted, absent]
    default: mounted
  fstab:
    description:
      - The fstab file to edit.
    type: path
    default: /etc/fstab
  backup:
    description:
      - Keep a timestamped copy of the fstab file before changing it; its name is in RV(backup_file).
    type: bool
    default: false
  apply_policy:
    description:
      - V(when_idle) unmounts and mounts again to apply options a remount cannot change, but only
        when nothing holds the mount. Otherwise the change is persisted and reported as pending.
      - V(never) only persists. Nothing is unmounted, and changes that need a fresh mount stay
        pending until the next reboot or a manual remount. Remount-capable options are still
        applied.
    type: str
    choices: [when_idle, never]
    default: when_idle
  dump:
    description:
      - fstab dump field.
    type: int
    default: 0
  passno:
    description:
      - fstab fsck pass field.
    type: int
    default: 0
  replace_foreign:
    description:
      - What to do with an fstab entry for O(path) whose type is not C(nfs) or C(nfs4), for example a
        local disk that is not mounted right now.
      - V(false) fails naming the line, and nothing changes. V(true) replaces the entry with the NFS
        one (O(state=present) or V(mounted)) or removes it (O(state=absent)).
    type: bool
    default: false
notes:
  - Holders are found by reading C(/proc/<pid>/fd), C(cwd), C(root) and C(maps) in the module's
    mount namespace. Processes in other mount namespaces (containers) that use the mount make
    C(umount) fail with "target is busy"; the module then reports the change as pending and
    does not force it.
  - The module never reads files under the mount point. A C(stat) on a hung NFS mount would block.
extends_documentation_fragment:
  - ckptio.nfs.attributes
attributes:
  check_mode:
    support: full
    details: Reports what would change; writes nothing, runs no mount or umount.
  diff_mode:
    support: full
    details: Shows the fstab file and the live mount options before and after.
seealso:
  - name: nfs(5)
    description: NFS mount options.
    link: https://man7.org/linux/man-pages/man5/nfs.5.html
  - name: ansible.posix.mount issue 85
    description: remount ignores NFS transport options.
    link: https://github.com/ansible-collections/ansible.posix/issues/85
"""

EXAMPLES = r"""
- name: Mount the checkpoint share with 4 connections and 1 MiB I/O
  ckptio.nfs.nfs_mount:
    src: 10.0.0.1:/srv/nfs
    path: /mnt/nfs
    opts:
      vers: 4.1
      nconnect: 4
      rsize: 1048576
      wsize: 1048576
      hard: true
      timeo: 600
      retrans: 2
      _netdev: true
  register: checkpoint_mount

- name: Show what still waits for a remount
  ansible.builtin.debug:
    var: checkpoint_mount.pending

- name: Persist new options only; never unmount during a training run
  ckptio.nfs.nfs_mount:
    src: 10.0.0.1:/srv/nfs
    path: /mnt/nfs
    opts:
      vers: 4.1
      nconnect: 8
    apply_policy: never
    backup: true

- name: Write the fstab entry without touching the live mount
  ckptio.nfs.nfs_mount:
    src: storage.example.com:/export/ckpt
    path: /mnt/ckpt data
    fstype: nfs4
    opts:
      nconnect: 4
      noatime: true
    state: present

- name: Unmount (only when idle) and remove the fstab entry
  ckptio.nfs.nfs_mount:
    path: /mnt/nfs
    state: absent
"""

RETURN = r"""
fstab_options_before:
  description:
    - Options of the fstab entry for O(path) before the run (canonical form, as RV(fstab_options)); empty when there was no entry.
    - Passed back as O(opts) it writes an equivalent entry; the role client_tuning records it to roll a tuned mount back.
  returned: always
  type: dict
  sample: {vers: "4.2", hard: true, atime: false, _netdev: true}
fstab_options:
  description: Options of the fstab entry after the run, as found in check mode (canonical form; flags are true/false).
  returned: always
  type: dict
  sample: {vers: "4.1", nconnect: "4", wsize: "1048576", hard: true}
live_options:
  description: Options of the live mount after the run, as found in check mode (empty when not mounted), from mountinfo and the mountstats opts line.
  returned: always
  type: dict
  sample: {vers: "4.1", nconnect: "4", rsize: "1048576", wsize: "1048576", hard: true, proto: tcp}
drift:
  description:
    - What differed before the run, for fstab and for the live mount separately.
    - Each maps an option (or C(src), C(fstype), C(dump), C(passno), C(entry), C(mounted)) to the wanted and the found value.
  returned: always
  type: dict
  sample: {fstab: {wsize: {wanted: "1048576", fstab: "65536"}}, live: {wsize: {wanted: "1048576", live: "65536"}}}
pending:
  description: Changes persisted in fstab but not live after the run, each with the reason.
  returned: always
  type: list
  elements: dict
  sample: [{name: wsize, wanted: "1048576", live: "65536", reason: "mount is busy: pid 4242 (python3) cwd /mnt/nfs"}]
holders:
  description: Processes and mounts that keep the mount busy (only looked for when an unmount was needed).
  returned: always
  type: list
  elements: dict
  sample: [{pid: 4242, command: python3, how: "open fd 7 /mnt/nfs/ckpt/shard-00.pt"}]
same_server_mounts:
  description: Other live NFS mounts of the same server; C(shares_client) is true when they share the NFS client (same version) and so its nconnect.
  returned: always
  type: list
  elements: dict
  sample: [{mount_point: /mnt/scratch, source: "10.0.0.1:/srv/scratch", vers: "4.1", nconnect: "1", shares_client: true}]
negotiated:
  description: rsize/wsize the server negotiated below the wanted value (the server's max_block_size caps them).
  returned: always
  type: list
  elements: dict
  sample: [{name: wsize, wanted: "1048576", live: "262144", reason: "the server caps wsize at 262144 (its max_block_size)"}]
remounted:
  description: How the live mount was changed in this run, one of V(mount), V(umount+mount), V(remount), V(umount), or V(none).
  returned: always
  type: str
  sample: umount+mount
settings:
  description: One row per wanted option (and C(src)) for the audit drift table; in check mode the state as found.
  returned: always
  type: list
  elements: dict
  sample: [{name: wsize, wanted: "1048576", persisted: "1048576", live: "65536", in_sync: false}]
backup_file:
  description: The backup of the fstab file, when O(backup=true) and the file changed.
  returned: changed and backup requested
  type: str
  sample: /etc/fstab.12345.2025-01-01@00:00:00~
backup_files:
  description:
    - Every backup made, named by the file it saves (the one rule of the tuning modules; here at most O(fstab)'s,
      the same as RV(backup_file)). Empty in check mode.
  returned: always
  type: dict
  sample: {/etc/fstab: /etc/fstab.12345.2025-01-01@00:00:00~}
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ckptio.nfs.plugins.module_utils.config import mount_plan
from ansible_collections.ckptio.nfs.plugins.module_utils.config import tuning_flow
from ansible_collections.ckptio.nfs.plugins.module_utils.config.mount_plan import PlanError
from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import parse_mountinfo
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_lock
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_write
from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root
from ansible_collections.ckptio.nfs.plugins.module_utils.host.mount_holders import find_holders, read_processes
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import iter_mountstats


# ---- the views -------------------------------------------------------------------------------
def read_live_view(host, path):
    """mountinfo, with the mountstats opts of the mount on path merged into its options."""
    text = host.read(host.mountinfo)
    if text is None:
        raise PlanError("cannot read %s" % host.mountinfo)
    mounts = parse_mountinfo(text)
    live = mount_plan.live_mount(mounts, path)
    age = None
    if live is not None:
        for stats in iter_mountstats(host.read(host.mountstats) or ""):
            if stats.mount_point == path:
                # The opts line shows the values in force (negotiated rsize/wsize, ac times).
                live["options"].update(stats.opts)
                age = stats.age
    return mount_plan.LiveView(mounts, live, age)


def read_views(module, host, wanted):
    # Only a missing fstab is empty: an unreadable one (EACCES, ELOOP, EIO, a directory)
    # fails here, or the write below would replace every line with ours.
    text = file_read.read(wanted.fstab_path, follow_links=True, module=module)
    mtime = os.stat(wanted.fstab_path).st_mtime if text is not None else None
    fstab = mount_plan.fstab_view(text, mtime, wanted.path)
    live = read_live_view(host, wanted.path)
    # Only when nothing is mounted there: a stat of a hung NFS mount would block.
    path_is_dir = os.path.isdir(wanted.path) if live.live is None else None
    return mount_plan.Views(fstab, live, time.time(), path_is_dir)


def read_and_plan(module, host, wanted):
    """(views, plan); the holders are read only when the plan reaches an unmount."""
    views = read_views(module, host, wanted)
    plan = mount_plan.plan(views, wanted)
    if plan.needs_holders:
        mount_points = [mount["mount_point"] for mount in views.live.mounts]
        views = views.with_holders(find_holders(wanted.path, read_processes(host.proc), mount_points))
        plan = mount_plan.plan(views, wanted)
    return views, plan


# ---- applying --------------------------------------------------------------------------------
def run(module, argv):
    rc, out, err = module.run_command(argv)
    return rc, (err or out or "").strip()


def umount(module, path, plan, notes, pending_reason, warning):
    """umount path; on failure record the live drift as pending (reasons take the message) and say False."""
    rc, message = run(module, ["umount", path])
    if rc != 0:
        notes.add_pending(plan.live_drift, pending_reason % message)
        notes.warn(warning % (path, message))
        return False
    return True


def change_live(module, wanted, views, plan):
    """Run the plan's live action; return (the action as completed or 'none', its Notes)."""
    notes = mount_plan.Notes()
    path = wanted.path
    if plan.action == "mount":
        rc, message = run(module, mount_plan.mount_argv(wanted))
        if rc != 0:
            module.fail_json(msg="mount %s failed (rc=%d): %s" % (path, rc, message), pending=plan.pending)
    elif plan.action == "umount":
        if not umount(module, path, plan, notes, "umount failed: %s", "%s: umount failed, still mounted: %s"):
            return "none", notes
    elif plan.action == "remount":
        rc, message = run(module, mount_plan.remount_argv(wanted, plan))
        if rc != 0:
            notes.warn("%s: mount -o remount failed: %s" % (path, message))
    elif plan.action == "umount+mount":
        # A failed umount: something opened the mount between the scan and umount, or a process
        # in another namespace holds it: leave it mounted, as when holders were found.
        if not umount(module, path, plan, notes, "umount failed, nothing changed live: %s", "%s: umount failed, change pending: %s"):
            return "none", notes
        rc, message = run(module, mount_plan.mount_argv(wanted))
        if rc != 0:
            restore = mount_plan.restore_argv(views.live.live, path)
            restore_rc, restore_message = run(module, restore)
            module.fail_json(msg="mount %s with the new options failed (rc=%d): %s; the old mount was %s"
                             % (path, rc, message,
                                "restored" if restore_rc == 0 else "NOT restored (%s): run %s" % (restore_message, " ".join(restore))))
    return plan.action, notes


def write_fstab(module, wanted, views, plan):
    """Write the planned fstab under its lock: tuning_flow.Written with {fstab: backup}."""
    backup_file = None
    if plan.fstab_after != views.fstab.text:
        try:
            backup_file = file_write.write_file(module, wanted.fstab_path, plan.fstab_after, backup=module.params["backup"],
                                                follow_links=True)
        except OSError as exc:
            module.fail_json(msg="fstab: could not write %s (the old file is unchanged): %s" % (wanted.fstab_path, exc))
    return tuning_flow.Written({wanted.fstab_path: backup_file} if backup_file else {})


def apply_live(module, host, wanted, views, plan, written):
    """Change the live mount (the lock is released: a mount may take long) and verify it: the Outcome."""
    if plan.action is None:
        return mount_plan.outcome(written.backups, "none", views.live.live)
    remounted, notes = change_live(module, wanted, views, plan)
    # Said before verify, which may fail the run.
    for warning in notes.warnings:
        module.warn(warning)
    live_after = read_live_view(host, wanted.path)
    verified = mount_plan.verify(live_after, wanted, plan, remounted, notes)
    return mount_plan.outcome(written.backups, remounted, live_after.live, [notes, verified], verified.warnings)


def steps(module, host, wanted):
    """The module's part of tuning_flow: read, plan and write under the fstab's lock (a parallel run,
    two operators or a loop with async, otherwise reads the same old fstab and one edit is lost)."""
    def report(views, plan, outcome, diff):
        return mount_plan.report(wanted, views, plan, outcome, diff=diff)
    return tuning_flow.Steps(
        (wanted.fstab_path,), lambda: read_and_plan(module, host, wanted),
        lambda views, plan: write_fstab(module, wanted, views, plan),
        lambda views, plan, written: apply_live(module, host, wanted, views, plan, written), report)


def execute(module):
    wanted = mount_plan.wanted_from_params(module.params)
    directory = os.path.dirname(wanted.fstab_path) or "."
    if not os.path.isdir(directory):
        raise PlanError("fstab: directory %s does not exist" % directory)
    return tuning_flow.run(module, steps(module, host_root.at_root(), wanted), file_lock.locked)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            src=dict(type="str"),
            path=dict(type="str", required=True),
            fstype=dict(type="str", default="nfs4", choices=["nfs", "nfs4"]),
            opts=dict(type="dict", default={}),
            state=dict(type="str", default="mounted", choices=["mounted", "present", "unmounted", "absent"]),
            fstab=dict(type="path", default="/etc/fstab"),
            backup=dict(type="bool", default=False),
            apply_policy=dict(type="str", default="when_idle", choices=["when_idle", "never"]),
            dump=dict(type="int", default=0),
            passno=dict(type="int", default=0, no_log=False),
            replace_foreign=dict(type="bool", default=False),
        ),
        required_if=[("state", "mounted", ("src",)), ("state", "present", ("src",))],
        supports_check_mode=True,
    )
    try:
        result = execute(module)
    except PlanError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
