"""host_reader.read_host_sample: the kernel release rides in every host sample."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.host.host_reader import read_host_sample


def _proc(tmp_path, release):
    proc = tmp_path / "proc"
    (proc / "sys" / "kernel").mkdir(parents=True)
    (proc / "stat").write_text("cpu  1 2 3 4 5 6 7 0 0 0\nintr 1 2 3\n")
    (proc / "uptime").write_text("12.5 3.0\n")
    if release is not None:
        (proc / "sys" / "kernel" / "osrelease").write_text(release)
    (tmp_path / "net").mkdir()
    return str(proc), str(tmp_path / "net")


def test_sample_names_the_kernel_release(tmp_path):
    proc, net = _proc(tmp_path, "5.10.0-46-amd64\n")
    sample = read_host_sample(root=net, proc=proc)
    assert sample["kernel_release"] == "5.10.0-46-amd64"
    assert sample["proc_stat"] == "cpu  1 2 3 4 5 6 7 0 0 0\n" and sample["uptime"] == 12.5


def test_missing_release_is_none_not_a_guess(tmp_path):
    proc, net = _proc(tmp_path, None)
    assert read_host_sample(root=net, proc=proc)["kernel_release"] is None
