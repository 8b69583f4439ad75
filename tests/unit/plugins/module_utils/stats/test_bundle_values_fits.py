# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bundle_values._fits (the fast check of json.loads output) says yes only where check() passes."""

from __future__ import annotations

import json

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.stats import bundle_values as bv

SPECS = {"canary": bv.CANARY, "probe": bv.PROBE, "host": bv.HOST_SAMPLE, "numbers": bv.NUMBERS, "num": bv.NUM,
         "name": bv.NAME, "clock": bv.CLOCK, "any": bv.ANYTHING}
VALUES = [
    None, 1, 1.5, -3, True, "x", [], {}, float("nan"), float("inf"), 2.0 ** 64, -(2 ** 64), 2 ** 63,
    {"ranks": [{"rank": 0, "start": 1.0, "end": 2.0, "bytes": 8}], "clock": {"offset_seconds": 0.1}},
    {"ranks": [{"rank": "zero"}]}, {"ranks": "all"}, {"clock": 1.5}, {"clock": [1]}, {"clock": {"within_bound": 1}},
    {"host_samples": {"start": {"interfaces": {"lab0": {"statistics": {"rx_bytes": 1, "tx_bytes": None}}}}}},
    {"host_samples": {"start": {"interfaces": {"lab0": {"statistics": {"rx_bytes": True}}}}}},
    {"host_samples": {"start": {"interfaces": {"lab0": {"statistics": {"rx_bytes": float("inf")}}}}}},
    {"host_samples": {"start": {"net": {"route": 5}}}}, {"harness": {"deep": {"x": [float("nan")]}}},
    {"iperf3": {"intervals": [{"sum": {"bytes": 2 ** 70}}]}}, {"iperf3": json.loads("[" * 40 + "]" * 40)},
    {"summary": {"received_bits_per_second": "fast"}}, {"summary": {"error": 3}}, {"a": 1, "b": "c"},
    {"lab0": 1, "lab1": "2"}, {"lab0": 1, "lab1": 2.5}, ["a", 1], [[1, 2], {"x": None}],
]


def _passes(value, spec):
    try:
        bv.check(value, spec)
    except bv.BundleError:
        return False
    return True


@pytest.mark.parametrize("spec_name", sorted(SPECS))
@pytest.mark.parametrize("index", range(len(VALUES)))
def test_fits_agrees_with_check(spec_name, index):
    value = VALUES[index]
    assert bv._fits(value, SPECS[spec_name]) == _passes(value, SPECS[spec_name])
