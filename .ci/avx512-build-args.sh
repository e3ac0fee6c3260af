#!/usr/bin/env bash
# .ci/avx512-build-args.sh — prints the meson option for a build that only
# ever runs on this machine (CI's ASan, fuzz, valgrind and TSan builds):
# -Davx512_kernels=disabled when this CPU lacks AVX-512 F/BW/VL/DQ, so that
# the AVX-512 tables, which dispatch could never pick here, are not
# compiled (a quarter of the fuzz and TSan builds' compile time). On a CPU
# with AVX-512 it prints nothing: those builds compile the tables and their
# tests run them natively, as before. Decided from /proc/cpuinfo at run
# time, the way .ci/run's isas step decides.
set -euo pipefail
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
for f in avx512f avx512bw avx512vl avx512dq; do
    if ! grep -qw "$f" <<<"$flags"; then
        echo "-Davx512_kernels=disabled"
        exit 0
    fi
done
