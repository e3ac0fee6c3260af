"""Memory follows the input, not max_seq_len: a Block's workspaces are
sized by the largest (B, T) given so far (growing on demand up to
max_seq_len), so a short forward on a block with a huge max_seq_len takes
little memory, with the same bits as on a block sized for it."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mhsa

BIG = 2**21          # the workspace for this many tokens: > 4 GB at D = 64
CAP = 1536 * 2**20   # address-space cap of the child: 1.5 GB


def run_capped(code):
    prog = textwrap.dedent(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, ({CAP}, {CAP}))
        import numpy as np
        import mhsa
        """) + textwrap.dedent(code)
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_one_token_forward_with_a_huge_max_seq_len_fits_in_a_small_cap():
    out = run_capped(f"""
        blk = mhsa.Block(64, 4, {BIG}, causal=True)
        blk.init_random(1)
        x = np.random.default_rng(0).standard_normal((1, 1, 64))
        y = blk.forward(x.astype(np.float32))
        dx, g = blk.backward(np.ones_like(y))
        cache = blk.kv_cache(1, 32)
        for t in range(4):
            blk.forward_cached(cache, x.astype(np.float32))
        print("ok", len(cache))
        """)
    assert out.split() == ["ok", "4"]


def assert_same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("kw", [dict(causal=True), dict(causal=False),
                                dict(causal=True, rope_dim=8, n_kv_heads=2),
                                dict(causal=True, window=5)])
def test_same_bits_as_a_block_sized_for_the_input(kw):
    rng = np.random.default_rng(7)
    small = mhsa.Block(64, 4, 40, **kw)
    big = mhsa.Block(64, 4, 1 << 16, **kw)
    small.init_random(3)
    big.init_random(3)
    # Growing: T = 1, then longer, then a bigger batch, then short again.
    for B, T in [(1, 1), (1, 7), (3, 40), (2, 3), (4, 33)]:
        x = rng.standard_normal((B, T, 64)).astype(np.float32)
        dy = rng.standard_normal((B, T, 64)).astype(np.float32)
        ys, yb = small.forward(x), big.forward(x)
        assert_same(ys, yb)
        (dxs, gs), (dxb, gb) = small.backward(dy), big.backward(dy)
        assert_same(dxs, dxb)
        for k in gs:
            assert_same(gs[k], gb[k])
    if kw["causal"]:
        cs, cb = small.kv_cache(2, 40), big.kv_cache(2, 40)
        for t in (5, 1, 1, 17):
            x = rng.standard_normal((2, t, 64)).astype(np.float32)
            assert_same(small.forward_cached(cs, x),
                        big.forward_cached(cb, x))


def test_workspace_memory_follows_the_input():
    blk = mhsa.Block(64, 4, 1 << 20)
    blk.init_random(0)
    blk.forward(np.zeros((1, 1, 64), np.float32))
    # The workspace of one token: far below the 1 << 20 tokens' (> 2 GB).
    assert blk.workspace_nbytes < 64 << 20
    blk.forward(np.zeros((1, 1000, 64), np.float32))
    assert blk.workspace_nbytes < 64 << 20


def test_a_workspace_refuses_what_it_was_not_sized_for():
    # The extension's workspace of max_t rows (the public
    # mhsa_workspace_create_sized): a longer input is refused, never
    # written past the views.
    from mhsa import _mhsa
    blk = mhsa.Block(64, 4, 32, causal=True)
    blk.init_random(0)
    with pytest.raises(mhsa.Error) as e:
        _mhsa.Workspace(blk._c, 1, 33)
    assert e.value.status == "INVALID_ARG"
    ws = _mhsa.Workspace(blk._c, 1, 4)
    x = np.zeros((1, 5, 64), np.float32)
    y = np.empty_like(x)
    with pytest.raises(mhsa.Error, match="max_t = 4") as e:
        ws.forward(x, 1, 5, None, None, y, None)
    assert e.value.status == "SHAPE"
    cache = blk.kv_cache(1, 8)
    with pytest.raises(ValueError, match="max_t = 4"):
        ws.forward_cached(cache._c, x[:, :1], 1, 1, None, y[:, :1])
