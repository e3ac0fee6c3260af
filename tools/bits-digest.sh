#!/usr/bin/env bash
# tools/bits-digest.sh — do two commits give the same bits?
#
#   tools/bits-digest.sh [OLD [NEW]]     (defaults: HEAD~1 and the work tree)
#
# For a change that must not change a single output (a refactor), this
# builds both commits in temporary clones, runs the same probes against each
# and compares what they print:
#   - tools/bits-digest/digest.c (this tree's copy, public API only, so it
#     builds against either commit): a hash of every output of the block's
#     variants, forward/backward/cached in each cache type, and a few steps of
#     the tiny GPT, on every ISA this CPU runs, at 1 and 2 threads;
#   - the examples (decode, llama_decode, serve --check): the weights files
#     they write and their error lines (timings are left out);
#   - mhsa-train --task text (short) and mhsa-generate on its checkpoint:
#     the checkpoint bytes and the text;
#   - mhsa-generate --model on the real model, greedy ids, when the file is
#     in the cache (.ci/fetch-model.sh).
# Prints "identical bits: N lines" and exits 0, or the differing lines and
# exits 1. Build output goes to a log in the temporary folder.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
old=${1:-HEAD~1}
new=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model=${MHSA_MODEL_DIR:-$HOME/.cache/mhsa/models}/SmolLM2-135M-Instruct.Q4_1.gguf

# A copy of the tree at a commit, or of the work tree (tracked and
# untracked files, not ignored ones) when the commit is empty.
checkout() {
    local rev=$1 dst=$2
    mkdir -p "$dst"
    if [[ -n $rev ]]; then
        git -C "$here" archive "$rev" | tar -x -C "$dst"
    else
        (cd "$here" && git ls-files -co --exclude-standard -z |
            xargs -0 tar -c) | tar -x -C "$dst"
    fi
}

probe() {
    local src=$1 out=$2
    (cd "$src" && meson setup build -Dbench=disabled -Dfuzz=false \
         -Dmpi=disabled >"$work/log" 2>&1 &&
     ninja -C build >>"$work/log" 2>&1) ||
        { echo "bits-digest: build failed in $src (see $work/log)" >&2
          tail -n 30 "$work/log" >&2; exit 2; }
    local b=$src/build
    gcc -std=c11 -O2 -I"$src/include" "$here/tools/bits-digest/digest.c" \
        -o "$b/digest" "$b/libmhsa.a" -fopenmp -lm
    {
        for t in 1 2; do
            OMP_NUM_THREADS=$t "$b/digest" | sed "s/^/threads-any /"
        done
        local ex=$work/ex
        rm -rf "$ex"; mkdir -p "$ex"
        (cd "$ex" &&
         "$b/examples/decode" -d 64 -H 4 -n 48 -b 2 | grep 'rel err' &&
         "$b/examples/decode" -d 64 -H 4 -n 48 -b 2 --dtype f16 | grep 'rel err' &&
         "$b/examples/llama_decode" | grep 'rel err' &&
         "$b/examples/serve" --check --requests 16 | grep 'rel err' &&
         sha256sum ./*.safetensors)
        local g=$work/gpt
        rm -rf "$g"; mkdir -p "$g"
        "$b/mhsa-train" --task text --preset tiny --steps 20 --eval-every 10 \
            --val-fraction 0.02 --save "$g/a.st" | grep '^val loss'
        sha256sum <"$g/a.st"
        "$b/mhsa-generate" --model "$g/a.st" --prompt "The " -n 60 | sha256sum
        if [[ -f $model ]]; then
            for t in 1 2; do
                "$b/mhsa-generate" --model "$model" --prompt "The capital of France is" \
                    -n 16 --temperature 0 --ids --threads "$t"
            done
        fi
    } >"$out"
}

checkout "$old" "$work/old"
checkout "$new" "$work/new"
probe "$work/old" "$work/old.txt"
probe "$work/new" "$work/new.txt"
if ! cmp -s "$work/old.txt" "$work/new.txt"; then
    echo "bits-digest: outputs differ between ${old} and ${new:-the work tree}:"
    diff "$work/old.txt" "$work/new.txt" | head -n 40
    exit 1
fi
# The two thread counts must have given the same digests as well.
if [[ $(grep -c '^threads-any' "$work/new.txt") -ne \
      $((2 * $(sort -u <(grep '^threads-any' "$work/new.txt") | wc -l))) ]]; then
    echo "bits-digest: 1 and 2 threads give different digests (on both commits alike)"
    exit 1
fi
echo "identical bits: $(wc -l <"$work/new.txt") lines ($old against ${new:-the work tree})"
