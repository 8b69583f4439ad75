"""Issue 47: the slot table seen fill, on synthetic bundles built from fixture captures (slot_bundles.py)."""
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import slot_samples
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.headline import SCREEN_COLUMNS, SCREEN_LINES
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.markdown import render_markdown
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.diagnosis import slot_bundles


def _row(result, prefix):
    return next(row for row in result["evidence"] if row["signal"].startswith(prefix))


def _why_not(result, layer):
    return dict((row["layer"], row["why"]) for row in result["why_not"]).get(layer)


def test_a_full_session_is_said_in_the_seeds_words_and_names_client_slots(tmp_path):
    # small_files: the send side did not back up, so a full table is the slots' own
    result = diagnose(load_bundle(slot_bundles.bundle(tmp_path, slot_bundles.full_session(), "small_files")))
    table = result["slot_table"]
    assert (table["samples"], table["full_samples"], table["full"], table["session_waits"]) == (40, 36, True, True)
    assert table["text"].startswith("slot table full in 90 % of samples (160 of 160 session slots")
    assert "direct evidence for client RPC slots" in table["text"]
    assert "client_rpc_slots" in [result["limiting_layer"]] + result["contributing"]
    assert _row(result, "slot table full")["crossed"] and _row(result, "RPCs waiting for a session slot")["crossed"]
    screen = result["first_screen"]
    assert any(line.startswith("Slot table full in 90 % of samples (160 of 160 session slots") for line in screen)
    assert len(screen) <= SCREEN_LINES and all(len(line) <= SCREEN_COLUMNS for line in screen)
    host = table["hosts"][0]
    assert (host["kind"], host["peak_in_use"], host["cap"], host["cap_source"]) == ("session", 160, 160, "the server's grant")
    assert host["max_waiters"] == 30 and host["reply_share"] < 0.1


def test_a_full_table_with_the_reply_wait_dominating_points_at_the_server(tmp_path):
    result = diagnose(load_bundle(slot_bundles.bundle(tmp_path, slot_bundles.full_but_replies(), "small_files")))
    table = result["slot_table"]
    assert table["full"] and table["reply_dominates"] and "the server holds the slots" in table["text"]
    assert "client_rpc_slots" not in [result["limiting_layer"]] + result["contributing"]
    assert not _row(result, "slot table full")["crossed"] and _row(result, "WRITE time waiting")["crossed"]
    assert "not counted: the WRITEs waited mostly for the server's reply" in _row(result, "slot table full")["explanation"]


def test_a_table_far_from_full_rules_client_slots_out_where_mountstats_counted_them(tmp_path):
    # lab_figures names client slots as contributing from mountstats alone (queue time against RTT)
    before = diagnose(load_bundle(slot_bundles.sample_path("..", "captures", "lab_figures")))
    assert "client_rpc_slots" in before["contributing"]
    result = diagnose(load_bundle(slot_bundles.bundle(tmp_path, slot_bundles.far_from_full(), "lab_figures")))
    assert result["slot_table"]["clear"] and "client_rpc_slots" not in [result["limiting_layer"]] + result["contributing"]
    why = _why_not(result, "client_rpc_slots")
    assert why.startswith("not the client's RPC slots: slot table far from full: full in 0 % of samples (12 of 160 session slots")
    assert why in render_markdown(result)


def test_the_files_not_seen_are_named_client_by_client(tmp_path):
    files = slot_bundles.full_session()
    files["rpc_tasks.txt"] = "# not seen: /sys/kernel/debug is not mounted (ckptio_mount_debugfs false)\n"
    del files["rpc_latency.txt"]
    result = diagnose(load_bundle(slot_bundles.bundle(tmp_path, files, "small_files")))
    missing = dict((row["file"], (row["why"], row["hosts"], row["count"])) for row in result["slot_table"]["not_seen"])
    assert missing["rpc_tasks.txt"] == ("not seen: /sys/kernel/debug is not mounted (ckptio_mount_debugfs false)", ["nfs2", "nfs3"], 2)
    assert missing["rpc_latency.txt"] == ("no rpc_latency.txt in the bundle", ["nfs2", "nfs3"], 2)
    row = _row(result, "rpc_tasks.txt not seen on 2 hosts (nfs2, nfs3)")
    assert not row["crossed"] and "RPCs waiting for a session slot" in row["explanation"]
    # the transports alone: 40 in use of 4 x 65536, never full
    assert result["slot_table"]["clear"] and result["slot_table"]["hosts"][0]["kind"] == "transport"


def test_a_bundle_read_streamed_or_whole_gives_one_diagnosis(tmp_path):
    path = slot_bundles.bundle(tmp_path, slot_bundles.full_session())
    assert json.dumps(diagnose(load_bundle(path, stream=True)), sort_keys=True) == json.dumps(
        diagnose(load_bundle(path)), sort_keys=True)


MOUNTSTATS = ("device 192.168.122.10:/srv/nfs mounted on /mnt/nfs with fstype nfs4 statvers=1.1\n"
              "\topts:\trw,vers=4.1,rsize=1048576,wsize=1048576,proto=tcp,nconnect=2,addr=192.168.122.10,clientaddr=192.168.122.11\n"
              "\tage:\t100\n"
              "\tRPC iostats version: 1.1  p/v: 100003/4 (nfs)\n"
              "\txprt:\ttcp 871 0 2 0 22 29 29 0 36 0 128 34 4\n"
              "\txprt:\ttcp 872 0 2 0 22 29 29 0 36 0 128 34 4\n"
              "\tper-op statistics\n")


def test_transports_map_to_the_mount_by_source_port_and_tasks_by_server():
    other = slot_bundles.XPRT_INFO.format(cap=2, reqs=2, pending=2, backlog=9, main=1, port=700)
    mine = slot_bundles.XPRT_INFO.format(cap=65536, reqs=5, pending=5, backlog=0, main=1, port=871)
    xprt = "=== sample t=0.0 ===\n--- xprt-switches/switch-0/xprt-0-tcp ---\n%s--- xprt-switches/switch-1/xprt-1-tcp ---\n%s" % (
        mine, other)
    tasks = ("=== sample t=0.0 ===\n--- rpc_clnt/4/tasks ---\n" + slot_bundles.TASK % (
        1, 0xa81, 0, 4, 7, 0, "ops", "nfs", 4, "WRITE", "call_status", "xprt_pending") +
        "--- rpc_clnt/4/xprt/info ---\nnetid: tcp\naddr:  192.168.122.10\nport:  2049\n--- rpc_clnt/a/tasks ---\n" +
        slot_bundles.TASK % (2, 0xa81, 0, 10, 0, 0, "ops", "nfs", 4, "WRITE", "call_start", "ForeChannel Slot table"))
    summary = slot_samples.summarize({"sunrpc_xprt": xprt, "rpc_tasks": tasks}, "/mnt/nfs", MOUNTSTATS)
    assert summary["transport"]["mapped"] and summary["transport"]["xprt_ids"] == [0]
    assert summary["transport"]["max_backlog"] == 0 and summary["transport"]["cap"] == 65536
    assert summary["session"]["mapped"] and summary["session"]["client_ids"] == [4]
    assert summary["session"]["max_waiters"] == 0 and summary["full"]["full"] == 0
    assert summary["not_seen"] == {"rpc_latency": "no rpc_latency.txt in the bundle"}


def test_no_file_no_summary():
    assert slot_samples.summarize({}, "/mnt/nfs", MOUNTSTATS) is None


@pytest.mark.parametrize("name", ["healthy", "lab_figures", "seed_like_v41"])
def test_fixture_bundles_without_the_files_have_no_slot_table(name):
    result = diagnose(load_bundle(slot_bundles.sample_path("..", "captures", name)))
    assert "slot_table" not in result and "slot_table_text" not in result["headline"]
    # One row says the table was not seen (issue 47's done-when), nothing else of it (test_slot_table_unseen.py).
    assert [row["signal"] for row in result["evidence"] if "not seen" in row["signal"]] == [
        "slot table not seen (sunrpc_xprt.txt, rpc_tasks.txt, rpc_latency.txt)"]
    assert os.path.isdir(slot_bundles.sample_path("..", "captures", name))


def test_figures_json_carries_the_slot_table_and_gives_the_row_the_files_give(tmp_path):
    # The bundle's writer works each client's row out once (host_figures.figures_file) and the reader takes it back
    # while the files are unchanged: the slot-table summary must come back the same.
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import client_row, host_figures, run
    from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle import CLIENT_FILES, FIGURES_FILE
    path = slot_bundles.bundle(tmp_path, slot_bundles.full_session(), "small_files")
    loaded = load_bundle(path, stream=True)
    mount_point, clients = loaded["context"]["mount_point"], loaded["clients"]
    used = 0
    for host in clients:
        directory = os.path.join(path, "clients", host)
        files = [{"name": name, "content": open(os.path.join(directory, name), encoding="utf-8").read()}
                 for name in CLIENT_FILES.values() if os.path.exists(os.path.join(directory, name))]
        figures = host_figures.figures_file(files, {"mounts": [{"mount_point": mount_point}]})
        if not figures:
            continue
        with open(os.path.join(directory, FIGURES_FILE), "w", encoding="utf-8") as handle:
            handle.write(figures["content"])
        texts = clients.texts(host, {FIGURES_FILE: FIGURES_FILE})
        from_figures = host_figures.read_row(host, texts, mount_point, None)
        from_files = client_row.client_row(host, clients.parsed(host, texts), mount_point)
        assert from_figures is not None and from_figures[0]["slot_table"] == from_files[0]["slot_table"]
        assert run._client_row(clients, host, mount_point, None, None)[0]["slot_table"]["full"]["full"] == 18  # pylint: disable=protected-access
        used += 1
    assert used


def test_a_trace_of_the_same_rpcs_agrees_with_mountstats_and_one_that_is_not_is_flagged(tmp_path):
    # rpc_count_iostats_metrics adds the same three times to mountstats and to the tracepoint: a trace of the window's
    # WRITEs gives mountstats' averages (issue 47's done-when: within 10 %).
    base = diagnose(load_bundle(slot_bundles.sample_path("..", "captures", "small_files")))["clients"]["nfs2"]
    line = ("           <...>-57    [001] .....  %.6f: rpc_stats_latency: task:%08x@00000004 xid=0x%08x nfsv4 WRITE "
            "backlog=%d rtt=%d execute=%d xprt_id=0\n")
    text = "".join(line % (1.0 + index / 1000.0, index, index, round(base["write_avg_queue_ms"] * 1000),
                           round(base["write_avg_rtt_ms"] * 1000), round(base["write_avg_exe_ms"] * 1000)) for index in range(100))
    path = slot_bundles.bundle(tmp_path, {"rpc_latency.txt": text}, "small_files")
    os.remove(os.path.join(path, "clients", "nfs3", "rpc_latency.txt"))  # nfs2's WRITEs, not nfs3's
    result = diagnose(load_bundle(path))
    row = _row(result, "rpc_stats_latency WRITE means against mountstats")
    assert row["value"] < 0.01 and not row["crossed"]
    assert result["slot_table"]["text"].startswith("slot table not sampled: nfs2 no rpc_tasks.txt in the bundle")
    off = diagnose(load_bundle(slot_bundles.bundle(tmp_path / "off", slot_bundles.full_session(), "small_files")))
    assert _row(off, "rpc_stats_latency WRITE means against mountstats")["crossed"]


def test_a_task_waiting_for_a_transport_slot_makes_its_sample_full():
    # NFSv3/v4.0: xprt_add_backlog queues a task on xprt_backlog when every transport slot is taken
    tasks = "".join("=== sample t=%.1f ===\n--- rpc_clnt/0/tasks ---\n" % (index / 2.0) + slot_bundles.TASK % (
        1, 0xa81, 0, 0, 0, 0, "nfs_pgio_common_ops [nfs]", "nfs", 3, "WRITE", "call_reserveresult [sunrpc]",
        "xprt_backlog" if index % 2 else "xprt_pending") for index in range(10))
    summary = slot_samples.summarize({"rpc_tasks": tasks}, "/mnt/nfs", MOUNTSTATS)
    assert summary["full"] == {"samples": 10, "full": 5, "share": 0.5}
    assert summary["session"]["max_transport_waiters"] == 1 and summary["session"]["max_waiters"] == 0


def test_the_labs_v47_captures_a_full_2_slot_session_and_a_tuned_one():
    # i-slotlab's captures on 6.1 (tests/fixtures/captures/v47_*/NOTES.txt): 2 session slots, RPCs waiting on the
    # ForeChannel slot table in 5 of 6 and 6 of 7 samples; the trace's WRITE means equal mountstats'.
    result = diagnose(load_bundle(slot_bundles.sample_path("..", "captures", "v47_bookworm_baseline")))
    table = result["slot_table"]
    assert table["text"].startswith("slot table full in 85 % of samples (2 of 2 session slots")
    assert "direct evidence for client RPC slots" in table["text"] and result["limiting_layer"] == "client_rpc_slots"
    assert (table["samples"], table["full_samples"]) == (13, 11)
    assert all(host["mapping"][0].startswith("xprt_info: by server address") for host in table["hosts"])
    assert not _row(result, "rpc_stats_latency WRITE means against mountstats")["crossed"]
    tuned = diagnose(load_bundle(slot_bundles.sample_path("..", "captures", "v47_bookworm_tuned")))
    assert "client_rpc_slots" not in [tuned["limiting_layer"]] + tuned["contributing"]
    assert "(30 of 30 session slots" in tuned["slot_table"]["text"]


def _capture(name):
    return diagnose(load_bundle(slot_bundles.sample_path("..", "captures", name)))


@pytest.mark.parametrize("name", ["v47_trixie_baseline", "v47_trixie_tuned", "v47_bullseye_baseline", "v47_bullseye_tuned"])
def test_the_other_kernels_captures_baseline_full_tuned_not_the_slots(name):
    """The lab's v47 captures on 6.12 and 5.10 (their NOTES.txt): the 2-slot baseline full most of the window with
    session-slot waits, direct evidence for client slots; tuned, client slots neither limit nor contribute - on 6.12
    the table far from full (no waiter in any sample), on 5.10 full in half the samples but with requests also
    waiting to be sent."""
    result = _capture(name)
    text = result["slot_table"]["text"]
    if name.endswith("baseline"):
        assert result["limiting_layer"] == "client_rpc_slots"
        assert "RPCs waited for a session slot: direct evidence for client RPC slots" in text
    else:
        assert "client_rpc_slots" not in [result["limiting_layer"]] + result["contributing"]
        assert ("far from full" in text) == (name == "v47_trixie_tuned")


def test_more_slot_holders_than_the_grant_are_not_shown_as_n_of_the_grant():
    """v48_bookworm_seed_like_v41: its debugfs task lists could not be mapped to the mount's RPC client, so every NFS
    task of the host was counted: 4 RPCs held a slot at once beside a 2-slot session (requested: no trace, so no grant seen). The first screen said
    '4 of 2 session slots', a figure that cannot be."""
    text = _capture("v48_bookworm_seed_like_v41")["slot_table"]["text"]
    assert "4 of 2" not in text
    assert "2 session slots requested; 4 RPCs held a slot at once" in text


def test_a_table_far_from_full_says_how_many_slots_were_in_use_on_average():
    """v47_trixie_tuned: no RPC waited for a slot in any sample, 16.8 and 11.3 of the 30 slots in use on average
    (NOTES.txt); '29 of 30 session slots' beside 'far from full' read as a contradiction - the peak alone."""
    text = _capture("v47_trixie_tuned")["slot_table"]["text"]
    assert "far from full" in text and "29 of 30" not in text
    assert "of 30 session slots in use on average, 29 at most" in text


def test_a_requested_cap_is_not_shown_as_the_table_s_size():
    """v48_bookworm_healthy (rpc_sampling=queues: no trace, so no grant seen): the clients request 160 session slots and
    the server grants 30 (the v47 captures' trace); '31 of 160 session slots' read as a table a fifth full."""
    text = _capture("v48_bookworm_healthy")["slot_table"]["text"]
    assert "of 160" not in text
    assert "31 session slots in use at most; 160 requested, the server's grant unmeasured" in text


def test_a_weak_server_cpu_estimate_yields_to_a_slot_table_seen_full():
    """v48_bookworm_seed_like_v41_nice0 (the lab's 2-session-slot baseline, 2026-12-06 10:53Z, with Prometheus beside
    it): the server's CPU share is an upper estimate (its samples span 135 s around an 86 s checkpoint, with more busy
    time than the checkpoint lasted) at 100 %, while the session table was seen full in most samples with hundreds of
    RPCs waiting for a slot. Prometheus measured the server 80 % busy over the window itself. Direct evidence names the
    limit; an upper estimate may contribute, never outrank it."""
    result = _capture("v48_bookworm_seed_like_v41_nice0")
    assert result["limiting_layer"] == "client_rpc_slots"
    assert "direct evidence for client RPC slots" in result["slot_table"]["text"]
    row = [row for row in result["evidence"] if row["signal"] == "CPU busy during the checkpoint on nfs1"][0]
    assert "upper estimate" in row["explanation"]
