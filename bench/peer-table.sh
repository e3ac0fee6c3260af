#!/usr/bin/env bash
# peer-table.sh — SGEMM, the attention core, the block and decode beside their
# peers on this machine: our figures as GFLOP/s (or time ratios) and fractions
# of the FMA peak measured in the same run, the peers beside them where this
# machine runs them (OpenBLAS and oneDNN when ./build/bench was built with
# them; PyTorch through bench/torch_peer.py when a python with torch is
# found), the 2-thread over 1-thread speedups, and the targets.
#
#   bench/peer-table.sh [BUILD_DIR]
#     MHSA_PEER_REPS (default 5) repetitions, the median shown;
#     MHSA_PEER_MIN_TIME (default 0.2) seconds per repetition;
#     MHSA_PEER_PYTHON: the python with torch (default: /usr/bin/python3,
#     then python3); MHSA_PEER_TORCH=0 leaves PyTorch out.
# The ISA is the one dispatch picks (MHSA_ISA=avx2 to set it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
reps=${MHSA_PEER_REPS:-5}
min_time=${MHSA_PEER_MIN_TIME:-0.2}
isa=$("$build/mhsa-info" --isa)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

rows="roofline/peak/$isa/threads:[12]"
rows+="|sgemm/($isa|openblas|onednn)/m:(1024/n:1024/k:1024|4096/n:1536/k:512)/threads:[12]"
rows+="|attention/fused/B:1/H:8/dh:64/T:(512|2048)/threads:[12]"
rows+="|forward/B:1/T:512/D:512/H:8/threads:[12]"
rows+="|fwd_bwd/B:8/T:128/D:256/H:8/threads:[12]"
rows+="|decode/core/B:1/H:32/Hkv:32/dh:128/L:8192/dtype:[01]/lens:0/threads:1"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
"$build/bench" --benchmark_filter="^($rows)/real_time\$" \
    --benchmark_repetitions="$reps" --benchmark_min_time="$min_time" \
    --benchmark_report_aggregates_only=true --benchmark_format=json \
    >"$tmp/bench.json"
echo '{}' >"$tmp/torch.json"
if [ "${MHSA_PEER_TORCH:-1}" != 0 ]; then
    for py in "${MHSA_PEER_PYTHON:-}" /usr/bin/python3 python3; do
        [ -n "$py" ] || continue
        if "$py" -c 'import torch' 2>/dev/null; then
            "$py" "$here/torch_peer.py" >"$tmp/torch.json"
            break
        fi
    done
fi
load1=$(cut -d' ' -f1-3 /proc/loadavg)
LOAD="$load0 -> $load1" ISA=$isa INFO=$("$build/mhsa-info") \
python3 - "$tmp/bench.json" "$tmp/torch.json" <<'PY'
import json, os, sys
bench = json.load(open(sys.argv[1]))
torch = json.load(open(sys.argv[2]))
isa = os.environ["ISA"]
med = {}
for b in bench["benchmarks"]:   # medians; a single repetition as it is
    key = b["run_name"].replace("/real_time", "")
    if b.get("aggregate_name") == "median" or (
            b.get("run_type") == "iteration" and key not in med):
        med[key] = b
ctx = bench["context"]
print(f"peer table: {ctx.get('host_name', '?')}, {ctx['num_cpus']} "
      f"cpus at {ctx['mhsa_active_isa'] if 'mhsa_active_isa' in ctx else isa}"
      f", {ctx['date']}, load average {os.environ['LOAD']}")
for line in os.environ["INFO"].splitlines():
    if line.startswith(("caches", "  ", "gemm blocking")):
        print("  " + line)

def get(name, key="GFLOP"):
    b = med.get(name)
    return b.get(key) if b else None

# The limit every case divides by: the best of 100 short trials (the
# peak cases' own rate is their median, low on a loaded machine).
peak = {t: get(f"roofline/peak/{isa}/threads:{t}", "best_GFLOP/s")
        for t in (1, 2)}
print(f"FMA peak ({isa}): {peak[1] or 0:.1f} GFLOP/s at 1 thread, "
      f"{peak[2] or 0:.1f} at 2 ({(peak[2] or 0) / (peak[1] or 1):.2f}x)")
fmt = "{:<40} {:>8} {:>7} {:>7} {:>8} {:>6} {:>38} {:>8}"
print()
print(fmt.format("what (1 thread unless said)", "GFLOP/s", "of_peak",
                 "cpu_of", "2 thr", "2/1", "peers (GFLOP/s, 1 thr)", "target"))

def row(label, name, target, peers=()):
    v1 = get(name + "/threads:1")
    v2 = get(name + "/threads:2")
    f1 = get(name + "/threads:1", "frac_peak")   # the case's own limit
    # of_peak per second of CPU time the case got (1 thread: wall time on
    # a loaded machine includes time it was not running)
    b1 = med.get(name + "/threads:1")
    fc = f1 * b1["real_time"] / b1["cpu_time"] if f1 and b1["cpu_time"] \
        else None
    s = v2 / v1 if v1 and v2 else None
    p = []
    for pname, pv in peers:
        if pv:
            p.append(f"{pname} {pv:.1f}")
    cells = [label, f"{v1:.1f}" if v1 else "-", f"{f1:.3f}" if f1 else "-",
             f"{fc:.3f}" if fc else "-",
             f"{v2:.1f}" if v2 else "-", f"{s:.2f}x" if s else "-",
             ", ".join(p) or "-", target]
    print(fmt.format(*cells))

for m, n, k, tgt in ((1024, 1024, 1024, ">=0.88"), (4096, 1536, 512, "")):
    shape = f"m:{m}/n:{n}/k:{k}"
    row(f"SGEMM {m}x{n}x{k}", f"sgemm/{isa}/{shape}", tgt,
        [("openblas", get(f"sgemm/openblas/{shape}/threads:1")),
         ("onednn", get(f"sgemm/onednn/{shape}/threads:1")),
         ("torch", torch.get(f"sgemm {m}x{n}x{k} t1"))])
for T, tgt in ((512, ">=0.62"), (2048, ">=0.72")):
    row(f"attention core causal B1 H8 dh64 T{T}",
        f"attention/fused/B:1/H:8/dh:64/T:{T}", tgt)
row("block forward B1 T512 D512 H8", "forward/B:1/T:512/D:512/H:8",
    ">=0.78; 2/1>=1.85",
    [("torch", torch.get("forward B1 T512 D512 H8 t1"))])
row("block fwd+bwd B8 T128 D256 H8", "fwd_bwd/B:8/T:128/D:256/H:8",
    ">=0.72; 2/1>=1.85",
    [("torch", torch.get("fwd_bwd B8 T128 D256 H8 t1"))])
f32 = med.get("decode/core/B:1/H:32/Hkv:32/dh:128/L:8192/dtype:0/lens:0/threads:1")
f16 = med.get("decode/core/B:1/H:32/Hkv:32/dh:128/L:8192/dtype:1/lens:0/threads:1")
if f32 and f16:
    r = f16["real_time"] / f32["real_time"]
    print(fmt.format("F16 decode / F32 time, H32 dh128 L8192", "-",
                     f"{r:.3f}x", "", "", "", "-", "<=0.55x"))
tp = {k: v for k, v in torch.items() if k.endswith("t2")}
if tp:
    print("torch at 2 threads: " + ", ".join(
        f"{k[:-3]} {v:.1f}" for k, v in sorted(tp.items())))
if "torch" in torch:
    print(f"torch {torch['torch']} (bench/torch_peer.py)")
elif "absent" in torch:
    print(f"torch: {torch['absent']}")
print("medians of the repetitions; of_peak = the case's frac_peak (GFLOP/s "
      "over the FMA peak of the same run; peers: of mhsa's best ISA); cpu_of = of_peak x wall/CPU time (the 1-thread "
      "fraction while running, for a loaded machine); 2/1 = 2-thread rate "
      "over 1-thread (judge it on a quiet machine only)")
PY
