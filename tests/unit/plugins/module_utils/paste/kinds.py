"""Shared by the tests of the incident-text readers (issue 44): the real samples and the hostile inputs."""
from __future__ import annotations

import os
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "fixtures"))


def sample(kind, name):
    """A real sample kept under tests/fixtures/paste_kinds/<kind>/ (its .source.yml says where from)."""
    with open(os.path.join(FIXTURES, "paste_kinds", kind, name + ".txt")) as handle:
        return handle.read()


def corpus(entry):
    """tests/fixtures/paste_corpus/<entry>/paste.txt, reused by path."""
    with open(os.path.join(FIXTURES, "paste_corpus", entry, "paste.txt")) as handle:
        return handle.read()


def around(text):
    """The text inside what people paste around it: a prompt, a command, other output."""
    return "me@gpu017:~$ some command\nunrelated output 1 2 3\n" + text + "\nme@gpu017:~$ exit\n"


def hostile(figure_line):
    """The three hostile inputs: one 1 MB line, 60,000 blank lines, a 60,000-digit number where a figure goes."""
    return {"one_mb_line": "x" * (1 << 20) + "\n", "blank_lines": "\n" * 60000,
            "long_number": figure_line.replace("NUMBER", "9" * 60000)}


def timed(function, *args):
    """(result, seconds)."""
    start = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - start


def by_signal(findings, signal):
    return [item for item in findings if item["signal"] == signal]
