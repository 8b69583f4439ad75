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


def test_folded_hosts_keep_each_match_and_are_shared_by_the_passes_over_one_diagnosis():
    diagnosis = {"clients": dict(("c%d" % index, {}) for index in range(20)), "servers": {"nfs1": {}}, "excluded_clients": []}
    hosts = markdown._folded_hosts(diagnosis)
    assert hosts == set(diagnosis["clients"])
    assert markdown._folded_hosts(dict(diagnosis)) is hosts
    for text in ("D-state samples on c10", "xc1 then c1; c10", "no host here", "", None):
        assert hosts.match(text) == hosts.match(text) == markdown._host_match(text, set(hosts))
    other = markdown._folded_hosts(dict(diagnosis, clients=dict(diagnosis["clients"], c99={})))
    assert other is not hosts and other.match("CPU busy on c99") == ("c99", 12, 15)
