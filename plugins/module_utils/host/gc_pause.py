# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""paused_gc(): Python's cyclic garbage collector paused while a large result is built.

Diagnosing a bundle of thousands of clients allocates millions of small dicts, lists and floats
that all stay alive until the result is written, and makes no reference cycles worth collecting.
The collector still runs a full pass every so many allocations over everything alive, so its cost
grows with the result: on a 4,096-client bundle it was a third of the module's own CPU after the
reading (tests/bench/README.md, issue 27). Reference counting frees everything as before; the
collector is restored as it was (a caller that paused it keeps it paused). Host side: the process.
"""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def paused_gc():
    """The cyclic collector off inside the block, as it was after (forked workers inherit the pause)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
