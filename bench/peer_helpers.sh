# shellcheck shell=bash
# peer_helpers.sh — sourced by bench/llama-vs-llamacpp.sh and
# bench/quant-peers.sh: what both do around mhsa-generate and llama.cpp's
# llama-bench. Run from the repository's top. Safe under set -euo
# pipefail (no pipe into head).

# best / least: the largest / smallest of the numbers on stdin, one a line.
best() { sort -g | tail -n 1; }
least() { sort -g | sed -n 1p; }

# machine_line: the CPU, its cores, the date (UTC) and the load average.
machine_line() {
    local cpu
    cpu=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | sed -n 1p)
    echo "CPU: $cpu ($(nproc) cores), $(date -u '+%Y-%m-%d %H:%M UTC')," \
         "load $(cut -d' ' -f1-3 /proc/loadavg)"
}

# llama_bench_ts CSV N_PROMPT N_GEN: avg_ts (tokens/s) of the rows of
# llama-bench -o csv output for that test (pp512: 512 0; tg64: 0 64), one
# a line. Columns found by header name (llama.cpp and ik_llama.cpp).
llama_bench_ts() {
    python3 - "$@" <<'PY'
import csv, sys
path, p, g = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for r in csv.DictReader(open(path)):
    if int(r["n_prompt"]) == p and int(r["n_gen"]) == g:
        print(r["avg_ts"])
PY
}

# read_bandwidth BUILD THREADS: read bandwidth from DRAM in GB/s, the best
# of BUILD/bench roofline/read over 256 MiB at THREADS threads.
read_bandwidth() {
    "$1/bench" --benchmark_filter="roofline/read/kib:262144/threads:$2/" \
        --benchmark_format=csv 2>/dev/null | python3 -c '
import csv, sys
rows = [r for r in csv.reader(sys.stdin) if r]
hdr = next(r for r in rows if r[0] == "name")
print(rows[rows.index(hdr) + 1][hdr.index("best_GB/s")])
'
}

# weight_bytes FILE.gguf: bytes one decoded token reads from the weights
# as the file stores them: every tensor but the token embedding (a token
# reads one row of it), the embedding too where it is also the output head
# (no output.weight). From the tensor infos only: a tensor's bytes are the
# distance to the next tensor's offset (the padding, < the alignment,
# included).
weight_bytes() {
    python3 - "$1" <<'PY'
import os, struct, sys
path = sys.argv[1]
f = open(path, "rb")
def take(fmt):
    n = struct.calcsize("<" + fmt)
    return struct.unpack("<" + fmt, f.read(n))
def skip(t):
    size = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8,
            12: 8}
    if t == 8:
        f.seek(take("Q")[0], 1)
    elif t == 9:
        et, n = take("IQ")
        if et in size:
            f.seek(size[et] * n, 1)
        else:
            for _ in range(n):
                skip(et)
    else:
        f.seek(size[t], 1)
magic, _, nt, nkv = take("4sIQQ")
assert magic == b"GGUF", path
align = 32
for _ in range(nkv):
    key = f.read(take("Q")[0]).decode()
    t = take("I")[0]
    if key == "general.alignment":
        align = take("I")[0]
    else:
        skip(t)
infos = []
for _ in range(nt):
    name = f.read(take("Q")[0]).decode()
    nd = take("I")[0]
    take("Q" * nd)
    infos.append((take("IQ")[1], name))
data = -(-f.tell() // align) * align
ends = sorted(o for o, _ in infos)[1:] + [os.path.getsize(path) - data]
end = dict(zip(sorted(o for o, _ in infos), ends))
names = {n for _, n in infos}
skip_emb = "output.weight" in names
print(sum(end[o] - o for o, n in infos
          if not (skip_emb and n == "token_embd.weight")))
PY
}
