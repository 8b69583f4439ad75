"""The one escaping of a value from outside that lands in Markdown (stats/markdown_text.py)."""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.stats import markdown_text


@pytest.mark.parametrize("value, expected", [
    ("x\n## injected\n| a | b |", "x ## injected \\| a \\| b \\|"),
    ("## heading", "\\## heading"), ("  > quote", "  \\> quote"), ("a\r\nb\u2028c\x0bd", "a b c d"),
    ("`code` <script>&amp;", "\\`code\\` &lt;script>&amp;amp;"), ("a\\|b", "a\\\\\\|b"), (None, ""), (12, "12"),
    ("plain words, 1.2 GiB/s (ours)", "plain words, 1.2 GiB/s (ours)"),
])
def test_escape_makes_one_line_of_literal_text(value, expected):
    assert markdown_text.escape(value) == expected


def test_escaped_reaches_every_string_keys_too_and_keeps_numbers():
    value = {"a\n#b": ["|", 1, 2.5, None, True, {"k": ("`",)}]}
    assert markdown_text.escaped(value) == {"a #b": ["\\|", 1, 2.5, None, True, {"k": ["\\`"]}]}
