"""Files saved by hand -> a capture bundle (module_utils/paste/saved_files.py), on real lab captures.

Raw /proc files are the lab captures in tests/fixtures/captures and tests/fixtures/samples, used
under other names; the nfsstat, nfsiostat and mountstats command outputs in tests/fixtures/saved
were made by nfs-utils 2.6.2 from those captures (tests/fixtures/saved/NOTES.txt says how).
"""
from __future__ import annotations

import os
import re

import pytest
import yaml

from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import saved_files
from ansible_collections.ckptio.nfs.plugins.module_utils.host import bundle_reader
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import diagnose as diagnosis
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import markdown, verdict
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import iter_mountstats, since_mount_sample
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.nfsd_stats import nfsd_text_from_nfsstat, parse_nfsd_stats
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.stats_delta import mountstats_delta
from ansible_collections.ckptio.nfs.tests.unit.utils import broken_capture, read_sample

FIXTURES = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures"))
SEED = "captures/seed_like_v41"
TARGET = {"checkpoint_bytes": 2400000000, "window_seconds": 300}


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return handle.read()


def seed(*parts):
    return fixture(SEED, *parts)


def seed_client_files():
    # Names that sort the wrong way round: the order must come from the counters.
    return [("a-later.txt", seed("clients/nfs2/mountstats_after.txt")), ("b-earlier.txt", seed("clients/nfs2/mountstats_before.txt"))]


def write_bundle(directory, plan):
    for relative, text in list(plan["files"].items()) + [(bundle.CONTEXT_FILE, saved_files.context_text(plan["context"]))]:
        path = os.path.join(directory, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
    return directory


# ---------------------------------------------------------------- what each file is

@pytest.mark.parametrize("parts, kind", [
    ((SEED, "clients/nfs2/mountstats_before.txt"), "mountstats"),
    (("samples", "mountstats-v41-nconnect4-after-2GiB-write.txt"), "mountstats"),
    ((SEED, "servers/nfs1/nfsd_after.txt"), "nfsd"),
    ((SEED, "servers/nfs1/pool_stats_after.txt"), "pool_stats"),
    (("saved", "nfsstat-s_after.txt"), "nfsstat_server"),
    (("saved", "nfsstat-s-v_before.txt"), "nfsstat_server"),
    (("saved", "nfsiostat_after.txt"), "nfsiostat"),
    (("saved", "mountstats-tool_after.txt"), "mountstats_report"),
    ((SEED, "clients/nfs2/sunrpc.txt"), "unknown"),
    ((SEED, "clients/nfs2/dstate.txt"), "unknown"),
    ((SEED, "servers/nfs1/threads.txt"), "unknown"),
])
def test_saved_file_kind_comes_from_the_content(parts, kind):
    assert saved_files.classify(fixture(*parts)) == kind


def test_saved_file_kind_of_empty_and_of_a_note_typed_above_a_snapshot():
    assert saved_files.classify("\n \n") == "empty"
    assert saved_files.classify("# saved at 03:12 on gpu017\n" + seed("clients/nfs2/mountstats_after.txt")) == "mountstats"


# ---------------------------------------------------------------- formats: nfsstat -s, the zero sample

@pytest.mark.parametrize("moment", ["before", "after"])
def test_saved_nfsstat_s_v_gives_back_every_counter_it_printed(moment):
    text, labels = nfsd_text_from_nfsstat(fixture("saved", "nfsstat-s-v_%s.txt" % moment))
    assert labels == ["net", "rpc", "rc", "io", "fh", "proc4", "proc4ops"]
    derived, raw = parse_nfsd_stats(text), parse_nfsd_stats(seed("servers/nfs1/nfsd_%s.txt" % moment))
    for label in ("net", "rpc", "rc", "io", "fh", "proc4"):
        assert derived[label] == raw[label], label
    # nfsstat 2.6.2 knows 71 v4 operations (up to WRITE_SAME); the kernel prints 76.
    assert len(derived["proc4ops"]) == 71
    assert all(raw["proc4ops"][name] == value for name, value in derived["proc4ops"].items())
    assert derived["proc4ops"]["WRITE"] == raw["proc4ops"]["WRITE"] > 0


def test_saved_plain_nfsstat_s_has_no_io_or_packets():
    text, labels = nfsd_text_from_nfsstat(fixture("saved", "nfsstat-s_after.txt"))
    assert labels == ["rpc", "proc4", "proc4ops"]
    assert parse_nfsd_stats(text)["rpc"]["calls"] == 2739


def test_saved_nfsstat_with_two_reports_in_one_file_is_refused():
    twice = fixture("saved", "nfsstat-s_before.txt") + fixture("saved", "nfsstat-s_after.txt")
    with pytest.raises(ValueError, match="printed twice"):
        nfsd_text_from_nfsstat(twice)


def _nfsiostat_write_row():
    """nfsiostat's write row: ops/s, kB/s, kB/op, retrans, retrans %, avg RTT, avg exe, avg queue, ..."""
    lines = fixture("saved", "nfsiostat_after.txt").splitlines()
    row = lines[[index for index, line in enumerate(lines) if line.startswith("write:")][0] + 1]
    return [float(word) for word in re.findall(r"[\d.]+", row)]


def test_saved_zero_sample_gives_nfsiostats_since_mount_figures():
    """nfsiostat's first report is the since-mount average: the delta against the zero sample is the same."""
    after = seed("clients/nfs2/mountstats_after.txt")
    zero = since_mount_sample(after)
    delta = mountstats_delta(after, zero, mount_points=["/mnt/nfs"])[-1]
    assert delta["usable"] and delta["interval_seconds"] == 638.0
    write = delta["ops"]["WRITE"]
    ops_per_second, kib_per_second, _kb_per_op, _retrans, _pct, rtt, exe, queue = _nfsiostat_write_row()[:8]
    assert round(write["ops_per_second"], 3) == ops_per_second
    assert round(write["avg_rtt_ms"], 3) == rtt and round(write["avg_exe_ms"], 3) == exe and round(write["avg_queue_ms"], 3) == queue
    assert round(write["kib_per_second"], 3) == kib_per_second
    # The same figures as the "since mount" delta stats_delta computes with no before sample.
    since = mountstats_delta(after, None, mount_points=["/mnt/nfs"])[-1]
    # (with no before sample every op is listed; against zeros only the ops that moved)
    assert dict((name, op) for name, op in since["ops"].items() if name in delta["ops"]) == delta["ops"]
    assert all(op["ops"] == 0 for name, op in since["ops"].items() if name not in delta["ops"])
    assert since["bytes"] == delta["bytes"] and since["rpc"]["sends"] == delta["rpc"]["sends"]


def test_saved_zero_sample_keeps_the_mounts_and_their_lines():
    after = read_sample("mountstats-v41-nconnect4-after-2GiB-write.txt")
    zero = since_mount_sample(after)
    (mount,), (original,) = list(iter_mountstats(zero)), list(iter_mountstats(after))
    assert mount.identity() == original.identity() and mount.opts_text == original.opts_text
    assert mount.age == 0 and mount.truncated is None and len(mount.xprt_lines) == 4
    assert set(mount.op_lines) == set(original.op_lines)
    assert all(set(values) == {0} for values in mount.ops.values())
    assert mount.other == original.other


# ---------------------------------------------------------------- the client pair

def test_saved_two_snapshots_are_ordered_by_the_mounts_age_not_the_names():
    pair = saved_files.client_pair(seed_client_files())
    assert pair["before"][0] == "b-earlier.txt" and pair["after"][0] == "a-later.txt"
    assert pair["window"] == "snapshots" and pair["seconds"] == 638 - 511 and pair["mount_point"] == "/mnt/nfs"


def test_saved_pasted_snapshots_keep_their_mount_without_a_final_newline():
    """A paste's last line has no newline (issue 25): the layout is repaired first, the mount is not taken as cut short."""
    (after_name, after), (before_name, before) = seed_client_files()
    pasted = "\r\n".join("    " + line for line in after.split("\n")).rstrip("\r\n ").replace(" ", "\u00a0")
    plan = saved_files.plan_bundle([(after_name, pasted), (before_name, before)], {"checkpoint_bytes": 1, "window_seconds": 1})
    assert plan["window"] == "snapshots" and plan["interval_seconds"] == 638 - 511
    assert any(note.startswith("%s: layout repaired (CR/CRLF line ends" % after_name) and "no newline after the last line" in note
               for note in plan["notes"])
    assert saved_files.classify(after.rstrip("\n")) == "mountstats"


def test_saved_snapshots_of_two_clients_are_refused_as_mixed_mounts():
    files = [("x.txt", fixture("captures/healthy/clients/nfs2/mountstats_before.txt")),
             ("y.txt", fixture("captures/healthy/clients/nfs3/mountstats_after.txt"))]
    with pytest.raises(saved_files.SavedFilesError, match=r"x.txt and y.txt are not two snapshots of one mount on /mnt/nfs: "
                                                          r"clientaddr=10.0.0.2 vs clientaddr=10.0.0.3"):
        saved_files.client_pair(files)


def test_saved_snapshots_of_two_exports_are_refused_as_mixed_mounts():
    files = [("lab1.txt", seed("clients/nfs2/mountstats_before.txt")),
             ("lab2.txt", fixture("samples/bundles/seed_like_baseline/clients/nfs2/mountstats_after.txt"))]
    with pytest.raises(saved_files.SavedFilesError, match="device nfs1:/srv/nfs vs 10.0.0.1:/srv/nfs"):
        saved_files.client_pair(files)


def test_saved_counters_that_went_back_are_refused_never_averaged():
    # The remount fixture: age rose from 26 to 40, every counter went back.
    files = [("one.txt", fixture("samples/bundles/seed_like_baseline/clients/nfs2/mountstats_after.txt")),
             ("two.txt", broken_capture("mountstats_after_remounted_age_rose.txt").decode())]
    with pytest.raises(saved_files.SavedFilesError) as raised:
        saved_files.client_pair(files)
    message = str(raised.value)
    assert "two.txt (age 40 s) after one.txt (age 26 s)" in message and "(reset)" in message
    assert "went backwards" in message and "never averaged" in message


def test_saved_the_same_snapshot_twice_has_no_window():
    text = seed("clients/nfs2/mountstats_after.txt")
    with pytest.raises(saved_files.SavedFilesError, match="same age \\(638 s\\) in both"):
        saved_files.client_pair([("a", text), ("b", text)])


def test_saved_snapshot_cut_short_is_refused():
    cut = broken_capture("mountstats_after_cut_in_write.txt").decode()
    with pytest.raises(saved_files.SavedFilesError, match="cut short"):
        saved_files.client_pair([("cut.txt", cut)])


def test_saved_several_mount_points_need_mount_point():
    text = broken_capture("mountstats_non_utf8_mount_points.escaped.txt").decode("utf-8", "surrogateescape")
    with pytest.raises(saved_files.SavedFilesError, match="^mount_point: the snapshots hold NFS mounts on "):
        saved_files.client_pair([("ms.txt", text)])
    assert saved_files.client_pair([("ms.txt", text)], "/mnt/nfs")["window"] == "since_mount"


def test_saved_three_snapshots_are_refused():
    with pytest.raises(saved_files.SavedFilesError, match="3 mountstats snapshots"):
        saved_files.client_pair(seed_client_files() + [("c", read_sample("mountstats-v41-nconnect4-after-2GiB-write.txt"))])


def test_saved_no_mountstats_is_refused():
    with pytest.raises(saved_files.SavedFilesError, match="no /proc/self/mountstats snapshot"):
        saved_files.plan_bundle([("nfsd", seed("servers/nfs1/nfsd_after.txt"))], TARGET)


# ---------------------------------------------------------------- the server pair

def test_saved_server_snapshots_are_ordered_by_their_counters_and_nfsstat_joins_raw():
    files = seed_client_files() + [
        ("1-nfsstat.txt", fixture("saved", "nfsstat-s-v_after.txt")), ("2-nfsd.txt", seed("servers/nfs1/nfsd_before.txt")),
        ("3-pool.txt", seed("servers/nfs1/pool_stats_after.txt")), ("4-pool.txt", seed("servers/nfs1/pool_stats_before.txt"))]
    plan = saved_files.plan_bundle(files, TARGET, server="nfs1")
    used = dict((row["used_as"], row["file"]) for row in plan["sources"])
    assert used == {"clients/client/mountstats_before.txt": "b-earlier.txt", "clients/client/mountstats_after.txt": "a-later.txt",
                    "servers/nfs1/nfsd_before.txt": "2-nfsd.txt", "servers/nfs1/nfsd_after.txt": "1-nfsstat.txt",
                    "servers/nfs1/pool_stats_before.txt": "4-pool.txt", "servers/nfs1/pool_stats_after.txt": "3-pool.txt"}
    assert plan["files"]["servers/nfs1/nfsd_before.txt"] == seed("servers/nfs1/nfsd_before.txt")
    assert parse_nfsd_stats(plan["files"]["servers/nfs1/nfsd_after.txt"])["io"] == {"bytes_read": 0, "bytes_written": 134217728}
    assert plan["unusable"] == [] and any("1-nfsstat.txt: nfsstat -s output" in note for note in plan["notes"])


def test_saved_server_counters_of_two_servers_are_refused():
    files = seed_client_files() + [("lab1", seed("servers/nfs1/nfsd_after.txt")),
                                   ("lab2", fixture("samples/bundles/seed_like_baseline/servers/nfs1/nfsd_after.txt"))]
    with pytest.raises(saved_files.SavedFilesError, match="lab1 and lab2: server counters went both ways"):
        saved_files.plan_bundle(files, TARGET)


def test_saved_one_server_snapshot_is_unusable():
    files = seed_client_files() + [("nfsd", seed("servers/nfs1/nfsd_after.txt")), ("pool", seed("servers/nfs1/pool_stats_after.txt"))]
    plan = saved_files.plan_bundle(files, TARGET)
    assert [(row["file"], row["kind"]) for row in plan["unusable"]] == [("nfsd", "nfsd"), ("pool", "pool_stats")]
    assert "since the server booted" in plan["unusable"][0]["reason"]
    assert sorted(plan["files"]) == ["clients/client/mountstats_after.txt", "clients/client/mountstats_before.txt"]


def test_saved_rates_and_reports_are_unusable_and_say_why():
    files = seed_client_files() + [("io.txt", fixture("saved", "nfsiostat_after.txt")),
                                   ("ms.out", fixture("saved", "mountstats-tool_after.txt")), ("notes", seed("clients/nfs2/sunrpc.txt"))]
    unusable = dict((row["file"], row) for row in saved_files.plan_bundle(files, TARGET)["unusable"])
    assert unusable["io.txt"]["kind"] == "nfsiostat" and "makes no before/after delta" in unusable["io.txt"]["reason"]
    assert "compare them by eye" in unusable["io.txt"]["reason"]
    assert unusable["ms.out"]["kind"] == "mountstats_report" and unusable["notes"]["kind"] == "unknown"


# ---------------------------------------------------------------- the bundle and its diagnosis

def test_saved_single_snapshot_is_a_since_mount_bundle_without_server_files():
    files = [("ms.txt", read_sample("mountstats-v41-nconnect4-after-2GiB-write.txt")),
             ("n1", seed("servers/nfs1/nfsd_before.txt")), ("n2", seed("servers/nfs1/nfsd_after.txt"))]
    plan = saved_files.plan_bundle(files, TARGET, client="gpu017")
    assert plan["window"] == "since_mount" and plan["interval_seconds"] == 178.0
    assert sorted(plan["files"]) == ["clients/gpu017/mountstats_after.txt", "clients/gpu017/mountstats_before.txt"]
    assert [row["file"] for row in plan["unusable"]] == ["n1", "n2"]
    saved = yaml.safe_load(saved_files.context_text(plan["context"]))["saved"]
    assert saved["window"] == "since_mount" and saved["window_seconds"] == 178.0 and saved["written_by"] == saved_files.WRITER
    assert saved["files"]["clients/gpu017/mountstats_before.txt"].startswith("zero counters")
    assert "not a checkpoint window" in saved["notes"][0]


def test_saved_bundle_diagnoses_with_the_same_client_figures_as_the_lab_bundle(tmp_path):
    files = seed_client_files() + [("s1", seed("servers/nfs1/nfsd_after.txt")), ("s2", seed("servers/nfs1/nfsd_before.txt")),
                                   ("p1", seed("servers/nfs1/pool_stats_before.txt")), ("p2", seed("servers/nfs1/pool_stats_after.txt"))]
    directory = write_bundle(str(tmp_path / "bundle"), saved_files.plan_bundle(files, TARGET, client="nfs2", server="nfs1"))
    result = diagnosis.diagnose(bundle_reader.load_bundle(directory))
    lab = bundle_reader.load_bundle(os.path.join(FIXTURES, SEED))
    lab["clients"] = {"nfs2": lab["clients"]["nfs2"]}
    lab_result = diagnosis.diagnose(lab)
    # Everything from the mountstats pair; dstate.txt and sunrpc.txt are not among the saved files.
    ours, theirs = result["clients"]["nfs2"], lab_result["clients"]["nfs2"]
    assert (ours.pop("dstate"), ours.pop("sunrpc")) == (None, {}) and theirs.pop("dstate") and theirs.pop("sunrpc")
    assert ours == theirs
    server, lab_server = result["servers"]["nfs1"], lab_result["servers"]["nfs1"]
    assert (server["rpc_calls"], server["pool_stats"]) == (lab_server["rpc_calls"], lab_server["pool_stats"])
    # No canary here: achieved = NFS WRITE bytes over the age delta; the seed's slots still limit.
    assert result["verdict"] in verdict.VERDICTS and result["limiting_layer"] == "client_rpc_slots"
    assert result["window"] == {"kind": "snapshots", "seconds": 127.0, "source": "files saved by hand"}
    assert "Since-mount" not in result["summary"]


def test_saved_since_mount_bundle_is_flagged_by_the_diagnosis(tmp_path):
    plan = saved_files.plan_bundle([("ms.txt", read_sample("mountstats-v41-nconnect4-after-2GiB-write.txt"))], TARGET)
    result = diagnosis.diagnose(bundle_reader.load_bundle(write_bundle(str(tmp_path / "bundle"), plan)))
    assert result["verdict"] in verdict.VERDICTS and result["limiting_layer"] in verdict.LAYERS
    assert result["window"]["kind"] == "since_mount" and result["confidence"] != "high"
    assert result["summary"].endswith("Since-mount average over 178 s, not a checkpoint window.")
    assert any(row["signal"] == "statistics window: since the mount" and row["crossed"] for row in result["evidence"])
    assert any("since-mount averages" in reason for reason in result["confidence_reasons"])
    assert "Since-mount average over 178 s" in markdown.render_markdown(result)
    # 2 GiB over the mount's 178 s.
    assert result["achieved_bytes_per_second"] == pytest.approx(2147483648 / 178.0)


def _connect_rows(result):
    return [row for row in result["evidence"] if row["signal"].startswith("transport connects")]


def test_saved_since_mount_bundle_does_not_take_the_mounts_own_connects_for_reconnects(tmp_path):
    # A fresh mount's xprt connect_count is 2 per transport on 5.10, 6.1 and 6.12 (a TCP connect
    # counts its start and its establishment, net/sunrpc/xprtsock.c): the nconnect=4 sample's 8
    # connects are the mount's own, not 8 reconnects "during the checkpoint".
    sample = read_sample("mountstats-v41-nconnect4-after-2GiB-write.txt")
    assert sample.count("xprt:\ttcp 0 0 2 0 ") == 4
    plan = saved_files.plan_bundle([("ms.txt", sample)], TARGET)
    result = diagnosis.diagnose(bundle_reader.load_bundle(write_bundle(str(tmp_path / "bundle"), plan)))
    assert [(row["value"], row["crossed"]) for row in _connect_rows(result)] == [(0, False)]
    assert "since the mount" in _connect_rows(result)[0]["signal"]
    assert not [rec for rec in result["recommendations"] if rec["setting"] == "nfsd max_connections"]


def test_saved_since_mount_bundle_names_connects_beyond_the_mounts_own_as_since_the_mount(tmp_path):
    sample = read_sample("mountstats-v41-nconnect4-after-2GiB-write.txt").replace("xprt:\ttcp 0 0 2 0 1 347 ", "xprt:\ttcp 0 0 5 0 1 347 ")
    plan = saved_files.plan_bundle([("ms.txt", sample)], TARGET)
    result = diagnosis.diagnose(bundle_reader.load_bundle(write_bundle(str(tmp_path / "bundle"), plan)))
    assert [(row["value"], row["crossed"]) for row in _connect_rows(result)] == [(3, True)]
    rec = [rec for rec in result["recommendations"] if rec["setting"] == "nfsd max_connections"][0]
    assert "since the mount" in rec["reason"] and "during the checkpoint" not in rec["reason"]


def test_saved_pair_over_an_idle_transport_opening_again_reports_no_churn(tmp_path):
    # The lab's v3 mount, its transport closed after 5 min unused, then a 4 MiB write (samples/idle_reopen):
    # connect_count rose by 2, one reopening, not a reconnect for nfsd's connection limit.
    files = [("after.txt", read_sample("idle_reopen", "mountstats_after.txt")), ("before.txt", read_sample("idle_reopen", "mountstats_before.txt"))]
    plan = saved_files.plan_bundle(files, TARGET, mount_point="/mnt/nfs3")
    result = diagnosis.diagnose(bundle_reader.load_bundle(write_bundle(str(tmp_path / "bundle"), plan)))
    (row,) = _connect_rows(result)
    assert (row["value"], row["crossed"]) == (0, False) and "during the window" in row["signal"]
    assert "not counted: 2 from transports the before sample showed closed" in row["explanation"]
    assert not [rec for rec in result["recommendations"] if rec["setting"] == "nfsd max_connections"]


def test_saved_stale_files_are_only_bundle_table_paths():
    old = yaml.safe_dump({"saved": {"written_by": saved_files.WRITER, "files": {
        "clients/old/mountstats_before.txt": "x", "clients/new/mountstats_before.txt": "x", "../../etc/passwd": "x",
        "clients/../mountstats_after.txt": "x", "clients/a/notes.txt": "x", "servers/s/nfsd_after.txt": "x", "context.yml": "x"}}})
    assert saved_files.stale_files(old, {"clients/new/mountstats_before.txt"}) == [
        "clients/old/mountstats_before.txt", "servers/s/nfsd_after.txt"]
    assert saved_files.written_here(old) and not saved_files.written_here("mount_point: /mnt/nfs\n")
    assert saved_files.stale_files("{not yaml", set()) == [] and not saved_files.written_here("{not yaml")
