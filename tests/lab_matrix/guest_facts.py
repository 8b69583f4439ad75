"""Kernel and userland facts of one lab VM, as JSON on stdout (run inside the guest).

Usage (scripts/lab-matrix.sh pipes it over ssh):
  python3 - server DIR        the server's facts; raw files copied into DIR (a tar on stdout
  python3 - client DIR        the client's facts                              is not needed:
  python3 - slots DIR MOUNT   a fresh NFSv4.1 session's slot grant, read    DIR is fetched)
                              from the nfs4_sequence_done tracepoint while writes run

Read-only except `slots`: it enables and disables one tracepoint and writes a scratch file
under MOUNT (removed again). Standard library only: the guest has python3 and nothing else.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time


def read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return None


def keep(directory, name, text):
    """Raw file for the fixtures (tests/fixtures/kernels/), exactly as read."""
    if text is None:
        return
    with open(os.path.join(directory, name), "w") as handle:
        handle.write(text)


def run(argv):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return "", str(exc), -1
    return done.stdout, done.stderr, done.returncode


def package_version(name):
    out, _err, rc = run(["dpkg-query", "-W", "-f", "${Version}", name])
    return out if rc == 0 else None


def common():
    return {
        "kernel_release": (read("/proc/sys/kernel/osrelease") or "").strip(),
        "kernel_version": (read("/proc/version") or "").strip(),
        "os_release": dict(re.findall(r'^(\w+)="?([^"\n]*)"?$', read("/etc/os-release") or "", re.M)).get("PRETTY_NAME"),
        "mem_total_kib": int(re.search(r"MemTotal:\s+(\d+)", read("/proc/meminfo") or "MemTotal: 0").group(1)),
    }


def server(directory):
    facts = common()
    facts["nfs_kernel_server"] = package_version("nfs-kernel-server")
    nfsd = "/proc/fs/nfsd"
    facts["proc_fs_nfsd_files"] = sorted(os.listdir(nfsd)) if os.path.isdir(nfsd) else []
    for name in ("threads", "pool_threads", "pool_stats", "max_block_size", "min_threads", "versions",
                 "nfsv4gracetime", "nfsv4leasetime", "max_connections", "portlist"):
        text = read(os.path.join(nfsd, name))
        facts[name] = text
        keep(directory, "nfsd_%s.txt" % name, text)
    keep(directory, "rpc_nfsd.txt", read("/proc/net/rpc/nfsd"))
    infos = {}
    for path in sorted(glob.glob(os.path.join(nfsd, "clients", "*", "info"))):
        infos[path.split("/")[-2]] = read(path)
    facts["clients_info"] = infos
    keep(directory, "clients_info.txt", "".join("== %s\n%s" % item for item in sorted(infos.items())))
    out, _err, _rc = run(["systemctl", "show", "-p", "ExecStart", "--value", "nfs-server"])
    facts["nfs_server_execstart"] = out.strip()
    facts["run_sysconfig_nfs_utils"] = read("/run/sysconfig/nfs-utils")
    default = read("/etc/default/nfs-kernel-server") or ""
    facts["rpcnfsdcount_line"] = next((line for line in default.splitlines() if line.startswith("RPCNFSDCOUNT=")), None)
    facts["nfs_utils_env_sh"] = any(os.path.exists(path) for path in (
        "/usr/lib/systemd/scripts/nfs-utils_env.sh", "/lib/systemd/scripts/nfs-utils_env.sh"))
    facts["nfsdctl"] = shutil.which("nfsdctl") is not None
    return facts


def client(directory):
    facts = common()
    facts["nfs_common"] = package_version("nfs-common")
    params = {}
    for module in ("nfs", "nfsv4", "sunrpc"):
        for path in sorted(glob.glob("/sys/module/%s/parameters/*" % module)):
            params["%s.%s" % (module, os.path.basename(path))] = (read(path) or "").strip()
    for path in sorted(glob.glob("/proc/sys/sunrpc/*slot_table_entries")):
        params["sysctl.sunrpc.%s" % os.path.basename(path)] = (read(path) or "").strip()
    facts["parameters"] = params
    keep(directory, "parameters.txt", "".join("%s=%s\n" % item for item in sorted(params.items())))
    mountstats = read("/proc/self/mountstats")
    keep(directory, "mountstats.txt", mountstats)
    mountinfo = read("/proc/self/mountinfo") or ""
    nfs_lines = [line for line in mountinfo.splitlines() if " - nfs" in line]
    facts["mountinfo_nfs"] = nfs_lines
    keep(directory, "mountinfo_nfs.txt", "".join(line + "\n" for line in nfs_lines))
    facts["xprt_fields"] = sorted({len(line.split()) - 1 for line in (mountstats or "").splitlines()
                                   if line.strip().startswith("xprt:")})
    return facts


def tracing_root():
    for root in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
        if os.path.exists(os.path.join(root, "trace")):
            return root
    os.makedirs("/sys/kernel/tracing", exist_ok=True)
    run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"])
    return "/sys/kernel/tracing" if os.path.exists("/sys/kernel/tracing/trace") else None


def write_file(path, size):
    # Buffered writes, then fsync: writeback sends as many WRITEs at once as slots allow.
    chunk = b"\0" * (1 << 20)
    with open(path, "wb") as handle:
        for _chunk in range(size >> 20):
            handle.write(chunk)
        os.fsync(handle.fileno())


SEQUENCE = re.compile(r"nfs4_sequence_done:.*?slot_nr=(\d+).*?highest_slotid=(\d+) target_highest_slotid=(\d+)")


def slots(directory, mount_point):
    facts = common()
    root = tracing_root()
    if root is None:
        facts["error"] = "no tracefs"
        return facts
    event = os.path.join(root, "events", "nfs4", "nfs4_sequence_done", "enable")
    if not os.path.exists(event):
        facts["error"] = "no nfs4:nfs4_sequence_done tracepoint"
        return facts
    with open(os.path.join(root, "trace"), "w") as handle:
        handle.write("")
    with open(event, "w") as handle:
        handle.write("1")
    started = time.time()
    paths = [os.path.join(mount_point, ".ckptio-matrix-%d" % index) for index in range(4)]
    try:
        writers = [threading.Thread(target=write_file, args=(path, 32 << 20)) for path in paths]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join()
    finally:
        with open(event, "w") as handle:
            handle.write("0")
        for path in paths:
            try:
                os.unlink(path)
            except OSError:
                pass
    trace = read(os.path.join(root, "trace")) or ""
    matches = [tuple(int(value) for value in match) for match in SEQUENCE.findall(trace)]
    keep(directory, "trace_nfs4_sequence_done.txt", "".join(line + "\n" for line in trace.splitlines()[:200]))
    facts["write_seconds"] = round(time.time() - started, 1)
    facts["sequence_replies"] = len(matches)
    facts["max_slot_nr_used"] = max((m[0] for m in matches), default=None)
    facts["highest_slotid"] = sorted({m[1] for m in matches})
    facts["target_highest_slotid"] = sorted({m[2] for m in matches})
    facts["max_session_slots"] = (read("/sys/module/nfs/parameters/max_session_slots") or "").strip()
    return facts


def main():
    mode, directory = sys.argv[1], sys.argv[2]
    os.makedirs(directory, exist_ok=True)
    if mode == "server":
        facts = server(directory)
    elif mode == "client":
        facts = client(directory)
    elif mode == "slots":
        facts = slots(directory, sys.argv[3])
    else:
        raise SystemExit("unknown mode %s" % mode)
    json.dump(facts, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
