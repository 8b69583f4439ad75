# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""json_safe_text: the diagnosis's text and value made safe in one step, as json_safe would."""

from __future__ import annotations

import json

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.host.proc_text import json_safe, json_safe_text


def _dumps(value):
    return json.dumps(value, sort_keys=True)


@pytest.mark.parametrize("value", [
    {"mount_point": "/data/caf\udce9", "hosts": ["c1", "c\udcff2"]},
    {"/data/caf\udce9": {"evidence": [{"explanation": "no byte"}]}},
    {"emoji": "\U0001f4a9 and caf\udce9"},
], ids=["value", "key", "pair-and-lone"])
def test_a_lone_surrogate_is_shown_as_json_safe_shows_it(value):
    safe, text = json_safe_text(value, _dumps)
    assert safe == json_safe(value)
    assert text == _dumps(json_safe(value))
    text.encode("utf-8")


def test_a_value_without_undecodable_bytes_is_returned_as_it_is():
    value = {"mount_point": "/mnt/nfs", "note": "caf\u00e9 \u2264 10 s", "rows": [{"a": 1.5, "b": None, "c": True}]}
    safe, text = json_safe_text(value, _dumps)
    assert safe is value
    assert text == _dumps(json_safe(value))


def test_a_character_above_the_bmp_takes_the_slow_path_and_keeps_its_text():
    value = {"note": "\U0001f4a9"}
    safe, text = json_safe_text(value, _dumps)
    assert safe == value and text == _dumps(value)
