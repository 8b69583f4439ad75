"""host_reader.read_host_sample: the kernel release rides in every host sample."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root
from ansible_collections.ckptio.nfs.plugins.module_utils.host.host_reader import read_host_sample


def _host(tmp_path, release):
    """A fake host root with /proc's sample files and an empty /sys/class/net."""
    proc = tmp_path / "proc"
    (proc / "sys" / "kernel").mkdir(parents=True)
    (proc / "stat").write_text("cpu  1 2 3 4 5 6 7 0 0 0\nintr 1 2 3\n")
    (proc / "uptime").write_text("12.5 3.0\n")
    if release is not None:
        (proc / "sys" / "kernel" / "osrelease").write_text(release)
    (tmp_path / "sys" / "class" / "net").mkdir(parents=True)
    return host_root.HostRoot(str(tmp_path))


def test_sample_names_the_kernel_release(tmp_path):
    sample = read_host_sample(_host(tmp_path, "5.10.0-46-amd64\n"))
    assert sample["kernel_release"] == "5.10.0-46-amd64"
    assert sample["proc_stat"] == "cpu  1 2 3 4 5 6 7 0 0 0\n" and sample["uptime"] == 12.5


def test_missing_release_is_none_not_a_guess(tmp_path):
    assert read_host_sample(_host(tmp_path, None))["kernel_release"] is None
