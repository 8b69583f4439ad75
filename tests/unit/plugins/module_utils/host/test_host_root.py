"""HostRoot: every /proc, /sys, /etc, /usr and /run path under one root, and the one reader of kernel parameters (issue 46)."""
from __future__ import annotations

import os

from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root


def test_the_live_host_keeps_the_paths_the_modules_had():
    host = host_root.HostRoot("/")
    assert (host.nfs_conf, host.nfs_conf_d, host.usr_nfs_conf) == ("/etc/nfs.conf", "/etc/nfs.conf.d", "/usr/etc/nfs.conf")
    assert host.nfs_server_dropin == "/etc/systemd/system/nfs-server.service.d/ckptio-max-connections.conf"
    assert host.max_connections_value_file == "/etc/ckptio/nfsd-max-connections"
    assert host.rpcnfsdcount_record == "/etc/ckptio/nfsd-rpcnfsdcount.record"
    assert host.systemd_unit_dirs == ("/etc/systemd/system", "/run/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system")
    assert host.env_scripts == ("/usr/lib/systemd/scripts/nfs-utils_env.sh", "/lib/systemd/scripts/nfs-utils_env.sh")
    assert host.editable_defaults == ("/etc/default/nfs-kernel-server", "/etc/sysconfig/nfs")
    assert host.modprobe_dirs == ("/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d", "/usr/lib/modprobe.d",
                                  "/lib/modprobe.d")
    assert host.modules_load_dirs == ("/etc/modules-load.d", "/run/modules-load.d", "/usr/local/lib/modules-load.d",
                                      "/usr/lib/modules-load.d", "/lib/modules-load.d")


def test_every_search_path_is_under_the_root(tmp_path):
    host = host_root.HostRoot(str(tmp_path))
    paths = ((host.nfs_conf, host.nfs_conf_d, host.usr_nfs_conf, host.nfs_server_dropin, host.max_connections_value_file,
              host.rpcnfsdcount_record) + host.systemd_unit_dirs + host.env_scripts + host.editable_defaults
             + host.modprobe_dirs + host.modules_load_dirs)
    assert all(path.startswith(str(tmp_path) + os.sep) for path in paths), paths


def test_dd_is_named_by_its_host_path_wherever_the_root_has_it(tmp_path):
    host = host_root.HostRoot(str(tmp_path))
    assert host.dd_path() == "/usr/bin/dd", "none present: the first"
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "dd").write_text("")
    assert host.dd_path() == "/bin/dd", "unmerged /usr (Debian 11): /bin/dd, as the unit runs it"
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    (tmp_path / "usr" / "bin" / "dd").write_text("")
    assert host.dd_path() == "/usr/bin/dd"
    assert host.first_present(host.env_scripts) == host.env_scripts[0]


def test_kernel_parameters_sysctls_first_then_the_module(fake_root):
    host = fake_root.paths
    assert host.parameter_dirs("sunrpc") == [host.sunrpc_sysctls, host.module_parameters("sunrpc")]
    assert host.parameter_dirs("nfs") == [host.module_parameters("nfs")]
    assert not host.kmod_loaded("sunrpc") and not host.kmod_loaded("nfs")
    fake_root.write("/proc/sys/sunrpc/tcp_slot_table_entries", "2\n")
    fake_root.write("/sys/module/sunrpc/parameters/tcp_max_slot_table_entries", " 65536 \n")
    os.makedirs(host.path("/sys/module/sunrpc/parameters/holders"))
    assert host.kmod_loaded("sunrpc") and not host.kmod_loaded("nfs")
    # Every regular file by name, whitespace runs one space; a directory is no parameter.
    assert host.read_parameters(host.module_parameters("sunrpc")) == [("tcp_max_slot_table_entries", "65536")]
    assert host.read_parameters(host.module_parameters("nfs")) is None, "not loaded: nothing to list"
    # Named files: a missing one is left out.
    assert host.read_parameters(host.sunrpc_sysctls, ["udp_slot_table_entries", "tcp_slot_table_entries"]) == [
        ("tcp_slot_table_entries", "2")]


def test_a_module_can_refuse_a_directory_where_a_parameter_belongs(fake_root):
    host = fake_root.paths
    os.makedirs(host.path("/proc/sys/sunrpc/tcp_slot_table_entries"))
    assert host.read_parameters(host.sunrpc_sysctls, ["tcp_slot_table_entries"]) == []
    try:
        host.read_parameters(host.sunrpc_sysctls, ["tcp_slot_table_entries"], file_read.read)
    except file_read.FileRefused as exc:
        assert exc.filename == host.path("/proc/sys/sunrpc/tcp_slot_table_entries")
    else:
        raise AssertionError("a directory was read as a value")


def test_sunrpc_settings_keep_their_bundle_text(fake_root):
    fake_root.write("/proc/sys/sunrpc/tcp_slot_table_entries", "2\n")
    fake_root.write("/sys/module/sunrpc/parameters/tcp_slot_table_entries", "4\n")
    fake_root.write("/sys/module/nfs/parameters/max_session_slots", "64\n")
    settings, text = fake_root.paths.read_sunrpc_settings()
    assert settings == {"tcp_slot_table_entries": "2", "max_session_slots": "64"}
    assert text == ("tcp_slot_table_entries 2\n# /sys/module/nfs/parameters\nmax_session_slots 64\n"
                    "# /sys/module/sunrpc/parameters\ntcp_slot_table_entries 4\n")
