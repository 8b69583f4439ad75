"""mount_state: a mount that missed the tuning (issue 26 item 4) - settings tuned, the live mount not."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import mount_state


class Evidence:
    def __init__(self):
        self.items = []

    def add(self, layer, signal, value, threshold, crossed, explanation):
        self.items.append({"layer": layer, "signal": signal, "crossed": crossed, "explanation": explanation})
        return crossed


def client(host, nconnect, wsize, max_slots, setting, queue_ms, rtt_ms=20.0, version="4.1", seconds=10.0, ops=400):
    write = {"ops": ops, "avg_rtt_ms": rtt_ms, "avg_exe_ms": queue_ms + rtt_ms + 1.0, "avg_queue_ms": queue_ms}
    return {"host": host, "sunrpc": {"max_session_slots": str(setting), "tcp_max_slot_table_entries": str(setting)},
            "delta": {"nfs_version": version, "nconnect": nconnect, "wsize": wsize, "rsize": wsize, "interval_seconds": seconds,
                      "ops": {"WRITE": write}, "rpc": {"max_slots": max_slots}}}


def test_old_session_beside_a_tuned_client_is_named_with_its_headroom():
    evidence = Evidence()
    found = mount_state.assess(evidence, [client("nfs2", 4, 1048576, [9, 9, 8, 9], 160, 2.0),
                                          client("nfs3", 1, 65536, [3], 160, 950.0)])
    assert found["missed"] == ["nfs3"]
    reasons = " ".join(found["hosts"]["nfs3"]["missed_tuning"])
    assert "0.8 requests in flight on average" in reasons and "max_session_slots reads 160" in reasons
    assert "nconnect 1 where" in reasons and "wsize 64 KiB where another client of the server negotiated 1024 KiB" in reasons
    assert found["hosts"]["nfs3"]["headroom"] > 30 and found["hosts"]["nfs2"]["missed_tuning"] == []
    # Little's law: 400 WRITEs x 20 ms on the wire over 10 s = 0.8 in flight.
    assert found["hosts"]["nfs3"]["requests_in_flight"] == 0.8
    assert [item["signal"] for item in evidence.items if item["crossed"]] == ["mount on nfs3 predates the tuning"]
    rec = mount_state.remount_recs(found)[0]
    assert rec["action"] == "remount nfs3: its mount predates the tuning" and "drain" in rec["how"] and rec["host"] == "nfs3"


def test_untuned_settings_are_the_tuning_not_a_remount():
    # The lab's baseline: the setting reads 2 (or the kernel default 64), not the profile's 160.
    for setting in (2, 64):
        found = mount_state.assess(Evidence(), [client("nfs2", 1, 65536, [3], setting, 950.0)])
        assert found["missed"] == []


def test_a_tuned_mount_that_waits_little_is_no_missed_tuning():
    # nfs2: 30 requests in flight on average (a 30-slot session full); nfs3 waits little.
    found = mount_state.assess(Evidence(), [client("nfs2", 4, 1048576, [128] * 4, 160, 950.0, ops=15000),
                                            client("nfs3", 4, 1048576, [128] * 4, 160, 1.0)])
    assert found["missed"] == [] and found["hosts"]["nfs2"]["requests_in_flight"] == 30.0
    # A slow path, not a small session: queue only a few times the RTT (lab: 8.3 s for 2.5 s).
    assert mount_state.assess(Evidence(), [client("nfs2", 4, 1048576, [128] * 4, 160, 8300.0, rtt_ms=2500.0)])["missed"] == []


def test_v3_slot_table_made_before_the_setting():
    found = mount_state.assess(Evidence(), [client("nfs2", 1, 65536, [2], 128, 400.0, version="3")])
    assert found["missed"] == ["nfs2"] and "tcp_max_slot_table_entries reads 128" in found["hosts"]["nfs2"]["missed_tuning"][0]


def _reference_best(state, states, wanted):
    """The peers' best nconnect and wsize as a pass over every other mount of the version finds them (before issue 27)."""
    peers = [other for other in states if other is not state and other["nfs_version"] == state["nfs_version"]]
    return (max([peer["nconnect"] for peer in peers] + [wanted["nconnect"]]), max([peer["wsize"] or 0 for peer in peers] + [0]))


def test_the_peers_best_settings_from_each_versions_two_largest_are_a_pass_over_the_peers():
    import random
    rng = random.Random(27)
    wanted = {"nconnect": 8}
    for _round in range(200):
        states = [{"nfs_version": rng.choice(["3", "4.1", "4.2"]), "nconnect": rng.choice([1, 2, 8, 16]),
                   "wsize": rng.choice([None, 0, 65536, 1048576])} for _index in range(rng.randint(1, 6))]
        tops = mount_state._peer_tops(states)
        for state in states:
            nconnect_tops, wsize_tops = tops[state["nfs_version"]]
            peer_nconnect = mount_state._largest_of_peers(nconnect_tops, state["nconnect"])
            peer_wsize = mount_state._largest_of_peers(wsize_tops, state["wsize"] or 0)
            found = (wanted["nconnect"] if peer_nconnect is None else max(peer_nconnect, wanted["nconnect"]),
                     0 if peer_wsize is None else max(peer_wsize, 0))
            assert found == _reference_best(state, states, wanted)


def test_mounts_that_all_missed_the_tuning_name_the_best_of_their_peers():
    clients = [client("c%d" % index, 1 + index % 3, 65536 * (1 + index % 2), [3], 160, 950.0) for index in range(6)]
    found = mount_state.assess(Evidence(), clients)
    assert found["missed"] == ["c%d" % index for index in range(6)]
    reasons = " ".join(found["hosts"]["c5"]["missed_tuning"])
    assert "nconnect 3 where the profile or another client of the server has" in reasons
    assert "wsize" not in reasons and "wsize 64 KiB where another client of the server negotiated 128 KiB" in " ".join(
        found["hosts"]["c4"]["missed_tuning"])
