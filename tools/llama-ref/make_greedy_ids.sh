#!/usr/bin/env bash
# make_greedy_ids.sh [--own-types] LLAMA_CPP MODEL.gguf — writes a
# real-model reference: for each prompt of
# tests/data/llama/smollm2_prompts.txt, llama.cpp's greedy ids. A prompt
# line's "\n" stands for a newline (.ci/test-model.sh reads it so too);
# special tokens' text in it is the token, as llama-simple parses it.
#
# Default: tests/data/llama/smollm2_greedy.txt, the CI model step's
# reference. llama.cpp computes with the file dequantized to F32
# (llama-quantize --allow-requantize ... F32), so that both engines
# multiply the same fp32 weights: on Q4_1 weights llama.cpp would
# quantize the activations to 8 bits as well.
#
# --own-types: tests/data/llama/smollm2_greedy_q4_1.txt, llama.cpp on the
# file as it is, computing with its own types (Q4_1 and Q8_0 weights
# times 8-bit activations) and an F32 KV cache (greedy_ids --kv-f32, as
# mhsa-generate's default): the reference of an engine that computes on
# the quantized blocks too. Each prompt gets a fourth line, "top2_gaps:",
# llama.cpp's largest logit minus its second largest at every step (one
# per new id, one more when an end-of-generation token stopped it): where
# a gap is tiny, another engine's rounding may rightly pick the other
# token, and everything after it differs.
#
# LLAMA_CPP: a llama.cpp checkout built with cmake (build/bin/libllama.so;
# the references were made at commit c392e50), outside this repository;
# LLAMA_CPP_COMMIT names the commit when the checkout has no .git.
# MODEL.gguf: the model fetched by .ci/fetch-model.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
own=0
if [[ ${1:-} == --own-types ]]; then
    own=1
    shift
fi
llama=$1
model=$2
n=24
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source tools/llama-ref/llama_cpp.sh
build_greedy_ids "$llama" "$work/greedy_ids"
if ((own)); then
    file=$model
    out=tests/data/llama/smollm2_greedy_q4_1.txt
    on="in its own types, F32 KV cache"
    gaps=(--gaps --kv-f32)
    lines="its ids, the new ids and top2_gaps"
else
    file=$work/f32.gguf
    as_f32 "$llama" "$model" "$file"
    out=tests/data/llama/smollm2_greedy.txt
    on="dequantized to F32"
    gaps=()
    lines="its ids and the new ids"
fi
{
    commit=${LLAMA_CPP_COMMIT:-$(git -C "$llama" rev-parse --short HEAD \
                                 2>/dev/null || echo '(commit unknown)')}
    echo "# llama.cpp $commit, greedy, $n new tokens at"
    echo "# most, on SmolLM2-135M-Instruct.Q4_1.gguf $on"
    echo "# (tools/llama-ref/make_greedy_ids.sh). Per prompt: the prompt"
    echo "# line, then $lines."
    while IFS= read -r prompt; do
        [[ -z $prompt || $prompt == \#* ]] && continue
        echo "prompt: $prompt"
        "$work/greedy_ids" "${gaps[@]}" "$file" "$n" \
            "${prompt//\\n/$'\n'}" 2>/dev/null
    done < tests/data/llama/smollm2_prompts.txt
} > "$out"
echo "wrote $out"
