"""A real lab capture (tests/fixtures/captures/mlperf_readback_two_paths, NOTES.txt): MLPerf's read-back across
hosts over two NFS paths - who read whose files, and the diagnosis's figures per path and in total."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.compare import option
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle as bundle_files
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path

MIB = 1024 * 1024


def _bundle():
    return load_bundle(sample_path("..", "captures", "mlperf_readback_two_paths"))


def test_each_client_read_the_other_clients_files_and_verified_every_block():
    clients = _bundle()["clients"]
    reads = dict((host, sorted((r["rank"], r["read_from_rank"]) for r in files["canary"]["ranks"])) for host, files in clients.items())
    # nfs2 holds global ranks 0-3 and nfs3 4-7 (the sorted client group); the shift is the 4 ranks per client.
    assert reads == {"nfs2": [(0, 4), (1, 5), (2, 6), (3, 7)], "nfs3": [(0, 0), (1, 1), (2, 2), (3, 3)]}
    for files in clients.values():
        assert all(r["verify_error_count"] == 0 and r["read_error"] is None and r["read_bytes"] == 8 * MIB
                   for r in files["canary"]["ranks"])
        assert files["canary"]["summary"]["restore"]["read_from"] == {"cache_risk": None, "other_host": True, "recovery_rank_shift": 4}
        assert files["canary"]["workdir"].endswith("/ckptio-canary-job-20261202T203652-mlperf_8b_2paths")


def test_the_diagnosis_reads_both_paths_and_the_comparison_names_whose_files_were_read():
    bundle = _bundle()
    result = diagnose(bundle)
    rows = dict((row["mount_point"], row) for row in result["paths"]["paths"])
    # Ranks round-robin by global rank: each path took half of the 64 MiB, written and read back.
    assert rows["/mnt/nfs"]["write_bytes"] == rows["/mnt/nfs-b"]["write_bytes"] == 32 * MIB
    assert result["paths"]["total"]["write_bytes"] == 64 * MIB and result["paths"]["total"]["read_bytes"] == 64 * MIB
    assert result["paths"]["total"]["write_ops"] == rows["/mnt/nfs"]["write_ops"] + rows["/mnt/nfs-b"]["write_ops"]
    canaries = dict((host, files["canary"]) for host, files in bundle["clients"].items())
    row = option.option_row("mlperf_8b_2paths", {"shape": "mlperf_llama3_8b"}, bundle["context"], result,
                            bundle_files.canary_ranks(bundle), [], canaries)
    assert row["restore"]["value"] > 0 and row["restore_cache_flag"] is None
    assert "another host's files (recovery_rank_shift 4" in row["restore"]["rests_on"]
    assert row["restore_published"]["gib_per_second"] > 0


def test_the_first_screen_names_every_path_the_canary_wrote_and_which_mlperf_figure_it_is():
    # Seen from the installed tarball: this bundle's diagnosis read "Checkpoint diagnosis of /mnt/nfs"
    # although half the bytes went to /mnt/nfs-b, and called its figure "MLPerf rule" without saying
    # that MLPerf Storage publishes a different one (issue 28).
    screen = diagnose(_bundle())["first_screen"]
    assert screen[0] == "Checkpoint diagnosis of /mnt/nfs and /mnt/nfs-b"
    text = " ".join(line.strip() for line in screen)
    assert "MLPerf rule" not in text
    assert "the rule MLPerf Storage states, not the figure it publishes" in text


def test_a_spread_message_fits_a_read_back_as_well_as_a_write():
    # The restore's spread (22.8 s in this capture) was told "the first ranks wrote alone".
    from ansible_collections.ckptio.nfs.plugins.module_utils.canary import barrier
    message = barrier.spread([0.0, 22.8])["message"]
    assert "wrote" not in message and "ran alone" in message
