# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Are fsync-bound buffered writes on this host bimodal without any harness? (tests/bench/README.md)

Four forked plain Python writers x 128 MiB each, fsync at the end, released together; one run in
a new directory with new files (O_EXCL, as the canary does), one rewriting files in one existing
directory (O_TRUNC, as fio does), alternating ROUNDS times. Prints MB/s by the MLPerf rule
(total bytes / (latest end - common start)).

    python tests/bench/exp_fsync_bimodal.py [--dir /var/tmp/ckexp] [--rounds 6]
"""
from __future__ import annotations

import argparse
import os
import shutil
import time

BLOCK = 1 << 20
SIZE = 128 << 20
JOBS = 4


def writer(path, flags, buffer, go):
    time.sleep(max(0.0, go - time.time()))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | flags, 0o600)
    for offset in range(0, SIZE, BLOCK):
        os.pwrite(fd, buffer, offset)
    os.fsync(fd)
    os.close(fd)
    return time.time()


def one_run(directory, new_directory, buffer):
    if new_directory:
        os.mkdir(directory)
    flags = os.O_EXCL if new_directory else os.O_TRUNC
    go = time.time() + 0.3
    read_end, write_end = os.pipe()
    for job in range(JOBS):
        if os.fork() == 0:
            end = writer(os.path.join(directory, "f%d" % job), flags, buffer, go)
            os.write(write_end, b"%f\n" % end)
            os._exit(0)
    for _job in range(JOBS):
        os.waitpid(-1, 0)
    os.close(write_end)
    ends = [float(word) for word in os.read(read_end, 4096).split()]
    os.close(read_end)
    for job in range(JOBS):
        os.unlink(os.path.join(directory, "f%d" % job))
    if new_directory:
        os.rmdir(directory)
    return JOBS * SIZE / (max(ends) - go) / 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default="/var/tmp/ckexp")
    parser.add_argument("--rounds", type=int, default=6)
    options = parser.parse_args()
    os.makedirs(options.dir, exist_ok=True)
    buffer = os.urandom(BLOCK)
    try:
        for index in range(options.rounds):
            fresh = one_run(os.path.join(options.dir, "run%d" % index), True, buffer)
            in_place = one_run(options.dir, False, buffer)
            print("new dir + O_EXCL %.0f MB/s   same dir + O_TRUNC %.0f MB/s" % (fresh, in_place))
    finally:
        shutil.rmtree(options.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
