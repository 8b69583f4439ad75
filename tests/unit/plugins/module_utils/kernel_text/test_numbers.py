"""The one rule for a number read from outside (kernel_text/numbers.py)."""
from __future__ import annotations

import re

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.numbers import (
    KERNEL_COUNTER_MAX,
    NotAKernelValue,
    has_long_digit_run,
    is_kernel_number,
    kernel_number,
)


@pytest.mark.parametrize("value, expected", [
    ("0", 0), ("18446744073709551615", KERNEL_COUNTER_MAX), (" 12 ", 12), ("0.512", 0.512), (3, 3), (2.5, 2.5),
])
def test_a_kernel_number_is_taken(value, expected):
    assert kernel_number(value, "x") == expected


@pytest.mark.parametrize("value, why", [
    ("9" * 400, "above 2^64"), ("18446744073709551616", "above 2^64"), (2 ** 64, "above 2^64"), ("1e400", "not a finite"),
    ("nan", "not a finite"), ("-inf", "not a finite"), (float("nan"), "not a finite"), ("-0.5", "below 0"), (-1, "below 0"),
    ("abc", "not a number"), (True, "not a number"), (None, "not a number"), ("1" + "0" * 5000, "above 2^64"),
])
def test_what_no_kernel_prints_is_refused_naming_where(value, why):
    with pytest.raises(NotAKernelValue, match="^nfsiostat row 3 rtt is .*%s" % re.escape(why)):
        kernel_number(value, "nfsiostat row 3 rtt")
    assert not is_kernel_number(value)


def test_integer_refuses_a_fraction():
    with pytest.raises(NotAKernelValue, match="not an integer"):
        kernel_number("1.5", "ops", integer=True)
    assert kernel_number("7", "ops", integer=True) == 7


@pytest.mark.parametrize("text, expected", [
    ("WRITE: 1 2 3 18446744073709551615", True), ("WRITE: 1 2 3 1844674407370955161", False), ("a 1_2_3_4_5_6_7_8_9_0_1 b", True),
    ("caf\xe9 " + "\u0663" * 20, True), ("caf\xe9 " + "1" * 19, False), ("", False),
])
def test_a_long_run_of_digits_is_found(text, expected):
    assert has_long_digit_run(text) is expected
