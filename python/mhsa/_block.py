"""mhsa.Block and mhsa.KVCache: the C library's block, workspace and cache
behind NumPy in, NumPy out. Every shape is checked here, before the library
is called, so a mistake is a ValueError naming the argument and nothing has
changed; what the library refuses is an mhsa.Error with its message."""
import os
import threading

import numpy as np

from . import _arrays, _state_dict
from ._mhsa import Block as _CBlock, Error as _Error, KVCache as _CKVCache
from ._mhsa import Workspace as _CWorkspace, compute_dtypes, weight_dtypes

_DTYPES = {"f32": 0, "f16": 1, "bf16": 2}   # mhsa_dtype
_NAMES = {"torch": 0, "hf": 1, "c": 2}      # mhsa_names
GRAD_NAMES = ("in_proj_weight", "in_proj_bias", "out_proj.weight",
              "out_proj.bias")


def _dtype_code(value, accepted, field):
    """The mhsa_dtype of `value`, if this build's C library has `field`
    for it (_mhsa.weight_dtypes / compute_dtypes, from include/mhsa.h at
    build time), else ValueError."""
    if value not in _DTYPES:
        raise ValueError(f"{field}: unknown dtype {value!r} (expected one "
                         f"of {', '.join(map(repr, accepted))})")
    if field == "compute_dtype" and value == "f16":
        raise ValueError("compute_dtype='f16' is not offered (API.md: 'f32' "
                         "or 'bf16')")
    if value not in accepted:
        raise ValueError(f"{field}={value!r}: the mhsa C library this package "
                         f"was built with does not have it yet (accepted: "
                         f"{', '.join(map(repr, accepted))})")
    return _DTYPES[value]


class KVCache:
    """A KV cache of one Block (Block.kv_cache): per-sequence lengths,
    K and V stored in `dtype`."""

    def __init__(self, block, max_batch, capacity, dtype="f32"):
        if dtype not in _DTYPES:
            raise ValueError(f"dtype: unknown {dtype!r} (expected 'f32', "
                             "'f16' or 'bf16')")
        max_batch = _arrays.integer(max_batch, "max_batch")
        capacity = _arrays.integer(capacity, "capacity")
        self._c = _CKVCache(block._c, max_batch, capacity,
                                _DTYPES[dtype])
        self.block = block
        self.max_batch = max_batch
        self.capacity = capacity
        self.dtype = dtype

    def __len__(self):
        """The longest cached sequence."""
        return len(self._c)

    def seq_len(self, b):
        return self._c.seq_len(_arrays.integer(b, "b"))

    def reset(self):
        self._c.reset()

    def reset_seq(self, b):
        self._c.reset_seq(_arrays.integer(b, "b"))

    @property
    def nbytes(self):
        """Memory the cache holds (mhsa_kv_cache_bytes)."""
        return self._c.nbytes


class Block:
    """One multi-head self-attention block of the mhsa C library, with the
    layout of torch.nn.MultiheadAttention (batch_first=True).

    Threads: calls on one Block take turns (a lock, taken with the GIL
    released); calls on different Blocks run at once in different threads.
    Each thread has its own workspace on the Block, so backward
    differentiates the last forward made by the calling thread (another
    thread's forward in between does not change it); backward in a thread
    that made no forward on this Block is an mhsa.Error (status "STATE").

    Memory: a thread's workspace is sized by the largest batch and sequence
    length it has been given so far (growing on demand, by doubling T, up
    to max_seq_len), not by max_seq_len; a KV cache's forward_cached needs
    one sized for the cache's capacity."""

    def __init__(self, d_model, n_heads, max_seq_len, causal=False, bias=True,
                 n_kv_heads=0, rope_dim=0, rope_theta=0.0,
                 rope_interleaved=False, window=0, weight_dtype="f32",
                 compute_dtype="f32"):
        wd = _dtype_code(weight_dtype, weight_dtypes, "weight_dtype")
        cd = _dtype_code(compute_dtype, compute_dtypes, "compute_dtype")
        d_model = _arrays.integer(d_model, "d_model")
        n_heads = _arrays.integer(n_heads, "n_heads")
        max_seq_len = _arrays.integer(max_seq_len, "max_seq_len")
        n_kv_heads = _arrays.integer(n_kv_heads, "n_kv_heads")
        rope_dim = _arrays.integer(rope_dim, "rope_dim")
        window = _arrays.integer(window, "window")
        causal = _arrays.flag(causal, "causal")
        bias = _arrays.flag(bias, "bias")
        rope_interleaved = _arrays.flag(rope_interleaved, "rope_interleaved")
        if (isinstance(rope_theta, (bool, np.bool_, str))
                or rope_theta is None):
            raise TypeError(f"rope_theta: expected a number, got "
                            f"{type(rope_theta).__name__} {rope_theta!r}")
        self._c = _CBlock(d_model, n_heads, max_seq_len, int(causal),
                              int(bias), n_kv_heads, rope_dim,
                              float(rope_theta), int(rope_interleaved),
                              window, wd, cd)
        self.d_model = d_model
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads or self.n_heads
        self.head_dim = self.d_model // self.n_heads
        self.max_seq_len = max_seq_len
        self.causal = causal
        self.bias = bias
        self.rope_dim = rope_dim
        self.window = window
        self.weight_dtype = weight_dtype
        self.compute_dtype = compute_dtype
        self._local = threading.local()   # .ws: the thread's workspace

    def __repr__(self):
        return (f"mhsa.Block(d_model={self.d_model}, n_heads={self.n_heads}, "
                f"max_seq_len={self.max_seq_len}, causal={self.causal}, "
                f"bias={self.bias}, n_kv_heads={self.n_kv_heads})")

    @property
    def qkv_rows(self):
        """Rows of w_qkv: (n_heads + 2 * n_kv_heads) * head_dim."""
        return self._c.qkv_rows

    # ---- weights ---------------------------------------------------------
    def _weight_shapes(self):
        R, D = self._c.qkv_rows, self.d_model
        return (R, D), (R,), (D, D), (D,)

    def set_weights(self, w_qkv, b_qkv, w_out, b_out):
        """Shapes as in C: w_qkv ((H + 2*Hkv)*dh, D), b_qkv ((H + 2*Hkv)*dh),
        w_out (D, D), b_out (D); the biases None when bias=False."""
        arrays = []
        for a, name, shape in zip((w_qkv, b_qkv, w_out, b_out),
                                  ("w_qkv", "b_qkv", "w_out", "b_out"),
                                  self._weight_shapes()):
            if name.startswith("b_") and not self.bias:
                if a is not None:
                    raise ValueError(f"{name}: the block has no biases "
                                     "(bias=False): pass None")
                arrays.append(None)
                continue
            if a is None and name.startswith("b_"):
                raise ValueError(f"{name}: required (the block has biases)")
            arrays.append(_arrays.f32(a, name, shape))
        self._c.set_weights(*arrays)

    def get_weights(self):
        """(w_qkv, b_qkv, w_out, b_out), new arrays; biases None without."""
        out = [np.empty(s, np.float32) for s in self._weight_shapes()]
        if not self.bias:
            out[1] = out[3] = None
        self._c.get_weights(*out)
        return tuple(out)

    def state_dict(self):
        """The weights under torch.nn.MultiheadAttention's names."""
        return {k: v for k, v in zip(GRAD_NAMES, self.get_weights())
                if v is not None}

    def load_state_dict(self, sd, prefix=""):
        """Weights from a dict name -> array in any of the three name sets
        (PyTorch's in_proj_*, Hugging Face's q/k/v/o_proj, c_q/c_k/c_v/
        c_proj), after `prefix`. ValueError when no set is complete or a
        tensor's shape disagrees; the weights are then unchanged."""
        self.set_weights(*_state_dict.fused(
            sd, prefix, self.d_model, self.n_kv_heads * self.head_dim,
            self._c.qkv_rows, self.bias))

    def load_safetensors(self, path, prefix=""):
        self._c.load_safetensors(os.fspath(path), prefix)

    def save_safetensors(self, path, prefix="", names="torch"):
        if names not in _NAMES:
            raise ValueError(f"names: unknown {names!r} (expected 'torch', "
                             "'hf' or 'c')")
        self._c.save_safetensors(os.fspath(path), prefix, _NAMES[names])

    def init_random(self, seed):
        """Xavier-uniform weights, zero biases, the same on every platform."""
        if isinstance(seed, (bool, np.bool_)) or not hasattr(seed,
                                                             "__index__"):
            raise TypeError(f"seed: expected an integer, got "
                            f"{type(seed).__name__} {seed!r}")
        if not 0 <= int(seed) < 2**64:
            raise ValueError(f"seed: {int(seed)} is beyond 0..2**64-1")
        self._c.init_random(int(seed))

    # ---- computing -------------------------------------------------------
    def _workspace(self, B, T):
        """The calling thread's workspace, grown to hold B sequences of T
        rows: T doubles (up to max_seq_len) so that slowly growing inputs
        reallocate only O(log T) times. The old one is freed first: a
        recorded forward is given up only for a new forward anyway."""
        ws = getattr(self._local, "ws", None)
        if ws is not None and ws.max_batch >= B and ws.max_t >= T:
            return ws
        if ws is not None:
            B = max(B, ws.max_batch)
            if T > ws.max_t:
                T = min(self.max_seq_len, max(T, 2 * ws.max_t))
            else:
                T = ws.max_t
            self._local.ws = ws = None
        self._local.ws = _CWorkspace(self._c, B, T)
        return self._local.ws

    @property
    def workspace_nbytes(self):
        """Bytes of the calling thread's workspace (0 before its first
        forward)."""
        ws = getattr(self._local, "ws", None)
        return 0 if ws is None else ws.nbytes

    def _input(self, x, name):
        x = _arrays.f32(x, name, ("B", "T", self.d_model))
        B, T, _ = x.shape
        if B < 1 or T < 1:
            raise ValueError(f"{name}: shape {x.shape}: B and T must be >= 1")
        if T > self.max_seq_len:
            raise ValueError(f"{name}: shape {x.shape}: T = {T} is beyond "
                             f"the block's max_seq_len {self.max_seq_len}")
        return x

    def forward(self, x, mask=None, seq_len=None, need_weights=False):
        """y (B, T, D) = attention(x (B, T, D)); with need_weights, also
        the per-head softmax weights attn (B, H, T, T). mask: additive
        (T, T) float, -inf blocks; seq_len (B,): key padding on the right."""
        x = self._input(x, "x")
        B, T, D = x.shape
        if mask is not None:
            if _arrays.is_bool(mask):
                raise ValueError("mask: a boolean mask; Block.forward takes "
                                 "an additive float mask (-inf blocks), e.g. "
                                 "numpy.where(m, -numpy.inf, 0)")
            mask = _arrays.f32(mask, "mask", (T, T))
        if seq_len is not None:
            seq_len = _arrays.i32(seq_len, "seq_len", (B,))
        y = np.empty((B, T, D), np.float32)
        attn = (np.empty((B, self.n_heads, T, T), np.float32)
                if need_weights else None)
        self._workspace(B, T).forward(x, B, T, mask, seq_len, y, attn)
        return (y, attn) if need_weights else y

    __call__ = forward

    def backward(self, dy):
        """(dx, grads) of the calling thread's last forward on this block:
        dx (B, T, D), grads a dict in PyTorch's names (in_proj_weight,
        in_proj_bias, out_proj.weight, out_proj.bias; no biases when
        bias=False). The arrays of that forward (x, mask, seq_len) must not
        have been changed since. No forward of this thread (or a
        forward_cached since): mhsa.Error, status "STATE"."""
        ws = getattr(self._local, "ws", None)
        rec = None if ws is None else ws.recorded
        dy = _arrays.f32(dy, "dy", ("B", "T", self.d_model) if rec is None
                         else (rec[0], rec[1], self.d_model))
        if ws is None:
            e = _Error("backward: this thread has made no forward on "
                            "this block (backward differentiates the calling "
                            "thread's last forward)")
            e.status = "STATE"
            raise e
        dx = np.empty(dy.shape, np.float32)
        grads = [np.empty(s, np.float32) for s in self._weight_shapes()]
        if not self.bias:
            grads[1] = grads[3] = None
        ws.backward(dy, dx, *grads)
        return dx, {k: g for k, g in zip(GRAD_NAMES, grads) if g is not None}

    def kv_cache(self, max_batch, capacity, dtype="f32"):
        return KVCache(self, max_batch, capacity, dtype)

    def forward_cached(self, cache, x_new, n_new=None):
        """Appends x_new (B, t_new, D) (the first n_new[b] rows of each
        sequence when given) to `cache` and attends causally over all
        cached positions; y (B, t_new, D)."""
        if not isinstance(cache, KVCache):
            raise ValueError("cache: expected an mhsa.KVCache "
                             f"(Block.kv_cache), got {type(cache).__name__}")
        x_new = _arrays.f32(x_new, "x_new", ("B", "t_new", self.d_model))
        B, t, D = x_new.shape
        if B < 1 or t < 1:
            raise ValueError(f"x_new: shape {x_new.shape}: B and t_new must "
                             "be >= 1")
        if B > cache.max_batch:
            raise ValueError(f"x_new: shape {x_new.shape}: B = {B} is beyond "
                             f"the cache's max_batch {cache.max_batch}")
        if n_new is not None:
            n_new = _arrays.i32(n_new, "n_new", (B,))
        y = np.empty((B, t, D), np.float32)
        if t > self.max_seq_len:
            raise ValueError(f"x_new: shape {x_new.shape}: t_new = {t} is "
                             f"beyond the block's max_seq_len "
                             f"{self.max_seq_len}")
        # The workspace holds the cache's rows too (mhsa's decode reads
        # them through its views): sized for max(t_new, capacity).
        ws = self._workspace(B, max(t, cache.capacity))
        ws.forward_cached(cache._c, x_new, B, t, n_new, y)
        return y
