#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: saved_stats_bundle
short_description: Build a capture bundle, or a partial diagnosis, from NFS statistics files saved or pasted by hand
version_added: 0.2.0
description:
  - Reads a directory of files an operator saved during an incident and writes a capture bundle (C(docs/capture-bundle.md))
    that M(ckptio.nfs.diagnose_bundle) and the playbook C(ckptio.nfs.diagnose) diagnose as any other bundle.
  - Each file's kind is told from its content, never from its name. C(cat /proc/self/mountstats) (a line
    C(device ... mounted on ... with fstype nfs...)) is the client side and is required; C(cat /proc/net/rpc/nfsd)
    (C(rc), C(rpc), C(proc4ops) lines), C(nfsstat -s) output (its tables are turned back into the counters it
    printed) and C(cat /proc/fs/nfsd/pool_stats) are the server side.
  - Two mountstats snapshots are ordered by the mount's C(age:) (the older age is the later snapshot); two server
    snapshots by their counters (every shared counter rises). One mountstats snapshot is paired with zero counters of the
    same mount over its C(age:) - a since-mount average - and C(context.yml) says so, so the diagnosis flags its figures
    as since-mount averages, not a checkpoint window; server files are then not used (another window).
  - Refused, naming the file and why - snapshots of different mounts (device, fstype or any option such as
    C(clientaddr) differ), counters that went back between two snapshots (never averaged), the same age twice,
    a sample cut short. Files that cannot be used (C(nfsiostat) output is rates and makes no delta; C(nfsstat -c),
    C(mountstats) command output, a single server snapshot, unknown or empty files) fail the module unless
    O(skip_unusable=true).
  - Only the regular files directly in O(src) are read (or O(src) itself when it is a file); subdirectories and names
    starting with a dot are left alone. A symbolic link, a FIFO, a socket or a device in O(src) is listed in RV(unusable)
    with why, and never opened (a FIFO would block the read).
  - A paste's layout is undone before a file is told apart - CRLF, no-break spaces, every line (or every line below a
    label line) indented by spaces, no newline after the last line - and the repairs are noted; a clean file is used
    byte for byte.
  - With O(partial=true) every file is read for what it can show (C(docs/capture-bundle.md), What a paste can show) -
    nfsiostat and C(mountstats) command output, C(nfsstat -c)/C(-s), a lone C(/proc/net/rpc/nfsd) (its C(th) line
    on old kernels), C(pool_stats), C(opts:)/C(xprt:) lines cut out of mountstats, kernel logs (hung tasks and their
    stacks, server outages). Where the files make a bundle it is written as without O(partial); otherwise O(dest) gets
    C(diagnosis.json) and C(diagnosis.md) of a partial diagnosis in the bundle diagnosis' shape - the layers the paste
    speaks for, those it cannot see, a suspected limiting layer with a confidence, and the commands to capture next -
    and a C(context.yml) marking it as this module's. Only when no file tells anything does the module fail, naming
    each file, what it was taken for and why.
  - Runs on the controller (C(localhost)). Every file is written atomically and only when its content changes, so a
    second run with the same inputs reports no change. A file a previous run wrote and this run does not (another
    O(client) name, or the C(diagnosis.json) and C(diagnosis.md) of an earlier partial diagnosis when the files now make
    a bundle) is removed; only files this module wrote, by name, so any other file in O(dest) stays.
author:
  - ckptio.nfs contributors (@ckptio)
requirements:
  - PyYAML (to write C(context.yml))
options:
  src:
    description:
      - The directory of saved files, or one saved file.
      - Each is read only if it is a regular file (not a symbolic link) of at most 16 MiB; any other is
        listed as unusable, naming why and the cap.
    type: path
    required: true
  dest:
    description:
      - The bundle directory to write; created when missing.
      - An existing directory must be empty or a bundle this module wrote (its C(context.yml) has
        C(saved.written_by=ckptio.nfs.saved_stats_bundle)); anything else is refused and nothing is written.
      - Nothing is read, written or removed through a symbolic link inside it (a linked file or host
        directory is refused, naming it, before anything is written).
    type: path
    required: true
  mount_point:
    description:
      - The NFS mount the checkpoint writes to (C(context.yml) C(mount_point)).
      - Default is the one NFS mount point the snapshots hold; required when they hold several.
    type: str
  checkpoint_bytes:
    description:
      - The checkpoint's size for the target (C(context.yml) C(target.checkpoint_bytes)).
      - Required unless O(partial=true); without it (and O(window_seconds)) the diagnosis gives no verdict against a target.
    type: int
  window_seconds:
    description:
      - The time the checkpoint must fit in (C(context.yml) C(target.window_seconds)).
      - Required unless O(partial=true).
    type: float
  partial:
    description:
      - Read every file for what it can show and, when the files make no bundle, write a partial diagnosis instead of failing.
      - Files that cannot go into a bundle are then listed in RV(unusable) without failing, as with O(skip_unusable=true).
    type: bool
    default: false
  client:
    description: The client's name in the bundle (C(clients/CLIENT/)); one directory name.
    type: str
    default: client
  server:
    description: The server's name in the bundle (C(servers/SERVER/)); one directory name.
    type: str
    default: server
  label:
    description: The run's name (C(context.yml) C(label)).
    type: str
  server_link_gbps:
    description: The server's total NFS link speed (C(context.yml) C(network.server_link_gbps)); lets the diagnosis measure the network.
    type: float
  client_link_gbps:
    description: One client's link speed (C(context.yml) C(network.client_link_gbps)).
    type: float
  skip_unusable:
    description:
      - Build the bundle without the files that cannot be used, listing them in RV(unusable) and a warning.
      - When false, any such file fails the module, naming each file and why.
    type: bool
    default: false
extends_documentation_fragment:
  - ckptio.nfs.attributes
attributes:
  check_mode:
    support: full
    details: Reads and checks everything and returns what would be written (RV(changed_files), RV(removed)); writes nothing.
  diff_mode:
    support: full
    details: Shows the old and new content of every file that changes.
seealso:
  - module: ckptio.nfs.diagnose_bundle
  - module: ckptio.nfs.nfs_client_stats
  - module: ckptio.nfs.nfsd_stats
"""

EXAMPLES = r"""
- name: Build a bundle from the files saved during the incident
  ckptio.nfs.saved_stats_bundle:
    src: /srv/incident-42/saved
    dest: /srv/incident-42/bundle
    mount_point: /mnt/ckpt
    checkpoint_bytes: 2400000000000
    window_seconds: 300
    client: gpu017
    server: nfs01
  delegate_to: localhost

- name: Diagnose it
  ckptio.nfs.diagnose_bundle:
    bundle: /srv/incident-42/bundle
  delegate_to: localhost
"""

RETURN = r"""
dest:
  description: The bundle directory.
  returned: always
  type: str
window:
  description: C(snapshots) (two mountstats snapshots) or C(since_mount) (one snapshot against the mount's zero counters).
  returned: always
  type: str
  sample: since_mount
interval_seconds:
  description: The seconds the client figures cover (the age delta, or the mount's age).
  returned: always
  type: float
mount_point:
  description: The mount the bundle describes.
  returned: always
  type: str
sources:
  description: Each file used, C({file, kind, used_as}); C(used_as) is its path in the bundle.
  returned: always
  type: list
  elements: dict
unusable:
  description: Files not used, C({file, kind, reason}) (only with O(skip_unusable=true); otherwise the module fails).
  returned: always
  type: list
  elements: dict
notes:
  description: What the bundle's figures cover and what they lack (also in C(context.yml) C(saved.notes)).
  returned: always
  type: list
  elements: str
files:
  description: Every file of the bundle (absolute paths).
  returned: always
  type: list
  elements: str
changed_files:
  description: The files written (in check mode, that would be written).
  returned: always
  type: list
  elements: str
removed:
  description: Files a previous run wrote that this one does not, removed (in check mode, that would be removed).
  returned: always
  type: list
  elements: str
context:
  description: The content of C(context.yml).
  returned: always
  type: dict
readings:
  description:
    - With O(partial=true), per file C({file, kind, taken_for, can_show, window, layers, repairs, tells_nothing, signals});
      otherwise empty.
  returned: always
  type: list
  elements: dict
diagnosis:
  description:
    - The partial diagnosis written to C(diagnosis.json) (O(partial=true) and no bundle could be built), else null.
    - Its C(first_screen) is what C(ckptio.nfs.paste) prints; C(partial.capture_next) the commands to capture next.
  returned: always
  type: dict
readings_text:
  description: One line per file read with O(partial=true) - what it was taken for and what it showed, or why it tells nothing.
  returned: always
  type: list
  elements: str
no_bundle_reason:
  description: Why the files make no bundle (O(partial=true)), or null when a bundle was built.
  returned: always
  type: str
"""

import os
import stat

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_write
from ansible_collections.ckptio.nfs.plugins.module_utils.host.proc_text import json_safe, show_undecodable
from ansible_collections.ckptio.nfs.plugins.module_utils.paste import partial as paste_partial
from ansible_collections.ckptio.nfs.plugins.module_utils.paste import readings as paste_readings
from ansible_collections.ckptio.nfs.plugins.module_utils.paste import saved_files
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle_values import MAX_MAGNITUDE, BundleError, dump_json
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle import CONTEXT_FILE

ARGUMENT_SPEC = dict(
    src=dict(type="path", required=True),
    dest=dict(type="path", required=True),
    mount_point=dict(type="str"),
    checkpoint_bytes=dict(type="int"),
    window_seconds=dict(type="float"),
    client=dict(type="str", default="client"),
    server=dict(type="str", default="server"),
    label=dict(type="str"),
    server_link_gbps=dict(type="float"),
    client_link_gbps=dict(type="float"),
    skip_unusable=dict(type="bool", default=False),
    partial=dict(type="bool", default=False),
)


def _validate(module):
    """Every option checked before anything is read or written; the message names the option."""
    params = module.params
    for name in ("checkpoint_bytes", "window_seconds"):
        if params[name] is None and not params["partial"]:
            module.fail_json(msg="%s: required unless partial=true (the target the diagnosis judges against)" % name)
    for name in ("checkpoint_bytes", "window_seconds", "server_link_gbps", "client_link_gbps"):
        # The rule of a bundle's numbers (bundle_values): finite, and no larger than 2^63 (a 400-digit int overflows float()).
        if params[name] is not None and not 0 < params[name] <= MAX_MAGNITUDE:
            module.fail_json(msg="%s: must be a finite number above 0 and at most 2^63, got %s" % (name, _shown(params[name])))
    for name in ("client", "server"):
        if not saved_files.valid_host(params[name]):
            module.fail_json(msg="%s: %r must be one directory name (no '/', not '.' or '..')" % (name, params[name]))
    if params["mount_point"] is not None and not params["mount_point"].startswith("/"):
        module.fail_json(msg="mount_point: must be an absolute path, got %r" % params["mount_point"])
    if not os.path.isdir(params["src"]) and not os.path.isfile(params["src"]):
        module.fail_json(msg="src: %s is neither a directory nor a file" % params["src"])
    if os.path.lexists(params["dest"]) and not os.path.isdir(params["dest"]):
        module.fail_json(msg="dest: %s exists and is not a directory" % params["dest"])
    if os.path.realpath(params["src"]) == os.path.realpath(params["dest"]):
        module.fail_json(msg="dest: must be another directory than src (%s)" % params["src"])


def _shown(number):
    text = str(number)
    return text if len(text) <= 24 else "%s... (%d digits)" % (text[:24], len(text))


def _read_saved(module, src):
    """[(name, text)] of the saved files, and the unusable rows of those that cannot be read."""
    if not os.path.isdir(src):
        src, names, unreadable = os.path.dirname(src) or ".", [os.path.basename(src)], []
    else:
        try:
            names, unreadable = _saved_entries(src)
        except OSError as exc:
            module.fail_json(msg="src: %s cannot be listed (%s)" % (src, file_read.describe_error(exc)))
    files = []
    for name in names:
        # The one bounded reader: never through a symlink, regular files only, at most INPUT_LIMIT bytes.
        try:
            text = file_read.read(os.path.join(src, name))
        except file_read.FileRefused as exc:
            unreadable.append({"file": name, "kind": "refused", "reason": exc.strerror})
            continue
        except OSError:
            text = None
        if text is None:
            unreadable.append({"file": name, "kind": "unreadable", "reason": "cannot be read (permission, or it vanished)"})
        else:
            files.append((name, text))
    return files, unreadable


def _saved_entries(src):
    """([names of the regular files directly in src], [refused rows of its links and special files]).

    Told by lstat, so nothing is opened to find out: a FIFO opened for reading waits for a writer, a link may
    point anywhere (/dev/zero, another user's file). Subdirectories and dot-files are left alone (documented).
    A file that becomes something else before it is read is refused by read_input (O_NOFOLLOW|O_NONBLOCK).
    """
    names, refused = [], []
    for name in sorted(os.listdir(src)):
        if name.startswith("."):
            continue
        try:
            mode = os.lstat(os.path.join(src, name)).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISREG(mode):
            names.append(name)
        elif stat.S_ISLNK(mode):
            refused.append({"file": name, "kind": "refused", "reason": "is a symbolic link (to %s): not followed, it may point "
                            "outside src" % file_read.read_link(os.path.join(src, name))})
        elif not stat.S_ISDIR(mode):
            what = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                    else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
            refused.append({"file": name, "kind": "refused", "reason": "is %s, not a regular file: not opened" % what})
    return names, refused


def _target(params):
    return {"checkpoint_bytes": params["checkpoint_bytes"], "window_seconds": params["window_seconds"]}


def _network(params):
    return dict((key, params[key]) for key in ("server_link_gbps", "client_link_gbps") if params[key] is not None) or None


def _plan(module, files):
    """The bundle plan; with partial=true (None, why) when the files make no bundle, else it fails naming why."""
    params = module.params
    try:
        return saved_files.plan_bundle(files, _target(params), mount_point=params["mount_point"], client=params["client"],
                                       server=params["server"], label=params["label"], network=_network(params)), None
    except saved_files.SavedFilesError as exc:
        if params["partial"]:
            return None, str(exc)
        module.fail_json(msg=show_undecodable("src %s: %s; nothing was written" % (params["src"], exc)))


def _partial_plan(module, readings, why):
    """The partial diagnosis's files (context.yml, diagnosis.json, diagnosis.md); fails naming each file when none tells anything."""
    params = module.params
    diagnosis = paste_partial.partial_diagnosis(readings, _target(params), params["mount_point"])
    if diagnosis is None:
        module.fail_json(msg=show_undecodable("src %s: %s; nothing was written" % (params["src"], paste_partial.refusal(readings))),
                         readings=json_safe(paste_partial.files_table(readings)))
    diagnosis = json_safe(diagnosis)
    context = saved_files.partial_context(diagnosis, _target(params), params["label"], _network(params), why)
    try:
        # A time stamp beyond any float in a pasted kernel log makes an outage of inf - inf seconds: named, never a traceback.
        files = {saved_files.PARTIAL_JSON: dump_json(diagnosis, saved_files.PARTIAL_JSON, indent=2, sort_keys=True) + "\n",
                 saved_files.PARTIAL_MARKDOWN: paste_partial.render_markdown(diagnosis)}
    except BundleError as exc:
        module.fail_json(msg=show_undecodable("src %s: %s" % (params["src"], exc)), readings=json_safe(paste_partial.files_table(readings)))
    return {"files": files, "context": context, "window": None, "interval_seconds": None, "mount_point": diagnosis["mount_point"],
            "sources": [], "unusable": [], "notes": context["saved"]["notes"], "diagnosis": diagnosis}


def _dest_context(module, dest):
    """The text of dest's context.yml when a previous run of this module wrote it, else None (dest new or empty).

    Any other non-empty directory is refused: it is somebody's bundle or data, not ours to rewrite.
    """
    if not os.path.isdir(dest):
        return None
    context_yaml = _own_text(module, os.path.join(dest, CONTEXT_FILE), dest)
    if saved_files.written_here(context_yaml):
        return context_yaml
    if not file_read.is_empty_dir(dest):
        module.fail_json(msg="dest: %s is not empty and is not a bundle this module wrote (no %s with saved.written_by: %s); "
                             "nothing was written" % (dest, CONTEXT_FILE, saved_files.WRITER))
    return None


def _own_text(module, path, dest):
    """The text of a file of dest (None when absent), never through a symlink (at the name or a directory
    between dest and it) and only a regular file: anything else fails naming it, before anything is written."""
    try:
        return file_read.read(path, none_on=file_read.UNREADABLE, inside=dest)
    except file_read.FileRefused as exc:
        module.fail_json(msg="dest: %s; refusing to read or write through it, nothing was written" % exc, changed=False)


def _changes(module, dest, contents, stale):
    """([(path, old text or None, new text)] of the files whose bytes differ, [(path, old text)] to remove)."""
    writes = []
    for relative, text in contents:
        path = os.path.join(dest, relative)
        old = _own_text(module, path, dest)
        if old != text:
            writes.append((path, old, text))
    removes = [(os.path.join(dest, relative), _own_text(module, os.path.join(dest, relative), dest)) for relative in stale]
    return writes, [(path, old) for path, old in removes if old is not None]


def _apply(module, dest, writes, removes):
    """Write (context.yml first: a run cut short leaves a bundle the next run may rewrite), then remove.

    Inside dest only: file_read and file_write never follow a link there (inside=dest)."""
    for index, (path, _old, text) in enumerate(writes):
        try:
            file_write.write_file(module, path, text, make_parent=True, inside=dest)
        except OSError as exc:
            module.fail_json(msg="dest: cannot write %s (%s)" % (path, file_read.describe_error(exc)), changed=index > 0)
    for path, _old in removes:
        try:
            file_write.remove_file(module, path, inside=dest)
        except OSError as exc:
            module.fail_json(msg="dest: cannot remove %s (%s)" % (path, file_read.describe_error(exc)), changed=True)
        file_write.remove_empty_dir(module, os.path.dirname(path))


def _verify(module, dest, writes):
    """Every file written holds the planned bytes."""
    for path, _old, text in writes:
        if _own_text(module, path, dest) != text:
            module.fail_json(msg="dest: %s does not hold what was written (changed by something else?)" % path, changed=True)


def _diff(writes, removes):
    return ([{"before": old or "", "after": text, "before_header": path, "after_header": path} for path, old, text in writes]
            + [{"before": old, "after": "", "before_header": path, "after_header": "%s (removed)" % path} for path, old in removes])


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    if not saved_files.HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML"))
    _validate(module)
    dest = os.path.abspath(module.params["dest"])
    files, unreadable = _read_saved(module, module.params["src"])
    plan, why = _plan(module, files)
    readings = []
    if module.params["partial"]:
        readings = [paste_readings.read_file(name, text) for name, text in files] + [
            paste_readings.unread(row["file"], row["kind"], row["reason"]) for row in unreadable]
        readings += paste_readings.pair_readings(readings)
        if plan is None:
            plan = _partial_plan(module, readings, why)
    unusable = sorted(plan["unusable"] + unreadable, key=lambda row: row["file"])
    if unusable and not (module.params["skip_unusable"] or module.params["partial"]):
        module.fail_json(msg=show_undecodable("src %s: %d file(s) cannot be used (skip_unusable=true builds the bundle without "
                                              "them); nothing was written: %s" % (
                                                  module.params["src"], len(unusable),
                                                  "; ".join("%s: %s: %s" % (row["file"], saved_files.KINDS.get(row["kind"], row["kind"]),
                                                                            row["reason"]) for row in unusable))),
                         unusable=json_safe(unusable))
    old_context = _dest_context(module, dest)
    contents = [(CONTEXT_FILE, saved_files.context_text(plan["context"]))] + sorted(plan["files"].items())
    writes, removes = _changes(module, dest, contents, saved_files.stale_files(old_context, set(plan["files"]) | {CONTEXT_FILE}))
    if not module.check_mode:
        _apply(module, dest, writes, removes)
        _verify(module, dest, writes)
    for row in unusable:
        module.warn(show_undecodable("%s not used (%s): %s" % (row["file"], saved_files.KINDS.get(row["kind"], row["kind"]), row["reason"])))
    result = dict(changed=bool(writes or removes), dest=dest, window=plan["window"], interval_seconds=plan["interval_seconds"],
                  mount_point=plan["mount_point"], sources=plan["sources"], unusable=unusable, notes=plan["notes"],
                  files=[os.path.join(dest, relative) for relative, _text in contents],
                  changed_files=[path for path, _old, _text in writes], removed=[path for path, _old in removes],
                  context=plan["context"], readings=paste_partial.files_table(readings), diagnosis=plan.get("diagnosis"),
                  readings_text=paste_partial.file_lines(readings),
                  no_bundle_reason=why)
    if module._diff:
        result["diff"] = _diff(writes, removes)
    module.exit_json(**json_safe(result))


if __name__ == "__main__":
    main()
