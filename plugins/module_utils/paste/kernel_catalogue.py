# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Find the catalogued NFS kernel messages and hung-task stack frames in any pasted text (issue 44). Pure.

The catalogue (kernel_messages*.py) is generated from the kernel's own printk formats by
scripts/kernel-messages.py; docs/kernel-messages.md says how. Reading is linear in the text:
- no regular expression touches the text: a line is cut into words with str.translate/split, each
  word looked up in a dict from an anchor word to the entries that contain it (each entry's rarest
  whole word), and an entry is verified piece by piece with str.find from left to right, trying at
  most MAX_STARTS places a line where its first literal occurs;
- a line is read up to MAX_LINE characters and the text up to MAX_TEXT characters; `truncated` says
  when the text was cut.
So a line costs at most (entries sharing one of its words) x MAX_STARTS x (pieces) x MAX_LINE, a
constant, whatever the text holds.
"""

from __future__ import annotations

import collections

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import kernel_messages
from ansible_collections.ckptio.nfs.plugins.module_utils.paste.kernel_frames import frame_meaning

MAX_LINE = 4096
MAX_TEXT = 8 * 1024 * 1024
MAX_STARTS = 8
MAX_TRIES = 16
# A hole at the start of a format is a word the kernel printed before the first literal ("nfs" in
# "%s: server %s OK"): read back at most this far.
MAX_LEADING = 256
MAX_FRAMES = 64

Message = collections.namedtuple("Message", "format pieces level sites layer_or_fault meaning fix hand")
Hit = collections.namedtuple("Hit", "line message args text")
Found = collections.namedtuple("Found", "hits truncated")
Frame = collections.namedtuple("Frame", "line name module unsure meaning layer_or_fault")
HungTask = collections.namedtuple("HungTask", "line task pid seconds frames waits_on")

MESSAGES = tuple(Message(*entry) for entry in kernel_messages.ENTRIES)
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_TO_SPACE = str.maketrans({chr(c): " " for c in range(128) if chr(c) not in _WORD_CHARS})
_DIGITS = frozenset("0123456789")
_HEX = frozenset("0123456789abcdefABCDEF")


def _whole_words(pieces):
    """Words of the literal pieces that a printed line shows whole (none glued to a hole's text)."""
    words = set()
    for index in range(0, len(pieces), 2):
        literal = pieces[index]
        split = literal.translate(_TO_SPACE).split()
        if split and index > 0 and literal[0] in _WORD_CHARS:
            split = split[1:]
        if split and index < len(pieces) - 1 and literal[-1] in _WORD_CHARS:
            split = split[:-1]
        words.update(word for word in split if len(word) >= 3)
    return words


def _anchor_index(messages):
    """{word: (message index, ...)}: each message under its rarest whole word (the longest among equals)."""
    words = [_whole_words(message.pieces) for message in messages]
    frequency = collections.Counter(word for found in words for word in found)
    index = {}
    for number, found in enumerate(words):
        anchor = min(found, key=lambda word: (frequency[word], -len(word), word))
        index.setdefault(anchor, []).append(number)
    return {word: tuple(numbers) for word, numbers in index.items()}


_ANCHORS = _anchor_index(MESSAGES)
_ANCHOR_WORDS = frozenset(_ANCHORS)
_TO_SPACE_KEEP_LINES = str.maketrans({chr(c): " " for c in range(128) if chr(c) not in _WORD_CHARS and chr(c) != "\n"})


def _shape(hole, text, trailing):
    """The hole's text if it has the hole's shape (a trailing hole keeps its leading number only), else None."""
    if hole == "%s":
        text = text.strip() if trailing else text
        return text if text or not trailing else None
    text = text.strip()
    if trailing:
        end = 0
        allowed = _DIGITS if hole == "%d" else _HEX
        start = 1 if hole == "%d" and text[:1] == "-" else 2 if hole == "%x" and text[:2] in ("0x", "0X") else 0
        end = start
        while end < len(text) and end < 40 and text[end] in allowed:
            end += 1
        return text[:end] if end > start else None
    body = text[1:] if hole == "%d" and text[:1] == "-" else text[2:] if hole == "%x" and text[:2] in ("0x", "0X") else text
    allowed = _DIGITS if hole == "%d" else _HEX
    return text if body and len(body) <= 40 and all(char in allowed for char in body) else None


def _verify_at(pieces, line, start):
    """The holes' texts if the message's pieces follow one another from `start` on, else None.

    A "%s" hole takes the shortest text first and a longer one (the next place of the literal after
    it) only when what follows does not fit: "got error -32" in "%s %d when sending" is tried as
    "got", then as "got error". The tries are capped (MAX_TRIES a place), so this stays linear."""
    budget = [MAX_TRIES]
    return _follow(pieces, 1, line, start + len(pieces[0]), budget)


def _follow(pieces, index, line, pos, budget):
    if index >= len(pieces):
        return []
    hole, literal = pieces[index], pieces[index + 1]
    if not literal and index + 1 == len(pieces) - 1:
        value = _shape(hole, line[pos:], trailing=True)
        return None if value is None else [value]
    found = line.find(literal, pos)
    while found >= 0 and budget[0] > 0:
        budget[0] -= 1
        value = _shape(hole, line[pos:found], trailing=False)
        if value is not None:
            rest = _follow(pieces, index + 2, line, found + len(literal), budget)
            if rest is not None:
                return [value] + rest
        if hole != "%s":
            return None
        found = line.find(literal, found + 1)
    return None


def _leading(hole, line, end):
    """The text of a hole that opens the format: the word just before `end` (a number for %d/%x)."""
    start = end
    while start > 0 and end - start < MAX_LEADING and not line[start - 1].isspace():
        start -= 1
    value = _shape(hole, line[start:end], trailing=False)
    return value if value else None


def _match(message, line):
    """The args of the message's first verified place in the line, or None."""
    pieces = message.pieces
    opens_with_hole = not pieces[0]
    first = pieces[2] if opens_with_hole else pieces[0]
    pos = 0
    for _attempt in range(MAX_STARTS):
        found = line.find(first, pos)
        if found < 0:
            return None
        pos = found + 1
        if opens_with_hole:
            lead = _leading(pieces[1], line, found)
            rest = _verify_at(pieces[2:], line, found) if lead is not None else None
            if rest is not None:
                return [lead] + rest
        else:
            args = _verify_at(pieces, line, found)
            if args is not None:
                return args
    return None


def _lines(text):
    """(line number, line cut to MAX_LINE) of the text cut to MAX_TEXT, and whether it was cut."""
    truncated = len(text) > MAX_TEXT
    body = text[:MAX_TEXT] if truncated else text
    return ((number, line[:MAX_LINE].rstrip("\r")) for number, line in enumerate(body.split("\n"), 1)), truncated


def find_messages(text):
    """Found(hits, truncated): every catalogued message in the text, a Hit(line, message, args, text) each.

    A line may hold more than one (a short format inside a longer one's text): its hits come in order
    of literal text matched, the most specific first. `truncated` is True when the text was longer
    than MAX_TEXT and only its start was read."""
    if not isinstance(text, str):
        return Found((), False)
    truncated = len(text) > MAX_TEXT
    body = text[:MAX_TEXT] if truncated else text
    # One translate of the whole text, newlines kept (the mapping is one character for one), so each
    # line's words come from a slice of it; most lines share no word with an anchor and cost one
    # isdisjoint in C.
    hits = []
    for number, (line, words) in enumerate(zip(body.split("\n"), body.translate(_TO_SPACE_KEEP_LINES).split("\n")), 1):
        words = words[:MAX_LINE].split()
        if _ANCHOR_WORDS.isdisjoint(words):
            continue
        line = line[:MAX_LINE].rstrip("\r")
        candidates = set()
        for word in words:
            candidates.update(_ANCHORS.get(word, ()))
        found = []
        for index in candidates:
            message = MESSAGES[index]
            args = _match(message, line)
            if args is not None:
                found.append((-sum(len(p) for p in message.pieces[0::2]), index, Hit(number, message, tuple(args), line)))
        hits.extend(hit for _size, _index, hit in sorted(found))
    return Found(tuple(hits), truncated)


def _body(line):
    """The line without its syslog ("... kernel: ") or dmesg ("[  12.345678] ") prefix."""
    at = line.find("kernel: ")
    body = line[at + 8:] if at >= 0 else line
    body = body.lstrip()
    if body.startswith("[") and not body.startswith("[<"):
        close = body.find("]", 0, 64)
        if close > 0:
            body = body[close + 1:].lstrip()
    return body


def _identifier(word):
    return 0 < len(word) <= 128 and word[0] not in _DIGITS and all(char in _WORD_CHARS or char == "." for char in word)


def _frame(number, body):
    """A Frame from a call-trace line ("? name+0x1e/0xa0 [sunrpc]", "[<ffff...>] name+0x..", "? name", 32-bit ARM's
    "[<pc>] (name) from [<lr>] (caller+0x..)"), or None."""
    words = body.split()[:8]
    unsure = False
    for at, word in enumerate(words):
        if word == "?":
            unsure = True
            continue
        if word.startswith("[<"):
            continue
        arm = word[:1] == "(" and word[-1:] == ")" and at + 1 < len(words) and words[at + 1] == "from"
        name, plus, offset = (word[1:-1] if arm else word).partition("+0x")
        if plus and "/0x" not in offset or not _identifier(name):
            return None
        if not plus and not arm and len(words) - at > 2:
            return None
        module = words[at + 1][1:-1] if at + 1 < len(words) and words[at + 1][:1] == "[" and words[at + 1][-1:] == "]" else None
        known = frame_meaning(name)
        return Frame(number, name, module, unsure, known[0] if known else None, known[1] if known else None)
    return None


def _hung_task(number, line):
    """A HungTask opened by "INFO: task NAME:PID blocked for more than N seconds.", or None."""
    at = line.find("INFO: task ")
    end = line.find(" blocked for more than ", at + 11) if at >= 0 else -1
    if end < 0 or end - at > 11 + MAX_LEADING:
        return None
    task, colon, pid = line[at + 11:end].rpartition(":")
    seconds = line[end + 23:end + 23 + 24].split(" ", 1)[0]
    # hung_task_timeout_secs is an unsigned long: at most 20 digits; longer is not the kernel's line.
    if not colon or not pid.isdigit() or not seconds.isdigit() or len(pid) > 10 or len(seconds) > 20:
        return None
    return HungTask(number, task, int(pid), int(seconds), [], None)


# What marks a kernel line as NFS's own: the module a stack frame is in, or the subsystem prefix of a message
# (dprintk's "RPC:", "NFS:", "NFSD:" lines under rpcdebug; printk's "nfs:", "nfsd:", "lockd:", "svc:").
NFS_MODULES = ("[nfs]", "[nfsd]", "[nfsv3]", "[nfsv4]", "[sunrpc]", "[lockd]", "[rpcsec_gss_krb5]", "[auth_rpcgss]",
               "[nfs_acl]", "[grace]")
NFS_PREFIXES = ("RPC:", "NFS:", "NFSD:", "NFS4:", "nfs:", "nfsd:", "nfs4:", "lockd:", "svc:", "rpc-srv/", "xs_")


def nfs_kernel_lines(text):
    """(line number, line) of each line of the text that is an NFS kernel line: a stack frame in an NFS or sunrpc
    module, or a message with an NFS subsystem's prefix, whatever the catalogue or the hang reports make of it."""
    if not isinstance(text, str):
        return []
    lines, _truncated = _lines(text)
    return [(number, line) for number, line in lines
            if line.rstrip().endswith(NFS_MODULES) or _body(line).startswith(NFS_PREFIXES)]


def find_stack_frames(text):
    """Found(hits, truncated): a HungTask(line, task, pid, seconds, frames, waits_on) per report.

    frames are the Call Trace's frames in printed order (innermost first); waits_on is the first
    frame the hand table (kernel_frames.FRAMES) knows, a sure one before one printed with "?".
    A "Call Trace:" without an INFO line before it (sysrq-w, a soft lockup) opens a report with
    no task."""
    if not isinstance(text, str):
        return Found((), False)
    lines, truncated = _lines(text)
    reports = []
    current = None
    in_trace = False
    for number, line in lines:
        opened = _hung_task(number, line)
        if opened is not None:
            current, in_trace = opened, False
            reports.append(current)
            continue
        if "Call Trace:" in line:
            if current is None or current.frames:
                current = HungTask(number, None, None, None, [], None)
                reports.append(current)
            in_trace = True
            continue
        # `cat /proc/PID/stack` prints "[<0>] name+0x../0x.. [module]" lines and nothing else (fs/proc/base.c
        # proc_pid_stack, addresses hidden since 4.15): a report of its own, with no task line.
        if current is None and _body(line).startswith("[<0>] "):
            current, in_trace = HungTask(number, None, None, None, [], None), True
            reports.append(current)
        # 32-bit ARM prints its backtrace after the task line with no "Call Trace:" (arch/arm/kernel/traps.c).
        in_trace = in_trace or (current is not None and not current.frames and ") from [<" in line)
        if not in_trace:
            continue
        body = _body(line)
        if body.startswith(("<TASK>", "<IRQ>", "</IRQ>")) or not body:
            continue
        frame = _frame(number, body) if len(current.frames) < MAX_FRAMES else None
        if frame is None:
            in_trace = False
            current = None
            continue
        current.frames.append(frame)
    return Found(tuple(_with_wait(report) for report in reports), truncated)


def _with_wait(report):
    known = [frame for frame in report.frames if frame.meaning]
    ranked = [frame for frame in known if not frame.unsure] + [frame for frame in known if frame.unsure]
    return report._replace(frames=tuple(report.frames), waits_on=ranked[0] if ranked else None)
