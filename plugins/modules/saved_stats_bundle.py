#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: saved_stats_bundle
short_description: Build a capture bundle from NFS statistics files saved by hand
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
  - Only the regular files directly in O(src) are read; subdirectories and names starting with a dot are left alone.
  - Runs on the controller (C(localhost)). Every file is written atomically and only when its content changes, so a
    second run with the same inputs reports no change. A file a previous run wrote and this run does not (another
    O(client) name) is removed.
author:
  - ckptio.nfs contributors (@ckptio)
requirements:
  - PyYAML (to write C(context.yml))
options:
  src:
    description:
      - The directory of saved files.
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
    description: The checkpoint's size for the target (C(context.yml) C(target.checkpoint_bytes)).
    type: int
    required: true
  window_seconds:
    description: The time the checkpoint must fit in (C(context.yml) C(target.window_seconds)).
    type: float
    required: true
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
"""

import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.ckptio.nfs.plugins.module_utils.host import atomic_file
from ansible_collections.ckptio.nfs.plugins.module_utils.host.proc_text import json_safe, show_undecodable
from ansible_collections.ckptio.nfs.plugins.module_utils.stats import saved_files
from ansible_collections.ckptio.nfs.plugins.module_utils.stats.bundle import CONTEXT_FILE

ARGUMENT_SPEC = dict(
    src=dict(type="path", required=True),
    dest=dict(type="path", required=True),
    mount_point=dict(type="str"),
    checkpoint_bytes=dict(type="int", required=True),
    window_seconds=dict(type="float", required=True),
    client=dict(type="str", default="client"),
    server=dict(type="str", default="server"),
    label=dict(type="str"),
    server_link_gbps=dict(type="float"),
    client_link_gbps=dict(type="float"),
    skip_unusable=dict(type="bool", default=False),
)


def _validate(module):
    """Every option checked before anything is read or written; the message names the option."""
    params = module.params
    for name in ("checkpoint_bytes", "window_seconds", "server_link_gbps", "client_link_gbps"):
        if params[name] is not None and not params[name] > 0:
            module.fail_json(msg="%s: must be a number above 0, got %s" % (name, params[name]))
    for name in ("client", "server"):
        if not saved_files.valid_host(params[name]):
            module.fail_json(msg="%s: %r must be one directory name (no '/', not '.' or '..')" % (name, params[name]))
    if params["mount_point"] is not None and not params["mount_point"].startswith("/"):
        module.fail_json(msg="mount_point: must be an absolute path, got %r" % params["mount_point"])
    if not os.path.isdir(params["src"]):
        module.fail_json(msg="src: %s is not a directory" % params["src"])
    if os.path.lexists(params["dest"]) and not os.path.isdir(params["dest"]):
        module.fail_json(msg="dest: %s exists and is not a directory" % params["dest"])
    if os.path.realpath(params["src"]) == os.path.realpath(params["dest"]):
        module.fail_json(msg="dest: must be another directory than src (%s)" % params["src"])


def _read_saved(module, src):
    """[(name, text)] of the saved files, and the unusable rows of those that cannot be read."""
    try:
        names = atomic_file.regular_files(src)
    except OSError as exc:
        module.fail_json(msg="src: %s cannot be listed (%s)" % (src, atomic_file.describe_error(exc)))
    files, unreadable = [], []
    for name in names:
        # The one bounded reader: never through a symlink, regular files only, at most INPUT_LIMIT bytes.
        try:
            text = atomic_file.read_input(os.path.join(src, name))
        except atomic_file.FileRefused as exc:
            unreadable.append({"file": name, "kind": "refused", "reason": exc.strerror})
            continue
        except OSError:
            text = None
        if text is None:
            unreadable.append({"file": name, "kind": "unreadable", "reason": "cannot be read (permission, or it vanished)"})
        else:
            files.append((name, text))
    return files, unreadable


def _plan(module, files):
    params = module.params
    network = dict((key, params[key]) for key in ("server_link_gbps", "client_link_gbps") if params[key] is not None)
    try:
        return saved_files.plan_bundle(
            files, {"checkpoint_bytes": params["checkpoint_bytes"], "window_seconds": params["window_seconds"]},
            mount_point=params["mount_point"], client=params["client"], server=params["server"], label=params["label"],
            network=network or None)
    except saved_files.SavedFilesError as exc:
        module.fail_json(msg=show_undecodable("src %s: %s; nothing was written" % (params["src"], exc)))


def _dest_context(module, dest):
    """The text of dest's context.yml when a previous run of this module wrote it, else None (dest new or empty).

    Any other non-empty directory is refused: it is somebody's bundle or data, not ours to rewrite.
    """
    if not os.path.isdir(dest):
        return None
    context_yaml = _own_text(module, os.path.join(dest, CONTEXT_FILE), dest)
    if saved_files.written_here(context_yaml):
        return context_yaml
    if not atomic_file.is_empty_dir(dest):
        module.fail_json(msg="dest: %s is not empty and is not a bundle this module wrote (no %s with saved.written_by: %s); "
                             "nothing was written" % (dest, CONTEXT_FILE, saved_files.WRITER))
    return None


def _own_text(module, path, dest):
    """The text of a file of dest (None when absent), never through a symlink (at the name or a directory
    between dest and it) and only a regular file: anything else fails naming it, before anything is written."""
    try:
        return atomic_file.read_own(path, inside=dest)
    except atomic_file.FileRefused as exc:
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

    Inside dest only: atomic_file never follows a link there (inside=dest)."""
    for index, (path, _old, text) in enumerate(writes):
        try:
            atomic_file.write_file(module, path, text, make_parent=True, inside=dest)
        except OSError as exc:
            module.fail_json(msg="dest: cannot write %s (%s)" % (path, atomic_file.describe_error(exc)), changed=index > 0)
    for path, _old in removes:
        try:
            atomic_file.remove_file(module, path, inside=dest)
        except OSError as exc:
            module.fail_json(msg="dest: cannot remove %s (%s)" % (path, atomic_file.describe_error(exc)), changed=True)
        atomic_file.remove_empty_dir(module, os.path.dirname(path))


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
    plan = _plan(module, files)
    unusable = sorted(plan["unusable"] + unreadable, key=lambda row: row["file"])
    if unusable and not module.params["skip_unusable"]:
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
                  context=plan["context"])
    if module._diff:
        result["diff"] = _diff(writes, removes)
    module.exit_json(**json_safe(result))


if __name__ == "__main__":
    main()
