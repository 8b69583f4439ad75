"""The paste corpus's shape (issue 44): every entry is a verbatim paste.txt under 256 KiB with a source.yml naming its
thread, the thread's conclusion and a valid expected layer or fault; at least 60 entries. Not the score: that is
tests/bench/paste_corpus_score.py."""
from __future__ import annotations

import os

import yaml

CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "paste_corpus")
LAYERS_OR_FAULTS = {"network", "network_loss", "client_rpc_slots", "server_threads", "server_cpu", "server_storage",
                    "access_pattern", "metadata", "client_cpu", "fault_hang", "fault_bug", "misconfiguration",
                    "training_window", "unknown"}
KINDS = {"kernel_log", "statistics", "network", "disk", "config", "training_log", "other"}


def _entries():
    return sorted(name for name in os.listdir(CORPUS) if os.path.isdir(os.path.join(CORPUS, name)))


def test_entries_numbered_in_order():
    names = _entries()
    assert [name.split("_", 1)[0] for name in names] == ["%03d" % number for number in range(1, len(names) + 1)]


# Issue 44 asks for at least 60 entries (the second collection brought the corpus to 60).
def test_at_least_sixty_entries():
    assert len(_entries()) >= 60


def test_every_entry_has_a_small_paste_and_a_source_with_url_conclusion_and_a_valid_expected():
    for name in _entries():
        folder = os.path.join(CORPUS, name)
        paste = os.path.join(folder, "paste.txt")
        assert os.path.isfile(paste) and not os.path.islink(paste), name
        size = os.path.getsize(paste)
        assert 0 < size < 256 * 1024, name
        with open(paste, "rb") as handle:
            assert b"\r\n" not in handle.read(), name
        with open(os.path.join(folder, "source.yml"), encoding="utf-8") as handle:
            source = yaml.safe_load(handle)
        assert str(source.get("url", "")).startswith(("http://", "https://")), name
        assert source.get("conclusion"), name
        assert source.get("kind") in KINDS, name
        assert source.get("why_expected"), name
        assert source["expected"]["layer_or_fault"] in LAYERS_OR_FAULTS, name
        assert "fix" in source["expected"], name


def test_at_most_ten_entries_without_a_conclusion():
    unknown = []
    for name in _entries():
        with open(os.path.join(CORPUS, name, "source.yml"), encoding="utf-8") as handle:
            if yaml.safe_load(handle)["expected"]["layer_or_fault"] == "unknown":
                unknown.append(name)
    assert len(unknown) <= 10, unknown
