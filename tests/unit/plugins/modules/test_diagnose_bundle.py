"""diagnose_bundle through its real main() on temp copies of the lab bundles."""
from __future__ import annotations

import json
import os
import shutil
import stat

import pytest

from ansible_collections.ckptio.nfs.plugins.modules import diagnose_bundle
from ansible_collections.ckptio.nfs.tests.unit.utils import broken_capture, fail_module, run_module, sample_path, tree_checksums


def copy_bundle(name, tmp_path):
    dest = str(tmp_path / name)
    shutil.copytree(sample_path("bundles", name), dest)
    for dirpath, dirnames, filenames in os.walk(dest):
        os.chmod(dirpath, 0o755)
        for file_name in filenames:
            os.chmod(os.path.join(dirpath, file_name), 0o644)
    return dest


def test_writes_json_and_markdown_then_is_idempotent(tmp_path):
    bundle = copy_bundle("seed_like_baseline", tmp_path)
    result = run_module(diagnose_bundle, {"bundle": bundle}, diff=True)
    assert result["changed"] is True
    assert result["diagnosis"]["verdict"] == "tune" and result["diagnosis"]["limiting_layer"] == "client_rpc_slots"
    with open(os.path.join(bundle, "diagnosis.json")) as handle:
        assert json.load(handle)["limiting_layer"] == "client_rpc_slots"
    with open(os.path.join(bundle, "diagnosis.md")) as handle:
        markdown = handle.read()
    assert result["diff"][0]["after"] == markdown and result["diff"][0]["before"] == ""
    again = run_module(diagnose_bundle, {"bundle": bundle}, diff=True)
    assert again["changed"] is False and again["diff"] == []


def test_check_mode_writes_nothing(tmp_path):
    bundle = copy_bundle("shared_vs_perrank_5b_per_rank", tmp_path)
    before = tree_checksums(bundle)
    result = run_module(diagnose_bundle, {"bundle": bundle}, check_mode=True)
    # No link evidence in this bundle: the RTT/send-queue symptoms do not name the network (#11).
    assert result["changed"] is True and result["diagnosis"]["limiting_layer"] == "server_storage"
    assert tree_checksums(bundle) == before


def test_read_only_bundle_is_left_alone(tmp_path):
    bundle = copy_bundle("seed_like_baseline", tmp_path)
    os.chmod(bundle, stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    try:
        before = tree_checksums(bundle)
        result = run_module(diagnose_bundle, {"bundle": bundle})
        assert result["changed"] is False and result["files"] == [] and result["output_dir"] is None
        assert result["msg"] == "diagnosis files not written: the bundle directory is read-only: nothing written; set output_dir"
        assert result["warnings"] == [result["msg"]]
        assert tree_checksums(bundle) == before
        out = tmp_path / "out"
        out.mkdir()
        result = run_module(diagnose_bundle, {"bundle": bundle, "output_dir": str(out)})
        assert result["changed"] is True and sorted(os.listdir(str(out))) == ["diagnosis.json", "diagnosis.md"]
        # The caller's default output directory, created with its parents when missing.
        fallback = tmp_path / "reports" / "seed_like_baseline-diagnosis"
        result = run_module(diagnose_bundle, {"bundle": bundle, "fallback_output_dir": str(fallback)})
        assert result["changed"] is True and result["output_dir"] == str(fallback)
        assert sorted(os.listdir(str(fallback))) == ["diagnosis.json", "diagnosis.md"]
        assert result["msg"] == "wrote diagnosis.json and diagnosis.md in %s (the bundle directory is read-only)" % fallback
        assert tree_checksums(bundle) == before
    finally:
        os.chmod(bundle, 0o755)


@pytest.mark.parametrize("args, message", [
    ({"bundle": "/nonexistent/bundle"}, "bundle: /nonexistent/bundle is not a directory"),
])
def test_bad_paths_fail_with_the_option_name(args, message):
    assert fail_module(diagnose_bundle, args)["msg"] == message


def test_incomplete_bundle_fails_before_writing(tmp_path):
    bundle = copy_bundle("seed_like_baseline", tmp_path)
    os.remove(os.path.join(bundle, "clients", "nfs2", "mountstats_after.txt"))
    before = tree_checksums(bundle)
    result = fail_module(diagnose_bundle, {"bundle": bundle})
    assert "clients/nfs2/mountstats_after.txt is missing" in result["msg"]
    assert tree_checksums(bundle) == before
    assert "output_dir" in fail_module(diagnose_bundle, {"bundle": bundle, "output_dir": str(tmp_path / "missing")})["msg"]


GARBAGE = b"\x00\xff\xfe\x9c\xe9 binary garbage \xc3\x28 inf nan\n\xe9\xe9\xe9\n"


def append_bytes(path, data):
    with open(path, "ab") as handle:
        handle.write(data)


def test_binary_garbage_in_the_bundle_does_not_crash(tmp_path):
    bundle = copy_bundle("seed_like_baseline", tmp_path)
    clean = run_module(diagnose_bundle, {"bundle": copy_bundle("seed_like_baseline", tmp_path / "clean"), "write": False})["diagnosis"]
    client = os.path.join(bundle, "clients", "nfs2")
    server = os.path.join(bundle, "servers", "nfs1")
    for name in ("dstate.txt", "sunrpc.txt"):
        append_bytes(os.path.join(client, name), GARBAGE)
    for name in ("mountstats_before.txt", "mountstats_after.txt"):
        # Garbage inside the blocks of non-NFS mounts, and a mount point that is not UTF-8.
        with open(os.path.join(client, name), "rb") as handle:
            text = handle.read()
        text = text.replace(b"device proc mounted on /proc with fstype proc\n",
                            b"device proc mounted on /proc with fstype proc\n" + GARBAGE + b"device /dev/vdb mounted on /data/caf\xe9 with fstype ext4\n")
        with open(os.path.join(client, name), "wb") as handle:
            handle.write(text)
    for name in ("nfsd_after", "pool_stats_after"):
        with open(os.path.join(server, name + ".txt"), "wb") as handle:
            handle.write(broken_capture(name + "_with_binary_garbage.escaped.txt"))
    append_bytes(os.path.join(server, "threads.txt"), GARBAGE)
    # A second client whose directory name is not UTF-8.
    shutil.copytree(client.encode(), os.path.join(bundle.encode(), b"clients", b"caf\xe9"))
    result = run_module(diagnose_bundle, {"bundle": bundle})
    # What Ansible's controller does with the result: UTF-8 without lone surrogates.
    json.dumps(result, ensure_ascii=False).encode("utf-8")
    diagnosis = result["diagnosis"]
    assert (diagnosis["verdict"], diagnosis["limiting_layer"]) == (clean["verdict"], clean["limiting_layer"])
    assert diagnosis["servers"]["nfs1"] == clean["servers"]["nfs1"]
    assert sorted(diagnosis["clients"]) == ["caf\\351", "nfs2"] and diagnosis["excluded_clients"] == []
    with open(os.path.join(bundle, "diagnosis.json"), "rb") as handle:
        handle.read().decode("utf-8")


def test_cut_capture_fails_cleanly_naming_the_host_and_problem(tmp_path):
    bundle = copy_bundle("seed_like_baseline", tmp_path)
    shutil.copy(sample_path("broken", "mountstats_after_cut_in_write.txt"), os.path.join(bundle, "clients", "nfs2", "mountstats_after.txt"))
    before = tree_checksums(bundle)
    result = fail_module(diagnose_bundle, {"bundle": bundle})
    assert "no usable client" in result["msg"] and "nfs2" in result["msg"] and "truncated" in result["msg"]
    assert tree_checksums(bundle) == before


def installed_copy(tmp_path, name="seed_like_baseline"):
    """A sample bundle where an installed collection keeps it: writable, as the tarball ships it."""
    root = tmp_path / "collections" / "ansible_collections" / "ckptio" / "nfs"
    dest = root / "tests" / "fixtures" / "samples" / "bundles" / name
    dest.parent.mkdir(parents=True)
    shutil.copytree(sample_path("bundles", name), str(dest))
    return root, str(dest)


def test_a_bundle_inside_an_installed_collection_is_never_written(tmp_path):
    root, bundle = installed_copy(tmp_path)
    assert os.access(bundle, os.W_OK)
    before = tree_checksums(str(root))
    result = run_module(diagnose_bundle, {"bundle": bundle})
    assert result["files"] == [] and result["output_dir"] is None
    assert "inside the installed collection ckptio.nfs (%s)" % root in result["msg"]
    fallback = tmp_path / "project" / "reports" / "seed_like_baseline-diagnosis"
    result = run_module(diagnose_bundle, {"bundle": bundle, "fallback_output_dir": str(fallback)})
    assert result["changed"] is True and sorted(os.listdir(str(fallback))) == ["diagnosis.json", "diagnosis.md"]
    # Through a symlink from elsewhere too: the rule looks at the resolved path.
    link = tmp_path / "link"
    link.symlink_to(bundle)
    result = run_module(diagnose_bundle, {"bundle": str(link), "fallback_output_dir": str(fallback)})
    assert result["changed"] is False and result["output_dir"] == str(fallback)
    assert tree_checksums(str(root)) == before


def test_check_mode_creates_no_output_directory(tmp_path):
    _root, bundle = installed_copy(tmp_path)
    fallback = tmp_path / "reports" / "x-diagnosis"
    result = run_module(diagnose_bundle, {"bundle": bundle, "fallback_output_dir": str(fallback)}, check_mode=True)
    assert result["changed"] is True and result["msg"].startswith("would write diagnosis.json and diagnosis.md in %s" % fallback)
    assert not os.path.exists(str(tmp_path / "reports"))


def test_an_output_dir_that_is_a_file_is_refused_naming_the_option(tmp_path):
    bundle = copy_bundle("seed_like_baseline", tmp_path)
    (tmp_path / "file").write_text("x")
    assert fail_module(diagnose_bundle, {"bundle": bundle, "output_dir": str(tmp_path / "file")})["msg"] == (
        "output_dir: %s is not a directory" % (tmp_path / "file"))


def test_a_large_bundle_returns_without_the_per_host_blocks_diagnosis_json_holds(tmp_path):
    """Issue 27: above 16 clients the result leaves their per-host entries to diagnosis.json."""
    root = str(tmp_path / "bundle")
    shutil.copytree(sample_path("..", "captures", "healthy"), root)
    clients = os.path.join(root, "clients")
    for index in range(17):
        shutil.copytree(os.path.join(clients, "nfs2"), os.path.join(clients, "c%02d" % index))
    result = run_module(diagnose_bundle, {"bundle": root})
    with open(os.path.join(root, "diagnosis.json")) as handle:
        text = handle.read()
    saved = json.loads(text)
    # Above 16 hosts diagnosis.json is compact (half its size is indentation); the same values.
    assert text == json.dumps(saved, separators=(",", ":"), sort_keys=True) + "\n"
    returned = result["diagnosis"]
    assert len(saved["clients"]) == 19 and returned["clients"] == {} and returned["per_host_left_out"] == 19
    assert returned["servers"] == saved["servers"] and list(returned["cpu"]) == ["nfs1"]
    assert [row["host"] for row in returned["network"]["links"]] == ["nfs1"]
    # The per-host lists of mounts and loss rows too (a 16,384-client result was 10 MB through the controller).
    assert len(saved["mounts"]) == 19 and returned["mounts"] == {}
    assert len(saved["network"]["loss"]["hosts"]) == 20 and [row["host"] for row in returned["network"]["loss"]["hosts"]] == ["nfs1"]
    assert returned["network"]["loss"]["state"] == saved["network"]["loss"]["state"]
    # And each client's probe retransmits (16,384 entries, 1.1 MB, 0.45 s of exit_json's no_log walk).
    assert len(saved["network"]["loss"]["probe"]) == 19 and returned["network"]["loss"]["probe"] == {}
    assert not [item for item in returned["evidence"] if " on c0" in item["signal"] or " on nfs2" in item["signal"]]
    assert returned["verdict"] == saved["verdict"] and returned["first_screen"] == saved["first_screen"]
    small_root = str(tmp_path / "small")
    shutil.copytree(sample_path("..", "captures", "healthy"), small_root)
    small = run_module(diagnose_bundle, {"bundle": small_root})["diagnosis"]
    assert small["per_host_left_out"] is None and set(small["clients"]) == {"nfs2", "nfs3"}
    with open(os.path.join(small_root, "diagnosis.json")) as handle:
        small_text = handle.read()
    assert small_text == json.dumps(json.loads(small_text), indent=2, sort_keys=True) + "\n"


def test_a_forked_reader_killed_like_the_oom_killer_does_fails_cleanly_naming_it(tmp_path, monkeypatch):
    """Issue 45: a forked reader SIGKILLed (the OOM killer) left diagnose_bundle waiting for ever; now the module
    fails within seconds naming the reader, its chunk and the signal, and writes nothing."""
    import signal
    import time
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import run
    from ansible_collections.ckptio.nfs.plugins.module_utils.host import parallel_map
    bundle = str(tmp_path / "healthy")
    shutil.copytree(sample_path("..", "captures", "healthy"), bundle)
    monkeypatch.setattr(run, "PARALLEL_CLIENTS", 0)
    monkeypatch.setattr(run, "CLIENT_CHUNK", 1)
    monkeypatch.setattr(parallel_map, "workers_for", lambda items, least: 2)
    monkeypatch.setattr(parallel_map, "IDLE_SECONDS", 10.0)
    real_read_chunk = run._read_chunk

    def read_chunk(shared, hosts):
        if "nfs3" in hosts:
            os.kill(os.getpid(), signal.SIGKILL)
        return real_read_chunk(shared, hosts)
    monkeypatch.setattr(run, "_read_chunk", read_chunk)
    before = tree_checksums(bundle)
    started = time.monotonic()
    result = fail_module(diagnose_bundle, {"bundle": bundle})
    assert time.monotonic() - started < 10
    assert "chunk 1 of 2" in result["msg"] and "SIGKILL" in result["msg"] and bundle in result["msg"]
    assert tree_checksums(bundle) == before
