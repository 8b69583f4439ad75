# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one reader of a capture bundle directory: load_bundle() and saved_diagnosis().

The file names, the context document and the schema checks are pure (module_utils/bundle/bundle.py,
bundle_values.py); only the reading is here, beside the other host I/O. Files are read through
file_read.read (never through a link, regular files only, bounded; a missing or unreadable
optional file is absent) and parsed by bundle_values: a value that breaks the schema is a
BundleError naming the file and the key; an optional JSON file that does not parse at all is listed
in bundle["problems"] instead of stopping the diagnosis. Every file of a bundle is read here,
diagnosis.json too (saved_diagnosis).
"""

from __future__ import annotations

import errno
import os
import stat

from collections.abc import Mapping

from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle_values
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle import CLIENT_FILES, CONTEXT_FILE, DIAGNOSIS_FILE, SERVER_FILES, parse_texts
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle_values import BundleError
from ansible_collections.ckptio.nfs.plugins.module_utils.prometheus import source as prometheus_source


LINK_PROBLEM = "%s is a symbolic link: not read (never followed out of the bundle)"


def _kind_dir_error(directory):
    """BundleError for a clients/ or servers/ directory that is a symbolic link (None when it is not)."""
    info = _lstat(directory)
    if info is not None and stat.S_ISLNK(info.st_mode):
        return BundleError(LINK_PROBLEM % directory)
    return None


def _lstat(path):
    try:
        return os.lstat(path)
    except OSError:
        return None


def _hosts(directory, problems):
    """The host directories in directory (never through a link: a host linked elsewhere is listed in problems,
    a client linked to /etc would otherwise be read as a client and its files shown, issue 45)."""
    hosts = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_symlink():
                    problems.append(LINK_PROBLEM % os.path.join(directory, entry.name))
                elif entry.is_dir(follow_symlinks=False):
                    hosts.append(entry.name)
    except OSError:
        return []
    return sorted(hosts)


def _read(path, problems=None):
    """A bundle file's text through the one bounded reader (file_read.read: never through a
    link, regular files only, at most INPUT_LIMIT); None when missing or unreadable. A link is listed
    in problems (when given) and read as missing; BundleError naming the file and why otherwise (a
    link where no problems list is kept, a FIFO, over the cap)."""
    try:
        return file_read.read(path)
    except file_read.FileRefused as exc:
        _refused(exc, problems)
        return None
    except OSError:
        return None


def _refused(exc, problems):
    """A link refused by the reader is listed in problems (once); anything else, or a link where no problems
    list is kept, is a BundleError naming the file and why."""
    if problems is None or exc.errno != errno.ELOOP:
        raise BundleError(str(exc))
    message = LINK_PROBLEM % exc.filename
    if message not in problems:
        problems.append(message)


def _read_texts(directory, names, inside=None, problems=None):
    """{key: text} of the host's files that are there (names: {key: file name}), unparsed.

    The directories between inside and the host's files are the same for every file of the host: they are
    checked once (file_read.check_inside), and each file is then opened without following a link at its
    own name (read_input). Checking them again for each file cost ~0.1 ms a client, 1.5 s of CPU at 16,384
    clients (tests/bench/bench_diagnose_scale.py), for the same guarantee: the check and the open are two
    steps either way."""
    texts = {}
    if inside is not None:
        try:
            file_read.check_inside(os.path.join(directory, "-"), inside)
        except file_read.FileRefused as exc:
            _refused(exc, problems)
            return texts
    for key, name in names.items():
        text = _read(os.path.join(directory, name), problems)
        if text is not None:
            texts[key] = text
    return texts


def _read_host(directory, names, where, problems):
    return parse_texts(_read_texts(directory, names, problems=problems), names, where, problems)


class HostFiles(Mapping):
    """{HOST: {key: text or parsed JSON}} of one kind of host, read from disk when a host is asked for and
    not kept: a bundle of thousands of clients is taken one host at a time (diagnosis/run.py keeps each
    client's figures and drops its texts). A file that does not parse is listed in problems once, however
    often its host is read."""

    def __init__(self, directory, names, where, problems):
        self._directory = directory
        self._names = names
        self._where = where
        self._problems = problems
        self._hosts = _hosts(directory, problems)
        # A set beside the sorted list: a list's `in` made reading 16,384 clients quadratic (~134
        # million name comparisons, tests/bench/README.md).
        self._known = frozenset(self._hosts)
        self._seen = set()

    def __getitem__(self, host):
        return self.parsed(host, self.texts(host))

    def texts(self, host, extra=None):
        """{key: text} of the host's files unparsed, and of extra ({key: file name} beside the file table's)."""
        if host not in self._known:
            raise KeyError(host)
        names = dict(self._names, **extra) if extra else self._names
        # Inside the bundle: a host directory swapped for a link after it was listed is refused too.
        return _read_texts(os.path.join(self._directory, host), names, os.path.dirname(self._directory), self._problems)

    def parsed(self, host, texts, keys=None):
        """{key: text or parsed JSON} of texts (HostFiles.texts) as __getitem__ returns it, of keys only when
        given; a file that does not parse is listed in the bundle's problems once, however often it is read."""
        names = self._names if keys is None else dict((key, self._names[key]) for key in keys)
        problems = []
        files = parse_texts(texts, names, "%s/%s" % (self._where, host), problems)
        if problems and (host, tuple(names)) not in self._seen:
            self._seen.add((host, tuple(names)))
            self._problems.extend(problems)
        return files

    def __iter__(self):
        return iter(self._hosts)

    def __len__(self):
        return len(self._hosts)


def load_bundle(directory, stream=False):
    """{"context", "clients": {HOST: {key: text or parsed JSON}}, "servers": {...}, "problems": [...]}.

    stream: the hosts as HostFiles, each read when asked for (diagnose_bundle and checkpoint_report read
    each host once, clients first, as here); otherwise every file is read now.
    """
    context_text = _read(os.path.join(directory, CONTEXT_FILE))
    if context_text is None:
        raise BundleError("%s/%s is missing" % (directory, CONTEXT_FILE))
    context = bundle_values.parse_yaml(context_text, CONTEXT_FILE) or {}
    if isinstance(context, dict) and context.get("source") == prometheus_source.queries.SOURCE:
        return _prometheus_bundle(directory, context)
    problems = []
    bundle = {"context": context, "clients": {}, "servers": {}, "problems": problems}
    for kind, names in (("clients", CLIENT_FILES), ("servers", SERVER_FILES)):
        error = _kind_dir_error(os.path.join(directory, kind))
        if error is not None:
            raise error
        hosts = HostFiles(os.path.join(directory, kind), names, kind, problems)
        bundle[kind] = hosts if stream else dict((host, hosts[host]) for host in hosts)
    return bundle


def _prometheus_bundle(directory, context):
    """A bundle from Prometheus (context.yml source: prometheus): its saved answers, one file per query, as the
    engine's rows (prometheus/source.bundle_of); a missing answer is a BundleError naming it."""
    texts = {}
    for name, relative in prometheus_source.response_files(context):
        text = _read(os.path.join(directory, relative))
        if text is None:
            raise BundleError("%s/%s is missing" % (directory, relative))
        texts[name] = text
    return prometheus_source.bundle_of(context, texts)


def saved_diagnosis(directory):
    """diagnosis.json in directory (diagnose_bundle's result: the bundle or its output directory), None
    when there is none; BundleError naming the file (and the key) when it is no JSON, is refused by the
    bounded reader, or its values break the schema."""
    text = _read(os.path.join(directory, DIAGNOSIS_FILE))
    if not text:
        return None
    try:
        return bundle_values.parse_json(text, DIAGNOSIS_FILE)
    except BundleError as exc:
        raise BundleError("%s: run ckptio.nfs.diagnose_bundle again, or remove it" % exc)
