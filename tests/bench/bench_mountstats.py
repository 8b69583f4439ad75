"""Benchmark: parse + delta of a synthetic /proc/self/mountstats with 1,000 NFS mounts x 16 xprt
lines each, next to nfs-utils' `mountstats -f AFTER -S BEFORE` on the same files, in one run.

    source scripts/activate   # or: source $(scripts/setup.sh)
    python tests/bench/bench_mountstats.py [--mounts 1000] [--xprts 16] [--repeat 5]

Prints our best-of-N wall time, nfs-utils' (one run: it is slow), the ratio, and the
tracemalloc peak of the streaming delta for growing mount counts (it should stay flat).
Not a pytest test: timings never go in tests.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))
COLLECTION = os.path.dirname(os.path.dirname(HERE))
# Import the collection from this checkout: ansible_collections/ckptio/nfs -> the repo.
sys.path.insert(0, os.path.join(os.path.dirname(COLLECTION), "..", ".."))

try:
    from ansible_collections.ckptio.nfs.plugins.module_utils.stats_delta import iter_mountstats_delta, mountstats_delta
except ImportError:
    sys.exit("run with the collection importable: source $(scripts/setup.sh) and PYTHONPATH pointing at the "
             "directory holding ansible_collections/ckptio/nfs (scripts/activate does this)")

NFS4_OPS = ("NULL READ WRITE COMMIT OPEN OPEN_CONFIRM OPEN_NOATTR OPEN_DOWNGRADE CLOSE SETATTR FSINFO RENEW SETCLIENTID "
            "SETCLIENTID_CONFIRM LOCK LOCKT LOCKU ACCESS GETATTR LOOKUP LOOKUP_ROOT REMOVE RENAME LINK SYMLINK CREATE "
            "PATHCONF STATFS READLINK READDIR SERVER_CAPS DELEGRETURN GETACL SETACL FS_LOCATIONS RELEASE_LOCKOWNER SECINFO "
            "FSID_PRESENT EXCHANGE_ID CREATE_SESSION DESTROY_SESSION SEQUENCE GET_LEASE_TIME RECLAIM_COMPLETE LAYOUTGET "
            "GETDEVICEINFO LAYOUTCOMMIT LAYOUTRETURN SECINFO_NO_NAME TEST_STATEID FREE_STATEID GETDEVICELIST "
            "BIND_CONN_TO_SESSION DESTROY_CLIENTID SEEK ALLOCATE DEALLOCATE LAYOUTSTATS CLONE COPY OFFLOAD_CANCEL LOOKUPP "
            "LAYOUTERROR COPY_NOTIFY GETXATTR SETXATTR LISTXATTRS REMOVEXATTR READ_PLUS").split()
BUSY_OPS = {"WRITE": 1000, "COMMIT": 10, "GETATTR": 50, "ACCESS": 5, "OPEN": 2, "CLOSE": 2}


def synthesize(path, mounts, xprts, scale):
    """A mountstats file shaped like the lab capture; `scale` grows the busy counters."""
    with open(path, "w") as out:
        for index in range(30):
            out.write("device tmpfs mounted on /run/x%d with fstype tmpfs\n" % index)
        for mount in range(mounts):
            out.write("device 10.0.%d.%d:/export/%d mounted on /mnt/ckpt\\040%d with fstype nfs4 statvers=1.1\n"
                      % (mount // 250, mount % 250, mount, mount))
            out.write("\topts:\trw,vers=4.1,rsize=1048576,wsize=1048576,namlen=255,acregmin=3,acregmax=60,acdirmin=30,"
                      "acdirmax=60,hard,proto=tcp,nconnect=%d,timeo=600,retrans=2,sec=sys,clientaddr=10.1.0.2,local_lock=none\n" % xprts)
            out.write("\tage:\t%d\n" % (100 + 30 * scale))
            out.write("\timpl_id:\tname='',domain='',date='0,0'\n")
            out.write("\tcaps:\tcaps=0xc003c0bf,wtmult=512,dtsize=1048576,bsize=0,namlen=255\n")
            out.write("\tnfsv4:\tbm0=0xfdffbfff,bm1=0x40fdbe3e,bm2=0x803,acl=0x3,sessions,pnfs=not configured,lease_time=90,lease_expired=0\n")
            out.write("\tsec:\tflavor=1,pseudoflavor=1\n")
            out.write("\tevents:\t" + " ".join(str(scale * (i + 1)) for i in range(27)) + " \n")
            out.write("\tbytes:\t0 %d 0 0 0 %d 0 %d \n" % (scale << 30, scale << 30, scale << 18))
            out.write("\tRPC iostats version: 1.1  p/v: 100003/4 (nfs)\n")
            for xprt in range(xprts):
                sends = 1000 * scale + xprt
                out.write("\txprt:\ttcp 0 0 2 0 1 %d %d 0 %d %d %d %d %d\n"
                          % (sends, sends, 4 * sends, scale * xprt, 10 + xprt, 3 * sends, 2 * sends))
            out.write("\tper-op statistics\n")
            for op in NFS4_OPS:
                ops = BUSY_OPS.get(op, 0) * scale
                out.write("\t%12s: %d %d 0 %d %d %d %d %d 0\n" % (op, ops, ops, ops * 1000, ops * 100, ops * 7, ops * 40, ops * 48))
            out.write("\n")


def ours(after, before):
    with open(after) as after_file, open(before) as before_file:
        return mountstats_delta(after_file, before_file)


def streaming_peak(after, before):
    """Peak traced memory of the streaming delta when the caller consumes results one by one."""
    tracemalloc.start()
    with open(after) as after_file, open(before) as before_file:
        count = 0
        for _delta in iter_mountstats_delta(after_file, before_file):
            count += 1
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return count, peak


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mounts", type=int, default=1000)
    parser.add_argument("--xprts", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="bench-mountstats-")
    try:
        before = os.path.join(workdir, "before.txt")
        after = os.path.join(workdir, "after.txt")
        synthesize(before, args.mounts, args.xprts, 1)
        synthesize(after, args.mounts, args.xprts, 3)
        size = os.path.getsize(after)
        # Machine speed in the same run: a shared, loaded host makes absolute times meaningless
        # without it (1M int() takes ~0.08 s on an idle core of this class).
        start = time.perf_counter()
        sum(map(int, ["12345"] * 1000000))
        calibration = time.perf_counter() - start
        print("machine: load average %s, 1M int() in %.3f s" % (" ".join("%.1f" % value for value in os.getloadavg()), calibration))
        print("file: %d NFS mounts x %d xprt lines, %.1f MB per sample" % (args.mounts, args.xprts, size / 1e6))

        timings = []
        for _run in range(args.repeat):
            start = time.perf_counter()
            deltas = ours(after, before)
            timings.append(time.perf_counter() - start)
        assert len(deltas) == args.mounts
        sample = deltas[0]
        assert sample["rpc"]["transports"] == args.xprts and sample["ops"]["WRITE"]["ops"] == 2000
        ours_best = min(timings)
        print("ckptio.nfs parse + delta (both files): best %.3f s, median %.3f s of %d runs"
              % (ours_best, sorted(timings)[len(timings) // 2], args.repeat))

        tool = shutil.which("mountstats") or ("/usr/sbin/mountstats" if os.path.exists("/usr/sbin/mountstats") else None)
        if tool:
            start = time.perf_counter()
            completed = subprocess.run([tool, "-f", after, "-S", before], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
            theirs = time.perf_counter() - start
            print("nfs-utils %s -f AFTER -S BEFORE: %.3f s (exit %d)" % (tool, theirs, completed.returncode))
            print("ratio nfs-utils / ckptio.nfs: %.1fx faster" % (theirs / ours_best))
        else:
            print("nfs-utils mountstats not installed (Debian: apt-get install nfs-common): no comparison")
        print("under 0.2 s: %s" % ("yes" if ours_best < 0.2 else "NO"))

        print("tracemalloc peak of the streaming delta (results consumed one by one):")
        for mounts in sorted(set([max(1, args.mounts // 4), max(1, args.mounts // 2), args.mounts])):
            synthesize(before, mounts, args.xprts, 1)
            synthesize(after, mounts, args.xprts, 3)
            count, peak = streaming_peak(after, before)
            print("  %5d mounts (%5.1f MB file): peak %.0f KiB" % (count, os.path.getsize(after) / 1e6, peak / 1024.0))
    finally:
        shutil.rmtree(workdir)


if __name__ == "__main__":
    main()
