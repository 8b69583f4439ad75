from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfs_options
from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import split_options
from ansible_collections.ckptio.nfs.plugins.module_utils.config.nfs_options import OptionError

# /proc/mounts options of the lab's v4.1 mount (tests/fixtures/samples/bundles/seed_like_baseline/NOTES.txt).
SEED_LIVE = ("rw,relatime,vers=4.1,rsize=65536,wsize=65536,namlen=255,hard,proto=tcp,nconnect=1,timeo=600,"
             "retrans=2,sec=sys,clientaddr=10.0.0.2,local_lock=none,addr=10.0.0.1")


def test_normalize_folds_spellings_and_yaml_types():
    wanted = nfs_options.normalize_wanted({
        "nfsvers": 4.1, "nconnect": 4, "wsize": "1048576", "lock": False, "soft": False, "tcp": True,
    })
    assert wanted == {"vers": "4.1", "nconnect": "4", "wsize": "1048576", "lock": False, "hard": True, "proto": "tcp"}


def test_vers_four_point_zero_from_yaml_float_keeps_its_minor_version():
    assert nfs_options.normalize_wanted({"vers": 4.0})["vers"] == "4.0"
    assert nfs_options.normalize_wanted({"vers": 4})["vers"] == "4"
    assert nfs_options.normalize_wanted({"vers": 4, "minorversion": 2})["vers"] == "4.2"


def test_render_uses_no_forms_and_opposites():
    text = nfs_options.render_options({"vers": "4.1", "hard": False, "lock": False, "ro": False, "_netdev": True})
    assert text == "vers=4.1,soft,nolock,rw,_netdev"
    assert nfs_options.render_options({}) == "defaults"


@pytest.mark.parametrize("opts, fragment", [
    ({"nconnect": 0}, "opts.nconnect"),
    ({"nconnect": 17}, "opts.nconnect"),
    ({"wsize": 1000}, "opts.wsize"),
    ({"wsize": 2097152}, "opts.wsize"),
    ({"rsize": 65537}, "opts.rsize"),
    ({"rsize": 4096 * 3 + 1}, "opts.rsize"),
    ({"vers": 5}, "opts.vers"),
    ({"vers": True}, "opts.vers"),
    ({"nconnect": "four"}, "opts.nconnect"),
    ({"nconnect": True}, "opts.nconnect"),
    ({"sec": "sys,nconnect=16"}, "opts.sec"),
    ({"sec": "sys nconnect"}, "opts.sec"),
    ({"sec": "sys\nnconnect"}, "opts.sec"),
    ({"sec": "a=b"}, "opts.sec"),
    ({"sec": "sys;reboot"}, "opts.sec"),
    ({"sec": "$(reboot)"}, "opts.sec"),
    ({"sec": "`id`"}, "opts.sec"),
    ({"wsise": 4096}, "opts.wsise"),
    ({"hard,nconnect": True}, "opts.hard,nconnect"),
    ({"hard nconnect": True}, "opts.hard nconnect"),
    ({"ha=rd": True}, "opts.ha=rd"),
    ({"hard\n": True}, "opts.hard"),
    ({"hard": "yes"}, "opts.hard"),
    ({"proto": "sctp"}, "opts.proto"),
    ({"vers": 4, "nfsvers": 4}, "opts.nfsvers"),
    ({"hard": True, "soft": True}, "opts.soft"),
    ({"minorversion": 3}, "opts.minorversion"),
    ({"timeo": 0}, "opts.timeo"),
])
def test_bad_options_fail_naming_the_option(opts, fragment):
    with pytest.raises(OptionError) as info:
        nfs_options.normalize_wanted(opts)
    assert str(info.value).startswith(fragment)


def test_vers_3_conflicts_with_nfs4_but_not_nfs():
    with pytest.raises(OptionError, match="opts.vers"):
        nfs_options.normalize_wanted({"vers": 3}, "nfs4")
    assert nfs_options.normalize_wanted({"vers": 3}, "nfs") == {"vers": "3"}


def test_live_drift_knows_defaults_and_vers_negotiation():
    live = nfs_options.canonical_options(split_options(SEED_LIVE))
    assert live["hard"] is True and live["vers"] == "4.1" and live["ro"] is False
    wanted = nfs_options.normalize_wanted({"vers": 4, "hard": True, "lock": True, "nconnect": 1, "_netdev": True})
    # vers=4 lets the kernel negotiate 4.1; lock is on unless nolock shows; _netdev never shows live.
    assert nfs_options.live_drift(wanted, live) == {}
    wanted = nfs_options.normalize_wanted({"vers": 4.2, "nconnect": 4, "wsize": 1048576})
    assert nfs_options.live_drift(wanted, live) == {
        "vers": {"wanted": "4.2", "live": "4.1"},
        "nconnect": {"wanted": "4", "live": "1"},
        "wsize": {"wanted": "1048576", "live": "65536"},
    }


def test_fstab_drift_is_exact_and_counts_extra_options_unless_default():
    wanted = nfs_options.normalize_wanted({"vers": 4, "hard": True})
    assert nfs_options.fstab_drift(wanted, nfs_options.canonical_options(split_options("nfsvers=4"))) == {}
    assert nfs_options.fstab_drift(wanted, nfs_options.canonical_options(split_options("vers=4,hard,defaults"))) == {}
    assert nfs_options.fstab_drift(wanted, nfs_options.canonical_options(split_options("vers=4.1,noatime"))) == {
        "vers": {"wanted": "4", "fstab": "4.1"},
        "atime": {"wanted": None, "fstab": False},
    }
    assert nfs_options.fstab_drift(wanted, nfs_options.canonical_options(split_options("vers=4,soft"))) == {
        "hard": {"wanted": True, "fstab": False},
    }


def test_negotiated_down_only_for_lower_sizes():
    wanted = {"rsize": "1048576", "wsize": "65536"}
    assert nfs_options.negotiated_down(wanted, {"rsize": "262144", "wsize": "65536"}) == {
        "rsize": {"wanted": "1048576", "live": "262144"}}


def test_fresh_mount_needed_for_transport_options_not_for_vfs_flags():
    assert nfs_options.needs_fresh_mount(["nconnect", "atime", "wsize", "ro"]) == ["nconnect", "wsize"]
    assert nfs_options.remount_options({"atime": False, "wsize": "4096", "ro": True}, ["atime", "wsize", "ro"]) == "noatime,ro"


@pytest.mark.parametrize("src, server", [
    ("10.0.0.1:/srv/nfs", "10.0.0.1"),
    ("nfs.example.com:/export/ckpt data", "nfs.example.com"),
    ("[fd00::1]:/x", "fd00::1"),
])
def test_validate_src_accepts_server_and_export(src, server):
    assert nfs_options.validate_src(src) == server


@pytest.mark.parametrize("src", ["server", "server/export", ":/export", "server:export", "-oremount:/x",
                                 "srv:/x\nother", "[fd00::1/x", "bad host:/x"])
def test_validate_src_rejects(src):
    with pytest.raises(OptionError, match="^src"):
        nfs_options.validate_src(src)


@pytest.mark.parametrize("path", ["mnt/nfs", "", "/mnt/../etc", "/mnt/./x"])
def test_validate_path_rejects(path):
    with pytest.raises(OptionError, match="^path"):
        nfs_options.validate_path(path)


def test_validate_path_strips_trailing_slash_and_keeps_spaces():
    assert nfs_options.validate_path("/mnt/ckpt data/") == "/mnt/ckpt data"
