# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Series per mount: our textfile collector beside node_exporter's mountstats collector, and our collector's CPU per run (issue 48).

    source scripts/activate && python tests/bench/bench_metric_series.py [--runs 50]

For nconnect 1, 4 and 16 (tests/fixtures/telemetry/mountstats_v41_nconnect*.txt, the lab's real
v4.1 mount with its xprt lines repeated), node_exporter (Debian's 1.5.0, CKPTIO_NODE_EXPORTER from
scripts/setup.sh) reads the same file through --path.procfs with only its mountstats collector on,
and the series it serves for that mount are counted beside ours. Then the installed zip program
runs --runs times on the nconnect=16 file and its CPU (user + system, getrusage of the children)
per run is printed, beside a bare `python3 -c pass` start measured the same way.
"""

import argparse
import http.client
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time

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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    from ansible_collections.ckptio.nfs.plugins.module_utils.telemetry import install  # pylint: disable=import-outside-toplevel

    binary = os.environ.get("CKPTIO_NODE_EXPORTER")
    if not binary or not os.access(binary, os.X_OK):
        sys.exit("CKPTIO_NODE_EXPORTER is not set: source scripts/activate")
    work = tempfile.mkdtemp(prefix="ckptio-series-")
    try:
        program = os.path.join(work, install.PROGRAM)
        with open(program, "wb") as stream:
            stream.write(install.program_bytes())
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
        textfiles = os.path.join(work, "n16", "textfile")
        argv = [sys.executable, "-I", program, "--textfile-directory", textfiles, "--root", os.path.join(work, "n16")]
        ours = cpu_per_run(argv, args.runs)
        bare = cpu_per_run([sys.executable, "-I", "-c", "pass"], args.runs)
        print()
        print("collector CPU per run (nconnect=16, %d runs): %.1f ms; a bare python3 start: %.1f ms; ratio %.2f"
              % (args.runs, ours * 1000, bare * 1000, ours / bare if bare else float("nan")))
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
