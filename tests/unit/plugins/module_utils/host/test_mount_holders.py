from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.config import mount_plan
from ansible_collections.ckptio.nfs.plugins.module_utils.host import mount_holders

MAPS = (
    "55d0c0a00000-55d0c0a21000 r--p 00000000 fe:00 1311 /usr/bin/python3.11\n"
    "7f1c2a000000-7f1c2a400000 r--s 00000000 00:24 77 /mnt/nfs/ckpt/shard 00.pt\n"
    "7f1c2a400000-7f1c2a800000 r--s 00000000 00:24 77 /mnt/nfs/ckpt/shard 00.pt\n"
    "7ffd1c000000-7ffd1c021000 rw-p 00000000 00:00 0 [stack]\n"
)


def test_is_under_matches_the_mount_and_below_but_not_siblings():
    assert mount_holders.is_under("/mnt/nfs", "/mnt/nfs")
    assert mount_holders.is_under("/mnt/nfs/a/b", "/mnt/nfs")
    assert mount_holders.is_under("/mnt/nfs/x (deleted)", "/mnt/nfs")
    assert not mount_holders.is_under("/mnt/nfs2/a", "/mnt/nfs")
    assert not mount_holders.is_under("socket:[1234]", "/mnt/nfs")
    assert not mount_holders.is_under(None, "/mnt/nfs")


def test_find_holders_names_pid_command_and_how():
    processes = [
        {"pid": 1, "command": "systemd", "cwd": "/", "root": "/", "fds": {"0": "/dev/null"}, "maps": ""},
        {"pid": 4242, "command": "python3", "cwd": "/mnt/nfs/run", "root": "/",
         "fds": {"10": "/mnt/nfs/ckpt/shard 00.pt", "2": "socket:[9]"}, "maps": MAPS},
        {"pid": 77, "command": "chrooted", "cwd": None, "root": "/mnt/nfs/jail", "fds": {}, "maps": None},
    ]
    holders = mount_holders.find_holders("/mnt/nfs", processes, ["/", "/mnt/nfs", "/mnt/nfs/sub", "/mnt/nfs2"])
    assert holders == [
        {"pid": 4242, "command": "python3", "how": "cwd /mnt/nfs/run"},
        {"pid": 4242, "command": "python3", "how": "open fd 10 /mnt/nfs/ckpt/shard 00.pt"},
        {"pid": 4242, "command": "python3", "how": "mmap /mnt/nfs/ckpt/shard 00.pt"},
        {"pid": 77, "command": "chrooted", "how": "root /mnt/nfs/jail"},
        {"pid": None, "command": None, "how": "mount /mnt/nfs/sub below it"},
    ]
    text = mount_plan.describe_holders(holders, limit=2)
    assert text == "pid 4242 (python3) cwd /mnt/nfs/run; pid 4242 (python3) open fd 10 /mnt/nfs/ckpt/shard 00.pt; and 3 more"


def test_idle_mount_has_no_holders():
    processes = [{"pid": 9, "command": "bash", "cwd": "/root", "root": "/", "fds": {"1": "/dev/pts/0"}, "maps": MAPS}]
    assert mount_holders.find_holders("/mnt/other", processes, ["/", "/mnt/other"]) == []


def test_read_processes_reads_links_and_files_of_each_pid_and_skips_the_rest(tmp_path):
    proc = tmp_path / "proc"
    base = proc / "4242"
    (base / "fd").mkdir(parents=True)
    (base / "comm").write_text("python3\n")
    (base / "cwd").symlink_to("/mnt/nfs/run")
    (base / "fd" / "7").symlink_to("/mnt/nfs/ckpt/shard 00.pt")
    (base / "maps").write_text(MAPS)
    (proc / "self").mkdir()
    # A kernel thread as an unprivileged reader sees it: an fd directory, no comm, links or maps.
    (proc / "2" / "fd").mkdir(parents=True)
    processes = sorted(mount_holders.read_processes(str(proc)), key=lambda process: process["pid"])
    assert [process["pid"] for process in processes] == [2, 4242]
    assert processes[0]["command"] is None and processes[0]["cwd"] is None and processes[0]["maps"] is None
    assert processes[1] == {"pid": 4242, "command": "python3", "cwd": "/mnt/nfs/run", "root": None,
                            "fds": {"7": "/mnt/nfs/ckpt/shard 00.pt"}, "maps": MAPS}
    assert mount_holders.find_holders("/mnt/nfs", processes)[0] == {"pid": 4242, "command": "python3", "how": "cwd /mnt/nfs/run"}
    assert mount_holders.read_processes(str(tmp_path / "nowhere")) == []
