"""Bad inputs: ValueError naming the argument and both shapes, mhsa.Error
with the C message and status, and nothing changed by a failed call."""
import numpy as np
import pytest

import mhsa
from test_block import make


def test_shape_mistakes_name_the_argument(rng):
    blk, w = make(rng, T=9)
    x = np.zeros((2, 9, 32), np.float32)
    cases = [
        (lambda: blk.forward(np.zeros((9, 32))), r"x: shape \(9, 32\), "
         r"expected \(B, T, 32\)"),
        (lambda: blk.forward(np.zeros((2, 9, 16))), r"x: shape \(2, 9, 16\)"),
        (lambda: blk.forward(np.zeros((1, 10, 32))), "max_seq_len 9"),
        (lambda: blk.forward(x, mask=np.zeros((9, 8))),
         r"mask: shape \(9, 8\), expected \(9, 9\)"),
        (lambda: blk.forward(x, mask=np.zeros((9, 9), bool)), "boolean"),
        (lambda: blk.forward(x, seq_len=[3]), r"seq_len: shape \(1,\), "
         r"expected \(2,\)"),
        (lambda: blk.forward(x, seq_len=[3.0, 2.0]), "seq_len: expected "
         "integers"),
        (lambda: blk.set_weights(w[0][:-1], *w[1:]), r"w_qkv: shape \(95, "
         r"32\), expected \(96, 32\)"),
        (lambda: blk.set_weights(w[0], None, w[2], w[3]), "b_qkv: required"),
        (lambda: blk.forward("text"), "x: cannot be converted"),
    ]
    for call, pattern in cases:
        with pytest.raises(ValueError, match=pattern):
            call()
    blk.forward(x)
    with pytest.raises(ValueError, match=r"dy: shape \(1, 9, 32\), expected "
                       r"\(2, 9, 32\)"):
        blk.backward(np.zeros((1, 9, 32)))


def test_c_errors_are_mhsa_error():
    with pytest.raises(mhsa.Error) as e:
        mhsa.Block(30, 4, 8)
    assert e.value.status == "SHAPE" and "30" in str(e.value)
    with pytest.raises(mhsa.Error) as e:
        mhsa.Block(32, 4, 8, window=2)   # a window needs causal
    assert e.value.status == "INVALID_ARG" and "window" in str(e.value)
    blk = mhsa.Block(32, 4, 8)
    with pytest.raises(mhsa.Error) as e:
        blk.backward(np.zeros((1, 8, 32)))
    assert e.value.status == "STATE"
    with pytest.raises(mhsa.Error) as e:
        blk.kv_cache(1, 8)                 # not causal
    assert e.value.status == "INVALID_ARG"
    with pytest.raises(mhsa.Error) as e:
        blk.load_safetensors("/nonexistent/w.safetensors")
    assert e.value.status == "IO"
    assert issubclass(mhsa.Error, Exception) and mhsa.Error.__module__ == "mhsa"


def test_failed_calls_change_nothing(rng, tmp_path):
    blk, w = make(rng, T=9)
    (tmp_path / "bad.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00"
                                               b"\x00\x00{}")
    with pytest.raises(mhsa.Error) as e:
        blk.load_safetensors(tmp_path / "bad.safetensors")
    assert e.value.status == "FORMAT"
    with pytest.raises(ValueError):
        blk.load_state_dict({"in_proj_weight": w[0], "in_proj_bias": w[1],
                             "out_proj.weight": w[2][:, :5],
                             "out_proj.bias": w[3]})
    with pytest.raises(ValueError, match="'in_proj_weight' is missing"):
        blk.load_state_dict({"q_proj.weight": w[2]})
    for a, b in zip(blk.get_weights(), w):
        assert np.array_equal(a, b)
    x = rng.standard_normal((2, 9, 32)).astype(np.float32)
    with pytest.raises(mhsa.Error) as e:
        blk.forward(x, seq_len=[9, 0])
    assert e.value.status == "INVALID_ARG"
    cblk, _ = make(rng, T=9, causal=True)
    cache = cblk.kv_cache(1, 4)
    cblk.forward_cached(cache, x[:1, :3])
    with pytest.raises(mhsa.Error) as e:
        cblk.forward_cached(cache, x[:1, :2])     # 5 > capacity 4
    assert e.value.status == "SHAPE" and len(cache) == 3


def test_dtype_fields():
    blk = mhsa.Block(32, 4, 8, weight_dtype="f32", compute_dtype="f32")
    assert blk.weight_dtype == "f32"
    for field in ("weight_dtype", "compute_dtype"):
        with pytest.raises(ValueError, match=field):
            mhsa.Block(32, 4, 8, **{field: "f8"})
    # 16-bit weights and BF16 compute: where mhsa.h lacks the fields, a
    # clear ValueError; where it has them, a block.
    for field, value, have in (("weight_dtype", "bf16",
                                mhsa._mhsa.weight_dtypes),
                               ("compute_dtype", "bf16",
                                mhsa._mhsa.compute_dtypes)):
        if value in have:
            mhsa.Block(32, 4, 8, **{field: value})
        else:
            with pytest.raises(ValueError, match="does not have it yet"):
                mhsa.Block(32, 4, 8, **{field: value})
