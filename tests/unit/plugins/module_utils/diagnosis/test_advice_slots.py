"""advice: the client's session slots already at the profile's value are not recommended again (issue 47's tuned lab
capture: nfs max_session_slots 160 on the clients, the server granted 30 - tests/fixtures/captures/v47_bookworm_tuned)."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.diagnosis import slot_bundles

TUNED_SUNRPC = slot_bundles.sample_path("..", "captures", "v47_bookworm_tuned", "clients", "nfs2", "sunrpc.txt")


def _granted_30(tmp_path, requested=160):
    """A full v4.1 session of 30 slots the server granted, RPCs waiting for one in 18 of 20 samples; the clients' sunrpc.txt
    the tuned lab client's, with nfs max_session_slots `requested`."""
    files = {"sunrpc_xprt.txt": slot_bundles.xprt_text(20), "rpc_tasks.txt": slot_bundles.tasks_text(20, 18, holding=30, waiting=10),
             "rpc_latency.txt": slot_bundles.latency_text(400, 40000, 2000, slots=30)}
    with open(TUNED_SUNRPC) as handle:
        files["sunrpc.txt"] = handle.read().replace("max_session_slots 160\n", "max_session_slots %d\n" % requested)
    return diagnose(load_bundle(slot_bundles.bundle(tmp_path, files, "small_files")))


def _slot_recs(result):
    return [rec for rec in result["recommendations"] if rec["layer"] == "client_rpc_slots"]


def test_clients_already_requesting_160_session_slots_get_the_server_s_grant_named_not_160_again(tmp_path):
    result = _granted_30(tmp_path)
    assert "client_rpc_slots" in [result["limiting_layer"]] + result["contributing"]
    assert "(30 of 30 session slots" in result["slot_table"]["text"]
    recs = _slot_recs(result)
    assert recs and not any(rec["value"] == 160 or "max_session_slots = 160" in rec["action"] for rec in recs)
    rec = recs[0]
    assert rec["setting"] == "the server's session slot grant" and rec["value"] == 30
    assert rec["action"].startswith("the server granted 30 session slots (the clients request 160)")
    assert "nfs2 30, nfs3 30" in rec["reason"] and "nfs max_session_slots 160" in rec["reason"]
    assert rec["how"].startswith("on the server: fewer nfsd threads or more memory raise what it grants a new session")


def test_a_grant_as_large_as_asked_or_not_seen_is_said_so(tmp_path):
    result = diagnose(load_bundle(slot_bundles.bundle(tmp_path / "full", slot_bundles.full_session(), "small_files")))
    assert [(rec["value"], rec["action"]) for rec in _slot_recs(result)] == [
        (160, "the session has the 160 slots the clients request: more sessions (clients, servers), not more slots")]
    files = slot_bundles.full_session()
    del files["rpc_latency.txt"]
    result = diagnose(load_bundle(slot_bundles.bundle(tmp_path / "untraced", files, "small_files")))
    assert [(rec["value"], rec["action"]) for rec in _slot_recs(result)] == [
        (None, "the clients already request 160 session slots: see what the server grants (rpc_sampling=trace)")]


def test_clients_below_the_profile_still_get_it(tmp_path):
    recs = _slot_recs(_granted_30(tmp_path, requested=16))
    assert [rec["action"] for rec in recs] == ["nfs max_session_slots = 160 (ckptio.nfs.tune_clients, profile checkpoint), then remount"]


def test_transport_slot_tables_already_at_the_profile_are_not_recommended_again():
    """test_diagnosis's v4.0 bundle with a transport backlog: told the profile's 128 while it has 2, not when it has 128."""
    from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.diagnosis import test_diagnosis

    def v40(slots):
        bundle = test_diagnosis.load("seed_like_baseline")
        files = bundle["clients"]["nfs2"]
        for name in ("mountstats_before", "mountstats_after"):
            files[name] = files[name].replace("vers=4.1", "vers=4.0")
        files["mountstats_after"] = files["mountstats_after"].replace("tcp 0 0 2 0 1 4527 4527 0 97268 0 32 17005 88876",
                                                                      "tcp 0 0 2 0 1 4527 4527 0 9000 3500000 2 10 4400")
        files["mountstats_after"] = files["mountstats_after"].replace("WRITE: 4477 4477 0 269402488 823768 21168733 324704 21495131 0",
                                                                      "WRITE: 4477 4477 0 269402488 823768 21168733 124704 21295131 0")
        for client in bundle["clients"].values():
            client["sunrpc"] = "tcp_slot_table_entries %d\ntcp_max_slot_table_entries %d\n" % (slots, slots)
        bundle["context"]["canary"]["layout"] = "file_per_rank"
        bundle["context"]["target"]["window_seconds"] = 1
        return diagnose(bundle)

    low, set_already = v40(2), v40(128)
    assert low["limiting_layer"] == "client_rpc_slots" == set_already["limiting_layer"]
    table = "sunrpc tcp_max_slot_table_entries / tcp_slot_table_entries"
    assert [rec["value"] for rec in _slot_recs(low) if rec["setting"] == table] == [128]
    assert [rec["setting"] for rec in _slot_recs(set_already)] == [rec["setting"] for rec in _slot_recs(low) if rec["setting"] != table]
