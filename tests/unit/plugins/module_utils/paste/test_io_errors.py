"""paste/io_errors.py: an errno a program printed while writing (Python's "[Errno N] ..." or a tool's ": strerror"),
on real pastes: what the error is, and the fault where the errno names one."""
from __future__ import annotations

import os

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import io_errors, partial, readings
from ansible_collections.ckptio.nfs.tests.unit.utils import sample_path

CORPUS = sample_path("..", "paste_corpus")
KINDS = sample_path("..", "paste_kinds", "io_errors")


def _read(path):
    with open(path, encoding="utf-8") as handle:
        reading = readings.read_file(os.path.basename(path), handle.read())
    return reading, partial.partial_diagnosis([reading])


def test_a_bad_address_from_the_writer_is_the_programs_bug():
    # metaseq#497: "OSError: [Errno 14] Bad address" from the PathManager non-blocking writer; fixed in metaseq by
    # dropping that writer. EFAULT is the kernel refusing the program's buffer, never the storage or the server.
    reading, result = _read(os.path.join(CORPUS, "037_metaseq_497_nfs_save_log", "paste.txt"))
    assert "io_errors" in [reading["kind"]] + reading["also"]
    fault = result["faults"][0]
    assert fault["kind"] == "bug" and fault["name"] == "errno_efault" and "Bad address" in fault["what"]
    # The training log's save is still read beside it.
    assert result["window"]["kind"] == "training_log"


def test_an_eio_on_a_save_is_a_fault_without_a_layer():
    # pytorch#48580 (close() after torch.save) and slime#326 (Megatron's async writer): EIO, the data is not on the server.
    for name in ("pytorch_48580_torch_save_eio.txt", "slime_326_megatron_async_save_eio.txt"):
        reading, result = _read(os.path.join(KINDS, name))
        assert reading["tells_nothing"] is None, name
        fault = result["faults"][0]
        assert fault["name"] == "errno_eio" and fault["kind"] == "other" and "soft" in fault["what"], name
        assert result["limiting_layer"] == "none" and result["partial"]["capture_next"]


def test_a_strerror_after_a_colon_is_read_and_a_word_in_prose_is_not():
    assert io_errors.recognise("cp: error writing '/mnt/nfs/ckpt.pt': No space left on device\n")
    assert not io_errors.recognise("we had a bad address book and no space left on device was mentioned\n")
