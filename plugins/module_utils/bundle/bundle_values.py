# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a bundle's values may be: the one YAML and JSON parser of a bundle's files, and its schema.

A bundle comes from anywhere (a colleague's tarball, files saved by hand): its values are input.
bundle.py reads every file of a bundle and parses it here, so every reader sees values that:
- were parsed without YAML aliases or anchors (a 1.2 kB "billion laughs" context.yml expands
  9^9 aliases and hangs the reader) and at most MAX_DEPTH levels deep;
- are finite numbers (no .nan, .inf: json.dumps writes NaN, which most JSON readers refuse),
  at most MAX_MAGNITUDE (a 400-digit integer overflows float()), never booleans where numbers belong;
- have the type the readers use at each key the schema names (a mapping, a list, a string, a
  number); keys the schema does not name are still checked for the rules above.
Every refusal is a BundleError naming the file and the key (`target.window_seconds`,
`ranks[0].start`). Pure: text in, values out.
"""

from __future__ import annotations

import json
import math

try:
    import yaml
    HAS_YAML = True
except ImportError:
    HAS_YAML = False

# Deeper than any file we write (iperf3's -J output is 6 levels), far below Python's recursion limit.
MAX_DEPTH = 32
# 2^63: every counter the kernel keeps fits, a 400-digit "number" does not.
MAX_MAGNITUDE = float(2 ** 63)
# Digits of an integer literal: a longer one is refused before Python converts it (quadratic time).
MAX_INT_DIGITS = 20


class BundleError(ValueError):
    """The bundle misses something the diagnosis needs or holds a value it cannot use; the message names it."""


class NotParsed(BundleError):
    """The file is not JSON or YAML at all (bundle.py lists an optional JSON file that does not parse as a problem)."""


class LongInteger(object):
    """An integer literal of more than MAX_INT_DIGITS digits, kept unconverted so check() names its key."""

    def __init__(self, digits):
        self.digits = digits


NUMBER, STRING, BOOL, MAPPING, LIST, ANY = "a number", "a string", "true or false", "a mapping", "a list", "any value"
# The exact Python types json.loads makes for each kind (bool is no number here: type(True) is bool).
_JSON_TYPES = {NUMBER: (int, float), STRING: (str,), BOOL: (bool,), MAPPING: (dict,), LIST: (list,),
               ANY: (int, float, str, bool, dict, list)}


class Spec(object):
    """The type of a value: kinds (one or more of the names above), for a mapping the spec of
    named keys (keys) or of every value (values), for a list the spec of its items. types: the
    exact types of json.loads output the kinds accept, worked out once for _fits."""

    def __init__(self, kinds, keys=None, values=None, items=None):
        self.kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        self.keys = keys or {}
        self.values = values
        self.items = items
        self.types = frozenset(kind_type for kind in self.kinds for kind_type in _JSON_TYPES[kind])
        # For _fits: which keys of a mapping take a number, or a string (a key not named takes what `values`
        # takes, any value without it), and which the items of a list take.
        default = values.types if values is not None else _JSON_TYPES[ANY]
        self.number_keys = _Keys(self.keys, default, int)
        self.string_keys = _Keys(self.keys, default, str)
        self.number_items = items is None or int in items.types
        self.string_items = items is None or str in items.types


class _Keys(object):
    """Which keys of a mapping (named keys: {key: Spec}, the others: default types) take values of one type."""

    def __init__(self, keys, default, kind):
        self.elsewhere = kind in default
        self.refused = frozenset(key for key, spec in keys.items() if kind not in spec.types)
        self.taken = frozenset(key for key, spec in keys.items() if kind in spec.types)

    def all_take(self, names):
        """True when every key in names (a dict's keys view) takes a value of this type."""
        return names.isdisjoint(self.refused) if self.elsewhere else names <= self.taken


def mapping(**keys):
    return Spec(MAPPING, keys=keys)


def mapping_of(values):
    return Spec(MAPPING, values=values)


def list_of(items):
    return Spec(LIST, items=items)


NUM, STR, FLAG, ANYTHING = Spec(NUMBER), Spec(STRING), Spec(BOOL), Spec(ANY)
# A name or a number (a label `12000`, a host `017` YAML reads as a number).
NAME = Spec((STRING, NUMBER))
NUMBERS = mapping_of(NUM)
STRINGS = list_of(NAME)

# A host sample (host_reader.py; docs/capture-bundle.md host_before.json).
HOST_SAMPLE = mapping(
    format=NUM, time=NUM, uptime=NUM, kernel_release=STR, proc_stat=STR, diskstats=STR, sampler_cpu_seconds=NUM,
    interfaces=mapping_of(mapping(operstate=STR, speed_mbps=NUM, mtu=NUM, kind=STR, lower=STRINGS, statistics=NUMBERS)),
    net=mapping_of(STR), nfs_server_addresses=STRINGS, errors=list_of(ANYTHING))
# A ckptio.nfs.clock_offset result, or a bare offset in seconds (clock.offset_of).
CLOCK = Spec((NUMBER, MAPPING), keys={"offset_seconds": NUM, "uncertainty_seconds": NUM, "samples": NUM,
                                      "bound_seconds": NUM, "within_bound": FLAG, "message": STR, "reader": STR,
                                      "readings": list_of(NUMBERS)})
RANK = mapping(rank=NUM, pid=NUM, start=NUM, end=NUM, bytes=NUM, error=ANYTHING, read_start=NUM, read_end=NUM,
               read_bytes=NUM, read_error=ANYTHING, verify_error_count=NUM, verify_errors=list_of(ANYTHING))
HOST_SUMMARY = mapping(earliest_start=NUM, latest_end=NUM, seconds=NUM, ranks=NUM, finished_ranks=NUM, total_bytes=NUM,
                       max_rank_seconds=NUM, max_start_delay_seconds=NUM, start_spread_seconds=NUM,
                       throughput_bytes_per_second=NUM, incomplete_ranks=list_of(ANYTHING))

CONTEXT = mapping(
    mount_point=STR, label=NAME, source=STR,
    target=mapping(checkpoint_bytes=NUM, window_seconds=NUM, checkpoint_bytes_from=STR),
    network=mapping(server_link_gbps=NUM, client_link_gbps=NUM, clients=NUM, idle_rtt_ms=NUM),
    canary=mapping(layout=STR, ranks=NUM, clients=NUM, bytes=NUM, seconds=NUM, start_at=NUM, start_spread_seconds=NUM,
                   synchronized=FLAG, start_spread_uncertainty_seconds=NUM, spread_message=STR, clocks_measured=FLAG,
                   unmeasured_clocks=STRINGS, shape=STR, mount_points=STRINGS, drain=mapping(bytes=NUM, seconds=NUM, start=NUM, end=NUM)),
    restore=mapping(bytes=NUM, seconds=NUM, read_go_at=NUM, ranks=NUM, finished_ranks=NUM, start_spread_seconds=NUM,
                    synchronized=FLAG, start_spread_uncertainty_seconds=NUM, spread_message=STR, clocks_measured=FLAG,
                    restore_cache=STR, guarantee=STR, verify_error_count=NUM, skipped=mapping_of(ANYTHING),
                    target_window_seconds=NUM),
    saved=mapping(written_by=STR, window=STR, window_seconds=NUM, client=NAME, server=NAME, files=mapping_of(STR),
                  notes=list_of(STR)),
    capture=mapping(kind=STR, requested=mapping(seconds=NUM, start_at=NUM, end_at=NUM, marker=STR, max_seconds=NUM),
                    start_at=NUM, end_at=NUM, seconds=NUM, hit_max=FLAG, clients=NUM, clocks_measured=FLAG,
                    unmeasured_clocks=STRINGS, dstate_interval=NUM, server_write_bytes=NUM, application_write_bytes=NUM),
)
CANARY = mapping(ranks=list_of(RANK), summary=HOST_SUMMARY, clock=CLOCK, start_at=NUM, stalled=list_of(ANYTHING),
                 host_samples=mapping(start=HOST_SAMPLE, end=HOST_SAMPLE), harness=mapping_of(ANYTHING),
                 barrier=Spec(MAPPING), read_barrier=Spec(MAPPING), restore=Spec(MAPPING), msg=STR, workdir=STR,
                 cleaned_up=FLAG, shape=Spec(MAPPING), per_path=list_of(Spec(MAPPING)), blocking_seconds=NUM,
                 drain=Spec(MAPPING))
PROBE = mapping(server=STR, port=NUM, streams=NUM, seconds=NUM, start_at=NUM, started_at=NUM, clock=CLOCK, msg=STR,
                barrier=Spec(MAPPING), iperf3=ANYTHING,
                summary=mapping(sent_bits_per_second=NUM, received_bits_per_second=NUM, retransmits=NUM, streams=NUM,
                                seconds=NUM, start_epoch=NUM, error=STR))
CAPTURE = mapping(clock=CLOCK, start=NUM, end=NUM, written=NUMBERS, dstate_samples=NUM, msg=STR,
                  problems=list_of(ANYTHING))
# The diagnosis checkpoint_report reads back (report.py); keys a newer diagnosis adds pass as any value.
DIAGNOSIS = mapping(
    target_bytes_per_second=NUM, achieved_bytes_per_second=NUM, gap_factor=NUM, unmeasured=STRINGS,
    limiting_layer=STR, contributing=STRINGS, verdict=STR, summary=STR,
    network=mapping(state=STR, summary=STR, headline=STR, probe_share=NUM, links=list_of(mapping(utilisation_during=NUM))),
    cpu=mapping_of(mapping(side=STR, busy=NUM)),
    clients=mapping_of(mapping(max_slots=list_of(NUM), dstate=mapping(max_count=NUM), sunrpc=mapping_of(ANYTHING),
                               nfs_version=NAME, proto=STR)),
    servers=mapping_of(mapping(threads=NUM, pool_stats=NUMBERS, packets_without_idle_thread=NUM)),
    restore=Spec(MAPPING), headline=Spec(MAPPING), first_screen=list_of(STR),
    capture=mapping(kind=STR, seconds=NUM, written=NUMBERS, hit_max=FLAG, flags=list_of(ANYTHING), source=STR))
# A client's figures.json (diagnosis/host_figures.py): the row diagnosis/client_row.py makes of its files.
FIGURES_OP = mapping(ops=NUM, retrans=NUM, timeouts=NUM, errors=NUM, bytes_sent=NUM, avg_rtt_ms=NUM, avg_exe_ms=NUM, avg_queue_ms=NUM)
FIGURES_RPC = mapping(
    sends=NUM, recvs=NUM, bad_xids=NUM, req_u=NUM, bklog_u=NUM, sending_u=NUM, pending_u=NUM, connect_count=NUM, bind_count=NUM,
    transports=NUM, protocols=STRINGS, max_slots=list_of(NUM), max_slots_before=list_of(NUM), max_slots_reached=NUM,
    backlog_per_send=NUM, slots_in_use_per_send=NUM, sending_per_send=NUM, pending_per_send=NUM, sends_per_second=NUM,
    backlog_per_send_per_transport=list_of(NUM), reopen_connects=NUM)
FIGURES_DELTA = mapping(
    device=STR, mount_point=STR, fstype=STR, nfs_version=STR, nconnect=NUM, wsize=NUM, rsize=NUM, proto=STR,
    opts=mapping_of(ANYTHING), interval_seconds=NUM, bytes=NUMBERS, write_bytes=NUM, read_bytes=NUM, write_mb_per_second=NUM,
    read_mb_per_second=NUM, rpc=FIGURES_RPC, ops=mapping_of(FIGURES_OP), truncated=ANYTHING, reset=FLAG, new_mount=FLAG,
    negative_time=FLAG, usable=FLAG, problems=STRINGS, problem_details=STRINGS)
FIGURES_DSTATE = mapping(samples=NUM, samples_with_dstate=NUM, max_count=NUM, longest_run=NUM, wchan_counts=NUMBERS,
                         group_counts=NUMBERS)
FIGURES_LINK = mapping(
    interface=STR, kind=STR, members=STRINGS, operstate=STR, mtu=NUM, speed_mbps=NUM, speed_source=STR, window_seconds=NUM,
    reset=FLAG, tx_bytes=NUM, rx_bytes=NUM, dropped=NUM, errors=NUM, loss_counters=NUMBERS, utilisation=NUM,
    utilisation_during=NUM, busy_seconds=NUM, bytes_per_second=NUM, host=STR, side=STR, measured_over=STR)
FIGURES_ROW = mapping(
    view=mapping(host=STR, delta=FIGURES_DELTA, sunrpc=mapping_of(STR), dstate=FIGURES_DSTATE),
    excluded=mapping(host=STR, mount_point=STR, device=STR, problems=STRINGS, problem_details=STRINGS),
    canary=mapping(ranks=list_of(RANK), clock=CLOCK, harness=mapping_of(ANYTHING)),
    evidence=mapping(cpu=Spec(LIST), links=list_of(FIGURES_LINK), addresses=STRINGS, tcp=mapping_of(ANYTHING), tcp_how=STR))
FIGURES = mapping(format=NUM, mount_point=STR, sources=mapping_of(STR), row=FIGURES_ROW)
JSON_SCHEMAS = {"canary.json": CANARY, "probe.json": PROBE, "capture.json": CAPTURE, "diagnosis.json": DIAGNOSIS, "figures.json": FIGURES}
HOST_SAMPLE_FILES = ("host_before.json", "host_after.json", "host_start.json", "host_end.json")


def schema_of(name):
    """The spec of a bundle file by its base name (ANYTHING for a name the schema does not know)."""
    if name == "context.yml":
        return CONTEXT
    if name in HOST_SAMPLE_FILES:
        return HOST_SAMPLE
    return JSON_SCHEMAS.get(name, ANYTHING)


def _kind(value):
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, (int, float)):
        return NUMBER
    if isinstance(value, str):
        return STRING
    if isinstance(value, dict):
        return MAPPING
    if isinstance(value, list):
        return LIST
    return None


def _shown(value):
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _key(path):
    return path or "the top level"


def _check_number(value, path):
    if isinstance(value, float) and not math.isfinite(value):
        raise BundleError("%s is %s: only finite numbers are used" % (_key(path), _shown(value)))
    if abs(value) > MAX_MAGNITUDE:
        raise BundleError("%s is %.4g: numbers above %.4g (2^63) are no figure a host measures" % (
            _key(path), value, MAX_MAGNITUDE))


def check(value, spec=ANYTHING, path="", depth=0):
    """Raise BundleError (naming the key as `a.b[0].c`) unless value fits spec and the rules every value keeps."""
    if depth > MAX_DEPTH:
        raise BundleError("%s nests deeper than %d levels" % (_key(path), MAX_DEPTH))
    if value is None:
        return
    if isinstance(value, LongInteger):
        raise BundleError("%s is a %d-digit number: at most %d digits are used" % (_key(path), value.digits, MAX_INT_DIGITS))
    kind = _kind(value)
    if kind is None:
        raise BundleError("%s is %s (%s): not a value a bundle holds" % (_key(path), _shown(value), type(value).__name__))
    if ANY not in spec.kinds and kind not in spec.kinds:
        raise BundleError("%s must be %s, not %s" % (_key(path), " or ".join(spec.kinds), _shown(value)))
    if kind == NUMBER:
        _check_number(value, path)
    elif kind == MAPPING:
        for key, item in value.items():
            if not isinstance(key, str):
                raise BundleError("%s has a key %s that is not a string" % (_key(path), _shown(key)))
            inner = spec.keys.get(key) or spec.values or ANYTHING
            check(item, inner, "%s.%s" % (path, key) if path else key, depth + 1)
    elif kind == LIST:
        for index, item in enumerate(value):
            check(item, spec.items or ANYTHING, "%s[%d]" % (path, index), depth + 1)


def _bounded_int(text):
    digits = len(text.lstrip("+-"))
    return LongInteger(digits) if digits > MAX_INT_DIGITS else int(text)


_NONE = type(None)
_NUMBER_TYPES = frozenset((int, float))
_STRING_TYPES = frozenset((str,))
_SCALAR_TYPES = frozenset((str, bool))


def _kinds(values):
    """(the types of values but None, whether a None is among them), worked out in C."""
    kinds = set(map(type, values))
    if _NONE in kinds:
        kinds.discard(_NONE)
        return kinds, True
    return kinds, False


def _numbers_fit(values, with_none):
    """True when every value (numbers, and None when with_none) is finite and at most MAX_MAGNITUDE, in C:
    min and max find one out of range, and a NaN (which they may step over) makes the sum NaN."""
    numbers = [item for item in values if item is not None] if with_none else values
    if not numbers:
        return True
    if not (-MAX_MAGNITUDE <= min(numbers) and max(numbers) <= MAX_MAGNITUDE):
        return False
    return not math.isnan(sum(numbers))


def _fits_any(value, depth):
    """_fits for a container the schema names nothing in (iperf3's output, the harness block)."""
    # Exact types: json.loads makes only these, and bool is an int to isinstance().
    # pylint: disable=unidiomatic-typecheck
    if depth > MAX_DEPTH:
        return False
    items = value.values() if type(value) is dict else value
    # A container of numbers only (a counter table) or of strings only is checked in C, without a loop here.
    kinds, with_none = _kinds(items)
    if kinds <= _NUMBER_TYPES:
        return _numbers_fit(items, with_none)
    if kinds <= _SCALAR_TYPES:
        return True
    for item in items:
        if type(item) is dict or type(item) is list:
            if not _fits_any(item, depth + 1):
                return False
        elif (type(item) is int or type(item) is float) and not -MAX_MAGNITUDE <= item <= MAX_MAGNITUDE:
            return False
    return True


def _fits(value, spec, depth=0):
    """check() without key paths, for json.loads output only: True when value breaks no rule.

    The full check builds a key path per value (`intervals[3].streams[0].bytes`) and costs ~1 us a
    value; a 16,384-client bundle holds millions (bench_diagnose_scale.py). Here each spec's
    accepted types are a set made once (Spec.types) and a container's leaves are checked in its own
    loop, without a call per value. A value that fails here is checked again by check(), which
    names the key, so messages do not change.
    """
    # Exact types: json.loads makes only these, and bool is an int to isinstance().
    # pylint: disable=unidiomatic-typecheck
    if depth > MAX_DEPTH:
        return False
    kind = type(value)
    if kind not in spec.types:
        return value is None
    if kind is dict:
        # Numbers only (an op's counters) or strings only (the sunrpc settings), each key taking them: in C.
        kinds, with_none = _kinds(value.values())
        if kinds <= _NUMBER_TYPES and spec.number_keys.all_take(value.keys()):
            return _numbers_fit(value.values(), with_none)
        if kinds <= _STRING_TYPES and spec.string_keys.all_take(value.keys()):
            return True
        keys = spec.keys
        default = spec.values or ANYTHING
        # One loop per container shape, each with the leaf check written out: no call per value.
        for key, item in value.items():
            inner = keys.get(key) or default if keys else default
            item_kind = type(item)
            if item_kind is dict or item_kind is list:
                if not (_fits_any(item, depth + 1) if inner is ANYTHING else _fits(item, inner, depth + 1)):
                    return False
            elif item_kind in inner.types:
                if (item_kind is int or item_kind is float) and not -MAX_MAGNITUDE <= item <= MAX_MAGNITUDE:
                    # NaN compares false, an infinity or a long integer is out of range: the full check names it.
                    return False
            elif item is not None:
                return False
        return True
    if kind is list:
        kinds, with_none = _kinds(value)
        if kinds <= _NUMBER_TYPES and spec.number_items:
            return _numbers_fit(value, with_none)
        if kinds <= _STRING_TYPES and spec.string_items:
            return True
        inner = spec.items or ANYTHING
        if inner is ANYTHING:
            return _fits_any(value, depth)
        for item in value:
            item_kind = type(item)
            if item_kind is dict or item_kind is list:
                if not _fits(item, inner, depth + 1):
                    return False
            elif item_kind in inner.types:
                if (item_kind is int or item_kind is float) and not -MAX_MAGNITUDE <= item <= MAX_MAGNITUDE:
                    return False
            elif item is not None:
                return False
        return True
    return not ((kind is int or kind is float) and not -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE)


def parse_json(text, name):
    """A bundle JSON file's value, checked against its schema (schema_of(name)); BundleError names the file and key."""
    try:
        # Fast path: plain json.loads and _fits. NaN and Infinity are parsed so that a check names their key.
        value = json.loads(text)
        if _fits(value, schema_of(name.rsplit("/", 1)[-1])):
            return value
        # Parsed again so that an over-long integer literal is a LongInteger check() names, not an int.
        value = json.loads(text, parse_int=_bounded_int)
    except RecursionError:
        raise BundleError("%s nests deeper than %d levels" % (name, MAX_DEPTH))
    except ValueError as exc:
        raise NotParsed("%s is not valid JSON (%s)" % (name, exc))
    return checked(value, name)


def checked(value, name):
    """value when it fits the schema of the file `name`; BundleError naming the file and the key."""
    try:
        check(value, schema_of(name.rsplit("/", 1)[-1]))
    except BundleError as exc:
        raise BundleError("%s: %s" % (name, exc))
    return value


if HAS_YAML:
    class _PlainLoader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
        """SafeLoader without anchors or aliases, at most MAX_DEPTH levels (nothing we write uses them)."""

        def __init__(self, stream):
            super(_PlainLoader, self).__init__(stream)
            self._depth = 0  # how deep compose_node is now, bounded by MAX_DEPTH

        def compose_node(self, parent, index):
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise yaml.YAMLError("an alias or anchor (%s) at line %d: bundle files use none (a few bytes of aliases "
                                     "can expand to gigabytes)" % (event.anchor, event.start_mark.line + 1))
            self._depth += 1
            try:
                if self._depth > MAX_DEPTH:
                    raise yaml.YAMLError("more than %d levels at line %d" % (MAX_DEPTH, event.start_mark.line + 1))
                return super(_PlainLoader, self).compose_node(parent, index)
            finally:
                self._depth -= 1

        def construct_yaml_int(self, node):
            digits = len(node.value.replace("_", "").lstrip("+-"))
            if digits > MAX_INT_DIGITS:
                return LongInteger(digits)
            return super(_PlainLoader, self).construct_yaml_int(node)

    _PlainLoader.add_constructor("tag:yaml.org,2002:int", _PlainLoader.construct_yaml_int)


def parse_yaml(text, name):
    """A bundle YAML file's value (no aliases, bounded), checked against its schema; BundleError names the file and key."""
    if not HAS_YAML:
        raise BundleError("PyYAML is needed to read %s" % name)
    try:
        value = yaml.load(text, Loader=_PlainLoader)  # nosec B506 - _PlainLoader is a SafeLoader
    except yaml.YAMLError as exc:
        raise BundleError("%s is not valid YAML: %s" % (name, exc))
    return checked(value, name)


def dump_json(value, name, **kwargs):
    """json.dumps that refuses NaN and infinities (no JSON reader but Python's takes them): BundleError names the
    file and, found by check(), the key that holds the value."""
    try:
        return json.dumps(value, allow_nan=False, **kwargs)
    except ValueError as exc:
        where = str(exc)
        try:
            check(value)
        except BundleError as found:
            where = str(found)
        raise BundleError("%s would hold a value JSON cannot carry (%s): nothing written" % (name, where))
