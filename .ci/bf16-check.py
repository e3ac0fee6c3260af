#!/usr/bin/env python3
"""Say from a meson test log (meson-logs/testlog*.json) how the bf16 tiles
(AMX, AVX512-BF16) and their instructions were tested in that run, natively
or under the test-only C emulation, and fail when a set the CPU has ran
emulated or a set ran neither way.

  bf16-check.py LOG.json

The CPU's flags come from /proc/cpuinfo (amx_bf16, avx512_bf16); the
evidence is what tests/kernels/test_bf16_tiles.c and test_bf16_emul.c print.
Prints one line per set, e.g. "bf16 tiles amx_bf16: emulated (the CPU
lacks amx_bf16)".
"""
import json
import re
import sys

SETS = {"amx_bf16": "amx_bf16", "avx512_bf16": "avx512_bf16"}


def cpu_flags():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = {}
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            if line.strip():
                t = json.loads(line)
                out[t.get("name", "?")] = t.get("stdout") or ""
    flags = cpu_flags()
    problems = []
    tiles = out.get("bf16_tiles", "")
    for name, flag in SETS.items():
        ran = set(re.findall(r"bf16 tiles %s: (native|emulated)" % name,
                             tiles))
        has = flag in flags and "avx512_bf16" in flags
        if not ran:
            problems.append(f"bf16 tiles {name}: ran neither natively nor "
                            "emulated")
            continue
        how = "native" if "native" in ran else "emulated"
        if has and how != "native":
            problems.append(f"bf16 tiles {name}: emulated on a CPU that "
                            f"has {flag}")
        why = "" if how == "native" else f" (the CPU lacks {flag})"
        print(f"bf16 tiles {name}: {how}{why}")
    probes = out.get("bf16_emul", "")
    for build in ("native", "emulated"):
        if f"bf16 probes ({build}): vdpbf16ps matches the SDM" in probes:
            amx = f"bf16 probes ({build}): TDPBF16PS" in probes
            print(f"bf16 instructions vs the SDM: {build} (vdpbf16ps, "
                  f"vcvtne2ps2bf16{', AMX tiles' if amx else ''})")
    if "bf16 probes (emulated): vdpbf16ps" not in probes and \
            "bf16 probes (native): vdpbf16ps" not in probes:
        problems.append("test bf16_emul checked no build of the bf16 "
                        "instructions")
    for p in problems:
        print(f"bf16-check: {p}", file=sys.stderr)
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
