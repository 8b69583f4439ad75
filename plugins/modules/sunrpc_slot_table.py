#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sunrpc_slot_table
short_description: Set the NFS client's RPC slot tables and NFSv4.1 session slots, live and at boot
version_added: 0.1.0
description:
  - Sets the sunrpc parameters C(tcp_slot_table_entries), C(tcp_max_slot_table_entries) and
    C(udp_slot_table_entries), and the nfs parameter C(max_session_slots), live through
    C(/proc/sys/sunrpc) and C(/sys/module/*/parameters), and persistently as C(options) lines in a
    modprobe.d file, plus a modules-load.d entry so C(sunrpc) is loaded at boot.
  - If C(sunrpc) (or C(nfs)) is not loaded, the module runs C(modprobe) after persisting, so the
    module loads with the new options. Where that is impossible (a container sharing a kernel
    without sunrpc) the values are persisted and RV(live_applied) is false with a reason.
  - Transports read the sunrpc values only when they are created, and an NFSv4.1 session is
    negotiated when the first mount to a server is made. Existing mounts keep the old tables until
    every mount of their server is unmounted and mounted again; RV(mounts_pending_remount) names them.
  - NFSv4.1 and later ignore C(tcp_max_slot_table_entries) (the client creates their transports with
    NFS_CS_INFINITE_SLOTS, fs/nfs/nfs4client.c, measured on kernel 6.1). Their client-side cap is the
    session slot table, O(nfs_max_session_slots). RV(session_slot_mounts) lists such mounts.
  - Edits of the modprobe.d and modules-load.d files change only the values that must change; every
    other byte stays. Files are written atomically.
author:
  - ckptio.nfs maintainers (@ckptio)
options:
  tcp_slot_table_entries:
    description:
      - Slots pre-allocated per new TCP transport (the table grows on demand up to the cap).
      - Range 2..65536. Kernel default 2.
    type: int
  tcp_max_slot_table_entries:
    description:
      - Cap on slots per TCP transport for NFSv3 and NFSv4.0 mounts. NFSv4.1+ mounts ignore it.
      - Range 2..65536. Kernel default 65536.
    type: int
  udp_slot_table_entries:
    description:
      - Slots per UDP transport. Range 2..65536. Kernel default 16.
    type: int
  nfs_max_session_slots:
    description:
      - NFSv4.1+ session slots the client asks for at CREATE_SESSION (the nfs module parameter
        C(max_session_slots)); the server may grant fewer. Range 1..1024. Kernel default 64.
    type: int
  apply_live:
    description:
      - Write the values into the running kernel (loading C(sunrpc)/C(nfs) first if needed).
    type: bool
    default: true
  persist:
    description:
      - Write the values to O(modprobe_conf) and list C(sunrpc) in O(modules_load_conf).
    type: bool
    default: true
  state:
    description:
      - V(present) sets the given values.
      - V(absent) removes what this module persisted (the given options, or all four when none is
        given) and sets the live values back to what the remaining modprobe.d files or the kernel
        defaults give.
    type: str
    choices: [present, absent]
    default: present
  modprobe_conf:
    description:
      - modprobe.d file this module owns. Must be a C(.conf) file directly in a directory that kmod reads.
    type: path
    default: /etc/modprobe.d/ckptio-nfs.conf
  modules_load_conf:
    description:
      - modules-load.d file listing C(sunrpc) so it loads at boot. Must be a C(.conf) file directly in
        a modules-load.d directory.
    type: path
    default: /etc/modules-load.d/ckptio-nfs.conf
  backup:
    description:
      - Keep a timestamped copy of each file before changing it.
    type: bool
    default: false
  force:
    description:
      - Files this module writes start with a C(# Managed by ckptio.nfs.sunrpc_slot_table) header line.
        With O(state=absent), a O(modprobe_conf) or O(modules_load_conf) file without that line (one the
        site wrote under that name) is neither edited nor deleted, and the module fails naming it.
      - V(true) removes the values (and the file when nothing else is left in it) anyway.
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
  - An C(install sunrpc ...) or C(install nfs ...) line in any modprobe.d file makes modprobe run that
    command instead of loading the module. The module warns, naming the file and line, and counts
    parameters on that command line as set there (they override C(options) lines) in
    RV(effective_persisted) and RV(modprobe_conflicts).
  - Both files are read, planned and written under an exclusive lock (C(flock) on a
    C(.<name>.ckptio.lock) file beside each), so parallel runs do not lose each other's edits. A
    symlinked file stays a link and its target gets the new content.
  - The values in modprobe.d apply when the kernel module loads. If C(sunrpc) is loaded from the
    initramfs (NFS root), rebuild the initramfs as well.
  - Mounts are listed as pending when the live value before this run differed from the wanted one;
    a mount made before an earlier change is not detected.
seealso:
  - module: ckptio.nfs.nfs_mount
  - module: ckptio.nfs.nfsd_threads
"""

EXAMPLES = r"""
- name: Let v3/v4.0 transports grow to 128 slots and ask for 128 NFSv4.1 session slots
  ckptio.nfs.sunrpc_slot_table:
    tcp_slot_table_entries: 128
    tcp_max_slot_table_entries: 128
    nfs_max_session_slots: 128
  register: slots

- name: Say which mounts still run the old tables
  ansible.builtin.debug:
    msg: "{{ item.mount_point }} ({{ item.server }}, v{{ item.vers }}): {{ item.reason }}"
  loop: "{{ slots.mounts_pending_remount }}"

- name: Persist only, for the next boot (for example in an image build)
  ckptio.nfs.sunrpc_slot_table:
    tcp_max_slot_table_entries: 128
    apply_live: false

- name: Roll back to the distribution defaults
  ckptio.nfs.sunrpc_slot_table:
    state: absent
"""

RETURN = r"""
live_before:
  description: Live values before the run, keyed by option name (null where unreadable or not loaded).
  returned: always
  type: dict
  sample: {tcp_slot_table_entries: 2, tcp_max_slot_table_entries: 65536, udp_slot_table_entries: 16, nfs_max_session_slots: 64}
live_after:
  description: Live values after the run (in check mode, the values the run would set).
  returned: always
  type: dict
  sample: {tcp_slot_table_entries: 128, tcp_max_slot_table_entries: 128, udp_slot_table_entries: 16, nfs_max_session_slots: 128}
live_applied:
  description: True when the running kernel holds the wanted values at the end of the run.
  returned: always
  type: bool
live_not_applied_reason:
  description: Why the live values are not the wanted ones (module not loadable, check mode, apply_live false).
  returned: always
  type: str
  sample: "sunrpc is not loaded and 'modprobe sunrpc' failed: modprobe: FATAL: Module sunrpc not found"
persisted:
  description: Values this module's modprobe.d file holds after the run, keyed by option name.
  returned: always
  type: dict
  sample: {tcp_max_slot_table_entries: 128}
effective_persisted:
  description: Values the next load of sunrpc/nfs applies, reading every modprobe.d file in kmod's order.
  returned: always
  type: dict
modprobe_conflicts:
  description: Assignments of the same parameters in other modprobe.d files with other values.
  returned: always
  type: list
  elements: dict
  sample: [{path: /etc/modprobe.d/sunrpc.conf, name: tcp_max_slot_table_entries, value: "64", overrides_ours: true}]
mounts_pending_remount:
  description: Current NFS mounts still on the old slot table or session; unmount every mount of that server and mount again.
  returned: always
  type: list
  elements: dict
  sample: [{mount_point: /mnt/ckpt, server: 10.0.0.1, vers: "3", reason: "its RPC transport was created with the old ..."}]
session_slot_mounts:
  description: Current NFSv4.1+ mounts, which ignore tcp_max_slot_table_entries and are capped by session slots.
  returned: always
  type: list
  elements: dict
settings:
  description:
    - One row per managed option for the audit drift table.
    - C(in_sync) is true when the managed sides equal C(wanted). Where the option's kernel module (sunrpc or nfs) is
      not loaded there is no live value (C(live) is null), and the row is in sync when C(persisted) equals C(wanted),
      since that value applies when the module loads (the rule the audit playbook applies to every row, and
      M(ckptio.nfs.nfs_mount) follows with O(ckptio.nfs.nfs_mount#module:state=present)).
    - With O(state=absent) an option nothing persists (C(persisted) null) compares as the kernel default.
  returned: always
  type: list
  elements: dict
  sample: [{name: tcp_max_slot_table_entries, wanted: 128, persisted: 128, live: 128, in_sync: true}]
advice:
  description: Text about NFSv4.1 session slots, set when NFSv4.1+ mounts exist or tcp_max_slot_table_entries is set.
  returned: always
  type: str
backup_file:
  description: Backup of O(modprobe_conf) made before changing it (only that file's; see RV(backup_files) for the other).
  returned: when backup is true and O(modprobe_conf) changed
  type: str
backup_files:
  description: Every backup made, named by the file it saves (O(modprobe_conf) and O(modules_load_conf)).
  returned: always
  type: dict
  sample: {/etc/modprobe.d/ckptio-nfs.conf: /etc/modprobe.d/ckptio-nfs.conf.12345.2026-01-01@00:00:00~}
"""

import functools
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ckptio.nfs.plugins.module_utils.config import modprobe_conf
from ansible_collections.ckptio.nfs.plugins.module_utils.config import mountinfo
from ansible_collections.ckptio.nfs.plugins.module_utils.config import owned_files
from ansible_collections.ckptio.nfs.plugins.module_utils.config import slot_table_plan
from ansible_collections.ckptio.nfs.plugins.module_utils.config import slot_tables
from ansible_collections.ckptio.nfs.plugins.module_utils.config import tuning_flow
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_lock
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_edits
from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root

# The first line of every file this module writes: state=absent edits only files that have it.
HEADER = slot_table_plan.HEADER


# What kmod and systemd-modules-load read: a .conf file directly in one of their directories.
OWNED_PATH_MESSAGES = (
    (owned_files.NAME, "%(option)s must name a .conf file made of letters, digits, '.', '_' and '-', got %(path)r"),
    (owned_files.PLACE, "%(option)s must be directly in one of %(directories)s (nothing else is read at module load), got %(path)r"),
)


# ---- the views -------------------------------------------------------------------------------
def loaded_modules(host):
    return dict((kmod, host.kmod_loaded(kmod)) for kmod in slot_table_plan.KERNEL_MODULES)


def live_paths(host, option):
    kmod, parameter = slot_tables.KERNEL_PARAMETER[option]
    return [os.path.join(directory, parameter) for directory in host.parameter_dirs(kmod)]


def read_live(module, host):
    # A directory or an unreadable file here is a broken host: say which, no traceback.
    read = functools.partial(file_read.read, follow_links=True, module=module)
    values = {}
    for option in slot_tables.ALL_OPTIONS:
        values[option] = None
        kmod, parameter = slot_tables.KERNEL_PARAMETER[option]
        for directory in host.parameter_dirs(kmod):
            value = slot_tables.parse_int(next((text for _name, text in host.read_parameters(directory, [parameter], read)), None))
            if value is not None:
                values[option] = value
                break
    return values


def read_modprobe_files(module, host, own_path, own_text):
    """[(path, text)] of every modprobe.d file in kmod's order, with own_text for own_path."""
    listing = file_read.list_dirs(host.modprobe_dirs)
    own_name = os.path.basename(own_path)
    if own_text is not None and not any(own_name in names for _d, names in listing):
        listing.append((os.path.dirname(own_path), [own_name]))
    return owned_files.with_own(modprobe_conf.config_order(listing), own_path, own_text,
                                functools.partial(file_read.read, follow_links=True, module=module))


def read_views(module, host, request, live_before, loaded):
    """The views under the locks; the other modprobe.d files are read with ours as planned."""
    modprobe_before = file_read.read(request.modprobe_path, follow_links=True, module=module)
    load_before = file_read.read(request.load_path, follow_links=True, module=module)
    modprobe_after, load_after = slot_table_plan.plan_files(request, modprobe_before, load_before)
    views = slot_table_plan.Views(
        live_before, loaded, modprobe_before, load_before,
        files_after=read_modprobe_files(module, host, request.modprobe_path, modprobe_after),
        files_now=read_modprobe_files(module, host, request.modprobe_path, modprobe_before) if module.check_mode else None,
        mounts=mountinfo.nfs_mounts(mountinfo.parse_mountinfo(host.read(host.mountinfo) or "")))
    return views, modprobe_after, load_after


# ---- applying --------------------------------------------------------------------------------
def write_live(host, option, value):
    """Write one live value; return an error string or None."""
    errors = []
    for path in live_paths(host, option):
        if not os.path.exists(path):
            continue
        try:
            file_edits.write_kernel_value(path, value)
            return None
        except OSError as exc:
            errors.append("%s: %s" % (path, exc))
    return "; ".join(errors) or "no writable file for %s" % option


def load(module, host, kmod):
    """modprobe kmod; return an error string or None."""
    modprobe = module.get_bin_path("modprobe")
    if not modprobe:
        return "%s is not loaded and modprobe was not found" % kmod
    rc, out, err = module.run_command([modprobe, kmod])
    if rc != 0 or not host.kmod_loaded(kmod):
        detail = (err or out or "rc=%d" % rc).strip()
        return "%s is not loaded and 'modprobe %s' failed: %s" % (kmod, kmod, detail)
    return None


def change_live(module, host, request, plan):
    """Load what the plan loads, write the values that differ, read them back: (LiveResult, changed)."""
    live, changed = plan.live.unapplied, False
    if request.apply_live:
        errors, changed = write_steps(module, host, plan)
        live = slot_table_plan.verified_live(request, plan.wanted, read_live(module, host), errors)
    return live, changed


def write_steps(module, host, plan):
    """(errors, changed) of the plan's loads and live writes, in order."""
    errors = []
    changed = False
    for kmod, options, needs_load in plan.live.steps:
        current = plan.live.before
        if needs_load:
            error = load(module, host, kmod)
            if error:
                errors.append(error)
                continue
            changed = True
            # Loaded with the persisted options: only what still differs is written.
            current = read_live(module, host)
        for option in options:
            if current.get(option) == plan.wanted[option]:
                continue
            error = write_live(host, option, plan.wanted[option])
            if error:
                errors.append("%s: %s" % (option, error))
            else:
                changed = True
    return errors, changed


def steps(module, host, request):
    """The module's part of tuning_flow: both files locked (always in this order), read, planned, written."""
    live_before = read_live(module, host)
    loaded = loaded_modules(host)

    def read_and_plan():
        views, modprobe_after, load_after = read_views(module, host, request, live_before, loaded)
        return views, slot_table_plan.plan(request, views, modprobe_after, load_after)

    def write_files(_views, plan):
        # Persisted first, so a modprobe after the gate loads the module with the new options.
        return tuning_flow.Written(file_edits.apply_edits(module, plan.edits))

    def apply(_views, plan, written):
        live, changed = change_live(module, host, request, plan)
        # "Mounts keep the old table until remounted" only once a file or a live value changed (a run whose
        # write failed, on a read-only /etc, ended before this with nothing changed).
        changed_any = changed or any(edit.changed for edit in plan.edits)
        warnings = (plan.pending_warning,) if plan.pending_warning and changed_any else ()
        return tuning_flow.Outcome(live, changed, written.backups, warnings=warnings, detail=loaded_modules(host))

    def report(views, plan, outcome, diff):
        if outcome is None and plan.pending_warning:
            # Check mode: a real run would change the value those mounts keep.
            module.warn(plan.pending_warning)
        return slot_table_plan.report(request, views, plan, outcome, diff=diff)
    return tuning_flow.Steps((request.modprobe_path, request.load_path), read_and_plan, write_files, apply, report)


def main():
    argument_spec = dict(
        tcp_slot_table_entries=dict(type="int"),
        tcp_max_slot_table_entries=dict(type="int"),
        udp_slot_table_entries=dict(type="int"),
        nfs_max_session_slots=dict(type="int"),
        apply_live=dict(type="bool", default=True),
        persist=dict(type="bool", default=True),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        modprobe_conf=dict(type="path", default="/etc/modprobe.d/ckptio-nfs.conf"),
        modules_load_conf=dict(type="path", default="/etc/modules-load.d/ckptio-nfs.conf"),
        backup=dict(type="bool", default=False),
        force=dict(type="bool", default=False),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    host = host_root.at_root()
    errors = slot_tables.validate(module.params)
    for option, directories in (("modprobe_conf", host.modprobe_dirs), ("modules_load_conf", host.modules_load_dirs)):
        error = owned_files.owned_path_error(option, module.params[option], directories, OWNED_PATH_MESSAGES)
        if error:
            errors.append(error)
    if errors:
        module.fail_json(msg="; ".join(errors))
    try:
        result = tuning_flow.run(module, steps(module, host, slot_table_plan.Request.from_params(module.params)), file_lock.locked)
    except slot_table_plan.PlanError as exc:
        module.fail_json(msg=str(exc), changed=False)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
