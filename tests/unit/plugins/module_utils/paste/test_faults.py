"""A fault (a hang, a known bug, a misconfiguration, a broken path) leads a partial diagnosis: no tuning fixes it (issue 44)."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import partial, readings

FAULT = {"name": "soft_mount", "what": "a soft mount returns EIO to the writer when a request times out",
         "tuning_fixes": False, "fix": "mount with hard (nfs(5))", "source": "nfs(5) soft"}


def _reading(name="fstab"):
    reading = readings.unread(name, "config", None)
    reading["tells_nothing"] = None
    readings.add_findings(reading, [
        {"layer": None, "fault": FAULT, "signal": "mount option soft", "value": None, "threshold": None, "crossed": True,
         "weight": 0, "explanation": "nfs1:/srv /mnt nfs soft,timeo=10", "line": 3},
        {"layer": "client_rpc_slots", "fault": None, "signal": "nconnect", "value": 1, "threshold": None, "crossed": False,
         "weight": 1, "explanation": "nconnect=1", "line": 3}])
    return reading


def test_a_fault_is_named_first_with_its_fix_and_what_it_rests_on():
    result = partial.partial_diagnosis([_reading()])
    assert [fault["name"] for fault in result["faults"]] == ["soft_mount"]
    assert result["faults"][0]["rests_on"] == ["fstab: line 3: nfs1:/srv /mnt nfs soft,timeo=10"]
    assert result["headline"]["verdict_text"].startswith("a fault, not a capacity limit: a soft mount returns EIO")
    assert "fix: mount with hard" in result["headline"]["verdict_text"]
    text = partial.render_markdown(result)
    assert "## Faults (no capacity tuning fixes them)" in text and "**soft_mount**" in text
    # The layer finding is still weighed: consistent with client slots, not decisive.
    assert result["partial"]["suspected"]["layer"] == "client_rpc_slots"


def test_the_same_fault_in_two_files_is_named_once():
    first, second = _reading(), _reading("mount.txt")
    result = partial.partial_diagnosis([first, second])
    assert len(result["faults"]) == 1 and len(result["faults"][0]["rests_on"]) == 2


def test_an_nfsiostat_row_with_a_negative_time_is_not_read_and_named():
    # issue 45: nfsiostat rows with negative RTT/exe were used as they were (a queue of exe - RTT < 0 read as 0).
    text = ("192.168.1.1:/export mounted on /mnt:\n\n   ops/s       rpc bklog\n   10.0    0.000\n\n"
            "write:            ops/s            kB/s           kB/op         retrans         avg RTT (ms)    avg exe (ms)\n"
            "                 5.000         500.000         100.000        0 (0.0%)        -12.000          3.000\n")
    reading = readings.read_file("nfsiostat.txt", text)
    assert not [row for row in reading["evidence"] if "WRITE" in row["signal"]]
    assert any("write avg RTT (ms) is -12.000: not read" in note for note in reading["notes"]), reading["notes"]
