#!/usr/bin/env bash
# .ci/test-python.sh BUILD_DIR — the Python package, as a user installs it:
# a fresh virtual environment from Debian's python3 (with its site packages:
# numpy, torch, pytest, and meson-python for an offline build), then
# `pip install .` from this tree, then the pytest suite of python/tests run
# from outside the tree so that `import mhsa` is the installed package; once
# with the dispatch's choice and once with MHSA_ISA=scalar. BUILD_DIR is a
# meson build of the library (the native step's): its tests/io/interop driver
# is the C side of the bitwise comparison, and its mhsa-generate and
# tests/model_logits are the C side of the model tests, which run on the
# SmolLM2 file of .ci/fetch-model.sh (fetched once, then cached; given to
# them as MHSA_TEST_MODEL). Nothing is written outside a temporary
# directory (pip's cache is off) but the meson-python native file it keeps
# in the tree (.mesonpy-native-file.ini, ignored by git) and the model's
# cache.
set -euo pipefail

cd "$(dirname "$0")/.."
src=$PWD
build=$(cd "${1:?usage: test-python.sh BUILD_DIR}" && pwd)
driver=$build/tests/io/interop/interop_driver
generate=$build/mhsa-generate
model_logits=$build/tests/model_logits
# meson test builds only what its tests use: build these three here.
meson compile -C "$build" interop_driver mhsa-generate model_logits >/dev/null
for exe in "$driver" "$generate" "$model_logits"; do
    [[ -x $exe ]] || { echo "test-python: no $exe" >&2; exit 1; }
done
# The model tests' file; a failure to get it fails this step (the tests
# would fail too: MHSA_PY_STRICT=1).
model=$(bash .ci/fetch-model.sh smollm2 | tail -n 1)
work=$(mktemp -d "${TMPDIR:-/tmp}/mhsa-python.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Debian's own interpreter: the one that has numpy and torch (the python3
# first on PATH may be another). Its pip refuses system installs (PEP 668),
# hence the venv.
py=/usr/bin/python3
"$py" -m venv --system-site-packages "$work/venv"
v=$work/venv/bin

echo "== pip install . (meson-python $("$py" -c 'import mesonpy; print(mesonpy.__version__)'))"
# --no-build-isolation: build with Debian's meson-python, no download.
"$v/pip" install --no-cache-dir --no-build-isolation \
    --config-settings=compile-args=-j2 "$src" > "$work/pip.log" 2>&1 ||
    { cat "$work/pip.log" >&2; exit 1; }
tail -n 1 "$work/pip.log"

cd "$work"
# The issue's "done when" line, and what the wheel installed: the package
# only (no C headers, tools or shared library).
"$v/python" -c "import mhsa; print('mhsa', mhsa.__version__, mhsa.active_isa())"
files=$("$v/pip" show -f mhsa | sed -n '/^Files:/,$p' | tail -n +2 |
        sed 's/^ *//')
echo "$files" | grep -v '^mhsa/\|^mhsa-.*\.dist-info/' &&
    { echo "test-python: the wheel installed files outside mhsa/" >&2; exit 1; }

export MHSA_PY_STRICT=1 MHSA_PY_C_DRIVER=$driver PYTHONDONTWRITEBYTECODE=1
export MHSA_TEST_MODEL=$model MHSA_PY_GENERATE=$generate \
    MHSA_PY_MODEL_LOGITS=$model_logits
# -p no:cacheprovider: nothing written into the source tree.
for isa in auto scalar; do
    echo "== pytest, MHSA_ISA=$isa"
    MHSA_ISA=$isa "$v/python" -m pytest -q -rs -p no:cacheprovider \
        "$src/python/tests"
done
