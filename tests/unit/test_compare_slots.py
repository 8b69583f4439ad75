"""compare_architectures.yml's option slots are written by scripts/compare-slots.py from compare/plan.py's
MAX_OPTIONS (issue 46: the playbook unrolled the validate playbook six times by hand). An import cannot
loop, so the slots stay in the playbook, but no one writes or edits them by hand."""
from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

import pytest
import yaml

from ansible_collections.ckptio.nfs.plugins.module_utils.compare import plan

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "compare-slots.py"


def load_script():
    spec = importlib.util.spec_from_file_location("compare_slots", str(SCRIPT))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_playbooks_slots_are_the_scripts_for_max_options():
    script = load_script()
    assert script.max_options() == plan.MAX_OPTIONS
    text = (ROOT / "playbooks" / "compare_architectures.yml").read_text()
    assert script.rewrite(text, plan.MAX_OPTIONS) == text, "run: python scripts/compare-slots.py"
    assert subprocess.run([sys.executable, str(SCRIPT), "--check"], check=False).returncode == 0


def test_each_slot_imports_the_validate_playbook_for_its_option_only():
    plays = yaml.safe_load((ROOT / "playbooks" / "compare_architectures.yml").read_text())
    imports = [play for play in plays if "ansible.builtin.import_playbook" in play]
    assert len(imports) == plan.MAX_OPTIONS
    check = [play for play in plays if play["name"].startswith("Check every option")][0]["tasks"][0]["vars"]
    for slot, play in enumerate(imports):
        assert play["name"] == "Option %d" % (slot + 1)
        assert play["ansible.builtin.import_playbook"] == "validate_checkpoint.yml"
        assert play["when"] == "hostvars['localhost'].ckptio_compare__options | length > %d" % slot
        # The pre-check's variables (YAML merge key), only the slot differs.
        assert play["vars"] == dict(dict((key, value) for key, value in check.items() if key != "canary_validation__check_only"),
                                    ckptio_compare__slot=slot)


def test_the_script_writes_any_number_of_slots_between_its_lines_and_refuses_a_playbook_without_them():
    script = load_script()
    text = "---\n- name: Before\n  hosts: localhost\n  vars:\n    x: &ckptio_compare_option\n      a: 1\n" + script.BEGIN + script.END
    plays = yaml.safe_load(script.rewrite(text, 2))
    assert [play.get("name") for play in plays] == ["Before", "Option 1", "Option 2"]
    assert plays[2]["vars"] == {"a": 1, "ckptio_compare__slot": 1}
    assert script.rewrite(script.rewrite(text, 2), 3).count("ansible.builtin.import_playbook") == 3
    with pytest.raises(ValueError):
        script.rewrite("---\n- name: Before\n", 2)
