"""What layout.clean promises (issue 45): a repair changes only what it names."""
from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import layout, readings
from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.paste import layouts


def test_the_crlf_repair_removes_only_the_cr_and_keeps_the_kernels_trailing_spaces():
    """mountstats' events: and bytes: lines end in a space (the kernel prints "%lu " per counter): a CRLF copy
    comes back byte for byte as the kernel printed it. Failed on 224965e: every trailing space was stripped."""
    text = layouts.read("bookworm/mountstats_during1.txt")
    assert any(line.endswith(" ") for line in text.split("\n"))
    cleaned = layout.clean(layouts.crlf(text))
    assert cleaned.repairs == ["CR/CRLF line ends"]
    # The blank line the capture ends with goes, as from every repaired paste; every other byte is the kernel's.
    assert text.endswith("\n\n") and cleaned.text == text[:-1]


def test_an_indented_paste_keeps_its_trailing_spaces_too():
    text = layouts.read("bookworm/mountstats_during1.txt")
    cleaned = layout.clean(layouts.indented(text))
    assert cleaned.text == text[:-1] and cleaned.repairs == ["every line indented by '    '"]


def test_a_line_over_the_cap_is_cut_and_the_repair_counts_it():
    text = "[ 1.000000] nfs: server srv not responding, still trying\n" + "x" * 5000 + "\n" + "y" * 4097 + "\r\n"
    cleaned = layout.clean(text)
    assert "2 lines longer than 4096 characters cut to 4096" in cleaned.repairs
    assert [len(line) for line in cleaned.text.split("\n")] == [len(text.split("\n", maxsplit=1)[0]), 4096, 4096, 0]
    # A line of exactly the cap is no repair.
    assert layout.clean("z" * 4096 + "\n") == layout.Cleaned("z" * 4096 + "\n", [])
    assert "1 line longer than 4096 characters cut to 4096" in readings.read_file("f", "a" * 4097 + "\n")["repairs"]
