// small_bwd.c — the AVX-512 small attention-backward products (kernels.h:
// mhsa_small_bwd_args), read straight from the unpacked rows, for the
// tiles the fused kernel (attn_small_bwd.c) declines.
//
// They must give the bits of the packed path of this table: sgemm_12x32's
// chains, one FMA per product from +0 in the order of the depth, and
// beta == 1 as dst + sum. Each sum below is one zmm lane's chain of FMAs
// in that order, so the bits are the micro-kernel's: a row of 16 lanes is
// one register (every size here is at most MHSA_SMALL_BWD_MAX = 16), and
// lanes past n or dh multiply zeros that are never stored.
//  - scores: S = Q K^T and dP = dO V^T need K and V by columns: a
//    register transpose (small_bwd.h) of the masked rows; then per query
//    row a chain over d of q[r][d] (an embedded broadcast) times column d.
//    The rows of s and dp have room for 16 columns, so they are stored
//    whole (lanes >= n are zeros).
//  - dV, dK, dQ: the fused kernel's chains (small_bwd.h), from P, dS and
//    fl(scale * dS) transposed to key by key (alpha folded in first, as
//    pack_a does).
#include "avx512/avx512.h"
#include "avx512/small_bwd.h"

enum { SB_ = MHSA_SBW, GROUP = 4 };

// out rows r < tq (ld ldo, 16 lanes each) = sum over d < depth of
// x[r*ldx + d] * bt[d], from +0; g rows a chain each, in order of d.
MHSA_AVX512_INLINE void sb_rows_times(const float *x, size_t ldx,
                                      size_t tq, size_t depth,
                                      const __m512 bt[SB_], float *out,
                                      size_t ldo)
{
    size_t r = 0;
    for (; r + GROUP <= tq; r += GROUP) {
        const float *x0 = x + r * ldx, *x1 = x0 + ldx, *x2 = x1 + ldx,
                    *x3 = x2 + ldx;
        __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
        for (size_t d = 0; d < depth; d++) {
            __m512 b = bt[d];
            c0 = _mm512_fmadd_ps(_mm512_set1_ps(x0[d]), b, c0);
            c1 = _mm512_fmadd_ps(_mm512_set1_ps(x1[d]), b, c1);
            c2 = _mm512_fmadd_ps(_mm512_set1_ps(x2[d]), b, c2);
            c3 = _mm512_fmadd_ps(_mm512_set1_ps(x3[d]), b, c3);
        }
        _mm512_storeu_ps(out + r * ldo, c0);
        _mm512_storeu_ps(out + (r + 1) * ldo, c1);
        _mm512_storeu_ps(out + (r + 2) * ldo, c2);
        _mm512_storeu_ps(out + (r + 3) * ldo, c3);
    }
    for (; r < tq; r++) {
        const float *x0 = x + r * ldx;
        __m512 c0 = _mm512_setzero_ps();
        for (size_t d = 0; d < depth; d++)
            c0 = _mm512_fmadd_ps(_mm512_set1_ps(x0[d]), bt[d], c0);
        _mm512_storeu_ps(out + r * ldo, c0);
    }
}

void mhsa_small_bwd_scores__avx512(const mhsa_small_bwd_args *a)
{
    __m512 t[SB_];
    mhsa_sbw_columns(a->k, a->dh, a->n, a->dh, t);          // K^T
    sb_rows_times(a->q, a->dh, a->tq, a->dh, t, a->s, a->lds);
    mhsa_sbw_columns(a->v, a->dh, a->n, a->dh, t);          // V^T
    sb_rows_times(a->dout, a->lddo, a->tq, a->dh, t, a->dp, a->lddp);
}

void mhsa_small_bwd_grads__avx512(const mhsa_small_bwd_args *a)
{
    size_t tq = a->tq, n = a->n;
    // p, ds and fl(scale * ds), key j's 16 rows at [j * SB_].
    float pt[SB_ * SB_], dst[SB_ * SB_], xst[SB_ * SB_];
    __m512 t[SB_];
    mhsa_sbw_columns(a->s, a->lds, tq, n, t);
    for (size_t j = 0; j < n; j++)
        _mm512_storeu_ps(pt + j * SB_, t[j]);
    mhsa_sbw_columns(a->dp, a->lddp, tq, n, t);
    __m512 vs = _mm512_set1_ps(a->scale);
    for (size_t j = 0; j < n; j++) {
        _mm512_storeu_ps(dst + j * SB_, t[j]);
        _mm512_storeu_ps(xst + j * SB_, _mm512_mul_ps(vs, t[j]));
    }
    mhsa_sbw_grads(a, pt, dst, xst, a->dh);
}
