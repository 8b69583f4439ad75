#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: clock_offset
short_description: Measure how far a host's clock is from the controller's
version_added: 0.2.0
description:
  - Reads the host's clock over the task's connection several times (C(date +%s.%N), or Python's clock where
    C(date) lacks C(%N)); each reading bracketed by two controller timestamps, and keeps the tightest bracket. The
    offset is the host's time minus the bracket's midpoint; its error is at most half the bracket.
  - Why it matters. The canary's ranks start at an absolute time and report start and end times on their own host's
    clock. Hosts without NTP drift by seconds (measured in the lab, 1.27 s), which moves ranks apart that the report
    would call synchronized and distorts the MLPerf aggregate computed over several hosts' clocks.
  - Runs on the controller as an action; nothing is written on the host, so check mode behaves like a normal run.
author:
  - ckptio.nfs contributors (@ckptio)
options:
  samples:
    description:
      - How many readings to take. The one with the shortest round trip is kept. Between 1 and 50.
    type: int
    default: 5
  bound:
    description:
      - An offset beyond this many seconds is reported (RV(within_bound) false, and a warning), because NTP or chrony
        does not keep the host's clock.
    type: float
    default: 0.1
extends_documentation_fragment:
  - ckptio.nfs.attributes
  - ckptio.nfs.attributes.action
attributes:
  action:
    support: full
    details: The readings are taken by an action plugin on the controller
  check_mode:
    support: full
    details: The module only reads the host's clock; check mode behaves exactly like a normal run.
  diff_mode:
    support: none
    details: Nothing is ever changed.
notes:
  - Run chrony (or ntpd) on every host the canary runs on; the correction by the measured offset is a fallback, good to
    RV(uncertainty_seconds) only.
seealso:
  - module: ckptio.nfs.checkpoint_canary
"""

EXAMPLES = r"""
- name: Measure each client's clock against the controller
  ckptio.nfs.clock_offset:
    samples: 5
  register: clock

- name: Show the offset
  ansible.builtin.debug:
    msg: "{{ clock.message }}"
"""

RETURN = r"""
offset_seconds:
  description: The host's clock minus the controller's, in seconds (positive when the host is ahead).
  returned: success
  type: float
  sample: -1.268
uncertainty_seconds:
  description: The largest error of RV(offset_seconds), half the round trip of the tightest reading
  returned: success
  type: float
  sample: 0.004
samples:
  description: How many readings were taken.
  returned: success
  type: int
  sample: 5
bound_seconds:
  description: The bound RV(within_bound) was judged against (O(bound)).
  returned: success
  type: float
  sample: 0.1
within_bound:
  description: True when the offset is within O(bound) even at its largest error, false when it is beyond it even at
    its smallest, null when the readings were too slow to tell.
  returned: success
  type: bool
  sample: false
message:
  description: One line for a person, with the offset, its error and what it means.
  returned: success
  type: str
  sample: "clock 1.268 s behind the controller's (+/- 0.004 s): beyond 0.100 s, so NTP does not keep this host's clock (run chrony); ..."
reader:
  description: The command that read the host's clock.
  returned: success
  type: str
  sample: date +%s.%N
readings:
  description: Every reading, C({controller_before, host, controller_after}) in seconds since the epoch.
  returned: success
  type: list
  elements: dict
"""
