#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nfsd_threads
short_description: Set the number of knfsd threads, live and in nfs.conf
version_added: 0.1.0
description:
  - Sets the running kernel NFS server's thread count through C(/proc/fs/nfsd/threads) and persists
    it as C([nfsd] threads=) in an nfs.conf drop-in, which is what C(systemctl restart nfs-server)
    uses (on Debian 12 C(RPCNFSDCOUNT) in C(/etc/default/nfs-kernel-server) is ignored).
  - Reads C(/etc/nfs.conf) and every C(/etc/nfs.conf.d/*.conf) the way nfs-utils does (later files
    win, versionsort order, a last line without a newline is ignored) and reports the value the
    server will start with and any other C(threads=) that disagrees.
  - Never starts a stopped server. When nfsd is not loaded or not running, the value is persisted and
    RV(live_applied) is false with a reason.
  - Edits change only the C(threads=) (and C(min-threads=)) line; every other byte stays. Files are
    written atomically.
author:
  - ckptio.nfs maintainers (@ckptio)
options:
  threads:
    description:
      - Number of nfsd threads (with O(min_threads), the maximum). Range 1..8192 (NFSD_MAXSERVS).
      - Required with O(state=present).
    type: int
  min_threads:
    description:
      - Minimum threads for kernels with dynamic nfsd threads. Only where C(/proc/fs/nfsd/min_threads)
        exists; the module fails with a clear message elsewhere. Range 1..O(threads).
    type: int
  max_connections:
    description:
      - The most TCP/RDMA connections knfsd keeps (C(/proc/fs/nfsd/max_connections)); V(0) is the kernel
        default, (threads + 3) * 20. Over the limit nfsd closes its oldest connection and logs
        C(too many open connections, consider increasing the number of threads).
      - Written live whenever the file exists (the nfsd threads pick it up on their next request, also
        while nfsd is stopped). nfs-utils has no setting for it, so it is persisted as an
        C(nfs-server.service) drop-in whose C(ExecStartPre=) copies a value file into the proc file
        before nfsd starts (V(0) removes both files). See RV(connection_limit).
      - Kernels from 6.14 on have no such file (only connections that have not yet shown a valid file
        handle are limited, to 64); the module says so and changes nothing for it.
      - Unset, the limit is only reported. With O(state=absent) the files it wrote are removed and the
        live value set back to 0.
    type: int
  apply_live:
    description:
      - Write the values to C(/proc/fs/nfsd) when nfsd is running.
    type: bool
    default: true
  persist:
    description:
      - Write C([nfsd] threads=) (and C(min-threads=)) to O(conf_file).
    type: bool
    default: true
  state:
    description:
      - V(present) sets O(threads).
      - V(absent) removes C(threads=) and C(min-threads=) from O(conf_file) (deleting the drop-in when
        nothing else is left in it) and sets the live count to what the remaining files give, or to 8,
        the nfs-utils default before 2.8.2.
    type: str
    choices: [present, absent]
    default: present
  conf_file:
    description:
      - File to edit. Must be C(/etc/nfs.conf) or a C(.conf) file directly in C(/etc/nfs.conf.d);
        nfs-utils reads nothing else.
    type: path
    default: /etc/nfs.conf.d/ckptio-nfsd.conf
  backup:
    description:
      - Keep a timestamped copy of O(conf_file) before changing it.
    type: bool
    default: false
attributes:
  check_mode:
    description: Reports what would change; writes no file and no live value, loads no kernel module.
    support: full
  diff_mode:
    description: Shows each file before and after, and the live values before and after.
    support: full
notes:
  - Raising threads can shrink the session slots a new NFSv4.1 session gets on kernels ~5.4-6.13 (slots
    granted = min(request, 160, DRC memory / threads)).
  - C(include=) lines in nfs.conf files are reported, not followed.
  - O(conf_file) is read, planned and written under an exclusive lock (C(flock) on
    C(.<name>.ckptio.lock) beside it). A symlinked file stays a link and its target gets the new
    content. Only a missing file counts as empty; an unreadable one (or a directory) fails the module.
  - The O(max_connections) drop-in is C(/etc/systemd/system/nfs-server.service.d/ckptio-max-connections.conf)
    and its value file C(/etc/ckptio/nfsd-max-connections); the module refuses to change either when it
    did not write them, and runs C(systemctl daemon-reload) after changing the drop-in.
seealso:
  - module: ckptio.nfs.sunrpc_slot_table
"""

EXAMPLES = r"""
- name: Run 32 nfsd threads now and after every restart
  ckptio.nfs.nfsd_threads:
    threads: 32
  register: nfsd

- name: Fail when another nfs.conf file would override the value at the next restart
  ansible.builtin.assert:
    that: nfsd.effective_persisted_threads == 32
    fail_msg: "{{ nfsd.conflicts }}"

- name: Persist for the next start of nfs-server only
  ckptio.nfs.nfsd_threads:
    threads: 64
    apply_live: false

- name: 1,000 clients with nconnect=4 need more than (64 + 3) * 20 = 1,340 connections
  ckptio.nfs.nfsd_threads:
    threads: 64
    max_connections: 5000

- name: Roll back to the distribution default
  ckptio.nfs.nfsd_threads:
    state: absent
"""

RETURN = r"""
threads_before:
  description: Live thread count before the run (null when nfsd is not loaded).
  returned: always
  type: int
  sample: 8
threads_after:
  description: Live thread count after the run (in check mode, the count the run would set).
  returned: always
  type: int
  sample: 32
min_threads_before:
  description: Live C(min_threads) before the run (null where the kernel has none).
  returned: always
  type: int
min_threads_after:
  description: Live C(min_threads) after the run.
  returned: always
  type: int
persisted_threads:
  description: The C(threads=) value O(conf_file) holds after the run (null when it holds none).
  returned: always
  type: int
  sample: 32
effective_persisted_threads:
  description:
    - What C(systemctl restart nfs-server) will use, reading /etc/nfs.conf then /etc/nfs.conf.d/*.conf.
    - Null when no file sets it (nfs-utils then uses its built-in default).
  returned: always
  type: int
  sample: 32
effective_persisted_source:
  description: File and line of the winning C(threads=).
  returned: always
  type: dict
  sample: {path: /etc/nfs.conf.d/ckptio-nfsd.conf, line: 3, value: "32"}
conflicts:
  description: C(threads=)/C(min-threads=) in other files with another value; C(overrides_ours) marks the one that wins.
  returned: always
  type: list
  elements: dict
  sample: [{key: threads, path: /etc/nfs.conf.d/zz-local.conf, line: 2, value: "16", overrides_ours: true}]
max_block_size:
  description: C(/proc/fs/nfsd/max_block_size), the cap on rsize/wsize clients negotiate (null when unavailable).
  returned: always
  type: int
  sample: 262144
live_applied:
  description: True when the running server has the wanted values at the end of the run.
  returned: always
  type: bool
live_not_applied_reason:
  description: Why not (nfsd not loaded or stopped, check mode, apply_live false).
  returned: always
  type: str
settings:
  description: Rows for the audit drift table.
  returned: always
  type: list
  elements: dict
  sample: [{name: threads, wanted: 32, persisted: 32, live: 32, in_sync: true}]
  contains:
    in_sync:
      description:
        - Persisted and live values equal the wanted value. With nfsd not loaded (C(live) is
          null) only the persisted value, which nfs-server applies when it starts, is compared.
      type: bool
max_connections_before:
  description: Live C(/proc/fs/nfsd/max_connections) before the run (null where the file does not exist).
  returned: always
  type: int
  sample: 0
max_connections_after:
  description: Live value after the run (in check mode, the value the run would set).
  returned: always
  type: int
  sample: 5000
persisted_max_connections:
  description: The value the drop-in writes when nfs-server starts (0 when there is no drop-in of ours).
  returned: always
  type: int
  sample: 5000
connection_limit:
  description:
    - The connection limit nfsd enforces after the run. C(configured) is max_connections (0 = default),
      C(effective) the limit itself ((threads + 3) * 20 when configured is 0; null where the kernel
      has no such limit), C(threads) the count the default is computed from (the live count, or the one
      nfs-server will start with when nfsd is not running), C(supported) false on kernels without the
      file (null when nfsd is not loaded and it cannot be told).
  returned: always
  type: dict
  sample: {configured: 0, effective: 1340, threads: 64, supported: true}
backup_file:
  description: Backup of O(conf_file) made before changing it.
  returned: when backup is true and the file changed
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ckptio.nfs.plugins.module_utils.host import atomic_file
from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfs_conf
from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfsd_connections

PROC_NFSD = "/proc/fs/nfsd"
NFS_CONF = "/etc/nfs.conf"
NFS_CONF_D = "/etc/nfs.conf.d"
USR_NFS_CONF = "/usr/etc/nfs.conf"
# nfs-utils has no max_connections setting: an nfs-server.service drop-in copies the value file
# into /proc/fs/nfsd/max_connections before nfsd starts (docs/tuning-modules.md says why).
NFS_SERVER_DROPIN = "/etc/systemd/system/nfs-server.service.d/ckptio-max-connections.conf"
MAX_CONNECTIONS_VALUE_FILE = "/etc/ckptio/nfsd-max-connections"
# coreutils dd: /usr/bin on merged-/usr systems (Debian 12, RHEL), /bin on older Debian.
DD_PATHS = ("/usr/bin/dd", "/bin/dd")

# fs/nfsd/nfsd.h NFSD_MAXSERVS: the kernel refuses more threads.
MAX_THREADS = 8192
# nfs-utils before 2.8.2 (Debian 12 ships 2.6.2) starts 8 threads when nothing is configured.
DEFAULT_THREADS = 8
SECTION = "nfsd"
HEADER = "# Managed by ckptio.nfs.nfsd_threads: knfsd thread count.\n"
SAFE_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def read_int(module, path):
    # A directory or an unreadable file in /proc/fs/nfsd is a broken host: say which, no traceback.
    text = atomic_file.read_text_or_fail(module, path)
    if text is None:
        return None
    try:
        return int(text.split()[0])
    except (ValueError, IndexError):
        return None


def validate(params):
    errors = []
    threads = params["threads"]
    min_threads = params["min_threads"]
    present = params["state"] == "present"
    # Ansible's int type lets a bool through (bool subclasses int): `threads: true` must not mean 1.
    for option in ("threads", "min_threads", "max_connections"):
        if isinstance(params[option], bool):
            return ["%s must be an integer, got %r" % (option, params[option])]
    if present and threads is None:
        errors.append("threads is required with state=present")
    if threads is not None and not 1 <= threads <= MAX_THREADS:
        errors.append("threads must be between 1 and %d, got %d" % (MAX_THREADS, threads))
    if min_threads is not None:
        if threads is not None and not 1 <= min_threads <= threads:
            errors.append("min_threads must be between 1 and threads (%d), got %d" % (threads, min_threads))
        elif threads is None and min_threads < 1:
            errors.append("min_threads must be at least 1, got %d" % min_threads)
        if present and not os.path.exists(os.path.join(PROC_NFSD, "min_threads")):
            errors.append("min_threads is not supported here: %s does not exist (this kernel has no dynamic "
                          "nfsd threads, or nfsd is not loaded)" % os.path.join(PROC_NFSD, "min_threads"))
    max_connections = params["max_connections"]
    if max_connections is not None and not 0 <= max_connections <= nfsd_connections.MAX_CONNECTIONS:
        errors.append("max_connections must be between 0 and %d, got %d" % (nfsd_connections.MAX_CONNECTIONS, max_connections))
    path = params["conf_file"]
    if not path or not os.path.isabs(path):
        errors.append("conf_file must be an absolute path, got %r" % (path,))
    else:
        name = os.path.basename(path)
        in_dropins = os.path.dirname(os.path.normpath(path)) == os.path.normpath(NFS_CONF_D)
        if os.path.normpath(path) != os.path.normpath(NFS_CONF) and not (in_dropins and nfs_conf.dropin_names([name])):
            errors.append("conf_file must be %s or a .conf file directly in %s (nfs-utils reads nothing else), got %r"
                          % (NFS_CONF, NFS_CONF_D, path))
        elif not set(name) <= SAFE_NAME_CHARS:
            errors.append("conf_file name may contain only letters, digits, '.', '_' and '-', got %r" % (path,))
    return errors


class NfsdThreads:
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.check_mode = module.check_mode
        self.changed = False
        self.diff = []
        self.backup_file = None
        self.warnings = []

    def config_files(self, own_path, own_text):
        """[(path, text)] in nfs-utils' read order (conffile.c conf_init_file), with own_text for own_path."""
        def text_of(path):
            if os.path.normpath(path) == os.path.normpath(own_path):
                return own_text
            return atomic_file.read_text_or_fail(self.module, path)

        def dropins(directory):
            try:
                names = os.listdir(directory)
            except OSError:
                names = []
            if os.path.normpath(os.path.dirname(own_path)) == os.path.normpath(directory):
                own_name = os.path.basename(own_path)
                names = [name for name in names if name != own_name]
                if own_text is not None:
                    names.append(own_name)
            return [os.path.join(directory, name) for name in nfs_conf.dropin_names(names)]

        files = []
        main_text = text_of(NFS_CONF)
        if main_text is None:
            # conf_load_file() of /etc/nfs.conf discards what /usr/etc gave only when it can read it.
            files.append((USR_NFS_CONF, atomic_file.read_text_or_fail(self.module, USR_NFS_CONF)))
            files.extend((path, atomic_file.read_text_or_fail(self.module, path)) for path in dropins(USR_NFS_CONF + ".d"))
        else:
            files.append((NFS_CONF, main_text))
        files.extend((path, text_of(path)) for path in dropins(NFS_CONF + ".d"))
        return [(path, text) for path, text in files if text is not None]

    def write_file(self, path, before, after, backup=True):
        """Write or remove one file; backup=False for files wholly generated by this module."""
        if before == after:
            return
        backup = backup and self.params["backup"]
        self.changed = True
        if self.module._diff:
            self.diff.append({"before": before or "", "after": after or "", "before_header": path, "after_header": path})
        if self.check_mode:
            return
        try:
            if after is None:
                self.backup_file = atomic_file.remove_file(self.module, path, backup=backup) or self.backup_file
            else:
                self.backup_file = atomic_file.write_file(self.module, path, after, backup=backup, make_parent=True) or self.backup_file
        except OSError as exc:
            self.module.fail_json(msg="could not %s %s (the old file is untouched): %s"
                                  % ("remove" if after is None else "write", path, atomic_file.describe_error(exc)),
                                  changed=False)

    def plan_file(self, before):
        params = self.params
        path = params["conf_file"]
        if params["state"] == "present":
            if not params["persist"]:
                return before
            text = before if before is not None else HEADER
            text = nfs_conf.set_value(text, SECTION, "threads", params["threads"])
            if params["min_threads"] is not None:
                text = nfs_conf.set_value(text, SECTION, "min-threads", params["min_threads"])
            return text
        if before is None:
            return None
        text = nfs_conf.remove_key(nfs_conf.remove_key(before, SECTION, "threads"), SECTION, "min-threads")
        if os.path.normpath(path) != os.path.normpath(NFS_CONF) and not nfs_conf.has_assignments(text):
            return None
        return text

    def write_live(self, name, value):
        try:
            with open(os.path.join(PROC_NFSD, name), "w") as handle:
                handle.write("%d\n" % value)
            self.changed = True
            return None
        except OSError as exc:
            return "writing %s=%d failed: %s" % (name, value, exc)

    def apply_live(self, wanted_threads, wanted_min, threads_before, min_before):
        """Return (threads_after, min_after, applied, reason)."""
        if not self.params["apply_live"]:
            applied = threads_before == wanted_threads and (wanted_min is None or min_before == wanted_min)
            return threads_before, min_before, applied, "" if applied else "apply_live is false"
        if threads_before is None:
            return None, None, False, ("nfsd is not loaded (no %s/threads); the persisted value applies when "
                                       "nfs-server starts" % PROC_NFSD)
        if threads_before == 0:
            # Writing threads would start knfsd without nfs-server's exports and listeners.
            return 0, min_before, False, "nfsd is not running (threads=0); not starting it: the persisted value applies when nfs-server starts"
        need_threads = threads_before != wanted_threads
        need_min = wanted_min is not None and min_before != wanted_min
        if not (need_threads or need_min):
            return threads_before, min_before, True, ""
        if self.check_mode:
            return wanted_threads, (wanted_min if wanted_min is not None else min_before), False, "check mode: live values not written"
        errors = []
        # The kernel keeps min_threads <= threads: lower min first when shrinking below it.
        order = [("threads", wanted_threads, need_threads), ("min_threads", wanted_min, need_min)]
        if need_min and min_before is not None and wanted_threads < min_before:
            order.reverse()
        for name, value, needed in order:
            if needed:
                error = self.write_live(name, value)
                if error:
                    errors.append(error)
        threads_after = read_int(self.module, os.path.join(PROC_NFSD, "threads"))
        min_after = read_int(self.module, os.path.join(PROC_NFSD, "min_threads"))
        applied = threads_after == wanted_threads and (wanted_min is None or min_after == wanted_min)
        if not applied and not errors:
            errors.append("the kernel reports threads=%s min_threads=%s after the write" % (threads_after, min_after))
        return threads_after, min_after, applied, "; ".join(errors)

    def read_max_connections(self):
        """The live value and our persisted files, before any change: a dict the plan reads."""
        proc_file = os.path.join(PROC_NFSD, "max_connections")
        live = read_int(self.module, proc_file)
        if live is not None:
            supported = True
        elif os.path.exists(os.path.join(PROC_NFSD, "threads")):
            # nfsd is loaded and has no max_connections: Linux 6.14 removed it.
            supported = False
        else:
            supported = None
        return {
            "proc_file": proc_file,
            "live": live,
            "supported": supported,
            "dropin": atomic_file.read_text(NFS_SERVER_DROPIN),
            "value": atomic_file.read_text(MAX_CONNECTIONS_VALUE_FILE),
        }

    def plan_max_connections(self, view):
        """(wanted, dropin_after, value_after); wanted None = max_connections is not managed this run."""
        params = self.params
        ours = nfsd_connections.is_our_dropin(view["dropin"])
        if params["state"] == "present":
            wanted = params["max_connections"]
        else:
            # Rollback: what we persisted goes, and the live value returns to the kernel default.
            has_ours = ours or nfsd_connections.parse_value(view["value"]) is not None
            wanted = 0 if (params["max_connections"] is not None or has_ours) else None
        if wanted is None:
            return None, view["dropin"], view["value"]
        if view["supported"] is False:
            if wanted == 0:
                # 0 asks for no limit of ours: on such a kernel that is the case already; only
                # files of ours left from an older kernel are removed.
                if ours:
                    return 0, None, None
                return None, view["dropin"], view["value"]
            self.warnings.append(
                "max_connections=%d not applied: this kernel has no %s (Linux 6.14 removed it; only connections that "
                "have not yet presented a valid file handle are limited, to 64), so there is nothing to set"
                % (wanted, view["proc_file"]))
            return None, view["dropin"], view["value"]
        if view["dropin"] is not None and not ours:
            self.module.fail_json(msg="max_connections: %s exists and was not written by ckptio.nfs; refusing to change it "
                                      "(remove it or move its setting into max_connections)" % NFS_SERVER_DROPIN)
        if view["value"] is not None and nfsd_connections.parse_value(view["value"]) is None:
            self.module.fail_json(msg="max_connections: %s holds something other than a number; it is not ours, "
                                      "refusing to change it" % MAX_CONNECTIONS_VALUE_FILE)
        if params["state"] == "present" and not params["persist"]:
            return wanted, view["dropin"], view["value"]
        if wanted == 0:
            # 0 is what a freshly loaded nfsd has: nothing to persist.
            return wanted, None, None
        dd_path = next((path for path in DD_PATHS if os.path.exists(path)), DD_PATHS[0])
        return (wanted, nfsd_connections.dropin_text(dd_path, MAX_CONNECTIONS_VALUE_FILE, view["proc_file"]),
                nfsd_connections.value_text(wanted))

    def write_max_connections_files(self, view, dropin_after, value_after):
        # The value first, the drop-in that reads it last; removal the other way round, so a failure
        # in between never leaves a drop-in pointing at a missing file.
        if dropin_after is None:
            self.write_file(NFS_SERVER_DROPIN, view["dropin"], None, backup=False)
            self.write_file(MAX_CONNECTIONS_VALUE_FILE, view["value"], None, backup=False)
        else:
            self.write_file(MAX_CONNECTIONS_VALUE_FILE, view["value"], value_after, backup=False)
            self.write_file(NFS_SERVER_DROPIN, view["dropin"], dropin_after, backup=False)
        if dropin_after == view["dropin"] or self.check_mode:
            return
        systemctl = self.module.get_bin_path("systemctl")
        if systemctl is None:
            self.warnings.append("systemctl not found: %s takes effect only where systemd starts nfs-server" % NFS_SERVER_DROPIN)
            return
        rc, _out, err = self.module.run_command([systemctl, "daemon-reload"])
        if rc != 0:
            self.warnings.append("systemctl daemon-reload failed (%s): run it before nfs-server restarts, or the old "
                                 "drop-in applies" % err.strip())

    def apply_live_max_connections(self, view, wanted):
        """Return (after, applied, reason). Unlike threads, writing it never starts nfsd."""
        before = view["live"]
        if wanted is None or view["supported"] is not True:
            if wanted is not None and view["supported"] is None:
                return before, False, ("nfsd is not loaded (no %s): max_connections applies when nfs-server starts"
                                       % view["proc_file"])
            return before, True, ""
        if before == wanted:
            return before, True, ""
        if not self.params["apply_live"]:
            return before, False, "apply_live is false"
        if self.check_mode:
            return wanted, False, "check mode: live values not written"
        error = self.write_live("max_connections", wanted)
        after = read_int(self.module, view["proc_file"])
        if error:
            return after, False, error
        if after != wanted:
            return after, False, "the kernel reports max_connections=%s after the write" % after
        return after, True, ""

    def run(self):
        params = self.params
        present = params["state"] == "present"
        path = params["conf_file"]
        threads_before = read_int(self.module, os.path.join(PROC_NFSD, "threads"))
        min_before = read_int(self.module, os.path.join(PROC_NFSD, "min_threads"))
        max_block_size = read_int(self.module, os.path.join(PROC_NFSD, "max_block_size"))

        max_view = self.read_max_connections()
        wanted_max, dropin_after, value_after = self.plan_max_connections(max_view)

        # Read, plan and write conf_file under its lock: a parallel run would otherwise plan
        # from the same old file.
        with atomic_file.locked(self.module, path):
            before = atomic_file.read_text_or_fail(self.module, path)
            after = self.plan_file(before)
            files_after = self.config_files(path, after)
            for file_path, text in files_after:
                for included in nfs_conf.includes(text):
                    self.warnings.append("%s includes %s: not followed, its values are not checked" % (file_path, included))
            winner, every = nfs_conf.effective(files_after, SECTION, "threads")
            min_winner, min_every = nfs_conf.effective(files_after, SECTION, "min-threads")
            effective_threads = nfs_conf.atoi(winner["value"]) if winner else None
            effective_min = nfs_conf.atoi(min_winner["value"]) if min_winner else None

            if present:
                wanted_threads, wanted_min = params["threads"], params["min_threads"]
            else:
                wanted_threads = effective_threads if effective_threads is not None else DEFAULT_THREADS
                wanted_min = None
                if min_before is not None:
                    wanted_min = effective_min if effective_min is not None else 0

            conflict_rows = [dict(row, key="threads") for row in nfs_conf.conflicts(every, path, wanted_threads)]
            if present and wanted_min is not None:
                conflict_rows.extend(dict(row, key="min-threads") for row in nfs_conf.conflicts(min_every, path, wanted_min))
            if present and params["persist"] and effective_threads != wanted_threads:
                self.warnings.append("nfs-server will start with threads=%s from %s:%s, not %d" % (
                    winner["value"], winner["path"], winner["line"], wanted_threads) if winner else
                    "no nfs.conf file sets threads after this run")

            self.write_file(path, before, after)
            self.write_max_connections_files(max_view, dropin_after, value_after)
        threads_after, min_after, applied, reason = self.apply_live(wanted_threads, wanted_min, threads_before, min_before)
        max_after, max_applied, max_reason = self.apply_live_max_connections(max_view, wanted_max)
        if self.module._diff and max_after != max_view["live"]:
            self.diff.append({
                "before": "max_connections = %s\n" % max_view["live"],
                "after": "max_connections = %s\n" % max_after,
                "before_header": "live: %s" % max_view["proc_file"],
                "after_header": "live: %s" % max_view["proc_file"],
            })
        if self.module._diff and (threads_after, min_after) != (threads_before, min_before):
            self.diff.append({
                "before": "threads = %s\nmin_threads = %s\n" % (threads_before, min_before),
                "after": "threads = %s\nmin_threads = %s\n" % (threads_after, min_after),
                "before_header": "live: %s" % PROC_NFSD,
                "after_header": "live: %s" % PROC_NFSD,
            })

        # In check mode nothing changed: the audit rows show the state as it is now.
        if self.check_mode:
            persisted_now = nfs_conf.effective(self.config_files(path, before), SECTION, "threads")[0]
            persisted_threads_now = nfs_conf.atoi(persisted_now["value"]) if persisted_now else None
            persisted_min_now = nfs_conf.effective(self.config_files(path, before), SECTION, "min-threads")[0]
            persisted_min_now = nfs_conf.atoi(persisted_min_now["value"]) if persisted_min_now else None
            live_threads, live_min = threads_before, min_before
        else:
            persisted_threads_now, persisted_min_now = effective_threads, effective_min
            live_threads, live_min = threads_after, min_after
        check_persisted = params["persist"] or not present
        rows = [self.row("threads", wanted_threads, persisted_threads_now, live_threads, check_persisted)]
        if wanted_min is not None:
            rows.append(self.row("min_threads", wanted_min, persisted_min_now, live_min, check_persisted and present))
        persisted_max_after = self.persisted_max_connections(dropin_after, value_after)
        if wanted_max is not None:
            persisted_max_now = (self.persisted_max_connections(max_view["dropin"], max_view["value"])
                                 if self.check_mode else persisted_max_after)
            live_max_now = max_view["live"] if self.check_mode else max_after
            rows.append(self.row("max_connections", wanted_max, persisted_max_now, live_max_now, check_persisted))
        limit = self.connection_limit(max_view, max_after, persisted_max_after, threads_after, effective_threads)
        if wanted_max is not None and not max_applied and max_reason:
            applied = False
            reason = "; ".join(part for part in (reason, max_reason) if part)

        own = nfs_conf.effective([(path, after)], SECTION, "threads")[0] if after is not None else None
        for warning in self.warnings:
            self.module.warn(warning)
        result = {
            "changed": self.changed,
            "threads_before": threads_before,
            "threads_after": threads_after,
            "min_threads_before": min_before,
            "min_threads_after": min_after,
            "persisted_threads": nfs_conf.atoi(own["value"]) if own else None,
            "effective_persisted_threads": effective_threads,
            "effective_persisted_source": winner,
            "conflicts": conflict_rows,
            "max_block_size": max_block_size,
            "max_connections_before": max_view["live"],
            "max_connections_after": max_after,
            "persisted_max_connections": persisted_max_after,
            "connection_limit": limit,
            "live_applied": applied,
            "live_not_applied_reason": reason,
            "settings": rows,
        }
        if self.backup_file:
            result["backup_file"] = self.backup_file
        if self.module._diff:
            result["diff"] = self.diff
        return result

    @staticmethod
    def persisted_max_connections(dropin, value):
        """What the next nfs-server start writes: our value file when our drop-in reads it, else 0."""
        if nfsd_connections.is_our_dropin(dropin):
            parsed = nfsd_connections.parse_value(value)
            return parsed if parsed is not None else 0
        return 0

    @staticmethod
    def connection_limit(view, max_after, persisted_max, threads_after, effective_threads):
        if view["supported"] is False:
            return nfsd_connections.connection_limit(None, threads_after, supported=False)
        if view["supported"] is True and threads_after:
            return nfsd_connections.connection_limit(max_after, threads_after)
        # nfsd stopped or not loaded: the limit it will have when nfs-server starts.
        threads = effective_threads if effective_threads is not None else DEFAULT_THREADS
        configured = max_after if view["supported"] is True else persisted_max
        limit = nfsd_connections.connection_limit(configured, threads)
        limit["supported"] = view["supported"]
        return limit

    def row(self, name, wanted, persisted, live, check_persisted):
        if live is None:
            # nfsd not loaded: no live value to compare. As in every module's rows, the row is in
            # sync when the persisted value, which nfs-server applies when it starts, is wanted.
            in_sync = persisted == wanted
        else:
            in_sync = (not check_persisted or persisted == wanted) and (not self.params["apply_live"] or live == wanted)
        return {"name": name, "wanted": wanted, "persisted": persisted, "live": live, "in_sync": in_sync}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            threads=dict(type="int"),
            min_threads=dict(type="int"),
            max_connections=dict(type="int"),
            apply_live=dict(type="bool", default=True),
            persist=dict(type="bool", default=True),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            conf_file=dict(type="path", default="/etc/nfs.conf.d/ckptio-nfsd.conf"),
            backup=dict(type="bool", default=False),
        ),
        required_if=[("state", "present", ["threads"])],
        supports_check_mode=True,
    )
    errors = validate(module.params)
    if errors:
        module.fail_json(msg="; ".join(errors))
    module.exit_json(**NfsdThreads(module).run())


if __name__ == "__main__":
    main()
