#!/usr/bin/python3
"""Generate the PyTorch reference cases of BF16 compute into tests/data/refs_bf16/.

Run with Debian's Python and PyTorch 1.13 (apt-get install -y python3-torch):

    /usr/bin/python3 tests/refs/gen_refs_bf16.py [OUTDIR]

API.md "Additions for 0.3 / BF16 compute": with compute_dtype MHSA_BF16 every
matrix product of the block takes its operands rounded to bfloat16 (round to
nearest even) and accumulates in fp32; softmax, scaling, masks and biases
stay fp32. The reference here writes the block's forward and backward out
as those matrix products, each operand rounded with PyTorch's own
`.to(torch.bfloat16)` where the library rounds one (the QKV projection's x
and W, the pre-scaled Q with K, P with V, the output projection's ctx and
W; in the backward dy with ctx and W_out, dO with V, P with dO, dS with Q,
scale * dS with K, dqkv with x and W_qkv), and the products summed in
float64: "exact products of the rounded operands" as the library's
fallback computes them, without its fp32 accumulation error.

The case format is tests/refs/gen_refs_variants.py's (inputs regenerated from
a hash stream by tests/refcase.c; outputs stored; tests/data/refs/FORMAT.md).
Each case's `tol` is set so that:
  - the same products in float32 arithmetic (PyTorch's fp32 matmuls of the
    bf16-rounded operands: what any correct implementation computes, in a
    different summation order) land within tol / 4 (checked here), and
  - the block computed without rounding (plain float32, a BF16 block that
    forgot to round) is off by more than 2 * tol in at least one stored
    output (checked here), so the C test tells rounded from unrounded
    products.
PyTorch's bf16 matmul itself (torch.matmul on bfloat16 tensors) is not
used: on the CPU, PyTorch 1.13 does not accumulate it in fp32 (the script
prints how far it is off).
"""
import math
import os
import shutil
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_refs_variants import Inputs, rel_err, splitmix_check   # noqa: E402

OUT = os.path.join(HERE, os.pardir, "data", "refs_bf16")
F64 = torch.float64
F32 = torch.float32


def rounder(on):
    """bf16 rounding of an operand (through float32, as the library rounds
    its float32 values), or nothing (the unrounded must-fail variant)."""
    if not on:
        return lambda t: t
    return lambda t: t.float().to(torch.bfloat16).to(t.dtype)


def block(c, W, x, dy, dtype, rounding=True):
    """y and attn, and with dy the gradients, of the BF16-compute block,
    every product's operands rounded (or not) and computed in `dtype`."""
    r = rounder(rounding)
    B, T, D, H, Hkv = x.shape[0], c["T"], c["D"], c["H"], c["Hkv"]
    dh, g = D // H, H // Hkv
    nk = Hkv * dh
    scale = 1.0 / math.sqrt(dh)
    x = x.to(dtype)
    wq, wo = W["w_qkv"].to(dtype), W["w_out"].to(dtype)
    qkv = r(x) @ r(wq).mT
    if c["bias"]:
        qkv = qkv + W["b_qkv"].to(dtype)
    q = qkv[..., :D].reshape(B, T, H, dh).transpose(1, 2)
    k = qkv[..., D:D + nk].reshape(B, T, Hkv, dh).transpose(1, 2)
    v = qkv[..., D + nk:].reshape(B, T, Hkv, dh).transpose(1, 2)
    # the library scales q in float32 before the products
    qs = (q.float() * torch.tensor(scale, dtype=F32)).to(dtype)
    ke, ve = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = r(qs) @ r(ke).mT
    if c["causal"]:
        blocked = torch.ones(T, T, dtype=torch.bool).triu(1)
        s = s.masked_fill(blocked, -math.inf)
    m = s.amax(-1, keepdim=True)
    p = torch.exp(s - m)
    l = p.sum(-1, keepdim=True)
    o = (r(p) @ r(ve)) / l
    pn = p / l
    ctx = o.transpose(1, 2).reshape(B, T, D)
    y = r(ctx) @ r(wo).mT
    if c["bias"]:
        y = y + W["b_out"].to(dtype)
    out = {"y": y, "attn": pn}
    if dy is None:
        return out
    dy = dy.to(dtype)
    out["g_w_out"] = (r(dy).reshape(-1, D).mT @ r(ctx).reshape(-1, D))
    dctx = r(dy) @ r(wo)
    do = dctx.reshape(B, T, H, dh).transpose(1, 2)
    delta = (do * o).sum(-1, keepdim=True)
    dp = r(do) @ r(ve).mT
    ds = pn * (dp - delta)
    dv = r(pn).mT @ r(do)
    dk = r(ds).mT @ r(qs)
    dq = r(ds * scale) @ r(ke)
    dk = dk.reshape(B, Hkv, g, T, dh).sum(2)
    dv = dv.reshape(B, Hkv, g, T, dh).sum(2)
    dqkv = torch.cat([dq.transpose(1, 2).reshape(B, T, D),
                      dk.transpose(1, 2).reshape(B, T, nk),
                      dv.transpose(1, 2).reshape(B, T, nk)], -1)
    out["dx"] = r(dqkv) @ r(wq)
    out["g_w_qkv"] = r(dqkv).reshape(-1, D + 2 * nk).mT @ r(x).reshape(-1, D)
    if c["bias"]:
        out["g_b_qkv"] = dqkv.reshape(-1, D + 2 * nk).sum(0)
        out["g_b_out"] = dy.reshape(-1, D).sum(0)
    return out


def torch_bf16_matmul_error():
    """How far PyTorch's own CPU bf16 matmul (torch.matmul on bfloat16
    tensors) is from the rounded-operand product: the median relative
    error of a 37x131x29 product. PyTorch 1.13 on x86 gives about 1e-2,
    far more than the output's rounding (2e-3): it does not accumulate in
    fp32, so it cannot serve as the reference of fp32 accumulation; the
    products here are taken in float64 (and float32 for the check)."""
    gen = torch.Generator().manual_seed(5)
    a = torch.randn(37, 131, generator=gen, dtype=F64)
    b = torch.randn(131, 29, generator=gen, dtype=F64)
    r = rounder(True)
    exact = r(a) @ r(b)
    tb = (a.float().bfloat16() @ b.float().bfloat16()).double()
    return ((tb - exact).abs() / exact.abs()).median().item()


def make_case(name, kind, B, T, D, H, Hkv=None, causal=1, bias=1):
    c = dict(name=name, kind=kind, B=B, T=T, D=D, H=H, Hkv=Hkv or H,
             causal=causal, bias=bias)
    nk = c["Hkv"] * (D // H)
    inp = Inputs(name)
    ws = math.sqrt(3.0 / D)
    inp.add("x", B * T * D, 1.0)
    inp.add("w_qkv", D * D, ws, "/q")
    inp.add("w_qkv", nk * D, ws, "/k")
    inp.add("w_qkv", nk * D, ws, "/v")
    if bias:
        inp.add("b_qkv", D + 2 * nk, 0.5)
    inp.add("w_out", D * D, ws)
    if bias:
        inp.add("b_out", D, 0.5)
    if kind == "backward":
        inp.add("dy", B * T * D, 1.0)
    t = inp.finish()
    W = {k: t[k] for k in ("w_qkv", "b_qkv", "w_out", "b_out") if k in t}
    W["w_qkv"] = W["w_qkv"].reshape(D + 2 * nk, D)
    W["w_out"] = W["w_out"].reshape(D, D)
    x = t["x"].reshape(B, T, D)
    dy = t["dy"].reshape(B, T, D) if kind == "backward" else None

    want = block(c, W, x, dy, F64)
    f32 = block(c, W, x, dy, F32)
    plain = block(c, W, x, dy, F32, rounding=False)
    keys = [k for k in want if k != "attn" or kind == "forward"]
    e32 = max(rel_err(f32[k], want[k]) for k in keys)
    if os.environ.get("BF16_REF_VERBOSE"):
        print({k: f"{rel_err(f32[k], want[k]):.1e}/{rel_err(plain[k], want[k]):.1e}" for k in keys})
    # (a case with strong cancellation in dS = P (dP - delta) rounds dS
    # differently in float32 and float64 often enough to need a wide tol;
    # the unrounded block must still miss it in at least one output)
    eplain = max(rel_err(plain[k], want[k]) for k in keys)
    # tol: 4x the float32 evaluation's error, at least 1e-4, and the
    # unrounded block must miss it by 2x
    tol = float(f"{max(4 * e32, 1e-4):.1g}")
    if tol < 4 * e32:
        tol = float(f"{4 * e32 * 1.5:.1g}")
    assert eplain > 2 * tol, f"{name}: an unrounded block would pass " \
        f"({eplain:.2e} vs tol {tol})"
    tensors = {k: want[k] for k in keys}
    write_case(c, tol, inp.lines, tensors)
    size = sum(v.numel() * 4 for v in tensors.values())
    print(f"{name:28s} {kind:8s} tol {tol:.0e}: float32 err {e32:.1e}, "
          f"unrounded {eplain:.1e}  {size / 1024:6.1f} KiB")
    return size


def write_case(c, tol, input_lines, tensors):
    d = os.path.join(OUT, c["name"])
    os.makedirs(d)
    lines = [f"# mhsa 0.3 BF16-compute reference case {c['name']} "
             "(tests/refs/gen_refs_bf16.py)"]
    for k in ("kind", "B", "T", "D", "H", "causal", "bias"):
        lines.append(f"{k} {c[k]}")
    lines.append(f"tol {tol!r}")
    lines.append(f"Hkv {c['Hkv']}")
    lines += input_lines
    for tname, t in tensors.items():
        arr = t.to(F32).contiguous().numpy().astype("<f4")
        with open(os.path.join(d, tname + ".bin"), "wb") as f:
            f.write(arr.tobytes())
        lines.append(f"tensor {tname} {arr.size}")
    with open(os.path.join(d, "case.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


CASES = [   # name, kind, B, T, D, H, options; tests/api/test_bf16_torch.c
    ("bf16_fwd_2x40x64x4", "forward", 2, 40, 64, 4, {}),
    ("bf16_fwd_gqa_nobias_2x23x48x6", "forward", 2, 23, 48, 6,
     dict(Hkv=2, causal=0, bias=0)),
    ("bf16_bwd_2x37x32x4", "backward", 2, 37, 32, 4, {}),
    ("bf16_bwd_gqa_1x120x64x4", "backward", 1, 120, 64, 4,
     dict(Hkv=2, causal=0)),
]
# T <= 128 everywhere: the forward rounds P = exp(S - m) against the online
# softmax's running max m, so where the key tiles split (128 keys, 132 on
# NEON) decides which values get rounded, and rounding P against another
# max moves y by ~1e-3 (measured at T = 150), as much as not rounding at
# all. Within one key tile the library's rounding points are exactly these
# (T = 120 still spans two query blocks of 72 rows). Longer sequences are
# held to 2e-2 of the fp32 block by tests/api/test_compute_bf16.c.


def main():
    global OUT
    if len(sys.argv) > 1:
        OUT = sys.argv[1]
    torch.set_num_threads(1)
    splitmix_check()
    print("torch.matmul in bfloat16 vs the rounded-operand product: median "
          f"relative error {torch_bf16_matmul_error():.1e} (not used)")
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    total = sum(make_case(*a[:6], **a[6]) for a in CASES)
    print(f"{len(CASES)} cases, {total / 1024:.0f} KiB of tensors")


if __name__ == "__main__":
    main()
