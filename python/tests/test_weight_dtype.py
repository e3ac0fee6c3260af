"""16-bit weights through Python (API.md "16-bit weights"): a Block with
weight_dtype "f16"/"bf16" gives an F32 block's results on the same weights
rounded first (numpy's float16 for F16; round-to-nearest-even on the bit
pattern for BF16), within the contract's 1e-4, and its weights come back
rounded; "f8" is a ValueError (test_errors.py)."""
import numpy as np
import pytest

import mhsa
from conftest import rel_err

pytestmark = pytest.mark.skipif("f16" not in mhsa._mhsa.weight_dtypes,
                                reason="this mhsa.h has no weight_dtype")


def round_bf16(a):
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return r.view(np.float32)


ROUND = {"f16": lambda a: a.astype(np.float16).astype(np.float32),
         "bf16": round_bf16}


@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("kw", [dict(), dict(causal=True, n_kv_heads=2,
                                             rope_dim=8)])
def test_sixteen_bit_block_is_the_rounded_f32_block(dt, kw):
    rng = np.random.default_rng(23)
    D, H, T = 32, 4, 9
    b16 = mhsa.Block(D, H, T, weight_dtype=dt, **kw)
    b32 = mhsa.Block(D, H, T, **kw)
    R = b16.qkv_rows
    w = [rng.standard_normal((R, D)).astype(np.float32) / np.sqrt(D),
         (rng.standard_normal(R) * 0.1).astype(np.float32),
         rng.standard_normal((D, D)).astype(np.float32) / np.sqrt(D),
         (rng.standard_normal(D) * 0.1).astype(np.float32)]
    b16.set_weights(*w)
    rounded = [ROUND[dt](w[0]), w[1], ROUND[dt](w[2]), w[3]]
    b32.set_weights(*rounded)
    x = rng.standard_normal((2, T, D)).astype(np.float32)
    y16, y32 = b16.forward(x), b32.forward(x)
    assert rel_err(y16, y32) < 1e-4
    dy = rng.standard_normal(x.shape).astype(np.float32)
    dx16, g16 = b16.backward(dy)
    dx32, g32 = b32.backward(dy)
    assert rel_err(dx16, dx32) < 1e-4
    for name in g32:
        assert rel_err(g16[name], g32[name]) < 1e-4, name
