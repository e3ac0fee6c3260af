#!/usr/bin/env bash
# make_spm_ids.sh LLAMA_CPP — writes the SPM tokenizer's reference
# (tests/data/llama/spm_ids.txt): llama.cpp's ids and decoded text for
# every case of tests/data/llama/spm_cases.txt on the test vocabulary of
# tests/spm_vocab.c, with add_space_prefix absent (llama.cpp's default,
# on) and off. LLAMA_CPP: a llama.cpp checkout built with cmake
# (build/bin/libllama.so; the reference was made at commit c392e50),
# outside this repository; LLAMA_CPP_COMMIT names the commit when the
# checkout has no .git.
set -euo pipefail
cd "$(dirname "$0")/../.."
llama=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -Itests tools/llama-ref/spm_ids.c tests/spm_vocab.c \
    tests/gguf_writer.c -I"$llama/include" -I"$llama/ggml/include" \
    -L"$llama/build/bin" -lllama -Wl,-rpath,"$llama/build/bin" \
    -o "$work/spm_ids"
out=tests/data/llama/spm_ids.txt
{
    commit=${LLAMA_CPP_COMMIT:-$(git -C "$llama" rev-parse --short HEAD \
                                 2>/dev/null || echo '(commit unknown)')}
    echo "# llama.cpp $commit on the SPM vocabulary of tests/spm_vocab.c"
    echo "# (tools/llama-ref/make_spm_ids.sh; texts escaped as spm_vocab.h"
    echo "# says). Per vocabulary (add_space_prefix: -1 no key), per case:"
    echo "# ids (add_special, parse_special), plain (neither), decoded"
    echo "# (detokenize plain), special (detokenize ids, unparse_special)."
    for prefix in -1 0; do
        echo "vocab: add_space_prefix $prefix"
        "$work/spm_ids" "$prefix" tests/data/llama/spm_cases.txt 2>/dev/null
    done
} > "$out"
echo "wrote $out"
