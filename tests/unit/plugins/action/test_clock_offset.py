"""The clock_offset action: readings over the connection, the reader fallback, option errors."""
from __future__ import annotations

import contextlib
from unittest import mock

import pytest

from ansible.errors import AnsibleActionFail
from ansible.playbook.task import Task

from ansible_collections.ckptio.nfs.plugins.action import clock_offset


def make_action(args, outputs):
    """An ActionModule whose connection answers each command from `outputs` (a list of (cmd-prefix, rc, stdout))."""
    task = Task()
    task.args = dict(args)
    task.check_mode = False
    action = clock_offset.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None, shared_loader_obj=None)
    calls = []
    answers = list(outputs)

    def execute(cmd, sudoable=True):
        calls.append(cmd)
        prefix, rc, stdout = answers.pop(0)
        assert cmd.startswith(prefix), (cmd, prefix)
        return {"rc": rc, "stdout": stdout, "stderr": ""}

    action._low_level_execute_command = execute
    return action, calls


@pytest.fixture(autouse=True)
def no_base_run():
    with mock.patch("ansible.plugins.action.ActionBase.run", return_value={}):
        yield


@contextlib.contextmanager
def controller_clock(*values, **monotonic):
    """time.time() gives values (before, after of each reading); time.monotonic() the same spans unless
    monotonic=[...] is given (a wall clock that steps while the monotonic one runs on)."""
    with mock.patch.object(clock_offset.time, "time", side_effect=list(values)), \
            mock.patch.object(clock_offset.time, "monotonic", side_effect=list(monotonic.get("monotonic", values))):
        yield


def test_takes_the_samples_and_keeps_the_tightest():
    action, calls = make_action({"samples": 3}, [("date", 0, "98.8\n"), ("date", 0, "198.731\n"), ("date", 0, "298.75\n")])
    with controller_clock(100.0, 100.2, 200.0, 200.002, 300.0, 300.1):
        result = action.run(task_vars={})
    assert calls == ["date +%s.%N"] * 3
    assert result["offset_seconds"] == pytest.approx(-1.27)
    assert result["within_bound"] is False and result["changed"] is False
    assert result["reader"] == "date +%s.%N"
    assert len(result["readings"]) == 3
    assert any("chrony" in warning for warning in result["warnings"])


def test_falls_back_to_python_where_date_has_no_nanoseconds():
    action, calls = make_action({"samples": 2}, [("date", 0, "100.N\n"), ("python3", 0, "100.0005\n"), ("python3", 0, "200.0\n")])
    with controller_clock(100.0, 100.001, 100.0, 100.001, 200.0, 200.001):
        result = action.run(task_vars={})
    assert calls[0].startswith("date") and all(call.startswith("python3") for call in calls[1:])
    assert result["within_bound"] is True and "warnings" not in result


def test_no_reader_works_fails_naming_both():
    action, _calls = make_action({}, [("date", 127, ""), ("python3", 127, "")])
    with controller_clock(1.0, 1.1, 2.0, 2.1):
        with pytest.raises(AnsibleActionFail, match="cannot read the host's clock.*date.*python3"):
            action.run(task_vars={})


@pytest.mark.parametrize("args, match", [
    ({"samples": 0}, "samples must be between 1 and 50"),
    ({"samples": "many"}, "samples must be an integer"),
    ({"bound": 0}, "bound must be above 0"),
    ({"bound": "x"}, "bound must be a number"),
    ({"samples": True}, "samples must be an integer, got True"),
    ({"samples": False}, "samples must be an integer, got False"),
    ({"samples": 2.5}, "samples must be an integer, got 2.5"),
    ({"bound": True}, "bound must be a number"),
    ({"bound": float("inf")}, "bound must be above 0"),
])
def test_bad_options_fail_naming_the_option_before_any_reading(args, match):
    action, calls = make_action(args, [])
    with pytest.raises(AnsibleActionFail, match=match):
        action.run(task_vars={})
    assert calls == []


def test_a_reading_during_which_the_controller_clock_stepped_back_is_left_out_and_named():
    """The controller's clock steps back 1 s during the second reading: that bracket (after < before) is dropped."""
    action, _calls = make_action({"samples": 3}, [("date", 0, "98.8\n"), ("date", 0, "198.731\n"), ("date", 0, "298.75\n")])
    with controller_clock(100.0, 100.2, 200.0, 199.0, 300.0, 300.1, monotonic=[0.0, 0.2, 1.0, 1.002, 2.0, 2.1]):
        result = action.run(task_vars={})
    assert [reading["controller_before"] for reading in result["readings"]] == [100.0, 300.0]
    assert result["offset_seconds"] == pytest.approx(-1.3)
    assert any("reading 2" in warning and "stepped back by 1.002 s" in warning for warning in result["warnings"])


def test_a_small_step_back_that_would_look_like_the_tightest_reading_is_left_out():
    """Stepped back 0.05 s in a 0.051 s reading: the wall clock says 0.001 s, the tightest bracket, and it lies."""
    action, _calls = make_action({"samples": 2}, [("date", 0, "100.0\n"), ("date", 0, "205.0\n")])
    with controller_clock(100.0, 100.2, 200.0, 200.001, monotonic=[0.0, 0.2, 1.0, 1.051]):
        result = action.run(task_vars={})
    assert result["offset_seconds"] == pytest.approx(-0.1)
    assert any("reading 2" in warning and "back by 0.050 s" in warning for warning in result["warnings"])


def test_clock_stepping_back_during_every_reading_fails_cleanly():
    action, _calls = make_action({"samples": 2}, [("date", 0, "100.0\n"), ("date", 0, "200.0\n")])
    with controller_clock(100.0, 99.0, 200.0, 199.5, monotonic=[0.0, 0.1, 1.0, 1.1]):
        with pytest.raises(AnsibleActionFail, match="stepped during every reading.*reading 1.*reading 2"):
            action.run(task_vars={})


def test_a_bracket_that_ends_before_it_begins_is_an_action_failure_not_a_value_error():
    """Even if a backwards bracket got past the step check, best_offset's ValueError becomes a clean failure."""
    action, _calls = make_action({"samples": 1}, [("date", 0, "100.0\n")])
    with controller_clock(100.0, 99.0), mock.patch.object(clock_offset.clock, "steady_brackets",
                                                          return_value=([(100.0, 100.0, 99.0)], [])):
        with pytest.raises(AnsibleActionFail, match="cannot measure the host's clock offset.*went back"):
            action.run(task_vars={})
