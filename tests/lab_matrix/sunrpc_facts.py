# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Guest side of issue 47's kernel facts: which slot-table views this kernel has (run on a lab client).

    python3 - OUTDIR [MOUNT] < tests/lab_matrix/sunrpc_facts.py

Writes into OUTDIR (then tarred back by the caller, scripts/lab-sunrpc-facts.sh):
- facts.txt: uname, whether debugfs and tracefs were mounted at boot, which files exist;
- sysfs/...: every file under /sys/kernel/sunrpc, verbatim;
- debugfs/...: sunrpc/rpc_clnt/*/{info,tasks} and sunrpc/rpc_xprt/*/info, verbatim (debugfs is
  mounted here for the measurement when the boot did not mount it, and unmounted again);
- tracefs/...: the format files of sunrpc:rpc_stats_latency and of every nfs4 event whose name
  holds "sequence" or "slot", and the list of sunrpc and nfs4 events;
- load/: four writers of 16 MiB each (fsync) on MOUNT; while they run, samples of every
  xprt_info (+ xprt_state) and every rpc_clnt tasks file in the bundle's formats
  (sunrpc_xprt.txt, rpc_tasks.txt), and the tracepoints' lines (rpc_latency.txt) with a 1 MiB
  buffer, enabled for the writers only, and mountstats before and after.
Nothing here is the collection's code: it measures what that code may rely on.
"""

import os
import subprocess
import sys
import time

OUT = sys.argv[1]
MOUNT = sys.argv[2] if len(sys.argv) > 2 else "/mnt/nfs"
SUNRPC = "/sys/kernel/sunrpc"
DEBUG = "/sys/kernel/debug"
TRACING = "/sys/kernel/tracing"
facts = []


def note(line):
    facts.append(line)


def read(path, limit=1 << 20):
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError as exc:
        return "<unreadable: %s>\n" % exc


def write(rel, text):
    path = os.path.join(OUT, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def mounted(fstype):
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            if (" - %s " % fstype) in line:
                return line.split()[4]
    return None


def copy_tree(top, rel_out, want=lambda rel: True):
    found = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, top)
            if not want(rel):
                continue
            found.append(rel)
            write(os.path.join(rel_out, rel), read(path))
    return found


def xprt_sample(t):
    lines = ["=== sample t=%.3f ===" % t]
    for dirpath, dirnames, filenames in os.walk(os.path.join(SUNRPC, "xprt-switches")):
        dirnames.sort()
        for name in ("xprt_info", "xprt_state"):
            if name in filenames and os.path.basename(dirpath).startswith("xprt-") and "switch" not in os.path.basename(dirpath):
                rel = os.path.relpath(os.path.join(dirpath, name), SUNRPC)
                lines.append("--- %s ---" % rel)
                lines.append(read(os.path.join(dirpath, name)).rstrip("\n"))
    return "\n".join(lines) + "\n"


def tasks_sample(t):
    lines = ["=== sample t=%.3f ===" % t]
    top = os.path.join(DEBUG, "sunrpc", "rpc_clnt")
    for clnt in sorted(os.listdir(top), key=lambda n: (len(n), n)) if os.path.isdir(top) else []:
        for name in ("tasks", "info"):
            path = os.path.join(top, clnt, name)
            if os.path.exists(path):
                lines.append("--- rpc_clnt/%s/%s ---" % (clnt, name))
                lines.append(read(path).rstrip("\n"))
    return "\n".join(lines) + "\n"


def tracing_write(rel, value):
    with open(os.path.join(TRACING, rel), "w") as handle:
        handle.write(value)


def main():
    os.makedirs(OUT, exist_ok=True)
    note("uname -r: %s" % os.uname().release)
    options = subprocess.run(["findmnt", "-no", "OPTIONS", MOUNT], stdout=subprocess.PIPE, universal_newlines=True, check=False)
    note("mount %s: %s" % (MOUNT, options.stdout.strip()))
    note("/sys/kernel/sunrpc exists: %s" % os.path.isdir(SUNRPC))
    if os.path.isdir(SUNRPC):
        files = copy_tree(SUNRPC, "sysfs")
        note("/sys/kernel/sunrpc files: %s" % " ".join(files))
    debug_at_boot = mounted("debugfs")
    trace_at_boot = mounted("tracefs")
    note("debugfs mounted at boot: %s" % (debug_at_boot or "no"))
    note("tracefs mounted at boot: %s" % (trace_at_boot or "no"))
    mounted_debug = mounted_trace = False
    if not debug_at_boot:
        mounted_debug = subprocess.run(["mount", "-t", "debugfs", "none", DEBUG], check=False).returncode == 0
        note("debugfs mounted for this measurement: %s" % mounted_debug)
    if not trace_at_boot:
        mounted_trace = subprocess.run(["mount", "-t", "tracefs", "none", TRACING], check=False).returncode == 0
        note("tracefs mounted for this measurement: %s" % mounted_trace)
    note("debugfs sunrpc exists: %s" % os.path.isdir(os.path.join(DEBUG, "sunrpc")))
    if os.path.isdir(os.path.join(DEBUG, "sunrpc")):
        files = copy_tree(os.path.join(DEBUG, "sunrpc"), "debugfs/sunrpc",
                          lambda rel: rel.endswith(("/info", "/tasks")) or "/" not in rel)
        note("debugfs sunrpc files: %s" % " ".join(files))
    events = os.path.join(TRACING, "events")
    for system in ("sunrpc", "nfs4"):
        names = sorted(os.listdir(os.path.join(events, system))) if os.path.isdir(os.path.join(events, system)) else []
        write("tracefs/events-%s.txt" % system, "".join(name + "\n" for name in names))
        note("tracefs %s events: %d" % (system, len([n for n in names if os.path.isdir(os.path.join(events, system, n))])))
    nfs4 = sorted(os.listdir(os.path.join(events, "nfs4"))) if os.path.isdir(os.path.join(events, "nfs4")) else []
    wanted = ["sunrpc/rpc_stats_latency"] + ["nfs4/%s" % n for n in nfs4
                                             if ("sequence" in n or "slot" in n) and os.path.isdir(os.path.join(events, "nfs4", n))]
    present = []
    for event in wanted:
        path = os.path.join(events, event, "format")
        note("tracefs %s/format exists: %s" % (event, os.path.exists(path)))
        if os.path.exists(path):
            present.append(event)
            write("tracefs/%s/format" % event, read(path))
    # Under load: samples and the tracepoints for four writers.
    write("load/mountstats_before.txt", read("/proc/self/mountstats"))
    old_size = read(os.path.join(TRACING, "buffer_size_kb")).strip()
    tracing_write("buffer_size_kb", "1024")
    tracing_write("trace", "")
    for event in present:
        tracing_write("events/%s/enable" % event, "1")
    start = time.time()
    writers = [subprocess.Popen(["dd", "if=/dev/zero", "of=%s/.ckptio-facts-%d" % (MOUNT, i), "bs=1M", "count=16",
                                 "conv=fsync", "status=none"]) for i in range(4)]
    xprt, tasks = [], []
    try:
        while any(w.poll() is None for w in writers):
            t = time.time() - start
            xprt.append(xprt_sample(t))
            tasks.append(tasks_sample(t))
            time.sleep(0.5)
    finally:
        for event in present:
            tracing_write("events/%s/enable" % event, "0")
    note("writers: 4 x 16 MiB in %.1f s, %d samples" % (time.time() - start, len(xprt)))
    write("load/mountstats_after.txt", read("/proc/self/mountstats"))
    write("load/sunrpc_xprt.txt", "".join(xprt))
    write("load/rpc_tasks.txt", "".join(tasks))
    trace = read(os.path.join(TRACING, "trace"), 64 << 20)
    write("load/rpc_latency.txt", "".join(line + "\n" for line in trace.splitlines() if line and not line.startswith("#")))
    note("trace lines: %s" % " ".join("%s=%d" % (event.split("/")[1], trace.count(event.split("/")[1] + ":"))
                                      for event in present))
    tracing_write("trace", "")
    tracing_write("buffer_size_kb", old_size.split()[0] if old_size.split() and old_size.split()[0].isdigit() else "1408")
    for i in range(4):
        os.unlink("%s/.ckptio-facts-%d" % (MOUNT, i))
    if mounted_debug:
        subprocess.run(["umount", DEBUG], check=False)
    if mounted_trace:
        subprocess.run(["umount", TRACING], check=False)
    write("facts.txt", "".join(line + "\n" for line in facts))
    sys.stdout.write("".join(line + "\n" for line in facts))


main()
