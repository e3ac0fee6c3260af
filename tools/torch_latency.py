#!/usr/bin/env python3
"""PyTorch's line for ./build/bench --benchmark_filter=latency (bench/
bench_latency.c): torch.nn.MultiheadAttention at the same rows, at 1 and 2
threads, in microseconds per call (the median of 5 runs).

    /usr/bin/python3 tools/torch_latency.py     # any python with torch

Forward rows under torch.no_grad() with need_weights=False; the fwd+bwd row
with autograd, the loss sum(y * dy) so that the backward starts from a
fixed dy as the C row's does. Causal rows pass a boolean upper-triangle
attn_mask, the encoder row a key_padding_mask (27 of 32 keys valid).
"""
import statistics

from call_timing import rounds_us

import torch

# name, B, T, D, H, causal, valid keys, backward (as bench_latency.c)
ROWS = [("tiny forward", 8, 12, 32, 4, True, 12, False),
        ("tiny fwd+bwd", 8, 12, 32, 4, True, 12, True),
        ("gpt block forward", 8, 64, 64, 4, True, 64, False),
        ("encoder pad 27/32", 1, 32, 384, 12, False, 27, False)]


def per_call_us(fn, min_time=0.3):
    return statistics.median(rounds_us(fn, 5, min_time, warmup=20))


def row_fn(B, T, D, H, causal, valid, bwd):
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(D, H, batch_first=True)
    x = torch.rand(B, T, D) * 2 - 1
    dy = torch.rand(B, T, D) * 2 - 1
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1) if causal \
        else None
    pad = None
    if valid < T:
        pad = torch.zeros(B, T, dtype=torch.bool)
        pad[:, valid:] = True
    if not bwd:
        mha.eval()

        def fwd():
            with torch.no_grad():
                mha(x, x, x, attn_mask=mask, key_padding_mask=pad,
                    need_weights=False)
        return fwd
    xg = x.clone().requires_grad_(True)

    def fwd_bwd():
        y, _ = mha(xg, xg, xg, attn_mask=mask, key_padding_mask=pad,
                   need_weights=False)
        (y * dy).sum().backward()
    return fwd_bwd


def main():
    print(f"torch {torch.__version__}")
    print(f"{'row':46s} {'1 thread us':>12s} {'2 threads us':>13s}")
    for name, B, T, D, H, causal, valid, bwd in ROWS:
        us = []
        for threads in (1, 2):
            torch.set_num_threads(threads)
            us.append(per_call_us(row_fn(B, T, D, H, causal, valid, bwd)))
        label = f"{name} B={B} T={T} D={D} H={H}"
        print(f"{label:46s} {us[0]:12.1f} {us[1]:13.1f}")


if __name__ == "__main__":
    main()
