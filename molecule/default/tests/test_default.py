"""Files the roles leave on the containers after converge, side effects and re-apply.

The host kernel has no NFS, so only persisted state can be checked here; the live values are
covered by molecule/lab.
"""
from __future__ import annotations

import json
import re

import pytest

# What prepare.yml wrote: every byte of it must survive the fstab edit.
PREPARED_FSTAB = (
    "# /etc/fstab: static file system information.\n\n"
    "UUID=0a1b2c3d-1111-2222-3333-444455556666 /\text4\terrors=remount-ro 0 1\n"
    "LABEL=scratch /scratch xfs defaults,noatime 0 2\n"
    "ckptio-default-server1:/srv/checkpoints\t/mnt/checkpoints\tnfs4\t"
    "rw,vers=4.2,hard,noatime,rsize=262144,wsize=262144,_netdev\t0\t0\n"
    "/srv/data\\040set /data\\040set none bind 0 0\n"
    "# keep this comment\n"
    "other:/home /home nfs4 vers=4.2,hard 0 0"
)
PREPARED_EXPORTS = (
    "# checkpoints for the GPU nodes\n"
    "/srv/checkpoints  10.0.0.0/24(rw,sync,no_subtree_check) gpu*(rw,async,no_root_squash)\n"
)


def _is(host, group):
    return group in host.ansible.get_variables().get("group_names", [])


@pytest.fixture
def client(host):
    if not _is(host, "nfs_clients"):
        pytest.skip("client files")
    return host


@pytest.fixture
def server(host):
    if not _is(host, "nfs_servers"):
        pytest.skip("server files")
    return host


def test_slot_tables_are_persisted_for_module_load(client):
    conf = client.file("/etc/modprobe.d/ckptio-nfs.conf")
    assert conf.is_file and conf.user == "root" and conf.mode == 0o644
    lines = [line for line in conf.content_string.splitlines() if not line.startswith("#")]
    assert lines == [
        "options sunrpc tcp_slot_table_entries=128 tcp_max_slot_table_entries=128",
        "options nfs max_session_slots=160",
    ]


def test_sunrpc_loads_at_boot_so_the_options_apply(client):
    conf = client.file("/etc/modules-load.d/ckptio-nfs.conf")
    assert conf.mode == 0o644
    assert "sunrpc" in conf.content_string.splitlines()


PREPARED_CHECKPOINT_OPTIONS = "rw,vers=4.2,hard,noatime,rsize=262144,wsize=262144,_netdev"


def test_fstab_keeps_every_other_byte_and_has_the_tuned_mount(client):
    fstab = client.file("/etc/fstab")
    assert fstab.mode == 0o644
    text = fstab.content_string
    # Only the options field of the checkpoint line moved; its tabs and every other byte stayed.
    before, marker, after = PREPARED_FSTAB.partition(PREPARED_CHECKPOINT_OPTIONS)
    assert marker and text.startswith(before) and text.endswith(after)
    options = text[len(before):len(text) - len(after)]
    assert "\t" not in options and "\n" not in options
    assert set(options.split(",")) == {
        "vers=4.1", "nconnect=4", "rsize=1048576", "wsize=1048576", "hard", "proto=tcp",
        "timeo=600", "retrans=2", "_netdev"}


def test_the_checkpoint_mounts_options_from_before_tuning_are_recorded_root_only(client):
    state = client.file("/var/lib/ckptio/client_tuning-mounts.json")
    assert state.is_file and state.user == "root" and state.mode == 0o600
    assert client.file("/var/lib/ckptio").mode == 0o700
    records = json.loads(state.content_string)
    assert list(records) == ["/mnt/checkpoints"]
    record = records["/mnt/checkpoints"]
    assert (record["src"], record["fstype"]) == ("ckptio-default-server1:/srv/checkpoints", "nfs4")
    # Recorded again by the re-apply after the rollback, in place of the record marked restored:
    # the prepared options, plus the nconnect=1 the rollback wrote; not marked, as the tuning is live.
    assert record["opts"] == {"ro": False, "vers": "4.2", "hard": True, "atime": False, "rsize": "262144",
                              "wsize": "262144", "_netdev": True, "nconnect": "1"}
    assert "restored_at" not in record
    assert re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$", record["recorded_at"])


def test_rollback_and_reapply_left_backups_of_fstab(client):
    backups = client.run("ls /etc/ | grep -c '^fstab\\..*~$'")
    assert int(backups.stdout.strip()) >= 1


def test_nfsd_threads_are_persisted_in_the_drop_in(server):
    conf = server.file("/etc/nfs.conf.d/ckptio-nfsd.conf")
    assert conf.is_file and conf.user == "root" and conf.mode == 0o644
    lines = [line.strip() for line in conf.content_string.splitlines() if not line.startswith("#")]
    assert lines == ["[nfsd]", "threads=64"]


def test_nfs_conf_and_exports_are_not_rewritten(server):
    assert server.file("/etc/exports").content_string == PREPARED_EXPORTS
    # Debian's nfs.conf ships threads commented out; the role persists in the drop-in only.
    assert "\nthreads=" not in server.file("/etc/nfs.conf").content_string


def test_nfs_server_unit_reads_the_drop_in_dir(server):
    # The drop-in is read by nfsdctl/rpc.nfsd through nfs.conf's conf.d support (nfs-utils >= 2.5).
    version = server.run("dpkg-query -W -f='${Version}' nfs-kernel-server").stdout
    major, minor = (int(part) for part in version.split(":")[-1].split(".")[:2])
    assert (major, minor) >= (2, 5)
