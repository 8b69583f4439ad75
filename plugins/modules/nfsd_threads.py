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
  - Tells how nfs-server gets its count (RV(persist_mechanism)) from the files the host has (the
    C(nfs-server.service) unit and its drop-ins, C(nfs-utils_env.sh) and the files it sources). Where
    that script still exists (Debian 11, Ubuntu 20.04), C(nfs-server.service) runs C(rpc.nfsd $RPCNFSDARGS)
    with C(RPCNFSDCOUNT) from C(/etc/default/nfs-kernel-server) (8 when unset) as a count argument, which
    wins over C([nfsd] threads=); RV(effective_persisted_threads) is then that count. See O(persist_command_line).
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
        before nfsd starts (V(0) removes both files, keeping any line someone else added to the drop-in).
        See RV(connection_limit).
      - A drop-in masked as C(systemctl mask) masks (a symbolic link to C(/dev/null)) persists nothing and is never
        written through; persisting a value there fails naming the mask and what to do (remove the link, or
        O(persist=false)).
      - Kernels from 6.14 on have no such file (only connections that have not yet shown a valid file
        handle are limited, to 64); the module says so and changes nothing for it.
      - Unset, the limit is only reported. With O(state=absent) what it wrote is removed (the value file, and
        its own lines of the drop-in; lines someone else added stay) and the live value set back to 0.
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
      - Keep a timestamped copy of O(conf_file) (and of C(/etc/default/nfs-kernel-server) when
        O(persist_command_line) edits it) before changing it.
    type: bool
    default: false
  persist_command_line:
    description:
      - Where nfs-server passes rpc.nfsd a count from C(RPCNFSDCOUNT) (RV(persist_mechanism) is
        V(command_line)), set that one C(RPCNFSDCOUNT=) line of C(/etc/default/nfs-kernel-server) (or
        C(/etc/sysconfig/nfs)) to O(threads), keeping every other byte, and keep the line it replaced
        in C(/etc/ckptio/nfsd-rpcnfsdcount.record), with the line it wrote. O(state=absent) puts the old line back
        only while the line it wrote is still there; a line someone changed since is kept, with a warning.
      - A value the shell computes (C("$(nproc)"), C($VAR)) or a variable assigned on several lines (an if/else)
        cannot be read. RV(persist_mechanism) is then V(unknown), the reason says which line and why, the C(settings)
        row is not in sync, and no line is edited.
      - V(false) (the default) leaves that file, which belongs to the distribution's package, alone and
        warns naming the file, the line and the fix; the C(settings) row is then not in sync.
      - A count in C(RPCNFSDOPTS) or in C(ExecStart) itself is never edited, only reported.
    type: bool
    default: false
extends_documentation_fragment:
  - ckptio.nfs.attributes
attributes:
  check_mode:
    support: full
    details: Reports what would change; writes no file and no live value, loads no kernel module.
  diff_mode:
    support: full
    details: Shows each file before and after, and the live values before and after.
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

- name: On Debian 11 / Ubuntu 20.04, also set RPCNFSDCOUNT, which overrides nfs.conf there
  ckptio.nfs.nfsd_threads:
    threads: 32
    persist_command_line: true

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
  description:
    - File and line of the winning C(threads=); where the command line decides, the file and line of
      C(RPCNFSDCOUNT) (C(via) V(RPCNFSDCOUNT), V(RPCNFSDOPTS), V(default) for the script's own 8, or
      V(ExecStart)).
  returned: always
  type: dict
  sample: {path: /etc/nfs.conf.d/ckptio-nfsd.conf, line: 3, value: "32"}
persist_mechanism:
  description:
    - How nfs-server gets its thread count after the run. V(nfs_conf) (rpc.nfsd or nfsdctl without a
      count, C([nfsd] threads=) decides), V(command_line) (C(RPCNFSDCOUNT) or C(RPCNFSDOPTS) through
      C(nfs-utils_env.sh)), V(unit_argument) (a count in C(ExecStart)), V(unknown) (then
      RV(effective_persisted_threads) is what nfs.conf says, and RV(persist_mechanism_reason) why it is unknown).
  returned: always
  type: str
  sample: nfs_conf
persist_mechanism_reason:
  description: The files and lines RV(persist_mechanism) rests on.
  returned: always
  type: str
nfs_server_exec_start:
  description: The C(ExecStart=) values of C(nfs-server.service) with its drop-ins (null when no unit was found).
  returned: always
  type: list
  elements: str
  sample: ["/usr/sbin/rpc.nfsd"]
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
  description: Backup of O(conf_file) made before changing it (only that file's; see RV(backup_files) for the others).
  returned: when backup is true and O(conf_file) changed
  type: str
backup_files:
  description:
    - Every backup made, named by the file it saves (O(conf_file), and C(/etc/default/nfs-kernel-server) when
      O(persist_command_line) edited or restored it).
  returned: always
  type: dict
  sample: {/etc/nfs.conf.d/ckptio-nfsd.conf: /etc/nfs.conf.d/ckptio-nfsd.conf.12345.2026-01-01@00:00:00~}
"""

import functools
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfs_conf
from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfs_server_start
from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfsd_connections
from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfsd_plan
from ansible_collections.ckptio.nfs.plugins.module_utils.config import owned_files
from ansible_collections.ckptio.nfs.plugins.module_utils.config import tuning_flow
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_lock
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_edits
from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root

# The /etc, /usr and /run files read here (nfs.conf and its drop-ins, nfs-server.service and its
# drop-ins, nfs-utils_env.sh, the defaults files, our max_connections and RPCNFSDCOUNT files) are
# named once, in host_root.HostRoot; conf_file, an option, is the user's.
NFS_SERVER_UNIT = "nfs-server.service"
# conf_file's rule, as nfs-utils reads it: /etc/nfs.conf, or a .conf file directly in /etc/nfs.conf.d.
OWNED_PATH_MESSAGES = (
    (owned_files.PLACE, "%(option)s must be %(files)s or a .conf file directly in %(directories)s (nfs-utils reads "
                        "nothing else), got %(path)r"),
    (owned_files.NAME, "%(option)s name may contain only letters, digits, '.', '_' and '-', got %(path)r"),
)

# fs/nfsd/nfsd.h NFSD_MAXSERVS: the kernel refuses more threads.
MAX_THREADS = 8192
# The first line of a conf_file this module creates.
HEADER = nfsd_plan.HEADER


def read_int(module, path):
    # A directory or an unreadable file in /proc/fs/nfsd is a broken host: say which, no traceback.
    text = file_read.read(path, follow_links=True, module=module)
    if text is None:
        return None
    try:
        return int(text.split()[0])
    except (ValueError, IndexError):
        return None


def validate(params, host):
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
        if present and not os.path.exists(host.nfsd_file("min_threads")):
            errors.append("min_threads is not supported here: %s does not exist (this kernel has no dynamic "
                          "nfsd threads, or nfsd is not loaded)" % host.nfsd_file("min_threads"))
    max_connections = params["max_connections"]
    if max_connections is not None and not 0 <= max_connections <= nfsd_connections.MAX_CONNECTIONS:
        errors.append("max_connections must be between 0 and %d, got %d" % (nfsd_connections.MAX_CONNECTIONS, max_connections))
    error = owned_files.owned_path_error("conf_file", params["conf_file"], [host.nfs_conf_d], OWNED_PATH_MESSAGES,
                                         files=[host.nfs_conf])
    if error:
        errors.append(error)
    return errors


# ---- the views -------------------------------------------------------------------------------
def read_config_files(module, host, own_path, own_text):
    """[(path, text)] in nfs-utils' read order (conffile.c conf_init_file), with own_text for own_path."""
    def dropins(directory):
        names = [name for _directory, listed in file_read.list_dirs([directory]) for name in listed]
        if os.path.normpath(os.path.dirname(own_path)) == os.path.normpath(directory):
            own_name = os.path.basename(own_path)
            names = [name for name in names if name != own_name]
            if own_text is not None:
                names.append(own_name)
        return [os.path.join(directory, name) for name in nfs_conf.dropin_names(names)]

    def planned(paths):
        return owned_files.with_own(paths, own_path, own_text, functools.partial(file_read.read, follow_links=True, module=module))

    files = planned([host.nfs_conf])
    if not files:
        # conf_load_file() of /etc/nfs.conf discards what /usr/etc gave only when it can read it.
        files = planned([host.usr_nfs_conf] + dropins(host.usr_nfs_conf + ".d"))
    return files + planned(dropins(host.nfs_conf_d))


def read_max_connections(module, host):
    """The live value and our persisted files, before any change: a dict the plan reads."""
    proc_file = host.nfsd_file("max_connections")
    live = read_int(module, proc_file)
    if live is not None:
        supported = True
    elif os.path.exists(host.nfsd_file("threads")):
        # nfsd is loaded and has no max_connections: Linux 6.14 removed it.
        supported = False
    else:
        supported = None
    masked = is_masked(host.nfs_server_dropin)
    return {
        "proc_file": proc_file,
        "live": live,
        "supported": supported,
        "dropin_path": host.nfs_server_dropin,
        # The one reader: a directory or an unreadable file fails naming it and the errno. A masked drop-in
        # (a link to /dev/null) holds nothing for systemd: no text, and the plan refuses to persist through it.
        "dropin": None if masked else file_read.read(host.nfs_server_dropin, follow_links=True, module=module),
        "dropin_masked": masked,
        "value_path": host.max_connections_value_file,
        "value": file_read.read(host.max_connections_value_file, follow_links=True, module=module),
        "dd_path": host.dd_path(),
    }


def is_masked(path):
    """True when path is a symbolic link that ends at /dev/null: how `systemctl mask` masks a unit (systemctl(1))."""
    return file_read.read_link(path) is not None and os.path.realpath(path) == os.devnull


def read_unit_files(host):
    """[(path, text)] of nfs-server.service as systemd loads it: the unit from the first directory
    that has it, then its drop-ins (*.conf in every directory's nfs-server.service.d, a name in a
    higher directory hiding the same name below, in name order)."""
    units = [os.path.join(directory, NFS_SERVER_UNIT) for directory in host.systemd_unit_dirs]
    unit = next(((path, host.read(path)) for path in units if os.path.isfile(path)), None)
    dropins = {}
    for dropin_dir, names in file_read.list_dirs([path + ".d" for path in units]):
        for name in names:
            if name.endswith(".conf") and name not in dropins:
                dropins[name] = os.path.join(dropin_dir, name)
    if unit is None or unit[1] is None:
        return []
    return [unit] + [(path, host.read(path) or "") for _name, path in sorted(dropins.items())]


def read_start_view(module, host):
    """How nfs-server starts rpc.nfsd: the view nfsd_plan.plan_start() reads."""
    env_path = host.first_present(host.env_scripts)
    env_script = host.read(env_path)
    sourced = [host.path(path) for path in nfs_server_start.sourced_files(env_script or "")]
    texts = dict((path, file_read.read(path, follow_links=True, module=module)) for path in list(host.editable_defaults) + sourced)
    return nfsd_plan.start_view(read_unit_files(host), env_path, env_script, sourced, texts, host.rpcnfsdcount_record,
                                file_read.read(host.rpcnfsdcount_record, follow_links=True, module=module), host.editable_defaults)


# ---- applying --------------------------------------------------------------------------------
def write_live(host, name, value):
    try:
        file_edits.write_kernel_value(host.nfsd_file(name), value)
        return None
    except OSError as exc:
        return "writing %s=%d failed: %s" % (name, value, exc)


def write_all(host, writes):
    """(errors, whether any write succeeded) of the live writes, in order."""
    errors = [error for error in (write_live(host, name, value) for name, value in writes) if error]
    return errors, len(errors) < len(writes)


def reload_systemd(module, host):
    """Warnings of a `systemctl daemon-reload` after the drop-in changed."""
    systemctl = module.get_bin_path("systemctl")
    if systemctl is None:
        return ["systemctl not found: %s takes effect only where systemd starts nfs-server" % host.nfs_server_dropin]
    rc, _out, err = module.run_command([systemctl, "daemon-reload"])
    if rc != 0:
        return ["systemctl daemon-reload failed (%s): run it before nfs-server restarts, or the old "
                "drop-in applies" % err.strip()]
    return []


def change_live(module, host, plan):
    """Write the planned live values and read them back: ({"threads": LiveResult, "max_connections":
    LiveResult}, whether any write succeeded)."""
    live = {"threads": plan.threads_live.unapplied, "max_connections": plan.max_live.unapplied}
    changed = False
    if plan.threads_live.writes:
        errors, wrote = write_all(host, plan.threads_live.writes)
        changed = changed or wrote
        live["threads"] = nfsd_plan.verified_threads(plan.wanted_threads, plan.wanted_min, read_int(module, host.nfsd_file("threads")),
                                                     read_int(module, host.nfsd_file("min_threads")), errors)
    if plan.max_live.writes:
        errors, wrote = write_all(host, plan.max_live.writes)
        changed = changed or wrote
        live["max_connections"] = nfsd_plan.verified_max_connections(
            plan.max_plan.wanted, read_int(module, host.nfsd_file("max_connections")), errors)
    return live, changed


def write_files(module, host, plan):
    """Apply the file edits under the locks: tuning_flow.Written with the start check's and the
    daemon-reload's warnings."""
    backups = file_edits.apply_edits(module, plan.edits)
    warnings = []
    if plan.start.edits:
        # Re-read what nfs-config.service will source and tell again what nfs-server starts.
        mismatch = nfsd_plan.start_verified(plan.start.after, nfsd_plan.detect_start(read_start_view(module, host)))
        if mismatch:
            warnings.append(mismatch)
    if plan.dropin_changed:
        warnings.extend(reload_systemd(module, host))
    return tuning_flow.Written(backups, tuple(warnings))


def lock_paths(request, host):
    """conf_file; the RPCNFSDCOUNT files only for runs that may edit (or restore) them."""
    if request.persist_command_line or not request.present:
        return (request.conf_file, host.rpcnfsdcount_record) + host.editable_defaults
    return (request.conf_file,)


def steps(module, host, request):
    """The module's part of tuning_flow: the live values and max_connections read first, then under
    the locks the start view and conf_file (a parallel run would otherwise plan from the same old file)."""
    threads_before = read_int(module, host.nfsd_file("threads"))
    min_before = read_int(module, host.nfsd_file("min_threads"))
    max_block_size = read_int(module, host.nfsd_file("max_block_size"))
    max_view = read_max_connections(module, host)
    max_plan = nfsd_plan.plan_max_connections(request, max_view)

    def read_and_plan():
        start_view = read_start_view(module, host)
        before = file_read.read(request.conf_file, follow_links=True, module=module)
        after = nfsd_plan.plan_file(request, before)
        views = nfsd_plan.Views(host.nfsd_control, threads_before, min_before, max_block_size, max_view, before,
                                files_after=read_config_files(module, host, request.conf_file, after),
                                files_now=read_config_files(module, host, request.conf_file, before) if module.check_mode else None,
                                start_view=start_view)
        return views, nfsd_plan.plan(request, views, after, max_plan)

    def apply(_views, plan, written):
        live, changed = change_live(module, host, plan)
        return tuning_flow.Outcome(live, changed, written.backups, written.warnings)

    def report(views, plan, outcome, diff):
        return nfsd_plan.report(request, views, plan, outcome, diff=diff)
    return tuning_flow.Steps(lock_paths(request, host), read_and_plan, lambda _views, plan: write_files(module, host, plan), apply, report)


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
            persist_command_line=dict(type="bool", default=False),
        ),
        required_if=[("state", "present", ["threads"])],
        supports_check_mode=True,
    )
    host = host_root.at_root()
    errors = validate(module.params, host)
    if errors:
        module.fail_json(msg="; ".join(errors))
    try:
        request = nfsd_plan.Request.from_params(module.params, os.path.normpath(module.params["conf_file"]) == os.path.normpath(host.nfs_conf))
        result = tuning_flow.run(module, steps(module, host, request), file_lock.locked)
    except nfsd_plan.PlanError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
