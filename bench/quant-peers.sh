#!/usr/bin/env bash
# bench/quant-peers.sh LLAMA_CPP IK_LLAMA_CPP FILE.gguf... — the GGUF files
# people run (Q4_0, Q4_K_M, Q8_0, ...) in three engines, each computing
# on the file as it is, in one run. For each file and 1 and 2
# threads one table row:
#   - pp512 and tg64 tokens/s of mhsa-generate --model FILE --bench (with
#     its default weights: whatever it does with that file's types), of
#     llama.cpp's llama-bench -fa 1 and of ik_llama.cpp's llama-bench -fa 1
#     -rtr 1 (its run-time repacking), all with -p 512 -n 64 -r REPS;
#   - the ratios mhsa / llama.cpp and mhsa / ik_llama.cpp;
#   - the peak RSS (/usr/bin/time -f %M) of a greedy 64-token generation
#     by mhsa-generate and by llama.cpp's llama-cli (-no-cnv, -c 256: a
#     context of the same order as mhsa's prompt + 64);
#   - the decode limit: the weight bytes one token reads as the file
#     stores them (weight_bytes in peer_helpers.sh) / the read bandwidth
#     from DRAM measured in the same run (BUILD/bench roofline/read,
#     256 MiB, at that thread count), and mhsa's tg64 as a fraction of it.
# Engines alternate per file; ROUNDS (default 1) rounds, the best of each.
#
# LLAMA_CPP, IK_LLAMA_CPP: checkouts built with cmake outside this
# repository (build/bin/llama-bench and llama-cli; ik_llama.cpp's
# build/bin/llama-bench). BUILD (default build): mhsa's meson build dir,
# where mhsa-generate and bench are compiled first. REPS (default 2):
# llama-bench's -r. An engine that fails on a file gets "-" in its
# columns (its error on stderr); the table goes on.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/peer_helpers.sh
if [[ $# -lt 3 ]]; then
    echo "usage: bench/quant-peers.sh LLAMA_CPP IK_LLAMA_CPP FILE.gguf..." >&2
    exit 2
fi
llama=$1
ik=$2
shift 2
files=("$@")
build=${BUILD:-build}
rounds=${ROUNDS:-1}
reps=${REPS:-2}
prompt="Once upon a time, in a small village,"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in "${files[@]}"; do
    [[ -f $f ]] || { echo "quant-peers: no file $f" >&2; exit 2; }
done
meson compile -C "$build" mhsa-generate bench >/dev/null

# peak_rss_mb OUT CMD...: CMD's peak RSS in MB, or "-" when it fails.
peak_rss_mb() {
    local out=$1
    shift
    if /usr/bin/time -f %M -o "$work/rss" "$@" </dev/null >"$out" \
            2>"$out.err"; then
        awk '{ printf "%.0f\n", $1 * 1024 / 1e6 }' "$work/rss"
    else
        echo "quant-peers: failed: $* (last lines of its stderr:)" >&2
        tail -n 3 "$out.err" >&2
        echo "-"
    fi
}

# run_bench ENGINE FILE T: appends pp512 and tg64 of one run to
# $work/ENGINE.pp and .tg (nothing when it fails).
run_bench() {
    local e=$1 f=$2 t=$3 out=$work/$1.out
    case $e in
    mhsa)
        if "$build/mhsa-generate" --model "$f" --bench --threads "$t" \
                >"$out" 2>"$out.err"; then
            awk '/^pp512:/ { print $2 }' "$out" >> "$work/$e.pp"
            awk '/^tg64:/ { print $2 }' "$out" >> "$work/$e.tg"
            return
        fi ;;
    llama | ik)
        local dir=$llama extra=()
        if [[ $e == ik ]]; then
            dir=$ik
            extra=(-rtr 1)
        fi
        if "$dir/build/bin/llama-bench" -m "$f" -p 512 -n 64 -t "$t" \
                -fa 1 "${extra[@]}" -r "$reps" -o csv >"$out" \
                2>"$out.err"; then
            llama_bench_ts "$out" 512 0 >> "$work/$e.pp"
            llama_bench_ts "$out" 0 64 >> "$work/$e.tg"
            return
        fi ;;
    esac
    echo "quant-peers: $e failed on $f, $t thread(s):" >&2
    tail -n 3 "$out.err" >&2
}

commit() { git -C "$1" rev-parse --short HEAD 2>/dev/null || echo '?'; }
machine_line
echo "llama.cpp $(commit "$llama"), ik_llama.cpp $(commit "$ik");" \
     "llama-bench -p 512 -n 64 -fa 1 -r $reps (ik: -rtr 1);" \
     "mhsa-generate --bench; best of $rounds round(s)"
echo
echo "| file | MB | T | pp512 mhsa | llama.cpp | ik | mhsa/llama.cpp" \
     "| mhsa/ik | tg64 mhsa | llama.cpp | ik | mhsa/llama.cpp | mhsa/ik" \
     "| RSS mhsa MB | RSS llama-cli MB | GB/s | limit tg | mhsa/limit" \
     "| load |"
printf '|---%.0s' {1..19}
echo '|'
for t in 1 2; do
    bw=$(read_bandwidth "$build" "$t")
    for f in "${files[@]}"; do
        for e in mhsa llama ik; do
            : > "$work/$e.pp"
            : > "$work/$e.tg"
        done
        for _ in $(seq "$rounds"); do
            for e in mhsa llama ik; do
                run_bench "$e" "$f" "$t"
            done
        done
        rss_m=$(peak_rss_mb "$work/gen.m" "$build/mhsa-generate" \
                --model "$f" --prompt "$prompt" -n 64 --temperature 0 \
                --threads "$t")
        rss_l=$(peak_rss_mb "$work/gen.l" "$llama/build/bin/llama-cli" \
                -m "$f" -p "$prompt" -n 64 --temp 0 -t "$t" -c 256 -no-cnv)
        python3 - "$(basename "$f")" "$(stat -c %s "$f")" "$t" \
            "$(best < "$work/mhsa.pp")" "$(best < "$work/llama.pp")" \
            "$(best < "$work/ik.pp")" "$(best < "$work/mhsa.tg")" \
            "$(best < "$work/llama.tg")" "$(best < "$work/ik.tg")" \
            "$rss_m" "$rss_l" "$bw" "$(weight_bytes "$f")" \
            "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import sys
name, size, t, mpp, lpp, ipp, mtg, ltg, itg, rm, rl, bw, wb, load = \
    sys.argv[1:]
num = lambda s: float(s) if s not in ("", "-") else None
mpp, lpp, ipp, mtg, ltg, itg, bw = map(num, (mpp, lpp, ipp, mtg, ltg,
                                            itg, bw))
lim = bw * 1e9 / float(wb) if bw else None
f = lambda x: "-" if x is None else f"{x:.1f}"
r = lambda a, b: "-" if a is None or not b else f"{a / b:.2f}x"
print(f"| {name} | {int(size) / 1e6:.0f} | {t} | {f(mpp)} | {f(lpp)} |"
      f" {f(ipp)} | {r(mpp, lpp)} | {r(mpp, ipp)} | {f(mtg)} | {f(ltg)} |"
      f" {f(itg)} | {r(mtg, ltg)} | {r(mtg, itg)} | {rm} | {rl} |"
      f" {f(bw)} | {f(lim)} | {r(mtg, lim)} | {load} |")
PY
    done
done
