"""mountstats parser on the lab captures and hand-made edge cases."""
from __future__ import annotations

import io

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats import iter_mountstats, parse_mountstats
from ansible_collections.ckptio.nfs.tests.unit.utils import broken_capture, read_sample

NCONNECT4 = "mountstats-v41-nconnect4-after-2GiB-write.txt"
SEED_AFTER = ("bundles", "seed_like_baseline", "clients", "nfs2", "mountstats_after.txt")

OPS_ZERO = "".join("\t%12s: 0 0 0 0 0 0 0 0 0\n" % name for name in ("READ", "COMMIT"))


def mount_block(device="srv:/export", mount_point="/mnt/nfs", fstype="nfs4", statvers="1.1", opts="rw,vers=4.1,proto=tcp",
                xprts=("tcp 0 0 2 0 1 10 10 0 20 5 4 3 2",), ops="\t       WRITE: 10 11 1 1000 200 50 40 100 2\n" + OPS_ZERO):
    text = "device %s mounted on %s with fstype %s%s\n" % (device, mount_point, fstype, " statvers=%s" % statvers if statvers else "")
    text += "\topts:\t%s\n\tage:\t42\n" % opts
    text += "\tevents:\t" + " ".join(["1"] * 27) + " \n\tbytes:\t1 2 3 4 5 6 7 8 \n"
    text += "\tRPC iostats version: %s  p/v: 100003/4 (nfs)\n" % statvers
    text += "".join("\txprt:\t%s\n" % xprt for xprt in xprts)
    return text + "\tper-op statistics\n" + ops + "\n"


def test_real_nconnect4_sums_transports_and_keeps_max_slots_per_connection():
    mounts = parse_mountstats(read_sample(NCONNECT4))
    assert len(mounts) == 1
    mount = mounts[0]
    assert mount["mount_point"] == "/mnt/nfs" and mount["device"] == "10.0.0.1:/srv/nfs"
    assert mount["nfs_version"] == "4.1" and mount["opts"]["nconnect"] == "4"
    assert len(mount["xprt"]) == 4
    totals = mount["xprt_totals"]
    assert totals["sends"] == 347 + 834 + 428 + 701
    assert totals["req_u"] == 1372 + 3650 + 1820 + 3114
    assert totals["sending_u"] == 1501 + 718 + 2481 + 1187
    assert totals["pending_u"] == 920 + 2611 + 1242 + 2184
    assert totals["max_slots"] == [12, 9, 25, 10]
    assert mount["ops"]["WRITE"]["ops"] == 2048 and mount["ops"]["WRITE"]["execute_ms"] == 8486820
    assert mount["ops"]["WRITE"]["errors"] == 0
    assert mount["bytes"]["serverwritebytes"] == 2147483648
    assert mount["events"]["vfswritepages"] == 226
    assert mount["age"] == 178
    assert "caps" in mount["other"] and "nfsv4" in mount["other"]


def test_real_file_skips_non_nfs_mounts_unless_asked():
    text = read_sample(*SEED_AFTER)
    assert [mount["mount_point"] for mount in parse_mountstats(text)] == ["/mnt/nfs"]
    everything = parse_mountstats(text, nfs_only=False)
    assert len(everything) == 27
    assert any(mount["fstype"] == "nfsd" for mount in everything)


def test_streams_from_a_file_object():
    stream = io.StringIO(read_sample(*SEED_AFTER))
    mounts = list(iter_mountstats(stream))
    assert len(mounts) == 1 and mounts[0].op("WRITE")["ops"] == 4477


def test_no_nfs_mounts():
    text = "device proc mounted on /proc with fstype proc\ndevice sysfs mounted on /sys with fstype sysfs\n"
    assert parse_mountstats(text) == []
    assert parse_mountstats("") == []


def test_udp_transport_short_and_long_forms():
    mounts = parse_mountstats(mount_block(fstype="nfs", opts="rw,vers=3,proto=udp",
                                          xprts=("udp 800 0 50 49 0 60 7 16 3 2",)) +
                              mount_block(mount_point="/old", fstype="nfs", opts="rw,vers=3,proto=udp", xprts=("udp 800 0 50 49 0 60 7",)))
    long_form, short_form = mounts
    assert long_form["xprt"][0] == {"protocol": "udp", "srcport": 800, "bind_count": 0, "sends": 50, "recvs": 49, "bad_xids": 0,
                                    "req_u": 60, "bklog_u": 7, "max_slots": 16, "sending_u": 3, "pending_u": 2}
    assert long_form["xprt_totals"]["max_slots"] == [16]
    assert short_form["xprt_totals"]["bklog_u"] == 7 and short_form["xprt_totals"]["max_slots"] == []
    assert long_form["nfs_version"] == "3"


def test_tcp_ten_field_form_of_old_kernels():
    mount = parse_mountstats(mount_block(xprts=("tcp 700 1 2 3 4 100 99 0 300 40",)))[0]
    assert mount["xprt"][0]["bklog_u"] == 40 and "max_slots" not in mount["xprt"][0]
    assert mount["xprt_totals"]["sends"] == 100 and mount["xprt_totals"]["max_slots"] == []


def test_rdma_generic_counters_named_rest_kept():
    mount = parse_mountstats(mount_block(xprts=("rdma 0 0 1 2 3 40 41 0 50 6 7 8 9",)))[0]
    xprt = mount["xprt"][0]
    assert xprt["protocol"] == "rdma" and xprt["sends"] == 40 and xprt["bklog_u"] == 6 and xprt["extra"] == [7, 8, 9]


def test_statvers_10_has_no_errors_column():
    ops = "\t       WRITE: 10 11 1 1000 200 50 40 100\n"
    mount = parse_mountstats(mount_block(statvers="1.0", ops=ops))[0]
    assert mount["statvers"] == "1.0" and mount["rpc_iostats_version"] == "1.0"
    assert mount["ops"]["WRITE"]["ops"] == 10 and mount["ops"]["WRITE"]["execute_ms"] == 100
    assert mount["ops"]["WRITE"]["errors"] is None


def test_nconnect16_sums_sixteen_lines():
    xprts = tuple("tcp %d 0 2 0 1 %d %d 0 %d %d %d 1 1" % (700 + i, 100 + i, 100 + i, 10 * i, i, 20 + i) for i in range(16))
    mount = parse_mountstats(mount_block(opts="rw,vers=4.2,nconnect=16", xprts=xprts))[0]
    assert mount["nfs_version"] == "4.2"
    totals = mount["xprt_totals"]
    assert totals["transports"] == 16
    assert totals["sends"] == sum(100 + i for i in range(16))
    assert totals["bklog_u"] == sum(range(16))
    assert totals["max_slots"] == [20 + i for i in range(16)]


def test_escaped_mount_point_and_device():
    mount = parse_mountstats(mount_block(device="srv:/ex\\040port", mount_point="/mnt/check\\040points"))[0]
    assert mount["mount_point"] == "/mnt/check points"
    assert mount["device"] == "srv:/ex port"


def test_unknown_lines_and_extra_fields_are_tolerated():
    text = mount_block(xprts=("tcp 0 0 2 0 1 10 10 0 20 5 4 3 2 99 98",),
                       ops="\t       WRITE: 10 11 1 1000 200 50 40 100 2 77\n\tgarbage without colon\n")
    text = text.replace("\tage:", "\tnewfield:\tsomething new\n\tage:")
    text = "junk before any device line\n" + text
    mount = parse_mountstats(text)[0]
    assert mount["xprt"][0]["extra"] == [99, 98]
    assert mount["xprt_totals"]["sends"] == 10
    assert mount["ops"]["WRITE"]["extra"] == [77] and mount["ops"]["WRITE"]["errors"] == 2
    assert mount["other"]["newfield"] == "something new"
    assert mount["age"] == 42


def test_nfs4_without_vers_and_minorversion():
    mount = list(iter_mountstats(mount_block(opts="rw,vers=4,minorversion=1")))[0]
    assert mount.nfs_version == "4.1"
    mount = list(iter_mountstats(mount_block(opts="rw")))[0]
    assert mount.nfs_version == "4" and mount.nconnect == 1


def read_broken(name):
    """A broken capture (tests/fixtures/samples/broken/NOTES.txt), bytes decoded as the modules read /proc."""
    return broken_capture(name).decode("utf-8", "surrogateescape")


def test_blanks_inside_opts_are_dropped_like_nfs_utils():
    # nfs-utils' mountstats joins the opts: words before splitting on commas; a key with a
    # leading blank would hide acdirmin from every caller.
    mount = parse_mountstats(read_broken("mountstats_after_blanks_in_opts.txt"))[0]
    assert mount["opts"]["acdirmin"] == "30" and mount["opts"]["acregmax"] == "60"
    assert not [key for key in mount["opts"] if key != key.strip()]
    assert mount["opts"] == parse_mountstats(read_sample(*SEED_AFTER))[0]["opts"]


def test_complete_blocks_are_not_truncated():
    for text in (read_sample(*SEED_AFTER), read_sample(NCONNECT4), mount_block(), mount_block(statvers="1.0", ops="\t  WRITE: 1 1 0 0 0 0 0 0\n")):
        mount = list(iter_mountstats(text))[0]
        assert mount.truncated is None, text
        assert parse_mountstats(text)[0]["truncated"] is None


def test_cut_inside_the_write_line_is_truncated():
    mount = list(iter_mountstats(read_broken("mountstats_after_cut_in_write.txt")))[0]
    assert "WRITE" in mount.truncated and "4 of 9" in mount.truncated
    # The same capture handed over as lines (no line ends) is still caught by the field count.
    mount = list(iter_mountstats(read_broken("mountstats_after_cut_in_write.txt").splitlines()))[0]
    assert "WRITE" in mount.truncated


def test_blocks_that_end_early_are_truncated():
    text = read_sample(*SEED_AFTER)
    cut_at_line_end = text[:text.index("\t      COMMIT:")]
    # Cut at a line end: every line is whole, only the delta sees that ops are missing (test_stats_delta).
    assert list(iter_mountstats(cut_at_line_end))[0].truncated is None
    assert "no newline" in list(iter_mountstats(cut_at_line_end.rstrip("\n")))[0].truncated
    before_ops = text[:text.index("\tper-op statistics")]
    assert "per-op" in list(iter_mountstats(before_ops))[0].truncated
    head_only = text[:text.index("\tage:")]
    assert list(iter_mountstats(head_only))[0].truncated
    statvers10 = mount_block(statvers="1.0", ops="\t  WRITE: 1 1 0 0 0 0 0\n")
    assert "7 of 8" in list(iter_mountstats(statvers10))[0].truncated


def test_non_utf8_mount_points_and_binary_garbage_do_not_stop_the_parser():
    text = read_broken("mountstats_non_utf8_mount_points.escaped.txt")
    mounts = parse_mountstats(text)
    assert [mount["mount_point"] for mount in mounts] == ["/mnt/nfs", "/data/caf\udce9"]
    assert mounts[1]["device"] == "10.0.0.1:/srv/caf\udce9" and mounts[1]["ops"]["WRITE"]["ops"] == 2048
    garbage = "\x00\udcff\udcfe binary \udce9 garbage: inf nan\n"
    lines = text.split("\n")
    for index in range(0, len(lines), 3):
        mangled = "\n".join(lines[:index] + [garbage] + lines[index:])
        parsed = parse_mountstats(mangled)
        assert len(parsed) >= 1
