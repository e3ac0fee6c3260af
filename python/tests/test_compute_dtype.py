"""BF16 compute through Python (API.md "BF16 compute"): a Block with
compute_dtype="bf16" against numpy's float64 products of the bf16-rounded
operands (one key tile, where the library's rounding points are exactly
these: tests/refs/gen_refs_bf16.py says why) within 1e-4, and against the
f32 block within 2e-2 but not equal to it (the rounding is on), forward,
backward and cached; "f16" compute is a ValueError naming the field."""
import numpy as np
import pytest

import mhsa
from conftest import rel_err

pytestmark = pytest.mark.skipif("bf16" not in mhsa._mhsa.compute_dtypes,
                                reason="this mhsa.h has no compute_dtype")


def r(a):
    """Round to the nearest bf16 value, ties to even (through float32)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    v = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return v.view(np.float32).astype(np.float64)


def reference(w, x, H, causal):
    """y of the block with every product's operands rounded (float64
    sums); the library pre-scales q in float32."""
    w_qkv, b_qkv, w_out, b_out = (np.asarray(t, np.float64) for t in w)
    B, T, D = x.shape
    dh = D // H
    qkv = r(x) @ r(w_qkv).T + b_qkv
    q, k, v = (qkv[..., i * D:(i + 1) * D].reshape(B, T, H, dh)
               .transpose(0, 2, 1, 3) for i in range(3))
    qs = (q.astype(np.float32) * np.float32(1 / np.sqrt(dh))).astype(np.float64)
    s = r(qs) @ r(k).transpose(0, 1, 3, 2)
    if causal:
        s = np.where(np.triu(np.ones((T, T), bool), 1), -np.inf, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    o = (r(p) @ r(v)) / p.sum(-1, keepdims=True)
    ctx = o.transpose(0, 2, 1, 3).reshape(B, T, D)
    return r(ctx) @ r(w_out).T + b_out


def weights(rng, D):
    return [rng.standard_normal((3 * D, D)).astype(np.float32) / np.sqrt(D),
            (rng.standard_normal(3 * D) * 0.1).astype(np.float32),
            rng.standard_normal((D, D)).astype(np.float32) / np.sqrt(D),
            (rng.standard_normal(D) * 0.1).astype(np.float32)]


@pytest.mark.parametrize("causal", [False, True])
def test_bf16_block_is_the_rounded_products(causal):
    rng = np.random.default_rng(5)
    D, H, T = 64, 4, 40
    bb = mhsa.Block(D, H, T, causal=causal, compute_dtype="bf16")
    bf = mhsa.Block(D, H, T, causal=causal)
    w = weights(rng, D)
    bb.set_weights(*w)
    bf.set_weights(*w)
    x = rng.standard_normal((2, T, D)).astype(np.float32)
    yb, yf = bb.forward(x), bf.forward(x)
    want = reference(w, x.astype(np.float64), H, causal)
    assert rel_err(yb, want) < 1e-4
    assert rel_err(yf, want) > 5e-4      # an unrounded block would fail
    assert 1e-5 < rel_err(yb, yf) < 2e-2
    dy = rng.standard_normal(x.shape).astype(np.float32)
    dxb, gb = bb.backward(dy)
    dxf, gf = bf.backward(dy)
    assert 1e-5 < rel_err(dxb, dxf) < 2e-2
    for name in gf:
        assert rel_err(gb[name], gf[name]) < 2e-2, name
    if causal:   # the cache: prefill 5, then one row at a time
        cache = bb.kv_cache(2, T)
        ys = [bb.forward_cached(cache, x[:, :5])]
        ys += [bb.forward_cached(cache, x[:, t:t + 1]) for t in range(5, T)]
        assert rel_err(np.concatenate(ys, 1), want) < 1e-4


def test_compute_dtype_names():
    assert mhsa.Block(32, 4, 8, compute_dtype="bf16").compute_dtype == "bf16"
    for bad in ("f16", "f8"):
        with pytest.raises(ValueError, match="compute_dtype"):
            mhsa.Block(32, 4, 8, compute_dtype=bad)


def test_torch_module_in_bf16():
    torch = pytest.importorskip("torch")
    from mhsa.torch import MultiheadAttention
    torch.manual_seed(0)
    ref = torch.nn.MultiheadAttention(32, 4, batch_first=True)
    m = MultiheadAttention(32, 4, compute_dtype="bf16")
    m.load_state_dict(ref.state_dict())
    x = torch.randn(2, 7, 32)
    y, _ = m(x, x, x)
    yr, _ = ref(x, x, x)
    e = rel_err(y.detach().numpy(), yr.detach().numpy())
    assert 1e-5 < e < 2e-2
