"""A client's figures.json (diagnosis/host_figures.py): written by the bundle's writer beside the client's
files, read instead of them only while it gives what reading the files gives, and never trusted otherwise."""
from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil

import pytest

from ansible_collections.ckptio.nfs.plugins.plugin_utils.bundle_steps import bundle_host_files
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import client_row, host_figures, run
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle import CLIENT_FILES, FIGURES_FILE
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path

CAPTURES = sorted(os.path.dirname(path) for path in glob.glob(sample_path("..", "captures", "*", "context.yml")))
# What the figures of every fixture capture's clients hash to, by FORMAT. A change of client_row's figures
# (or of what it calls) changes it: raise host_figures.FORMAT (older figures are then recomputed) and pin it.
# A new fixture capture changes it too: then FORMAT stays, and the pin moves only if the older captures still
# hash to the old pin (issue 43's v43_* captures: without them, 0ab75d3f...).
PINNED = {1: "1dac9d4649502bd2e086ff8ba9d7a5b44133ecf30c8de7886a389d7cf58a7375",
          # moved with issue 47's slot table (FORMAT kept, host_figures.py says why): the v47 captures' clients now
          # hold their slot_table and name the rpc sample files among their sources; the other captures' rows are the same
          # moved again by new captures alone: issue 48's v48_bookworm_* (without them, ae9e7e4f...), then issue 47's
          # v47_trixie_* (without them, 578fa6a1...), then v47_bullseye_* (without them, 6b3ba662...)
          2: "91274c4699162f01eeaf7735042e9d1bd09ae6af015aa640a4c3b04322c2a987",
          # issue 47's not-seen reasons from the canary's notes (host_figures.FORMAT says what changed); moved by a new
          # capture alone: v48_bookworm_seed_like_v41_nice0 (without it, d82dda74...)
          3: "c776f85c7e097330a602ab2211bc56d6d680a689644df487337a0fb07b39737f"}


def _client_files(directory):
    """[{name, content}] of a client's files as the writer wrote them (every file but figures.json)."""
    files = []
    for name in CLIENT_FILES.values():
        if os.path.exists(os.path.join(directory, name)):
            with open(os.path.join(directory, name), encoding="utf-8", newline="") as handle:
                files.append({"name": name, "content": handle.read()})
    return files


def _mount_point(bundle):
    return load_bundle(bundle, stream=True)["context"]["mount_point"]


def _write_figures(bundle):
    """figures.json in every client directory of bundle where the writer writes one; how many."""
    written = 0
    for directory in sorted(glob.glob(os.path.join(bundle, "clients", "*"))):
        figures = host_figures.figures_file(_client_files(directory), {"mounts": [{"mount_point": _mount_point(bundle)}]})
        if figures:
            with open(os.path.join(directory, FIGURES_FILE), "w", encoding="utf-8") as handle:
                handle.write(figures["content"])
            written += 1
    return written


def _copy(tmp_path, capture):
    bundle = str(tmp_path / os.path.basename(capture))
    shutil.copytree(capture, bundle)
    return bundle


def _rows(bundle):
    """{host: (its row as the run reads it, or None when its figures are not used; its row from its files)}."""
    loaded = load_bundle(bundle, stream=True)
    clients, mount_point = loaded["clients"], loaded["context"]["mount_point"]
    rows = {}
    for host in clients:
        texts = clients.texts(host, {FIGURES_FILE: FIGURES_FILE})
        used = host_figures.read_row(host, texts, mount_point, None) is not None
        rows[host] = (run._client_row(clients, host, mount_point, None, None) if used else None,  # pylint: disable=protected-access
                      client_row.client_row(host, clients.parsed(host, texts), mount_point))
    return rows


@pytest.mark.parametrize("capture", CAPTURES, ids=os.path.basename)
def test_the_figures_give_the_row_the_files_give(tmp_path, capture):
    bundle = _copy(tmp_path, capture)
    written = _write_figures(bundle)
    rows = _rows(bundle)
    for host, (from_figures, from_files) in rows.items():
        if os.path.exists(os.path.join(bundle, "clients", host, FIGURES_FILE)):
            assert from_figures == from_files, host
        else:
            assert from_figures is None
    # A real job's capture has no canary samples: its link rows are scaled to the run, so no figures.
    assert written == (0 if os.path.basename(capture).startswith("capture_") else len(rows))


@pytest.mark.parametrize("capture", CAPTURES, ids=os.path.basename)
def test_a_bundle_with_figures_is_diagnosed_as_one_without(tmp_path, capture, monkeypatch):
    without = _copy(tmp_path / "without", capture)
    for path in glob.glob(os.path.join(without, "clients", "*", FIGURES_FILE)):
        os.remove(path)
    expected = json.dumps(diagnose(load_bundle(without, stream=True)), sort_keys=True)
    bundle = _copy(tmp_path, capture)
    written = _write_figures(bundle)
    calls = []
    monkeypatch.setattr(run, "client_row", lambda *arguments: calls.append(arguments[0]) or client_row.client_row(*arguments))
    loaded = load_bundle(bundle, stream=True)
    assert json.dumps(diagnose(loaded), sort_keys=True) == expected
    # Every client with figures was taken from them, not from its files; with several paths (the figures are
    # one mount's) every client was read from its files.
    several_paths = len((loaded["context"].get("canary") or {}).get("mount_points") or []) > 1
    assert len(calls) == len(os.listdir(os.path.join(bundle, "clients"))) - (0 if several_paths else written)


def test_the_labs_own_figures_are_used_and_give_the_files_rows():
    """lab_figures: a bundle molecule-lab's roles wrote (ansible.builtin.copy through bundle_host_files), as written."""
    rows = _rows(sample_path("..", "captures", "lab_figures"))
    assert sorted(rows) == ["nfs2", "nfs3"]
    for from_figures, from_files in rows.values():
        assert from_figures is not None and from_figures == from_files


def test_the_pinned_figures_match_this_format():
    digest = hashlib.sha256()
    for capture in CAPTURES:
        for directory in sorted(glob.glob(os.path.join(capture, "clients", "*"))):
            figures = host_figures.figures_file(_client_files(directory), {"mounts": [{"mount_point": _mount_point(capture)}]})
            digest.update((figures or {}).get("content", "-").encode())
    assert PINNED.get(host_figures.FORMAT) == digest.hexdigest(), (
        "client_row's figures of the fixture captures changed: raise host_figures.FORMAT and pin the new digest")


def _healthy_with_figures(tmp_path):
    bundle = _copy(tmp_path, sample_path("..", "captures", "healthy"))
    assert _write_figures(bundle) == 2
    return bundle


def _edited_figures(bundle, host, edit):
    path = os.path.join(bundle, "clients", host, FIGURES_FILE)
    with open(path, encoding="utf-8") as handle:
        document = json.load(handle)
    edit(document)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle)


def _drop(path, key):
    def edit(document):
        value = document
        for step in path:
            value = value[step]
        del value[key]
    return edit


def _set(path, key, new):
    def edit(document):
        value = document
        for step in path:
            value = value[step]
        value[key] = new
    return edit


DELTA = ("row", "view", "delta")
UNUSABLE = {
    "an older format": _set((), "format", host_figures.FORMAT - 1),
    "another mount point": _set((), "mount_point", "/mnt/other"),
    "a source's hash": _set(("sources",), "mountstats_after.txt", "0" * 64),
    "a source it does not list": _drop(("sources",), "dstate.txt"),
    "an op count missing": _drop(DELTA + ("ops", "WRITE"), "ops"),
    "an op count null": _set(DELTA + ("ops", "WRITE"), "ops", None),
    "a string where a number goes": _set(DELTA, "write_bytes", "33554432"),
    "a number out of range": _set(DELTA, "write_bytes", 2 ** 70),
    "the rpc figures missing": _drop(DELTA, "rpc"),
    "the reopened transports' connects missing": _drop(DELTA + ("rpc",), "reopen_connects"),
    "a string where the reopened transports' connects go": _set(DELTA + ("rpc",), "reopen_connects", "2"),
    "a link row without its side": _drop(("row", "evidence", "links", 0), "side"),
    "a CPU window cut short": _set(("row", "evidence"), "cpu", [{"busy": 1}]),
    "a view without its evidence": _set(("row",), "evidence", None),
    "neither a view nor an exclusion": _set(("row",), "view", None),
}


@pytest.mark.parametrize("edit", sorted(UNUSABLE))
def test_figures_that_are_not_for_these_files_or_break_the_schema_are_not_used(tmp_path, edit):
    bundle = _healthy_with_figures(tmp_path)
    host = sorted(os.listdir(os.path.join(bundle, "clients")))[0]
    _edited_figures(bundle, host, UNUSABLE[edit])
    from_figures, _from_files = _rows(bundle)[host]
    assert from_figures is None


def test_an_edited_file_is_read_again_and_the_diagnosis_follows_it(tmp_path):
    bundle = _healthy_with_figures(tmp_path)
    host = sorted(os.listdir(os.path.join(bundle, "clients")))[0]
    path = os.path.join(bundle, "clients", host, "sunrpc.txt")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace("tcp_slot_table_entries 128", "tcp_slot_table_entries 2"))
    rows = _rows(bundle)
    assert rows[host][0] is None
    assert rows[host][1][0]["sunrpc"]["tcp_slot_table_entries"] == "2"
    assert diagnose(load_bundle(bundle, stream=True))["clients"][host]["sunrpc"]["tcp_slot_table_entries"] == "2"


def test_the_host_comes_from_the_directory_not_the_figures(tmp_path):
    bundle = _healthy_with_figures(tmp_path)
    first = sorted(os.listdir(os.path.join(bundle, "clients")))[0]
    os.rename(os.path.join(bundle, "clients", first), os.path.join(bundle, "clients", "renamed"))
    from_figures, from_files = _rows(bundle)["renamed"]
    assert from_figures == from_files
    assert from_figures[0]["host"] == "renamed"
    assert {link["host"] for link in from_figures[3].links} == {"renamed"}


def test_several_paths_read_the_files(tmp_path):
    bundle = _healthy_with_figures(tmp_path)
    loaded = load_bundle(bundle, stream=True)
    host = sorted(loaded["clients"])[0]
    texts = loaded["clients"].texts(host, {FIGURES_FILE: FIGURES_FILE})
    assert host_figures.read_row(host, texts, "/mnt/nfs", ["/mnt/nfs", "/mnt/nfs2"]) is None
    assert host_figures.read_row(host, texts, "/mnt/nfs", ["/mnt/nfs"]) is not None


@pytest.mark.parametrize("figures_usable", [True, False], ids=["figures used", "figures stale"])
def test_a_broken_probe_beside_figures_is_one_problem(tmp_path, figures_usable):
    bundle = _healthy_with_figures(tmp_path)
    host = sorted(os.listdir(os.path.join(bundle, "clients")))[0]
    with open(os.path.join(bundle, "clients", host, "probe.json"), "w", encoding="utf-8") as handle:
        handle.write("{not json")
    if not figures_usable:
        _edited_figures(bundle, host, UNUSABLE["a source's hash"])
    result = diagnose(load_bundle(bundle, stream=True))
    rows = [item for item in result["evidence"] if item["signal"] == "unreadable bundle file"]
    assert [row["explanation"] for row in rows] == ["clients/%s/probe.json is not valid JSON (Expecting property name enclosed "
                                                    "in double quotes: line 1 column 2 (char 1)): not used" % host]


def _stats(directory, mount_points):
    """An nfs_client_stats read as the writer gets it, from a fixture client's files."""
    def read(name):
        with open(os.path.join(directory, name), encoding="utf-8") as handle:
            return handle.read()
    before = {"raw_mountstats": read("mountstats_before.txt"), "sunrpc_text": read("sunrpc.txt"),
              "host_sample": json.loads(read("host_before.json")), "mounts": [{"mount_point": point} for point in mount_points]}
    after = dict(before, raw_mountstats=read("mountstats_after.txt"), host_sample=json.loads(read("host_after.json")))
    return before, after


def test_the_writer_puts_the_figures_before_the_records():
    directory = sample_path("..", "captures", "healthy", "clients", "nfs2")
    before, after = _stats(directory, ["/mnt/nfs"])
    with open(os.path.join(directory, "canary.json"), encoding="utf-8") as handle:
        canary = json.load(handle)
    with open(os.path.join(directory, "dstate.txt"), encoding="utf-8") as handle:
        dstate = handle.read()
    names = [item["name"] for item in bundle_host_files("clients", before, after, dstate, {"canary": canary})]
    assert names[-2:] == [FIGURES_FILE, "canary.json"]
    # Statistics read on two mount points, or no statistics at all: no figures.
    before, after = _stats(directory, ["/mnt/nfs", "/mnt/nfs2"])
    assert FIGURES_FILE not in [item["name"] for item in bundle_host_files("clients", before, after, dstate, {"canary": canary})]
    assert [item["name"] for item in bundle_host_files("clients", records={"canary": canary})] == ["canary.json"]


def test_no_figures_where_the_links_are_scaled_to_the_run():
    directory = sample_path("..", "captures", "capture_dd", "clients", "nfs2")
    before, after = _stats(directory, ["/mnt/nfs"])
    assert FIGURES_FILE not in [item["name"] for item in bundle_host_files("clients", before, after, None, {})]


def test_figures_that_cannot_be_worked_out_never_fail_the_writer(monkeypatch):
    """The figures are a cache: an error working them out leaves them out, the files are still written."""
    def broken(*_arguments):
        raise TypeError("a value no reader has seen")
    monkeypatch.setattr(host_figures, "client_row", broken)
    directory = sample_path("..", "captures", "healthy", "clients", "nfs2")
    before, after = _stats(directory, ["/mnt/nfs"])
    with open(os.path.join(directory, "canary.json"), encoding="utf-8") as handle:
        canary = json.load(handle)
    names = [item["name"] for item in bundle_host_files("clients", before, after, "", {"canary": canary})]
    assert FIGURES_FILE not in names and names[-1] == "canary.json"


def _copies(tmp_path, capture, count):
    """A bundle of `count` clients, client I a copy of the capture's client I mod 2 (as the scale bench builds it)."""
    bundle = str(tmp_path / "copies")
    shutil.copytree(capture, bundle, ignore=shutil.ignore_patterns("clients"))
    sources = sorted(glob.glob(os.path.join(capture, "clients", "*")))
    for index in range(count):
        shutil.copytree(sources[index % len(sources)], os.path.join(bundle, "clients", "c%05d" % index))
    return bundle


def _key_objects(value, found):
    """ids of every dict key object under value (a row: dicts, lists, tuples, the ClientEvidence's fields)."""
    if isinstance(value, dict):
        for key, item in value.items():
            found.add(id(key))
            _key_objects(item, found)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _key_objects(item, found)
    elif hasattr(value, "__dataclass_fields__"):
        for name in value.__dataclass_fields__:
            _key_objects(getattr(value, name), found)
    return found


def test_a_chunks_rows_from_figures_share_their_keys_and_give_the_same_rows(tmp_path):
    """16,384 clients' rows are held at once (and pickled back from the readers): the keys of rows taken from
    figures.json are one object per chunk, not one per client, and the rows are the ones each file gives alone."""
    bundle = _copies(tmp_path, sample_path("..", "captures", "lab_figures"), 6)
    loaded = load_bundle(bundle, stream=True)
    clients, mount_point = loaded["clients"], loaded["context"]["mount_point"]
    hosts = sorted(clients)
    chunk = run._read_chunk((clients, mount_point, [], None, None), hosts)  # pylint: disable=protected-access
    rows, problems = run._chunk_rows(chunk)  # pylint: disable=protected-access
    assert problems == []
    assert rows == [(host,) + run._client_row(clients, host, mount_point, None, None) for host in hosts]  # pylint: disable=protected-access
    one = len(_key_objects(rows[0], set()))
    assert len(_key_objects(rows, set())) < one * 1.5


def test_a_reader_sends_back_a_figures_row_as_its_text(tmp_path):
    """A forked reader's chunk is pickled back to the module's process: a row taken from figures.json goes back as
    the text it was checked in (one string, parsed once there) instead of ~700 objects parsed twice and pickled."""
    bundle = _copies(tmp_path, sample_path("..", "captures", "lab_figures"), 3)
    loaded = load_bundle(bundle, stream=True)
    clients, mount_point = loaded["clients"], loaded["context"]["mount_point"]
    hosts = sorted(clients)
    rows, taken, problems = run._read_chunk((clients, mount_point, [], None, None), hosts)  # pylint: disable=protected-access
    assert problems == [] and sorted(taken) == [0, 1, 2]
    assert rows == [(host, None, None, None, None) for host in hosts]
    assert [type(text) for text in taken[0][:2]] == [str, str]
    assert run._chunk_rows((rows, taken, problems))[0] == [  # pylint: disable=protected-access
        (host,) + run._client_row(clients, host, mount_point, None, None) for host in hosts]  # pylint: disable=protected-access
