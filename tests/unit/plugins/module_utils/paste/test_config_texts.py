"""paste/config_texts.py on real configuration texts (tests/fixtures/paste_kinds/config_texts, paste_corpus config
entries) and constructed ones."""
from __future__ import annotations

import os

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import config_texts, partial, readings
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path
from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.paste import kinds


def _faults(findings):
    return [(item["fault"]["name"], item["line"]) for item in findings if item["fault"]]


def test_ltsp_mountinfo_timeo_7_is_a_short_timeo():
    # paste_corpus 025: the maintainer fixed the lag with timeo=600,retrans=2.
    text = kinds.around(kinds.corpus("025_ltsp_27_nfsroot_mountinfo_timeo7"))
    assert config_texts.recognise(text)
    findings = config_texts.read(text)
    assert _faults(findings) == [("short_timeo", 3)]
    timeo = [item for item in findings if item["fault"]][0]
    assert (timeo["layer"], timeo["value"], timeo["crossed"], timeo["weight"]) == ("network", 7.0, True, 1)
    assert findings[0]["explanation"].endswith("vers=3 rsize=1048576 wsize=1048576 hard proto=tcp timeo=7 retrans=3")


def test_the_azhpc_udev_rule_split_over_lines_sets_read_ahead_for_every_device():
    # paste_corpus 021: the rule's match keys sit on lines of their own, so ATTR{read_ahead_kb} matches everything.
    findings = config_texts.read(kinds.corpus("021_azhpc_293_nfs_readahead_udev_rule"))
    assert _faults(findings) == [("readahead_rule_every_device", 5)]
    assert findings[0]["value"] == 15380.0


def test_a_udev_rule_on_one_line_with_an_nfs_match_is_no_fault():
    line = ('SUBSYSTEM=="bdi", ACTION=="add", PROGRAM="/usr/bin/awk -v bdi=$kernel \'...\' /proc/fs/nfsfs/volumes", '
            'ATTR{read_ahead_kb}="15380"\n')
    assert _faults(config_texts.read(line)) == []


def test_nfsmount_conf_soft_and_timeo_50():
    findings = config_texts.read(kinds.corpus("014_k8s_123960_nfsmount_conf_soft"))
    assert _faults(findings) == [("soft_mount", 1), ("short_timeo", 1)]


def test_proc_mounts_with_512k_wsize_and_a_mount_command():
    text = kinds.sample("config_texts", "openshift_os_1744_proc_mounts")
    findings = config_texts.read(text)
    assert [item["explanation"] for item in findings[:2]] == [
        "mount command: vers=4.2",
        "10.6.54.200:/ on /var/mnt/t: vers=4.2 rsize=524288 wsize=524288 hard proto=tcp timeo=600 retrans=2"]
    assert _faults(findings) == [("small_io_size", 3)]
    assert findings[2]["layer"] == "client_rpc_slots" and findings[2]["weight"] == 1


def test_mount_command_over_udp():
    findings = config_texts.read(kinds.corpus("048_docker_formac_1577_dropping_large_frame"))
    assert _faults(findings) == [("udp_mount", 1)]


def test_healthy_mount_lines_give_their_options_only():
    for entry in ("028_rpi_2482_nfs4_mount_line", "055_efs_utils_69_tls_mount_lines"):
        findings = config_texts.read(kinds.corpus(entry))
        assert findings and _faults(findings) == [] and all(item["weight"] == 0 for item in findings)


def test_exports_are_shown_sync_is_no_fault():
    findings = config_texts.read(kinds.sample("config_texts", "rtd1295_22_exports"))
    assert [(item["signal"], item["line"]) for item in findings] == [("NFS export options", 2), ("NFS export options", 3)]
    assert "/mnt/sda1 to 192.168.1.55/24: no_root_squash,rw,insecure,no_subtree_check; sync" in findings[0]["explanation"]


def test_slot_tables_threads_and_the_bad_mount_options():
    text = ("options sunrpc tcp_max_slot_table_entries=2 tcp_slot_table_entries=2\n"
            "options nfs max_session_slots=64\n[nfsd]\nthreads=4\n"
            "sunrpc.tcp_max_slot_table_entries = 128\n"
            "server:/ckpt /ckpt nfs4 rw,vers=4.1,sync,noac,soft,timeo=600 0 0\n"
            "blockdev --setra 8192 /dev/md0\n")
    findings = config_texts.read(text)
    slots = [(item["signal"], item["value"], item["weight"]) for item in findings if item["layer"] == "client_rpc_slots"]
    assert slots == [("sunrpc.tcp_max_slot_table_entries", 2.0, 2), ("sunrpc.tcp_slot_table_entries", 2.0, 0),
                     ("nfs.max_session_slots", 64.0, 0), ("sunrpc.tcp_max_slot_table_entries", 128.0, 0)]
    threads = [item for item in findings if item["layer"] == "server_threads"][0]
    assert (threads["value"], threads["crossed"], threads["weight"]) == (4.0, True, 1)
    assert _faults(findings) == [("soft_mount", 6), ("no_attribute_cache", 6), ("sync_mount", 6)]
    assert findings[-1]["value"] == 4096.0


def test_other_text_is_not_configuration():
    assert not config_texts.recognise("we mounted it yesterday\noptions were discussed\n")


@pytest.mark.parametrize("name, text", sorted(kinds.hostile(
    "s:/x /m nfs4 rw,timeo=NUMBER,wsize=NUMBER 0 0\noptions sunrpc tcp_max_slot_table_entries=NUMBER\n"
    "ATTR{read_ahead_kb}=\"NUMBER\"\n/export h(NUMBER)\n").items()))
def test_hostile_input_is_read_in_under_a_second(name, text):
    (_found, seconds_recognise), (_read, seconds_read) = kinds.timed(config_texts.recognise, text), kinds.timed(
        config_texts.read, text)
    assert seconds_recognise + seconds_read < 1.0, name


CORPUS = sample_path("..", "paste_corpus")


def test_an_nfs_mounts_readahead_of_128_kib_is_a_misconfiguration():
    # amazon-ec2-utils#7: nfs-readahead shows /sys/class/bdi/0:40/read_ahead_kb = 128 for an EFS (NFSv4.1) mount; the
    # PR's udev rule raising it to 15360 took the rsync from 14.4 s to 3.6 s (home-ops#5862: 1024 KiB +45 %).
    with open(os.path.join(CORPUS, "023_ec2utils_7_efs_readahead_before_after", "paste.txt"), encoding="utf-8") as handle:
        reading = readings.read_file("paste.txt", handle.read())
    result = partial.partial_diagnosis([reading])
    fault = result["faults"][0]
    assert fault["name"] == "small_nfs_readahead" and fault["kind"] == "misconfiguration" and "128 KiB" in fault["what"]
    # The same figure on a bdi of a text that names no NFS mount (a Lustre or FUSE bdi is 0:NN too) is a figure only.
    reading = readings.read_file("ra.txt", "/lfs2 0:52 /sys/class/bdi/0:52/read_ahead_kb = 128\n")
    assert not reading["faults"]
