#!/usr/bin/env bash
# .ci/test-aarch64.sh — cross-builds mhsa for aarch64 and runs the whole test
# suite under qemu-user, so the NEON kernels are tested on every CI run.
#
#   bash .ci/test-aarch64.sh        (from anywhere; works in the repo root)
#
# Build directory: build-ci-arm (wiped and configured afresh each run).
# Needs (installed by .ci/install-deps.sh, not here): gcc-aarch64-linux-gnu,
# libc6-dev-arm64-cross, qemu-user, and with arm64 as a foreign architecture
# check:arm64, libgomp1:arm64 (libjansson-dev:arm64 for safetensors).
#
# meson exits 0 when a cross build's tests are skipped (no exe_wrapper) or
# when there are none, so this script judges the test log itself and fails
# unless: at least one test ran; every test passed (none skipped); every
# test ran under qemu-aarch64 (directly, or via MESON_EXE_WRAPPER for a
# script-driven test); the ISA-generic kernel tests were among them;
# and no test printed "skip: isa neon" (the NEON table must have run).
#
# Two CPUs: the whole suite runs on QEMU_CPU=max, which has the dotprod
# extension, so the NEON table's quantized products are the SDOT set;
# then the quantized-product tests (quant, qmatmul) and dispatch run
# again on a Cortex-A53 (no dotprod), where dispatch must hand out the
# plain-NEON set (an SDOT there would be SIGILL). The dispatch test prints
# which set it found, and this script checks that line on both CPUs.
set -euo pipefail

cd "$(dirname "$0")/.."
build=build-ci-arm
cross=cross/aarch64-linux-gnu.ini

for tool in meson ninja aarch64-linux-gnu-gcc qemu-aarch64 python3; do
    if ! command -v "$tool" >/dev/null; then
        echo "test-aarch64: $tool not found (run .ci/install-deps.sh)" >&2
        exit 1
    fi
done

# No C++ cross compiler is installed: the C++ benchmark driver stays off.
setup_args=(--cross-file "$cross" -Dbench=disabled)
if [[ -d $build/meson-private ]]; then
    meson setup --wipe "$build" "${setup_args[@]}"
else
    rm -rf "$build"
    meson setup "$build" "${setup_args[@]}"
fi
meson compile -C "$build"

log=$build/meson-logs/testlog.json
log_nodp=$build/meson-logs/testlog-nodotprod.json
rm -f "$log" "$log_nodp"
status=0
# MHSA_TEST_QEMU: tests with very large loops sample less under emulation
# (and print that they do).
# CK_EXCLUDE_TAGS=slow: learning curves and the largest hardening cases
# stay out under emulation (the native and ASan runs take them).
QEMU_CPU=max MHSA_TEST_QEMU=1 CK_EXCLUDE_TAGS=slow \
    meson test -C "$build" --print-errorlogs \
    --timeout-multiplier 4 || status=$?
QEMU_CPU=cortex-a53 MHSA_TEST_QEMU=1 CK_EXCLUDE_TAGS=slow \
    meson test -C "$build" --print-errorlogs --timeout-multiplier 4 \
    --logbase testlog-nodotprod quant qmatmul dispatch || status=$?

if [[ ! -s $log ]]; then
    echo "test-aarch64: meson wrote no test log ($log): no test ran" >&2
    exit 1
fi

python3 - "$log" "$log_nodp" <<'EOF' || status=1
import json
import sys

# Tests that loop over every ISA with kernels_or_skip(); they must have run.
REQUIRED = {"kernel_sgemm", "kernel_softmax", "kernel_permute", "gemm",
            "kernel_gemv", "kernel_convert", "kernel_rows_finite", "quant"}


def load(path):
    try:
        return [json.loads(line) for line in open(path, encoding="utf-8")
                if line.strip()]
    except OSError:
        return []


def output(tests, name):
    return "".join((t.get("stdout") or "") + (t.get("stderr") or "")
                   for t in tests if t.get("name") == name)


tests = load(sys.argv[1])
nodp = load(sys.argv[2])
problems = []
# Which quantized products the NEON table got on each CPU.
for label, run, want in (("max", tests, "neon-dotprod"),
                         ("cortex-a53", nodp, "neon")):
    if f"neon quantized products: {want}\n" not in output(run, "dispatch"):
        problems.append(f"dispatch on {label}: the NEON table's quantized "
                        f"products are not the {want} set")
    for name in ("quant", "qmatmul", "dispatch"):
        if not any(t.get("name") == name and t.get("result") == "OK"
                   for t in run):
            problems.append(f"{name} on {label}: missing or not passed")
if not tests:
    problems.append("no test ran")
for t in tests + nodp:
    name, result = t.get("name", "?"), t.get("result", "?")
    if result != "OK":
        problems.append(f"{name}: {result}")
    # Test binaries run under the exe_wrapper; a script-driven test (e.g.
    # interop) runs its aarch64 helper through MESON_EXE_WRAPPER.
    cmd = t.get("command") or []
    wrapper = (t.get("env") or {}).get("MESON_EXE_WRAPPER", "")
    if not any("qemu-aarch64" in c for c in cmd) and \
            "qemu-aarch64" not in wrapper:
        problems.append(f"{name}: not run under qemu-aarch64: {cmd[:2]}")
    out = (t.get("stdout") or "") + (t.get("stderr") or "")
    if "skip: isa neon" in out:
        problems.append(f"{name}: NEON kernels were skipped")
ran = {t.get("name") for t in tests if t.get("result") == "OK"}
for name in sorted(REQUIRED - ran):
    problems.append(f"{name}: kernel test missing or not passed")

ok = sum(t.get("result") == "OK" for t in tests)
print(f"test-aarch64: {ok}/{len(tests)} tests OK under qemu-aarch64 (max)")
ok = sum(t.get("result") == "OK" for t in nodp)
print(f"test-aarch64: {ok}/{len(nodp)} tests OK under qemu-aarch64 "
      f"(cortex-a53)")
for p in problems:
    print(f"test-aarch64: FAIL: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
EOF

exit "$status"
