#!/usr/bin/env bash
# make_family_refs.sh LLAMA_CPP — writes tests/data/llama/family_refs.txt:
# llama.cpp's logits and token ids on the small Qwen2 and Llama 3 files of
# tests/family_files.c (tools/llama-ref/family_ref.c), which
# tests/models/test_families.c compares mhsa with. LLAMA_CPP: a llama.cpp
# checkout built with cmake (build/bin/libllama.so; the reference was made
# at commit c392e50), outside this repository; LLAMA_CPP_COMMIT names the
# commit when the checkout has no .git.
set -euo pipefail
cd "$(dirname "$0")/../.."
llama=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -Itests -Isrc -Iinclude tools/llama-ref/family_ref.c tests/family_files.c \
    tests/gguf_writer.c -I"$llama/include" -I"$llama/ggml/include" \
    -L"$llama/build/bin" -lllama -lm -Wl,-rpath,"$llama/build/bin" \
    -o "$work/family_ref"
out=tests/data/llama/family_refs.txt
{
    commit=${LLAMA_CPP_COMMIT:-$(git -C "$llama" rev-parse --short HEAD \
                                 2>/dev/null || echo '(commit unknown)')}
    echo "# llama.cpp $commit on the files of tests/family_files.c"
    echo "# (tools/llama-ref/make_family_refs.sh): per model and weight type"
    echo "# the logits of every position of family_ids (F32 KV cache, one"
    echo "# thread), and per model the ids of each of family_texts"
    echo "# (add_special, parse_special)."
    "$work/family_ref" "$work"
} > "$out"
echo "wrote $out"
