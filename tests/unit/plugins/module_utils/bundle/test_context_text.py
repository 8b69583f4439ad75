"""context.yml's one renderer (bundle/bundle_part.context_text): the roles' to_nice_yaml bytes, everywhere.

Before issue 46 context.yml was rendered three ways: to_nice_yaml(indent=2, sort_keys=false) in
roles/canary_validation and roles/checkpoint_capture, yaml.safe_dump(width=1000, ASCII) in
saved_stats_bundle. Now ckptio.nfs.bundle_part and saved_stats_bundle call the one renderer, which
gives the roles' bytes.
"""
from __future__ import annotations

import glob
import os

import pytest
import yaml

from ansible.plugins.filter.core import to_nice_yaml

from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle_part
from ansible_collections.ckptio.nfs.plugins.module_utils.paste import saved_files

FIXTURES = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures"))
CONTEXTS = sorted(glob.glob(os.path.join(FIXTURES, "**", "context.yml"), recursive=True))
# A context with what folds and what escapes: a long message, text beyond ASCII, floats, nulls, empty maps.
SAMPLE = {"label": "r\u00e9sum\u00e9 run", "mount_point": "/mnt/nfs",
          "target": {"checkpoint_bytes": 2400000000000, "window_seconds": 300.0},
          "canary": {"spread_message": "ranks started within 0.016 s of each other (the hosts' clocks known to +/- 0.434 s),"
                                       " within the 1.0 s bound", "start_at": None, "skipped": {}, "ranks": [1, 2]}}


def test_the_fixtures_hold_contexts():
    assert len(CONTEXTS) >= 20


@pytest.mark.parametrize("path", CONTEXTS, ids=lambda path: os.path.relpath(path, FIXTURES))
def test_each_fixture_context_renders_as_to_nice_yaml_rendered_it(path):
    with open(path, encoding="utf-8") as handle:
        context = yaml.safe_load(handle)
    assert bundle_part.context_text(context) == to_nice_yaml(context, indent=2, sort_keys=False)


def test_long_lines_fold_and_text_stays_utf8_as_the_roles_wrote_it():
    text = bundle_part.context_text(SAMPLE)
    assert text == to_nice_yaml(SAMPLE, indent=2, sort_keys=False)
    # yaml folds at the first space past 80 columns (the fixtures hold lines of 82-91)
    assert "r\u00e9sum\u00e9" in text and max(len(line) for line in text.splitlines()) < 100 and "\n    to +/- 0.434" in text
    assert list(yaml.safe_load(text)) == list(SAMPLE) and yaml.safe_load(text) == SAMPLE


def test_saved_stats_bundle_writes_context_yml_with_the_same_renderer():
    assert saved_files.context_text(SAMPLE) == bundle_part.context_text(SAMPLE)


def test_the_context_part_is_context_yml():
    assert bundle_part.context_part({"label": "x"}) == [{"name": "context.yml", "content": "label: x\n"}]


class _TaggedStr(str):
    """Stands for ansible-core 2.19's templated str (a subclass yaml's SafeDumper refuses)."""


class _TaggedFloat(float):
    """Stands for a templated `... | float`."""


def test_templated_values_from_ansible_render_as_plain_ones():
    # molecule-fanout: context.yml failed with "cannot represent an object" on the role's `| float` window.
    from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle_part

    tagged = {_TaggedStr("mount_point"): _TaggedStr("/var/tmp/ckptio-fanout"),
              "target": {"checkpoint_bytes": 268435456, "window_seconds": _TaggedFloat(300.0)},
              "canary": {"synchronized": True, "clients": [_TaggedStr("c1"), _TaggedStr("c2")]}}
    plain = {"mount_point": "/var/tmp/ckptio-fanout", "target": {"checkpoint_bytes": 268435456, "window_seconds": 300.0},
             "canary": {"synchronized": True, "clients": ["c1", "c2"]}}
    assert bundle_part.context_text(tagged) == bundle_part.context_text(plain)
    assert "window_seconds: 300.0" in bundle_part.context_text(tagged)
