#!/usr/bin/env bash
# .ci/test-model.sh [BUILD] — the real model, end to end: fetches
# SmolLM2-135M-Instruct's GGUF file (.ci/fetch-model.sh), then for every
# prompt of tests/data/llama/smollm2_greedy.txt runs
#   mhsa-generate --model FILE --prompt P --temperature 0 -n 24 --ids
# on 1 and 2 threads and requires exactly the recorded prompt ids (the
# tokenizer) and new ids (the model) that llama.cpp gives on the same
# weights (tools/llama-ref/make_greedy_ids.sh made the file).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
model=$(bash .ci/fetch-model.sh | tail -n 1)
meson compile -C "$build" mhsa-generate >/dev/null
ref=tests/data/llama/smollm2_greedy.txt
prompts=0
fails=0
while IFS= read -r line; do
    [[ $line == prompt:\ * ]] || continue
    prompt=${line#prompt: }
    prompt=${prompt//\\n/$'\n'}   # "\n" in the file is a newline
    IFS= read -r want_prompt
    IFS= read -r want_new
    prompts=$((prompts + 1))
    for t in 1 2; do
        got=$("$build/mhsa-generate" --model "$model" --prompt "$prompt" \
              --temperature 0 -n 24 --ids --threads "$t" 2>/dev/null)
        if [[ $got != "$want_prompt"$'\n'"$want_new" ]]; then
            prompt=${line#prompt: }
            fails=$((fails + 1))
            printf 'model: %d thread(s), prompt "%s":\n  got  %s\n  want %s\n' \
                "$t" "$prompt" "${got//$'\n'/ | }" \
                "$want_prompt | $want_new" >&2
        fi
    done
done < "$ref"
if [[ $prompts -eq 0 ]]; then
    echo "model: no prompt in $ref" >&2
    exit 1
fi
echo "model: $((2 * prompts - fails)) of $((2 * prompts)) runs give" \
     "llama.cpp's greedy ids ($prompts prompts, 1 and 2 threads)"
[[ $fails -eq 0 ]]
