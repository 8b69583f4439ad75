# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run's per-op totals are the sums of the loop that made them before issue 27's last step, float for float:
each op's figures added client by client, in the clients' order (floating-point addition is not associative, so
another order would change the last digits diagnosis.json shows)."""

from __future__ import annotations

import random

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import run

_NAMES = ("WRITE", "COMMIT", "GETATTR", "OPEN", "CLOSE", "ACCESS", "LOOKUP", "NULL", "READ", "SEQUENCE")


def _in_order(values, start):
    """values added one after the other, in the order given."""
    total = start
    for value in values:
        total += value
    return total


def _looped_total(ops):
    """The totals the diagnosis shows, each figure summed over ops in their order (the spec, written per figure)."""
    total = {"ops": _in_order([op["ops"] for op in ops], 0)}
    for key in ("rtt", "exe", "queue"):
        total["%s_ms" % key] = _in_order([op["avg_%s_ms" % key] * op["ops"] for op in ops], 0.0)
    for key in ("bytes_sent", "retrans", "timeouts"):
        total[key] = _in_order([op[key] for op in ops], 0)
    total["errors"] = _in_order([op["errors"] or 0 for op in ops], 0)
    for key in ("rtt", "exe", "queue"):
        total["avg_%s_ms" % key] = total["%s_ms" % key] / total["ops"] if total["ops"] else 0.0
    return total


def _clients(count, seed):
    rng = random.Random(seed)
    clients = []
    for _index in range(count):
        ops = {}
        for name in rng.sample(_NAMES, rng.randint(0, len(_NAMES))):
            # Magnitudes far apart, so that another order of the additions gives other floats.
            ops[name] = None if rng.random() < 0.05 else {
                "ops": rng.choice((0, 1, 3, 37, 10 ** 6)), "avg_rtt_ms": rng.choice((0.0, 1e-3, 1966.0811, 1e9)) * rng.random(),
                "avg_exe_ms": rng.random() * 10 ** rng.randint(-3, 9), "avg_queue_ms": rng.random() * 10 ** rng.randint(-3, 9),
                "bytes_sent": rng.randint(0, 2 ** 40), "retrans": rng.randint(0, 5), "timeouts": rng.randint(0, 2),
                "errors": rng.choice((None, 0, 4))}
        clients.append({"host": "c%d" % _index, "delta": {"ops": ops}})
    return clients


def _looped_op_totals(clients):
    order = []
    for client in clients:
        for name, op in client["delta"]["ops"].items():
            if op and name not in order:
                order.append(name)
    return dict((name, _looped_total([client["delta"]["ops"][name] for client in clients if client["delta"]["ops"].get(name)]))
                for name in order)


def test_op_totals_are_the_loops_sums_bit_for_bit_and_in_the_same_order():
    for seed in range(20):
        clients = _clients(300, seed)
        totals = run.op_totals(clients)
        expected = _looped_op_totals(clients)
        assert list(totals) == list(expected)
        assert totals == expected
        # Equal floats print the same: diagnosis.json's text does not move.
        assert repr(totals) == repr(expected)


def test_sum_op_over_several_ops_adds_client_by_client_then_op_by_op():
    for seed in range(20):
        clients = _clients(200, seed)
        names = ("GETATTR", "OPEN", "CLOSE", "ACCESS", "LOOKUP")
        expected = _looped_total([client["delta"]["ops"][name] for client in clients for name in names if client["delta"]["ops"].get(name)])
        assert repr(run.sum_op(clients, names)) == repr(expected)


def test_no_client_and_no_op_give_zero_totals():
    empty = _looped_total([])
    assert run.sum_op((), ()) == empty
    assert run.op_totals([]) == {}
    assert run.op_totals([{"delta": {"ops": {"WRITE": None, "READ": {}}}}]) == {}
