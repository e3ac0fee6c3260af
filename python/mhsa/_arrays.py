"""Turning what the caller passes into the arrays the C library reads.

Anything NumPy can convert (NumPy arrays, lists, CPU PyTorch tensors)
becomes a C-contiguous float32 (or int32) NumPy array, copied only when it
is not one already. PyTorch tensors are recognised by duck typing so that
importing mhsa never imports torch.
"""
import operator

import numpy as np

INT_MIN, INT_MAX = -2**31, 2**31 - 1   # the C library's int arguments


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


def _missing(x, name, expected):
    """ValueError for None (or, when `expected` is given, anything NumPy
    makes 0-d, while an array of len(expected) dimensions is expected)."""
    if expected is not None:
        what = f"a {len(expected)}-d array {_shown(expected)}"
    else:
        what = "an array"
    got = "None" if x is None else "a 0-d array"
    raise ValueError(f"{name}: expected {what}, got {got}")


def f32(x, name, shape=None):
    """x as a C-contiguous float32 array (the same memory when it is one);
    with `shape`, also checked against it (check_shape)."""
    if x is None:
        _missing(x, name, shape)
    if _is_torch_tensor(x):
        x = _from_torch(x, name)
    try:
        # order="C" copies what is not C-contiguous and, unlike
        # np.ascontiguousarray, keeps a 0-d input 0-d (not shape (1,)).
        a = np.asarray(x, dtype=np.float32, order="C")
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}: cannot be converted to a float32 "
                         f"array ({e})") from None
    if shape is not None:
        check_shape(a, name, shape)
    return a


def i32(x, name, shape=None):
    """x as a C-contiguous int32 array; its elements must be integers."""
    if x is None:
        _missing(x, name, shape)
    if _is_torch_tensor(x):
        x = _from_torch(x, name)
    a = np.asarray(x)
    if a.dtype.kind not in "iu":
        raise ValueError(f"{name}: expected integers, got dtype {a.dtype}")
    if a.size and (a.min() < np.iinfo(np.int32).min
                   or a.max() > np.iinfo(np.int32).max):
        raise ValueError(f"{name}: values beyond the int32 range")
    a = np.asarray(a, dtype=np.int32, order="C")
    if shape is not None:
        check_shape(a, name, shape)
    return a


def _shown(expected):
    parts = ["*" if e is None else str(e) for e in expected]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def check_shape(a, name, expected):
    """ValueError naming `name` unless a.shape matches `expected` (a tuple
    of sizes; None, or a letter such as "B", matches any size)."""
    if a.ndim == 0 and expected:
        _missing(a, name, expected)
    ok = a.ndim == len(expected) and all(
        not isinstance(e, int) or e == s for e, s in zip(expected, a.shape))
    if not ok:
        raise ValueError(f"{name}: shape {tuple(a.shape)}, expected "
                         f"{_shown(expected)}")


def integer(value, name, low=None):
    """value as a Python int: ints and NumPy integers, not bools, not
    floats (64.0 included, as NumPy's and Python's own indices refuse
    them), within the C int range (and >= low when given); TypeError or
    ValueError naming `name`."""
    if isinstance(value, (bool, np.bool_)) or not hasattr(value,
                                                          "__index__"):
        raise TypeError(f"{name}: expected an integer, got "
                        f"{type(value).__name__} {value!r}")
    v = operator.index(value)
    if not INT_MIN <= v <= INT_MAX:
        raise ValueError(f"{name}: {v} is beyond the int32 range of the C "
                         "library")
    if low is not None and v < low:
        raise ValueError(f"{name}: {v} must be >= {low}")
    return v


def flag(value, name):
    """value as a bool: True, False, NumPy bools, and the integers 0 and
    1; anything else (2, 0.5, "no", None) is a TypeError naming `name`."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if (not isinstance(value, float) and hasattr(value, "__index__")
            and operator.index(value) in (0, 1)):
        return bool(operator.index(value))
    raise TypeError(f"{name}: expected a bool, got {type(value).__name__} "
                    f"{value!r}")
