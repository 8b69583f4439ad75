"""ckptio.nfs.nfs_mount driven through its real main() against a fake /proc and /etc.

`FakeKernel` stands in for mount(8)/umount(8) at the run_command boundary: it records every
argv and rewrites the fake /proc/self/mountinfo and mountstats the way the kernel would,
including the two rules the module exists for (a remount ignores NFS transport options; the
first mount of a server fixes nconnect) and the server's max_block_size cap.
"""
from __future__ import annotations

import os
import re

import pytest

from ansible.module_utils import basic

from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import escape_path
from ansible_collections.ckptio.nfs.plugins.modules import nfs_mount
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, read_sample, run_module, tree_checksums

SEED = os.path.join("bundles", "seed_like_baseline")


def seed_proc_mounts_line():
    """The lab's real /proc/mounts line for its v4.1 mount (rsize=wsize=65536, nconnect=1)."""
    notes = read_sample(SEED, "NOTES.txt")
    return re.search(r"^mount \(from /proc/mounts after mounting\): (.*)$", notes, re.M).group(1)


def seed_mountstats_block():
    text = read_sample(SEED, "clients", "nfs2", "mountstats_before.txt")
    return text[text.index("device 10.0.0.1:/srv/nfs"):]


ROOT_LINE = "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,errors=remount-ro\n"

FSTAB = (
    "# /etc/fstab: static file system information.\n"
    "UUID=0a1b2c3d-4e5f-6789-abcd-ef0123456789\t/\text4\terrors=remount-ro\t0\t1\n"
    "LABEL=scratch /scratch xfs defaults,noatime 0 2\n"
    "\n"
    "/srv/data\t/export/data\tnone\tbind\t0 0\n"
    "   # indented comment\n"
)


class FakeKernel:
    def __init__(self, root):
        self.root = root
        self.proc = root / "proc"
        (self.proc / "self").mkdir(parents=True)
        self.mounts = []  # [mount_point, fstype, source, options text, age]
        self.calls = []
        self.max_block_size = 1048576
        self.fail = {}
        self.next_id = 40
        self.write()

    # -- the fake /proc files --
    def add(self, mount_point, fstype, source, options, age=178):
        self.mounts.append([mount_point, fstype, source, options, age])
        self.write()

    def write(self):
        lines = [ROOT_LINE]
        stats = []
        for index, (mount_point, fstype, source, options, age) in enumerate(self.mounts):
            lines.append("%d 22 0:%d / %s rw,relatime shared:80 - %s %s %s\n"
                         % (self.next_id + index, 36 + index, escape_path(mount_point), fstype, source, options))
            stats.append("device %s mounted on %s with fstype %s statvers=1.1\n\topts:\t%s\n\tage:\t%d\n"
                         % (source, escape_path(mount_point), fstype, options, age))
        (self.proc / "self" / "mountinfo").write_text("".join(lines))
        (self.proc / "self" / "mountstats").write_text(
            "device /dev/vda mounted on / with fstype ext4\n" + "".join(stats))

    def options_of(self, mount_point):
        for mount in self.mounts:
            if mount[0] == mount_point:
                return dict(item.partition("=")[::2] for item in mount[3].split(","))
        return None

    # -- what mount(8) would make of an option string --
    def kernel_options(self, source, requested):
        opts = dict(item.partition("=")[::2] for item in requested.split(",") if item != "defaults")
        server = source.rsplit(":", 1)[0]
        vers = opts.get("vers", "4.2")
        nconnect = opts.get("nconnect", "1")
        for mount in self.mounts:
            # The first mount of a server+version owns the NFS client and its nconnect.
            if mount[2].rsplit(":", 1)[0] == server and "vers=%s," % vers in mount[3] + ",":
                nconnect = re.search(r"nconnect=(\d+)", mount[3]).group(1)
        size = str(self.max_block_size)
        rsize = str(min(int(opts.get("rsize", size)), self.max_block_size))
        wsize = str(min(int(opts.get("wsize", size)), self.max_block_size))
        return ("rw,vers=%s,rsize=%s,wsize=%s,namlen=255,%s,proto=tcp,nconnect=%s,timeo=%s,retrans=%s,sec=sys,"
                "clientaddr=10.0.0.2,local_lock=none,addr=%s"
                % (vers, rsize, wsize, "soft" if "soft" in opts else "hard", nconnect, opts.get("timeo", "600"),
                   opts.get("retrans", "2"), server))

    def run_command(self, module, argv, **kwargs):
        self.calls.append(list(argv))
        assert isinstance(argv, list), "commands must be argv lists"
        if argv[0] in self.fail:
            return self.fail[argv[0]]
        if argv[0] == "umount":
            assert argv[1:2] != ["-l"] and "-f" not in argv
            before = len(self.mounts)
            self.mounts = [mount for mount in self.mounts if mount[0] != argv[1]]
            self.write()
            return (0, "", "") if len(self.mounts) < before else (32, "", "umount: %s: not mounted." % argv[1])
        if argv[:2] == ["mount", "-o"] and argv[2].startswith("remount,"):
            # Only VFS flags change on remount; NFS options are silently kept (ansible.posix #85).
            return 0, "", ""
        if argv[0] == "mount" and argv[1] == "-t":
            fstype, options, source, mount_point = argv[2], argv[4], argv[5], argv[6]
            self.mounts.append([mount_point, fstype, source, self.kernel_options(source, options), 0])
            self.write()
            return 0, "", ""
        raise AssertionError("unexpected command %r" % (argv,))


@pytest.fixture
def env(tmp_path, fake_root, monkeypatch):
    kernel = FakeKernel(fake_root.root)
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "fstab").write_text(FSTAB)
    mount_point = tmp_path / "mnt" / "nfs"
    mount_point.mkdir(parents=True)

    def run_command(module, argv, **kwargs):
        # Looked up on each call so a test can wrap kernel.run_command.
        return kernel.run_command(module, argv, **kwargs)
    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    warnings = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, msg: warnings.append(msg))
    kernel.warnings = warnings
    kernel.fstab = etc / "fstab"
    kernel.path = str(mount_point)
    # Checksums cover the whole tree: the fake host's /proc, the fstab and the mount points.
    kernel.root = tmp_path
    return kernel


def args(env, **extra):
    base = {"src": "10.0.0.1:/srv/nfs", "path": env.path, "fstab": str(env.fstab),
            "opts": {"vers": 4.1, "nconnect": 4, "rsize": 1048576, "wsize": 1048576, "hard": True}}
    base.update(extra)
    return base


def add_seed_mount(env, path=None, age=178):
    """Mount the lab's real v4.1 mount (wsize=65536, nconnect=1) at path."""
    fields = seed_proc_mounts_line().split()
    env.add(path or env.path, fields[2], fields[0], fields[3], age)


def add_process(env, pid, command, cwd="/", fds=None, maps=""):
    base = env.proc / str(pid)
    (base / "fd").mkdir(parents=True)
    (base / "comm").write_text(command + "\n")
    os.symlink(cwd, str(base / "cwd"))
    os.symlink("/", str(base / "root"))
    for fd, target in (fds or {}).items():
        os.symlink(target, str(base / "fd" / str(fd)))
    (base / "maps").write_text(maps)


def fstab_line(env, opts="vers=4.1,nconnect=4,rsize=1048576,wsize=1048576,hard"):
    return "10.0.0.1:/srv/nfs %s nfs4 %s 0 0\n" % (escape_path(env.path), opts)


def test_new_mount_writes_one_line_and_mounts_with_an_argv_list(env):
    result = run_module(nfs_mount, args(env))
    assert result["changed"] is True
    assert env.fstab.read_text() == FSTAB + fstab_line(env)
    assert env.calls == [["mount", "-t", "nfs4", "-o", "vers=4.1,nconnect=4,rsize=1048576,wsize=1048576,hard",
                          "10.0.0.1:/srv/nfs", env.path]]
    assert result["remounted"] == "mount"
    assert result["pending"] == [] and result["negotiated"] == []
    assert result["live_options"]["nconnect"] == "4"
    assert result["drift"]["live"] == {"mounted": {"wanted": True, "live": False}}
    assert all(row["in_sync"] for row in result["settings"])


def test_second_run_is_idempotent(env):
    run_module(nfs_mount, args(env))
    env.calls.clear()
    sums = tree_checksums(str(env.root))
    result = run_module(nfs_mount, args(env))
    assert result["changed"] is False
    assert env.calls == []
    assert tree_checksums(str(env.root)) == sums
    assert result["drift"] == {"fstab": {}, "live": {}}


def test_check_mode_changes_nothing_and_runs_nothing(env):
    add_seed_mount(env)
    sums = tree_checksums(str(env.root))
    result = run_module(nfs_mount, args(env), check_mode=True, diff=True)
    assert result["changed"] is True
    assert env.calls == []
    assert tree_checksums(str(env.root)) == sums
    assert set(result["drift"]["live"]) == {"nconnect", "rsize", "wsize"}
    # Check mode reports the state as it is: an audit reads its drift table from these rows.
    assert {row["name"]: row["in_sync"] for row in result["settings"]} == {
        "src": False, "vers": False, "nconnect": False, "rsize": False, "wsize": False, "hard": False}
    assert result["live_options"]["wsize"] == "65536" and result["fstab_options"] == {}
    live_diff = result["diff"][1]
    assert "wsize=65536" in live_diff["before"] and "wsize=1048576" in live_diff["after"]


def test_diff_shows_fstab_and_live_before_and_after(env):
    result = run_module(nfs_mount, args(env), diff=True)
    fstab_diff, live_diff = result["diff"]
    assert fstab_diff["before"] == FSTAB and fstab_diff["after"] == FSTAB + fstab_line(env)
    assert fstab_diff["before_header"] == str(env.fstab)
    assert live_diff["before"] == "not mounted\n"
    assert live_diff["before_header"] == "live: %s" % env.path
    assert "nconnect=4" in live_diff["after"]


def test_present_writes_fstab_only_and_reports_live_differences_as_pending(env):
    add_seed_mount(env)
    result = run_module(nfs_mount, args(env, state="present"))
    assert result["changed"] is True and env.calls == []
    assert env.fstab.read_text() == FSTAB + fstab_line(env)
    assert sorted(item["name"] for item in result["pending"]) == ["nconnect", "rsize", "wsize"]


def test_wsize_change_on_idle_mount_unmounts_and_mounts(env):
    add_seed_mount(env)
    add_process(env, 1, "systemd", cwd="/", fds={0: "/dev/null"})
    env.fstab.write_text(FSTAB + fstab_line(env, "vers=4.1,nconnect=1,rsize=65536,wsize=65536,hard"))
    result = run_module(nfs_mount, args(env, opts={"vers": 4.1, "nconnect": 1, "rsize": 65536, "wsize": 1048576}))
    assert env.calls == [
        ["umount", env.path],
        ["mount", "-t", "nfs4", "-o", "vers=4.1,nconnect=1,rsize=65536,wsize=1048576", "10.0.0.1:/srv/nfs", env.path],
    ]
    assert result["remounted"] == "umount+mount"
    assert result["live_options"]["wsize"] == "1048576"
    assert result["pending"] == [] and result["holders"] == []


def test_busy_mount_is_not_unmounted_change_persisted_and_pending(env):
    add_seed_mount(env)
    add_process(env, 4242, "python3", cwd="/", fds={7: env.path + "/ckpt/shard-00.pt"},
                maps="7f1c2a000000-7f1c2a400000 r--s 00000000 00:24 77 %s/lib.so\n" % env.path)
    result = run_module(nfs_mount, args(env))
    assert env.calls == []
    assert env.fstab.read_text() == FSTAB + fstab_line(env)
    assert result["changed"] is True
    assert result["holders"] == [
        {"pid": 4242, "command": "python3", "how": "open fd 7 %s/ckpt/shard-00.pt" % env.path},
        {"pid": 4242, "command": "python3", "how": "mmap %s/lib.so" % env.path},
    ]
    assert sorted(item["name"] for item in result["pending"]) == ["nconnect", "rsize", "wsize"]
    assert all("pid 4242 (python3)" in item["reason"] for item in result["pending"])
    assert any("pid 4242 (python3)" in warning for warning in env.warnings)
    assert not any(row["in_sync"] for row in result["settings"] if row["name"] in ("nconnect", "wsize"))
    # Still busy on the next run: fstab is in sync, the change stays pending, nothing unmounted.
    again = run_module(nfs_mount, args(env))
    assert again["changed"] is False and env.calls == []
    assert sorted(item["name"] for item in again["pending"]) == ["nconnect", "rsize", "wsize"]


def test_busy_by_cwd_then_idle_applies_the_pending_change(env):
    add_seed_mount(env)
    add_process(env, 99, "bash", cwd=env.path + "/run")
    busy = run_module(nfs_mount, args(env))
    assert busy["holders"] == [{"pid": 99, "command": "bash", "how": "cwd %s/run" % env.path}]
    os.unlink(str(env.proc / "99" / "cwd"))
    os.symlink("/root", str(env.proc / "99" / "cwd"))
    idle = run_module(nfs_mount, args(env))
    assert idle["remounted"] == "umount+mount" and idle["pending"] == []
    assert env.calls[0] == ["umount", env.path]


def test_apply_policy_never_persists_and_never_unmounts(env):
    add_seed_mount(env)
    result = run_module(nfs_mount, args(env, apply_policy="never"))
    assert env.calls == []
    assert env.fstab.read_text() == FSTAB + fstab_line(env)
    assert {item["reason"] for item in result["pending"]} == {"apply_policy is never: persisted only, nothing unmounted"}


def test_remount_capable_change_uses_remount_and_is_verified(env):
    add_seed_mount(env)
    opts = {"vers": 4.1, "nconnect": 1, "rsize": 65536, "wsize": 65536, "atime": False}
    env.fstab.write_text(FSTAB + fstab_line(env, "vers=4.1,nconnect=1,rsize=65536,wsize=65536,noatime"))
    result = run_module(nfs_mount, args(env, opts=opts))
    assert env.calls == [["mount", "-o", "remount,noatime", env.path]]
    # The fake kernel (like some real ones) did not apply it: the module must not claim it did.
    assert [item["name"] for item in result["pending"]] == ["atime"]
    assert "verified" in result["pending"][0]["reason"]


def test_same_server_mounts_keep_nconnect_and_are_named_not_unmounted(env, tmp_path):
    other = str(tmp_path / "mnt" / "scratch")
    add_seed_mount(env, path=other)
    result = run_module(nfs_mount, args(env))
    assert env.calls[0][0] == "mount" and ["umount", other] not in env.calls
    assert result["same_server_mounts"] == [{"mount_point": other, "source": "10.0.0.1:/srv/nfs", "vers": "4.1",
                                             "nconnect": "1", "shares_client": True}]
    assert [item["name"] for item in result["pending"]] == ["nconnect"]
    assert other in result["pending"][0]["reason"] and "all of them must be unmounted" in result["pending"][0]["reason"]
    assert any("nconnect is fixed per server" in warning for warning in env.warnings)


def test_nconnect_only_change_with_shared_client_does_not_unmount(env, tmp_path):
    add_seed_mount(env)
    add_seed_mount(env, path=str(tmp_path / "mnt" / "scratch"))
    opts = {"vers": 4.1, "nconnect": 4, "rsize": 65536, "wsize": 65536}
    env.fstab.write_text(FSTAB + fstab_line(env, "vers=4.1,nconnect=4,rsize=65536,wsize=65536"))
    result = run_module(nfs_mount, args(env, opts=opts))
    assert env.calls == [] and result["changed"] is False
    assert [item["name"] for item in result["pending"]] == ["nconnect"]


def test_negotiated_down_sizes_are_reported_and_not_remounted_again(env):
    # The server in the lab's seed run answered rsize=wsize=65536; here it caps a 1 MiB request.
    env.max_block_size = 65536
    result = run_module(nfs_mount, args(env, opts={"vers": 4.1, "nconnect": 1, "rsize": 1048576, "wsize": 1048576}))
    assert result["live_options"]["wsize"] == "65536"
    live = env.options_of(env.path)
    assert {key: live[key] for key in ("vers", "rsize", "wsize", "nconnect")} == \
        {key: v for key, v in (item.partition("=")[::2] for item in seed_proc_mounts_line().split()[3].split(","))
         if key in ("vers", "rsize", "wsize", "nconnect")}
    assert sorted(item["name"] for item in result["negotiated"]) == ["rsize", "wsize"]
    assert "max_block_size" in result["negotiated"][0]["reason"]
    assert any("caps wsize at 65536" in warning for warning in env.warnings)
    assert result["pending"] == []
    env.calls.clear()
    again = run_module(nfs_mount, args(env, opts={"vers": 4.1, "nconnect": 1, "rsize": 1048576, "wsize": 1048576}))
    assert again["changed"] is False and env.calls == []
    assert sorted(item["name"] for item in again["negotiated"]) == ["rsize", "wsize"]


def test_path_with_spaces_roundtrips_through_040_escapes(env, tmp_path):
    spaced = tmp_path / "mnt" / "ckpt data"
    spaced.mkdir()
    first = run_module(nfs_mount, args(env, path=str(spaced)))
    escaped = escape_path(str(spaced))
    assert "\\040" in escaped
    assert env.fstab.read_text().endswith(" %s nfs4 " % escaped + "vers=4.1,nconnect=4,rsize=1048576,wsize=1048576,hard 0 0\n")
    assert env.calls[-1][-1] == str(spaced)
    assert first["changed"] is True
    again = run_module(nfs_mount, args(env, path=str(spaced)))
    assert again["changed"] is False
    absent = run_module(nfs_mount, {"path": str(spaced), "state": "absent", "fstab": str(env.fstab)})
    assert absent["changed"] is True and env.fstab.read_text() == FSTAB
    assert env.calls[-1] == ["umount", str(spaced)]


def test_unmounted_keeps_fstab_and_unmounts_when_idle(env):
    env.fstab.write_text(FSTAB + fstab_line(env))
    add_seed_mount(env)
    result = run_module(nfs_mount, {"path": env.path, "state": "unmounted", "fstab": str(env.fstab)})
    assert result["changed"] is True and env.calls == [["umount", env.path]]
    assert env.fstab.read_text() == FSTAB + fstab_line(env)
    assert run_module(nfs_mount, {"path": env.path, "state": "unmounted", "fstab": str(env.fstab)})["changed"] is False


def test_absent_on_busy_mount_removes_entry_but_does_not_unmount(env):
    env.fstab.write_text(FSTAB + fstab_line(env))
    add_seed_mount(env)
    add_process(env, 5, "rank0", cwd=env.path)
    result = run_module(nfs_mount, {"path": env.path, "state": "absent", "fstab": str(env.fstab)})
    assert env.calls == [] and env.fstab.read_text() == FSTAB
    assert result["pending"][0]["name"] == "mounted" and "pid 5 (rank0)" in result["pending"][0]["reason"]


def test_absent_when_nothing_there_is_unchanged(env):
    result = run_module(nfs_mount, {"path": env.path, "state": "absent", "fstab": str(env.fstab)})
    assert result["changed"] is False and env.fstab.read_text() == FSTAB


def test_backup_leaves_a_restorable_copy(env):
    result = run_module(nfs_mount, args(env, backup=True))
    with open(result["backup_file"]) as handle:
        assert handle.read() == FSTAB


def test_failed_atomic_move_leaves_the_old_file_and_no_temp_file(env, monkeypatch):
    def broken_move(self, src, dest, unsafe_writes=False, keep_dest_attrs=True):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(basic.AnsibleModule, "atomic_move", broken_move)
    result = fail_module(nfs_mount, args(env))
    assert "No space left on device" in result["msg"] and "unchanged" in result["msg"]
    assert env.fstab.read_text() == FSTAB
    assert sorted(os.listdir(str(env.fstab.parent))) == ["fstab"]
    assert env.calls == []


def test_failure_while_writing_the_temp_file_leaves_the_old_file(env, monkeypatch):
    def broken_fsync(fd):
        raise OSError(5, "Input/output error")
    monkeypatch.setattr(nfs_mount.os, "fsync", broken_fsync)
    result = fail_module(nfs_mount, args(env, backup=True))
    assert "Input/output error" in result["msg"]
    assert env.fstab.read_text() == FSTAB
    assert [name for name in os.listdir(str(env.fstab.parent)) if not name.startswith("fstab.")] == ["fstab"]


def test_byte_exact_fstab_with_tabs_crlf_and_no_final_newline(env):
    tricky = (FSTAB + "10.0.0.1:/srv/nfs\t%s\tnfs4\tvers=4.1,nconnect=1\t0\t0\r\n" % escape_path(env.path)
              + "10.0.0.3:/export /mnt/ckpt\\040data nfs vers=3 0 0")
    env.fstab.write_bytes(tricky.encode())
    run_module(nfs_mount, args(env))
    after = env.fstab.read_bytes().decode()
    expected = tricky.replace("vers=4.1,nconnect=1\t0\t0\r\n", "vers=4.1,nconnect=4,rsize=1048576,wsize=1048576,hard\t0\t0\r\n")
    assert after == expected


def test_other_fstypes_at_the_path_are_refused(env):
    env.add(env.path, "ext4", "/dev/vdb", "rw")
    sums = tree_checksums(str(env.root))
    result = fail_module(nfs_mount, args(env))
    assert result["msg"].startswith("path:") and "ext4" in result["msg"]
    assert tree_checksums(str(env.root)) == sums


def test_missing_mount_point_fails_before_writing(env, tmp_path):
    sums = tree_checksums(str(env.root))
    result = fail_module(nfs_mount, args(env, path=str(tmp_path / "nowhere")))
    assert result["msg"].startswith("path:")
    assert tree_checksums(str(env.root)) == sums and env.calls == []


def test_failed_mount_after_umount_restores_the_old_mount(env):
    add_seed_mount(env)
    original = env.run_command

    def mount_rejects_new_options(module, argv, **kwargs):
        if argv[0] == "mount" and "nconnect=4" in argv[4]:
            env.calls.append(list(argv))
            return 32, "", "mount.nfs: an incorrect mount option was specified"
        return original(module, argv, **kwargs)
    env.run_command = mount_rejects_new_options
    result = fail_module(nfs_mount, args(env))
    assert "incorrect mount option" in result["msg"] and "restored" in result["msg"]
    assert env.calls[-1][:3] == ["mount", "-t", "nfs4"] and env.options_of(env.path)["wsize"] == "65536"


BAD_INPUT = [
    ("opts.nconnect", {"opts": {"nconnect": 0}}),
    ("opts.nconnect", {"opts": {"nconnect": 17}}),
    ("opts.wsize", {"opts": {"wsize": 1000}}),
    ("opts.wsize", {"opts": {"wsize": 2097152}}),
    ("opts.rsize", {"opts": {"rsize": 65537}}),
    ("opts.vers", {"opts": {"vers": 5}}),
    ("opts.nconnect", {"opts": {"nconnect": "many"}}),
    ("opts.sec", {"opts": {"sec": "sys,nconnect=16"}}),
    ("opts.sec", {"opts": {"sec": "sys krb5"}}),
    ("opts.sec", {"opts": {"sec": "sys\nUUID=x / ext4 defaults 0 0"}}),
    ("opts.sec", {"opts": {"sec": "a=b"}}),
    ("opts.sec", {"opts": {"sec": "sys;reboot"}}),
    ("opts.sec", {"opts": {"sec": "$(reboot)"}}),
    ("opts.hard,nconnect=16", {"opts": {"hard,nconnect=16": True}}),
    ("opts.hard nconnect", {"opts": {"hard nconnect": True}}),
    ("opts.hard", {"opts": {"hard\n": True}}),
    ("opts.ha=rd", {"opts": {"ha=rd": True}}),
    ("opts.a;b", {"opts": {"a;b": True}}),
    ("opts.$(id)", {"opts": {"$(id)": True}}),
    ("opts.nosuchoption", {"opts": {"nosuchoption": 1}}),
    ("path", {"path": "mnt/nfs"}),
    ("src", {"src": "10.0.0.1-srv-nfs"}),
    ("src", {"src": "10.0.0.1:relative"}),
    ("dump", {"dump": -1}),
    ("fstype", {"fstype": "cifs"}),
    ("src", {"src": None}),
]


@pytest.mark.parametrize("option, override", BAD_INPUT, ids=[repr(case[1]) for case in BAD_INPUT])
def test_bad_input_fails_naming_the_option_and_changes_nothing(env, option, override):
    add_seed_mount(env)
    sums = tree_checksums(str(env.root))
    result = fail_module(nfs_mount, args(env, **override))
    assert option in result["msg"]
    assert tree_checksums(str(env.root)) == sums
    assert env.calls == []


# ---- fstab_options_before: what a rollback (client_tuning distro_default) restores ----
OLD_OPTS = "vers=4.2,hard,noatime,rsize=262144,wsize=262144,_netdev"
OLD_CANONICAL = {"vers": "4.2", "hard": True, "atime": False, "rsize": "262144", "wsize": "262144", "_netdev": True}


def test_fstab_options_before_is_the_entry_the_run_replaced(env):
    env.fstab.write_text(FSTAB + fstab_line(env, OLD_OPTS))
    result = run_module(nfs_mount, args(env, state="present"))
    assert result["changed"] is True
    assert result["fstab_options_before"] == OLD_CANONICAL
    assert result["fstab_options"] == {"vers": "4.1", "nconnect": "4", "rsize": "1048576", "wsize": "1048576", "hard": True}
    again = run_module(nfs_mount, args(env, state="present"))
    assert again["fstab_options_before"] == again["fstab_options"] == result["fstab_options"]


def test_fstab_options_before_is_empty_without_an_entry(env):
    result = run_module(nfs_mount, args(env, state="present"))
    assert result["changed"] is True and result["fstab_options_before"] == {}
    absent = run_module(nfs_mount, {"path": env.path, "state": "absent", "fstab": str(env.fstab)})
    assert absent["fstab_options_before"] == result["fstab_options"] and absent["fstab_options"] == {}


def test_fstab_options_before_in_check_mode_reads_the_entry_and_writes_nothing(env):
    add_seed_mount(env)
    env.fstab.write_text(FSTAB + fstab_line(env, OLD_OPTS))
    sums = tree_checksums(str(env.root))
    result = run_module(nfs_mount, args(env), check_mode=True)
    assert result["changed"] is True and env.calls == []
    assert tree_checksums(str(env.root)) == sums
    assert result["fstab_options_before"] == OLD_CANONICAL
    # Check mode reports the entry as found, so both views agree.
    assert result["fstab_options"] == OLD_CANONICAL
    env.fstab.write_text(FSTAB)
    missing = run_module(nfs_mount, args(env), check_mode=True)
    assert missing["fstab_options_before"] == {} and env.fstab.read_text() == FSTAB


# Spellings an admin's fstab may use; passed back as opts, each must give an equivalent line.
ROUNDTRIP = [
    ("nfs4", OLD_OPTS, OLD_OPTS),
    ("nfs4", "rw,nfsvers=4.1,soft,nolock,tcp,timeo=14,nofail,x-systemd.automount,x-systemd.idle-timeout=600",
     "rw,vers=4.1,soft,nolock,proto=tcp,timeo=14,nofail,x-systemd.automount,x-systemd.idle-timeout=600"),
    ("nfs4", "vers=4,minorversion=1,noac,sec=krb5p,lookupcache=positive,async,nosuid,nodev",
     "vers=4.1,noac,sec=krb5p,lookupcache=positive,async,nosuid,nodev"),
    ("nfs", "nfsvers=3,proto=udp,mountproto=udp,nconnect=2,ro,noauto,user,fsc",
     "vers=3,proto=udp,mountproto=udp,nconnect=2,ro,noauto,user,fsc"),
    ("nfs4", "defaults", "defaults"),
]


@pytest.mark.parametrize("fstype, old, rendered", ROUNDTRIP, ids=[case[1] for case in ROUNDTRIP])
def test_fstab_options_before_passed_back_as_opts_restores_an_equivalent_line(env, fstype, old, rendered):
    old_line = "10.0.0.1:/srv/nfs %s %s %s 0 0\n" % (escape_path(env.path), fstype, old)
    env.fstab.write_text(FSTAB + old_line)
    tuned = run_module(nfs_mount, args(env, fstype=fstype, state="present",
                                       opts={"vers": 4.1 if fstype == "nfs4" else 3, "nconnect": 4, "wsize": 1048576}))
    assert tuned["changed"] is True and env.fstab.read_text() != FSTAB + old_line
    restored = run_module(nfs_mount, args(env, fstype=fstype, state="present", opts=tuned["fstab_options_before"]))
    assert restored["changed"] is True
    assert restored["fstab_options"] == tuned["fstab_options_before"]
    # Equivalent, in the module's canonical spelling (nfsvers -> vers, tcp -> proto=tcp).
    assert env.fstab.read_text() == FSTAB + "10.0.0.1:/srv/nfs %s %s %s 0 0\n" % (escape_path(env.path), fstype, rendered)
    again = run_module(nfs_mount, args(env, fstype=fstype, state="present", opts=tuned["fstab_options_before"]))
    assert again["changed"] is False and again["drift"]["fstab"] == {}


def test_fstab_options_before_with_an_option_the_module_refuses_fails_naming_it(env):
    # SELinux context= is no NFS option: the rollback's preview stops before any change.
    env.fstab.write_text(FSTAB + fstab_line(env, "vers=4.2,context=system_u:object_r:nfs_t:s0"))
    tuned = run_module(nfs_mount, args(env, state="present"))
    assert tuned["fstab_options_before"] == {"vers": "4.2", "context": "system_u:object_r:nfs_t:s0"}
    sums = tree_checksums(str(env.root))
    result = fail_module(nfs_mount, args(env, state="present", opts=tuned["fstab_options_before"]), check_mode=True)
    assert "opts.context" in result["msg"]
    assert tree_checksums(str(env.root)) == sums
