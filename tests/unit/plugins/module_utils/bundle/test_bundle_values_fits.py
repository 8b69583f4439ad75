# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bundle_values._fits (the fast check of json.loads output) says yes only where check() passes."""

from __future__ import annotations

import json

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle_values as bv

SPECS = {"canary": bv.CANARY, "probe": bv.PROBE, "host": bv.HOST_SAMPLE, "numbers": bv.NUMBERS, "num": bv.NUM,
         "name": bv.NAME, "clock": bv.CLOCK, "any": bv.ANYTHING, "figures": bv.FIGURES, "op": bv.FIGURES_OP,
         "strings": bv.STRINGS, "number list": bv.list_of(bv.NUM), "string map": bv.mapping_of(bv.STR)}
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
    # Containers of numbers only or strings only, which _fits checks in C: a NaN, an infinity or a long integer
    # after the first value, a bool among numbers, a None among them, a key that takes no number or no string.
    {"a": 1, "b": float("nan")}, {"a": 1.0, "b": float("-inf")}, {"a": 1, "b": 2 ** 64}, {"a": 1, "b": True},
    {"a": 1, "b": None, "c": 2.5}, {"a": None}, [1, float("nan"), 2], [1, None, -(2 ** 70)], [1, True], [0.5, None, 3],
    ["a", None, "b"], {"a": "x", "b": None}, {"msg": 5}, {"msg": "x", "workdir": "y"}, {"ranks": 1, "start_at": 2},
    {"ops": 1, "avg_rtt_ms": float("nan")}, {"ops": 1, "avg_rtt_ms": 2.5, "errors": None}, {"ops": "1"},
    {"ranks": [{"rank": 0, "start": 1.0, "end": float("nan")}]}, {"ranks": [{"rank": 0, "error": None, "pid": 2 ** 64}]},
    {"format": 1, "mount_point": "/mnt", "sources": {"a.txt": "ff"}, "row": {"view": {"sunrpc": {"x": 1}}}},
    {"format": 1, "row": {"view": {"delta": {"ops": {"WRITE": {"ops": 3, "avg_rtt_ms": float("inf")}}}}}},
    {"format": 1, "row": {"view": {"delta": {"rpc": {"max_slots": [128, "x"]}}}}},
    {"format": 1, "row": {"evidence": {"links": [{"tx_bytes": 1, "rx_bytes": 2, "speed_mbps": None}]}}},
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
