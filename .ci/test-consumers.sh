#!/usr/bin/env bash
# .ci/test-consumers.sh — proves other projects can use mhsa without glue:
# installs mhsa into a scratch prefix, then builds and runs the consumer in
# tests/consumers/ (main.c) four ways:
#   pkg-config   plain make against mhsa.pc, shared library
#   pkg-config   the static archive with `pkg-config --static` (checks that
#                Libs.private / Requires.private are complete)
#   CMake        find_package(mhsa) -> mhsa::mhsa (and mhsa::mhsa_static)
#   meson        mhsa as a subproject (subprojects/mhsa -> this tree)
# Needs meson, ninja, pkg-config, make, cmake and a C compiler. Nothing is
# written outside a temporary directory.
set -euo pipefail

cd "$(dirname "$0")/.."
src=$PWD
work=$(mktemp -d "${TMPDIR:-/tmp}/mhsa-consumers.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

for tool in meson ninja pkg-config make cmake cc; do
    command -v "$tool" > /dev/null ||
        { echo "test-consumers: '$tool' is not installed" >&2; exit 1; }
done

run() {   # prints and runs a consumer binary; fails on a non-zero exit
    echo "+ $*"
    "$@"
}

echo "== install mhsa into $prefix"
meson setup "$work/build" --prefix "$prefix" -Dbench=disabled > "$work/log" ||
    { cat "$work/log"; exit 1; }
# Only what is installed gets built (the library, mhsa-train, mhsa-generate):
# a plain `meson install` would first build every test too, which the
# native step has built and run already (a minute of CI time).
mapfile -t installed < <(meson introspect --targets "$work/build" |
    python3 -c '
import json, os, sys
for t in json.load(sys.stdin):
    if t.get("installed"):
        for f in t["filename"]:
            print(os.path.relpath(f, sys.argv[1]))
' "$work/build")
[[ ${#installed[@]} -gt 0 ]] ||
    { echo "meson introspect lists no installed target" >&2; exit 1; }
ninja -C "$work/build" "${installed[@]}" > "$work/log" ||
    { cat "$work/log"; exit 1; }
meson install -C "$work/build" --no-rebuild --quiet > "$work/log" ||
    { cat "$work/log"; exit 1; }
pc=$(find "$prefix" -name mhsa.pc)
cmake_cfg=$(find "$prefix" -name mhsaConfig.cmake)
[[ -n $pc && -n $cmake_cfg ]] ||
    { echo "mhsa.pc or mhsaConfig.cmake was not installed" >&2; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
for f in "$prefix/include/mhsa.h" "$libdir/libmhsa.a" "$libdir/libmhsa.so"; do
    [[ -e $f ]] || { echo "not installed: $f" >&2; exit 1; }
done
cp -r tests/consumers "$work/consumers"

echo "== pkg-config (shared and static)"
export PKG_CONFIG_PATH=$(dirname "$pc")
make -s -C "$work/consumers/pkgconfig" consumer consumer-static
(cd "$work/consumers/pkgconfig" && run ./consumer && run ./consumer-static)
if ldd "$work/consumers/pkgconfig/consumer-static" | grep -q libmhsa; then
    echo "consumer-static links libmhsa.so" >&2
    exit 1
fi
unset PKG_CONFIG_PATH

echo "== CMake find_package(mhsa)"
cmake -S "$work/consumers/cmake" -B "$work/cmake-build" \
    -DCMAKE_PREFIX_PATH="$prefix" > "$work/log" ||
    { cat "$work/log"; exit 1; }
cmake --build "$work/cmake-build" > "$work/log" || { cat "$work/log"; exit 1; }
[[ -x $work/cmake-build/consumer_static ]] ||
    { echo "mhsa::mhsa_static was not defined" >&2; exit 1; }
(cd "$work/cmake-build" && run ./consumer && run ./consumer_static)
# The installed tree is relocatable: move it and find it again.
mv "$prefix" "$work/moved"
rm -rf "$work/cmake-build"
cmake -S "$work/consumers/cmake" -B "$work/cmake-build" \
    -DCMAKE_PREFIX_PATH="$work/moved" > "$work/log" ||
    { cat "$work/log"; exit 1; }
cmake --build "$work/cmake-build" > "$work/log" || { cat "$work/log"; exit 1; }
(cd "$work/cmake-build" && run ./consumer)

echo "== meson subproject"
proj=$work/subproject
mkdir -p "$proj/subprojects"
cp tests/consumers/meson-subproject/meson.build tests/consumers/main.c "$proj/"
ln -s "$src" "$proj/subprojects/mhsa"
meson setup "$proj/build" "$proj" -Dmhsa:bench=disabled > "$work/log" ||
    { cat "$work/log"; exit 1; }
# The consumer and what it links (not the subproject's tests).
meson compile -C "$proj/build" consumer > "$work/log" ||
    { cat "$work/log"; exit 1; }
(cd "$proj/build" && run ./consumer)

echo "test-consumers: pkg-config, pkg-config --static, CMake and meson" \
     "subproject consumers all built and ran"
