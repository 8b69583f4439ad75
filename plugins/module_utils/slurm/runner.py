# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The canary's self-contained runner for a Slurm job step (module_utils/slurm/job.py says the design).

build() writes a Python zip application: ckptio.nfs's checkpoint_canary module and this
collection's module_utils, and ansible-core's module_utils (what AnsiballZ ships for a module;
the nodes do not have Ansible or the collection installed), with host/slurm_supervisor.py, the
file itself, as its __main__.py: `python3 canary.pyz ARGS_JSON` on a node runs that file, which
imports host/processes from the zip like any module_utils (what it does: its docstring).

    python3 plugins/module_utils/slurm/runner.py DEST

builds the zip at DEST (what roles/canary_validation/tasks/slurm_ship.yml runs on the controller;
this file imports nothing of the collection, so it runs as a script from the collection's tree).
"""

from __future__ import annotations

import os
import sys
import zipfile

# The zip's __main__.py, relative to the collection's root.
SUPERVISOR = os.path.join("plugins", "module_utils", "host", "slurm_supervisor.py")


def collection_root():
    """The collection's root directory (…/ansible_collections/ckptio/nfs) of this file."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _python_files(top, arc_top):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(name for name in dirnames if name != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                full = os.path.join(dirpath, name)
                yield arc_top + "/" + os.path.relpath(full, top).replace(os.sep, "/"), full


def members(root, ansible_module_utils):
    """[(name in the zip, source path)]: the module, the collection's module_utils, ansible's module_utils."""
    found = [("ansible_collections/ckptio/nfs/plugins/modules/checkpoint_canary.py",
              os.path.join(root, "plugins", "modules", "checkpoint_canary.py"))]
    found.extend(_python_files(os.path.join(root, "plugins", "module_utils"), "ansible_collections/ckptio/nfs/plugins/module_utils"))
    found.extend(_python_files(ansible_module_utils, "ansible/module_utils"))
    return found


def packages(names):
    """Every package directory of the members that needs an __init__.py (zipimport finds no namespace packages)."""
    present = set(names)
    wanted = set()
    for name in names:
        parts = name.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            init = "/".join(parts[:depth]) + "/__init__.py"
            if init not in present:
                wanted.add(init)
    return sorted(wanted)


def build(dest, root=None, ansible_module_utils=None):
    """Write the runner zip at dest; {path, files}."""
    if ansible_module_utils is None:
        import ansible.module_utils  # the controller's ansible-core: what AnsiballZ would ship
        ansible_module_utils = os.path.dirname(ansible.module_utils.__file__)
    root = root or collection_root()
    found = members(root, ansible_module_utils)
    temp = dest + ".part"
    with zipfile.ZipFile(temp, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(os.path.join(root, SUPERVISOR), "__main__.py")
        for name in packages([name for name, _path in found]):
            archive.writestr(name, "")
        for name, path in found:
            archive.write(path, name)
    os.chmod(temp, 0o600)
    os.replace(temp, dest)
    return {"path": dest, "files": len(found)}


if __name__ == "__main__":
    sys.stdout.write(build(sys.argv[1])["path"] + "\n")
