#!/usr/bin/env bash
# .ci/test-server.sh BUILD [MODEL] — mhsa-server end to end, through the
# official openai Python client (pinned; .ci/install-deps.sh puts it in
# ${XDG_CACHE_HOME:-~/.cache}/mhsa/openai-venv):
#
# 1. starts BUILD/mhsa-server on MODEL (default: SmolLM2-135M-Instruct,
#    .ci/fetch-model.sh) on a free loopback port (--port 0, the port read
#    from its "listening on http://HOST:PORT" line), 8 slots;
# 2. runs tests/server (pytest): completions and chat, streamed and not,
#    greedy text equal to BUILD/mhsa-generate's, 8 concurrent streams equal
#    to their solo runs, stop strings, bad inputs, disconnects, a full
#    queue, a stop mid-stream (those tests start servers of their own);
# 3. stops the server with SIGTERM: it must exit 0.
#
# MHSA_SERVER_TESTS=bad runs only the bad-input and lifetime tests (pytest
# -m bad): the ASan step runs them against build-asan's server with
# LeakSanitizer on, where a leak makes the server's exit code non-zero.
# Any failing test fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
model=${2:-$(bash .ci/fetch-model.sh smollm2 | tail -n 1)}
venv=${XDG_CACHE_HOME:-$HOME/.cache}/mhsa/openai-venv
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import openai' \
        2>/dev/null; then
    echo "server: no openai client in $venv (run .ci/install-deps.sh)" >&2
    exit 1
fi
meson compile -C "$build" mhsa-server mhsa-generate >/dev/null
if [[ ! -x $build/mhsa-server ]]; then
    echo "server: $build/mhsa-server was not built (libmicrohttpd-dev?)" >&2
    exit 1
fi
# Two cores shared with other test processes: libgomp's spinning idle
# threads would take the CPU the server's other thread needs (no bit
# changes; docs/api.md, "Threads, practically").
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
if [[ ${MHSA_SERVER_TESTS:-all} == bad ]]; then
    marks=(-m bad)
    # Leaks fail the server's exit; allocator_may_return_null as the
    # ASan step's own tests run.
    export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
    export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
else
    marks=()
fi
ctx=512
tmp=$(mktemp -d)
server_pid=""
cleanup() {
    if [[ -n $server_pid ]]; then
        kill -KILL "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

"$build/mhsa-server" --model "$model" --host 127.0.0.1 --port 0 \
    --parallel 8 --ctx "$ctx" --threads 2 >"$tmp/out" 2>"$tmp/err" &
server_pid=$!
url=""
for _ in $(seq 600); do   # 60 s for the model to load
    url=$(sed -n 's/^listening on \(http:\/\/.*\)$/\1/p' "$tmp/out")
    [[ -n $url ]] && break
    if ! kill -0 "$server_pid" 2>/dev/null; then
        break
    fi
    sleep 0.1
done
if [[ -z $url ]]; then
    echo "server: mhsa-server did not start:" >&2
    cat "$tmp/err" >&2
    exit 1
fi
echo "server: $build/mhsa-server at $url"

rc=0
MHSA_SERVER="$build/mhsa-server" MHSA_MODEL="$model" \
MHSA_GENERATE="$build/mhsa-generate" MHSA_SERVER_URL="$url" \
MHSA_SERVER_CTX=$ctx \
    "$venv/bin/python" -m pytest -q -p no:cacheprovider -r fEs \
    "${marks[@]}" tests/server || rc=$?

# SIGTERM: it must exit 0 within a minute (a hang is killed and fails).
kill -TERM "$server_pid"
for _ in $(seq 600); do
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$server_pid" 2>/dev/null; then
    kill -KILL "$server_pid"
    echo "server: mhsa-server did not exit within 60 s of SIGTERM" >&2
fi
src=0
wait "$server_pid" || src=$?
server_pid=""
if [[ $src -ne 0 ]]; then
    echo "server: mhsa-server exited $src after SIGTERM (want 0):" >&2
    tail -n 60 "$tmp/err" >&2
    exit 1
fi
if [[ $rc -ne 0 ]]; then
    echo "server: pytest failed (exit $rc); the server's log:" >&2
    tail -n 30 "$tmp/err" >&2
    exit 1
fi
client=$("$venv/bin/python" -c 'import openai; print(openai.__version__)')
echo "server: pytest passed (${MHSA_SERVER_TESTS:-all} tests, openai" \
     "$client); SIGTERM: exit 0"
