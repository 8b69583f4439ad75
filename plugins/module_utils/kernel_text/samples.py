# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sample container of a bundle's sunrpc_xprt.txt and rpc_tasks.txt (docs/capture-bundle.md). Pure.

The host sampler writes, for each sample of the window:

    === sample t=12.5 ===
    --- xprt-switches/switch-0/xprt-0-tcp/xprt_info ---
    <the file's verbatim content>
    --- rpc_clnt/4/tasks ---
    <the file's verbatim content>

A section's path is relative to /sys/kernel/sunrpc (sysfs) or /sys/kernel/debug/sunrpc (debugfs); a path
naming a directory (`xprt-switches/switch-0/xprt-0`) stands for its xprt_info. Lines starting with "# "
before the first sample are comments: the sampler says there what it could not read ("# not seen:
/sys/kernel/sunrpc is missing"), and a file holding only such lines is read as "not seen, because ...".
"""

from __future__ import annotations

import dataclasses
import re

_SAMPLE = re.compile(r"^=== sample t=(-?\d{1,12}(?:\.\d{1,9})?) ===\s*$")
_SECTION = re.compile(r"^--- (\S{1,512}) ---\s*$")
# A sample file this long is cut (a sampler gone wild must not fill the controller's memory).
MAX_SAMPLES = 100000


@dataclasses.dataclass(frozen=True)
class Sample:
    """One sample: its time since the window's start (s) and {path: verbatim text} of its sections, in file order."""
    t: float
    sections: tuple

    def texts(self, suffix):
        """[(path, text)] of the sections whose path ends with suffix."""
        return [(path, text) for path, text in self.sections if path.endswith(suffix)]


@dataclasses.dataclass(frozen=True)
class SampleFile:
    """The samples of one file and its comments (what the sampler said it could not read)."""
    samples: tuple
    comments: tuple


def parse_samples(text):
    """SampleFile of a sample container text (None or '' gives no samples and no comments)."""
    samples, comments = [], []
    current_t, sections, path, body = None, [], None, []

    def close_section():
        if path is not None:
            while body and not body[-1].strip():
                body.pop()
            sections.append((path, "".join(line + "\n" for line in body)))

    for line in (text or "").split("\n"):
        sample = _SAMPLE.match(line)
        if sample:
            close_section()
            if current_t is not None:
                samples.append(Sample(current_t, tuple(sections)))
            if len(samples) >= MAX_SAMPLES:
                current_t = None
                break
            current_t, sections, path, body = float(sample.group(1)), [], None, []
            continue
        if current_t is None:
            if line.startswith("#"):
                comments.append(line.lstrip("#").strip())
            continue
        section = _SECTION.match(line)
        if section:
            close_section()
            path, body = section.group(1), []
        elif path is not None:
            body.append(line)
    if current_t is not None:
        close_section()
        samples.append(Sample(current_t, tuple(sections)))
    return SampleFile(tuple(samples), tuple(comment for comment in comments if comment))
