#!/usr/bin/python3
"""Generate the PyTorch reference cases of mhsa 0.2 (the attention variants)
into tests/data/refs_variants/.

Run with Debian's Python and PyTorch 1.13 (apt-get install -y python3-torch):

    /usr/bin/python3 tests/refs/gen_refs_variants.py [OUTDIR]

The cases cover the 0.2 additions of the API contract (shared/API.md,
"Additions for 0.2"): grouped-query attention (n_kv_heads), rotary position
embedding (rope_dim, rope_theta, rope_interleaved; partial rotary too),
sliding windows, key padding (seq_len), ragged decode and F16/BF16 KV
caches. The format is that of tests/data/refs/FORMAT.md plus the keys its
section "Cases of 0.2" lists. In short:

- Inputs (x, the weights, dy) are not stored: each is a stream of a tiny
  integer hash (splitmix64) that tests/refcase.c regenerates bit for bit;
  the manifest gives count, scale and seed of every segment and a crc32 of
  the result. Only outputs (and small masks) are stored, so a case at
  position 32768 costs a few KiB.
- Expected values are computed in float64 by a functional attention written
  here (GQA by repeat_interleave of the K/V heads, RoPE from float64 angles,
  window, key padding, rows whose every key is blocked give zero weights and
  a zero context) and differentiated by autograd. Where PyTorch has the
  operation, the formula is checked against it: nn.MultiheadAttention (with
  GQA's K/V rows expanded per query head, attn_mask and key_padding_mask)
  for every case without RoPE or a rounded cache, and a second RoPE written
  as Hugging Face (rotate_half) and Meta (complex numbers) write it.
- Each case is recomputed in float32 (RoPE tables from float64, as the
  library keeps them) and must land within tol/4 of the expected values, so
  a plain float32 implementation passes with margin. Cases made to detect
  a specific mistake check that the mistake would fail: float32 angles at
  position ~32768, a 16-bit cache that is not rounded, a window ignored.
"""
import math
import os
import shutil
import sys
import zlib

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, os.pardir, "data", "refs_variants")
F64 = torch.float64
F32 = torch.float32
TOL = 1e-4

# ---- inputs: a hash stream both Python and C can compute -------------------

M64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


def hash_values(seed, n, scale):
    """n float32 values uniform in [-scale, scale): value i is
    k * 2^-23 * scale (in double, rounded once to float32) with k the top 24
    bits of splitmix64's (i+1)-th output from state `seed`, minus 2^23.
    tests/refcase.c computes the same with util.c's rng_u64."""
    i = np.arange(1, n + 1, dtype=np.uint64)
    z = np.uint64(seed) + i * np.uint64(GAMMA)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    k = (z >> np.uint64(40)).astype(np.int64) - (1 << 23)
    return (k.astype(np.float64) * 2.0 ** -23 * scale).astype(np.float32)


def splitmix_check():
    # the first output of splitmix64 from state 0, as published
    z = (GAMMA) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    z ^= z >> 31
    assert z == 0xE220A8397B1DCDAF, hex(z)
    k = (z >> 40) - (1 << 23)
    assert hash_values(0, 1, 1.0)[0] == np.float32(k * 2.0 ** -23)


class Inputs:
    """The generated inputs of one case and their manifest lines."""

    def __init__(self, case):
        self.case = case
        self.t = {}
        self.lines = []

    def add(self, name, n, scale, tag=""):
        seed = zlib.crc32(f"{self.case}/{name}{tag}".encode())
        v = hash_values(seed, n, scale)
        self.t[name] = np.concatenate([self.t[name], v]) if name in self.t else v
        self.lines.append(f"input {name} {n} {scale!r} {seed}")

    def finish(self):
        for name, v in self.t.items():
            crc = zlib.crc32(v.astype("<f4").tobytes())
            self.lines.append(f"crc {name} {crc:08x}")
        return {k: torch.from_numpy(v.astype(np.float64)) for k, v in self.t.items()}


# ---- the reference ----------------------------------------------------------

def rope_angles(pos, R, theta, f32_angles=False):
    """a[p, i] = p * theta^(-2i/R), i < R/2, in float64 (or, to show what
    float32 angles would cost, in float32 throughout)."""
    i = torch.arange(R // 2, dtype=F64)
    if f32_angles:
        inv = torch.pow(torch.tensor(theta, dtype=F32), (-2.0 * i / R).float())
        return pos.float()[:, None] * inv[None, :]
    inv = torch.pow(torch.tensor(theta, dtype=F64), -2.0 * i / R)
    return pos.to(F64)[:, None] * inv[None, :]


def rope_pairs(x, cos, sin, R, inter):
    """API.md's definition, pair by pair: (u, v) = (x[i], x[i+R/2]) or
    (x[2i], x[2i+1]) becomes (u cos a - v sin a, u sin a + v cos a).
    x (..., P, dh); cos, sin (P, R/2)."""
    half = R // 2
    iu = torch.arange(0, R, 2) if inter else torch.arange(half)
    iv = iu + 1 if inter else iu + half
    u, v = x[..., iu], x[..., iv]
    out = x.clone()
    out[..., iu] = u * cos - v * sin
    out[..., iv] = u * sin + v * cos
    return out


def rope_other(x, a, R, inter):
    """The same rotation as the model code bases write it: Hugging Face's
    rotate_half (pairs i, i+R/2) and Meta's complex product (pairs 2i, 2i+1)."""
    xr, rest = x[..., :R], x[..., R:]
    if inter:
        xc = torch.view_as_complex(xr.reshape(*xr.shape[:-1], R // 2, 2).contiguous())
        rot = torch.polar(torch.ones_like(a), a)
        xr = torch.view_as_real(xc * rot).reshape(xr.shape)
    else:
        cos, sin = torch.cat([a.cos(), a.cos()], -1), torch.cat([a.sin(), a.sin()], -1)
        half = torch.cat([-xr[..., R // 2:], xr[..., : R // 2]], -1)
        xr = xr * cos + half * sin
    return torch.cat([xr, rest], -1)


def round_kv(t, dtype):
    """A 16-bit cache stores K and V rounded from the fp32 values the library
    computes; the reference rounds its float64 values through float32."""
    if dtype == "f16":
        return t.float().half().to(t.dtype)
    if dtype == "bf16":
        return t.float().bfloat16().to(t.dtype)
    return t


def additive_mask(c, pq, pk, mask):
    """(Tq, Tk) additive mask: causal, window, then the user mask."""
    am = torch.zeros(len(pq), len(pk), dtype=F64)
    blocked = torch.zeros(len(pq), len(pk), dtype=torch.bool)
    if c["causal"]:
        blocked |= pk[None, :] > pq[:, None]
    if c["window"]:
        blocked |= pk[None, :] <= pq[:, None] - c["window"]
    am = am.masked_fill(blocked, -math.inf)
    if mask is not None:
        am = am + mask[pq][:, pk]
    return am


def attend(c, W, x, q_rows, k_rows, mask=None, dtype=F64, kv_round=True,
           rope_impl="pairs", f32_angles=False, kv_via_f32=True):
    """The attention block on rows q_rows (queries) over rows k_rows (keys)
    of x (B, T, D); positions are the row indices. Returns y (B, Tq, D) and
    the weights p (B, H, Tq, Tk)."""
    B, D, H, Hkv = x.shape[0], c["D"], c["H"], c["Hkv"]
    dh = D // H
    nk = Hkv * dh
    w, b = W["w_qkv"].to(dtype), W.get("b_qkv")
    xq, xk = x[:, q_rows].to(dtype), x[:, k_rows].to(dtype)
    q = xq @ w[:D].mT
    k = xk @ w[D:D + nk].mT
    v = xk @ w[D + nk:].mT
    if b is not None:
        b = b.to(dtype)
        q, k, v = q + b[:D], k + b[D:D + nk], v + b[D + nk:]
    q = q.reshape(B, len(q_rows), H, dh).transpose(1, 2)
    k = k.reshape(B, len(k_rows), Hkv, dh).transpose(1, 2)
    v = v.reshape(B, len(k_rows), Hkv, dh).transpose(1, 2)
    R = c["rope_dim"]
    if R:
        theta, inter = c["rope_theta"] or 10000.0, c["rope_interleaved"]
        aq = rope_angles(q_rows, R, theta, f32_angles)
        ak = rope_angles(k_rows, R, theta, f32_angles)
        if rope_impl == "pairs":
            # tables made once in double (or float32 angles), used in `dtype`
            q = rope_pairs(q, aq.cos().to(dtype), aq.sin().to(dtype), R, inter)
            k = rope_pairs(k, ak.cos().to(dtype), ak.sin().to(dtype), R, inter)
        else:
            q = rope_other(q, aq.to(dtype), R, inter)
            k = rope_other(k, ak.to(dtype), R, inter)
    if kv_round and c["kv_dtype"] != "f32":
        if kv_via_f32:
            k, v = round_kv(k, c["kv_dtype"]), round_kv(v, c["kv_dtype"])
        else:
            rd = torch.float16 if c["kv_dtype"] == "f16" else torch.bfloat16
            k, v = k.to(rd).to(dtype), v.to(rd).to(dtype)
    g = H // Hkv
    k = k.repeat_interleave(g, dim=1)   # query head h uses kv head h // g
    v = v.repeat_interleave(g, dim=1)
    s = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
    s = s + additive_mask(c, q_rows, k_rows, mask).to(dtype)
    if c["seq_len"]:
        pad = k_rows[None, :] >= torch.tensor(c["seq_len"])[:, None]   # (B, Tk)
        s = s.masked_fill(pad[:, None, None, :], -math.inf)
    dead = torch.isneginf(s).all(dim=-1, keepdim=True)
    p = torch.softmax(s.masked_fill(dead, 0.0), dim=-1).masked_fill(dead, 0.0)
    ctx = (p @ v).transpose(1, 2).reshape(B, len(q_rows), D)
    y = ctx @ W["w_out"].to(dtype).mT
    if W.get("b_out") is not None:
        y = y + W["b_out"].to(dtype)
    return y, p


def outputs(c, W, x, dy, mask, dtype=F64, **kw):
    """Everything a case stores, computed in `dtype`."""
    T = c["T"]
    P = {k: v.to(dtype).clone().requires_grad_(True) for k, v in W.items()}
    xx = x.to(dtype).clone().requires_grad_(True)
    if c["pos0"]:
        lo = max(0, c["pos0"] - c["window"] + 1) if c["window"] else 0
        q_rows, k_rows = torch.arange(c["pos0"], T), torch.arange(lo, T)
    else:
        q_rows = k_rows = torch.arange(T)
    y, p = attend(c, P, xx, q_rows, k_rows, mask, dtype, **kw)
    out = {"y": y, "attn": p}
    if c["kind"] == "backward":
        y.backward(dy.to(dtype))
        out["dx"] = xx.grad
        for name in ("w_qkv", "b_qkv", "w_out", "b_out"):
            if name in P:
                out["g_" + name] = P[name].grad
    if c["kind"] == "decode" and c["seq_len"]:
        # rows past a sequence's length do not exist: the cached calls give 0
        live = torch.arange(T)[None, :] < torch.tensor(c["seq_len"])[:, None]
        out["y"] = y * live[..., None]
    return {k: v.detach() for k, v in out.items()}


def torch_mha(c, W, x, mask, dy):
    """nn.MultiheadAttention on the same problem, GQA's K/V rows repeated
    for each query head of the group; its weight gradients folded back."""
    B, T, D, H, Hkv = x.shape[0], c["T"], c["D"], c["H"], c["Hkv"]
    dh, g = D // H, c["H"] // c["Hkv"]
    nk = Hkv * dh
    bias = "b_qkv" in W

    def expand(t):  # (Hkv*dh, ...) -> (H*dh, ...), head j repeated g times
        return t.reshape(Hkv, dh, *t.shape[1:]).repeat_interleave(g, 0).reshape(H * dh, *t.shape[1:])

    w = W["w_qkv"]
    m = torch.nn.MultiheadAttention(D, H, bias=bias, batch_first=True, dtype=F64)
    with torch.no_grad():
        m.in_proj_weight.copy_(torch.cat([w[:D], expand(w[D:D + nk]), expand(w[D + nk:])]))
        m.out_proj.weight.copy_(W["w_out"])
        if bias:
            b = W["b_qkv"]
            m.in_proj_bias.copy_(torch.cat([b[:D], expand(b[D:D + nk]), expand(b[D + nk:])]))
            m.out_proj.bias.copy_(W["b_out"])
    xx = x.clone().requires_grad_(True)
    rows = torch.arange(T)
    am = additive_mask(c, rows, rows, mask)
    kpm = None
    if c["seq_len"]:
        kpm = rows[None, :] >= torch.tensor(c["seq_len"])[:, None]
    y, attn = m(xx, xx, xx, attn_mask=am, key_padding_mask=kpm, need_weights=True,
                average_attn_weights=False)
    out = {"y": y.detach(), "attn": attn.detach()}
    if dy is not None:
        y.backward(dy)
        out["dx"] = xx.grad

        def fold(t):  # sum the gradient rows of each group
            return t.reshape(Hkv, g, dh, *t.shape[1:]).sum(1).reshape(nk, *t.shape[1:])

        gw = m.in_proj_weight.grad
        out["g_w_qkv"] = torch.cat([gw[:D], fold(gw[D:2 * D]), fold(gw[2 * D:])])
        out["g_w_out"] = m.out_proj.weight.grad
        if bias:
            gb = m.in_proj_bias.grad
            out["g_b_qkv"] = torch.cat([gb[:D], fold(gb[D:2 * D]), fold(gb[2 * D:])])
            out["g_b_out"] = m.out_proj.bias.grad
    return out


def rel_err(a, b):
    """max|a-b| / max(max|b|, 1), NaN-aware (a NaN anywhere gives inf)."""
    a, b = a.double(), b.double()
    if not torch.isfinite(a).all():
        return math.inf
    return (a - b).abs().max().item() / max(b.abs().max().item(), 1.0)


# ---- cases --------------------------------------------------------------------

DEFAULTS = dict(B=1, causal=1, bias=1, Hkv=None, rope_dim=0, rope_theta=0.0,
                rope_interleaved=0, window=0, seq_len=None, pos0=0,
                kv_dtype="f32", mask=None, attn_rows=None, attn=True, qk_scale=1.0,
                must_fail=())


def dead_flat(c, mask):
    """Flat b*T+t of the query rows whose every key is blocked."""
    T = c["T"]
    rows = torch.arange(T)
    am = additive_mask(c, rows, rows, mask)
    out = []
    for b in range(c["B"]):
        blocked = torch.isneginf(am)
        if c["seq_len"]:
            blocked = blocked | (rows[None, :] >= c["seq_len"][b])
        out += [b * T + t for t in range(T) if blocked[t].all()]
    return out


def make_case(name, kind, B, T, D, H, **kw):
    c = dict(DEFAULTS, name=name, kind=kind, B=B, T=T, D=D, H=H)
    c.update(kw)
    c["Hkv"] = c["Hkv"] or H
    dh = D // H
    assert H % c["Hkv"] == 0 and D % H == 0
    assert c["rope_dim"] % 2 == 0 and c["rope_dim"] <= dh
    assert not c["window"] or c["causal"]
    assert c["seq_len"] is None or len(c["seq_len"]) == B
    assert not c["pos0"] or (kind == "decode" and B == 1)
    nk = c["Hkv"] * dh
    # Inputs: x and dy ~ U(-1, 1); weights with std 1/sqrt(D) (q/k rows
    # scaled by qk_scale where a case needs larger scores); biases U(-.5, .5).
    inp = Inputs(name)
    ws = math.sqrt(3.0 / D)
    inp.add("x", B * T * D, 1.0)
    inp.add("w_qkv", D * D, ws * c["qk_scale"], "/q")
    inp.add("w_qkv", nk * D, ws * c["qk_scale"], "/k")
    inp.add("w_qkv", nk * D, ws, "/v")
    if c["bias"]:
        inp.add("b_qkv", D + 2 * nk, 0.5)
    inp.add("w_out", D * D, ws)
    if c["bias"]:
        inp.add("b_out", D, 0.5)
    if kind == "backward":
        inp.add("dy", B * T * D, 1.0)
    t = inp.finish()
    W = {k: t[k] for k in ("w_qkv", "b_qkv", "w_out", "b_out") if k in t}
    W["w_qkv"] = W["w_qkv"].reshape(D + 2 * nk, D)
    W["w_out"] = W["w_out"].reshape(D, D)
    x = t["x"].reshape(B, T, D)
    dy = t["dy"].reshape(B, T, D) if kind == "backward" else None
    mask = None
    if c["mask"]:
        # finite N(0,1) plus about 25% -inf; the diagonal stays finite
        gen = torch.Generator().manual_seed(zlib.crc32((name + "/mask").encode()))
        mask = (torch.randn(T, T, generator=gen, dtype=F64)).float().double()
        block = torch.rand(T, T, generator=gen, dtype=F64) < 0.25
        block.fill_diagonal_(False)
        mask = mask.masked_fill(block, -math.inf)
        if c["mask"] == "dead":
            mask[T // 3, :] = -math.inf
    dead = dead_flat(c, mask) if kind != "decode" and not c["pos0"] else []
    assert (c["mask"] == "dead") <= bool(dead)
    if kind == "decode":
        assert mask is None and c["causal"]

    want = outputs(c, W, x, dy, mask)
    checks = []
    # 1. the formula against PyTorch's own attention where it has one
    if not c["rope_dim"] and c["kv_dtype"] == "f32" and not c["pos0"]:
        tor = torch_mha(c, W, x, mask, dy)
        live = torch.ones(B, T, dtype=torch.bool)
        for i in dead:
            live[i // T, i % T] = False
        if kind == "decode" and c["seq_len"]:   # rows past the end are 0
            live &= torch.arange(T)[None, :] < torch.tensor(c["seq_len"])[:, None]
        for k in tor:
            if k == "y":
                e = rel_err(tor[k][live], want[k][live])
            elif k == "attn":
                e = rel_err(tor[k].permute(0, 2, 1, 3)[live], want[k].permute(0, 2, 1, 3)[live])
            elif dead:
                continue   # PyTorch's gradients are all NaN with dead rows
            else:
                e = rel_err(tor[k], want[k])
            assert e < 1e-10, f"{name}.{k}: nn.MultiheadAttention disagrees ({e})"
        checks.append("nn.MultiheadAttention")
    # 2. RoPE written the other way
    if c["rope_dim"]:
        other = outputs(c, W, x, dy, mask, rope_impl="other")
        for k in want:
            e = rel_err(other[k], want[k])
            assert e < 1e-10, f"{name}.{k}: the two RoPE formulas disagree ({e})"
        checks.append("rotate_half/complex RoPE")
    # 3. a plain float32 evaluation meets the tolerance with margin
    f32 = outputs(c, W, x, dy, mask, dtype=F32)
    worst = max(rel_err(f32[k], want[k]) for k in want)
    assert worst < TOL / 4, f"{name}: float32 recomputation is off by {worst}"
    # 4. 16-bit caches: rounding through float32 or not is the same to
    #    well within tol, and not rounding at all fails
    if c["kv_dtype"] != "f32":
        direct = outputs(c, W, x, dy, mask, kv_via_f32=False)
        assert rel_err(direct["y"], want["y"]) < TOL / 10
        e = rel_err(outputs(c, W, x, dy, mask, kv_round=False)["y"], want["y"])
        assert e > 2 * TOL, f"{name}: an unrounded cache would pass ({e})"
        checks.append(f"unrounded cache off by {e:.1e}")
    if "f32_angles" in c["must_fail"]:
        e = rel_err(outputs(c, W, x, dy, mask, f32_angles=True)["y"], want["y"])
        assert e > 2 * TOL, f"{name}: float32 angles would pass ({e})"
        checks.append(f"float32 angles off by {e:.1e}")
    if "no_window" in c["must_fail"]:
        e = rel_err(outputs(dict(c, window=0), W, x, dy, mask)["y"], want["y"])
        assert e > 2 * TOL, f"{name}: ignoring the window would pass ({e})"
        checks.append(f"no window off by {e:.1e}")

    # what is stored
    tensors = {}
    if mask is not None:
        tensors["mask"] = mask
    tensors["y"] = want["y"]
    if kind == "forward" and c["attn"]:
        a = want["attn"]
        if c["attn_rows"] is not None:
            a = a[:, :, c["attn_rows"], :]
        tensors["attn"] = a
    if kind == "backward":
        for k in ("dx", "g_w_qkv", "g_b_qkv", "g_w_out", "g_b_out"):
            if k in want:
                tensors[k] = want[k]
    write_case(c, inp.lines, tensors, dead)
    size = sum(t.numel() * 4 for t in tensors.values())
    print(f"{name:34s} {kind:8s} f32 err {worst:.1e}  {size / 1024:6.1f} KiB  "
          + "; ".join(checks))
    return size


def write_case(c, input_lines, tensors, dead):
    d = os.path.join(OUT, c["name"])
    os.makedirs(d)
    lines = [f"# mhsa 0.2 reference case {c['name']} "
             "(tests/refs/gen_refs_variants.py)"]
    for k in ("kind", "B", "T", "D", "H", "causal", "bias"):
        lines.append(f"{k} {c[k]}")
    lines.append(f"tol {TOL}")
    lines.append(f"Hkv {c['Hkv']}")
    if c["rope_dim"]:
        lines.append(f"rope_dim {c['rope_dim']}")
        lines.append(f"rope_interleaved {c['rope_interleaved']}")
        if c["rope_theta"]:
            lines.append(f"rope_theta {c['rope_theta']!r}")
    if c["window"]:
        lines.append(f"window {c['window']}")
    if c["seq_len"]:
        lines.append("seq_len " + " ".join(str(v) for v in c["seq_len"]))
    if c["pos0"]:
        lines.append(f"pos0 {c['pos0']}")
    if c["kv_dtype"] != "f32":
        lines.append(f"kv_dtype {c['kv_dtype']}")
    if c["attn_rows"] is not None and "attn" in tensors:
        lines.append("attn_rows " + " ".join(str(r) for r in c["attn_rows"]))
    if dead:
        lines.append("dead_rows " + " ".join(str(i) for i in dead))
    lines += input_lines
    for tname, t in tensors.items():
        arr = t.to(torch.float32).contiguous().numpy().astype("<f4")
        with open(os.path.join(d, tname + ".bin"), "wb") as f:
            f.write(arr.tobytes())
        lines.append(f"tensor {tname} {arr.size}")
    with open(os.path.join(d, "case.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def cases():
    """(name, kind, B, T, D, H, options); the C tests list them by group."""
    L = []

    def add(*a, **kw):
        L.append((a, kw))

    # -- what 0.1 already computes, in this format (checks the harness) ------
    add("base_fwd_2x13x32x4", "forward", 2, 13, 32, 4, mask="some")
    add("base_bwd_2x13x16x2_nobias", "backward", 2, 13, 16, 2, bias=0,
        mask="some")
    add("base_dec_2x30x32x4", "decode", 2, 30, 32, 4)
    # -- grouped-query attention: H/Hkv = 2, 4, 8 (8: multi-query) -----------
    add("gqa_fwd_kv4_2x11x32x8", "forward", 2, 11, 32, 8, Hkv=4, mask="some")
    add("gqa_fwd_kv2_1x17x32x8_nobias", "forward", 1, 17, 32, 8, Hkv=2, bias=0)
    add("mqa_fwd_kv1_2x11x32x8_nc", "forward", 2, 11, 32, 8, Hkv=1, causal=0,
        mask="dead")
    add("gqa_bwd_kv2_2x13x32x8", "backward", 2, 13, 32, 8, Hkv=2)
    add("mqa_bwd_kv1_1x15x32x8_nc_mask", "backward", 1, 15, 32, 8, Hkv=1,
        causal=0, bias=0, mask="some")
    add("gqa_bwd_kv4_1x11x32x8", "backward", 1, 11, 32, 8, Hkv=4, mask="dead")
    add("gqa_dec_kv2_2x37x32x8", "decode", 2, 37, 32, 8, Hkv=2)
    add("mqa_dec_kv1_1x29x48x4_nobias", "decode", 1, 29, 48, 4, Hkv=1, bias=0)
    # -- rotary embedding: both pair conventions, partial rotary, theta ------
    add("rope_fwd_half_2x13x32x4", "forward", 2, 13, 32, 4, rope_dim=8)
    add("rope_fwd_inter_2x13x32x4_t500", "forward", 2, 13, 32, 4, rope_dim=8,
        rope_interleaved=1, rope_theta=500.0, Hkv=2, bias=0)
    add("rope_fwd_part_half_1x17x48x4", "forward", 1, 17, 48, 4, rope_dim=4,
        Hkv=2, mask="some")
    add("rope_fwd_part_inter_1x17x48x4_nc", "forward", 1, 17, 48, 4,
        rope_dim=6, rope_interleaved=1, Hkv=1, causal=0)
    add("rope_bwd_half_2x11x32x4", "backward", 2, 11, 32, 4, rope_dim=8, Hkv=2)
    add("rope_bwd_part_inter_1x13x24x2_nc", "backward", 1, 13, 24, 2,
        rope_dim=6, rope_interleaved=1, causal=0, bias=0, mask="some")
    add("rope_bwd_r2_mqa_1x12x24x2", "backward", 1, 12, 24, 2, rope_dim=2,
        Hkv=1)
    add("rope_dec_half_2x33x32x4", "decode", 2, 33, 32, 4, rope_dim=8, Hkv=2)
    add("rope_dec_part_inter_1x29x48x4_t1e6", "decode", 1, 29, 48, 4,
        rope_dim=4, rope_interleaved=1, rope_theta=1e6, Hkv=1)
    # long positions: a decode tail after a prefix of pos0 tokens; the
    # window keeps the prefix cheap (O(T W)); the 4k case has none (its
    # prefix is O(T^2), kept small for qemu). One case at 32770: the angle
    # tables do not depend on the pair convention, and each long prefix
    # costs about a minute under qemu-aarch64.
    add("rope_long_half_w48_32770", "decode", 1, 32770, 16, 2, rope_dim=8,
        Hkv=1, window=48, pos0=32754, qk_scale=8.0,
        must_fail=("f32_angles",))
    add("rope_4k_nowin_part_4100", "decode", 1, 4100, 16, 2, rope_dim=6,
        Hkv=1, pos0=4090, qk_scale=6.0)
    # -- sliding window around the key tile (128 scalar/AVX2, 132 NEON) -------
    rows = lambda W: sorted({0, W - 1, W, W + 1, 139} & set(range(140)))
    for W, kw in [(1, {}), (127, dict(Hkv=1)), (128, dict(bias=0)),
                  (129, dict(Hkv=1, rope_dim=4)), (200, {})]:
        add(f"win_fwd_w{W}_1x140x8x2", "forward", 1, 140, 8, 2, window=W,
            attn_rows=rows(W), qk_scale=2.0,
            must_fail=("no_window",) if W < 139 else (), **kw)
    for W in (131, 132, 133):
        add(f"win_fwd_w{W}_1x140x8x1", "forward", 1, 140, 8, 1, window=W,
            attn_rows=rows(W), qk_scale=2.0, must_fail=("no_window",))
    add("win_fwd_mask_w5_1x30x16x2", "forward", 1, 30, 16, 2, window=5,
        mask="dead", Hkv=1)
    add("win_bwd_w128_1x140x8x2", "backward", 1, 140, 8, 2, window=128,
        Hkv=1, qk_scale=2.0, must_fail=("no_window",))
    add("win_bwd_w1_1x24x16x2", "backward", 1, 24, 16, 2, window=1)
    add("win_bwd_mask_w3_2x20x16x4", "backward", 2, 20, 16, 4, window=3,
        mask="some", Hkv=2, rope_dim=4)
    add("win_dec_w129_1x300x8x2", "decode", 1, 300, 8, 2, window=129,
        Hkv=1, qk_scale=2.0, must_fail=("no_window",))
    add("win_dec_rope_gqa_w20_2x70x16x4", "decode", 2, 70, 16, 4, window=20,
        Hkv=2, rope_dim=4, rope_interleaved=1, must_fail=("no_window",))
    # -- key padding (mhsa_forward_ex) and ragged decode ---------------------
    add("pad_fwd_3x15x16x2_nc", "forward", 3, 15, 16, 2, causal=0,
        seq_len=[15, 8, 1])
    add("pad_fwd_win_3x20x16x2", "forward", 3, 20, 16, 2, window=4,
        seq_len=[20, 10, 3], Hkv=1)
    add("pad_fwd_mask_rope_2x19x16x2", "forward", 2, 19, 16, 2,
        seq_len=[7, 19], mask="some", rope_dim=8)
    add("pad_bwd_3x17x16x2_nc_mask", "backward", 3, 17, 16, 2, causal=0,
        seq_len=[17, 6, 1], mask="some")
    add("pad_bwd_win_2x20x16x4", "backward", 2, 20, 16, 4, window=3,
        seq_len=[20, 5], Hkv=2, rope_dim=4, bias=0)
    add("ragged_dec_4x40x16x2", "decode", 4, 40, 16, 2, seq_len=[40, 17, 1, 29])
    add("ragged_dec_rope_gqa_win_3x45x16x4", "decode", 3, 45, 16, 4,
        seq_len=[45, 12, 30], Hkv=2, rope_dim=4, rope_interleaved=1, window=10)
    # -- 16-bit KV caches (the reference rounds K and V like the cache) ------
    add("f16_dec_2x40x16x2", "decode", 2, 40, 16, 2, kv_dtype="f16",
        qk_scale=3.0)
    add("bf16_dec_2x40x16x2", "decode", 2, 40, 16, 2, kv_dtype="bf16")
    add("f16_dec_rope_gqa_2x35x32x4", "decode", 2, 35, 32, 4, kv_dtype="f16",
        Hkv=2, rope_dim=8, qk_scale=3.0)
    add("bf16_dec_rope_mqa_win_1x150x16x2", "decode", 1, 150, 16, 2,
        kv_dtype="bf16", Hkv=1, rope_dim=8, rope_interleaved=1, window=129)
    add("f16_ragged_dec_3x30x16x4", "decode", 3, 30, 16, 4, kv_dtype="f16",
        seq_len=[30, 11, 19], Hkv=2, qk_scale=3.0)
    return L


def main():
    global OUT
    if len(sys.argv) > 1:
        OUT = sys.argv[1]
    torch.set_num_threads(1)
    splitmix_check()
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    total = 0
    for a, kw in cases():
        total += make_case(*a, **kw)
    print(f"{len(cases())} cases, {total / 1024:.0f} KiB of tensors")


if __name__ == "__main__":
    main()
