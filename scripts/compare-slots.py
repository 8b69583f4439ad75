# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write the option slots of playbooks/compare_architectures.yml from compare/plan.py (issue 46).

    python scripts/compare-slots.py [--check]

Each option of a comparison is a whole validate_checkpoint.yml run (its plays over the servers, the
clients and the controller, in order), so the comparison imports that playbook once per option. An
import cannot loop (import_playbook is static: no loop, no templated name), so the playbook holds one
import per slot, under a `when` that skips a slot with no option. This script writes them, between
the playbook's BEGIN and END lines, from MAX_OPTIONS in plugins/module_utils/compare/plan.py (the
one number of options the step compare_options, behind ckptio.nfs.internal, accepts); tests/unit/test_compare_slots.py
fails when the playbook differs from what it writes. --check writes nothing and exits 1 on a difference.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAYBOOK = os.path.join(ROOT, "playbooks", "compare_architectures.yml")
PLAN = os.path.join(ROOT, "plugins", "module_utils", "compare", "plan.py")
BEGIN = "# BEGIN option slots: written by scripts/compare-slots.py from compare/plan.py MAX_OPTIONS; do not edit by hand\n"
END = "# END option slots\n"
SLOT = """- name: Option {number}
  ansible.builtin.import_playbook: validate_checkpoint.yml
  when: hostvars['localhost'].ckptio_compare__options | length > {slot}
  vars:
    <<: *ckptio_compare_option
    ckptio_compare__slot: {slot}
"""


def max_options(plan_path=PLAN):
    """MAX_OPTIONS of compare/plan.py, read from its source (this script imports nothing of the collection)."""
    with open(plan_path) as stream:
        tree = ast.parse(stream.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(target, "id", None) for target in node.targets] == ["MAX_OPTIONS"]:
            return ast.literal_eval(node.value)
    raise ValueError("%s has no MAX_OPTIONS" % plan_path)


def slots(count):
    """The playbook's imports for count option slots, BEGIN and END lines included."""
    return BEGIN + "\n".join(SLOT.format(number=slot + 1, slot=slot) for slot in range(count)) + END


def rewrite(text, count):
    """The playbook's text with its slots written for count options."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ValueError("the playbook needs one BEGIN line and one END line after it:\n%s%s" % (BEGIN, END))
    return text[:text.index(BEGIN)] + slots(count) + text[text.index(END) + len(END):]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the playbook differs")
    options = parser.parse_args(argv)
    with open(PLAYBOOK) as stream:
        text = stream.read()
    wanted = rewrite(text, max_options())
    if wanted == text:
        return 0
    if options.check:
        sys.stderr.write("%s: its option slots differ from scripts/compare-slots.py's; run it without --check\n" % PLAYBOOK)
        return 1
    with open(PLAYBOOK + ".part", "w") as stream:
        stream.write(wanted)
    os.replace(PLAYBOOK + ".part", PLAYBOOK)
    return 0


if __name__ == "__main__":
    sys.exit(main())
