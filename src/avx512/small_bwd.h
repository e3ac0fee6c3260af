// small_bwd.h — the pieces the two AVX-512 small-backward files share: the
// columns of up to 16 rows in the lanes, and the dV, dK, dQ chains from
// p, ds and fl(scale * ds) held key by key (key j's 16 rows at [j * 16]).
// The fused kernel (attn_small_bwd.c) computes those three in that layout;
// the unfused small_bwd_grads (small_bwd.c, for the tiles the fused one
// declines) transposes the rows of s and dp into it. One set of chains,
// so the two give the same bits by construction.
// Static, AVX-512 files only (vmath.h says why).
#ifndef MHSA_AVX512_SMALL_BWD_H
#define MHSA_AVX512_SMALL_BWD_H

#include "avx512/vmath.h"
#include "kernels/asan.h"
#include "avx512/vtranspose.h"

enum { MHSA_SBW = MHSA_SMALL_BWD_MAX, MHSA_SBW_GROUP = 8 };

// The pieces below are inlined where called (group sizes and widths
// constants there), except in the test-only SIMDe build and the
// AddressSanitizer builds, where each is one out-of-line function with
// its sizes at run time: the same operations per lane, a tenth of the
// compile time (SIMDe + ASan with gcc: 36 s for attn_small_bwd.c inlined).
// MHSA_SBW_RUN_TIME_SIZES says which: the fused kernel then runs its one
// instance with the head width at run time.
#define MHSA_SBW_RUN_TIME_SIZES (MHSA_AVX512_EMULATED || MHSA_ASAN)
#if MHSA_SBW_RUN_TIME_SIZES
#define MHSA_SBW_PIECE static __attribute__((noinline, unused))
#else
#define MHSA_SBW_PIECE MHSA_AVX512_INLINE
#endif

// t[c] lane r = x[r*ld + c] for r < rows, c < cols (<= 16); 0 elsewhere.
// Up to 8 columns: two rows a vector and the 24-shuffle transpose.
MHSA_SBW_PIECE void mhsa_sbw_columns(const float *x, size_t ld, size_t rows,
                                     size_t cols, __m512 t[MHSA_SBW])
{
    if (cols <= 8) {
        mhsa_columns8__avx512(x, ld, rows, cols, t);
        return;
    }
    __mmask16 mk = mhsa_mask16__avx512(cols);
    for (size_t r = 0; r < MHSA_SBW; r++)
        t[r] = r < rows ? _mm512_maskz_loadu_ps(mk, x + r * ld)
                        : _mm512_setzero_ps();
    mhsa_transpose16__avx512(t);
}

// dst[0..dh) = dst + acc (the ukr's beta == 1: C first).
MHSA_AVX512_INLINE void mhsa_sbw_add_to(float *dst, __m512 acc,
                                        __mmask16 mk)
{
    _mm512_mask_storeu_ps(dst, mk,
                          _mm512_add_ps(_mm512_maskz_loadu_ps(mk, dst), acc));
}

// dV and dK of keys j..j+G-1, whose sums all run over rows [r0, tq): one
// chain per key and gradient (the head columns in the lanes), p and ds
// from the key-by-key copies.
MHSA_SBW_PIECE void mhsa_sbw_keys_grad(const mhsa_small_bwd_args *a,
                                       const float *pt, const float *dst,
                                       size_t j, int G, size_t r0,
                                       size_t dh, __mmask16 mk)
{
    __m512 v[MHSA_SBW_GROUP], k[MHSA_SBW_GROUP];
    for (int i = 0; i < G; i++)
        v[i] = k[i] = _mm512_setzero_ps();
    const float *dout = a->dout, *q = a->q;
    size_t lddo = a->lddo, tq = a->tq;
    // One pointer each and the keys at constant offsets (an index per key
    // made the compiler keep 16 pointers, spilled).
    const float *pj = pt + j * MHSA_SBW, *dj = dst + j * MHSA_SBW;
    for (size_t r = r0; r < tq; r++) {
        __m512 dor = _mm512_maskz_loadu_ps(mk, dout + r * lddo);
        __m512 qr = _mm512_maskz_loadu_ps(mk, q + r * dh);
        for (int i = 0; i < G; i++) {
            v[i] = _mm512_fmadd_ps(_mm512_set1_ps(pj[i * MHSA_SBW + r]), dor,
                                   v[i]);
            k[i] = _mm512_fmadd_ps(_mm512_set1_ps(dj[i * MHSA_SBW + r]), qr,
                                   k[i]);
        }
    }
    for (int i = 0; i < G; i++) {
        mhsa_sbw_add_to(a->dv + (j + (size_t)i) * a->ldg, v[i], mk);
        mhsa_sbw_add_to(a->dk + (j + (size_t)i) * a->ldg, k[i], mk);
    }
}

// dQ of rows r..r+G-1, whose sums all run over keys [0, ke); xst holds
// fl(scale * ds) key by key.
MHSA_SBW_PIECE void mhsa_sbw_rows_dq(const mhsa_small_bwd_args *a,
                                     const float *xst, size_t r, int G,
                                     size_t ke, size_t dh, __mmask16 mk)
{
    __m512 c[MHSA_SBW_GROUP];
    for (int i = 0; i < G; i++)
        c[i] = _mm512_setzero_ps();
    const float *kp = a->k;
    const float *xr = xst + r;
    for (size_t j = 0; j < ke; j++, xr += MHSA_SBW) {
        __m512 kr = _mm512_maskz_loadu_ps(mk, kp + j * dh);
        for (int i = 0; i < G; i++)
            c[i] = _mm512_fmadd_ps(_mm512_set1_ps(xr[i]), kr, c[i]);
    }
    for (int i = 0; i < G; i++)
        mhsa_sbw_add_to(a->dq + (r + (size_t)i) * a->ldg, c[i], mk);
}

// dV, dK (if a->do_dkv) and dQ (if a->do_dq) of the tile: runs of keys
// (rows) sharing r0 (kend) in groups of 8, 4 and 1, the group size a
// constant in each call. dh is a->dh (a constant where the caller has
// one).
MHSA_AVX512_INLINE void mhsa_sbw_grads(const mhsa_small_bwd_args *a,
                                       const float *pt, const float *dst,
                                       const float *xst, size_t dh)
{
    size_t tq = a->tq, n = a->n;
    __mmask16 mk = mhsa_mask16__avx512(dh);
    for (size_t j = 0; a->do_dkv && j < n;) {
        size_t run = mhsa_run_length(a->r0, j, n, MHSA_SBW_GROUP);
        size_t r0 = a->r0[j];
        for (size_t e = j + run; j < e;) {
            size_t grp = e - j >= 8 ? 8 : e - j >= 4 ? 4 : 1;
            if (r0 < tq && grp == 8)
                mhsa_sbw_keys_grad(a, pt, dst, j, 8, r0, dh, mk);
            else if (r0 < tq && grp == 4)
                mhsa_sbw_keys_grad(a, pt, dst, j, 4, r0, dh, mk);
            else if (r0 < tq)
                mhsa_sbw_keys_grad(a, pt, dst, j, 1, r0, dh, mk);
            j += grp;
        }
    }
    for (size_t r = 0; a->do_dq && r < tq;) {
        size_t run = mhsa_run_length(a->kend, r, tq, MHSA_SBW_GROUP);
        size_t ke = a->kend[r];
        for (size_t e = r + run; r < e;) {
            size_t grp = e - r >= 8 ? 8 : e - r >= 4 ? 4 : 1;
            if (ke > 0 && grp == 8)
                mhsa_sbw_rows_dq(a, xst, r, 8, ke, dh, mk);
            else if (ke > 0 && grp == 4)
                mhsa_sbw_rows_dq(a, xst, r, 4, ke, dh, mk);
            else if (ke > 0)
                mhsa_sbw_rows_dq(a, xst, r, 1, ke, dh, mk);
            r += grp;
        }
    }
}

#endif
