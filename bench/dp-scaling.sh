#!/usr/bin/env bash
# dp-scaling.sh — tokens/s of data-parallel mhsa-train on this machine: one
# process with 2 OpenMP threads (the plain trainer's bits, --grad-groups 1)
# against mpirun -np 1 and -np 2 with one thread per rank (--grad-groups 2),
# on the same global batch, for a small and a larger model. Prints one row
# per run with the time per step, tokens/s, the speed-up over -np 1 and the
# share of a step spent in the deterministic reduction (the slowest rank's
# reduce-scatter, tree sums, norm and parameter allgather; waiting for a
# slower rank is not counted: mhsa-train's last stderr line shows it apart).
# A last row runs two independent copies of the -np 1 run at once, one per
# core, without MPI: their summed tokens/s is what two cores of this machine
# give at best, the ceiling of -np 2.
#
#   bash bench/dp-scaling.sh [BUILD_DIR] [small|large|all] [REPEATS]
#
# Needs an MPI build (meson -Dmpi=enabled). Timings on a shared machine are
# noisy: REPEATS (default 3) runs of each, interleaved, the best kept. On a
# Linux machine other sessions share, run it in a scheduling group of its
# own at a high weight (as root), or two cores are never free at once:
#   setsid sh -c 'echo -20 > /proc/self/autogroup; bash bench/dp-scaling.sh'

set -euo pipefail

build=${1:-build}
which=${2:-all}
repeats=${3:-3}
exe=$(realpath "$build/mhsa-train")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mpi=(mpirun --oversubscribe --allow-run-as-root)
small=(--d-model 32 --heads 4 --seq-len 12 --vocab 64 --batch 32
       --epochs 1 --steps-per-epoch 400)
large=(--d-model 256 --heads 8 --seq-len 128 --vocab 256 --batch 64
       --epochs 1 --steps-per-epoch 10)

# The numbers of mhsa-train's last stderr line:
# "... G groups: X ms/step (...); deterministic reduction Y% ...; Z tokens/s"
stats() {
    grep 'deterministic reduction' "$1" | tail -n 1 |
        sed -E 's/.*: ([0-9.]+) ms\/step.*reduction ([0-9.]+)%.*; ([0-9]+) tokens\/s/\1 \2 \3/'
}

run_one() {   # run_one NAME MODEL... ; appends "name ms pct tok" to $work/r
    local name=$1
    shift
    local out="$work/err"
    case $name in
    omp2)  OMP_NUM_THREADS=2 "$exe" "$@" --grad-groups 1 \
               --checkpoint "$work/ck.st" >/dev/null 2>"$out" ;;
    np1)   OMP_NUM_THREADS=1 "${mpi[@]}" -np 1 "$exe" "$@" --grad-groups 2 \
               >/dev/null 2>"$out" ;;
    np2)   OMP_NUM_THREADS=1 "${mpi[@]}" -np 2 "$exe" "$@" --grad-groups 2 \
               >/dev/null 2>"$out" ;;
    pair)  # two copies at once, one per core: tokens/s summed, the slower
           # copy's time per step
           for c in 0 1; do
               OMP_NUM_THREADS=1 taskset -c $c "$exe" "$@" --grad-groups 2 \
                   >/dev/null 2>"$out$c" &
           done
           wait
           local a b
           a=($(stats "${out}0"))
           b=($(stats "${out}1"))
           awk -v a="${a[*]}" -v b="${b[*]}" 'BEGIN {
               split(a, x, " "); split(b, y, " ")
               printf "pair %.2f %.1f %d\n", (x[1] > y[1] ? x[1] : y[1]),
                      0, x[3] + y[3] }' >>"$work/r"
           return ;;
    esac
    echo "$name $(stats "$out")" >>"$work/r"
}

bench_model() {   # bench_model LABEL MODEL...
    local label=$1
    shift
    : >"$work/r"
    for _ in $(seq "$repeats"); do
        for name in np1 np2 omp2 pair; do
            run_one "$name" "$@"
        done
    done
    local params
    params=$(OMP_NUM_THREADS=1 "$exe" "$@" --steps-per-epoch 1 2>&1 \
             >/dev/null | grep -o '[0-9]* parameters' | head -n 1)
    echo
    echo "$label model: ${*:1:10}, $params"
    printf '%-34s %10s %10s %9s %11s\n' run ms/step tokens/s 'vs -np 1' \
        'reduction'
    # Best (highest tokens/s) of the repeats of each run.
    awk '{ if ($4 > best[$1]) { best[$1] = $4; ms[$1] = $2; pct[$1] = $3 } }
         END {
             split("np1 np2 omp2 pair", order, " ")
             label["np1"] = "mpirun -np 1, 1 thread, G=2"
             label["np2"] = "mpirun -np 2, 1 thread each, G=2"
             label["omp2"] = "1 process, 2 OpenMP threads, G=1"
             label["pair"] = "ceiling: 2 copies of -np 1 at once"
             for (i = 1; i <= 4; i++) {
                 k = order[i]
                 printf "%-34s %10.2f %10d %8.2fx %10.1f%%\n", label[k],
                        ms[k], best[k], best[k] / best["np1"], pct[k]
             }
         }' "$work/r"
}

echo "dp-scaling: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), best of $repeats"
[[ $which == small || $which == all ]] && bench_model small "${small[@]}"
[[ $which == large || $which == all ]] && bench_model larger "${large[@]}"
exit 0
