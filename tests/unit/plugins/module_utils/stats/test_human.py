"""Human figures: units a person reads, no exponent, no None, at most 4 significant digits."""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human


@pytest.mark.parametrize("value, text", [
    (8e9, "8 GB/s"), (1.1e9, "1.1 GB/s"), (458e6, "458 MB/s"), (1234.5e6, "1.23 GB/s"),
    (5.52e6, "5.52 MB/s"), (0, "0 B/s"), (None, "not measured"), (float("nan"), "not measured"),
    (25e9, "25 GB/s"), (999.9e6, "1,000 MB/s")])
def test_rate(value, text):
    assert human.rate(value) == text


@pytest.mark.parametrize("value, text", [
    (2.4e12, "2.4 TB"), (268435456, "268 MB"), (67108864, "67.1 MB"), (None, "not measured")])
def test_size(value, text):
    assert human.size(value) == text


@pytest.mark.parametrize("value, text", [
    (0.044, "4.4 %"), (0.0871, "8.7 %"), (1.0, "100 %"), (0.00012, "0.012 %"), (None, "not measured")])
def test_share(value, text):
    assert human.share(value) == text


@pytest.mark.parametrize("value, text", [
    (7.27, "7.3x"), (3.0, "3x"), (76055.53, "76,000x"), (1.3631147221319468, "1.4x")])
def test_factor(value, text):
    assert human.factor(value) == text


@pytest.mark.parametrize("value, text", [
    (300, "300 s"), (0.0123, "12.3 ms"), (5400, "1 h 30 min"), (49.232, "49.2 s"), (1234567, "342 h 56 min"), (0, "0 s")])
def test_seconds(value, text):
    assert human.seconds(value) == text


@pytest.mark.parametrize("value, text", [
    (1234567, "1,234,567"), (1234567.0, "1,230,000"), (0.0123456, "0.0123"), (12345.678, "12,300"), (-2.5, "-2.5"), (True, "not measured")])
def test_number(value, text):
    assert human.number(value) == text


def test_never_an_exponent_or_more_than_four_digits():
    for exponent in range(-6, 14):
        for mantissa in (1.0, 1.23456789, 9.99999):
            text = human.rate(mantissa * 10 ** exponent)
            assert "e" not in text.split()[0].lower()
            digits = [c for c in text.split()[0] if c.isdigit()]
            assert len("".join(digits).lstrip("0")) <= 4, text
