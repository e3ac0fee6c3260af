#!/usr/bin/env bash
# test-mpi.sh — data-parallel mhsa-train over Open MPI: the same final
# checkpoint, byte for byte, from one process and from mpirun -np 1, 2, 4
# (shared memory and TCP on loopback), with 1 and 2 OpenMP threads per rank;
# a run killed with SIGKILL ends non-zero within seconds and its last
# checkpoint resumes, on another number of ranks, to the bytes of an
# uninterrupted run. The GPT (--task text --preset tiny) too: -np 1 and 2
# write one process's checkpoint, and a run cut on 2 ranks resumes on 1.
#
#   bash .ci/test-mpi.sh [BUILD_DIR]    (default: build; run from the root)
#
# Needs libopenmpi-dev + openmpi-bin (.ci/install-deps.sh); the build dir is
# reconfigured with -Dmpi=enabled, so a build without MPI fails here loudly.
# Every mpirun runs under `timeout`: a hang is a failure, not a stuck CI.
set -euo pipefail

build=${1:-build}
cd "$(dirname "$0")/.."
meson configure "$build" -Dmpi=enabled >/dev/null
meson compile -C "$build" mhsa-train mhsa-info >/dev/null
exe=$(realpath "$build/mhsa-train")
info=$(realpath "$build/mhsa-info")

src=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

export OMP_NUM_THREADS=1
# Root in CI containers; oversubscribe: -np 4 on a 2-core machine.
mpi=(timeout 120 mpirun --oversubscribe --allow-run-as-root)
tcp=(--mca btl self,tcp --mca btl_tcp_if_include lo)
# A run with every part of a step exercised: uncounted targets (induction),
# clipping (the norm crosses ranks), weight decay, 4 groups.
args=(--task induction --seq-len 16 --batch 16 --d-model 32 --heads 4
      --epochs 2 --steps-per-epoch 15 --grad-groups 4 --clip 1
      --weight-decay 0.01 --seed 3)

fail() { echo "test-mpi: FAIL: $*" >&2; exit 1; }
same() {   # same REF FILE WHAT
    cmp -s "$1" "$2" || fail "$3: $2 differs from $1"
    echo "  same bytes: $3"
}
step_of() {   # the mhsa.step of a checkpoint's metadata
    head -c 4096 "$1" | grep -ao '"mhsa.step":"[0-9]*"' | grep -o '[0-9]*'
}

echo "== one process (no MPI), G = 4"
timeout 120 "$exe" "${args[@]}" --checkpoint ref.st >/dev/null 2>ref.err ||
    { cat ref.err; fail "single-process run"; }

echo "== shared memory: mpirun -np 1, 2, 4"
for np in 1 2 4; do
    "${mpi[@]}" -np $np "$exe" "${args[@]}" --checkpoint shm$np.st \
        >/dev/null 2>shm$np.err || { cat shm$np.err; fail "-np $np"; }
    same ref.st shm$np.st "-np $np (shared memory)"
done

echo "== TCP on loopback: mpirun -np 2, 4"
for np in 2 4; do
    "${mpi[@]}" -np $np "${tcp[@]}" "$exe" "${args[@]}" \
        --checkpoint tcp$np.st >/dev/null 2>tcp$np.err ||
        { cat tcp$np.err; fail "-np $np over TCP"; }
    same ref.st tcp$np.st "-np $np (TCP)"
done

echo "== grouped-query attention, RoPE and a sliding window: -np 1, 2"
attn=(--kv-heads 2 --rope 4 --window 6)
timeout 120 "$exe" "${args[@]}" "${attn[@]}" --checkpoint attn.st \
    >/dev/null 2>attn.err || { cat attn.err; fail "attention variants"; }
"${mpi[@]}" -np 2 "$exe" "${args[@]}" "${attn[@]}" --checkpoint attn2.st \
    >/dev/null 2>attn2.err || { cat attn2.err; fail "-np 2 attention"; }
same attn.st attn2.st "-np 2 with --kv-heads 2 --rope 4 --window 6"
cmp -s ref.st attn.st && fail "the attention flags changed nothing"

echo "== 2 OpenMP threads per rank"
"${mpi[@]}" -np 2 --bind-to none -x OMP_NUM_THREADS=2 "$exe" "${args[@]}" \
    --checkpoint omp2.st >/dev/null 2>omp2.err ||
    { cat omp2.err; fail "-np 2 with 2 threads"; }
same ref.st omp2.st "-np 2 x 2 OpenMP threads"
OMP_NUM_THREADS=2 timeout 120 "$exe" "${args[@]}" --checkpoint omp2s.st \
    >/dev/null 2>/dev/null || fail "one process with 2 threads"
same ref.st omp2s.st "one process x 2 OpenMP threads"

echo "== --grad-groups 1 under mpirun: the plain loop's weights"
timeout 120 "$exe" --epochs 1 --steps-per-epoch 20 --save plain.st \
    >/dev/null 2>&1 || fail "plain run"
"${mpi[@]}" -np 1 "$exe" --epochs 1 --steps-per-epoch 20 --save g1.st \
    --checkpoint g1ck.st >/dev/null 2>g1.err || { cat g1.err; fail "G=1"; }
same plain.st g1.st "-np 1 --grad-groups 1 vs the plain loop (--save)"

echo "== groups that do not fit the ranks: exit 2 with a message"
set +e
"${mpi[@]}" -np 2 "$exe" --grad-groups 3 --batch 30 >/dev/null 2>bad.err
rc=$?
set -e
[[ $rc -ne 0 ]] || fail "--grad-groups 3 on 2 ranks succeeded"
grep -q -- "--grad-groups 3 is not a multiple of the 2 ranks" bad.err ||
    { cat bad.err; fail "no message for --grad-groups 3 on 2 ranks"; }

echo "== ranks with different kernels: refused before the first step"
if [[ $("$info" --isa) == scalar ]]; then
    echo "  (skipped: this CPU has only the scalar kernels)"
else
    set +e
    "${mpi[@]}" -np 2 bash -c '[[ $OMPI_COMM_WORLD_RANK == 1 ]] &&
        export MHSA_ISA=scalar; exec "$0" "$@"' "$exe" --grad-groups 2 \
        >/dev/null 2>isa.err
    rc=$?
    set -e
    [[ $rc -ne 0 ]] || fail "ranks with avx2 and scalar kernels ran"
    grep -q "rank 1 runs the scalar kernels" isa.err ||
        { cat isa.err; fail "no message for ranks with different kernels"; }
fi

echo "== the GPT (--task text --preset tiny), G = 4: one process, -np 1, 2"
# A small corpus that is always there: the first 40 KB of the project's
# own prose.
python3 -c 'import sys; sys.stdout.buffer.write(b"".join(open(f, "rb").read() for f in sys.argv[1:])[:40000])' \
    "$src/README.md" "$src"/docs/*.md >corpus.txt
text=(--task text --data corpus.txt --eval-every 10 --val-tokens 256)
tiny=(--preset tiny --steps 10 --grad-groups 4 --seed 5)
timeout 120 "$exe" "${text[@]}" "${tiny[@]}" --save text.st >/dev/null \
    2>text.err || { cat text.err; fail "GPT in one process"; }
for np in 1 2; do
    "${mpi[@]}" -np $np "$exe" "${text[@]}" "${tiny[@]}" --save text$np.st \
        >/dev/null 2>text$np.err || { cat text$np.err; fail "GPT -np $np"; }
    same text.st text$np.st "GPT -np $np"
done
timeout 120 "$exe" "${text[@]}" --preset tiny --steps 10 --seed 5 \
    --save text_g1.st >/dev/null 2>&1 || fail "GPT with one group"
cmp -s text.st text_g1.st && fail "the GPT's --grad-groups 4 changed nothing"
echo "== the GPT cut after step 4 on 2 ranks, resumed with mpirun -np 1"
"${mpi[@]}" -np 2 "$exe" "${text[@]}" "${tiny[@]}" --stop-after 4 \
    --save textcut.st >/dev/null 2>textcut.err ||
    { cat textcut.err; fail "GPT cut on 2 ranks"; }
"${mpi[@]}" -np 1 "$exe" "${text[@]}" --resume textcut.st \
    --save textres.st >/dev/null 2>textres.err ||
    { cat textres.err; fail "GPT resumed on 1 rank"; }
same text.st textres.st "GPT cut at step 4 on 2 ranks, resumed on 1"

echo "== SIGKILL of a rank: the job ends non-zero within seconds"
# The killed run would go on for thousands of steps (the schedule has no
# end-dependent part, so the step count of the command line does not change
# a step) and writes a checkpoint every 5; the uninterrupted reference then
# runs whole epochs of 15 steps past the step the kill left (on a loaded
# machine the kill may come some checkpoints late).
long=(--task induction --seq-len 16 --batch 16 --d-model 32 --heads 4
      --steps-per-epoch 15 --grad-groups 4 --clip 1 --weight-decay 0.01
      --seed 3)
"${mpi[@]}" -np 2 "$exe" "${long[@]}" --epochs 400 --checkpoint-every 5 \
    --checkpoint killed.st >/dev/null 2>killed.err &
job=$!
for _ in $(seq 600); do
    [[ -s killed.st ]] && break
    sleep 0.05
done
[[ -s killed.st ]] || { cat killed.err; fail "no checkpoint appeared"; }
launcher=$(pgrep -P "$job" mpirun)
victim=$(pgrep -P "$launcher" | tail -n 1)
[[ -n $victim ]] || fail "no rank process found under mpirun $launcher"
t0=$(date +%s.%N)
kill -KILL "$victim"
set +e
wait "$job"
rc=$?
set -e
dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "  rank pid $victim killed: mpirun exit $rc after $dt s"
[[ $rc -ne 0 && $rc -ne 124 ]] || fail "exit status $rc after the kill"
awk -v t="$dt" 'BEGIN { exit !(t < 20) }' || fail "took $dt s to end"
k=$(step_of killed.st)
echo "  last complete checkpoint: step $k"
[[ -n $k && $k -lt 600 ]] ||
    fail "the checkpoint is at step '$k', the kill came too late to test"
epochs=$((k / 15 + 2))

echo "== resume the killed run's checkpoint on 4 ranks (TCP) and 1 process"
"${mpi[@]}" -np 2 "$exe" "${long[@]}" --epochs $epochs --checkpoint whole.st \
    >/dev/null 2>whole.err || { cat whole.err; fail "uninterrupted run"; }
cp killed.st resume4.st
"${mpi[@]}" -np 4 "${tcp[@]}" "$exe" "${long[@]}" --epochs $epochs \
    --resume resume4.st --checkpoint resume4.st >/dev/null 2>resume4.err ||
    { cat resume4.err; fail "resume on 4 ranks"; }
same whole.st resume4.st "killed at step $k, resumed on 4 ranks"
timeout 120 "$exe" "${long[@]}" --epochs $epochs --resume killed.st \
    --checkpoint resume1.st >/dev/null 2>resume1.err ||
    { cat resume1.err; fail "resume in one process"; }
same whole.st resume1.st "killed at step $k, resumed in one process"
echo "test-mpi: all passed"
