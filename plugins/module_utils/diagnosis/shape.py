# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""diagnosis.json's shape, in one place: every key a bundle's diagnosis and a paste's partial diagnosis carry.

Both diagnose.diagnose_run and paste/partial.partial_diagnosis end in checked(), so the two cannot
drift apart (issue 43: the shape was written out twice); checkpoint_report, the comparison and
diagnosis.md read these keys. docs/capture-bundle.md "diagnosis.json" says what each holds.
"""

from __future__ import annotations

# Keys every diagnosis has, a bundle's or a paste's.
COMMON = (
    "mount_point", "target_bytes_per_second", "achieved_bytes_per_second", "achieved_source", "gap_factor",
    "limiting_layer", "contributing", "confidence", "confidence_reasons", "unmeasured", "network", "cpu", "verdict",
    "tuning_headroom_factor", "tuning_headroom_why", "evidence", "recommendations", "capacity", "summary", "start",
    "window", "capture", "clients", "excluded_clients", "servers", "restore", "headline", "first_screen",
    # Hangs, known bugs, misconfigurations and broken paths: no capacity tuning fixes them (a paste's kernel log,
    # configuration, capture); [{"name", "what", "tuning_fixes", "fix", "source", "rests_on"}].
    "faults",
)
# A measured bundle's own keys: the mounts' state, the pace-setting host, the scope of the verdict, why not the others.
BUNDLE = ("mounts", "pace", "scope", "why_not")
# Only with several NFS paths (diagnosis/paths.py); only with the slot table's files (diagnosis/slot_table.py).
BUNDLE_OPTIONAL = ("paths", "slot_table")
# A paste's own key: what each file was taken for, the suspicion and what to capture next.
PASTE = ("partial",)


def checked(result, partial=False):
    """result, after checking it has exactly diagnosis.json's keys for its kind; ValueError naming the difference."""
    required = set(COMMON) | set(PASTE if partial else BUNDLE)
    allowed = required | (set() if partial else set(BUNDLE_OPTIONAL))
    missing, unknown = sorted(required - set(result)), sorted(set(result) - allowed)
    if missing or unknown:
        raise ValueError("diagnosis.json's shape (diagnosis/shape.py): missing %s, unknown %s" % (missing or "-", unknown or "-"))
    return result
