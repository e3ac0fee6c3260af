#!/usr/bin/env python3
"""Check from a meson test log (meson-logs/testlog*.json) how the AVX-512
kernels were tested in that run, so CI cannot pass with them silently left
out.

  avx512-check.py LOG.json native     the CPU has AVX-512: test_avx512 ran
                                      the native build, and no test ran the
                                      emulated table or skipped avx512
  avx512-check.py LOG.json emulated   the CPU lacks it: every kernel test
                                      ran the SIMDe-emulated table, and
                                      test_avx512 checked the emulated build

The evidence is what the tests print (tests/util.c kernels_or_skip,
tests/kernels/test_avx512.c).
"""
import json
import sys

KERNEL_TESTS = ["kernel_sgemm", "kernel_softmax", "kernel_gemv",
                "kernel_permute", "kernel_convert", "kernel_rows_finite",
                "gemm", "refs", "attention"]
EMULATED = "isa avx512: SIMDe emulation"
SKIPPED = "skip: isa avx512"


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("native", "emulated"):
        sys.exit(__doc__)
    path, mode = sys.argv[1], sys.argv[2]
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                t = json.loads(line)
                out[t.get("name", "?")] = t.get("stdout") or ""
    problems = []
    if "avx512" not in out:
        problems.append("test avx512 did not run")
    if mode == "native":
        if "avx512 (native) exp" not in out.get("avx512", ""):
            problems.append("test avx512 did not run the native build")
        for name, text in out.items():
            if EMULATED in text or SKIPPED in text:
                problems.append(f"{name}: avx512 emulated or skipped on a "
                                "CPU that has it")
    else:
        if "avx512 (SIMDe emulation) exp" not in out.get("avx512", ""):
            problems.append("test avx512 did not run the emulated build")
        for name in KERNEL_TESTS:
            if name not in out:
                problems.append(f"{name} did not run")
            elif EMULATED not in out[name]:
                problems.append(f"{name}: no emulated avx512 run")
    for p in problems:
        print(f"avx512-check ({mode}): {p}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"avx512-check: AVX-512 kernels tested ({mode}) in {path}")


if __name__ == "__main__":
    main()
