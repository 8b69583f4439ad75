"""No plugin holds a Python program in a string (issue 46): code in a string literal is seen by no linter,
no coverage and no duplicate check. module_utils/slurm/runner.py held its supervisor, ~90 lines with
Popen, killpg and three sleep-poll loops, as a %-template; it is host/slurm_supervisor.py now, which
the runner zip ships as it is.

A string counts as a program when it, or the text a %-template or a str.format template renders
("%%" and "{{" undone), parses as Python with an import or a def and runs over MAX_LINES lines."""
from __future__ import annotations

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAX_LINES = 5
# A %-template's own fields (%(name)r, %s), which the rendering fills; "%%" is a literal percent.
PERCENT_FIELD = re.compile(r"(?<!%)%(\([A-Za-z_]\w*\))?[-#0 +]*[0-9.]*[srdifgx]")
FORMAT_FIELD = re.compile(r"(?<!{){[A-Za-z_0-9.]*(![rs])?(:[^{}]*)?}(?!})")


def _renderings(text):
    """The text, and what it renders to as a %-template and as a str.format template (each field as None)."""
    percent = PERCENT_FIELD.sub("None", text).replace("%%", "%")
    braces = FORMAT_FIELD.sub("None", text).replace("{{", "{").replace("}}", "}")
    return {text, percent, braces}


def is_program(text):
    if text.count("\n") < MAX_LINES:
        return False
    for candidate in _renderings(text):
        try:
            tree = ast.parse(candidate)
        except (SyntaxError, ValueError):
            continue
        if any(isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               for node in ast.walk(tree)):
            return True
    return False


def programs_in_strings(path):
    tree = ast.parse(path.read_text())
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and is_program(node.value)]


def test_no_plugin_file_holds_a_python_program_in_a_string():
    found = dict((str(path.relative_to(ROOT)), lines) for path in sorted((ROOT / "plugins").rglob("*.py"))
                 for lines in [programs_in_strings(path)] if lines)
    assert found == {}


def test_the_check_finds_a_program_and_leaves_prose_and_examples_alone():
    program = "import os\n\n\ndef main():\n    x = %(x)r\n    return os.getpid() %% x, '%%d' %% x\n\n\nmain()\n"
    assert is_program(program)
    assert is_program(program % {"x": 1})
    assert is_program(program.replace("%(x)r", "{x}").replace("%%", "%").replace("'%d'", "'{{}}'"))
    assert not is_program("    python3 canary.pyz ARGS_JSON\n\nruns the module.\n1. the child\n2. waits\n3. stops\n")
    assert not is_program("x = 1\ny = 2\nz = 3\nw = 4\nv = 5\nu = 6\n")  # no import or def: data, not a program
    assert not is_program("import os\ndef f():\n    pass\n")  # too short to be a program
