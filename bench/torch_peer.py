#!/usr/bin/env python3
"""PyTorch's figures for the peer table (bench/peer-table.sh), as JSON on
stdout: SGEMM (torch.mm, fp32) at 1024^3 and 4096x1536x512, the block
forward B1 T512 D512 H8 (nn.MultiheadAttention, causal mask,
need_weights=False, under no_grad) and the block forward + backward B8
T128 D256 H8 (the loss sum(y * dy), gradients of the weights and of x),
each at 1 and 2 threads: the best of 7 timings of repeated calls, in
GFLOP/s counted as the C benchmark counts them (forward_flops below, as
in bench/bench_attention.c; fwd+bwd three times that), so the figures set
beside ./build/bench's compare like for like.

Needs a python with torch (Debian's /usr/bin/python3 here); prints
{"absent": "..."} when torch cannot be imported.
"""
import json
import os
import sys

# tools/call_timing.py, beside this folder.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tools"))
from call_timing import rounds_us  # noqa: E402


def best_us(fn, min_time=0.25):
    return min(rounds_us(fn, 7, min_time))


def forward_flops(B, T, D):
    # bench_attention.c's forward_flops: the QKV and output projections
    # (2*T*D*3D + 2*T*D*D) and the causal attention core (half of the
    # 2 * 2*T*T*D of full attention).
    return B * (8.0 * T * D * D + 2.0 * T * T * D)


def main():
    try:
        import torch
    except ImportError as e:
        print(json.dumps({"absent": str(e)}))
        return
    out = {"torch": torch.__version__}
    g = torch.Generator().manual_seed(0)
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for m, n, k in ((1024, 1024, 1024), (4096, 1536, 512)):
            a = torch.rand(m, k, generator=g) * 2 - 1
            b = torch.rand(k, n, generator=g) * 2 - 1
            us = best_us(lambda: torch.mm(a, b))
            out[f"sgemm {m}x{n}x{k} t{threads}"] = 2e-3 * m * n * k / us
        for B, T, D, H, bwd in ((1, 512, 512, 8, False),
                                (8, 128, 256, 8, True)):
            mha = torch.nn.MultiheadAttention(D, H, batch_first=True)
            mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
            x = torch.rand(B, T, D, generator=g) * 2 - 1
            if not bwd:
                with torch.no_grad():
                    us = best_us(lambda: mha(x, x, x, attn_mask=mask,
                                             need_weights=False))
                flops = forward_flops(B, T, D)
                out[f"forward B{B} T{T} D{D} H{H} t{threads}"] = \
                    flops * 1e-3 / us
            else:
                xr = x.clone().requires_grad_(True)
                dy = torch.rand(B, T, D, generator=g)

                def step():
                    y, _ = mha(xr, xr, xr, attn_mask=mask,
                               need_weights=False)
                    y.backward(dy)
                us = best_us(step)
                flops = 3.0 * forward_flops(B, T, D)
                out[f"fwd_bwd B{B} T{T} D{D} H{H} t{threads}"] = \
                    flops * 1e-3 / us
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
