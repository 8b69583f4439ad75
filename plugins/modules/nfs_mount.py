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
attributes:
  check_mode:
    support: full
    description: Reports what would change; writes nothing, runs no mount or umount.
  diff_mode:
    support: full
    description: Shows the fstab file and the live mount options before and after.
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
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ckptio.nfs.plugins.module_utils.host import atomic_file
from ansible_collections.ckptio.nfs.plugins.module_utils.config import fstab as fstab_edit
from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfs_options
from ansible_collections.ckptio.nfs.plugins.module_utils.host.mount_holders import describe_holders, find_holders
from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import (
    NFS_FSTYPES, nfs_mounts, nfs_server_of, nfs_version_of, parse_mountinfo, split_options,
)
from ansible_collections.ckptio.nfs.plugins.module_utils.stats.mountstats import iter_mountstats

PROC_ROOT = "/proc"
PROC_MOUNTINFO = "/proc/self/mountinfo"
PROC_MOUNTSTATS = "/proc/self/mountstats"

# mountstats `age:` counts whole seconds, so now - age lies up to 1 s after the real mount time.
# A mount this module makes follows its fstab write by a fraction of a second and must count
# as newer; a mount left busy is older than the fstab change by far more than the 1 s of doubt.
AGE_TOLERANCE_SECONDS = 0


def _readlink(path):
    try:
        return os.readlink(path)
    except (IOError, OSError):
        return None


def _raw_options(options):
    return ",".join(name if value is None else "%s=%s" % (name, value) for name, value in options.items())


class NfsMount:
    def __init__(self, module):
        self.module = module
        params = module.params
        self.state = params["state"]
        self.fstype = params["fstype"]
        self.fstab_path = params["fstab"]
        self.policy = params["apply_policy"]
        self.src = params["src"]
        self.pending = []
        self.holders = []
        self.negotiated = []
        self.warnings = []
        self.remounted = "none"
        self.live_changed = False

    def fail(self, msg, **extra):
        self.module.fail_json(msg=msg, **extra)

    def warn(self, msg):
        self.warnings.append(msg)
        self.module.warn(msg)

    # ---- validation: everything before the first read of live state that matters ----
    def validate(self):
        params = self.module.params
        if self.src is None and self.state in ("mounted", "present"):
            # required_if does not see the default state, so check it here too.
            self.fail("src: required when state is %s (server:/export)" % self.state)
        try:
            self.path = nfs_options.validate_path(params["path"])
            self.server = nfs_options.validate_src(self.src) if self.src is not None else None
            self.wanted = nfs_options.normalize_wanted(params["opts"], self.fstype)
        except nfs_options.OptionError as exc:
            self.fail(str(exc))
        for name in ("dump", "passno"):
            if not 0 <= params[name] <= 9:
                self.fail("%s: %d is outside 0..9" % (name, params[name]))
        self.opts_text = nfs_options.render_options(self.wanted)
        if not os.path.isabs(self.fstab_path):
            # A relative fstab would be created in whatever directory the module runs from.
            self.fail("fstab: %r must be an absolute path" % (self.fstab_path,))
        directory = os.path.dirname(self.fstab_path) or "."
        if not os.path.isdir(directory):
            self.fail("fstab: directory %s does not exist" % directory)

    # ---- the three views ----
    def read_views(self):
        # Only a missing fstab is empty: an unreadable one (EACCES, ELOOP, EIO, a directory)
        # fails here, or the write below would replace every line with ours.
        raw = atomic_file.read_text_or_fail(self.module, self.fstab_path)
        self.fstab_exists = raw is not None
        self.fstab_before = raw or ""
        self.fstab_mtime = os.stat(self.fstab_path).st_mtime if self.fstab_exists else None
        lines = fstab_edit.split_lines(self.fstab_before)
        try:
            index = fstab_edit.find_entry(lines, self.path)
        except fstab_edit.FstabError as exc:
            self.fail("fstab: %s" % exc)
        self.fstab_index = index
        self.fstab_line = lines[index] if index is not None else None
        self.fstab_entry = fstab_edit.parse_entry(lines[index]) if index is not None else None
        self.fstab_options_before = (nfs_options.canonical_options(split_options(self.fstab_entry["opts"]))
                                     if self.fstab_entry else {})
        self.read_live()

    def read_live(self):
        text = atomic_file.read_optional(PROC_MOUNTINFO)
        if text is None:
            self.fail("cannot read %s" % PROC_MOUNTINFO)
        self.mounts = parse_mountinfo(text)
        on_path = [mount for mount in self.mounts if mount["mount_point"] == self.path]
        # With stacked mounts the last one in mountinfo is the one processes see.
        self.live = on_path[-1] if on_path else None
        if self.live is not None and self.live["fstype"] not in NFS_FSTYPES:
            self.fail("path: %s is mounted with fstype %s, not NFS; refusing to manage it" % (self.path, self.live["fstype"]))
        self.live_age = None
        if self.live is not None:
            stats_text = atomic_file.read_optional(PROC_MOUNTSTATS) or ""
            for stats in iter_mountstats(stats_text):
                if stats.mount_point == self.path:
                    # The opts line shows the values in force (negotiated rsize/wsize, ac times).
                    self.live["options"].update(stats.opts)
                    self.live_age = stats.age

    def live_canonical(self):
        if self.live is None:
            return {}
        return nfs_options.canonical_options(self.live["options"])

    # ---- comparing ----
    def fstab_fields(self):
        return fstab_edit.format_fields(self.src, self.path, self.fstype, self.opts_text,
                                        self.module.params["dump"], self.module.params["passno"])

    def refuse_foreign_entry(self):
        """Fail when the fstab entry at path is not NFS (a local disk not mounted now) unless replace_foreign."""
        entry = self.fstab_entry
        if entry is None or entry["fstype"] in NFS_FSTYPES or self.module.params["replace_foreign"]:
            return
        verb = "remove" if self.state == "absent" else "replace"
        self.fail("fstab: line %d of %s is a %s entry for %s, not NFS: %r; refusing to %s it "
                  "(set replace_foreign: true to %s it)"
                  % (self.fstab_index + 1, self.fstab_path, entry["fstype"], self.path,
                     self.fstab_line.rstrip("\r\n"), verb, verb))

    def compute_fstab(self):
        drift = {}
        entry = self.fstab_entry
        if self.state != "unmounted":
            self.refuse_foreign_entry()
        if self.state in ("absent",):
            if entry is not None:
                drift["entry"] = {"wanted": None, "fstab": entry["src"]}
            after, dummy = fstab_edit.remove_entry(self.fstab_before, self.path)
            self.fstab_options = {}
        elif self.state == "unmounted":
            after = self.fstab_before
            self.fstab_options = nfs_options.canonical_options(split_options(entry["opts"])) if entry else {}
        else:
            if entry is None:
                drift["entry"] = {"wanted": self.src, "fstab": None}
                needs_write = True
            else:
                current = nfs_options.canonical_options(split_options(entry["opts"]))
                drift.update(nfs_options.fstab_drift(self.wanted, current))
                for name, wanted, found in (("src", self.src, entry["src"]), ("fstype", self.fstype, entry["fstype"]),
                                            ("dump", str(self.module.params["dump"]), entry["dump"]),
                                            ("passno", str(self.module.params["passno"]), entry["passno"])):
                    if wanted != found:
                        drift[name] = {"wanted": wanted, "fstab": found}
                needs_write = bool(drift)
            after = self.fstab_before
            if needs_write:
                try:
                    after, dummy = fstab_edit.set_entry(self.fstab_before, self.path, self.fstab_fields())
                except fstab_edit.FstabError as exc:
                    self.fail("fstab: %s" % exc)
            self.fstab_options = dict(self.wanted)
        self.fstab_drift = drift
        self.fstab_after = after

    def mounted_after_fstab_change(self):
        if self.live_age is None or self.fstab_mtime is None:
            return False
        return time.time() - self.live_age >= self.fstab_mtime - AGE_TOLERANCE_SECONDS

    def compute_live_drift(self, live):
        drift = nfs_options.live_drift(self.wanted, live)
        if self.live is not None and self.src is not None and self.live["source"] != self.src:
            drift["src"] = {"wanted": self.src, "live": self.live["source"]}
        return drift

    def split_negotiated(self, drift, live):
        """Move rsize/wsize the server capped out of drift (only for a mount made with them)."""
        capped = nfs_options.negotiated_down(self.wanted, live)
        fstab_had_it = self.fstab_entry is not None and not self.fstab_drift
        for name, values in capped.items():
            if name in drift and fstab_had_it and self.mounted_after_fstab_change():
                del drift[name]
                self.add_negotiated(name, values)

    def add_negotiated(self, name, values):
        reason = ("the server caps %s at %s (its max_block_size, /proc/fs/nfsd/max_block_size); "
                  "raise it on the server before nfsd starts to get %s" % (name, values["live"], values["wanted"]))
        self.negotiated.append({"name": name, "wanted": values["wanted"], "live": values["live"], "reason": reason})
        self.warn("%s: %s" % (self.path, reason))

    def find_same_server_mounts(self):
        identities = set()
        if self.server:
            identities.add(self.server)
        if self.live is not None:
            identities.add(nfs_server_of(self.live))
        own_vers = nfs_version_of(self.live) if self.live is not None else self.wanted.get("vers")
        found = []
        for mount in nfs_mounts(self.mounts):
            if mount["mount_point"] == self.path:
                continue
            source_host = nfs_server_of({"options": {}, "source": mount["source"]})
            if nfs_server_of(mount) not in identities and source_host not in identities:
                continue
            vers = nfs_version_of(mount)
            shares = own_vers is None or nfs_options.values_match("vers", own_vers, vers) \
                or nfs_options.values_match("vers", vers, own_vers)
            found.append({"mount_point": mount["mount_point"], "source": mount["source"], "vers": vers,
                          "nconnect": mount["options"].get("nconnect", "1"), "shares_client": bool(shares)})
        self.same_server_mounts = found
        return [mount for mount in found if mount["shares_client"]]

    def nconnect_reason(self, sharing):
        names = ", ".join("%s (nconnect=%s)" % (mount["mount_point"], mount["nconnect"]) for mount in sharing)
        return ("nconnect is fixed per server and NFS version by the first mount: %s share the client of %s; "
                "all of them must be unmounted before nconnect=%s takes effect (this module does not unmount them)"
                % (names, self.server or nfs_server_of(self.live), self.wanted.get("nconnect")))

    def read_holders(self):
        processes = []
        try:
            entries = os.listdir(PROC_ROOT)
        except OSError:
            entries = []
        for name in entries:
            if not name.isdigit():
                continue
            base = os.path.join(PROC_ROOT, name)
            fds = {}
            try:
                for fd in os.listdir(os.path.join(base, "fd")):
                    fds[fd] = _readlink(os.path.join(base, "fd", fd))
            except OSError:
                pass
            processes.append({
                "pid": int(name),
                "command": (atomic_file.read_optional(os.path.join(base, "comm")) or "").strip() or None,
                "cwd": _readlink(os.path.join(base, "cwd")),
                "root": _readlink(os.path.join(base, "root")),
                "fds": fds,
                "maps": atomic_file.read_optional(os.path.join(base, "maps")),
            })
        return find_holders(self.path, processes, [mount["mount_point"] for mount in self.mounts])

    def add_pending(self, drift, reason):
        for name, values in drift.items():
            self.pending.append({"name": name, "wanted": values.get("wanted"), "live": values.get("live"), "reason": reason})

    def busy_reason(self):
        """None when the mount may be unmounted; else the reason it may not."""
        if self.policy == "never":
            return "apply_policy is never: persisted only, nothing unmounted"
        self.holders = self.read_holders()
        if self.holders:
            return "mount is busy, nothing unmounted: %s" % describe_holders(self.holders)
        return None

    # ---- deciding what to do live ----
    def plan_live(self):
        """Return the action ('mount', 'umount+mount', 'remount', 'umount' or None)."""
        live = self.live_canonical()
        self.live_before = live
        self.live_drift = {}
        sharing = self.find_same_server_mounts()
        if self.state in ("unmounted", "absent"):
            if self.live is None:
                return None
            self.live_drift = {"mounted": {"wanted": False, "live": True}}
            reason = self.busy_reason()
            if reason:
                self.add_pending(self.live_drift, reason)
                self.warn("%s: %s" % (self.path, reason))
                return None
            return "umount"
        if self.live is None:
            if self.state == "mounted":
                self.live_drift = {"mounted": {"wanted": True, "live": False}}
                if not os.path.isdir(self.path):
                    self.fail("path: %s does not exist or is not a directory; create the mount point first" % self.path)
                return "mount"
            return None
        drift = self.compute_live_drift(live)
        self.split_negotiated(drift, live)
        self.live_drift = drift
        if not drift:
            return None
        if self.state == "present":
            self.add_pending(drift, "state is present: the live mount is left alone")
            return None
        fresh = nfs_options.needs_fresh_mount(drift)
        if not fresh:
            return "remount"
        if "nconnect" in drift and sharing:
            reason = self.nconnect_reason(sharing)
            self.add_pending({"nconnect": drift["nconnect"]}, reason)
            self.warn("%s: %s" % (self.path, reason))
            fresh = [name for name in fresh if name != "nconnect"]
            if not fresh:
                remountable = {name: drift[name] for name in drift if name != "nconnect"}
                return "remount" if remountable else None
        reason = self.busy_reason()
        if reason:
            self.add_pending({name: drift[name] for name in drift if name in fresh}, reason)
            self.warn("%s: %s pending: %s" % (self.path, ", ".join(fresh), reason))
            remountable = [name for name in drift if name not in fresh and name != "nconnect"]
            return "remount" if remountable else None
        return "umount+mount"

    # ---- applying ----
    def write_fstab(self):
        """Atomically replace the fstab; return the backup file's path or None."""
        try:
            return atomic_file.write_file(self.module, self.fstab_path, self.fstab_after, backup=self.module.params["backup"])
        except OSError as exc:
            self.fail("fstab: could not write %s (the old file is unchanged): %s" % (self.fstab_path, exc))

    def run(self, argv):
        rc, out, err = self.module.run_command(argv)
        return rc, (err or out or "").strip()

    def mount_argv(self):
        return ["mount", "-t", self.fstype, "-o", self.opts_text, self.src, self.path]

    def apply_live(self, action):
        if action == "mount":
            rc, message = self.run(self.mount_argv())
            if rc != 0:
                self.fail("mount %s failed (rc=%d): %s" % (self.path, rc, message), pending=self.pending)
        elif action == "umount":
            rc, message = self.run(["umount", self.path])
            if rc != 0:
                self.add_pending(self.live_drift, "umount failed: %s" % message)
                self.warn("%s: umount failed, still mounted: %s" % (self.path, message))
                return
        elif action == "remount":
            names = [name for name in self.live_drift if name not in self.pending_names()]
            rc, message = self.run(["mount", "-o", "remount," + nfs_options.remount_options(self.wanted, names), self.path])
            if rc != 0:
                self.warn("%s: mount -o remount failed: %s" % (self.path, message))
        elif action == "umount+mount":
            rc, message = self.run(["umount", self.path])
            if rc != 0:
                # Something opened the mount between the scan and umount, or a process in
                # another namespace holds it: leave it mounted, as when holders were found.
                self.add_pending(self.live_drift, "umount failed, nothing changed live: %s" % message)
                self.warn("%s: umount failed, change pending: %s" % (self.path, message))
                return
            rc, message = self.run(self.mount_argv())
            if rc != 0:
                restore = ["mount", "-t", self.live["fstype"], "-o", _raw_options(self.live["options"]), self.live["source"], self.path]
                restore_rc, restore_message = self.run(restore)
                self.fail("mount %s with the new options failed (rc=%d): %s; the old mount was %s"
                          % (self.path, rc, message,
                             "restored" if restore_rc == 0 else "NOT restored (%s): run %s" % (restore_message, " ".join(restore))))
        self.live_changed = True
        self.remounted = action

    def pending_names(self):
        return set(item["name"] for item in self.pending)

    def verify(self):
        """Re-read the live mount and report what the kernel did not take."""
        self.read_live()
        if self.state not in ("mounted",) or self.live is None:
            if self.state == "mounted":
                self.fail("%s is not mounted after mount returned success" % self.path)
            return
        live = self.live_canonical()
        drift = self.compute_live_drift(live)
        known = self.pending_names()
        if self.remounted in ("mount", "umount+mount"):
            # Just mounted with the wanted sizes: anything lower was the server's answer.
            for name, values in nfs_options.negotiated_down(self.wanted, live).items():
                drift.pop(name, None)
                if name not in known and name not in [item["name"] for item in self.negotiated]:
                    self.add_negotiated(name, values)
        if "nconnect" in drift and "nconnect" not in known:
            sharing = self.find_same_server_mounts()
            reason = self.nconnect_reason(sharing) if sharing else \
                "the kernel kept nconnect=%s (verified in mountinfo after %s)" % (live.get("nconnect", "1"), self.remounted)
            self.add_pending({"nconnect": drift.pop("nconnect")}, reason)
            self.warn("%s: %s" % (self.path, reason))
        leftover = {name: values for name, values in drift.items() if name not in known}
        if leftover:
            reason = "not applied by the kernel (verified in mountinfo after %s)" % self.remounted
            self.add_pending(leftover, reason)
            self.warn("%s: %s %s" % (self.path, ", ".join(sorted(leftover)), reason))

    def predicted_live(self, action):
        """The live options check mode expects after action (for the diff only)."""
        if action == "umount":
            return {}
        if action == "mount":
            return {name: value for name, value in self.wanted.items()
                    if name not in nfs_options.FSTAB_ONLY and not name.startswith("x-")}
        live = dict(self.live_before)
        if action:
            for name in self.live_drift:
                if name in self.wanted and name not in self.pending_names():
                    live[name] = self.wanted[name]
        return live

    def settings(self, persisted, persisted_src, live, live_src):
        rows = []
        for name, wanted in self.wanted.items():
            live_value = live.get(name, nfs_options.KERNEL_DEFAULTS.get(name)) if live else None
            persisted_ok = persisted.get(name) == wanted
            live_ok = (name in nfs_options.FSTAB_ONLY or name.startswith("x-")
                       or (live and nfs_options.values_match(name, wanted, live_value)))
            rows.append({"name": name, "wanted": wanted, "persisted": persisted.get(name), "live": live_value,
                         "in_sync": bool(persisted_ok and (live_ok or self.state == "present"))})
        if self.src is not None:
            rows.insert(0, {"name": "src", "wanted": self.src, "persisted": persisted_src, "live": live_src,
                            "in_sync": persisted_src == self.src and (live_src == self.src or self.state == "present")})
        return rows

    def live_text(self, live_mount, options=None):
        if live_mount is None and options is None:
            return "not mounted\n"
        if options is not None:
            return "%s %s %s\n" % (self.src, self.path, nfs_options.render_options(options))
        return "%s %s %s\n" % (live_mount["source"], live_mount["mount_point"], _raw_options(live_mount["options"]))

    def execute(self):
        self.validate()
        # Read, plan and write under the fstab's lock: a parallel run (two operators, a loop
        # with async) otherwise reads the same old fstab and one of the two edits is lost. The
        # mount itself, which may take long, runs after the lock is released.
        with atomic_file.locked(self.module, self.fstab_path):
            self.read_views()
            self.compute_fstab()
            fstab_changed = self.fstab_after != self.fstab_before
            live_before_text = self.live_text(self.live)
            action = self.plan_live()
            result = {"changed": fstab_changed or action is not None}
            if not self.module.check_mode and fstab_changed:
                backup_file = self.write_fstab()
                if backup_file:
                    result["backup_file"] = backup_file
        if not self.module.check_mode:
            if action:
                self.apply_live(action)
                self.verify()
            fstab_options = self.fstab_options
            persisted_src = self.src if self.state in ("mounted", "present") else None
            if self.state == "unmounted":
                persisted_src = (self.fstab_entry or {}).get("src")
            live_after = self.live_canonical()
            live_after_text = self.live_text(self.live)
        else:
            # Check mode reports the state as it is (an audit runs in check mode); only
            # `changed` and the diff show what a real run would do.
            fstab_options = self.fstab_options_before
            persisted_src = (self.fstab_entry or {}).get("src")
            live_after = self.live_before
            predicted = self.predicted_live(action)
            live_after_text = ("not mounted\n" if not predicted else
                               self.live_text(None, predicted) if action else live_before_text)
        live_src_after = self.live["source"] if self.live is not None else None
        if self.module._diff:
            result["diff"] = [
                {"before": self.fstab_before, "after": self.fstab_after,
                 "before_header": self.fstab_path, "after_header": self.fstab_path},
                {"before": live_before_text, "after": live_after_text,
                 "before_header": "live: %s" % self.path, "after_header": "live: %s" % self.path},
            ]
        result.update({
            "fstab_options_before": self.fstab_options_before,
            "fstab_options": fstab_options,
            "live_options": live_after,
            "drift": {"fstab": self.fstab_drift, "live": self.live_drift},
            "pending": self.pending,
            "holders": self.holders,
            "same_server_mounts": self.same_server_mounts,
            "negotiated": self.negotiated,
            "remounted": self.remounted if not self.module.check_mode else "none",
            "settings": self.settings(fstab_options, persisted_src, live_after, live_src_after),
        })
        self.module.exit_json(**result)


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
    NfsMount(module).execute()


if __name__ == "__main__":
    main()
