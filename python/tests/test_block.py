"""mhsa.Block against the float64 reference (ref.py): forward with and
without weights, masks, key padding, every variant, backward; the package's
basics (version, ISA, import without torch)."""
import importlib.metadata
import subprocess
import sys

import numpy as np
import pytest
import torch

import mhsa
import ref
from conftest import rel_err

TOL = 1e-4

VARIANTS = [
    dict(),
    dict(causal=True),
    dict(bias=False),
    dict(n_kv_heads=2, causal=True),
    dict(n_kv_heads=1),
    dict(rope_dim=8, causal=True),
    dict(rope_dim=4, rope_interleaved=True, rope_theta=500.0, n_kv_heads=2),
    dict(window=3, causal=True),
    dict(window=2, causal=True, n_kv_heads=2, rope_dim=8),
]


def make(rng, D=32, H=4, T=9, **kw):
    blk = mhsa.Block(D, H, T, **kw)
    R = blk.qkv_rows
    bias = kw.get("bias", True)
    w = [rng.standard_normal((R, D)) / np.sqrt(D),
         rng.standard_normal(R) * 0.1 if bias else None,
         rng.standard_normal((D, D)) / np.sqrt(D),
         rng.standard_normal(D) * 0.1 if bias else None]
    w = [None if a is None else a.astype(np.float32) for a in w]
    blk.set_weights(*w)
    return blk, w


def ref_of(blk, w, x, **kw):
    t = [None if a is None else torch.tensor(a, dtype=torch.float64,
                                             requires_grad=True) for a in w]
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    y, p = ref.attention(xt, *t, H=blk.n_heads, Hkv=blk.n_kv_heads,
                         causal=blk.causal, rope_dim=blk.rope_dim,
                         theta=kw.pop("rope_theta", 0.0),
                         interleaved=kw.pop("rope_interleaved", False),
                         window=blk.window, **kw)
    return xt, t, y, p


def cfg_kw(cfg):
    return {k: cfg[k] for k in ("rope_theta", "rope_interleaved") if k in cfg}


def test_version_and_isa():
    assert mhsa.__version__ == importlib.metadata.version("mhsa")
    assert mhsa.active_isa() in ("scalar", "avx2", "avx512", "neon")


def test_import_does_not_import_torch():
    code = "import sys, mhsa; assert 'torch' not in sys.modules, 'torch'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_describe_names_the_active_isa():
    text = mhsa.describe()
    assert text.startswith("mhsa " + mhsa.__version__ + "\n")
    assert "\nactive isa: " + mhsa.active_isa() + "\n" in text


def test_select_isa():
    before = mhsa.active_isa()
    mhsa.select_isa("scalar")
    assert mhsa.active_isa() == "scalar"
    assert "\nactive isa: scalar\n" in mhsa.describe()
    other = "neon" if before != "neon" else "avx2"
    with pytest.raises(mhsa.Error) as e:
        mhsa.select_isa(other)
    assert e.value.status == "UNSUPPORTED" and other in str(e.value)
    assert mhsa.active_isa() == "scalar"
    with pytest.raises(ValueError, match="unknown ISA"):
        mhsa.select_isa("sse9")
    mhsa.select_isa("auto")
    assert mhsa.active_isa() in ("scalar", "avx2", "avx512", "neon")
    mhsa.select_isa(before)
    assert mhsa.active_isa() == before


@pytest.mark.parametrize("cfg", VARIANTS, ids=str)
def test_forward_and_backward_match_reference(rng, cfg):
    blk, w = make(rng, **cfg)
    B, T = 3, 9
    x = rng.standard_normal((B, T, 32)).astype(np.float32)
    mask = np.where(rng.random((T, T)) < 0.2, -np.inf,
                    rng.standard_normal((T, T))).astype(np.float32)
    np.fill_diagonal(mask, 0.0)   # every row keeps a key
    seq_len = np.array([9, 5, 1], np.int32)
    for m, s in ((None, None), (mask, None), (None, seq_len), (mask, seq_len)):
        y, attn = blk.forward(x, mask=m, seq_len=s, need_weights=True)
        y2 = blk.forward(x, mask=m, seq_len=s)
        assert np.array_equal(y, y2), "with and without weights differ"
        xt, t, yr, pr = ref_of(blk, w, x, mask=None if m is None else
                               torch.tensor(m, dtype=torch.float64),
                               seq_len=s, **cfg_kw(cfg))
        assert rel_err(y, yr.detach()) < TOL
        assert rel_err(attn, pr.detach()) < TOL
        dy = rng.standard_normal(y.shape).astype(np.float32)
        dx, g = blk.backward(dy)
        (yr * torch.tensor(dy, dtype=torch.float64)).sum().backward()
        assert rel_err(dx, xt.grad) < TOL
        names = ["in_proj_weight", "in_proj_bias", "out_proj.weight",
                 "out_proj.bias"]
        for name, tt in zip(names, t):
            if tt is None:
                assert name not in g
            else:
                assert rel_err(g[name], tt.grad) < TOL, name


def test_inputs_are_converted(rng):
    blk, _ = make(rng)
    x = rng.standard_normal((2, 9, 32))
    y64 = blk.forward(x)                        # float64: converted
    y32 = blk.forward(x.astype(np.float32))
    yt = blk.forward(torch.tensor(x, dtype=torch.float32, requires_grad=True))
    yf = blk.forward(np.asfortranarray(x.astype(np.float32)))
    assert y32.dtype == np.float32 and y32.flags.c_contiguous
    for other in (y64, yt, yf):
        assert np.array_equal(other, y32)


def test_init_random_is_deterministic():
    a, b = mhsa.Block(16, 2, 4), mhsa.Block(16, 2, 4)
    a.init_random(7)
    b.init_random(7)
    for u, v in zip(a.get_weights(), b.get_weights()):
        assert np.array_equal(u, v)
    assert not np.array_equal(a.get_weights()[0], a.get_weights()[0] * 0)
    assert np.all(a.get_weights()[1] == 0)
