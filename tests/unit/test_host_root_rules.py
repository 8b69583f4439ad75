"""One host root, one fake host, records set up in __init__ (issue 27, "Done when").

- `grep` finds each of /proc/self/mountinfo, /sys/class/net and /proc/fs/nfsd once in plugins/:
  the code names a kernel path only in module_utils/host/host_root.py (HostRoot), /sys/class/net in the pure
  kernel_text/host_evidence.py that cites it and host_root roots (issue 46); docs, comments,
  docstrings and messages that quote a path for a reader are prose, not paths the code reads.
- No module-level constant in plugins/ names an /etc, /usr, /run or /lib path the code reads
  (issue 46): HostRoot names those search paths too, so a fake host is one root, not patched constants.
- No class in plugins/ whose attributes are first set outside __init__ (dataclasses build their own).
- The unit tests' fake hosts are one fixture (tests/unit/conftest.py fake_root): no other test
  points host_root.ROOT anywhere, nor patches a module's /proc or /sys constant.
"""
from __future__ import annotations

import ast
import glob
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
COLLECTION = os.path.normpath(os.path.join(HERE, "..", ".."))
HOST_ROOT = os.path.join("plugins", "module_utils", "host", "host_root.py")
# /sys/class/net is also cited by the pure floor (a link row's speed source, issue 46: no pure folder imports
# host/), so it is written there once and host_root.py roots that constant.
HOST_EVIDENCE = os.path.join("plugins", "module_utils", "kernel_text", "host_evidence.py")
NAMED_IN = {"/sys/class/net": HOST_EVIDENCE}
KERNEL_PATHS = ("/proc/self/mountinfo", "/sys/class/net", "/proc/fs/nfsd")


def _python_files(top):
    return sorted(os.path.relpath(path, COLLECTION)
                  for path in glob.glob(os.path.join(COLLECTION, top, "**", "*.py"), recursive=True))


def _tree(relative):
    with open(os.path.join(COLLECTION, relative)) as handle:
        return ast.parse(handle.read(), relative)


def _docstrings(tree):
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def path_literals(tree):
    """String constants (docstrings aside) that are a kernel path or begin with one, without a space
    (a message quoting a path is prose): the paths the code reads."""
    docstrings = _docstrings(tree)
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
            and not any(char.isspace() for char in node.value)
            and any(node.value == path or node.value.startswith(path + "/") for path in KERNEL_PATHS)]


def test_path_literals_tells_a_path_from_prose():
    tree = ast.parse('"""Reads /proc/self/mountinfo."""\nA = "/proc/fs/nfsd"\nB = "/sys/class/net/%s/speed"\n'
                     'C = "raise /proc/fs/nfsd/max_block_size on the server"\nD = "/proc/fs/nfsd/pool_stats snapshot"\n')
    assert path_literals(tree) == ["/proc/fs/nfsd", "/sys/class/net/%s/speed"]


def test_each_kernel_path_is_named_once_in_plugins():
    found = dict((path, []) for path in KERNEL_PATHS)
    for relative in _python_files("plugins"):
        for literal in path_literals(_tree(relative)):
            for path in KERNEL_PATHS:
                if literal == path or literal.startswith(path + "/"):
                    found[path].append("%s: %r" % (relative, literal))
    assert found == dict((path, ["%s: %r" % (NAMED_IN.get(path, HOST_ROOT), path)]) for path in KERNEL_PATHS)


HOST_DIRS = ("/etc/", "/usr/", "/run/", "/lib/", "/bin/")


def host_path_constants(tree):
    """Names of module-level constants whose value is a host path under HOST_DIRS, or a tuple of them."""
    found = []
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        values = node.value.elts if isinstance(node.value, (ast.Tuple, ast.List)) else [node.value]
        if any(isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value.startswith(HOST_DIRS)
               and not any(char.isspace() for char in value.value) for value in values):
            found.extend(ast.unparse(target) for target in node.targets)
    return found


def test_host_path_constants_are_found():
    tree = ast.parse('A = "/etc/nfs.conf"\nB = ("/usr/bin/dd", "/bin/dd")\nC = "/etc is prose"\n'
                     'def f():\n    D = "/etc/x"\nE = dict(default="/etc/fstab")\n')
    assert host_path_constants(tree) == ["A", "B"]


@pytest.mark.parametrize("relative", _python_files("plugins"))
def test_no_host_path_is_a_module_constant(relative):
    if relative == HOST_ROOT:
        return
    assert host_path_constants(_tree(relative)) == [], "name it in host_root.HostRoot"


def _is_dataclass(node):
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")) == "dataclass":
            return True
    return False


def _self_attributes(function):
    names = set()
    for node in ast.walk(function):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) and part.value.id == "self":
                    names.add(part.attr)
    return names


def late_attributes(tree):
    """(class, attribute, method) for each attribute a method other than __init__ sets first."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef) or _is_dataclass(node):
            continue
        methods = [item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]
        in_init = set().union(*[_self_attributes(item) for item in methods if item.name == "__init__"])
        for method in methods:
            if method.name != "__init__":
                found.extend((node.name, name, method.name) for name in sorted(_self_attributes(method) - in_init))
    return found


def test_late_attributes_finds_what_init_does_not_set():
    tree = ast.parse("class A:\n    def __init__(self):\n        self.a = 1\n    def run(self):\n        self.a += 1\n"
                     "        self.b = 2\n\n@dataclasses.dataclass\nclass D:\n    def f(self):\n        self.c = 3\n")
    assert late_attributes(tree) == [("A", "b", "run")]


@pytest.mark.parametrize("relative", _python_files("plugins"))
def test_no_attribute_is_first_set_outside_init(relative):
    assert late_attributes(_tree(relative)) == []


def host_patches(tree):
    """host_root.ROOT set, or a PROC_/SYS_ constant patched, by this code (strings run elsewhere are not code)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            found.extend(ast.unparse(target) for target in node.targets
                         if isinstance(target, ast.Attribute) and target.attr == "ROOT")
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("setattr", "object"):
            names = [arg.value for arg in node.args[1:2] if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
            found.extend(name for name in names if name == "ROOT" or name.startswith(("PROC_", "SYS_")))
    return found


def test_host_patches_are_found():
    tree = ast.parse('monkeypatch.setattr(host_root, "ROOT", "x")\nmock.patch.object(m, "PROC_MOUNTINFO", "y")\n'
                     'host_root.ROOT = "/tmp"\nRUNNER = "host_root.ROOT = x"\nmonkeypatch.setattr(m, "NFS_CONF", "z")\n')
    assert sorted(host_patches(tree)) == ["PROC_MOUNTINFO", "ROOT", "host_root.ROOT"]


@pytest.mark.parametrize("relative", _python_files("tests/unit"))
def test_fake_hosts_are_the_one_fixture(relative):
    if relative == os.path.join("tests", "unit", "conftest.py"):
        return
    if relative == os.path.join("tests", "unit", "test_host_root_rules.py"):
        return
    assert host_patches(_tree(relative)) == [], "use the fake_root fixture (tests/unit/conftest.py)"
