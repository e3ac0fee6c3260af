"""Turning what the caller passes into the arrays the C library reads.

Anything NumPy can convert (NumPy arrays, lists, CPU PyTorch tensors)
becomes a C-contiguous float32 (or int32) NumPy array, copied only when it
is not one already. PyTorch tensors are recognised by duck typing so that
importing mhsa never imports torch.
"""
import numpy as np


def _is_torch_tensor(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


def _from_torch(x, name):
    if x.device.type != "cpu":
        raise ValueError(f"{name}: a tensor on {x.device}; mhsa computes on "
                         "the CPU (pass x.cpu())")
    x = x.detach()
    # NumPy has no bfloat16: PyTorch converts those; the rest NumPy does.
    if str(x.dtype) == "torch.bfloat16":
        x = x.float()
    return x.numpy()


def is_bool(x):
    """True for a boolean array or tensor (a mask that blocks, not adds)."""
    if _is_torch_tensor(x):
        return str(x.dtype) == "torch.bool"
    return np.asarray(x).dtype == np.bool_


def f32(x, name):
    """x as a C-contiguous float32 array (the same memory when it is one)."""
    if _is_torch_tensor(x):
        x = _from_torch(x, name)
    try:
        return np.ascontiguousarray(x, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}: cannot be converted to a float32 "
                         f"array ({e})") from None


def i32(x, name):
    """x as a C-contiguous int32 array; its elements must be integers."""
    if _is_torch_tensor(x):
        x = _from_torch(x, name)
    a = np.asarray(x)
    if a.dtype.kind not in "iu":
        raise ValueError(f"{name}: expected integers, got dtype {a.dtype}")
    if a.size and (a.min() < np.iinfo(np.int32).min
                   or a.max() > np.iinfo(np.int32).max):
        raise ValueError(f"{name}: values beyond the int32 range")
    return np.ascontiguousarray(a, dtype=np.int32)


def check_shape(a, name, expected):
    """ValueError naming `name` unless a.shape matches `expected` (a tuple;
    None matches any size)."""
    ok = a.ndim == len(expected) and all(
        e is None or e == s for e, s in zip(expected, a.shape))
    if not ok:
        shown = "(" + ", ".join("*" if e is None else str(e)
                                for e in expected) + ")"
        if len(expected) == 1:
            shown = shown[:-1] + ",)"
        raise ValueError(f"{name}: shape {tuple(a.shape)}, expected {shown}")
