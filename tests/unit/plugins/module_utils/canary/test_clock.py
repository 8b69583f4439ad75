"""Clock offsets from bracketed readings, and times moved between clocks."""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import clock


def test_the_tightest_bracket_wins_and_gives_offset_and_error():
    # The lab's nfs2 ran 1.27 s behind the host; the second reading has the shortest round trip.
    brackets = [(100.0, 98.80, 100.2), (200.0, 198.731, 200.002), (300.0, 298.75, 300.1)]
    result = clock.best_offset(brackets)
    assert result["offset_seconds"] == pytest.approx(-1.27, abs=1e-6)
    assert result["uncertainty_seconds"] == pytest.approx(0.001, abs=1e-9)
    assert result["samples"] == 3
    assert result["within_bound"] is False
    assert "behind" in result["message"] and "chrony" in result["message"]


def test_a_clock_within_the_bound_even_at_its_error_is_within():
    result = clock.best_offset([(10.0, 10.021, 10.01)])
    assert result["offset_seconds"] == pytest.approx(0.016)
    assert result["within_bound"] is True
    assert "ahead of" in result["message"]


def test_a_bracket_too_wide_to_tell_is_neither():
    # Offset 0.05 s, error 0.1 s: the true offset may be anywhere in [-0.05, 0.15].
    result = clock.best_offset([(10.0, 10.15, 10.2)])
    assert result["within_bound"] is None
    assert "too long to tell" in result["message"]


@pytest.mark.parametrize("brackets", [[], [(10.0, 10.0, 9.9)]])
def test_no_readings_or_a_clock_going_back_is_refused(brackets):
    with pytest.raises(ValueError):
        clock.best_offset(brackets)


@pytest.mark.parametrize("text, expected", [
    ("1764580000.123456789\n", 1764580000.123456789),
    ("1764580000.5", 1764580000.5),
    ("1764580000.N\n", None),   # busybox date has no %N
    ("", None), ("nan", None), ("inf", None), ("-5", None), ("1 2", None),
])
def test_parse_host_time(text, expected):
    assert clock.parse_host_time(text) == expected


def test_times_move_between_the_clocks_and_back():
    offset = -1.27
    assert clock.to_controller_time(98.73, offset) == pytest.approx(100.0)
    assert clock.to_host_time(100.0, offset) == pytest.approx(98.73)
    assert clock.to_controller_time(None, offset) is None
    assert clock.to_host_time(5.0, None) == 5.0


def test_two_hosts_corrected_clocks_may_differ_by_their_two_largest_uncertainties():
    assert clock.pair_uncertainty([0.2, None, 0.05, 0.3]) == pytest.approx(0.5)
    # One host's ranks share one clock; unmeasured hosts add nothing they could be measured by.
    assert clock.pair_uncertainty([0.3]) == 0.0
    assert clock.pair_uncertainty([None, None]) == 0.0
    assert clock.uncertainty_of({"offset_seconds": 1.0, "uncertainty_seconds": 0.25}) == 0.25
    assert clock.uncertainty_of(1.0) is None and clock.uncertainty_of(None) is None
