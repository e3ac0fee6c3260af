#!/usr/bin/env bash
# .ci/fuzz.sh [SECONDS] — builds the libFuzzer targets in fuzz/ with clang
# (-fsanitize=fuzzer,address,undefined; the library with fuzzer-no-link),
# replays the regression inputs in fuzz/regress/<target>/, then runs each
# target for SECONDS (default $FUZZ_SECONDS or 25; $FUZZ_JOBS targets at a
# time, default 2) from its in-tree seeds
# (fuzz/corpus/<target>/, read-only; new inputs go to a scratch corpus).
# Any crash, leak, UB report, timeout or OOM fails the script; the input
# that caused it is left in $BUILD/fuzz-artifacts/ — add it to
# fuzz/regress/<target>/ with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-${FUZZ_SECONDS:-25}}
build=${FUZZ_BUILD_DIR:-build-fuzz}

# clang links OpenMP code against LLVM's libomp, which the clang package
# does not pull in; install the matching one if it is missing.
if ! echo 'int main(void) { return 0; }' |
        clang -fopenmp -x c - -o /dev/null 2>/dev/null; then
    major=$(clang -dumpversion | cut -d. -f1)
    apt-get install -y --no-install-recommends "libomp-$major-dev"
fi
if [[ ! -f $build/build.ninja ]]; then
    rm -rf "$build"
    # The GEMM micro-kernels and packers get no coverage hooks (see
    # fuzz/coverage-ignore.txt); ASan and UBSan still instrument them.
    # -O1 and line tables only, as OSS-Fuzz builds its ASan targets: at
    # -O2 -g one SIMD file (avx2/kv_dot.c) was the build's critical path
    # (docs/testing.md, "Sanitizers and fuzzing").
    cflags="-fsanitize=fuzzer-no-link"
    cflags+=" -fsanitize-coverage-ignorelist=$PWD/fuzz/coverage-ignore.txt"
    cflags+=" -gline-tables-only"
    # No AVX-512 tables where this CPU lacks AVX-512 (never run here; a
    # quarter of this build's compile time): .ci/avx512-build-args.sh.
    # shellcheck disable=SC2046
    CC=clang meson setup "$build" -Dfuzz=true -Dbench=disabled \
        -Db_sanitize=address,undefined -Db_lundef=false \
        -Dbuildtype=plain -Doptimization=1 -Dc_args="$cflags" \
        $(bash .ci/avx512-build-args.sh)
fi
targets=(fuzz_forward fuzz_train_args fuzz_gguf)
# The weight-file reader and the GPT checkpoints exist only with jansson.
if grep -q 'fuzz/fuzz_safetensors:' "$build/build.ninja"; then
    targets+=(fuzz_safetensors fuzz_gpt)
fi
ninja -C "$build" "${targets[@]/#/fuzz/}"

# UBSan must abort (libFuzzer then saves the input); one OpenMP thread:
# fuzzing wants throughput per core, not parallel regions.
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export OMP_NUM_THREADS=1

mkdir -p "$build/fuzz-artifacts"

# One target: its regression inputs, then SECONDS of fuzzing; its output
# goes to $build/fuzz-artifacts/<target>.out, its summary line to .sum.
fuzz_one() {
    local t=$1 exe=$build/fuzz/$1 work log
    if [[ -d fuzz/regress/$t ]] && compgen -G "fuzz/regress/$t/*" >/dev/null
    then
        echo "== $t: regression inputs"
        "$exe" -runs=1 fuzz/regress/$t/* 2>&1 || return 1
    fi
    work=$(mktemp -d)
    log=$build/fuzz-artifacts/$t.log
    echo "== $t: ${secs} s from $(ls fuzz/corpus/$t | wc -l) seeds"
    if ! "$exe" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
            -max_len=4096 -print_final_stats=1 \
            -artifact_prefix="$build/fuzz-artifacts/$t-" \
            "$work" "fuzz/corpus/$t" >"$log" 2>&1; then
        tail -n 60 "$log"
        echo "$t: FAILED (input saved under $build/fuzz-artifacts/)"
        rm -rf "$work"
        return 1
    fi
    rm -rf "$work"
    local runs cov
    runs=$(awk '/stat::number_of_executed_units/ { print $2 }' "$log")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    printf '%-18s %10s executions, %6s coverage edges, %s s\n' \
        "$t" "$runs" "${cov:-?}" "$secs" >"$build/fuzz-artifacts/$t.sum"
}

# Two targets at a time (FUZZ_JOBS): fuzzing is bounded by wall time, so on
# the 2-core CI machine, where the other lane keeps the cores busy anyway,
# pairs halve this step's time for about a quarter fewer executions each.
jobs=${FUZZ_JOBS:-2}
pids=()
names=()
failed=()
reap() {   # waits for the oldest running target
    local pid=${pids[0]} name=${names[0]}
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
    wait "$pid" || failed+=("$name")
    cat "$build/fuzz-artifacts/$name.out"
}
for t in "${targets[@]}"; do
    rm -f "$build/fuzz-artifacts/$t.sum"
    fuzz_one "$t" >"$build/fuzz-artifacts/$t.out" 2>&1 &
    pids+=($!)
    names+=("$t")
    if [[ ${#pids[@]} -ge $jobs ]]; then
        reap
    fi
done
while [[ ${#pids[@]} -gt 0 ]]; do
    reap
done
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzzing failed: ${failed[*]}" >&2
    exit 1
fi
for t in "${targets[@]}"; do
    cat "$build/fuzz-artifacts/$t.sum"
done
