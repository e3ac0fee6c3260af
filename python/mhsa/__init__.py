"""mhsa: multi-head self-attention on CPUs, the mhsa C library from Python.

    import mhsa
    blk = mhsa.Block(d_model=64, n_heads=4, max_seq_len=128, causal=True)
    blk.init_random(0)
    y = blk.forward(x)                  # x: (B, T, 64) NumPy or CPU tensor
    dx, grads = blk.backward(dy)

    with mhsa.Model("SmolLM2-135M-Instruct.Q4_1.gguf") as m:
        print(m.generate("The capital of France is", max_tokens=16))

mhsa.torch.MultiheadAttention is the torch.nn.Module (import mhsa.torch;
importing mhsa alone does not import torch).
"""
from . import _mhsa
from ._block import Block, KVCache
from ._model import Model

__all__ = ["Block", "KVCache", "Model", "Error", "active_isa", "select_isa",
           "describe", "__version__"]

#: The C library's version, mhsa_version(). The wheel's version is
#: meson.build's project version (pyproject.toml: dynamic); the tests check
#: that the two agree.
__version__ = _mhsa.version()

#: Raised with the C library's message; .status is its status name
#: ("INVALID_ARG", "SHAPE", "NO_MEMORY", "UNSUPPORTED", "STATE", "IO",
#: "FORMAT").
Error = _mhsa.Error


def active_isa():
    """The kernels dispatch uses: "scalar", "avx2", "avx512" or "neon"."""
    return _mhsa.active_isa()


def describe():
    """What the library chose on this machine and why, as the lines
    mhsa-info prints (mhsa_describe): ISAs, CPU features, the bf16 tile
    set, cache sizes, GEMM blocking. For logs; the wording may change."""
    return _mhsa.describe()


def select_isa(name):
    """Process-wide kernel choice ("auto", "scalar", "avx2", "avx512",
    "neon"); mhsa.Error (status "UNSUPPORTED") if this CPU or build lacks
    it. Call it before other threads use the library."""
    _mhsa.select_isa(name)
