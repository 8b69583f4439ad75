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
attributes:
  check_mode:
    description: Reports what would change; writes no file and no live value, loads no kernel module.
    support: full
  diff_mode:
    description: Shows each file before and after, and the live values before and after.
    support: full
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
  description: Backup of O(modprobe_conf) made before changing it.
  returned: when backup is true and the file changed
  type: str
backup_files:
  description: Every backup made (modprobe.d and modules-load.d).
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ckptio.nfs.plugins.module_utils.host import atomic_file
from ansible_collections.ckptio.nfs.plugins.module_utils.config import modprobe_conf
from ansible_collections.ckptio.nfs.plugins.module_utils.config import mountinfo
from ansible_collections.ckptio.nfs.plugins.module_utils.config import slot_tables

PROC_SUNRPC = "/proc/sys/sunrpc"
SYS_MODULE = "/sys/module"
MOUNTINFO = "/proc/self/mountinfo"
# kmod's search order (libkmod-config.c): a file name in an earlier directory hides later ones.
MODPROBE_DIRS = ("/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d", "/usr/lib/modprobe.d", "/lib/modprobe.d")
MODULES_LOAD_DIRS = ("/etc/modules-load.d", "/run/modules-load.d", "/usr/local/lib/modules-load.d", "/usr/lib/modules-load.d", "/lib/modules-load.d")

HEADER = "# Managed by ckptio.nfs.sunrpc_slot_table: NFS client RPC slot tables.\n"
SAFE_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def validate_owned_path(option, path, directories):
    """Error text when path is not a .conf file kmod/systemd would read, else None."""
    if not path or not os.path.isabs(path):
        return "%s must be an absolute path, got %r" % (option, path)
    name = os.path.basename(path)
    if not name.endswith(".conf") or name.startswith(".") or not set(name) <= SAFE_NAME_CHARS:
        return "%s must name a .conf file made of letters, digits, '.', '_' and '-', got %r" % (option, path)
    if os.path.dirname(os.path.normpath(path)) not in [os.path.normpath(d) for d in directories]:
        return "%s must be directly in one of %s (nothing else is read at module load), got %r" % (
            option, ", ".join(directories), path)
    return None


class SlotTables:
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.check_mode = module.check_mode
        self.warnings = []
        self.diff = []
        self.backups = []
        self.changed = False

    # live state -------------------------------------------------------------------------
    @staticmethod
    def kmod_loaded(kmod):
        if kmod == "sunrpc" and os.path.isdir(PROC_SUNRPC):
            return True
        return os.path.isdir(os.path.join(SYS_MODULE, kmod, "parameters"))

    @staticmethod
    def live_paths(option):
        kmod, parameter = slot_tables.KERNEL_PARAMETER[option]
        paths = []
        if kmod == "sunrpc":
            paths.append(os.path.join(PROC_SUNRPC, parameter))
        paths.append(os.path.join(SYS_MODULE, kmod, "parameters", parameter))
        return paths

    def read_live(self):
        values = {}
        for option in slot_tables.ALL_OPTIONS:
            values[option] = None
            for path in self.live_paths(option):
                # A directory or an unreadable file here is a broken host: say which, no traceback.
                value = slot_tables.parse_int(atomic_file.read_text_or_fail(self.module, path))
                if value is not None:
                    values[option] = value
                    break
        return values

    def write_live(self, option, value):
        """Write one live value; return an error string or None."""
        errors = []
        for path in self.live_paths(option):
            if not os.path.exists(path):
                continue
            try:
                with open(path, "w") as handle:
                    handle.write("%d\n" % value)
                return None
            except OSError as exc:
                errors.append("%s: %s" % (path, exc))
        return "; ".join(errors) or "no writable file for %s" % option

    def load(self, kmod):
        """modprobe kmod; return an error string or None."""
        modprobe = self.module.get_bin_path("modprobe")
        if not modprobe:
            return "%s is not loaded and modprobe was not found" % kmod
        rc, out, err = self.module.run_command([modprobe, kmod])
        if rc != 0 or not self.kmod_loaded(kmod):
            detail = (err or out or "rc=%d" % rc).strip()
            return "%s is not loaded and 'modprobe %s' failed: %s" % (kmod, kmod, detail)
        self.changed = True
        return None

    # files ------------------------------------------------------------------------------
    def modprobe_files(self, own_path, own_text):
        listing = []
        for directory in MODPROBE_DIRS:
            try:
                listing.append((directory, sorted(os.listdir(directory))))
            except OSError:
                continue
        own_name = os.path.basename(own_path)
        if own_text is not None and not any(own_name in names for _d, names in listing):
            listing.append((os.path.dirname(own_path), [own_name]))
        files = []
        for path in modprobe_conf.config_order(listing):
            if os.path.normpath(path) == os.path.normpath(own_path):
                if own_text is not None:
                    files.append((path, own_text))
                continue
            text = atomic_file.read_text_or_fail(self.module, path)
            if text is not None:
                files.append((path, text))
        return files

    def write_file(self, path, before, after):
        """Atomically replace (or with after=None remove) path; record diff, backup, changed."""
        if before == after:
            return
        self.changed = True
        if self.module._diff:
            self.diff.append({"before": before or "", "after": after or "",
                              "before_header": path, "after_header": path})
        if self.check_mode:
            return
        try:
            if after is None:
                backup_file = atomic_file.remove_file(self.module, path, backup=self.params["backup"])
            else:
                backup_file = atomic_file.write_file(self.module, path, after, backup=self.params["backup"], make_parent=True)
        except OSError as exc:
            self.module.fail_json(msg="could not %s %s (the old file is untouched): %s"
                                  % ("remove" if after is None else "write", path, atomic_file.describe_error(exc)),
                                  changed=False)
        if backup_file:
            self.backups.append(backup_file)

    # the run ----------------------------------------------------------------------------
    def run(self):
        params = self.params
        present = params["state"] == "present"
        given = dict((option, params[option]) for option in slot_tables.ALL_OPTIONS if params[option] is not None)
        managed = list(given) if (given or present) else list(slot_tables.ALL_OPTIONS)
        live_before = self.read_live()

        modprobe_path = params["modprobe_conf"]
        load_path = params["modules_load_conf"]
        # Read, plan and write both files under their locks (always in this order, so two runs
        # cannot deadlock): a parallel run would otherwise plan from the same old files.
        with atomic_file.locked(self.module, modprobe_path), atomic_file.locked(self.module, load_path):
            modprobe_before = atomic_file.read_text_or_fail(self.module, modprobe_path)
            load_before = atomic_file.read_text_or_fail(self.module, load_path)

            # Plan the files first: for state=absent the rollback target is what remains persisted.
            modprobe_after, load_after = modprobe_before, load_before
            if params["persist"] or not present:
                modprobe_after, load_after = self.plan_files(present, given, managed, modprobe_before, load_before)
            self.refuse_foreign_edit("modprobe_conf", modprobe_path, modprobe_before, modprobe_after)
            self.refuse_foreign_edit("modules_load_conf", load_path, load_before, load_after)

            files_after = self.modprobe_files(modprobe_path, modprobe_after)
            effective_after = self.effective(files_after)
            if present:
                wanted = given
            else:
                wanted = dict((option, effective_after.get(option, slot_tables.KERNEL_DEFAULTS[option])) for option in managed)
            self.warnings.extend(slot_tables.cap_warnings(wanted))
            self.warnings.extend(self.install_warnings(files_after))
            conflicts = self.conflicts(files_after, modprobe_path, wanted)

            self.write_file(modprobe_path, modprobe_before, modprobe_after)
            self.write_file(load_path, load_before, load_after)

        live_after, applied, reason = self.apply_live(wanted, live_before)

        mounts = mountinfo.nfs_mounts(mountinfo.parse_mountinfo(atomic_file.read_text(MOUNTINFO) or ""))
        changing = set(option for option, value in wanted.items() if live_before.get(option) != value)
        pending, session_mounts = slot_tables.classify_mounts(mounts, changing, mountinfo.nfs_server_of, mountinfo.nfs_version_of)
        advice = ""
        if session_mounts or "tcp_max_slot_table_entries" in wanted:
            advice = slot_tables.V41_ADVICE
        if session_mounts and "tcp_max_slot_table_entries" in given:
            self.warnings.append(
                "%d NFSv4.1+ mount(s) ignore tcp_max_slot_table_entries; set nfs_max_session_slots for them"
                % len(session_mounts))
        if pending:
            self.warnings.append("%d NFS mount(s) keep the old slot table until remounted: see mounts_pending_remount" % len(pending))

        if self.module._diff and live_after != live_before:
            shown_before = dict((option, live_before.get(option)) for option in wanted)
            shown_after = dict((option, live_after.get(option)) for option in wanted)
            if shown_before != shown_after:
                self.diff.append({"before": slot_tables.render_values(shown_before),
                                  "after": slot_tables.render_values(shown_after),
                                  "before_header": "live: sunrpc/nfs slot tables",
                                  "after_header": "live: sunrpc/nfs slot tables"})

        # In check mode nothing changed: the audit table shows the state as it is now.
        persisted_now = self.effective(self.modprobe_files(modprobe_path, modprobe_before)) if self.check_mode else effective_after
        live_now = live_before if self.check_mode else live_after
        # After the run: modprobe may have loaded a module, and check mode loads none.
        not_loaded = [option for option in wanted if not self.kmod_loaded(slot_tables.KERNEL_PARAMETER[option][0])]
        settings = slot_tables.settings_rows(wanted, persisted_now, live_now,
                                             check_persisted=params["persist"] or not present,
                                             check_live=params["apply_live"], not_loaded=not_loaded,
                                             unset_is_default=not present)
        for warning in self.warnings:
            self.module.warn(warning)
        result = {
            "changed": self.changed,
            "live_before": live_before,
            "live_after": live_after,
            "live_applied": applied,
            "live_not_applied_reason": reason,
            "persisted": self.own_values(modprobe_after),
            "effective_persisted": effective_after,
            "modprobe_conflicts": conflicts,
            "mounts_pending_remount": pending,
            "session_slot_mounts": session_mounts,
            "settings": settings,
            "advice": advice,
            "backup_files": self.backups,
        }
        if self.backups:
            result["backup_file"] = self.backups[0]
        if self.module._diff:
            result["diff"] = self.diff
        return result

    def refuse_foreign_edit(self, option, path, before, after):
        """Fail when state=absent would delete or edit a file without our header, unless force.

        Such a file was written by the site (or by hand) under our file name: its values are
        theirs, and removing them is a decision for a human (issue 12).
        """
        if self.params["state"] != "absent" or before is None or before == after or self.params["force"]:
            return
        if HEADER.rstrip("\n") in before.splitlines():
            return
        action = "delete it" if after is None else "remove values from it"
        self.module.fail_json(
            msg="%s: %s was not written by this module (it has no %r line); state=absent would %s, so nothing "
                "was changed. Set force: true to %s anyway." % (option, path, HEADER.rstrip("\n"), action, action),
            changed=False)

    @staticmethod
    def install_warnings(files):
        """One warning per `install sunrpc|nfs ...` line: it replaces the plain module load."""
        warnings = []
        for kmod in ("sunrpc", "nfs"):
            for path, text in files:
                for command in modprobe_conf.install_commands(text, kmod):
                    given = ", ".join("%s=%s" % item for item in sorted(command["options"].items()))
                    warnings.append(
                        "%s line %d: 'install %s %s' makes modprobe run that command instead of loading %s; "
                        "options lines reach the module only if the command passes them on ($CMDLINE_OPTS), and "
                        "parameters on its own command line%s override them (modprobe.d(5))"
                        % (path, command["line"], kmod, command["command"], kmod, " (%s)" % given if given else ""))
        return warnings

    def plan_files(self, present, given, managed, modprobe_before, load_before):
        grouped = slot_tables.parameters_by_module(given)
        if present:
            text = modprobe_before if modprobe_before is not None else HEADER
            for kmod in ("sunrpc", "nfs"):
                if kmod in grouped:
                    text = modprobe_conf.set_options(text, kmod, grouped[kmod])
            load_after = load_before
            if "sunrpc" in grouped:
                load_after = modprobe_conf.ensure_listed(load_before if load_before is not None else HEADER, "sunrpc")
            return text, load_after
        if modprobe_before is None:
            text = None
        else:
            text = modprobe_before
            for option in managed:
                kmod, parameter = slot_tables.KERNEL_PARAMETER[option]
                text = modprobe_conf.remove_options(text, kmod, [parameter])
            if not modprobe_conf.has_directives(text):
                text = None
        load_after = load_before
        still_sunrpc = text is not None and modprobe_conf.options_entries(text, "sunrpc")
        if load_before is not None and not still_sunrpc:
            load_after = modprobe_conf.remove_listed(load_before, "sunrpc")
            if not modprobe_conf.listed_modules(load_after):
                load_after = None
        return text, load_after

    @staticmethod
    def effective(files):
        values = {}
        for option in slot_tables.ALL_OPTIONS:
            kmod, parameter = slot_tables.KERNEL_PARAMETER[option]
            entry = modprobe_conf.effective_options(files, kmod).get(parameter)
            if entry is not None:
                values[option] = slot_tables.parse_int(entry["value"])
        return values

    @staticmethod
    def own_values(text):
        if text is None:
            return {}
        return SlotTables.effective([("own", text)])

    @staticmethod
    def conflicts(files, own_path, wanted):
        rows = []
        for option, value in wanted.items():
            kmod, parameter = slot_tables.KERNEL_PARAMETER[option]
            every = []
            for path, text in files:
                every.extend((path, entry) for entry in modprobe_conf.options_entries(text, kmod) if entry["name"] == parameter)
            install_path, command = modprobe_conf.first_install_command(files, kmod)
            if command is not None and parameter in command["options"]:
                # Given on the install command line: applied after every options line.
                every.append((install_path, {"name": parameter, "value": command["options"][parameter]}))
            for position, (path, entry) in enumerate(every):
                if os.path.normpath(path) == os.path.normpath(own_path) or slot_tables.parse_int(entry["value"]) == value:
                    continue
                rows.append({"path": path, "name": parameter, "value": entry["value"],
                             "overrides_ours": position == len(every) - 1})
        return rows

    def apply_live(self, wanted, live_before):
        """Return (live_after, applied, reason); live_after is the planned state in check mode."""
        params = self.params
        if not params["apply_live"]:
            applied = all(live_before.get(o) == v for o, v in wanted.items())
            return dict(live_before), applied, "" if applied else "apply_live is false"
        present = params["state"] == "present"
        errors = []
        planned = dict(live_before)
        for kmod in ("sunrpc", "nfs"):
            options = [option for option in wanted if slot_tables.KERNEL_PARAMETER[option][0] == kmod]
            if not options:
                continue
            if not self.kmod_loaded(kmod):
                if not present:
                    # Nothing runs with our values; the defaults apply when the module loads.
                    continue
                if self.check_mode:
                    errors.append("check mode: %s is not loaded; would run 'modprobe %s'" % (kmod, kmod))
                    continue
                error = self.load(kmod)
                if error:
                    errors.append(error)
                    continue
                loaded_values = self.read_live()
                for option in options:
                    live_before_load = loaded_values.get(option)
                    planned[option] = live_before_load
            for option in options:
                if planned.get(option) == wanted[option]:
                    continue
                if self.check_mode:
                    planned[option] = wanted[option]
                    continue
                error = self.write_live(option, wanted[option])
                if error:
                    errors.append("%s: %s" % (option, error))
                else:
                    self.changed = True
        if self.check_mode:
            applied = False if errors else all(live_before.get(o) == v for o, v in wanted.items())
            if not applied and not errors:
                errors.append("check mode: live values not written")
            return planned, applied, "; ".join(errors)
        live_after = self.read_live()
        mismatched = ["%s is %s, wanted %s" % (o, live_after.get(o), v) for o, v in wanted.items() if live_after.get(o) != v]
        if mismatched and not errors:
            if not present:
                errors.append("module not loaded; its defaults apply when it loads")
            else:
                errors.append("kernel kept other values: " + ", ".join(mismatched))
        return live_after, not mismatched, "; ".join(errors)


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
    errors = slot_tables.validate(module.params)
    for option, directories in (("modprobe_conf", MODPROBE_DIRS), ("modules_load_conf", MODULES_LOAD_DIRS)):
        error = validate_owned_path(option, module.params[option], directories)
        if error:
            errors.append(error)
    if errors:
        module.fail_json(msg="; ".join(errors))
    module.exit_json(**SlotTables(module).run())


if __name__ == "__main__":
    main()
