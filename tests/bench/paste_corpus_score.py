"""Score the paste path (ckptio.nfs.paste / saved_stats_bundle partial=true) on the paste corpus (issue 44).

For every entry folder NNN_name/ of the corpus (default tests/fixtures/paste_corpus) this reads
paste.txt with the paste path's pure entry points, exactly as saved_stats_bundle does with
partial=true:

    reading = readings.read_file("paste.txt", text)           # layout.clean + recognise + parse
    diagnosis = partial.partial_diagnosis([reading] + readings.pair_readings([reading]))

and compares the result with source.yml's expected.layer_or_fault, the layer or fault the thread
itself concluded (not what any tool says). The mapping, kept deliberately simple:

- refused: partial_diagnosis returned None (the text is unrecognised, or recognised but holds no
  figure: the module would refuse it), or it returned a diagnosis whose limiting_layer is "none"
  (the paste told something but pointed at no layer);
- right: the named limiting_layer equals expected.layer_or_fault. Two coarse equivalences, because
  the paste path has no finer name for them: expected "network_loss" is right when the path names
  "network" (its network suspects are retransmissions, timeouts and outages), and expected
  "metadata" is right when it names "access_pattern" (its metadata signal is the op mix's metadata
  share, filed under access_pattern);
- what is named is what the first screen leads with: the first fault the diagnosis lists (by its
  kind: hang -> fault_hang, bug -> fault_bug, misconfiguration, a storage fault -> server_storage,
  a broken path -> network), else a training log's checkpoint window judged against a target
  (training_window), else the suspected limiting layer;
- wrong: anything else named. Expected "unknown" is therefore wrong whenever anything is named:
  the score says how often a paste is read as the thread read it, not how the path could be excused.

One line per entry: "NNN_name  kind  expected  -> named (confidence)  RIGHT|WRONG|REFUSED  [why]",
then "right N, wrong N, refused N of N", then how many of those entries expect "unknown" (said apart, still
counted as above). No network, no Ansible: only the collection's
module_utils, imported as ansible_collections.ckptio.nfs. Run it from anywhere:

    mkdir -p /tmp/corpus-ac/ansible_collections/ckptio && ln -sfn "$PWD" /tmp/corpus-ac/ansible_collections/ckptio/nfs
    PYTHONPATH=/tmp/corpus-ac python tests/bench/paste_corpus_score.py [CORPUS_DIR]

(when ansible_collections.ckptio.nfs does not import, the script makes that link itself under the
system's temporary directory, pointing at the checkout it lives in).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_CORPUS = os.path.join(CHECKOUT, "tests", "fixtures", "paste_corpus")
EQUIVALENT = {"network_loss": {"network"}, "metadata": {"access_pattern"}}
# A fault's kind (diagnosis.json faults[].kind, paste/more_kinds.py) in the corpus' terms.
FAULT_KINDS = {"hang": "fault_hang", "bug": "fault_bug", "misconfiguration": "misconfiguration",
               "server_storage": "server_storage", "path": "network"}


def _import_paste():
    """(readings, partial) of this checkout, linking it as ansible_collections.ckptio.nfs when it does not import."""
    try:
        from ansible_collections.ckptio.nfs.plugins.module_utils.paste import partial, readings
        return readings, partial
    except ImportError:
        pass
    root = os.path.join(tempfile.gettempdir(), "paste-corpus-ac")
    parent = os.path.join(root, "ansible_collections", "ckptio")
    os.makedirs(parent, exist_ok=True)
    link = os.path.join(parent, "nfs")
    if not os.path.islink(link):
        os.symlink(CHECKOUT, link)
    sys.path.insert(0, root)
    from ansible_collections.ckptio.nfs.plugins.module_utils.paste import partial, readings
    return readings, partial


def score_entry(readings, partial, folder):
    """(named layer or None, confidence or None, verdict, why) for one corpus folder."""
    with open(os.path.join(folder, "source.yml"), encoding="utf-8") as handle:
        source = yaml.safe_load(handle)
    expected = source["expected"]["layer_or_fault"]
    with open(os.path.join(folder, "paste.txt"), "rb") as handle:
        text = handle.read().decode("utf-8", errors="replace")
    reading = readings.read_file("paste.txt", text)
    found = [reading] + readings.pair_readings([reading])
    diagnosis = partial.partial_diagnosis(found)
    if diagnosis is None:
        return source, expected, None, None, "refused", partial.refusal(found)
    named = _named(diagnosis)
    if named is None:
        return source, expected, None, diagnosis["confidence"], "refused", "read as %s; no signal points at a layer" % reading["taken_for"]
    right = named == expected or named in EQUIVALENT.get(expected, ())
    return source, expected, named, diagnosis["confidence"], "right" if right else "wrong", "read as %s" % reading["taken_for"]


def _named(diagnosis):
    """What the first screen leads with, in corpus terms: the first fault (its kind: fault_hang, fault_bug,
    misconfiguration; a storage fault as server_storage), else a training log's window (training_window), else
    the suspected limiting layer; None when it names nothing."""
    for fault in diagnosis.get("faults") or []:
        kind = FAULT_KINDS.get(fault.get("kind"))
        if kind:
            return kind
    if (diagnosis.get("window") or {}).get("kind") == "training_log" and diagnosis["verdict"] != "no_window":
        return "training_window"
    return None if diagnosis["limiting_layer"] == "none" else diagnosis["limiting_layer"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("corpus", nargs="?", default=DEFAULT_CORPUS, help="the corpus folder (default: %(default)s)")
    args = parser.parse_args(argv)
    readings, partial = _import_paste()
    folders = sorted(os.path.join(args.corpus, name) for name in os.listdir(args.corpus)
                     if os.path.isdir(os.path.join(args.corpus, name)))
    totals = {"right": 0, "wrong": 0, "refused": 0}
    unknown = {"right": 0, "wrong": 0, "refused": 0}
    for folder in folders:
        source, expected, named, confidence, verdict, why = score_entry(readings, partial, folder)
        totals[verdict] += 1
        if expected == "unknown":
            unknown[verdict] += 1
        print("%-48s %-12s %-16s -> %-16s %-6s %-7s %s" % (
            os.path.basename(folder)[:48], source["kind"], expected, named or "-", confidence or "", verdict.upper(), why[:140]))
    print("right %d, wrong %d, refused %d of %d" % (totals["right"], totals["wrong"], totals["refused"], len(folders)))
    # Said apart, not scored apart: an entry whose thread concluded nothing can never be right.
    print("of which expected unknown (the thread concluded nothing; none can be right): %d - named %d, refused %d" % (
        sum(unknown.values()), unknown["wrong"], unknown["refused"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
