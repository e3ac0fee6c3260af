"""mhsa.torch.MultiheadAttention: a torch.nn.Module over the mhsa C library.

It has torch.nn.MultiheadAttention's parameters (in_proj_weight,
in_proj_bias, out_proj.weight, out_proj.bias), so the state_dict() of a
torch.nn.MultiheadAttention loads into it unchanged, and its forward takes
the same arguments (self-attention only). Gradients come from mhsa_backward
through a torch.autograd.Function.
"""
import math

import numpy as np
import torch
from torch import nn

from . import _arrays
from ._mhsa import Workspace
from ._block import GRAD_NAMES, Block

_VARIANTS = ("n_kv_heads", "rope_dim", "rope_theta", "rope_interleaved",
             "window", "causal", "max_seq_len", "weight_dtype",
             "compute_dtype")


def _np(t):
    """A CPU float32 tensor's memory as NumPy (a copy only if it is not
    contiguous float32 already)."""
    return _arrays.f32(t, "tensor")


def _same_bits(a, b):
    """a and b (float32 arrays of one shape, or None) hold the same bits
    (NaNs and -0.0 included)."""
    if a is None or b is None:
        return a is None and b is None
    return np.array_equal(a.view(np.uint32), b.view(np.uint32))


class _Attention(torch.autograd.Function):
    """y = attention(x) with weights w; backward through mhsa_backward.
    Each call has its own workspace, which keeps that forward's activations
    until its backward."""

    @staticmethod
    def forward(ctx, x, w_qkv, b_qkv, w_out, b_out, blk, mask, seq_len,
                need_weights):
        xn = _np(x)
        B, T, D = xn.shape
        ws = Workspace(blk._c, B, T)   # sized by this input
        y = np.empty((B, T, D), np.float32)
        attn = (np.empty((B, blk.n_heads, T, T), np.float32)
                if need_weights else None)
        ws.forward(xn, B, T, mask, seq_len, y, attn)
        ctx.ws, ctx.blk = ws, blk
        ctx.has_bias = b_qkv is not None
        ctx.save_for_backward(x)   # PyTorch's check that x stays unchanged
        a = torch.from_numpy(attn) if need_weights else torch.empty(0)
        ctx.mark_non_differentiable(a)
        return torch.from_numpy(y), a

    @staticmethod
    def backward(ctx, dy, _dattn):
        ctx.saved_tensors   # raises if x was modified in place since
        blk = ctx.blk
        dyn = _np(dy)
        dx = np.empty(dyn.shape, np.float32)
        R, D = blk._c.qkv_rows, blk.d_model
        g = [np.empty((R, D), np.float32), np.empty(R, np.float32),
             np.empty((D, D), np.float32), np.empty(D, np.float32)]
        if not ctx.has_bias:
            g[1] = g[3] = None
        ctx.ws.backward(dyn, dx, *g)
        t = [None if a is None else torch.from_numpy(a) for a in g]
        return (torch.from_numpy(dx), t[0], t[1], t[2], t[3], None, None,
                None, None)


def _right_padding(kpm, B, T):
    """seq_len (B,) int32 from key_padding_mask (B, T): True (or -inf in a
    float mask) pads; only padding on the right maps onto mhsa's seq_len."""
    if kpm.dtype == torch.bool:
        pad = kpm
    elif kpm.dtype.is_floating_point:
        if not bool(((kpm == 0) | (kpm == -math.inf)).all()):
            raise ValueError("key_padding_mask: a float mask must hold only 0 "
                             "and -inf (other added values are not supported)")
        pad = kpm == -math.inf
    else:
        pad = kpm != 0
    if tuple(pad.shape) != (B, T):
        raise ValueError(f"key_padding_mask: shape {tuple(pad.shape)}, "
                         f"expected ({B}, {T})")
    pad = pad.cpu().numpy()
    n = (~pad).sum(axis=1)
    ok = (~pad[:, :, None]) == (np.arange(T)[None, :, None] < n[:, None, None])
    if not ok.all():
        raise ValueError("key_padding_mask: padding must be on the right "
                         "(each row: False then True)")
    if (n == 0).any():
        raise ValueError(f"key_padding_mask: sequence {int(np.argmin(n))} is "
                         "all padding")
    return np.ascontiguousarray(n, dtype=np.int32)


def _additive(attn_mask, T):
    """attn_mask (T, T) as mhsa's additive float32 mask: a boolean (or
    uint8) mask blocks where True, as in PyTorch."""
    if attn_mask.dim() != 2:
        raise ValueError(f"attn_mask: shape {tuple(attn_mask.shape)}, "
                         f"expected ({T}, {T}) (per-head 3-D masks are not "
                         "supported)")
    if tuple(attn_mask.shape) != (T, T):
        raise ValueError(f"attn_mask: shape {tuple(attn_mask.shape)}, "
                         f"expected ({T}, {T})")
    if not attn_mask.dtype.is_floating_point:
        attn_mask = torch.zeros((T, T)).masked_fill(attn_mask.bool(),
                                                    -math.inf)
    return _np(attn_mask)


class MultiheadAttention(nn.Module):
    """torch.nn.MultiheadAttention's self-attention, computed by mhsa.

    MultiheadAttention(embed_dim, num_heads, bias=True, batch_first=True,
    n_kv_heads=0, rope_dim=0, rope_theta=0.0, rope_interleaved=False,
    window=0, causal=False, max_seq_len=0, weight_dtype="f32",
    compute_dtype="f32"). causal=True (or window > 0) makes every call
    causal; otherwise forward(is_causal=True) does. max_seq_len 0 grows the
    C block to the longest sequence seen."""

    def __init__(self, embed_dim, num_heads, bias=True, batch_first=True,
                 **variant_fields):
        super().__init__()
        unknown = set(variant_fields) - set(_VARIANTS)
        if unknown:
            raise TypeError(f"MultiheadAttention: unknown arguments "
                            f"{sorted(unknown)} (known: {list(_VARIANTS)})")
        embed_dim = _arrays.integer(embed_dim, "embed_dim", low=1)
        num_heads = _arrays.integer(num_heads, "num_heads", low=1)
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.batch_first = _arrays.flag(batch_first, "batch_first")
        self.head_dim = embed_dim // num_heads
        self._fields = dict(variant_fields)
        self._causal = _arrays.flag(self._fields.pop("causal", False),
                                    "causal") or bool(
            _arrays.integer(self._fields.get("window", 0), "window"))
        self._max_seq_len = _arrays.integer(
            self._fields.pop("max_seq_len", 0), "max_seq_len", low=0)
        hkv = _arrays.integer(self._fields.get("n_kv_heads", 0),
                              "n_kv_heads") or num_heads
        rows = (num_heads + 2 * hkv) * self.head_dim
        self.in_proj_weight = nn.Parameter(torch.empty(rows, embed_dim))
        if bias:
            self.in_proj_bias = nn.Parameter(torch.empty(rows))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self._blocks = {}   # causal -> [Block, the weights it holds]
        self.reset_parameters()
        self._block(False, 1)   # config errors now, not at the first call

    def reset_parameters(self):
        """As torch.nn.MultiheadAttention initialises them."""
        nn.init.xavier_uniform_(self.in_proj_weight)
        if self.in_proj_bias is not None:
            nn.init.constant_(self.in_proj_bias, 0.0)
            nn.init.constant_(self.out_proj.bias, 0.0)

    def _params(self):
        return [self.in_proj_weight, self.in_proj_bias,
                self.out_proj.weight, self.out_proj.bias]

    def _block(self, causal, T):
        """The C block for causal or not, big enough for T, holding the
        current parameter values. They are compared bit for bit with a copy
        of what the block was given (not PyTorch's version counters, which
        changes through .data or .data assignment do not bump) and copied
        in only when they differ, so that two forwards before one backward
        keep the first forward's recorded weights valid."""
        entry = self._blocks.get(causal)
        if entry is None or entry[0].max_seq_len < T:
            cap = max(T, self._max_seq_len, entry[0].max_seq_len if entry
                      else 0)
            blk = Block(self.embed_dim, self.num_heads, cap, causal=causal,
                        bias=self.in_proj_bias is not None, **self._fields)
            entry = self._blocks[causal] = [blk, None]
        for p in self._params():
            if p is not None and p.device.type != "cpu":
                raise ValueError("MultiheadAttention: mhsa computes on "
                                 "the CPU; the parameters are on "
                                 f"{p.device}")
        now = [None if p is None else _np(p) for p in self._params()]
        held = entry[1]
        if held is None or not all(_same_bits(a, b)
                                   for a, b in zip(now, held)):
            entry[0].set_weights(*now)
            entry[1] = [None if a is None else a.copy() for a in now]
        return entry[0]

    def forward(self, query, key, value, key_padding_mask=None,
                need_weights=True, attn_mask=None, average_attn_weights=True,
                is_causal=False):
        if not (query is key and key is value):
            raise ValueError("mhsa.torch.MultiheadAttention is self-attention"
                             ": pass the same tensor as query, key and value")
        if query.dim() != 3 or query.shape[-1] != self.embed_dim:
            layout = "(B, T, E)" if self.batch_first else "(T, B, E)"
            raise ValueError(f"query: shape {tuple(query.shape)}, expected "
                             f"{layout} with E = {self.embed_dim}")
        x = query if self.batch_first else query.transpose(0, 1)
        if x.dtype != torch.float32:
            x = x.float()
        B, T, _ = x.shape
        seq_len = (None if key_padding_mask is None
                   else _right_padding(key_padding_mask, B, T))
        mask = None if attn_mask is None else _additive(attn_mask, T)
        blk = self._block(self._causal or bool(is_causal), T)
        params = self._params()
        grad = torch.is_grad_enabled() and (
            x.requires_grad or any(p is not None and p.requires_grad
                                   for p in params))
        if grad:
            y, attn = _Attention.apply(x, *params, blk, mask, seq_len,
                                       need_weights)
        else:
            out = blk.forward(x, mask=mask, seq_len=seq_len,
                              need_weights=need_weights)
            y, attn = (out if need_weights else (out, None))
            y = torch.from_numpy(y)
            attn = None if attn is None else torch.from_numpy(attn)
        if not self.batch_first:
            y = y.transpose(0, 1)
        if not need_weights:
            return y, None
        return y, (attn.mean(dim=1) if average_attn_weights else attn)
