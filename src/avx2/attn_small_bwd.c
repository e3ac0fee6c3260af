// attn_small_bwd.c — the AVX2 fused backward of a small attention tile
// (kernels.h: attn_small_bwd): small_bwd_scores, softmax_grad and
// small_bwd_grads (small_bwd.c, softmax.c) in one pass, as the AVX-512
// kernel (src/avx512/attn_small_bwd.c) does, with the 16 query rows in
// two 8-lane halves.
//
// The bits are those three calls', operation for operation:
//  - S and dP: one vector per key and half, each score sb_row_times_v's
//    chain, fma over the dh columns in order from +0 (q[r][d] * k[j][d]
//    either way round: one rounding of the same product and sum);
//  - P and dS: softmax_grad's short row (grad_short_row) per lane, key j
//    in the lanes of the rows whose range [lo, hi) holds it: p = exp(s -
//    lse) where kept (in range and s != -inf), else +0; ds = p * (dp -
//    delta), +0 where p == 0;
//  - dV, dK, dQ: small_bwd_grads' chains (the head columns in the lanes,
//    the rows or keys of r0 / kend in order from +0, then dst + sum),
//    reading p, ds and fl(scale * ds) from the transposed stack copies.
// Declined up front (return 0, nothing written): sizes past 16, an
// additive mask, a row whose lse is infinite (softmax_grad's general
// path; the lanes' compare where mhsa_attn_small_bwd_fits loops).
#include <math.h>

#include "avx2/avx2.h"
#include "avx2/small_bwd.h"
#include "kernels/small_bwd_entry.h"
#include "kernels/small_rows.h"

enum { SB_ = MHSA_SBW };

// out[g][h] lane i = sum over c < dh of xt[c][h] lane i * y[j0 + g][c],
// from +0 in the order of c, for 4 keys and NH halves; keys from n on
// score key n - 1 again (never used), so only y's n rows are read.
MHSA_SBW_INLINE void scores(const __m256 xt[SB_][2], size_t nh,
                          const float *y, size_t dh, size_t n, size_t j0,
                          __m256 out[SB_][2])
{
    const float *yp[4];
    for (size_t g = 0; g < 4; g++)
        yp[g] = y + (j0 + g < n ? j0 + g : n - 1) * dh;
    for (size_t h = 0; h < nh; h++) {
        __m256 acc[4];
        for (size_t g = 0; g < 4; g++)
            acc[g] = _mm256_setzero_ps();
        for (size_t c = 0; c < dh; c++)
            for (size_t g = 0; g < 4; g++)
                acc[g] = _mm256_fmadd_ps(xt[c][h],
                                         _mm256_broadcast_ss(yp[g] + c),
                                         acc[g]);
        for (size_t g = 0; g < 4; g++)
            out[j0 + g][h] = acc[g];
    }
}

// The kernel for a head width dh: inlined with dh a constant for the
// common widths (the loops over columns unrolled), else at run time.
MHSA_SBW_INLINE int bwd(const mhsa_attn_small_bwd_args *g, size_t dh)
{
    const mhsa_small_bwd_args *a = g->p;
    size_t tq = a->tq, n = a->n;
    size_t nh = (tq + 7) / 8;
    // Per lane of each half (rows 8h + i < tq): lse and the key range
    // [lo, hi), small integers, exact as floats for the compares; lanes
    // past tq see no key.
    __m256 vlse[2], vlo[2], vhi[2];
    const __m256 pinf = _mm256_set1_ps(INFINITY);
    for (size_t h = 0; h < 2; h++) {
        __m256i mk = mhsa_tail_mask__avx2(tq > 8 * h ? tq - 8 * h : 0);
        vlse[h] = _mm256_maskload_ps(g->lse + 8 * h, mk);
        // mhsa_attn_small_bwd_fits' last part: no row's lse infinite.
        __m256 inf = _mm256_cmp_ps(
            _mm256_andnot_ps(_mm256_set1_ps(-0.0f), vlse[h]), pinf,
            _CMP_EQ_OQ);
        if (_mm256_movemask_ps(inf))
            return 0;
    }
    const mhsa_mask_view *mv = &g->mv;
    if (!mv->window) {
        // hi = max(0, min(e, c + r)) in the lanes of each half.
        float ef, cf;
        mhsa_mask_view_hi16(mv, n, &ef, &cf);
        const __m256 iota = _mm256_set_ps(7, 6, 5, 4, 3, 2, 1, 0);
        for (size_t h = 0; h < 2; h++) {
            __m256i mk = mhsa_tail_mask__avx2(tq > 8 * h ? tq - 8 * h : 0);
            __m256 c = _mm256_add_ps(_mm256_set1_ps(cf + 8.0f * (float)h),
                                     iota);
            vlo[h] = _mm256_setzero_ps();
            vhi[h] = _mm256_and_ps(
                _mm256_castsi256_ps(mk),
                _mm256_max_ps(_mm256_setzero_ps(),
                              _mm256_min_ps(_mm256_set1_ps(ef), c)));
        }
    } else {
        float lo[SB_] = { 0 }, hi[SB_] = { 0 };
        mhsa_small_rows_range(mv, tq, n, lo, hi);
        for (size_t h = 0; h < 2; h++) {
            vlo[h] = _mm256_loadu_ps(lo + 8 * h);
            vhi[h] = _mm256_loadu_ps(hi + 8 * h);
        }
    }
    __m256 qt[SB_][2], dot[SB_][2];
    mhsa_sbw_columns(a->q, dh, tq, dh, qt);
    mhsa_sbw_columns(a->dout, a->lddo, tq, dh, dot);
    // delta = rowsum(dO * O) per lane: mhsa__attn_deltas' products and sums
    // in the order of the columns, from +0.
    __m256 vdel[2] = { _mm256_setzero_ps(), _mm256_setzero_ps() };
    {
        __m256 ot[SB_][2];
        mhsa_sbw_columns(g->o, g->ldo, tq, dh, ot);
        for (size_t h = 0; h < nh; h++)
            for (size_t c = 0; c < dh; c++)
                vdel[h] = _mm256_add_ps(vdel[h],
                                        _mm256_mul_ps(dot[c][h], ot[c][h]));
    }
    // All the scores first, then the weights: the exps of all keys are
    // then independent chains in flight together.
    __m256 s[SB_][2], d[SB_][2];
    for (size_t j0 = 0; j0 < n; j0 += 4) {
        scores(qt, nh, a->k, dh, n, j0, s);
        scores(dot, nh, a->v, dh, n, j0, d);
    }
    // p, ds and fl(scale * ds), key j's 16 rows at [j * SB_].
    float pt[SB_ * SB_], dst[SB_ * SB_], xst[SB_ * SB_];
    const __m256 ninf = _mm256_set1_ps(-INFINITY), zero = _mm256_setzero_ps();
    const __m256 vscale = _mm256_set1_ps(a->scale);
    for (size_t h = 0; h < nh; h++) {
        __m256 vdelta = vdel[h];
        for (size_t j = 0; j < n; j++) {
            __m256 vj = _mm256_set1_ps((float)j);
            __m256 in = _mm256_and_ps(_mm256_cmp_ps(vlo[h], vj, _CMP_LE_OQ),
                                      _mm256_cmp_ps(vj, vhi[h], _CMP_LT_OQ));
            __m256 x = s[j][h];
            __m256 keep = _mm256_andnot_ps(_mm256_cmp_ps(x, ninf,
                                                         _CMP_EQ_OQ), in);
            __m256 p = _mm256_and_ps(
                keep, mhsa_exp_ps__avx2(_mm256_sub_ps(x, vlse[h])));
            __m256 ds = _mm256_mul_ps(p, _mm256_sub_ps(d[j][h], vdelta));
            ds = _mm256_andnot_ps(_mm256_cmp_ps(p, zero, _CMP_EQ_OQ), ds);
            _mm256_storeu_ps(pt + j * SB_ + 8 * h, p);
            _mm256_storeu_ps(dst + j * SB_ + 8 * h, ds);
            _mm256_storeu_ps(xst + j * SB_ + 8 * h,
                             _mm256_mul_ps(vscale, ds));
        }
    }
    mhsa_sbw_grads(a, pt, dst, xst, dh);
    return 1;
}

MHSA_ATTN_SMALL_BWD_ENTRY(avx2)
