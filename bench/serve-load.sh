#!/usr/bin/env bash
# bench/serve-load.sh [BUILD] [MODEL] — bench/serve-load.py on mhsa-server
# and, when LLAMA_SERVER names llama.cpp's llama-server binary (built
# outside this repository), on it too, one after the other on the same
# model file: 1, 4 and 8 streaming clients for DURATION seconds each.
#
#   DURATION   seconds per client count (60)
#   CLIENTS    client counts (1,4,8)
#   MAX_TOKENS tokens per request (64)
#   PARALLEL   slots of both servers (8); CTX positions per slot (512)
#   THREADS    threads of both servers (2)
#   MHSA_ARGS  extra arguments for mhsa-server (e.g. --kv-dtype f16)
#   LLAMA_ARGS extra arguments for llama-server
# Both servers run with the environment as it is. Their threads spin
# between steps by default (OpenMP's active wait; ggml's polling), which
# is what a dedicated host wants. OMP_WAIT_POLICY=passive puts mhsa's to
# sleep (for a shared host) but costs it about 3x at 1 client; llama.cpp
# built with OpenMP suffers more from it (it synchronises per operation),
# so never set it for a comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
model=${2:-$(bash .ci/fetch-model.sh smollm2 | tail -n 1)}
duration=${DURATION:-60}
clients=${CLIENTS:-1,4,8}
max_tokens=${MAX_TOKENS:-64}
parallel=${PARALLEL:-8}
ctx=${CTX:-512}
threads=${THREADS:-2}
meson compile -C "$build" mhsa-server >/dev/null
common=(--duration "$duration" --clients "$clients" --max-tokens "$max_tokens")
echo "$(lscpu | sed -n 's/^Model name: *//p'); $(nproc) cores;" \
     "load average $(cut -d' ' -f1-3 /proc/loadavg)"
python3 bench/serve-load.py "${common[@]}" --label mhsa-server \
    --server-cmd "$build/mhsa-server --model $model --port {port} --parallel $parallel --ctx $ctx --threads $threads ${MHSA_ARGS:-}"
if [[ -n ${LLAMA_SERVER:-} ]]; then
    python3 bench/serve-load.py "${common[@]}" --label llama-server \
        --server-cmd "$LLAMA_SERVER -m $model --port {port} -np $parallel -c $((ctx * parallel)) -t $threads ${LLAMA_ARGS:-}"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
