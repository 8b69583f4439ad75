# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action for ckptio.nfs.clock_offset: read the host's clock over the connection, bracketed.

Runs on the controller. Each reading is one command over the task's connection (no Python
module is sent, so a reading costs one round trip); time.time() is taken right before and right
after it. The arithmetic is in module_utils/canary/clock.py.
"""
from __future__ import annotations

import math
import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import clock

# GNU date prints nanoseconds; where %N is not supported (busybox prints "N") the second reader
# is Python's clock, which every managed host has for Ansible's own modules.
CLOCK_READERS = (
    "date +%s.%N",
    "python3 -c 'import time; print(repr(time.time()))'",
)
MAX_SAMPLES = 50


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = True
    _supports_check_mode = True
    _VALID_ARGS = frozenset(("samples", "bound"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        samples, bound = self._options()
        reader, first = self._pick_reader()
        readings = [first] + [self._read(reader) for _sample in range(samples - 1)]
        brackets, stepped = clock.steady_brackets(readings)
        if not brackets:
            raise AnsibleActionFail("the controller's clock stepped during every reading (%s): no offset can be measured; "
                                    "run again once it is steady" % "; ".join(stepped))
        try:
            offset = clock.best_offset(brackets, bound)
        except ValueError as error:
            raise AnsibleActionFail("cannot measure the host's clock offset: %s" % error)
        result.update(offset)
        result.update(changed=False, reader=reader,
                      readings=[{"controller_before": round(b, 6), "host": round(h, 6), "controller_after": round(a, 6)}
                                for b, h, a in brackets])
        warnings = stepped + ([offset["message"]] if offset["within_bound"] is False else [])
        if warnings:
            result.setdefault("warnings", []).extend(warnings)
        return result

    def _options(self):
        args = self._task.args
        samples = args.get("samples", 5)
        bound = args.get("bound", clock.OFFSET_BOUND_SECONDS)
        # A boolean is no count: int(True) would take one reading without a word.
        if isinstance(samples, bool) or isinstance(samples, float) and not samples.is_integer():
            raise AnsibleActionFail("samples must be an integer, got %r" % (samples,))
        try:
            samples = int(samples)
        except (TypeError, ValueError):
            raise AnsibleActionFail("samples must be an integer, got %r" % (samples,))
        if not 1 <= samples <= MAX_SAMPLES:
            raise AnsibleActionFail("samples must be between 1 and %d, got %d" % (MAX_SAMPLES, samples))
        try:
            if isinstance(bound, bool):
                raise TypeError(bound)
            bound = float(bound)
        except (TypeError, ValueError, OverflowError):
            raise AnsibleActionFail("bound must be a number of seconds, got %r" % (bound,))
        if not math.isfinite(bound) or bound <= 0:
            raise AnsibleActionFail("bound must be above 0 seconds, got %s" % bound)
        return samples, bound

    def _pick_reader(self):
        """The first reader whose output is a time; its first bracket is kept as a sample."""
        problems = []
        for reader in CLOCK_READERS:
            try:
                return reader, self._read(reader)
            except AnsibleActionFail as error:
                problems.append(str(error))
        raise AnsibleActionFail("cannot read the host's clock: " + "; ".join(problems))

    def _read(self, reader):
        """(before, host, after, monotonic seconds between before and after): the monotonic span
        tells a step of the controller's wall clock during the reading (clock.steady_brackets)."""
        before, start = time.time(), time.monotonic()
        res = self._low_level_execute_command(reader, sudoable=False)
        end, after = time.monotonic(), time.time()
        host = clock.parse_host_time(res.get("stdout", ""))
        if res.get("rc") != 0 or host is None:
            raise AnsibleActionFail("%r gave rc %s and %r" % (reader, res.get("rc"), (res.get("stdout") or res.get("stderr") or "")[:200]))
        return before, host, after, end - start
