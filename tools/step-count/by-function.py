#!/usr/bin/env python3
"""by-function.py — steps per function from step-count's STEP_COUNT_PCS file.

    STEP_COUNT_PCS=/tmp/pcs OMP_NUM_THREADS=1 ./step-count ./row tiny 1
    tools/step-count/by-function.py ./row /tmp/pcs [TOP]

The program must be built with -no-pie (step-count.c), so that its
addresses are nm's. Steps outside it (libc, libgomp, the vDSO) are
summed as "(outside PROGRAM)". Prints the TOP (default 30) functions with
their steps and share, most first.
"""
import bisect
import collections
import struct
import subprocess
import sys


def symbols(program):
    out = subprocess.run(["nm", "-n", "--defined-only", program],
                         check=True, capture_output=True, text=True).stdout
    addrs, names = [], []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            addrs.append(int(parts[0], 16))
            names.append(parts[2])
    return addrs, names


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: by-function.py PROGRAM PCS_FILE [TOP]")
    program, path = sys.argv[1], sys.argv[2]
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    addrs, names = symbols(program)
    with open(path, "rb") as f:
        data = f.read()
    pcs = struct.unpack("<%dQ" % (len(data) // 8), data)
    end = addrs[-1] + 4096 if addrs else 0
    counts = collections.Counter()
    for pc in pcs:
        i = bisect.bisect_right(addrs, pc) - 1
        if i < 0 or pc >= end:
            counts["(outside %s)" % program] += 1
        else:
            counts[names[i]] += 1
    total = len(pcs)
    print("%d steps" % total)
    for name, c in counts.most_common(top):
        print("%8d %5.1f%%  %s" % (c, 100.0 * c / total, name))


if __name__ == "__main__":
    main()
