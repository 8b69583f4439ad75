# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Series per mount: our textfile collector beside node_exporter's mountstats collector, and our collector's CPU per run (issue 48).

    source scripts/activate && python tests/bench/bench_metric_series.py [--runs 50] [--cpu-only] [--against ROOT]

For nconnect 1, 4 and 16 (tests/fixtures/telemetry/mountstats_v41_nconnect*.txt, the lab's real
v4.1 mount with its xprt lines repeated), node_exporter (Debian's 1.5.0, CKPTIO_NODE_EXPORTER from
scripts/setup.sh) reads the same file through --path.procfs with only its mountstats collector on,
and the series it serves for that mount are counted beside ours. Then the installed zip program
runs --runs times on the nconnect=16 file and its CPU (user + system, getrusage of the children)
per run is printed, beside a bare `python3 -c pass` start measured the same way.

--against ROOT (a directory holding ansible_collections/ckptio/nfs of another commit, e.g. from
`git archive`) builds that commit's zip too and measures both in the same rounds, alternating, so
a before/after pair shares the host's load. Also measured, never shipped: this zip with each module's
bytecode for this very Python beside its source (unchecked hash-based .pyc, PEP 552): what zipimport's
compile at each start costs. --cpu-only skips node_exporter's series (no CKPTIO_NODE_EXPORTER needed).
"""

import argparse
import http.client
import importlib.util
import io
import marshal
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import statistics
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "telemetry")


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _fake_proc(root, mountstats_path):
    """A procfs tree node_exporter reads as its own: self -> 4242, 4242/mountstats, and a
    4242/mountinfo line for the mount (node_exporter reads both and fails without mountinfo)."""
    os.makedirs(os.path.join(root, "4242"))
    shutil.copy(mountstats_path, os.path.join(root, "4242", "mountstats"))
    os.symlink("4242", os.path.join(root, "self"))
    with open(mountstats_path, encoding="utf-8") as stream:
        lines = stream.read().splitlines()
    words = lines[0].split()
    device, point, fstype = words[1], words[4], words[7]
    opts = [line.split(None, 1)[1] for line in lines if line.strip().startswith("opts:")][0]
    server = device.split(":")[0]
    with open(os.path.join(root, "4242", "mountinfo"), "w", encoding="utf-8") as stream:
        stream.write("36 25 0:32 / %s rw,relatime shared:1 - %s %s %s,addr=%s\n" % (point, fstype, device, opts, server))


def node_exporter_series(binary, proc_root):
    port = _free_port()
    process = subprocess.Popen([binary, "--path.procfs", proc_root, "--collector.disable-defaults",
                                "--collector.mountstats", "--web.listen-address", "127.0.0.1:%d" % port],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                # http.client, not urlopen: ansible-test's replace-urlopen sanity test (compat stage) refuses urlopen.
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                try:
                    connection.request("GET", "/metrics")
                    text = connection.getresponse().read().decode("utf-8")
                finally:
                    connection.close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        process.terminate()
        process.wait(timeout=10)
    return [line for line in text.splitlines() if line.startswith("node_mountstats_nfs_")]


def our_series(program, proc_root, directory):
    root = os.path.dirname(proc_root)
    subprocess.run([sys.executable, "-I", program, "--textfile-directory", directory, "--root", root], check=True)
    with open(os.path.join(directory, "ckptio_nfs.prom"), encoding="utf-8") as stream:
        return [line for line in stream.read().splitlines() if line.startswith("ckptio_nfs_client_")]


def _value(lines, name):
    """The values of a metric's series, joined (the sends each side reports for the mount)."""
    return "+".join(line.rsplit(" ", 1)[1] for line in lines if line.startswith(name + "{") or line.startswith(name + " "))


def cpu_per_run(argv, runs):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _run in range(runs):
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) / runs


def program_of(root):
    """The zip program built by the collection under root (another commit's), in a fresh Python."""
    code = ("import sys; from ansible_collections.ckptio.nfs.plugins.module_utils.telemetry import install; "
            "sys.stdout.buffer.write(install.program_bytes())")
    return subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.insert(0, %r); exec(%r)" % (root, code)],
                          check=True, capture_output=True).stdout


def with_bytecode(program):
    """program with an unchecked hash-based .pyc of each module beside its .py, for this Python only (zipimport
    loads a .pyc before the .py and falls back to the .py on another Python's magic number)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(program)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            data = source.read(info)
            target.writestr(info, data)
            if info.filename.endswith(".py") and info.filename != "__main__.py":
                code = compile(data, info.filename, "exec", dont_inherit=True)
                header = importlib.util.MAGIC_NUMBER + (1).to_bytes(4, "little") + importlib.util.source_hash(data)
                target.writestr(zipfile.ZipInfo(info.filename + "c", info.date_time), header + marshal.dumps(code))
    return out.getvalue()


def series_table(program, work, binary):
    print("| nconnect | node_exporter mountstats series | of them transport | its sends | ckptio_nfs series | our sends |")
    print("|---:|---:|---:|---:|---:|---:|")
    for nconnect in (1, 4, 16):
        case = os.path.join(work, "n%d" % nconnect)
        proc_root = os.path.join(case, "proc")
        _fake_proc(proc_root, os.path.join(FIXTURES, "mountstats_v41_nconnect%d.txt" % nconnect))
        # Our program reads <root>/proc/self/mountstats: the same file.
        theirs = node_exporter_series(binary, proc_root)
        transport = [line for line in theirs if line.startswith("node_mountstats_nfs_transport_")]
        textfiles = os.path.join(case, "textfile")
        os.makedirs(textfiles)
        ours = our_series(program, proc_root, textfiles)
        print("| %d | %d | %d | %s | %d | %s |" % (
            nconnect, len(theirs), len(transport), _value(theirs, "node_mountstats_nfs_transport_sends_total"),
            len(ours), _value(ours, "ckptio_nfs_client_rpc_sends_total")))


def cpu_table(programs, work, runs, rounds=5):
    """Each program's CPU per run, measured in rounds that alternate the programs (median over the rounds)."""
    case = os.path.join(work, "cpu")
    _fake_proc(os.path.join(case, "proc"), os.path.join(FIXTURES, "mountstats_v41_nconnect16.txt"))
    textfiles = os.path.join(case, "textfile")
    os.makedirs(textfiles)
    argvs = [("a bare `python3 -I -c pass`", None, [sys.executable, "-I", "-c", "pass"])]
    for label, program in programs:
        path = os.path.join(work, "%d.pyz" % len(argvs))
        with open(path, "wb") as stream:
            stream.write(program)
        with zipfile.ZipFile(path) as archive:
            names = [name for name in archive.namelist() if name.endswith(".py")]
            size = sum(archive.getinfo(name).file_size for name in names)
        argvs.append((label, (len(names), size),
                      [sys.executable, "-I", path, "--textfile-directory", textfiles, "--root", case]))
    figures = dict((label, []) for label, _info, _argv in argvs)
    for index in range(rounds):
        order = argvs if index % 2 == 0 else argvs[::-1]
        for label, _info, argv in order:
            figures[label].append(cpu_per_run(argv, runs) * 1000)
    print("| program (nconnect=16 fixture) | .py files | source bytes | CPU per run, median of %d rounds of %d runs | spread |"
          % (rounds, runs))
    print("|---|---:|---:|---:|---|")
    for label, info, _argv in argvs:
        files, size = info or ("", "")
        print("| %s | %s | %s | **%.1f ms** | %.1f-%.1f |" % (
            label, files, size, statistics.median(figures[label]), min(figures[label]), max(figures[label])))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cpu-only", action="store_true", help="only the CPU per run (no node_exporter)")
    parser.add_argument("--against", help="a root holding ansible_collections/ckptio/nfs of another commit")
    args = parser.parse_args()
    from ansible_collections.ckptio.nfs.plugins.module_utils.telemetry import install  # pylint: disable=import-outside-toplevel

    binary = os.environ.get("CKPTIO_NODE_EXPORTER")
    if not args.cpu_only and (not binary or not os.access(binary, os.X_OK)):
        sys.exit("CKPTIO_NODE_EXPORTER is not set: source scripts/activate")
    work = tempfile.mkdtemp(prefix="ckptio-series-")
    try:
        this = install.program_bytes()
        program = os.path.join(work, install.PROGRAM)
        with open(program, "wb") as stream:
            stream.write(this)
        if not args.cpu_only:
            series_table(program, work, binary)
            print()
        programs = [("this tree's zip", this)]
        if args.against:
            programs.insert(0, ("--against's zip", program_of(args.against)))
        programs.append(("this tree's zip + .pyc for this Python (measured, not shipped)", with_bytecode(this)))
        cpu_table(programs, work, args.runs, args.rounds)
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
