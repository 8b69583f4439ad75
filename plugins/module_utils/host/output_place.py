# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where diagnose_bundle and checkpoint_report write their files: one rule for both.

A bundle directory is the natural place for its diagnosis and report, but not when it is
read-only, nor when it lies inside an installed copy of this collection (the shipped sample
bundles): `ansible-galaxy collection verify` would then report the collection as modified. A
Galaxy tarball cannot mark those samples read-only (`ansible-galaxy collection build` stores
directories 0755 and files 0644), so the rule looks at the path, not only at the modes.

Pure: the module reads the path and the bundle's write permission and passes them in.
"""

from __future__ import annotations

import os

# The path of this collection's files once installed: .../ansible_collections/ckptio/nfs/...
COLLECTION_PARTS = ("ansible_collections", "ckptio", "nfs")


def installed_collection_root(path):
    """The .../ansible_collections/ckptio/nfs directory path lies in (or is), else None.

    path is absolute and resolved (os.path.realpath), so a symlink cannot hide where it is.
    """
    parts = path.split(os.sep)
    for index in range(len(parts) - len(COLLECTION_PARTS) + 1):
        if tuple(parts[index:index + len(COLLECTION_PARTS)]) == COLLECTION_PARTS:
            return os.sep.join(parts[:index + len(COLLECTION_PARTS)]) or os.sep
    return None


def choose(bundle, bundle_writable, output_dir=None, fallback_dir=None):
    """(directory or None, why) for the files of the bundle at `bundle` (resolved path).

    output_dir (the user's choice) wins. Otherwise the bundle directory, when it is writable and
    not inside an installed ckptio.nfs; otherwise fallback_dir (the caller's default output
    directory); without one, None: nothing is written, and `why` says so and names output_dir.
    """
    if output_dir:
        return output_dir, "output_dir"
    root = installed_collection_root(bundle)
    if root is not None:
        reason = ("the bundle is inside the installed collection ckptio.nfs (%s), which `ansible-galaxy collection verify` "
                  "would then report as modified" % root)
    elif not bundle_writable:
        reason = "the bundle directory is read-only"
    else:
        return bundle, "the bundle directory"
    if fallback_dir:
        return fallback_dir, reason
    return None, reason + ": nothing written; set output_dir"
