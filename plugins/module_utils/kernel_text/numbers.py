# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one rule for a number read from outside (a /proc file, a paste, a saved capture).

A value the kernel printed is finite, not negative, and fits the counter that holds it: every
counter of mountstats, /proc/net/rpc/nfsd, pool_stats, /proc/stat and diskstats is an unsigned
long or u64 printed with %lu / %llu (net/sunrpc/stats.c rpc_print_iostats, fs/nfs/super.c
nfs_show_stats, fs/proc/stat.c), so nothing above 2^64 - 1 is a kernel value: a 400-digit "counter"
is a forged or corrupt file, and float() of it raises OverflowError. Such a value is refused here,
naming where it was read, never passed on. Pure: text and numbers in, numbers out.

kernel_number() is the helper for any parser of such a value (the paste readers of nfsiostat
rows call it for RTT and execute times: a negative time is no reading either).
"""

from __future__ import annotations

import math
import re

# The largest value of a u64 (include/linux/limits.h U64_MAX).
KERNEL_COUNTER_MAX = 2 ** 64 - 1
# Digits of KERNEL_COUNTER_MAX: a longer run of digits is above it without converting it (int() of a
# long literal costs quadratic time).
KERNEL_COUNTER_DIGITS = len(str(KERNEL_COUNTER_MAX))
# A run of digits as long as the largest counter or longer: the only ones that may be out of range
# (int() takes underscores between digits: "1_000" is 1000).
LONG_DIGIT_RUN = re.compile(r"[\d_]{%d,}" % KERNEL_COUNTER_DIGITS)


class NotAKernelValue(ValueError):
    """A number read from outside that no kernel prints; the message names where it was read."""


def shown(text, width=24):
    """A long value shown by its start and its length: a 400-digit number must not fill a message."""
    text = str(text)
    return text if len(text) <= width else "%s... (%d characters)" % (text[:width], len(text))


def kernel_number(value, where, integer=False):
    """value (a number, or the text of one) as an int or a float when it is a number the kernel may
    print: finite, at least 0, at most KERNEL_COUNTER_MAX. Else NotAKernelValue naming `where`.

    integer: only an integer is taken (a counter); else a decimal fraction too (a time in ms).
    Booleans are no numbers (True is 1 to Python).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise NotAKernelValue("%s is %s: not a number" % (where, shown(repr(value))))
    number = value
    if isinstance(value, str):
        text = value.strip()
        digits = text.lstrip("+-").split(".")[0]
        if len(digits) > KERNEL_COUNTER_DIGITS:
            raise NotAKernelValue("%s is %s: above 2^64, not a kernel value" % (where, shown(text)))
        try:
            number = int(text)
        except ValueError:
            if integer:
                raise NotAKernelValue("%s is %s: not an integer" % (where, shown(text)))
            try:
                number = float(text)
            except ValueError:
                raise NotAKernelValue("%s is %s: not a number" % (where, shown(text)))
    elif integer and isinstance(value, float) and not value.is_integer():
        raise NotAKernelValue("%s is %r: not an integer" % (where, value))
    return _in_range(number, where)


def _in_range(number, where):
    if isinstance(number, float) and not math.isfinite(number):
        raise NotAKernelValue("%s is %r: not a finite number" % (where, number))
    if number < 0:
        raise NotAKernelValue("%s is %s: below 0, not a kernel value" % (where, shown(number)))
    if number > KERNEL_COUNTER_MAX:
        raise NotAKernelValue("%s is %s: above 2^64, not a kernel value" % (where, shown(number)))
    return number


def is_kernel_number(value):
    """True when kernel_number() takes value (a number, or the text of one)."""
    try:
        kernel_number(value, "")
    except NotAKernelValue:
        return False
    return True


def has_long_digit_run(text):
    """True when text holds a run of digits (or of digits and the underscores int() takes) as long as
    KERNEL_COUNTER_MAX or longer, so a parser asks it of every block it reads and looks at the words
    of a line only when it is true.

    ASCII text (what the kernel prints) is mapped to "0" and " " by bytes.translate and searched for
    20 zeros, in C: 8 us for a 3.4 kB mount block, where the regular expression takes 100 us (it tries
    every position of every number; measured on the per-rank bundle's mountstats, 2,000 runs).
    """
    if text.isascii():
        return _LONG_RUN_OF_ZEROS in text.encode("ascii").translate(_DIGITS_TO_ZEROS)
    # int() takes every Unicode decimal digit, which the byte table does not know.
    return LONG_DIGIT_RUN.search(text) is not None


_DIGITS_TO_ZEROS = bytes(ord("0") if chr(code) in "0123456789_" else ord(" ") for code in range(256))
_LONG_RUN_OF_ZEROS = b"0" * KERNEL_COUNTER_DIGITS


def above_kernel_counter(word):
    """True when int(word) is a number above KERNEL_COUNTER_MAX (a word int() refuses is junk, not this)."""
    try:
        return int(word) > KERNEL_COUNTER_MAX
    except ValueError:
        return False
