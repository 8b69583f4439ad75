"""The partial diagnosis a paste gives: the issue's done-when cases, kernel logs, the refusal, and no traceback on any file."""
from __future__ import annotations

import json
import random

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import kernel_log, partial, readings
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.headline import SCREEN_COLUMNS, SCREEN_LINES
from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.paste import layouts


def _xprt_lines():
    """The v4.1 mount's opts: and xprt: lines cut out of the lab's mountstats during the stall, as a user pastes them."""
    text = layouts.read("bookworm/mountstats_during1.txt")
    block = text[text.index("device nfs1:/srv/nfs mounted on /mnt/nfs "):text.index("device nfs1:/srv/nfs mounted on /mnt/nfs3")]
    return "".join(line.strip() + "\n" for line in block.split("\n") if line.strip().startswith(("opts:", "xprt:")))


def _seed_paste():
    return [("nfsiostat during the stall.txt", layouts.everything(layouts.broken_columns(layouts.read("bookworm/nfsiostat_mount.txt")))),
            ("dmesg.txt", layouts.indented(layouts.read("built/dmesg_hung_nfs_wait_on_request.txt"))),
            ("xprt.txt", layouts.crlf(_xprt_lines()))]


def test_seed_symptoms_pasted_give_client_rpc_slots_and_the_commands_to_confirm():
    found = [readings.read_file(name, text) for name, text in _seed_paste()]
    assert [reading["kind"] for reading in found] == ["nfsiostat", "kernel_log", "mountstats_lines"]
    diagnosis = partial.partial_diagnosis(found)
    assert diagnosis["limiting_layer"] == "client_rpc_slots" and diagnosis["verdict"] == "no_window"
    suspected = diagnosis["partial"]["suspected"]
    assert suspected["layer"] == "client_rpc_slots" and suspected["confidence"] == "medium"
    assert any("WRITE queue time" in why for why in suspected["rests_on"])
    assert any("nfs_wait_on_request" in why for why in suspected["rests_on"])
    commands = " ".join(diagnosis["partial"]["capture_next"])
    assert "cat /proc/self/mountstats" in commands and "60 s later" in commands and "cat /proc/net/rpc/nfsd" in commands
    assert "max_session_slots" in commands
    assert "server_storage" in diagnosis["unmeasured"] and "client_rpc_slots" not in diagnosis["unmeasured"]
    # The same shape as a bundle's diagnosis: the first screen, the headline, the Markdown.
    assert diagnosis["first_screen"][0].startswith("Checkpoint diagnosis of")
    assert len(diagnosis["first_screen"]) <= SCREEN_LINES and all(len(line) <= SCREEN_COLUMNS for line in diagnosis["first_screen"])
    assert "Suspected limiting layer: client RPC slots" in "\n".join(diagnosis["first_screen"])
    # evidence before the verdict: the figure the suspicion rests on is on the first screen
    screen = " ".join(line.strip() for line in diagnosis["first_screen"])
    assert "because nfsiostat during the stall.txt: /mnt/nfs WRITE queue time" in screen
    assert "dominates its RTT" in screen and "measured as nothing" not in screen
    assert diagnosis["headline"]["verdict"] == "no_window" and diagnosis["headline"]["confidence"] == "medium"
    markdown = partial.render_markdown(diagnosis)
    assert "## Capture next" in markdown and "| dmesg.txt | kernel log" in markdown
    json.dumps(diagnosis)


def test_single_th_line_gives_server_threads():
    diagnosis = partial.partial_diagnosis([readings.read_file("nfsd.txt", layouts.read("built/nfsd_th_busy.txt"))])
    assert diagnosis["limiting_layer"] == "server_threads" and diagnosis["confidence"] == "low"
    assert any("/proc/fs/nfsd/threads" in command for command in diagnosis["partial"]["capture_next"])
    assert diagnosis["partial"]["layers_seen"] == ["server_threads"]


def test_old_kernel_nfsd_with_idle_threads_points_nowhere_but_says_what_it_read():
    reading = readings.read_file("nfsd.txt", layouts.read("built/nfsd_old_kernel_quiet.txt"))
    assert reading["kind"] == "nfsd" and not reading["suspects"]
    assert any(row["signal"].startswith("time with 90-100") and not row["crossed"] for row in reading["evidence"])
    diagnosis = partial.partial_diagnosis([reading])
    assert diagnosis["limiting_layer"] == "none" and diagnosis["partial"]["suspected"] is None


def test_hung_tasks_in_dmesg_and_journalctl_name_the_wait_and_its_length():
    for name in ("built/dmesg_hung_nfs_wait_on_request.txt", "built/journal_hung_nfs_wait_on_request.txt"):
        log = kernel_log.parse(layouts.read(name))
        assert [(task["task"], task["pid"], task["seconds"]) for task in log["hung_tasks"]] == [
            ("python3", 21877, 120), ("python3", 21879, 120)]
        assert all("nfs_wait_on_request" in task["waits_on"] for task in log["hung_tasks"])
        # "? bit_wait+0x60/0x60" is a frame the unwinder is not sure of: never what a task waits on.
        assert log["hung_tasks"][0]["frames"][:3] == ["__schedule", "schedule", "io_schedule"]


def test_real_lab_log_writers_in_writeback_while_the_server_was_away():
    """Every suite's dmesg and journalctl -k: dd blocked in fsync's writeback, reported every 10 s, while the link was
    down for 45 s (NOTES.txt)."""
    names = [name for name, _text in layouts.fixture_files() if name.split("/")[-1] in ("dmesg.txt", "journalctl_k.txt")]
    assert len(names) >= 4  # bookworm and trixie; bullseye's run ended before its link-drop phase (its NOTES.txt)
    for name in names:
        log = kernel_log.parse(layouts.read(name))
        tasks = [(task["task"], task["pid"], task["seconds"], task["waits_on"]) for task in log["hung_tasks"]]
        assert tasks and len(set(task[:2] for task in tasks)) == len(tasks), name
        assert all(task[0] == "dd" and task[2] >= 10 and task[3] == "writeback of its dirty pages" for task in tasks), name
        assert [outage["server"] for outage in log["outages"]] == ["nfs1"] and 40 <= log["outages"][0]["seconds"] <= 60, name
        reading = readings.read_file(name, layouts.read(name))
        assert [s["layer"] for s in reading["suspects"]] == ["network"] * len(reading["suspects"]) and reading["layers"] == ["network"]
        # The writers wait for the server the log says was away: the outage, not a hang of their own (issue 44).
        assert not reading["faults"], name


def test_not_responding_then_ok_is_how_long_the_server_was_away():
    reading = readings.read_file("dmesg", layouts.read("built/dmesg_not_responding.txt"))
    log = kernel_log.parse(layouts.read("built/dmesg_not_responding.txt"))
    assert [(outage["server"], round(outage["seconds"], 1)) for outage in log["outages"]] == [("nfs1", 183.7)]
    assert reading["suspects"][0]["layer"] == "network" and "184 s" in reading["suspects"][0]["why"]
    assert any("state manager" in note for note in reading["notes"])


def test_waits_on_each_known_stack():
    assert kernel_log.waits_on(["__schedule", "xprt_reserve", "call_reserve"])[1] == "client_rpc_slots"
    assert "session slot" in kernel_log.waits_on(["schedule", "nfs4_setup_sequence"])[0]
    assert kernel_log.waits_on(["rwsem_down_write_slowpath", "nfs_start_io_write"])[1] == "access_pattern"
    assert kernel_log.waits_on(["rpc_wait_bit_killable", "__rpc_execute"])[0] == "an RPC's reply from the server"
    assert kernel_log.waits_on(["folio_wait_writeback"])[0] == "writeback of its dirty pages"
    assert kernel_log.waits_on(["unknown_frame"]) == (None, None)


def test_nothing_readable_is_a_refusal_naming_each_file():
    found = [readings.read_file("a.txt", ""), readings.read_file("b.log", "lunch at noon\n")]
    assert partial.partial_diagnosis(found) is None
    message = partial.refusal(found)
    assert "a.txt: empty file: the file is empty" in message and "b.log: unrecognised file: not a kind recognised" in message


def test_no_traceback_on_any_file():
    """Fuzz: random bytes, and every fixture cut, shuffled and corrupted; read_file and the partial diagnosis never raise."""
    generator = random.Random(25)
    samples = [text for _name, text in layouts.fixture_files()]
    for _round in range(300):
        base = generator.choice(samples)
        choice = generator.randrange(5)
        if choice == 0:
            text = bytes(generator.randrange(256) for _byte in range(generator.randrange(400))).decode("utf-8", "surrogateescape")
        elif choice == 1:
            text = base[:generator.randrange(len(base) + 1)]
        elif choice == 2:
            lines = base.split("\n")
            generator.shuffle(lines)
            text = "\n".join(lines)
        elif choice == 3:
            chars = list(base)
            for _change in range(20):
                if chars:
                    chars[generator.randrange(len(chars))] = generator.choice("0:()%\t\r\n\u00a0-9x.e+ nanINF")
            text = "".join(chars)
        else:
            words = base.split()
            text = " ".join(generator.choice(words) for _word in range(60)) if words else ""
        reading = readings.read_file("fuzz", text)
        diagnosis = partial.partial_diagnosis([reading])
        if diagnosis is not None:
            json.dumps(diagnosis)
            partial.render_markdown(diagnosis)


def test_two_server_snapshots_give_the_shares_between_them():
    texts = {"pool-a": layouts.read("bookworm/pool_stats_during.txt"), "pool-b": layouts.label_line(layouts.read("bookworm/pool_stats_before.txt")),
             "s1": layouts.read("bookworm/nfsstat_s_v_after.txt"), "s2": layouts.crlf(layouts.read("bookworm/nfsd_before.txt"))}
    found = [readings.read_file(name, text) for name, text in sorted(texts.items())]
    pairs = readings.pair_readings(found)
    assert [pair["file"] for pair in pairs] == ["pool-b -> pool-a", "s2 -> s1"]
    before, during = (layouts.read("bookworm/pool_stats_%s.txt" % moment).split("\n")[1].split() for moment in ("before", "during"))
    expected = 1 - (int(during[3]) - int(before[3])) / (int(during[1]) - int(before[1]))
    assert pairs[0]["evidence"][0]["value"] == round(expected, 4)
    assert pairs[1]["notes"][0].startswith("between the two:")


def _connect_suspicions(reading):
    return [suspect["why"] for suspect in reading["suspects"] if suspect["layer"] == "network" and "connect(s)" in suspect["why"]]


def test_mountstats_lines_take_only_connects_beyond_a_healthy_mounts():
    # The lab's mounts on 6.1 after the stall: connect_count 2 on each transport, the mount's own
    # (a TCP connect counts its start and its establishment); 5 is 3 connects beyond it, not 3 reconnects
    # (the pasted lines carry no age:, so no reopening after 5 unused minutes is allowed for).
    quiet = readings.read_file("xprt.txt", _xprt_lines())
    assert "xprt:\ttcp 0 0 2 0 " in layouts.read("bookworm/mountstats_during1.txt") and not _connect_suspicions(quiet)
    churned = readings.read_file("xprt.txt", _xprt_lines().replace("xprt:\ttcp 0 0 2 0 ", "xprt:\ttcp 0 0 5 0 ", 1))
    assert _connect_suspicions(churned) == ["xprt.txt: the mount: 3 transport connect(s) since the mount beyond a healthy mount's (a TCP reconnect adds 2)"]


def test_a_pasted_op_whose_time_is_a_negative_kernel_value_is_not_read():
    # The lab's two-mount snapshot with /mnt/nfs's WRITE queue printed from a negative sum (2^64 - x, as in
    # prometheus/procfs's fixture): no "queue dominates" from it; the other mount is still read.
    text = layouts.read("bookworm/mountstats_after.txt")
    block = text[text.index("device nfs1:/srv/nfs mounted on /mnt/nfs "):text.index("device nfs1:/srv/nfs mounted on /mnt/nfs3")]
    line = [line for line in block.split("\n") if line.strip().startswith("WRITE:")][0]
    values = line.split()
    values[6] = "18446743919241604546"
    wrapped = text.replace(line, line[:line.index("WRITE:")] + " ".join(values))
    reading = readings.read_file("ms.txt", wrapped)
    assert not [suspect for suspect in reading["suspects"] if "/mnt/nfs WRITE" in suspect["why"]]
    assert any(note.startswith("/mnt/nfs WRITE: times not read - their sum is a negative kernel value") for note in reading["notes"])
    assert any("/mnt/nfs3" in suspect["why"] for suspect in readings.read_file("ms.txt", text)["suspects"])
