// vrow_body.h — the row kernels whose logic is the same at every x86
// vector width, written once over the vector primitives of the ISA file
// that includes it (src/avx2/vrow.h, src/avx512/vrow.h):
//   rows_finite (kernels.h): x * 0 is NaN exactly when x is inf or NaN
//     (+-0 for every finite x, subnormals too, whatever FTZ/DAZ say), and
//     a sum of +-0 stays +-0 while a NaN stays NaN: so one FMA a vector,
//     acc = x * 0 + acc, with the load folded into it, where the bit test
//     (and, add, or) took three integer operations. Four accumulators
//     cover the FMA's latency; a masked tail (masked-off lanes load as 0,
//     a finite value) so nothing past a row's cols is read. The answer is
//     scalar's for every input, NaN payloads and subnormals included: only
//     whether some lane went NaN is read.
//   colsum_add (kernels.h): acc[c] + x[0][c] + x[1][c] + ... in row
//     order, VR_N columns a vector and up to VR_COLSUM_VECS vectors summed
//     at once so the adds of one row do not wait on each other; the last
//     vector masked. Each lane does the scalar loop's adds in its order:
//     the same bits.
//   scale_copy (the row of the split/merge permute, src/attn/permute.c):
//     VR_N floats a step, and a masked tail so nothing past n is read or
//     written. scale == 1 is a plain load/store, which moves the bits
//     unchanged (NaN payloads included).
//
// The primitives (macros; VR_INLINE a forced static inline):
//   VR_F, VR_N          the float vector type and its lanes
//   VR_M, VR_MASK(n)    a lane mask type; the first min(n, VR_N) lanes
//   VR_ALL              the mask of every lane
//   VR_ZERO(), VR_SET1(f), VR_LOAD(p), VR_STORE(p, x)
//   VR_MLOAD(p, mk)     the lanes of mk from p, the others 0; nothing else
//                       is read
//   VR_MSTORE(p, mk, x) the lanes of mk to p; nothing else is written
//   VR_ADD(a, b), VR_MUL(a, b), VR_FMADD(a, b, c) (a * b + c)
//   VR_ANY_NAN(x)       nonzero when some lane of x is NaN
#ifndef MHSA_KERNELS_VROW_BODY_H
#define MHSA_KERNELS_VROW_BODY_H

#include <stddef.h>

VR_INLINE int vr_rows_finite(size_t rows, size_t cols, const float *x,
                             size_t ld)
{
    if (ld == cols) {   // contiguous rows are one long row
        cols *= rows;
        rows = 1;
    }
    const VR_F zero = VR_ZERO();
    VR_F a0 = zero, a1 = zero, a2 = zero, a3 = zero;
    for (size_t r = 0; r < rows; r++) {
        const float *row = x + r * ld;
        size_t c = 0;
        for (; c + 4 * VR_N <= cols; c += 4 * VR_N) {
            a0 = VR_FMADD(VR_LOAD(row + c), zero, a0);
            a1 = VR_FMADD(VR_LOAD(row + c + VR_N), zero, a1);
            a2 = VR_FMADD(VR_LOAD(row + c + 2 * VR_N), zero, a2);
            a3 = VR_FMADD(VR_LOAD(row + c + 3 * VR_N), zero, a3);
        }
        for (; c + VR_N <= cols; c += VR_N)
            a0 = VR_FMADD(VR_LOAD(row + c), zero, a0);
        if (c < cols)
            a1 = VR_FMADD(VR_MLOAD(row + c, VR_MASK(cols - c)), zero, a1);
    }
    VR_F a = VR_ADD(VR_ADD(a0, a1), VR_ADD(a2, a3));
    return !VR_ANY_NAN(a);
}

enum { VR_COLSUM_VECS = 8 };   // vectors of running sums at a time, at most

// One pass over nv (a constant in each instance, so the row loop is
// straight-line) vectors of columns from acc, x; the last has `last`.
VR_INLINE void vr_colsum_pass(size_t rows, size_t nv, const float *x,
                              size_t ld, float *acc, VR_M last)
{
    const VR_M all = VR_ALL;
    VR_F s[VR_COLSUM_VECS];
    for (size_t v = 0; v < nv; v++)
        s[v] = VR_MLOAD(acc + VR_N * v, v + 1 < nv ? all : last);
    for (size_t r = 0; r < rows; r++) {
        const float *row = x + r * ld;
        for (size_t v = 0; v + 1 < nv; v++)
            s[v] = VR_ADD(s[v], VR_LOAD(row + VR_N * v));
        s[nv - 1] = VR_ADD(s[nv - 1], VR_MLOAD(row + VR_N * (nv - 1), last));
    }
    for (size_t v = 0; v < nv; v++)
        VR_MSTORE(acc + VR_N * v, v + 1 < nv ? all : last, s[v]);
}

VR_INLINE void vr_colsum_add(size_t rows, size_t cols, const float *x,
                             size_t ld, float *acc)
{
    enum { W = VR_N * VR_COLSUM_VECS };
    for (size_t c0 = 0; c0 < cols; c0 += W) {
        size_t w = cols - c0 < W ? cols - c0 : W;
        size_t nv = (w + VR_N - 1) / VR_N;
        VR_M last = VR_MASK(w - VR_N * (nv - 1));
        switch (nv) {
#define PASS(n)                                                               \
    case n:                                                                   \
        vr_colsum_pass(rows, n, x + c0, ld, acc + c0, last);                  \
        break;
            PASS(1) PASS(2) PASS(3) PASS(4) PASS(5) PASS(6) PASS(7) PASS(8)
#undef PASS
        }
    }
}

VR_INLINE void vr_copy_row(size_t n, const float *s, float *d)
{
    size_t j = 0;
    for (; j + VR_N <= n; j += VR_N)
        VR_STORE(d + j, VR_LOAD(s + j));
    if (j < n) {
        VR_M mk = VR_MASK(n - j);
        VR_MSTORE(d + j, mk, VR_MLOAD(s + j, mk));
    }
}

VR_INLINE void vr_scale_row(size_t n, const float *s, float *d, VR_F sc)
{
    size_t j = 0;
    for (; j + VR_N <= n; j += VR_N)
        VR_STORE(d + j, VR_MUL(sc, VR_LOAD(s + j)));
    if (j < n) {
        VR_M mk = VR_MASK(n - j);
        VR_MSTORE(d + j, mk, VR_MUL(sc, VR_MLOAD(s + j, mk)));
    }
}

VR_INLINE void vr_scale_copy(size_t n, const float *src, float *dst,
                             float scale)
{
    if (scale == 1.0f)
        vr_copy_row(n, src, dst);
    else
        vr_scale_row(n, src, dst, VR_SET1(scale));
}

#endif
