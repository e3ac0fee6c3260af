#!/usr/bin/env python3
"""Times mhsa.Block.forward beside torch.nn.MultiheadAttention at the C
benchmark's forward shapes (bench/bench_attention.c: causal, biases, no
weights returned), to set beside ./build/bench's numbers of the same run.

    python tools/py_bench.py [--threads N]   # with mhsa installed (pip)

The median of repeated calls, in microseconds per call; PyTorch under
torch.no_grad() with the causal mask, need_weights=False, its thread count
set to N (mhsa's OpenMP threads: OMP_NUM_THREADS=N in the environment).
"""
import argparse
import os
import statistics

from call_timing import rounds_us

import numpy as np

import mhsa

SHAPES = [(1, 128, 512, 8), (1, 512, 512, 8), (1, 2048, 512, 8),
          (4, 512, 512, 8), (8, 12, 32, 4), (8, 32, 64, 4)]


def per_call_us(fn, min_time=0.3):
    return statistics.median(rounds_us(fn, 5, min_time))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int,
                    default=int(os.environ.get("OMP_NUM_THREADS", "2")))
    args = ap.parse_args()
    try:
        import torch
        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    print(f"mhsa {mhsa.__version__} ({mhsa.active_isa()}), "
          f"torch {torch.__version__ if torch else 'absent'}, "
          f"{args.threads} threads")
    print(f"{'shape':28s} {'mhsa us':>10s} {'torch us':>10s} {'ratio':>6s}")
    rng = np.random.default_rng(0)
    for B, T, D, H in SHAPES:
        blk = mhsa.Block(D, H, T, causal=True)
        blk.init_random(1)
        x = rng.standard_normal((B, T, D)).astype(np.float32)
        ours = per_call_us(lambda: blk.forward(x))
        theirs = float("nan")
        if torch is not None:
            ref = torch.nn.MultiheadAttention(D, H, batch_first=True)
            mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
            xt = torch.from_numpy(x)
            with torch.no_grad():
                theirs = per_call_us(lambda: ref(xt, xt, xt, attn_mask=mask,
                                                 need_weights=False))
        print(f"B={B} T={T} D={D} H={H}".ljust(28) +
              f" {ours:10.1f} {theirs:10.1f} {theirs / ours:6.2f}")


if __name__ == "__main__":
    main()
