"""Issue 45, "Numbers given as options": every float option of checkpoint_canary is finite and in its range,
or the module fails naming the option before anything is opened, forked or written (one rule:
canary/options.FLOAT_OPTIONS). Before: shape_scale=inf crashed check mode (OverflowError), timeout=inf and
kill_grace=nan were accepted."""
from __future__ import annotations

import pytest
import yaml

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import options
from ansible_collections.ckptio.nfs.plugins.modules import checkpoint_canary
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_checkpoint_canary import _args
from ansible_collections.ckptio.nfs.tests.unit.plugins.modules.test_checkpoint_canary import live_host  # noqa: F401 pylint: disable=unused-import
from ansible_collections.ckptio.nfs.tests.unit.utils import fail_module, tree_checksums

pytestmark = pytest.mark.usefixtures("live_host")

INF, NAN = float("inf"), float("nan")
ROWS = [
    ("shape_scale", INF, {"shape": "mlperf_llama3_8b"}), ("shape_scale", NAN, {"shape": "mlperf_llama3_8b"}),
    ("shape_scale", -INF, {"shape": "mlperf_llama3_8b"}), ("shape_scale", 1e300, {"shape": "mlperf_llama3_8b"}),
    ("timeout", INF, {}), ("timeout", NAN, {}), ("timeout", 0.0, {}), ("timeout", 1e12, {}),
    ("kill_grace", NAN, {}), ("kill_grace", INF, {}), ("kill_grace", -1.0, {}),
    ("barrier_timeout", NAN, {}), ("barrier_timeout", INF, {}),
    ("start_at", NAN, {}), ("start_at", INF, {}), ("start_at", -INF, {}),
]


@pytest.mark.parametrize("check_mode", [True, False], ids=["check", "run"])
@pytest.mark.parametrize("option, value, extra", ROWS, ids=["%s=%s" % (row[0], row[1]) for row in ROWS])
def test_a_float_option_that_is_not_finite_or_out_of_range_fails_naming_it(tmp_path, option, value, extra, check_mode):
    target = tmp_path / "target"
    target.mkdir()
    before = tree_checksums(str(tmp_path))
    args = dict(_args(target, **extra), **{option: value})
    result = fail_module(checkpoint_canary, args, check_mode=check_mode)
    assert result["msg"].startswith(option + " must be") or ("; %s must be" % option) in result["msg"], result["msg"]
    assert tree_checksums(str(tmp_path)) == before


def test_every_float_option_of_the_canary_is_in_the_one_table():
    documented = yaml.safe_load(checkpoint_canary.DOCUMENTATION)["options"]
    floats = sorted(name for name, spec in documented.items() if spec.get("type") == "float")
    assert floats == sorted(options.FLOAT_OPTIONS)


@pytest.mark.parametrize("second", ["{x}/", "{x}/.", "{x}//", "{parent}/../target/x"])
def test_paths_naming_one_directory_twice_are_refused_naming_the_option(tmp_path, second):
    """Issue 45: paths=[X, X/] was taken as two paths (two work directories, the ranks' figures split)."""
    target = tmp_path / "target"
    target.mkdir()
    first = target / "x"
    first.mkdir()
    before = tree_checksums(str(tmp_path))
    other = second.format(x=str(first), parent=str(target))
    result = fail_module(checkpoint_canary, _args(first, ranks=2, shape="file_per_rank", paths=[str(first), other]))
    assert result["msg"].startswith("paths must not name a directory twice") and str(first) in result["msg"]
    assert tree_checksums(str(tmp_path)) == before
