#!/usr/bin/env python3
"""Fits the polynomial of the AVX-512 exp (src/avx512/vmath.h).

exp(r) ~ 1 + r P(r) on |r| <= ln(2)/2, P of degree 5, minimising the
largest *relative* error of 1 + r P(r) (Lawson's iteratively reweighted
least squares on a dense Chebyshev grid, which converges to the minimax
fit). Prints the fit error and the coefficients rounded to float, as the
kernel uses them (c0 rounds to exactly 1). With --degree 4 it reproduces
the AVX2 exp's coefficients (src/avx2/vmath.h) and their 9.2e-8.

Needs numpy and mpmath (Debian python3-numpy, python3-mpmath); not run by
the build or CI.
"""
import argparse

import mpmath as mp
import numpy as np


def fit(degree, points=20001, iterations=400):
    half_ln2 = float(mp.log(2) / 2)
    r = np.cos(np.linspace(0, np.pi, points)) * half_ln2 * 1.0005
    r = r[r != 0]
    e = np.array([float(mp.exp(mp.mpf(float(x)))) for x in r])
    q = (e - 1) / r        # what P must approximate
    w = np.abs(r) / e      # turns P's error into 1 + r P(r)'s relative one
    v = np.vander(r, degree + 1, increasing=True)
    lw = np.full(r.shape, 1.0 / len(r))
    for _ in range(iterations):
        sw = np.sqrt(lw) * w
        c, *_ = np.linalg.lstsq(v * sw[:, None], q * sw, rcond=None)
        err = np.abs((v @ c - q) * w)
        lw *= err
        lw /= lw.sum()
    return c, err.max()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--degree", type=int, default=5)
    args = ap.parse_args()
    mp.mp.dps = 40
    c, emax = fit(args.degree)
    print(f"degree {args.degree}: max relative error {emax:.3g}")
    for i, x in enumerate(c):
        print(f"c{i} = {float(np.float32(x)).hex()}")


if __name__ == "__main__":
    main()
