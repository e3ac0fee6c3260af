"""Arguments that are not what they claim: an integer argument given a
float (64.7, and 64.0 too), a bool or a string, a flag given something
other than a bool, and arrays that are None or 0-d, are refused with
TypeError or ValueError naming the argument, never truncated or reshaped."""
import numpy as np
import pytest

import mhsa

INT_ARGS = ("d_model", "n_heads", "max_seq_len", "n_kv_heads", "rope_dim",
            "window")
GOOD = dict(d_model=64, n_heads=4, max_seq_len=16)


@pytest.mark.parametrize("name", INT_ARGS)
@pytest.mark.parametrize("bad", [64.7, 64.0, True, "64", None])
def test_block_integer_arguments_refuse_non_integers(name, bad):
    with pytest.raises(TypeError, match=rf"^{name}: expected an integer"):
        mhsa.Block(**{**GOOD, name: bad})


@pytest.mark.parametrize("name", INT_ARGS)
def test_block_integer_arguments_beyond_int32(name):
    with pytest.raises(ValueError, match=rf"^{name}: {2**31} is beyond"):
        mhsa.Block(**{**GOOD, name: 2**31})


def test_numpy_integers_are_integers():
    blk = mhsa.Block(np.int64(64), np.int32(4), np.uint16(16))
    assert (blk.d_model, blk.n_heads, blk.max_seq_len) == (64, 4, 16)
    assert type(blk.d_model) is int


@pytest.mark.parametrize("name", ["causal", "bias", "rope_interleaved"])
@pytest.mark.parametrize("bad", ["no", 2, 0.5, None])
def test_flags_refuse_non_bools(name, bad):
    with pytest.raises(TypeError, match=rf"^{name}: expected a bool"):
        mhsa.Block(**GOOD, **{name: bad})


def test_flags_take_bools_and_0_1():
    assert mhsa.Block(**GOOD, causal=np.bool_(True)).causal is True
    assert mhsa.Block(**GOOD, bias=0).bias is False


def test_other_integer_arguments():
    blk = mhsa.Block(**GOOD, causal=True)
    with pytest.raises(TypeError, match="^seed: expected an integer"):
        blk.init_random(1.5)
    with pytest.raises(TypeError, match="^max_batch: expected an integer"):
        blk.kv_cache(2.5, 8)
    with pytest.raises(TypeError, match="^capacity: expected an integer"):
        blk.kv_cache(2, 8.0)
    cache = blk.kv_cache(2, 8)
    with pytest.raises(TypeError, match="^b: expected an integer"):
        cache.seq_len(0.9)
    with pytest.raises(TypeError, match="^b: expected an integer"):
        cache.reset_seq(1.2)


def test_torch_module_integer_arguments():
    mt = pytest.importorskip("mhsa.torch")
    with pytest.raises(TypeError, match="^embed_dim: expected an integer"):
        mt.MultiheadAttention(64.7, 4)
    with pytest.raises(TypeError, match="^num_heads: expected an integer"):
        mt.MultiheadAttention(64, 4.0)
    with pytest.raises(TypeError, match="^max_seq_len: expected an integer"):
        mt.MultiheadAttention(64, 4, max_seq_len=8.5)


def test_none_and_0d_inputs_are_reported_as_such():
    blk = mhsa.Block(**GOOD, causal=True)
    blk.init_random(0)
    with pytest.raises(ValueError, match=r"^x: expected a 3-d array "
                       r"\(B, T, 64\), got None$"):
        blk.forward(None)
    with pytest.raises(ValueError, match=r"^x: expected a 3-d array "
                       r"\(B, T, 64\), got a 0-d array$"):
        blk.forward(np.float32(1.0))
    with pytest.raises(ValueError, match=r"^x: expected a 3-d array "
                       r"\(B, T, 64\), got a 0-d array$"):
        blk.forward(3.0)
    with pytest.raises(ValueError, match=r"^x_new: expected a 3-d array "
                       r"\(B, t_new, 64\), got None$"):
        blk.forward_cached(blk.kv_cache(1, 4), None)
    x = np.ones((1, 4, 64), np.float32)
    blk.forward(x)
    with pytest.raises(ValueError, match=r"^dy: expected a 3-d array "
                       r"\(1, 4, 64\), got a 0-d array$"):
        blk.backward(np.float32(0))
    with pytest.raises(ValueError, match=r"^mask: expected a 2-d array "
                       r"\(4, 4\), got a 0-d array$"):
        blk.forward(x, mask=0.0)
    with pytest.raises(ValueError, match=r"^seq_len: expected a 1-d array "
                       r"\(1,\), got a 0-d array$"):
        blk.forward(x, seq_len=4)
    w = blk.get_weights()
    with pytest.raises(ValueError, match=r"^w_out: expected a 2-d array "
                       r"\(64, 64\), got None$"):
        blk.set_weights(w[0], w[1], None, w[3])
