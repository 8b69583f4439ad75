"""ckptio.nfs.compare_report on real lab bundles (tests/fixtures/captures)."""
from __future__ import annotations

import json
import os
import shutil

from ansible_collections.ckptio.nfs.plugins.modules import compare_report
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, run_module

CAPTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "captures")


def _options(tmp_path, *names):
    options = []
    for name in names:
        shutil.copytree(os.path.join(CAPTURES, name), str(tmp_path / name))
        options.append({"name": name, "bundle": str(tmp_path / name)})
    return options


def test_writes_compare_md_json_png_ranked(tmp_path):
    out = tmp_path / "compare"
    options = _options(tmp_path, "healthy", "one_thread", "loss_2pct")
    result = run_module(compare_report, {"options": options, "output_dir": str(out)})
    assert result["changed"] is True
    assert sorted(os.listdir(str(out))) == ["compare.json", "compare.md", "compare.png"]
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    document = json.loads((out / "compare.json").read_text())
    # context.yml of each capture: 64 MiB each; one_thread 9.06 MB/s > healthy 4.06 > loss_2pct.
    assert [row["name"] for row in document["options"]] == ["one_thread", "healthy", "loss_2pct"]
    assert document["options"][0]["throughput"]["ours"]["bytes"] == 67108864
    assert result["conclusion"] == "Measured options that meet the target: one_thread (best: one_thread)."
    markdown = (out / "compare.md").read_text()
    assert "| 1 | one_thread | shared_file |" in markdown and "![compare](compare.png)" in markdown
    # The same bundles again: the same bytes (the PNG has no date in it), nothing changes.
    assert run_module(compare_report, {"options": options, "output_dir": str(out)})["changed"] is False


def test_check_mode_writes_nothing(tmp_path):
    out = tmp_path / "compare"
    result = run_module(compare_report, {"options": _options(tmp_path, "healthy"), "output_dir": str(out)}, check_mode=True, diff=True)
    assert result["changed"] is True and not out.exists()
    assert result["diff"][0]["after"].startswith("# Architectures side by side")


def test_a_directory_that_is_no_bundle_is_refused_naming_the_option(tmp_path):
    (tmp_path / "empty").mkdir()
    result = fail_module(compare_report, {"options": [{"name": "empty", "bundle": str(tmp_path / "empty")}], "output_dir": str(tmp_path / "out")})
    assert result["msg"].startswith("options: empty's bundle") and not (tmp_path / "out").exists()


def test_an_output_linked_out_of_output_dir_is_refused_and_the_target_keeps_its_bytes(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("keep me\n")
    out = tmp_path / "compare"
    out.mkdir()
    os.symlink(str(secret), str(out / "compare.json"))
    result = fail_module(compare_report, {"options": _options(tmp_path, "healthy"), "output_dir": str(out)})
    assert "compare.json" in result["msg"] and "nothing was written" in result["msg"]
    assert secret.read_text() == "keep me\n" and not (out / "compare.md").exists()
