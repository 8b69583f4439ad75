"""Steps compare_options and compare_bundles (behind ckptio.nfs.internal): errors name the bad option."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.filter.internal import STEPS as CHECKED
from ansible_collections.ckptio.nfs.plugins.plugin_utils import compare_steps as compare


def test_compare_options_default_and_a_bad_option_named():
    filters = CHECKED
    assert [item["name"] for item in filters["compare_options"](None, "/mnt/nfs", paths=["/mnt/nfs", "/mnt/nfs-b"])] == [
        "shared_file", "file_per_rank", "file_per_rank_2_paths"]
    with pytest.raises(AnsibleFilterError, match=r"ckptio_compare_options\[1\]\.name"):
        filters["compare_options"]([{"name": "ok"}, {"name": "no good"}], "/mnt/nfs")


def test_compare_bundles_takes_any_iterable_of_paths():
    options = compare.compare_options(None, "/mnt/nfs")
    found = iter(["/r/20260101T000000-file_per_rank/context.yml"])
    assert [item["name"] for item in compare.compare_bundles(options, found, "/r")] == ["file_per_rank"]
