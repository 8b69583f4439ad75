"""Are diagnosis.json and diagnosis.md byte-identical to another commit's on every fixture bundle? (issue 27)

    source $(scripts/setup.sh)
    git worktree add /tmp/base bda071d && mkdir -p /tmp/base-link/ansible_collections/ckptio \
        && ln -sfn /tmp/base /tmp/base-link/ansible_collections/ckptio/nfs
    python tests/bench/same_diagnosis.py --against /tmp/base-link [EXTRA_BUNDLE ...]

Each bundle (tests/fixtures/captures/*, ../shared/samples/bundles/* when there, and the extra ones: a
bundle of 600 clients made by bench_diagnose_scale.build takes the forked reading) is diagnosed, read
all at once and streamed, by this tree and by the other commit's collection, each in its own Python;
the texts (or the error each raised) are compared. Exit 1 and the names of the bundles that differ
when any does. A refactoring check, not a test: the other commit is not in the repository's tests.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, os.pardir, "fixtures", "captures")
# ../shared/samples beside the main checkout (/work/main) or beside a helper's worktree's parent (/work/wt/NAME).
SHARED = [os.path.join(HERE, *([os.pardir] * up), "shared", "samples", "bundles") for up in (3, 4)]

# Run in a fresh Python with the collection to test first on sys.path: {bundle: [json, md] per reading}.
DIAGNOSE = """
import inspect, json, sys
from ansible_collections.ckptio.nfs.plugins.module_utils.host import parallel_map
from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
try:
    from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle_values import dump_json
except ImportError:  # a commit before issue 46 split module_utils/stats
    from ansible_collections.ckptio.nfs.plugins.module_utils.stats.bundle_values import dump_json
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose as _diagnose
# As diagnose_bundle calls it: since issue 46 the module passes the forked reader (host/parallel_map) in.
def diagnose(bundle):
    if "parallel" in inspect.signature(_diagnose).parameters:
        return _diagnose(bundle, parallel_map)
    return _diagnose(bundle)
from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.markdown import json_layout, render_markdown
from ansible_collections.ckptio.nfs.plugins.module_utils.host.proc_text import json_safe_text
texts = {}
for path in sys.argv[1:]:
    for stream in (True, False):
        try:
            result, text = json_safe_text(diagnose(load_bundle(path, stream=stream)),
                                          lambda value: dump_json(value, "diagnosis.json", **json_layout(value)))
            texts["%s stream=%s" % (path, stream)] = [text, render_markdown(result)]
        except Exception as exc:  # pylint: disable=broad-except
            texts["%s stream=%s" % (path, stream)] = ["%s: %s" % (type(exc).__name__, exc), ""]
json.dump(texts, sys.stdout)
"""


def diagnosed(collections, bundles):
    """{bundle and reading: [diagnosis.json text, diagnosis.md text]} by the collection under collections."""
    env = dict(os.environ, PYTHONPATH=collections)
    return json.loads(subprocess.run([sys.executable, "-c", DIAGNOSE] + bundles, check=True, capture_output=True,
                                     text=True, env=env).stdout)


def _without(texts, keys, sections):
    """The texts with diagnosis.json's top-level keys and diagnosis.md's sections (by title) left out: a change that adds
    a key or a section (issue 43's why_not and scope) is checked byte for byte on everything else."""
    if not keys and not sections:
        return texts
    kept = {}
    for name, (text, markdown) in texts.items():
        try:
            value = json.loads(text)
        except ValueError:
            kept[name] = [text, markdown]
            continue
        for key in keys:
            value.pop(key, None)
        lines, skipping = [], False
        for line in markdown.split("\n"):
            if line.startswith("## "):
                skipping = line[3:].strip() in sections
            if not skipping:
                lines.append(line)
        kept[name] = [json.dumps(value, sort_keys=True), "\n".join(lines)]
    return kept


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--against", required=True, metavar="ROOT", help="holds ansible_collections/ckptio/nfs of the other commit")
    parser.add_argument("--this", default=os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep)[0], metavar="ROOT",
                        help="holds ansible_collections/ckptio/nfs of this tree (default: the first of ANSIBLE_COLLECTIONS_PATH, "
                             "scripts/setup.sh's link to the worktree)")
    parser.add_argument("--drop-key", action="append", default=[], metavar="KEY",
                        help="compare without this top-level key of diagnosis.json (a key the change adds)")
    parser.add_argument("--drop-section", action="append", default=[], metavar="TITLE",
                        help="compare without this '## TITLE' section of diagnosis.md (a section the change adds)")
    parser.add_argument("bundles", nargs="*")
    args = parser.parse_args()
    shared = sorted(set(os.path.realpath(path) for root in SHARED for path in glob.glob(os.path.join(root, "*"))))
    bundles = [path for path in sorted(glob.glob(os.path.join(FIXTURES, "*"))) + shared + args.bundles
               if os.path.isfile(os.path.join(path, "context.yml"))]
    theirs = _without(diagnosed(args.against, bundles), args.drop_key, args.drop_section)
    ours = _without(diagnosed(args.this, bundles), args.drop_key, args.drop_section)
    differ = sorted(name for name in set(theirs) | set(ours) if theirs.get(name) != ours.get(name))
    print("%d bundles, %d readings: %s" % (len(bundles), len(ours), "byte-identical" if not differ else "DIFFER: " + ", ".join(differ)))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
