"""Weights in: load_state_dict in the three name sets (from a real
torch.nn.MultiheadAttention, and split as Hugging Face and the GPT name
them), safetensors saved under each set and loaded back, prefixes."""
import numpy as np
import pytest
import torch

import mhsa
from test_block import make


def split(w_qkv, b_qkv, w_out, b_out, names, D, kv_rows, prefix=""):
    q, k, v = np.split(w_qkv, [D, D + kv_rows])
    sd = {prefix + n + ".weight": a for n, a in zip(names, (q, k, v, w_out))}
    if b_qkv is not None:
        bq, bk, bv = np.split(b_qkv, [D, D + kv_rows])
        sd.update({prefix + n + ".bias": a
                   for n, a in zip(names, (bq, bk, bv, b_out))})
    return sd


def same(blk, w):
    for a, b in zip(blk.get_weights(), w):
        assert (a is None and b is None) or np.array_equal(a, b)


def test_torch_state_dict_loads_unchanged():
    torch.manual_seed(0)
    ref = torch.nn.MultiheadAttention(32, 4, batch_first=True)
    blk = mhsa.Block(32, 4, 8)
    blk.load_state_dict(ref.state_dict())
    x = torch.randn(2, 8, 32)
    y_ref, _ = ref(x, x, x, need_weights=False)
    assert np.abs(blk.forward(x) - y_ref.detach().numpy()).max() < 1e-5
    wrapped = {"attn." + k: v for k, v in ref.state_dict().items()}
    wrapped["emb.weight"] = torch.zeros(3)
    other = mhsa.Block(32, 4, 8)
    other.load_state_dict(wrapped, prefix="attn.")
    same(other, blk.get_weights())


@pytest.mark.parametrize("names", [("q_proj", "k_proj", "v_proj", "o_proj"),
                                   ("c_q", "c_k", "c_v", "c_proj")])
@pytest.mark.parametrize("bias", [True, False])
def test_split_names(rng, names, bias):
    blk, w = make(rng, T=8, n_kv_heads=2, bias=bias)
    sd = split(*w, names, 32, 2 * 8, prefix="model.layers.0.")
    other = mhsa.Block(32, 4, 8, n_kv_heads=2, bias=bias)
    other.load_state_dict(sd, prefix="model.layers.0.")
    same(other, w)
    sd["model.layers.0." + names[1] + ".weight"] = np.zeros((8, 32))
    with pytest.raises(ValueError, match=r"k.*: shape \(8, 32\), expected "
                       r"\(16, 32\)"):
        other.load_state_dict(sd, prefix="model.layers.0.")


@pytest.mark.parametrize("names", ["torch", "hf", "c"])
def test_safetensors_round_trip(rng, tmp_path, names):
    blk, w = make(rng, T=8, n_kv_heads=2)
    path = tmp_path / f"{names}.safetensors"
    blk.save_safetensors(path, prefix="blk.", names=names)
    other = mhsa.Block(32, 4, 8, n_kv_heads=2)
    other.load_safetensors(str(path), prefix="blk.")
    same(other, w)
    with pytest.raises(mhsa.Error) as e:
        other.load_safetensors(path, prefix="nope.")
    assert e.value.status == "FORMAT" and "nope.in_proj_weight" in str(e.value)
    with pytest.raises(ValueError, match="names"):
        blk.save_safetensors(path, names="gguf")
