# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""markdown._host_match: the first folded host named as a word, where the word-by-word regex finds it."""

from __future__ import annotations

import re

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import markdown

HOSTS = {"c1", "c10", "nfs1", "node-7.lab"}


def _reference(text, hosts):
    for match in re.finditer(r"[\w.-]+", text or ""):
        if match.group(0) in hosts:
            return match.group(0), match.start(), match.end()
    return None


@pytest.mark.parametrize("text", [
    "CPU busy during the checkpoint on c10",
    "NFS link traffic / TCP capacity of the path on client c1 (probe)",
    "xc1 then c1; c10",            # a host inside an earlier word is no match there
    "c1c1 c1",
    "busiest disk on nfs1 (vda) with I/O in flight",
    "node-7.lab: D-state samples",
    "(node-7.lab)",
    "no host here",
    "",
    None,
])
def test_host_match_finds_what_the_word_regex_finds(text):
    assert markdown._host_match(text, HOSTS) == _reference(text, HOSTS)
