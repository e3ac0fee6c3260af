#!/usr/bin/env bash
# install-deps.sh — install everything mhsa's build, tests and CI need on a
# fresh Debian 12, as root. Idempotent: when every package is already
# installed it only checks (no apt-get at all), so re-runs take well under a
# second.
#
#   bash .ci/install-deps.sh            # native + aarch64 cross (CI)
#   bash .ci/install-deps.sh --native   # native build, tests and benchmarks
#   bash .ci/install-deps.sh --model    # only the real models the model
#                                       # tests run (.ci/fetch-model.sh)
#
# MHSA_DEPS=native has the same effect as --native.
set -euo pipefail

mode=${MHSA_DEPS:-all}
for arg in "$@"; do
    case "$arg" in
    --native) mode=native ;;
    --all)    mode=all ;;
    --model)  exec bash "$(dirname "$0")/fetch-model.sh" ;;
    -h|--help)
        sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
        exit 0 ;;
    *) echo "install-deps.sh: unknown argument '$arg'" >&2; exit 2 ;;
    esac
done

# Build, tests (check), benchmarks (Google Benchmark, OpenBLAS for
# comparison), sanitizers (clang's runtime for clang builds), valgrind,
# safetensors (jansson), image output (stb), reference-vector scripts
# (numpy), the x86-64 emulator for the no-AVX2 run (qemu-user), make and
# cmake for the consumer projects of .ci/test-consumers.sh, SIMDe for the
# tests' emulated AVX-512 kernels, oneDNN for the SGEMM comparison, Open
# MPI for data-parallel mhsa-train (.ci/test-mpi.sh), the text
# mhsa-train --task text learns by default (Debian's fortune files) and
# PyTorch for the GPT's comparison with its PyTorch peer (tools/gpt_*.py);
# for the Python package (pip install ., .ci/test-python.sh) the Python
# headers, venv, Debian's meson-python (an offline build) and pytest; for
# mhsa-server libmicrohttpd (and, from PyPI, the openai client below).
native_pkgs=(
    meson ninja-build pkg-config g++ check libbenchmark-dev libopenblas-dev
    libsimde-dev libdnnl-dev
    valgrind clang libclang-rt-14-dev libomp-14-dev libjansson-dev libstb-dev
    python3-numpy
    qemu-user make cmake
    fortunes python3-torch
    libopenmpi-dev openmpi-bin
    python3-dev python3-venv python3-mesonpy python3-pytest
    libmicrohttpd-dev
)
# The aarch64 cross toolchain; with --no-install-recommends the cross libc
# headers must be named explicitly.
cross_pkgs=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
# Target libraries of the arm64 architecture, run under qemu-aarch64.
arm64_pkgs=(check:arm64 libgomp1:arm64 libasan8:arm64 libubsan1:arm64
            libjansson-dev:arm64)

native_arch=$(dpkg --print-architecture)

# Prints the packages of "$@" that are not installed. A name without an
# architecture counts as installed in the native one or as Architecture: all.
missing() {
    local have
    have=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}:${Architecture}\n' \
           2>/dev/null | awk '$1 == "ii" { print $2 }')
    local p
    for p in "$@"; do
        if [[ $p == *:* ]]; then
            grep -qxF "$p" <<<"$have" || echo "$p"
        else
            grep -qxF "$p:$native_arch" <<<"$have" ||
                grep -qxF "$p:all" <<<"$have" || echo "$p"
        fi
    done
}

if [[ $(id -u) -ne 0 ]]; then
    sudo=sudo
else
    sudo=
fi
export DEBIAN_FRONTEND=noninteractive

# apt-get prints a lot on success; keep its output in a log and show it only
# when it fails.
apt_quiet() {
    local log
    log=$(mktemp)
    if ! $sudo apt-get -q -o Dpkg::Use-Pty=0 "$@" >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        echo "install-deps.sh: apt-get $* failed" >&2
        return 1
    fi
    grep -E '^(E|W):' "$log" >&2 || true
    rm -f "$log"
}

want=("${native_pkgs[@]}")
if [[ $mode == all ]]; then
    want+=("${cross_pkgs[@]}")
fi
mapfile -t need < <(missing "${want[@]}")
if [[ $mode == all ]]; then
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        $sudo dpkg --add-architecture arm64
        need+=("${arm64_pkgs[@]}")   # the arm64 package lists are new
    else
        mapfile -t -O "${#need[@]}" need < <(missing "${arm64_pkgs[@]}")
    fi
fi

# The official openai Python client, pinned, for mhsa-server's tests
# (.ci/test-server.sh): in a venv of its own over Debian's Python, whose
# pytest and numpy it sees (--system-site-packages). Quiet and without
# pip when that version is already there.
OPENAI_VERSION=3.51.0
openai_venv() {
    local venv=${XDG_CACHE_HOME:-$HOME/.cache}/mhsa/openai-venv
    if [[ -x $venv/bin/python ]] &&
       [[ $("$venv/bin/python" -c 'import openai; print(openai.__version__)' \
            2>/dev/null) == "$OPENAI_VERSION" ]]; then
        return 0
    fi
    echo "install-deps.sh: openai $OPENAI_VERSION into $venv"
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    local log
    log=$(mktemp)
    if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check \
            "openai==$OPENAI_VERSION" >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        echo "install-deps.sh: pip install openai==$OPENAI_VERSION failed" >&2
        return 1
    fi
    rm -f "$log"
}

if [[ ${#need[@]} -eq 0 ]]; then
    openai_venv
    echo "install-deps.sh: all packages present ($mode)"
    exit 0
fi

echo "install-deps.sh: installing ${need[*]}"
apt_quiet update
apt_quiet install -y --no-install-recommends "${need[@]}"
left=$(missing "${need[@]}")
if [[ -n $left ]]; then
    echo "install-deps.sh: still missing after install: $left" >&2
    exit 1
fi
openai_venv
echo "install-deps.sh: done ($mode)"
