#!/usr/bin/env bash
# bench/llama-vs-llamacpp.sh LLAMA_CPP [MODEL.gguf] — a real model's speed
# beside llama.cpp's, in one run: prefill (pp512: a 512-token prompt) and
# decode (tg64: 64 new tokens) tokens/s of mhsa-generate --bench and of
# llama-bench (-fa 1), at 1 and 2 threads, alternating, best of each, with
# the ratio mhsa / llama.cpp; the time to first token of a 16-token prompt
# (mhsa-generate --bench: text in to the first new token's text out, the
# median of 9; llama.cpp: llama-bench's pp16, 16 / its tokens/s, which
# leaves out tokenizing and picking the token, both well under 1% of it),
# the least over the rounds; beside decode, the read bandwidth measured in
# the same run (./build/bench roofline/read, 256 MiB: DRAM) and what it
# allows: weight bytes per token (as stored) / bandwidth.
#
# LLAMA_CPP: a llama.cpp checkout built with cmake outside this repository
# (build/bin/llama-bench, llama-quantize). MODEL: default the file
# .ci/fetch-model.sh gets. Both engines compute with the same fp32 weights:
# llama.cpp runs the file dequantized to F32 (llama-quantize ... F32), mhsa
# dequantizes at load. Needs ./build (meson setup build; meson compile -C
# build mhsa-generate bench). ROUNDS=3 pairs per thread count.
# WEIGHTS="f32 f16 bf16" (default f32): the weights' storage, each in turn
# per round (so every dtype sees the same load): mhsa-generate
# --weight-dtype W beside llama.cpp on the file llama-quantize makes in
# that type (--allow-requantize), bytes per token as each stores them; with
# more than one, the decode speed of each over the first's per engine.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/peer_helpers.sh
llama=$1
model=${2:-$(bash .ci/fetch-model.sh smollm2 | tail -n 1)}
rounds=${ROUNDS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
weights=${WEIGHTS:-f32}
for w in $weights; do
    "$llama/build/bin/llama-quantize" --allow-requantize "$model" \
        "$work/$w.gguf" "${w^^}" >/dev/null 2>&1
done
meson compile -C build mhsa-generate bench >/dev/null

machine_line
for t in 1 2; do
    for w in $weights; do
        : > "$work/m_pp.$w"; : > "$work/m_tg.$w"; : > "$work/l_pp.$w"
        : > "$work/l_tg.$w"; : > "$work/m_ft.$w"; : > "$work/l_ft.$w"
    done
    for r in $(seq "$rounds"); do
      for w in $weights; do
        ./build/mhsa-generate --model "$model" --bench --threads "$t" \
            --weight-dtype "$w" > "$work/m.$w" 2>/dev/null
        awk '/^pp512:/ { print $2 }' "$work/m.$w" >> "$work/m_pp.$w"
        awk '/^tg64:/ { print $2 }' "$work/m.$w" >> "$work/m_tg.$w"
        awk '/^ttft:/ { print $2 }' "$work/m.$w" >> "$work/m_ft.$w"
        "$llama/build/bin/llama-bench" -m "$work/$w.gguf" -p 512,16 -n 64 \
            -t "$t" -fa 1 -r 1 -o csv > "$work/l" 2>/dev/null
        "$llama/build/bin/llama-bench" -m "$work/$w.gguf" -p 16 -n 0 \
            -t "$t" -fa 1 -r 9 -o csv > "$work/l16" 2>/dev/null
        llama_bench_ts "$work/l" 512 0 >> "$work/l_pp.$w"
        llama_bench_ts "$work/l" 0 64 >> "$work/l_tg.$w"
        llama_bench_ts "$work/l16" 16 0 | awk '{ print 16e3 / $1 }' \
            >> "$work/l_ft.$w"
      done
    done
    bw=$(read_bandwidth build "$t")
    first=${weights%% *}
    for w in $weights; do
    m_pp=$(best < "$work/m_pp.$w"); m_tg=$(best < "$work/m_tg.$w")
    l_pp=$(best < "$work/l_pp.$w"); l_tg=$(best < "$work/l_tg.$w")
    m_ft=$(least < "$work/m_ft.$w")
    l_ft=$(least < "$work/l_ft.$w")
    bytes=$(awk '/weights/ { for (i = 1; i <= NF; i++) if ($i == "MB") print $(i-1) }' "$work/m.$w")
    python3 - "$t" "$m_pp" "$l_pp" "$m_tg" "$l_tg" "$bw" "$bytes" "$m_ft" \
        "$l_ft" "$(cut -d' ' -f1 /proc/loadavg)" "$w" \
        "$(best < "$work/m_tg.$first")" "$(best < "$work/l_tg.$first")" \
        "$first" <<'PY'
import sys
t, mpp, lpp, mtg, ltg, bw, mb, mft, lft, load, w, mtg0, ltg0, w0 = sys.argv[1:]
mtg0, ltg0 = float(mtg0), float(ltg0)
mpp, lpp, mtg, ltg, bw, mb = map(float, (mpp, lpp, mtg, ltg, bw, mb or 0))
mft, lft = float(mft), float(lft)
lim = bw * 1e3 / mb if mb and bw else 0.0
rel = (f" [{w} / {w0} decode: mhsa {mtg / mtg0:.2f}x, llama.cpp"
       f" {ltg / ltg0:.2f}x]" if w != w0 else "")
print(f"{t} thread(s), weights {w}: pp512 mhsa {mpp:.1f} / llama.cpp {lpp:.1f} tokens/s"
      f" = {mpp / lpp:.2f}x; tg64 mhsa {mtg:.1f} / llama.cpp {ltg:.1f}"
      f" = {mtg / ltg:.2f}x; read bandwidth {bw:.1f} GB/s, {mb:.0f} MB of"
      f" weights per token: at most {lim:.1f} tokens/s"
      f" (mhsa at {mtg / lim if lim else 0:.2f} of it); ttft (16 tokens)"
      f" mhsa {mft:.2f} / llama.cpp {lft:.2f} ms = {mft / lft:.2f}x;"
      f" load {load}{rel}")
PY
    done
done
