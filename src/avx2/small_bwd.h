// small_bwd.h — the pieces the two AVX2 small-backward files share: the
// columns of up to 16 rows in two 8-lane halves, and the dV, dK, dQ
// chains from p, ds and fl(scale * ds) held key by key (key j's 16 rows at
// [j * 16]). The fused kernel (attn_small_bwd.c) computes those three in
// that layout; the unfused small_bwd_grads (small_bwd.c, for the tiles the
// fused one declines) transposes the rows of s and dp into it. One set of
// chains, so the two give the same bits by construction.
#ifndef MHSA_AVX2_SMALL_BWD_H
#define MHSA_AVX2_SMALL_BWD_H

#include <immintrin.h>

#include "avx2/vmath.h"
#include "avx2/vtranspose.h"
#include "kernels/asan.h"
#include "kernels/kernels.h"

enum { MHSA_SBW = MHSA_SMALL_BWD_MAX };

// The AddressSanitizer builds compile one instance of the fused kernel,
// with the head width at run time (kernels/asan.h).
#define MHSA_SBW_RUN_TIME_SIZES MHSA_ASAN

// Inlined wherever called, so that the group sizes are constants there.
#define MHSA_SBW_INLINE static inline __attribute__((always_inline))

// t[c][h] lane i = x[(8h + i) * ld + c] for rows < rows, c < cols (<=
// 16); 0 elsewhere (halves past the rows are not written).
MHSA_SBW_INLINE void mhsa_sbw_columns(const float *x, size_t ld, size_t rows,
                                      size_t cols, __m256 t[MHSA_SBW][2])
{
    for (size_t h = 0; 8 * h < rows; h++)
        for (size_t cb = 0; cb < cols; cb += 8) {
            __m256i mk = mhsa_tail_mask__avx2(cols - cb);
            __m256 v[8];
            for (size_t i = 0; i < 8; i++)
                v[i] = 8 * h + i < rows
                           ? _mm256_maskload_ps(x + (8 * h + i) * ld + cb, mk)
                           : _mm256_setzero_ps();
            mhsa_transpose8__avx2(v);
            for (size_t i = 0; i < 8 && cb + i < cols; i++)
                t[cb + i][h] = v[i];
        }
}

// dst[0..dh) = dst + acc (the ukr's beta == 1: C first), W halves.
MHSA_SBW_INLINE void mhsa_sbw_add_to(float *dst, const __m256 *acc, int W,
                                     size_t dh)
{
    __m256i m0 = mhsa_tail_mask__avx2(dh);
    __m256i m1 = mhsa_tail_mask__avx2(dh > 8 ? dh - 8 : 0);
    _mm256_maskstore_ps(dst, m0,
                        _mm256_add_ps(_mm256_maskload_ps(dst, m0), acc[0]));
    if (W > 1)
        _mm256_maskstore_ps(
            dst + 8, m1,
            _mm256_add_ps(_mm256_maskload_ps(dst + 8, m1), acc[1]));
}

// dV and dK of keys j..j+G-1, whose sums all run over rows [r0, tq), in
// W halves of 8 head columns: one chain per key, gradient and half.
MHSA_SBW_INLINE void mhsa_sbw_keys_grad(const mhsa_small_bwd_args *a,
                                        const float *pt, const float *dst,
                                        size_t j, int G, int W, size_t r0,
                                        size_t dh)
{
    __m256 v[4][2], k[4][2];
    for (int i = 0; i < G; i++)
        for (int w = 0; w < W; w++)
            v[i][w] = k[i][w] = _mm256_setzero_ps();
    __m256i m0 = mhsa_tail_mask__avx2(dh);
    __m256i m1 = mhsa_tail_mask__avx2(dh > 8 ? dh - 8 : 0);
    const float *pj = pt + j * MHSA_SBW, *dj = dst + j * MHSA_SBW;
    for (size_t r = r0; r < a->tq; r++) {
        const float *dor = a->dout + r * a->lddo, *qr = a->q + r * dh;
        __m256 o[2], q[2];
        o[0] = _mm256_maskload_ps(dor, m0);
        q[0] = _mm256_maskload_ps(qr, m0);
        if (W > 1) {
            o[1] = _mm256_maskload_ps(dor + 8, m1);
            q[1] = _mm256_maskload_ps(qr + 8, m1);
        }
        for (int i = 0; i < G; i++) {
            __m256 p = _mm256_broadcast_ss(pj + i * MHSA_SBW + r);
            __m256 ds = _mm256_broadcast_ss(dj + i * MHSA_SBW + r);
            for (int w = 0; w < W; w++) {
                v[i][w] = _mm256_fmadd_ps(p, o[w], v[i][w]);
                k[i][w] = _mm256_fmadd_ps(ds, q[w], k[i][w]);
            }
        }
    }
    for (int i = 0; i < G; i++) {
        mhsa_sbw_add_to(a->dv + (j + (size_t)i) * a->ldg, v[i], W, dh);
        mhsa_sbw_add_to(a->dk + (j + (size_t)i) * a->ldg, k[i], W, dh);
    }
}

// dQ of rows r..r+G-1, whose sums all run over keys [0, ke); xst holds
// fl(scale * ds) transposed.
MHSA_SBW_INLINE void mhsa_sbw_rows_dq(const mhsa_small_bwd_args *a,
                                      const float *xst, size_t r, int G, int W,
                                      size_t ke, size_t dh)
{
    __m256 c[8][2];
    for (int i = 0; i < G; i++)
        for (int w = 0; w < W; w++)
            c[i][w] = _mm256_setzero_ps();
    __m256i m0 = mhsa_tail_mask__avx2(dh);
    __m256i m1 = mhsa_tail_mask__avx2(dh > 8 ? dh - 8 : 0);
    const float *xr = xst + r;
    for (size_t j = 0; j < ke; j++, xr += MHSA_SBW) {
        const float *kj = a->k + j * dh;
        __m256 kr[2];
        kr[0] = _mm256_maskload_ps(kj, m0);
        if (W > 1)
            kr[1] = _mm256_maskload_ps(kj + 8, m1);
        for (int i = 0; i < G; i++) {
            __m256 x = _mm256_broadcast_ss(xr + i);
            for (int w = 0; w < W; w++)
                c[i][w] = _mm256_fmadd_ps(x, kr[w], c[i][w]);
        }
    }
    for (int i = 0; i < G; i++)
        mhsa_sbw_add_to(a->dq + (r + (size_t)i) * a->ldg, c[i], W, dh);
}

// The gradients of the tile from the transposed p, ds and scale * ds:
// runs of keys (rows) sharing r0 (kend) in groups as large as the 16
// registers allow (4 keys / 8 rows at dh <= 8, half that past it), the
// sizes constants in each call. dh is a->dh (a constant where the caller
// has one).
MHSA_SBW_INLINE void mhsa_sbw_grads(const mhsa_small_bwd_args *a,
                                    const float *pt, const float *dst,
                                    const float *xst, size_t dh)
{
    size_t tq = a->tq, n = a->n;
    int wide = dh > 8;
    for (size_t j = 0; a->do_dkv && j < n;) {
        size_t run = mhsa_run_length(a->r0, j, n, MHSA_SBW), r0 = a->r0[j];
        for (size_t e = j + run; j < e;) {
            size_t grp = wide ? (e - j >= 2 ? 2 : 1) : (e - j >= 4 ? 4 : 1);
            if (r0 < tq && grp == 4)
                mhsa_sbw_keys_grad(a, pt, dst, j, 4, 1, r0, dh);
            else if (r0 < tq && grp == 2)
                mhsa_sbw_keys_grad(a, pt, dst, j, 2, 2, r0, dh);
            else if (r0 < tq)
                wide ? mhsa_sbw_keys_grad(a, pt, dst, j, 1, 2, r0, dh)
                     : mhsa_sbw_keys_grad(a, pt, dst, j, 1, 1, r0, dh);
            j += grp;
        }
    }
    for (size_t r = 0; a->do_dq && r < tq;) {
        size_t run = mhsa_run_length(a->kend, r, tq, MHSA_SBW),
               ke = a->kend[r];
        for (size_t e = r + run; r < e;) {
            size_t grp = wide ? (e - r >= 4 ? 4 : 1) : (e - r >= 8 ? 8 : 1);
            if (ke > 0 && grp == 8)
                mhsa_sbw_rows_dq(a, xst, r, 8, 1, ke, dh);
            else if (ke > 0 && grp == 4)
                mhsa_sbw_rows_dq(a, xst, r, 4, 2, ke, dh);
            else if (ke > 0)
                wide ? mhsa_sbw_rows_dq(a, xst, r, 1, 2, ke, dh)
                     : mhsa_sbw_rows_dq(a, xst, r, 1, 1, ke, dh);
            r += grp;
        }
    }
}

#endif
