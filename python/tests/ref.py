"""A float64 PyTorch reference of the attention mhsa computes (API.md):
grouped-query heads, rotary embeddings (both pairings), sliding windows,
additive masks, key padding, and K/V rounded as a 16-bit cache stores
them. Written from the contract's formulas, independently of the C code."""
import math

import torch


def rope(t, rope_dim, theta, interleaved, offset=0):
    """Rotates the first rope_dim features of t (B, heads, T, dh) at
    positions offset + 0..T-1."""
    if rope_dim == 0:
        return t
    T = t.shape[2]
    half = rope_dim // 2
    i = torch.arange(half, dtype=torch.float64)
    pos = torch.arange(T, dtype=torch.float64) + offset
    a = pos[:, None] * theta ** (-2.0 * i / rope_dim)
    cos, sin = torch.cos(a), torch.sin(a)
    t = t.clone()
    if interleaved:
        u, v = t[..., 0:rope_dim:2].clone(), t[..., 1:rope_dim:2].clone()
        t[..., 0:rope_dim:2] = u * cos - v * sin
        t[..., 1:rope_dim:2] = u * sin + v * cos
    else:
        u, v = t[..., :half].clone(), t[..., half:rope_dim].clone()
        t[..., :half] = u * cos - v * sin
        t[..., half:rope_dim] = u * sin + v * cos
    return t


def attention(x, w_qkv, b_qkv, w_out, b_out, H, Hkv=0, causal=False,
              mask=None, seq_len=None, rope_dim=0, theta=0.0,
              interleaved=False, window=0, kv_dtype=None):
    """y (B, T, D) and the weights (B, H, T, T), float64, differentiable."""
    Hkv = Hkv or H
    theta = theta or 10000.0
    B, T, D = x.shape
    dh = D // H
    qkv = x @ w_qkv.T
    if b_qkv is not None:
        qkv = qkv + b_qkv
    q = qkv[..., :D].reshape(B, T, H, dh).transpose(1, 2)
    k = qkv[..., D:D + Hkv * dh].reshape(B, T, Hkv, dh).transpose(1, 2)
    v = qkv[..., D + Hkv * dh:].reshape(B, T, Hkv, dh).transpose(1, 2)
    q = rope(q, rope_dim, theta, interleaved)
    k = rope(k, rope_dim, theta, interleaved)
    if kv_dtype is not None:
        k = k.to(torch.float32).to(kv_dtype).to(torch.float64)
        v = v.to(torch.float32).to(kv_dtype).to(torch.float64)
    k = k.repeat_interleave(H // Hkv, dim=1)
    v = v.repeat_interleave(H // Hkv, dim=1)
    s = q @ k.transpose(-1, -2) / math.sqrt(dh)
    if mask is not None:
        s = s + mask
    p_idx = torch.arange(T)[:, None]
    j_idx = torch.arange(T)[None, :]
    blocked = torch.zeros(B, 1, T, T, dtype=torch.bool)
    if causal:
        blocked |= j_idx > p_idx
    if window:
        blocked |= j_idx <= p_idx - window
    if seq_len is not None:
        for b, n in enumerate(seq_len):
            blocked[b, :, :, int(n):] = True
    s = s.masked_fill(blocked, -math.inf)
    # A row with every key blocked has zero weights (and gradients).
    dead = (s == -math.inf).all(dim=-1, keepdim=True)
    p = torch.softmax(s.masked_fill(dead, 0.0), dim=-1) * ~dead
    ctx = (p @ v).transpose(1, 2).reshape(B, T, D)
    y = ctx @ w_out.T
    if b_out is not None:
        y = y + b_out
    return y, p
