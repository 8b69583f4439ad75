# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What installing the textfile collector puts on a host: the program as one zip, a service and a timer.

Pure except for reading the collection's own sources through the import system. The program is a
zip application (PEP 441) of the collection's module_utils that collector.py needs, found by
following its imports, plus host/metrics_zip_main.py as __main__.py: the very files the unit tests run, with no
copy of them kept in a string. Built with fixed timestamps and order, so the same sources give the
same bytes and a second install changes nothing.
"""

from __future__ import annotations

import ast
import importlib
import io
import zipfile

COLLECTION = "ansible_collections.ckptio.nfs"
ENTRY = COLLECTION + ".plugins.module_utils.host.metrics_collector"
ZIP_MAIN = COLLECTION + ".plugins.module_utils.host.metrics_zip_main"
UNIT = "ckptio-nfs-metrics"
PROGRAM = UNIT + ".pyz"
# A zip entry's time: zip's earliest (1980-01-01), so the bytes depend on the sources only.
FIXED_TIME = (1980, 1, 1, 0, 0, 0)


def _source(name):
    """A module's source text, from a file or from the zip Ansible ran the module from."""
    module = importlib.import_module(name)
    source = module.__loader__.get_source(name)
    return source or ""


def _is_package(name):
    return hasattr(importlib.import_module(name), "__path__")


def _imported(name, source):
    """The collection's modules that name's source imports (from X import Y: Y when it is a module)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(COLLECTION):
            for alias in node.names:
                candidate = "%s.%s" % (node.module, alias.name)
                try:
                    importlib.import_module(candidate)
                    found.add(candidate)
                except ImportError:
                    found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith(COLLECTION))
    return found


def needed_modules(entry=ENTRY):
    """Every module of the collection that entry needs, itself included, sorted."""
    seen = set()
    todo = [entry]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(_imported(name, _source(name)) - seen)
    return sorted(seen)


def _path(name):
    parts = name.split(".")
    return "/".join(parts) + ("/__init__.py" if _is_package(name) else ".py")


def program_bytes():
    """The collector's zip application: its modules, an empty __init__.py per package above them
    (zipimport needs them), and host/metrics_zip_main.py as __main__.py."""
    files = {"__main__.py": _source(ZIP_MAIN)}
    for name in needed_modules():
        files[_path(name)] = _source(name)
        parts = name.split(".")
        for depth in range(1, len(parts)):
            files.setdefault("/".join(parts[:depth]) + "/__init__.py", "")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for path in sorted(files):
            info = zipfile.ZipInfo(path, FIXED_TIME)
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[path].encode("utf-8"))
    return buffer.getvalue()


def systemd_quote(word):
    """One ExecStart argument as systemd.service(5) reads it: % doubled, $ doubled, and quoted with
    C escapes when it holds a blank, a quote or a backslash."""
    word = word.replace("%", "%%").replace("$", "$$")
    if word and not any(char in word for char in " \t\n\"'\\;"):
        return word
    return '"%s"' % word.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")


def service_text(python, program_path, textfile_directory, mount_points):
    """The oneshot service that runs the collector once."""
    argv = [python, program_path, "--textfile-directory", textfile_directory]
    for point in mount_points:
        argv.extend(["--mount-point", point])
    return "\n".join([
        "# Written by ckptio.nfs.nfs_metrics_collector; removed with state=absent.",
        "[Unit]",
        "Description=ckptio.nfs: NFS checkpoint figures for node_exporter's textfile collector",
        "",
        "[Service]",
        "Type=oneshot",
        "ExecStart=" + " ".join(systemd_quote(word) for word in argv),
        # A reader of /proc and a writer of one file, ~0.15 s of CPU a run (tests/bench/README.md): the workload's own
        # CPU priority - at Nice=19 four ranks on the lab VM's one CPU starved it for 147 s across a canary's window
        # (issue 48's lab run, tests/fixtures/prometheus/NOTES.txt), and the series missed the checkpoint. Its only
        # disk read is its own program, in the page cache: idle I/O class.
        "IOSchedulingClass=idle",
        "NoNewPrivileges=yes",
        "",
    ])


def timer_text(interval):
    """The timer that starts the service every interval seconds."""
    return "\n".join([
        "# Written by ckptio.nfs.nfs_metrics_collector; removed with state=absent.",
        "[Unit]",
        "Description=ckptio.nfs: NFS checkpoint figures every %d s" % interval,
        "",
        "[Timer]",
        "OnBootSec=%ds" % interval,
        "OnUnitActiveSec=%ds" % interval,
        # systemd's default accuracy is one minute: without this a 15 s timer fires once a minute.
        "AccuracySec=1s",
        "",
        "[Install]",
        "WantedBy=timers.target",
        "",
    ])
