# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Facts that change between kernels, chosen by the kernel a bundle's host sample names.

docs/kernels.md has each fact with the kernels it was measured on (scripts/lab-matrix.sh) and
the source it comes from. Pure functions: the release string comes from the host samples
(host_reader reads /proc/sys/kernel/osrelease).
"""

from __future__ import annotations

import re

# fs/nfsd/state.h: NFSD_MAX_SLOTS_PER_SESSION was 160 up to 6.13; 6.14 ("nfsd: allocate new
# session-based DRC slots on demand") raised it to 2048 and grows a session's table as it is used.
DYNAMIC_SESSION_SLOTS_FROM = (6, 14)
FIXED_SESSION_SLOT_CAP = 160
DYNAMIC_SESSION_SLOT_CAP = 2048

_RELEASE = re.compile(r"^(\d+)\.(\d+)")


def kernel_version(release):
    """'6.1.0-41-amd64' -> (6, 1); None for a missing or unparsable release."""
    match = _RELEASE.match(release or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def session_slot_grant(release):
    """How an nfsd on this kernel sizes a new NFSv4.1 session's slot table.

    Returns {"rule": "fixed"|"dynamic"|"unknown", "cap": int or None, "kernel": release or None,
    "text": a sentence for evidence and recommendations}.
    """
    version = kernel_version(release)
    if version is None:
        return {"rule": "unknown", "cap": None, "kernel": None,
                "text": "the server's kernel is not in the bundle: up to 6.13 nfsd grants min(request, %d, DRC memory / "
                        "max(8, threads)), from 6.14 it grows a session's slots on demand up to %d"
                        % (FIXED_SESSION_SLOT_CAP, DYNAMIC_SESSION_SLOT_CAP)}
    if version >= DYNAMIC_SESSION_SLOTS_FROM:
        return {"rule": "dynamic", "cap": DYNAMIC_SESSION_SLOT_CAP, "kernel": release,
                "text": "the server's kernel %s grows a session's slots on demand up to min(request, %d): more nfsd threads "
                        "do not shrink it" % (release, DYNAMIC_SESSION_SLOT_CAP)}
    return {"rule": "fixed", "cap": FIXED_SESSION_SLOT_CAP, "kernel": release,
            "text": "the server's kernel %s grants a new session min(request, %d, DRC memory / max(8, threads)) slots at "
                    "CREATE_SESSION: more nfsd threads can shrink it" % (release, FIXED_SESSION_SLOT_CAP)}


def server_kernel(servers):
    """The kernel release of the first server whose host samples name one, or None."""
    for server in servers:
        for key in ("host_before", "host_after", "host_start", "host_end"):
            sample = server.get(key) or {}
            if sample.get("kernel_release"):
                return sample["kernel_release"]
    return None
