"""Floors run one way (issue 46, "Done when"): what `farm-studio look` draws, kept as tests that can fail.

A floor is a folder of plugins/module_utils (a subfolder counts as its folder: host/'s canary I/O is host/) or
plugins/plugin_utils. An edge is an import, at the top of a file or inside a function, of another floor's module.
- Pure floors are the ground and import nothing of host/ (docs/architecture.md "The floors"): when a pure
  function needs I/O, the caller passes it in (diagnosis/run.read_run takes host/parallel_map from its module).
- No two floors import each other: a pair is one floor, or one of the two runs back up.
- Every floor is classified below: a new folder fails test_every_floor_is_classified until it is listed as pure
  or as host, so nobody adds a floor without saying which it is.
- Nothing under module_utils or plugin_utils imports a module, a filter or an action plugin (they are the top).
"""
from __future__ import annotations

import ast
import glob
import os

HERE = os.path.dirname(os.path.abspath(__file__))
COLLECTION = os.path.normpath(os.path.join(HERE, "..", ".."))
PLUGINS = "ansible_collections.ckptio.nfs.plugins."

# The ground: parsers, plans, the bundle's schema, the diagnosis, the report; no file or process I/O of their own.
PURE = ("bundle", "canary", "compare", "config", "diagnosis", "kernel_text", "paste", "prometheus", "report", "slurm", "stats",
        "telemetry")
# The host adapters: files, /proc, /sys, processes (and any subfolder of host/, such as the canary's I/O).
HOST = ("host",)
# Above module_utils: code the plugins share; it may import any floor, none may import it.
ABOVE = ("plugin_utils",)
# No edge runs back up (the last, config/tuning_flow.py -> host/atomic_file, went with the lock handed in by the
# modules, issue 46). A pair listed here would have to be there: the tests fail on a listed pair that is gone.
KNOWN_UNTIL_HOSTROOT = set()
TOP = ("action", "filter", "modules")


def floor_of(relative):
    """The floor of a file under plugins/ ("module_utils/host/canary/run.py" -> "host"), None for the top and docs."""
    parts = relative.replace(os.sep, "/").split("/")
    if parts[0] == "module_utils" and len(parts) > 2:
        return parts[1]
    if parts[0] == "plugin_utils":
        return "plugin_utils"
    return None


def imported_floor(name):
    """The floor (or top: "modules", "filter", "action") of an imported module name, None outside plugins/."""
    if not name.startswith(PLUGINS):
        return None
    parts = name[len(PLUGINS):].split(".")
    if parts[0] == "module_utils":
        return parts[1] if len(parts) > 1 else None
    return parts[0]


def imported_names(tree):
    """Every absolute module name a file imports (a name imported from a package counts as package.name)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.extend("%s.%s" % (node.module, alias.name) for alias in node.names)
    return names


def floors_on_disk(plugins):
    return sorted(set(name for name in os.listdir(os.path.join(plugins, "module_utils"))
                      if glob.glob(os.path.join(plugins, "module_utils", name, "**", "*.py"), recursive=True))
                  | {"plugin_utils"})


def edges(plugins):
    """{(floor, imported floor or top): ["file -> module", ...]} between different floors."""
    found = {}
    for path in sorted(glob.glob(os.path.join(plugins, "**", "*.py"), recursive=True)):
        relative = os.path.relpath(path, plugins)
        source = floor_of(relative)
        if source is None:
            continue
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), relative)
        for name in imported_names(tree):
            target = imported_floor(name)
            if target is not None and target != source:
                found.setdefault((source, target), []).append("%s -> %s" % (relative, name[len(PLUGINS):]))
    return found


def two_way_pairs(found):
    return sorted((low, high) for low, high in found if low < high and (high, low) in found)


def test_the_edges_are_found_in_functions_and_subfolders(tmp_path):
    plugins = tmp_path / "plugins"
    (plugins / "module_utils" / "host" / "canary").mkdir(parents=True)
    (plugins / "module_utils" / "stats").mkdir(parents=True)
    (plugins / "module_utils" / "host" / "canary" / "run.py").write_text(
        "from ansible_collections.ckptio.nfs.plugins.module_utils.stats import human\n")
    (plugins / "module_utils" / "stats" / "human.py").write_text(
        "def f():\n    import ansible_collections.ckptio.nfs.plugins.module_utils.host.canary.run\n")
    found = edges(str(plugins))
    assert sorted(found) == [("host", "stats"), ("stats", "host")]
    assert two_way_pairs(found) == [("host", "stats")]
    assert floors_on_disk(str(plugins)) == ["host", "plugin_utils", "stats"]


def test_every_floor_is_classified():
    """A folder added to module_utils is listed as pure or host here (and in docs/architecture.md's table)."""
    listed = sorted(PURE + HOST + ABOVE)
    assert floors_on_disk(os.path.join(COLLECTION, "plugins")) == listed


def test_no_pure_floor_imports_host():
    found = edges(os.path.join(COLLECTION, "plugins"))
    up = dict((pair, files) for pair, files in found.items() if pair[0] in PURE and pair[1] in HOST + ABOVE)
    assert sorted(set(up) - KNOWN_UNTIL_HOSTROOT) == [], up
    # The known edge is still there: delete KNOWN_UNTIL_HOSTROOT once it is gone.
    assert sorted(KNOWN_UNTIL_HOSTROOT - set(up)) == []


def test_no_two_floors_import_each_other():
    found = edges(os.path.join(COLLECTION, "plugins"))
    pairs = two_way_pairs(found)
    listed = dict((pair, found[pair] + found[pair[::-1]]) for pair in pairs)
    assert sorted(set(pairs) - KNOWN_UNTIL_HOSTROOT) == [], listed
    assert sorted(KNOWN_UNTIL_HOSTROOT - set(pairs)) == []


def test_nothing_below_imports_a_plugin():
    found = edges(os.path.join(COLLECTION, "plugins"))
    assert dict((pair, files) for pair, files in found.items() if pair[1] in TOP) == {}
