#!/usr/bin/env bash
# check_quant_types.sh LLAMA_CPP MODEL.gguf [TYPE ...] — the real model in
# other GGUF weight types, end to end, against llama.cpp: for each TYPE
# (default Q4_K_M Q5_K_M Q6_K Q3_K_M Q3_K_S Q2_K IQ4_NL IQ4_XS Q5_0 Q5_1
# Q8_0 F16), llama-quantize --allow-requantize makes MODEL in that type
# (SmolLM2's 576-wide rows are no multiple of 256, so a k-quant file
# mixes q5_0, q5_1, q8_0 or iq4_nl with the k-quants, as the files people
# download do), then for every prompt of
# tests/data/llama/smollm2_prompts.txt
#   mhsa-generate --model FILE --temperature 0 -n 24 --ids
# must give exactly the ids llama.cpp gives on that file dequantized to F32
# (greedy_ids.c; make_greedy_ids.sh says why F32). A development check:
# LLAMA_CPP is a llama.cpp checkout built with cmake outside this
# repository (libllama, llama-quantize); mhsa's build is ./build.
set -euo pipefail
cd "$(dirname "$0")/../.."
llama=$1
model=$2
shift 2
types=("$@")
[[ ${#types[@]} -gt 0 ]] ||
    types=(Q4_K_M Q5_K_M Q6_K Q3_K_M Q3_K_S Q2_K IQ4_NL IQ4_XS Q5_0 Q5_1
           Q8_0 F16)
n=24
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source tools/llama-ref/llama_cpp.sh
build_greedy_ids "$llama" "$work/greedy_ids"
meson compile -C build mhsa-generate >/dev/null
fails=0
for type in "${types[@]}"; do
    q=$work/$type.gguf
    "$llama/build/bin/llama-quantize" --allow-requantize "$model" "$q" \
        "$type" >"$work/quantize.log" 2>&1
    as_f32 "$llama" "$q" "$work/f32.gguf"
    kinds=$(grep -o 'converting to [a-z0-9_A-Z]*' "$work/quantize.log" |
            awk '{print $NF}' | sort | uniq -c |
            awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}')
    same=0 total=0
    while IFS= read -r prompt; do
        [[ -z $prompt || $prompt == \#* ]] && continue
        p=${prompt//\\n/$'\n'}
        want=$("$work/greedy_ids" "$work/f32.gguf" "$n" "$p" 2>/dev/null)
        got=$(./build/mhsa-generate --model "$q" --prompt "$p" \
              --temperature 0 -n "$n" --ids 2>/dev/null || true)
        total=$((total + 1))
        if [[ $got == "$want" ]]; then
            same=$((same + 1))
        else
            printf '%s, "%s":\n  got  %s\n  want %s\n' "$type" "$prompt" \
                "${got//$'\n'/ | }" "${want//$'\n'/ | }" >&2
        fi
    done < tests/data/llama/smollm2_prompts.txt
    echo "$type ($kinds): $same of $total prompts give llama.cpp's ids"
    [[ $same -eq $total ]] || fails=$((fails + 1))
    rm -f "$q" "$work/f32.gguf"
done
[[ $fails -eq 0 ]]
