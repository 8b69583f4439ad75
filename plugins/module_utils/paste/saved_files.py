# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files an operator saved by hand during an incident, turned into a capture bundle. Pure: text in, files out.

During a stall people save `cat /proc/self/mountstats`, `cat /proc/net/rpc/nfsd` or `nfsstat -s`,
`cat /proc/fs/nfsd/pool_stats` and `nfsiostat` output under whatever names come to mind. This
module tells each file's kind from its content (classify), orders two snapshots of one kind by
their counters (the mount's `age:`, the server's totals), never by file name, builds the zero
"before" of a single mountstats snapshot (a since-mount average over the mount's age) and the
bundle's context.yml, whose `saved` block records where every file came from and which window
the figures cover. The module ckptio.nfs.saved_stats_bundle does the I/O; docs/capture-bundle.md
("From files saved by hand") says what each kind gives and what it cannot.

File names in the bundle come from bundle.py's table; the mountstats format from mountstats.py
(since_mount_sample), the delta and its capture problems from stats_delta.py, the nfsd formats
from nfsd_stats.py.
"""

from __future__ import annotations

import posixpath

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import layout as paste_layout, recognise
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle, bundle_part
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle_values
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import iter_mountstats, since_mount_sample
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.nfsd_stats import (
    nfsd_text_from_nfsstat,
    parse_nfsd_stats,
    parse_pool_stats,
)
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.stats_delta import mountstats_delta

HAS_YAML = bundle_values.HAS_YAML

WRITER = "ckptio.nfs.saved_stats_bundle"
WINDOW_SNAPSHOTS = "snapshots"
WINDOW_SINCE_MOUNT = "since_mount"
# A partial diagnosis's context.yml says `saved.window: paste`; its files beside it are these two.
WINDOW_PASTE = "paste"
PARTIAL_JSON = "diagnosis.json"
PARTIAL_MARKDOWN = "diagnosis.md"

# What each kind is, as messages and the `saved.files` block name it (the one recogniser's table).
KINDS = recognise.KINDS
# Kinds that never go into a bundle, and why (what the operator can do instead).
UNUSABLE = {
    "nfsiostat": "per-mount rates (ops/s, kB/s, avg RTT, exe and queue ms) over nfsiostat's own interval, not counters: "
                 "rates cannot be turned back into counters, so it makes no before/after delta. Its avg RTT and exe per op "
                 "follow the definitions the diagnosis uses (its first report is the since-mount average): compare them "
                 "by eye with diagnosis.md; for the bundle save `cat /proc/self/mountstats`",
    "nfsstat_client": "client totals over every mount, without per-mount op times or transport counters: "
                      "save `cat /proc/self/mountstats` on the client instead",
    "mountstats_report": "averages the mountstats command already computed, without the raw counters: "
                         "save `cat /proc/self/mountstats` instead",
    "mountstats_lines": "lines cut out of a mountstats block, without its device line and counters of a whole mount: "
                        "save the whole `cat /proc/self/mountstats` instead (partial=true reads them)",
    "nfsstat_mounts": "mount options only, no counters (partial=true reads them)",
    "rpc_nfs": "the client's totals over every mount, without per-mount op times or transport counters: "
               "save `cat /proc/self/mountstats` on the client instead",
    "kernel_log": "a kernel log holds no counters (partial=true reads what blocked tasks waited on)",
    "empty": "the file is empty",
    "unknown": "not a kind this module recognises by content (it reads /proc/self/mountstats, /proc/net/rpc/nfsd, "
               "nfsstat -s and /proc/fs/nfsd/pool_stats; nfsiostat, nfsstat -c, mountstats output, mountstats lines and "
               "kernel logs are named and refused, and read with partial=true)",
}


class SavedFilesError(ValueError):
    """The files cannot make a bundle (mixed mounts, counters reset, no mountstats); the message says which and why."""


def classify(text):
    """The kind of one saved file, from its content (KINDS keys), its layout repaired first (paste/layout.py)."""
    return recognise.kind_of(paste_layout.clean(text).text)


def plan_bundle(files, target, mount_point=None, client="client", server="server", label=None, network=None):
    """The bundle the saved files make.

    files: [(file name, text)]; target: {"checkpoint_bytes", "window_seconds"}. Returns
    {"files": {relative path: text}, "context": dict, "window", "interval_seconds", "mount_point",
    "sources": [{file, kind, used_as}], "unusable": [{file, kind, reason}], "notes": [...]}.
    Files that cannot be used are listed in `unusable` (the caller decides whether that stops
    it); SavedFilesError when the rest cannot make a bundle.
    """
    by_kind = {}
    unusable = []
    notes = []
    for name, text in files:
        # A paste's layout (CRLF, no-break spaces, indentation, no final newline) undone; a clean file is kept verbatim.
        cleaned = paste_layout.clean(text)
        kind = recognise.kind_of(cleaned.text)
        if kind in UNUSABLE:
            unusable.append({"file": name, "kind": kind, "reason": UNUSABLE[kind]})
        else:
            by_kind.setdefault(kind, []).append((name, cleaned.text))
            if cleaned.repairs:
                notes.append("%s: layout repaired (%s)" % (name, ", ".join(cleaned.repairs)))
    pair = client_pair(by_kind.get("mountstats", []), mount_point)
    server_files = server_snapshots(by_kind, unusable)
    if pair["window"] == WINDOW_SINCE_MOUNT:
        reason = ("one mountstats snapshot gives averages since the mount; server counters cover another window and "
                  "cannot be set beside them: save a second mountstats snapshot with the server's")
        unusable.extend({"file": name, "kind": kind, "reason": reason} for name, kind, _text in server_files["nfsd"] + server_files["pool_stats"])
        server_part = None
    else:
        server_part = server_pair(server_files, unusable, notes)
    layout = _bundle_files(pair, server_part, client, server)
    context = _context(pair, server_part, layout, target, label, network, notes, client, server)
    return {"files": dict((path, text) for path, (text, _source) in layout.items()), "context": context,
            "window": pair["window"], "interval_seconds": pair["seconds"], "mount_point": pair["mount_point"],
            "sources": sorted(({"file": name, "kind": kind, "used_as": path} for path, (_text, (name, kind)) in layout.items()
                               if name is not None), key=lambda row: row["used_as"]),
            "unusable": sorted(unusable, key=lambda row: row["file"]), "notes": notes}


# ---------------------------------------------------------------- the client: one or two mountstats snapshots

def client_pair(snapshots, mount_point=None):
    """{"before": (name or None, text), "after": (name, text), "window", "seconds", "mount_point", "device"}.

    Two snapshots are ordered by the mount's `age:` (seconds since it was mounted); one is paired
    with since_mount_sample() over its age. SavedFilesError for anything else.
    """
    if not snapshots:
        raise SavedFilesError("no /proc/self/mountstats snapshot among the files: the client side is required "
                              "(save `cat /proc/self/mountstats` on the client, twice: before and after)")
    if len(snapshots) > 2:
        raise SavedFilesError("%d mountstats snapshots (%s): give one (a since-mount average) or two (before and after) "
                              "of one client, one client per src directory" % (len(snapshots), ", ".join(name for name, _text in snapshots)))
    mount_point = _mount_point(snapshots, mount_point)
    mounts = [(name, text, _diagnosed_block(name, text, mount_point)) for name, text in snapshots]
    if len(mounts) == 1:
        return _since_mount(mounts[0], mount_point)
    return _snapshot_pair(mounts, mount_point)


def _mount_point(snapshots, mount_point):
    """mount_point, or the one NFS mount point the snapshots hold."""
    if mount_point:
        return mount_point
    points = sorted(set(mount.mount_point for _name, text in snapshots for mount in iter_mountstats(text)))
    if len(points) == 1:
        return points[0]
    raise SavedFilesError("mount_point: the snapshots hold NFS mounts on %s: set mount_point to the one the checkpoint "
                          "writes to" % (", ".join(points) or "no path"))


def _diagnosed_block(name, text, mount_point):
    """The NFS block the diagnosis reads: the last on the path (the mount on top)."""
    blocks = [mount for mount in iter_mountstats(text) if mount.mount_point == mount_point]
    if not blocks:
        held = sorted(set(mount.mount_point for mount in iter_mountstats(text)))
        raise SavedFilesError("%s holds no NFS mount on mount_point %s (it has: %s)" % (name, mount_point, ", ".join(held) or "no NFS mount"))
    if blocks[-1].truncated:
        raise SavedFilesError("%s: the mount on %s is cut short (%s)" % (name, mount_point, blocks[-1].truncated))
    if blocks[-1].age is None:
        raise SavedFilesError("%s: the mount on %s has no age: line" % (name, mount_point))
    return blocks[-1]


def _since_mount(snapshot, mount_point):
    name, text, mount = snapshot
    if mount.age <= 0:
        raise SavedFilesError("%s: the mount on %s is %d s old: no time to average over" % (name, mount_point, mount.age))
    zero = since_mount_sample(text)
    _usable_delta(text, zero, mount_point, "%s against zero counters" % name)
    return {"before": (None, zero), "after": (name, text), "window": WINDOW_SINCE_MOUNT, "seconds": float(mount.age),
            "mount_point": mount_point, "device": mount.device}


def _snapshot_pair(mounts, mount_point):
    (name_a, text_a, a), (name_b, text_b, b) = mounts
    differences = _mount_differences(a, b)
    if differences:
        raise SavedFilesError("%s and %s are not two snapshots of one mount on %s: %s (another client or server, or "
                              "remounted with other options between them)" % (name_a, name_b, mount_point, "; ".join(differences)))
    if a.age == b.age:
        raise SavedFilesError("%s and %s: the mount on %s has the same age (%d s) in both: the same moment twice, "
                              "so there is no window" % (name_a, name_b, mount_point, a.age))
    # The kernel's age only grows while the mount lives: the older age is the later snapshot.
    (before_name, before_text, before), (after_name, after_text, after) = sorted(mounts, key=lambda item: item[2].age)
    _usable_delta(after_text, before_text, mount_point, "%s (age %d s) after %s (age %d s)" % (after_name, after.age, before_name, before.age))
    return {"before": (before_name, before_text), "after": (after_name, after_text), "window": WINDOW_SNAPSHOTS,
            "seconds": float(after.age - before.age), "mount_point": mount_point, "device": after.device}


def _mount_differences(a, b):
    """What tells two mount blocks apart: device, fstype, any option (clientaddr names the client)."""
    differences = ["%s %s vs %s" % (what, left, right) for what, left, right in
                   (("device", a.device, b.device), ("fstype", a.fstype, b.fstype)) if left != right]
    for key in sorted(set(a.opts) | set(b.opts)):
        if a.opts.get(key) != b.opts.get(key):
            differences.append("%s=%s vs %s=%s" % (key, a.opts.get(key, "(unset)"), key, b.opts.get(key, "(unset)")))
    return differences


def _usable_delta(after_text, before_text, mount_point, what):
    """The delta the diagnosis will compute; SavedFilesError naming its capture problems when it is not usable."""
    delta = mountstats_delta(after_text, before_text, mount_points=[mount_point])[-1]
    if not delta["usable"]:
        raise SavedFilesError("%s: not a usable pair (%s): %s; counters that went back are never averaged"
                              % (what, ", ".join(delta["problems"]), "; ".join(delta["problem_details"])))
    return delta


# ---------------------------------------------------------------- the server: nfsd counters and pool_stats

def server_snapshots(by_kind, unusable):
    """{"nfsd": [(name, kind, /proc/net/rpc/nfsd text)], "pool_stats": [...]}: nfsstat -s rebuilt as kernel lines."""
    nfsd = [(name, "nfsd", text) for name, text in by_kind.get("nfsd", [])]
    for name, text in by_kind.get("nfsstat_server", []):
        try:
            nfsd.append((name, "nfsstat_server", nfsd_text_from_nfsstat(text)[0]))
        except ValueError as exc:
            unusable.append({"file": name, "kind": "nfsstat_server", "reason": str(exc)})
    return {"nfsd": nfsd, "pool_stats": [(name, "pool_stats", text) for name, text in by_kind.get("pool_stats", [])]}


def server_pair(server_files, unusable, notes):
    """{"nfsd": (before, after), "pool_stats": (before, after) or None}, each (name, kind, text); None without a pair.

    A single server snapshot counts since the server booted: it has no window and is listed
    unusable. Two are ordered by their counters (every shared counter rises from before to
    after); counters that went both ways (nfsd restarted, another server) stop the plan.
    """
    nfsd, pools = server_files["nfsd"], server_files["pool_stats"]
    if len(nfsd) != 2:
        if len(nfsd) > 2:
            raise SavedFilesError("%d server counter snapshots (%s): give two (before and after) of one server"
                                  % (len(nfsd), ", ".join(name for name, _kind, _text in nfsd)))
        reason = ("one server snapshot counts since the server booted: no window; save one before and one after"
                  if nfsd else "pool_stats needs the server's /proc/net/rpc/nfsd (or nfsstat -s) snapshots too")
        unusable.extend({"file": name, "kind": kind, "reason": reason} for name, kind, _text in nfsd)
        if nfsd:
            reason = "pool_stats is used only beside two nfsd snapshots"
        unusable.extend({"file": name, "kind": kind, "reason": reason} for name, kind, _text in pools)
        return None
    part = {"nfsd": _ordered(nfsd, _nfsd_counters, "server counters", notes), "pool_stats": None}
    if len(pools) == 2:
        part["pool_stats"] = _ordered(pools, _pool_counters, "pool_stats counters", notes)
    elif len(pools) > 2:
        raise SavedFilesError("%d pool_stats snapshots (%s): give two (before and after)" % (len(pools), ", ".join(name for name, _k, _t in pools)))
    else:
        unusable.extend({"file": name, "kind": kind, "reason": "one pool_stats snapshot has no window: save one before and one after"}
                        for name, kind, _text in pools)
    for name, kind, _text in part["nfsd"]:
        if kind == "nfsstat_server":
            notes.append("%s: nfsstat -s output, rebuilt as /proc/net/rpc/nfsd lines; only the tables nfsstat printed "
                         "(without -v no io bytes, packets or reply cache: those read 0)" % name)
    return part


def _ordered(snapshots, counters_of, what, notes):
    """The two snapshots as (before, after) by their counters; SavedFilesError when they went both ways."""
    first, second = snapshots
    a, b = counters_of(first[2]), counters_of(second[2])
    shared = sorted(set(a) & set(b))
    if not shared:
        raise SavedFilesError("%s and %s share no counter: not two snapshots of one server" % (first[0], second[0]))
    rose = [key for key in shared if b[key] > a[key]]
    fell = [key for key in shared if b[key] < a[key]]
    if rose and fell:
        raise SavedFilesError("%s and %s: %s went both ways (%s rose, %s fell from the first to the second): a reset "
                              "between them (restart, reboot) or two servers; counters that went back are never averaged"
                              % (first[0], second[0], what, _names(rose), _names(fell)))
    if not rose and not fell:
        notes.append("%s and %s hold the same %s: nothing moved between them" % (first[0], second[0], what))
    return (second, first) if fell else (first, second)


def _names(keys):
    shown = [" ".join(str(part) for part in key) for key in keys[:3]]
    return ", ".join(shown) + (" ..." if len(keys) > 3 else "")


def _nfsd_counters(text):
    """{(line, counter): value} of the counters /proc/net/rpc/nfsd accumulates (tcp connections is a gauge)."""
    parsed = parse_nfsd_stats(text)
    counters = {}
    for label in ("rc", "fh", "io", "net", "rpc", "proc2", "proc3", "proc4", "proc4ops"):
        for name, value in (parsed.get(label) or {}).items():
            if name != "extra" and (label, name) != ("net", "tcp_connections"):
                counters[(label, name)] = value
    return counters


def _pool_counters(text):
    return dict(((pool["pool"], column), value) for pool in parse_pool_stats(text)["pools"]
                for column, value in pool.items() if column != "pool")


# ---------------------------------------------------------------- the bundle's files and context.yml

def _bundle_files(pair, server_part, client, server):
    """{relative path: (text, (source file or None, kind))}, every name from bundle.py's table."""
    client_names = bundle.file_names("clients")
    before_name, before_text = pair["before"]
    layout = {
        posixpath.join("clients", client, client_names["mountstats_before"]): (before_text, (before_name, "mountstats")),
        posixpath.join("clients", client, client_names["mountstats_after"]): (pair["after"][1], (pair["after"][0], "mountstats")),
    }
    if server_part is None:
        return layout
    server_names = bundle.file_names("servers")
    for key in ("nfsd", "pool_stats"):
        if server_part[key] is None:
            continue
        for moment, (name, kind, text) in zip(("before", "after"), server_part[key]):
            layout[posixpath.join("servers", server, server_names["%s_%s" % (key, moment)])] = (text, (name, kind))
    return layout


def _context(pair, server_part, layout, target, label, network, notes, client, server):
    context = bundle.context_document(pair["mount_point"], label, target["checkpoint_bytes"], target["window_seconds"], network, None)
    if pair["window"] == WINDOW_SINCE_MOUNT:
        notes.insert(0, "one mountstats snapshot: every client figure is an average over the mount's %d s since it was "
                        "mounted, not a checkpoint window" % pair["seconds"])
    else:
        notes.insert(0, "the window is the mount's age between the two snapshots (%d s)%s" % (
            pair["seconds"], "; the server's snapshots are taken to cover the same window (not checked: /proc/net/rpc/nfsd "
                             "holds no time)" if server_part else ""))
    sources = {}
    for path, (_text, (name, kind)) in sorted(layout.items()):
        sources[path] = ("%s (%s)" % (name, KINDS[kind]) if name is not None
                         else "zero counters: the mount's state when mounted (since-mount window)")
    saved = {"written_by": WRITER, "window": pair["window"], "window_seconds": pair["seconds"], "client": client}
    if server_part:
        saved["server"] = server
    saved.update({"files": sources, "notes": list(notes)})
    context["saved"] = saved
    return context


def partial_context(diagnosis, target, label, network, why):
    """context.yml of a partial diagnosis (no bundle): the target and this module's mark, so a later run may rewrite it.

    `saved.window: paste` is no window the diagnosis reads (diagnosis/run.py _saved_window knows only
    snapshots and since_mount); `saved.files` is empty, so nothing of a bundle is left to remove, and the
    window marks diagnosis.json and diagnosis.md as this module's (stale_files removes them once a rerun
    builds a bundle).
    """
    context = bundle.context_document(diagnosis["mount_point"], label, target.get("checkpoint_bytes"), target.get("window_seconds"),
                                      network, None)
    notes = ["no bundle: %s" % why] if why else []
    notes.append("a partial diagnosis from pasted files: diagnosis.json and diagnosis.md beside this file")
    context["saved"] = {"written_by": WRITER, "window": WINDOW_PASTE, "files": {}, "notes": notes}
    return context


def context_text(context):
    """context.yml as written: the bundle's one renderer (bundle_part.context_text), as the roles write it."""
    return bundle_part.context_text(context)


def written_here(context_yaml):
    """True when context.yml text is one this module wrote (its `saved.written_by`)."""
    try:
        # The one bundle parser: no aliases (a billion laughs in dest must not hang the run), its schema.
        context = bundle_values.parse_yaml(context_yaml, bundle.CONTEXT_FILE) if context_yaml else None
    except bundle_values.BundleError:
        return False
    saved = context.get("saved") if isinstance(context, dict) else None
    return isinstance(saved, dict) and saved.get("written_by") == WRITER


def stale_files(context_yaml, paths):
    """Files a previous run wrote (its context.yml `saved.files`, or its partial diagnosis) that this plan does not: to remove.

    Only paths of the bundle table's shape (clients|servers/HOST/NAME) are returned, so an edited
    context.yml can never name a file outside the bundle; the partial diagnosis's two files only when
    the previous run wrote one (`saved.window: paste`): a diagnosis.json that diagnose_bundle wrote
    into a bundle is not this module's.
    """
    try:
        context = bundle_values.parse_yaml(context_yaml, bundle.CONTEXT_FILE) if context_yaml else None
    except bundle_values.BundleError:
        return []
    saved = (context or {}).get("saved") if isinstance(context, dict) else None
    old = (saved or {}).get("files") if isinstance(saved, dict) else None
    if not isinstance(old, dict):
        return []
    partial = [name for name in (PARTIAL_JSON, PARTIAL_MARKDOWN) if saved.get("window") == WINDOW_PASTE and name not in paths]
    names = {"clients": set(bundle.file_names("clients").values()), "servers": set(bundle.file_names("servers").values())}
    stale = []
    for path in old:
        parts = str(path).split("/")
        if (len(parts) == 3 and parts[0] in names and parts[2] in names[parts[0]] and valid_host(parts[1])
                and path not in paths):
            stale.append(path)
    return sorted(stale + partial)


def valid_host(name):
    """A host name usable as one directory of the bundle (no separator, not . or ..)."""
    return bool(name) and "/" not in name and "\0" not in name and name not in (".", "..")
