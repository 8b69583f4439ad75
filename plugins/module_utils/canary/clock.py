"""How far a host's clock is from the controller's, and host times put on the controller's clock.

Pure functions, no I/O. The action plugin plugins/action/clock_offset.py reads the host's clock
over the connection several times, each read bracketed by two controller timestamps, and passes
the brackets in.

Why: the canary's ranks start at an absolute time and report absolute start/end times, each on
its own host's clock. Without NTP the lab's VMs ran 1.27 s and 0.04 s behind the host, so ranks
that the report called 0.02 s apart really started ~1.23 s apart, and the MLPerf aggregate (total
bytes / (latest end - earliest start)) over the mixed clocks overstated throughput by up to 21 %.
Times from several hosts are only comparable once each is put on one clock.

A bracket (before, host, after) says the host read `host` at some controller time in
[before, after]; so offset = host - midpoint, with an error of at most (after - before) / 2. The
tightest bracket of several gives the best bound (the idea of NTP's clock filter, RFC 5905 s. 10:
keep the sample with the lowest round-trip delay).
"""
from __future__ import annotations

import math

# An offset above this is reported as a clock that NTP does not keep: 0.1 s is a tenth of the
# start-spread bound the canary aims for (1 s at 64 hosts); chrony or ntpd on a LAN keeps clocks
# within milliseconds.
OFFSET_BOUND_SECONDS = 0.1


def parse_host_time(text):
    """Seconds since the epoch from `date +%s.%N` (or any single decimal number); None if not one.

    `date` without %N support (busybox) prints a literal "N": that is not a number, and the
    caller then falls back to another clock reader.
    """
    words = (text or "").split()
    if len(words) != 1:
        return None
    try:
        value = float(words[0])
    except ValueError:
        return None
    if not math.isfinite(value) or value <= 0:
        return None
    return value


# The controller's wall clock may step (chrony's makestep, an operator's `date -s`) while a reading
# runs: its bracket then lies. A reading whose wall-clock span differs from its monotonic span by
# more than this was stepped (slewing moves it by at most 500 ppm: 0.05 ms over a 0.1 s reading).
STEP_TOLERANCE_SECONDS = 0.01


def steady_brackets(readings, tolerance=STEP_TOLERANCE_SECONDS):
    """(brackets, problems) from readings [(before, host, after, monotonic_seconds)]: a reading during
    which the controller's wall clock stepped (its span differs from the monotonic span) is left out
    and named in problems."""
    brackets, problems = [], []
    for number, (before, host, after, elapsed) in enumerate(readings, 1):
        step = (after - before) - elapsed
        if abs(step) > tolerance:
            problems.append("reading %d: the controller's clock stepped %s by %.3f s while it ran: not used" % (
                number, "back" if step < 0 else "forward", abs(step)))
            continue
        brackets.append((before, host, after))
    return brackets, problems


def best_offset(brackets, bound=OFFSET_BOUND_SECONDS):
    """The host's offset from the controller from brackets [(before, host, after), ...].

    Returns {offset_seconds, uncertainty_seconds, samples, bound_seconds, within_bound, message}:
    offset = host - controller (positive: the host's clock is ahead). within_bound is True only when
    the offset is provably inside the bound (|offset| + uncertainty <= bound), False when it is
    provably outside (|offset| - uncertainty > bound), None when the bracket is too wide to tell.
    Raises ValueError on no brackets or a bracket whose after precedes its before.
    """
    brackets = list(brackets)
    if not brackets:
        raise ValueError("no clock readings")
    for before, _host, after in brackets:
        if after < before:
            raise ValueError("a clock reading ended before it began (the controller's clock went back)")
    before, host, after = min(brackets, key=lambda item: item[2] - item[0])
    offset = host - (before + after) / 2.0
    uncertainty = (after - before) / 2.0
    if abs(offset) + uncertainty <= bound:
        within = True
    elif abs(offset) - uncertainty > bound:
        within = False
    else:
        within = None
    return {
        "offset_seconds": round(offset, 6),
        "uncertainty_seconds": round(uncertainty, 6),
        "samples": len(brackets),
        "bound_seconds": bound,
        "within_bound": within,
        "message": offset_message(offset, uncertainty, bound, within),
    }


def offset_message(offset, uncertainty, bound, within):
    """One line a person reads: the offset, its error, and what it means for the canary."""
    where = "ahead of" if offset >= 0 else "behind"
    figure = "clock %.3f s %s the controller's (+/- %.3f s)" % (abs(offset), where, uncertainty)
    if within is True:
        return figure + ": within %.3f s" % bound
    if within is False:
        return (figure + ": beyond %.3f s, so NTP does not keep this host's clock (run chrony); "
                "times from this host are corrected by the offset when hosts are combined" % bound)
    return (figure + ": the reading took too long to tell whether the clock is within %.3f s" % bound)


def offset_of(value):
    """A host's offset in seconds from a clock_offset result (or a bare number); None when unmeasured."""
    if isinstance(value, dict):
        value = value.get("offset_seconds")
    return None if value is None else float(value)


def uncertainty_of(value):
    """A host's offset uncertainty in seconds from a clock_offset result; None when unmeasured or a bare offset."""
    if isinstance(value, dict) and value.get("uncertainty_seconds") is not None:
        return float(value["uncertainty_seconds"])
    return None


def pair_uncertainty(uncertainties):
    """How far apart two hosts' corrected clocks may still be: the two largest uncertainties added
    (0 for one host, whose ranks share one clock)."""
    values = sorted((float(u) for u in uncertainties if u is not None), reverse=True)
    return sum(values[:2]) if len(values) > 1 else 0.0


def to_controller_time(host_time, offset):
    """A time read on the host, on the controller's clock (None stays None)."""
    if host_time is None or offset is None:
        return host_time
    return host_time - offset


def to_host_time(controller_time, offset):
    """A controller time (for example the canary's go time) on the host's clock."""
    if controller_time is None or offset is None:
        return controller_time
    return controller_time + offset
