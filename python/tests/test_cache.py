"""KV caches from Python: token-by-token decoding equals the full causal
forward, ragged appends (n_new), reset_seq, and F16/BF16 storage against
the reference whose K and V were rounded the same way."""
import numpy as np
import pytest
import torch

import mhsa
import ref
from conftest import rel_err
from test_block import make


@pytest.mark.parametrize("cfg", [dict(), dict(n_kv_heads=2, rope_dim=8),
                                 dict(window=4)], ids=str)
def test_decode_equals_full_forward(rng, cfg):
    blk, _ = make(rng, T=12, causal=True, **cfg)
    x = rng.standard_normal((2, 12, 32)).astype(np.float32)
    full = blk.forward(x)
    cache = blk.kv_cache(2, 12)
    rows = [blk.forward_cached(cache, x[:, :5])]
    for t in range(5, 12):
        rows.append(blk.forward_cached(cache, x[:, t:t + 1]))
    assert len(cache) == 12 and cache.seq_len(1) == 12
    assert rel_err(np.concatenate(rows, axis=1), full) < 1e-5
    cache.reset()
    assert len(cache) == 0
    again = blk.forward_cached(cache, x)
    assert rel_err(again, full) < 1e-5


def test_ragged_appends_and_reset_seq(rng):
    blk, _ = make(rng, T=10, causal=True)
    x = rng.standard_normal((2, 10, 32)).astype(np.float32)
    full = blk.forward(x)
    cache = blk.kv_cache(2, 10)
    y = blk.forward_cached(cache, x[:, :4], n_new=[4, 2])
    assert (cache.seq_len(0), cache.seq_len(1), len(cache)) == (4, 2, 4)
    assert np.all(y[1, 2:] == 0)
    assert rel_err(y[1, :2], full[1, :2]) < 1e-5
    # sequence 1 catches up: its rows 2..5 continue where it stopped
    x1 = np.zeros((2, 4, 32), np.float32)
    x1[1] = x[1, 2:6]
    y = blk.forward_cached(cache, x1, n_new=[0, 4])
    assert rel_err(y[1], full[1, 2:6]) < 1e-5 and cache.seq_len(0) == 4
    cache.reset_seq(1)
    assert cache.seq_len(1) == 0 and cache.seq_len(0) == 4
    with pytest.raises(mhsa.Error) as e:
        cache.reset_seq(5)
    assert e.value.status == "INVALID_ARG"


@pytest.mark.parametrize("dtype,tdtype", [("f16", torch.float16),
                                          ("bf16", torch.bfloat16)])
def test_16bit_caches(rng, dtype, tdtype):
    blk, w = make(rng, T=8, causal=True, n_kv_heads=2)
    x = rng.standard_normal((1, 8, 32)).astype(np.float32)
    c32, c16 = blk.kv_cache(1, 8), blk.kv_cache(1, 8, dtype=dtype)
    assert c16.nbytes < c32.nbytes
    y = np.concatenate([blk.forward_cached(c16, x[:, t:t + 1])
                        for t in range(8)], axis=1)
    t = [torch.tensor(a, dtype=torch.float64) for a in w]
    yr, _ = ref.attention(torch.tensor(x, dtype=torch.float64), *t, H=4,
                          Hkv=2, causal=True, kv_dtype=tdtype)
    assert rel_err(y, yr) < 1e-4
    y32 = np.concatenate([blk.forward_cached(c32, x[:, t:t + 1])
                          for t in range(8)], axis=1)
    assert not np.array_equal(y, y32)   # the rounding happened
    with pytest.raises(ValueError, match="dtype"):
        blk.kv_cache(1, 8, dtype="f8")
