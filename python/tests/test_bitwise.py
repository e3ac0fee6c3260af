"""The package gives the C library's bits: the same weights and input
through the C driver of tests/io/interop (a separate meson build of the
library, called from C) and through mhsa.Block give identical y, and
the weights each side saves read back identically."""
import subprocess

import numpy as np
import pytest

import mhsa

CASES = [
    dict(D=32, H=4, causal=0, bias=1),
    dict(D=32, H=4, causal=1, bias=0),
    dict(D=48, H=6, causal=1, bias=1, kv=2, rope=8),
    dict(D=64, H=4, causal=0, bias=1, kv=1, rope=16, theta=500.0),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_forward_bits_equal_the_c_library(tmp_path, rng, c_driver, case):
    D, H, B, T = case["D"], case["H"], 2, 37
    blk = mhsa.Block(D, H, T, causal=case["causal"], bias=case["bias"],
                     n_kv_heads=case.get("kv", 0), rope_dim=case.get("rope", 0),
                     rope_theta=case.get("theta", 0.0))
    blk.init_random(11)
    w = list(blk.get_weights())
    w[0] = w[0] + rng.standard_normal(w[0].shape).astype(np.float32) * 0.05
    if case["bias"]:
        w[1] = rng.standard_normal(w[1].shape).astype(np.float32) * 0.1
        w[3] = rng.standard_normal(w[3].shape).astype(np.float32) * 0.1
    blk.set_weights(*w)
    blk.save_safetensors(tmp_path / "w.safetensors", prefix="attn.")
    x = rng.standard_normal((B, T, D)).astype(np.float32)
    x.tofile(tmp_path / "x.bin")
    args = [c_driver]
    if "kv" in case:
        args += ["--kv-heads", str(case["kv"])]
    if "rope" in case:
        args += ["--rope", str(case["rope"])]
    if "theta" in case:
        args += ["--rope-theta", repr(case["theta"])]
    args += [str(tmp_path / "w.safetensors"), "attn.", str(D), str(H),
             str(case["causal"]), str(case["bias"]), str(B), str(T),
             str(tmp_path / "x.bin"), str(tmp_path / "y.bin"),
             str(tmp_path / "c.safetensors"), ""]
    subprocess.run(args, check=True)
    y_c = np.fromfile(tmp_path / "y.bin", np.float32).reshape(B, T, D)
    y_py = blk.forward(x)
    assert y_py.tobytes() == y_c.tobytes(), (
        f"max |diff| {np.abs(y_py - y_c).max()}")
    # What C saved loads back into Python with the very same bits.
    back = mhsa.Block(D, H, T, causal=case["causal"], bias=case["bias"],
                      n_kv_heads=case.get("kv", 0),
                      rope_dim=case.get("rope", 0),
                      rope_theta=case.get("theta", 0.0))
    back.load_safetensors(tmp_path / "c.safetensors")
    for a, b in zip(back.get_weights(), w):
        assert (a is None and b is None) or a.tobytes() == b.tobytes()
