"""A counter no kernel prints, end to end (issue 45, numbers that cannot be): a 400-digit WRITE counter in a client's
mountstats used to end diagnose_bundle in an OverflowError traceback (kernel_text/stats_delta.py); now the client is left out,
named with the line and field, and with no client left the module fails cleanly and writes nothing."""
from __future__ import annotations

import os

from ansible_collections.ckptio.nfs.plugins.modules import diagnose_bundle
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_diagnose_bundle import copy_bundle
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, tree_checksums


def test_a_400_digit_counter_fails_the_diagnosis_cleanly_naming_the_host_field_and_problem(tmp_path):
    bundle = copy_bundle("seed_like_baseline", tmp_path)
    path = os.path.join(bundle, "clients", "nfs2", "mountstats_after.txt")
    with open(path) as handle:
        text = handle.read()
    line = next(line for line in text.split("\n") if line.strip().startswith("WRITE:"))
    words = line.split()
    words[1] = "9" * 400
    with open(path, "w") as handle:
        handle.write(text.replace(line, "\t" + " ".join(words)))
    before = tree_checksums(bundle)
    result = fail_module(diagnose_bundle, {"bundle": bundle})
    assert "no usable client" in result["msg"] and "nfs2" in result["msg"] and "not_kernel_value" in result["msg"], result["msg"]
    assert "WRITE ops is 999999999999999999999999... (400 characters): above 2^64, not a kernel counter" in result["msg"]
    assert tree_checksums(bundle) == before
