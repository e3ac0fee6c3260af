"""Shared pieces of the mhsa package's tests: the relative error of the
contract, and the C driver for the bitwise comparison (tests/io/interop's
interop_driver from a meson build, given as MHSA_PY_C_DRIVER; without it
those tests skip, unless MHSA_PY_STRICT=1 as in CI, where they fail)."""
import os

import numpy as np
import pytest


def rel_err(a, b):
    """max |a - b| / max(1, max |b|): the contract's per-tensor measure."""
    a, b = (np.asarray(t.detach() if hasattr(t, "detach") else t, np.float64)
            for t in (a, b))
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


@pytest.fixture
def c_driver():
    path = os.environ.get("MHSA_PY_C_DRIVER")
    if not path:
        if os.environ.get("MHSA_PY_STRICT") == "1":
            pytest.fail("MHSA_PY_C_DRIVER is not set (MHSA_PY_STRICT=1)")
        pytest.skip("MHSA_PY_C_DRIVER not set: no C driver to compare with")
    return path


@pytest.fixture
def rng():
    return np.random.default_rng(2026)
