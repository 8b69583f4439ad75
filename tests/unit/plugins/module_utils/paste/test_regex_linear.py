"""A guard for every regular expression the paste modules apply to pasted text (issue 45): each module-level
compiled pattern of plugins/module_utils/paste/ (and of the kernel_text/ parsers a paste reaches) is timed on a family
of hostile strings built from its own literal characters and words. A pattern that backtracks (nested or adjacent
unbounded quantifiers over overlapping classes, `.*` then more `.*`, `^\\s*` under re.M that runs over blank lines)
takes seconds on 30,000 characters; a linear one takes about a millisecond.

Failed on 224965e for kernel_log._HUNG, kernel_log._RPC_TIMEOUT, mountstats_report._STATS_FOR, the _FIGURES
counts, _REQUESTS and recognise._MOUNT_LINE_LABELS. Measured after the fix on this 2-core machine (shared, 2026-12):
the whole family of every pattern takes about 3 s, the slowest single string about 10 ms.
"""
from __future__ import annotations

import importlib
import pkgutil
import re
import time

import pytest

try:  # Python 3.11+
    from re import _constants as sre_constants, _parser as sre_parse
except ImportError:  # pragma: no cover - Python before 3.11
    import sre_constants  # pylint: disable=deprecated-module
    import sre_parse  # pylint: disable=deprecated-module

from ansible_collections.ckptio.nfs.plugins.module_utils import paste

# The kernel_text/ and config/ modules whose patterns a paste's text reaches (recognise, readings, saved_files).
REACHED = ("ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.mountstats",
           "ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.nfsd_stats",
           "ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text.kernels",
           "ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo")
LENGTH = 30000
# A linear pattern searches 30,000 characters in about 1 ms here; a quadratic one in seconds.
LIMIT_SECONDS = 0.25
# Characters each class stands for in a hostile string.
_CATEGORY_CHARS = {
    sre_constants.CATEGORY_DIGIT: "10", sre_constants.CATEGORY_NOT_DIGIT: "a:",
    sre_constants.CATEGORY_SPACE: " \t\n", sre_constants.CATEGORY_NOT_SPACE: "a1:",
    sre_constants.CATEGORY_WORD: "a_1", sre_constants.CATEGORY_NOT_WORD: " :",
    sre_constants.CATEGORY_LINEBREAK: "\n", sre_constants.CATEGORY_NOT_LINEBREAK: "a ",
}


def _module_patterns():
    names = [info.name for info in pkgutil.iter_modules(paste.__path__)]
    modules = ["%s.%s" % (paste.__name__, name) for name in names] + list(REACHED)
    found = []
    for module_name in modules:
        module = importlib.import_module(module_name)
        for attribute, value in sorted(vars(module).items()):
            for index, pattern in enumerate(_patterns_in(value)):
                found.append(("%s.%s[%d]" % (module_name.rsplit(".", 1)[1], attribute, index), pattern))
    return found


def _patterns_in(value, depth=0):
    """The compiled patterns in a module attribute: itself, or inside its tuples, lists and dicts (two levels)."""
    if isinstance(value, re.Pattern):
        return [value]
    if depth >= 2:
        return []
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return [pattern for item in value for pattern in _patterns_in(item, depth + 1)]
    return []


def _literals(pattern):
    """(the characters the pattern names, the literal words it holds)."""
    chars, words = set(), set()
    _walk(sre_parse.parse(pattern.pattern, pattern.flags), chars, words)
    return sorted(chars), sorted(word for word in words if len(word) > 1)


def _walk(tokens, chars, words):
    run = []
    for op, arg in tokens:
        if op == sre_constants.LITERAL:
            run.append(chr(arg))
            chars.add(chr(arg))
            continue
        if run:
            words.add("".join(run))
            run = []
        _walk_one(op, arg, chars, words)
    if run:
        words.add("".join(run))


def _walk_one(op, arg, chars, words):
    if op == sre_constants.IN:
        for item_op, item in arg:
            if item_op == sre_constants.LITERAL:
                chars.add(chr(item))
            elif item_op == sre_constants.RANGE:
                chars.update((chr(item[0]), chr(item[1])))
            elif item_op == sre_constants.CATEGORY:
                chars.update(_CATEGORY_CHARS.get(item, ""))
    elif op in (sre_constants.ANY, sre_constants.NOT_LITERAL):
        chars.add("x")
    elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, getattr(sre_constants, "POSSESSIVE_REPEAT", None)):
        _walk(arg[2], chars, words)
    elif op == sre_constants.SUBPATTERN:
        _walk(arg[-1], chars, words)
    elif op == sre_constants.BRANCH:
        for branch in arg[1]:
            _walk(branch, chars, words)
    elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT, getattr(sre_constants, "ATOMIC_GROUP", None)):
        _walk(arg[1] if isinstance(arg, tuple) else arg, chars, words)


def hostile_strings(pattern):
    """{label: text} of about LENGTH characters each, from the pattern's own characters and words."""
    chars, words = _literals(pattern)
    family = {"all-chars": ("".join(chars) * LENGTH)[:LENGTH]}
    for char in chars:
        family["run %r" % char] = char * LENGTH
    for word in words:
        family["repeat %r" % word] = word * (LENGTH // len(word))
        for char in chars:
            family["repeat %r" % (word + char)] = (word + char) * (LENGTH // (len(word) + 1))
            family["%r then run %r" % (word, char)] = word + char * LENGTH
    return family


PATTERNS = _module_patterns()


def test_the_guard_sees_the_patterns_of_every_paste_parser():
    seen = set(name.split(".")[0] for name, _pattern in PATTERNS)
    assert seen >= {"kernel_log", "mountstats_report", "nfsiostat", "nfsstat_mounts", "recognise", "mountstats"}
    assert len(PATTERNS) >= 30


@pytest.mark.parametrize("name,pattern", PATTERNS, ids=[name for name, _pattern in PATTERNS])
def test_every_paste_pattern_runs_in_linear_time_on_its_own_hostile_strings(name, pattern):
    slow = []
    for label, text in hostile_strings(pattern).items():
        started = time.perf_counter()
        pattern.search(text)
        elapsed = time.perf_counter() - started
        if elapsed > LIMIT_SECONDS:
            slow.append("%s: %.2f s" % (label, elapsed))
            break
    assert not slow, "%s /%s/ backtracks: %s" % (name, pattern.pattern, "; ".join(slow))
