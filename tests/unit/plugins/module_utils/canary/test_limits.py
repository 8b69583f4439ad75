"""The canary's resource bounds on figures: each returns a message naming the option and the numbers."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import parse_mountinfo
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import limits

MIB = 1024 * 1024
GIB = 1024 * MIB

MEMINFO = "MemTotal:       24683520 kB\nMemFree:        21270528 kB\nMemAvailable:    1048576 kB\nBuffers: 1 kB\n"
MOUNTINFO = ("22 1 254:0 / / rw - ext4 /dev/vda rw\n"
             "40 22 0:50 / /mnt/a rw - nfs4 10.0.0.1:/srv rw,vers=4.1\n"
             "41 22 0:51 / /mnt/b rw - nfs 10.0.0.2:/srv rw,vers=3\n"
             "42 22 0:52 / /mnt/c rw - tmpfs tmpfs rw\n")


def test_block_size_is_bounded_at_64_mib():
    assert limits.block_size_error(64 * MIB) is None
    message = limits.block_size_error(64 * MIB + 1)
    assert message.startswith("block_size must be at most 67108864") and "got 67108865" in message


def test_mem_available_reads_kib_and_is_none_when_absent():
    assert limits.mem_available(MEMINFO) == GIB
    assert limits.mem_available("MemTotal: 5 kB\n") is None
    assert limits.mem_available(None) is None


def test_memory_bound_is_half_of_mem_available_with_the_per_rank_overhead():
    # 1 GiB available: 512 MiB for ranks; 8 ranks x (56 + 8) MiB = 512 MiB fits, one more does not.
    assert limits.memory_error(8, 56 * MIB, GIB) is None
    message = limits.memory_error(9, 56 * MIB, GIB)
    assert message.startswith("ranks x block_size needs %d bytes (9 ranks" % (9 * 64 * MIB))
    assert "MemAvailable (%d of %d bytes)" % (GIB // 2, GIB) in message
    assert limits.memory_error(4096, 64 * MIB, None) is None


def test_fd_limit_is_raised_up_to_the_hard_limit_or_fails_naming_ranks():
    need = limits.fd_need(2000, 10)
    assert need == 2000 + 10 + limits.FD_RESERVE
    assert limits.fd_limit_plan(2000, 10, need, need) == (None, None)
    assert limits.fd_limit_plan(2000, 10, 1024, 4096) == (need, None)
    assert limits.fd_limit_plan(2000, 10, 1024, -1) == (need, None)
    assert limits.fd_limit_plan(2000, 10, -1, -1) == (None, None)
    new_soft, message = limits.fd_limit_plan(2000, 10, 1024, 1024)
    assert new_soft is None
    assert message.startswith("ranks=2000 needs %d open files" % need) and "hard limit 1024" in message


def test_space_needs_the_bytes_plus_a_margin_of_5_percent_at_least_64_mib():
    assert limits.space_margin(GIB) == 64 * MIB
    assert limits.space_margin(100 * GIB) == 5 * GIB
    # 100 GiB file system: 4 x 20 GiB + 5 GiB margin = 85 GiB.
    assert limits.space_error("/mnt/a", 4, 20 * GIB, 85 * GIB, 100 * GIB) is None
    message = limits.space_error("/mnt/a", 4, 20 * GIB, 85 * GIB - 1, 100 * GIB)
    assert message == ("ranks x bytes_per_rank is %d bytes (4 x %d); with a margin of %d bytes that does not fit in"
                       " the %d bytes free on the file system of /mnt/a (size %d)"
                       % (80 * GIB, 20 * GIB, 5 * GIB, 85 * GIB - 1, 100 * GIB))


def test_device_numbers_of_the_nfs_mounts_only():
    mounts = parse_mountinfo(MOUNTINFO)
    assert limits.device_numbers(mounts, ("nfs", "nfs4")) == {(0, 50), (0, 51)}
    assert limits.device_numbers([{"fstype": "nfs4", "device": "bad"}], ("nfs4",)) == set()


def test_mount_of_device_prefers_the_path_mount():
    mounts = parse_mountinfo(MOUNTINFO + "43 22 0:50 /sub /mnt/d rw - nfs4 10.0.0.1:/srv/sub rw\n")
    assert limits.mount_of_device(mounts, (0, 50))["mount_point"] == "/mnt/d"
    assert limits.mount_of_device(mounts, (0, 50), mounts[1])["mount_point"] == "/mnt/a"
    assert limits.mount_of_device(mounts, (9, 9)) is None


def test_memory_bound_with_restore_counts_a_second_block_per_rank():
    # 1 GiB available, 512 MiB for ranks: 8 x (30 + 8) MiB fit with one block, 8 x (2 x 30 + 8) MiB do not.
    assert limits.memory_error(8, 30 * MIB, GIB) is None
    message = limits.memory_error(8, 30 * MIB, GIB, blocks_per_rank=2)
    assert message.startswith("ranks x block_size needs %d bytes (8 ranks x (2 x %d + %d overhead)) (restore=true"
                              % (8 * 68 * MIB, 30 * MIB, limits.RANK_OVERHEAD_BYTES))
    assert limits.rank_memory_bytes(2, MIB, 2) == 2 * (2 * MIB + limits.RANK_OVERHEAD_BYTES)
