"""Benchmark (issue 27): `ansible-playbook ckptio.nfs.diagnose` on bundles of 512, 4,096 and 16,384
clients, side by side in one run: wall time, the peak RSS of the largest process (the module or the
controller holding its result) and the size of diagnosis.json.

    source $(scripts/setup.sh)
    python tests/bench/bench_diagnose_scale.py [--clients 512 4096 16384] [--dir /var/tmp/bench] [--link]
    python tests/bench/bench_diagnose_scale.py --profile 4096      # cProfile of load + diagnose in-process
    python tests/bench/bench_diagnose_scale.py --phases 16384 --link   # each step's time per client, each phase's
    python tests/bench/bench_diagnose_scale.py --against /tmp/base-link   # another commit's collection side by side

--against ROOT: ROOT holds ansible_collections/ckptio/nfs of another commit (a `git worktree` linked
there); each size is diagnosed by it first and then by this tree, on the same bundle, and the last
column says whether the two diagnosis.json and diagnosis.md are byte-identical.

Each bundle is built in a temporary directory from copies of one real capture
(tests/fixtures/captures/healthy, two clients and one server) as the current writer writes it (its
probe.json re-written through bundle_part.host_files: iperf3's raw output in probe_iperf3.json, which
the diagnosis does not read; the fixture keeps the older layout the reader still takes): client I is a copy of the capture's
client I mod 2 under the name cNNNNN, the server and context.yml are the capture's own (context.yml's
`canary.clients` is set to the new count). --link hard-links instead of copying (the same bytes, built
in a fraction of the time; the reader sees regular files either way). Built once, then each size is
diagnosed in turn; the files are removed at the end.

Peak RSS is getrusage(RUSAGE_CHILDREN).ru_maxrss of a fresh child per size: the largest reaped
descendant (ansible-playbook, its worker, or the module's Python). Not a pytest test: timings never go
in tests. The figures measured on this machine are in tests/bench/README.md.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE = os.path.join(HERE, os.pardir, "fixtures", "captures", "healthy")


def written_capture(root):
    """CAPTURE as the current writer writes it, in root/capture (made once): each client's probe.json
    re-written through the one bundle writer (module_utils/bundle/bundle_part.host_files), which puts
    iperf3's raw output in probe_iperf3.json since issue 27, and its figures.json as the writer adds it
    (diagnosis/host_figures.py); every other file is the capture's own."""
    import json
    from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle_part
    written = os.path.join(root, "capture")
    if os.path.isdir(written):
        return written
    shutil.copytree(CAPTURE, written)
    from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
    mount_point = load_bundle(written, stream=True)["context"]["mount_point"]
    for host in os.listdir(os.path.join(written, "clients")):
        directory = os.path.join(written, "clients", host)
        with open(os.path.join(directory, "probe.json"), encoding="utf-8") as handle:
            record = json.load(handle)
        for item in bundle_part.host_files("clients", records={"probe": record}) + _figures(directory, mount_point):
            with open(os.path.join(directory, item["name"]), "w", encoding="utf-8") as handle:
                handle.write(item["content"])
    return written


def _figures(directory, mount_point):
    """[figures.json] of a client directory as the writer (ckptio.nfs.bundle_part) writes it with the
    client's statistics files and canary.json, from the same texts; [] where the writer leaves it out."""
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import host_figures
    from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle import CLIENT_FILES
    files = []
    for key, name in CLIENT_FILES.items():
        if key not in ("probe", "capture") and os.path.exists(os.path.join(directory, name)):
            with open(os.path.join(directory, name), encoding="utf-8") as handle:
                files.append({"name": name, "content": handle.read()})
    figures = host_figures.figures_file(files, {"mounts": [{"mount_point": mount_point}]})
    return [figures] if figures else []


def build(root, clients, link, as_captured=False, capture=None):
    """A bundle of `clients` clients in root/bundle-N from copies of CAPTURE as the writer writes it
    (as_captured: as the fixture holds it, probe.json with iperf3's raw output inside; capture: that
    bundle's files as they are instead); its path."""
    capture = capture or (CAPTURE if as_captured else written_capture(root))
    bundle = os.path.join(root, "bundle-%d" % clients)
    os.makedirs(os.path.join(bundle, "clients"))
    shutil.copytree(os.path.join(capture, "servers"), os.path.join(bundle, "servers"))
    with open(os.path.join(capture, "context.yml"), encoding="utf-8") as handle:
        context = handle.read()
    # context.yml says how many clients ran the canary; the copies did.
    context = context.replace("  clients: 2\n", "  clients: %d\n" % clients)
    with open(os.path.join(bundle, "context.yml"), "w", encoding="utf-8") as handle:
        handle.write(context)
    sources = sorted(os.listdir(os.path.join(capture, "clients")))
    copy = os.link if link else shutil.copyfile
    for index in range(clients):
        source = os.path.join(capture, "clients", sources[index % len(sources)])
        target = os.path.join(bundle, "clients", "c%05d" % index)
        os.mkdir(target)
        for name in os.listdir(source):
            copy(os.path.join(source, name), os.path.join(target, name))
    return bundle


def run_playbook(bundle, output, collections=None):
    """(seconds, CPU seconds, peak RSS MiB, return code) of one `ansible-playbook ckptio.nfs.diagnose` in a fresh child.

    CPU seconds: user + system of every process of the run (ansible-playbook, its workers, the
    module and its forked readers: RUSAGE_CHILDREN counts every reaped descendant), which the load
    of other work on the machine disturbs far less than the wall time."""
    # ansible-playbook resolves ckptio.nfs through ANSIBLE_COLLECTIONS_PATH only (not a PYTHONPATH set to build the bundles).
    env = dict((name, value) for name, value in os.environ.items() if name != "PYTHONPATH")
    if collections:
        # Put first, the other commit's ckptio.nfs is the one ansible-playbook resolves.
        env["ANSIBLE_COLLECTIONS_PATH"] = os.pathsep.join([collections, env.get("ANSIBLE_COLLECTIONS_PATH", "")])
    argv = ["ansible-playbook", "ckptio.nfs.diagnose", "-e", "ckptio_bundle=%s" % bundle, "-e", "ckptio_output_dir=%s" % output]
    # A fresh Python per size, so ru_maxrss of RUSAGE_CHILDREN is this size's peak only.
    probe = ("import resource, subprocess, sys, time; t = time.monotonic(); "
             "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode; "
             "usage = resource.getrusage(resource.RUSAGE_CHILDREN); "
             "print(time.monotonic() - t, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, rc)")
    out = subprocess.run([sys.executable, "-c", probe] + argv, check=True, capture_output=True, text=True, env=env).stdout.split()
    return float(out[0]), float(out[1]), int(out[2]) / 1024.0, int(out[3])


def profile(clients, root, link, as_captured=False, capture=None):
    """cProfile of load_bundle + diagnose + the JSON text, in this process, top 25 by cumulative time."""
    import cProfile
    import pstats
    from ansible_collections.ckptio.nfs.plugins.modules import diagnose_bundle  # noqa: F401 the module's imports
    from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
    from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle_values import dump_json
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.markdown import json_layout, render_markdown
    from ansible_collections.ckptio.nfs.plugins.module_utils.host.proc_text import json_safe_text
    from ansible_collections.ckptio.nfs.plugins.module_utils.host.gc_pause import paused_gc
    from ansible_collections.ckptio.nfs.plugins.module_utils.host import parallel_map
    bundle = build(root, clients, link, as_captured, capture)

    def work():
        # As diagnose_bundle does it: the cyclic collector paused while the result is built.
        with paused_gc():
            result, text = json_safe_text(diagnose(load_bundle(bundle, stream=True), parallel_map),
                                          lambda value: dump_json(value, "diagnosis.json", **json_layout(value)))
            render_markdown(result)
        return len(text)

    profiler = cProfile.Profile()
    size = profiler.runcall(work)
    print("diagnosis.json %.1f MB; peak RSS %.0f MiB" % (size / 1e6, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


def phases(clients, root, link, capture=None):
    """Where the time goes, in this process (time.process_time): per client, each step a forked reader takes
    (clients read one after the other), then the whole run as the module does it (read_run with its forked
    readers: wall and this process's CPU; diagnose_run, diagnosis.json's text and diagnosis.md: wall)."""
    import json
    from ansible_collections.ckptio.nfs.plugins.module_utils.host import file_read
    from ansible_collections.ckptio.nfs.plugins.module_utils.host.bundle_reader import load_bundle
    from ansible_collections.ckptio.nfs.plugins.module_utils.host.gc_pause import paused_gc
    from ansible_collections.ckptio.nfs.plugins.module_utils.host import parallel_map
    from ansible_collections.ckptio.nfs.plugins.module_utils.host.proc_text import json_safe_text
    from ansible_collections.ckptio.nfs.plugins.module_utils.bundle import bundle_values
    from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle import CLIENT_FILES, FIGURES_FILE
    from ansible_collections.ckptio.nfs.plugins.module_utils.bundle.bundle_values import dump_json
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import host_figures, run
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis import client_row
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.client_evidence import client_evidence
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.diagnose import diagnose_run
    from ansible_collections.ckptio.nfs.plugins.module_utils.diagnosis.markdown import json_layout, render_markdown
    bundle = build(root, clients, link, capture=capture)
    directory = os.path.join(bundle, "clients")
    hosts = sorted(os.listdir(directory))
    mount_point = load_bundle(bundle, stream=True)["context"].get("mount_point")
    step = {}

    def timed(name, function, *arguments):
        started = time.process_time()
        value = function(*arguments)
        step[name] = step.get(name, 0.0) + time.process_time() - started
        return value

    for host in hosts:
        texts = dict((key, timed("reading its files", file_read.read, os.path.join(directory, host, name)))
                     for key, name in CLIENT_FILES.items() if os.path.exists(os.path.join(directory, host, name)))
        files = {}
        for key, text in texts.items():
            if CLIENT_FILES[key].endswith(".json"):
                value = timed("json.loads", json.loads, text)
                timed("the schema check", bundle_values._fits, value, bundle_values.schema_of(CLIENT_FILES[key]))  # pylint: disable=protected-access
                files[key] = value
            else:
                files[key] = text
        timed("the mount view (mountstats delta, D-state, sunrpc)", client_row._client_view, host, files, mount_point)  # pylint: disable=protected-access
        timed("the host evidence", client_evidence, host, files, 10.0)
        figures_path = os.path.join(directory, host, FIGURES_FILE)
        if os.path.exists(figures_path):
            # What the reader does instead of the three steps above when the client's figures.json is used.
            text = timed("figures: reading figures.json", file_read.read, figures_path)
            timed("figures: the SHA-256 of its sources", host_figures._sources, texts)  # pylint: disable=protected-access
            value = timed("figures: json.loads", json.loads, text)
            timed("figures: the schema check", bundle_values._fits, value, bundle_values.schema_of(FIGURES_FILE))  # pylint: disable=protected-access
            timed("figures: the keys the layers read", host_figures._complete, value["row"])  # pylint: disable=protected-access
    for name, seconds in step.items():
        print("per client, %s: %.3f ms" % (name, seconds / clients * 1000))
    from_files = sum(seconds for name, seconds in step.items() if not name.startswith("figures:"))
    print("per client, in all from its files: %.3f ms" % (from_files / clients * 1000))
    if any(name.startswith("figures:") for name in step):
        from_figures = step["reading its files"] + sum(seconds for name, seconds in step.items() if name.startswith("figures:"))
        print("per client, in all from figures.json (its files read, the figures steps): %.3f ms" % (from_figures / clients * 1000))
    with paused_gc():
        wall, cpu = time.monotonic(), time.process_time()
        the_run = run.read_run(load_bundle(bundle, stream=True), parallel_map)
        print("read_run (forked readers): %.1f s wall, %.1f s of this process's CPU; peak RSS %.0f MiB"
              % (time.monotonic() - wall, time.process_time() - cpu, _peak_mib()))
        wall = time.monotonic()
        result = diagnose_run(the_run)
        print("diagnose_run: %.1f s; peak RSS %.0f MiB" % (time.monotonic() - wall, _peak_mib()))
        wall = time.monotonic()
        result, _text = json_safe_text(result, lambda value: dump_json(value, "diagnosis.json", **json_layout(value)))
        print("diagnosis.json's text: %.1f s; peak RSS %.0f MiB" % (time.monotonic() - wall, _peak_mib()))
        wall = time.monotonic()
        render_markdown(result)
        print("diagnosis.md: %.1f s" % (time.monotonic() - wall))


def _peak_mib():
    """This process's peak RSS so far, MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measured_row(name, clients, bundle, output, collections, other):
    """One table row: `name` diagnosing `bundle` into output; other: the output to compare with (if there)."""
    os.mkdir(output)
    load = "%.1f" % os.getloadavg()[0]
    seconds, cpu, rss, code = run_playbook(bundle, output, collections)
    if code != 0:
        return "| %s | %d | failed (ansible-playbook exit %d) | | | | | %s | |" % (name, clients, code, load)
    json_mb = os.path.getsize(os.path.join(output, "diagnosis.json")) / 1e6
    md_kb = os.path.getsize(os.path.join(output, "diagnosis.md")) / 1e3
    same = "-"
    if other and other != output and os.path.isdir(other):
        same = "yes" if all(_bytes(os.path.join(output, part)) == _bytes(os.path.join(other, part))
                            for part in ("diagnosis.json", "diagnosis.md")) else "NO"
    return "| %s | %d | %.1f | %.1f | %.0f | %.1f | %.1f | %s | %s |" % (name, clients, seconds, cpu, rss, json_mb, md_kb, load, same)


def _bytes(path):
    with open(path, "rb") as handle:
        return handle.read()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[512, 4096, 16384])
    parser.add_argument("--dir", default=None, help="where the bundles are built (default: a new temporary directory)")
    parser.add_argument("--link", action="store_true", help="hard-link the capture's files instead of copying them")
    parser.add_argument("--against", metavar="ROOT", help="a directory holding ansible_collections/ckptio/nfs of another "
                                                          "commit: each size diagnosed by it, then by this tree")
    parser.add_argument("--profile", type=int, metavar="CLIENTS", help="profile load + diagnose in-process on one size")
    parser.add_argument("--phases", type=int, metavar="CLIENTS",
                        help="time each step of the reading per client, then each phase of the run, in-process on one size")
    parser.add_argument("--as-captured", action="store_true",
                        help="copy the fixture as it is (probe.json with iperf3's raw output inside, as bundles "
                             "written before 0.5.0 hold it) instead of re-writing it through the current writer")
    parser.add_argument("--capture", metavar="DIR",
                        help="copy this bundle's files as they are (e.g. tests/fixtures/captures/lab_figures, which the "
                             "roles wrote with each client's figures.json) instead of the healthy capture")
    parser.add_argument("--keep", action="store_true", help="keep the bundles and the outputs (their directory is printed)")
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="ckptio-scale-", dir=args.dir)
    try:
        if args.profile:
            profile(args.profile, root, args.link, args.as_captured, args.capture)
            return
        if args.phases:
            phases(args.phases, root, args.link, args.capture)
            return
        bundles = []
        for clients in args.clients:
            started = time.monotonic()
            bundles.append((clients, build(root, clients, args.link, args.as_captured, args.capture)))
            print("built %d clients in %.1f s" % (clients, time.monotonic() - started), file=sys.stderr)
        print("| run | clients | wall s | CPU s | peak RSS MiB | diagnosis.json MB | diagnosis.md kB | load average before | same output |")
        print("|-----|--------:|-------:|------:|-------------:|------------------:|----------------:|--------------------:|-------------|")
        for clients, bundle in bundles:
            runs = [("against", args.against), ("this tree", None)] if args.against else [("this tree", None)]
            for name, collections in runs:
                print(measured_row(name, clients, bundle, os.path.join(root, "out-%d-%s" % (clients, name.replace(" ", "_"))),
                                   collections, os.path.join(root, "out-%d-against" % clients) if args.against else None))
                sys.stdout.flush()
    finally:
        if args.keep:
            print("kept in %s" % root, file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
