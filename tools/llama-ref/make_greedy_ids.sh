#!/usr/bin/env bash
# make_greedy_ids.sh LLAMA_CPP MODEL.gguf — writes the real-model reference
# of the CI's model step (tests/data/llama/smollm2_greedy.txt): for each
# prompt of tests/data/llama/smollm2_prompts.txt, llama.cpp's greedy ids.
# A prompt line's "\n" stands for a newline (.ci/test-model.sh reads it so
# too); special tokens' text in it is the token, as llama-simple parses it.
#
# LLAMA_CPP: a llama.cpp checkout built with cmake (build/bin/libllama.so;
# the reference was made at commit c392e50), outside this repository;
# LLAMA_CPP_COMMIT names the commit when the checkout has no .git.
# MODEL.gguf: the model fetched by .ci/fetch-model.sh. llama.cpp computes
# with the file dequantized to F32 (llama-quantize --allow-requantize ...
# F32), so that both engines multiply the same fp32 weights: on Q4_1
# weights llama.cpp would quantize the activations to 8 bits as well.
set -euo pipefail
cd "$(dirname "$0")/../.."
llama=$1
model=$2
n=24
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source tools/llama-ref/llama_cpp.sh
build_greedy_ids "$llama" "$work/greedy_ids"
as_f32 "$llama" "$model" "$work/f32.gguf"
out=tests/data/llama/smollm2_greedy.txt
{
    commit=${LLAMA_CPP_COMMIT:-$(git -C "$llama" rev-parse --short HEAD \
                                 2>/dev/null || echo '(commit unknown)')}
    echo "# llama.cpp $commit, greedy, $n new tokens at"
    echo "# most, on SmolLM2-135M-Instruct.Q4_1.gguf dequantized to F32"
    echo "# (tools/llama-ref/make_greedy_ids.sh). Per prompt: the prompt"
    echo "# line, then its ids and the new ids."
    while IFS= read -r prompt; do
        [[ -z $prompt || $prompt == \#* ]] && continue
        echo "prompt: $prompt"
        "$work/greedy_ids" "$work/f32.gguf" "$n" "${prompt//\\n/$'\n'}" \
            2>/dev/null
    done < tests/data/llama/smollm2_prompts.txt
} > "$out"
echo "wrote $out"
