# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's internal step is checked against its own argument spec before it runs.

The spec is the step's documentation: the `options` of plugins/plugin_utils/<step>.yml (names,
type, elements, choices, required, suboptions), as a role's meta/argument_specs.yml is both its
documentation and the spec `validate_argument_spec` checks. One file says what a step takes, so
the docs cannot drift from the check (tests/unit/plugins/filter/test_internal.py holds every step
to having one, matching its Python parameters).

The check is ansible-core's own (ArgumentSpecValidator, the one modules use). It checks and does
not convert: the step gets the values the task gave, so what a step returns (and the bundle files
written from it) stays what it was before the check existed. A top-level option is required when its
Python parameter has no default (the test holds `required: true` to that), so Python's binding says
which is missing; a value given as none is not type-checked (the steps read none as "not given" or
empty, as they did before). A Jinja Undefined is left to the step, which raises Jinja's own error so
ansible-core before 2.19 can defer it to the task's `when`.
"""

from __future__ import annotations

import inspect
import os

from collections.abc import Mapping

import yaml

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

HERE = os.path.dirname(os.path.abspath(__file__))
# The keys of a documented option that are argument spec; the rest (description, version_added) is prose.
SPEC_KEYS = ("type", "elements", "choices", "required", "options", "default", "aliases")
INPUT = "_input"


def documentation(step):
    """The DOCUMENTATION block of plugins/plugin_utils/<step>.yml (shipped with the collection)."""
    with open(os.path.join(HERE, "%s.yml" % step), encoding="utf-8") as handle:
        return yaml.safe_load(handle)["DOCUMENTATION"]


def spec_of(options, top=True):
    """The argument spec of documented options: each option's spec keys, suboptions included (a
    top-level option's `required` is Python's to check: its parameter has no default)."""
    spec = {}
    for name, option in (options or {}).items():
        entry = dict((key, option[key]) for key in SPEC_KEYS if key in option and key != "options")
        if top:
            entry.pop("required", None)
        if "options" in option:
            entry["options"] = spec_of(option["options"], top=False)
        spec[name] = entry
    return spec


def _undefined(value):
    """A Jinja Undefined (told by its method, as plugins/plugin_utils/bundle_steps.py does)."""
    return getattr(type(value), "_fail_with_undefined_error", None) is not None


class Step:
    """One internal step: its function and the spec its documentation gives."""

    def __init__(self, name, function, options):
        self.name = name
        self.function = function
        self.signature = inspect.signature(function)
        self.spec = spec_of(options)
        self.validator = ArgumentSpecValidator(self.spec)

    def _fail(self, text):
        raise AnsibleFilterError("ckptio.nfs.internal step %r: %s (plugins/plugin_utils/%s.yml)" % (self.name, text, self.name))

    def arguments(self, value, args, kwargs):
        """{option: value} as the task gave them, the input under _input; a TypeError of Python's binding
        (too many positional arguments, an unknown keyword) is told with the step's name."""
        try:
            bound = self.signature.bind(value, *args, **kwargs)
        except TypeError as exc:
            self._fail(str(exc))
        first = next(iter(self.signature.parameters))
        return dict((INPUT if name == first else name, given) for name, given in bound.arguments.items())

    def _checked(self, name, item):
        """The value the check sees: a mapping that is no dict (hostvars, whose items are templated when
        read) is a dict to its type check, and its items are not read unless the spec has suboptions."""
        if isinstance(item, Mapping) and not isinstance(item, dict) and "options" not in self.spec.get(name, {}):
            return {}
        return item

    def check(self, value, args, kwargs):
        given = self.arguments(value, args, kwargs)
        checked = dict((name, self._checked(name, item)) for name, item in given.items()
                       if item is not None and not _undefined(item))
        result = self.validator.validate(checked)
        if result.error_messages:
            self._fail("; ".join(result.error_messages))

    def __call__(self, value, *args, **kwargs):
        self.check(value, args, kwargs)
        return self.function(value, *args, **kwargs)


def steps(functions):
    """{name: Step} for {name: function}, each with the spec its YAML file documents."""
    return dict((name, Step(name, function, documentation(name).get("options"))) for name, function in functions.items())
