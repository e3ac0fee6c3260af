"""The three sets of weight names a state dict may use, as for safetensors
files (API.md "Weight names"): PyTorch's fused in_proj, Hugging Face's
q/k/v/o_proj, the GPT's c_q/c_k/c_v/c_proj. Tried in that order; the first
complete set is fused into the block's (w_qkv, b_qkv, w_out, b_out)."""
import numpy as np

from . import _arrays

# (names of the Q, K, V, out weights or the fused QKV and out weights),
# each with ".bias" beside ".weight" (PyTorch: in_proj_bias).
SPLIT_SETS = (
    ("q_proj", "k_proj", "v_proj", "o_proj"),
    ("c_q", "c_k", "c_v", "c_proj"),
)
TORCH_NAMES = ("in_proj_weight", "in_proj_bias", "out_proj.weight",
               "out_proj.bias")


def _get(sd, prefix, name, shape):
    a = _arrays.f32(sd[prefix + name], prefix + name)
    _arrays.check_shape(a, prefix + name, shape)
    return a


def _has_all(sd, prefix, names):
    return all(prefix + n in sd for n in names)


def fused(sd, prefix, d_model, kv_rows, qkv_rows, bias):
    """(w_qkv, b_qkv, w_out, b_out) from the first complete set of `sd`
    (biases None without bias); ValueError naming the first missing tensor
    of the PyTorch set when none is complete, or a tensor whose shape
    disagrees with the block."""
    D = d_model
    need = TORCH_NAMES if bias else TORCH_NAMES[0::2]
    if _has_all(sd, prefix, need):
        w_qkv = _get(sd, prefix, "in_proj_weight", (qkv_rows, D))
        w_out = _get(sd, prefix, "out_proj.weight", (D, D))
        if not bias:
            return w_qkv, None, w_out, None
        return (w_qkv, _get(sd, prefix, "in_proj_bias", (qkv_rows,)), w_out,
                _get(sd, prefix, "out_proj.bias", (D,)))
    rows = (D, kv_rows, kv_rows, D)
    for names in SPLIT_SETS:
        need = [n + ".weight" for n in names]
        if bias:
            need += [n + ".bias" for n in names]
        if not _has_all(sd, prefix, need):
            continue
        w = [_get(sd, prefix, n + ".weight", (r, D))
             for n, r in zip(names, rows)]
        b = ([_get(sd, prefix, n + ".bias", (r,))
              for n, r in zip(names, rows)] if bias else None)
        w_qkv = np.concatenate(w[:3], axis=0)
        if not bias:
            return w_qkv, None, w[3], None
        return w_qkv, np.concatenate(b[:3]), w[3], b[3]
    need = TORCH_NAMES if bias else TORCH_NAMES[0::2]
    missing = next(prefix + n for n in need if prefix + n not in sd)
    raise ValueError(f"state dict: no complete set of weight names after "
                     f"prefix {prefix!r}: {missing!r} is missing (also tried "
                     f"q_proj/k_proj/v_proj/o_proj and c_q/c_k/c_v/c_proj)")
