#!/usr/bin/env bash
# .ci/test-gemma.sh [BUILD] — Gemma 3 270M from its real file, end to end
# (the sibling of .ci/test-model.sh): fetches gemma-3-270m-q4_k_m.gguf
# (.ci/fetch-model.sh gemma3) and runs
#   mhsa-generate --model FILE --prompt P --temperature 0 -n 24 --ids
# against tests/data/gemma3/gemma3_greedy.txt: transformers'
# Gemma3ForCausalLM on the same file dequantized to fp32, greedy
# (tools/gemma-ref/make_gemma_greedy.py), with its top-two logit gap at
# every step.
#
# The compared steps of a prompt are those before its first step whose
# reference gap is below $near (0.5): there two fp32 engines that sum in
# other orders could pick differently, and with 8-bit activations any
# near tie may move. Every check requires the recorded prompt ids exactly
# (the tokenizer) and the recorded new ids at every compared step; the
# output says how many runs give all 24.
#
# 1. --weight-dtype f32 (transformers' weights): the prompts spread over
#    every ISA this CPU runs (MHSA_ISA) at 1 and 2 threads, each once.
# 2. The default, the file's own types (Q5_0, Q4_K, Q6_K, Q8_0 blocks
#    times int8 activations): every prompt on the ISA dispatch picks at 1
#    and 2 threads, which must give the same ids, and on another ISA in
#    turn.
# 3. Memory: the peak RSS of a greedy 64-token generation in file mode is
#    at most the file's size + 64 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=.ci/peak-rss.sh
source .ci/peak-rss.sh
build=${1:-build}
model=$(bash .ci/fetch-model.sh gemma3 | tail -n 1)
meson compile -C "$build" mhsa-generate mhsa-info >/dev/null
# MHSA_GEMMA_REF: another reference file, to test this script (an id
# changed at a compared step must fail it, one after it must not).
ref=${MHSA_GEMMA_REF:-tests/data/gemma3/gemma3_greedy.txt}
near=0.5

auto=$("$build/mhsa-info" --isa)
isas=("$auto")
for i in avx512 avx2 neon scalar; do
    [[ $i == "$auto" ]] && continue
    if MHSA_ISA=$i "$build/mhsa-info" --isa 2>/dev/null | grep -qx "$i"; then
        isas+=("$i")
    fi
done

prompts=()
want_prompt=()
want_new=()
want_gaps=()
while IFS= read -r line; do
    [[ $line == prompt:\ * ]] || continue
    prompts+=("${line#prompt: }")
    IFS= read -r l
    want_prompt+=("$l")
    IFS= read -r l
    want_new+=("$l")
    IFS= read -r l
    want_gaps+=("$l")
done < "$ref"
if [[ ${#prompts[@]} -eq 0 ]]; then
    echo "gemma: no prompt in $ref" >&2
    exit 1
fi

runs=0
fails=0
full=0
# check MODE ISA THREADS K: prompt K; sets $got.
check() {
    local mode=$1 isa=$2 t=$3 k=$4 p=${prompts[$4]}
    p=${p//\\n/$'\n'}   # "\n" in the file is a newline
    got=$(MHSA_ISA=$isa "$build/mhsa-generate" --model "$model" \
          --prompt "$p" --temperature 0 -n 24 --ids --threads "$t" \
          --weight-dtype "$mode" 2>/dev/null)
    runs=$((runs + 1))
    local gp=${got%%$'\n'*} gn=${got#*$'\n'} a b g i stop
    if [[ $gp != "${want_prompt[k]}" ]]; then
        fails=$((fails + 1))
        printf 'gemma: %s %s %d thread(s), prompt "%s":\n  got  %s\n  want %s\n' \
            "$mode" "$isa" "$t" "${prompts[k]}" "$gp" "${want_prompt[k]}" >&2
        return
    fi
    read -ra a <<<"${gn#new_ids:}"
    read -ra b <<<"${want_new[k]#new_ids:}"
    read -ra g <<<"${want_gaps[k]#top2_gaps:}"
    stop=${#g[@]}   # the first step of a gap below $near
    for ((i = 0; i < ${#g[@]}; i++)); do
        if awk -v g="${g[i]}" -v n="$near" 'BEGIN { exit !(g < n) }'; then
            stop=$i
            break
        fi
    done
    i=0
    while ((i < ${#a[@]} && i < ${#b[@]})) && [[ ${a[i]} == "${b[i]}" ]]; do
        i=$((i + 1))
    done
    if ((i == ${#a[@]} && i == ${#b[@]})); then
        full=$((full + 1))
    elif ((i < stop)); then
        fails=$((fails + 1))
        printf 'gemma: %s %s %d thread(s), prompt "%s": parts from' \
            "$mode" "$isa" "$t" "${prompts[k]}" >&2
        printf ' transformers at step %d, where its gap is %s (>= %s)\n' \
            "$i" "${g[i]:-none}" "$near" >&2
        printf '  got  %s\n  want %s\n' "$gn" "${want_new[k]}" >&2
    fi
}

# 1. f32: prompt k on the ISA/threads pair k of the round robin over
# every ISA, then 1 and 2 threads (isas[k % n], 1 + (k / n) % 2): each
# pair runs a few prompts, every prompt runs once (an f32 run
# dequantizes the file and reads 0.7 GB of head per token).
runs=0
fails=0
full=0
n=${#isas[@]}
for ((k = 0; k < ${#prompts[@]}; k++)); do
    check f32 "${isas[k % n]}" $((1 + (k / n) % 2)) "$k"
done
echo "gemma: f32 weights: $((runs - fails)) of $runs runs give" \
     "transformers' ids at every step of gap >= $near, $full all 24" \
     "(${#prompts[@]} prompts over ${isas[*]} x 1, 2 threads)"
[[ $fails -eq 0 ]]

# 2. File mode: every prompt on $auto at 1 and 2 threads (the same ids),
# and on another ISA in turn.
runs=0
fails=0
full=0
for ((k = 0; k < ${#prompts[@]}; k++)); do
    check file "$auto" 1 "$k"
    got1=$got
    check file "$auto" 2 "$k"
    if [[ $got != "$got1" ]]; then
        fails=$((fails + 1))
        printf 'gemma: file %s, prompt "%s": 2 threads gave\n  %s\n' \
            "$auto" "${prompts[k]}" "${got//$'\n'/ | }" >&2
        printf '  where 1 thread gave\n  %s\n' "${got1//$'\n'/ | }" >&2
    fi
    if ((n > 1)); then
        check file "${isas[1 + k % (n - 1)]}" $((1 + k % 2)) "$k"
    fi
done
echo "gemma: file types: $((runs - fails)) of $runs runs give" \
     "transformers' ids at every step of gap >= $near, $full all 24" \
     "(${#prompts[@]} prompts on $auto x 1, 2 threads and over" \
     "${isas[*]:1})"
[[ $fails -eq 0 ]]

# 3. Memory.
check_peak_rss gemma "$build" "$model"
