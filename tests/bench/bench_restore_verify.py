"""Benchmark: how the canary's restore phase checks a block it read back (issue 16).

    source /root/.cache/ckptio/env-*.sh; nice -n 19 python tests/bench/bench_restore_verify.py [--block-mib 1] [--blocks 256]

The write path stamps each block's first 8 bytes with its offset over a per-rank random
buffer; the read must say whether a block read back is that. Timed on the same buffers:
  - crc32: zlib.crc32 of the read block's tail against the tail's crc32 computed once per rank,
    plus the 8-byte stamp. Needs no second copy of the block: the rank reads into its write buffer.
  - memcmp: bytearray == memoryview (bytearray's compare takes both buffers and calls memcmp,
    no copy), with the stamp written into an expected bytearray: one more block per rank.
  - bytes-copy: bytes(read_view) == expected (one copy per block, then memcmp).
  - memoryview: memoryview == memoryview (CPython compares item by item, not with memcmp).
Prints GB/s (best of --repeat runs over --blocks blocks). Not a pytest test: timings never go in tests.
"""
from __future__ import annotations

import argparse
import mmap
import os
import time
import zlib


def best_rate(function, blocks, size, repeat):
    best = None
    for _run in range(repeat):
        began = time.perf_counter()
        for offset in range(blocks):
            function(offset * size)
        took = time.perf_counter() - began
        best = took if best is None else min(best, took)
    return blocks * size / best / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--block-mib", type=float, default=1.0)
    parser.add_argument("--blocks", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    size = int(args.block_mib * 1024 * 1024)
    written = mmap.mmap(-1, size)
    written[:] = os.urandom(size)
    read = mmap.mmap(-1, size)
    read[:] = written[:]
    read_view = memoryview(read)
    tail_crc = zlib.crc32(memoryview(written)[8:size])
    expected = bytearray(written)
    expected_view = memoryview(expected)

    stamp = bytes(read_view[0:8])

    def crc32(offset):
        assert bytes(read_view[0:8]) == stamp and zlib.crc32(read_view[8:size]) == tail_crc

    def memcmp(offset):
        expected[0:8] = read_view[0:8]
        assert expected == read_view

    def bytes_copy(offset):
        assert bytes(read_view) == expected

    def view_compare(offset):
        assert read_view == expected_view

    print("block %d bytes, %d blocks, best of %d" % (size, args.blocks, args.repeat))
    for name, function in (("crc32", crc32), ("memcmp", memcmp), ("bytes-copy", bytes_copy),
                           ("memoryview", view_compare)):
        print("%-10s %6.2f GB/s" % (name, best_rate(function, args.blocks, size, args.repeat)))


if __name__ == "__main__":
    main()
