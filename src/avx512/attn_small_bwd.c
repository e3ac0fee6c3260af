// attn_small_bwd.c — the AVX-512 fused backward of a small attention tile
// (kernels.h: attn_small_bwd): small_bwd_scores, softmax_grad and
// small_bwd_grads (small_bwd.c, softmax.c) in one pass, with the scores,
// dP, P and dS in registers and small stack buffers instead of rows of
// the thread's tile memory written by one call and read by the next.
//
// The bits are those three calls', operation for operation:
//  - S and dP: the 16 lanes hold the 16 query rows (Q and dO read
//    transposed), one vector per key; each score is sb_rows_times' chain,
//    fma over the dh columns in order from +0 (q[r][d] * k[j][d] either
//    way round: one rounding of the same product and sum);
//  - P and dS: softmax_grad's short row (grad_short_row) per lane, key j
//    in the lanes of the rows whose range [lo, hi) holds it: p = exp(s -
//    lse) where open, else +0; ds = p * (dp - delta) where p != 0, else
//    +0 (the product's operands are the same; IEEE multiplication
//    commutes);
//  - dV, dK, dQ: the chains small_bwd_grads runs too (small_bwd.h: one
//    lane per head column, the rows or keys of r0 / kend in order from
//    +0, then dst + sum), from p, ds and fl(scale * ds) stored key by key.
// The differences are where the time went at B8 T12 D32 H4 (perf, the
// Intel Xeon): no 16x16 transposes of K and V (Q and dO at dh <= 8 take
// 24-shuffle transposes), no score rows stored and loaded again (and
// transposed for the chains), one vector of 16 rows per key for the
// softmax gradient instead of a row at a time with its range and masks
// in scalar code.
// Declined up front (return 0, nothing written): sizes past 16, an
// additive mask, a row whose lse is infinite (softmax_grad's general
// path; the lanes' compare where mhsa_attn_small_bwd_fits loops).
#include <math.h>

#include "avx512/avx512.h"
#include "avx512/small_bwd.h"
#include "kernels/small_bwd_entry.h"
#include "kernels/small_rows.h"

enum { SB_ = MHSA_SBW };

// out[g] lane r = sum over c < dh of xt[c] lane r * y[j0 + g][c], from +0
// in the order of c, for G keys; keys from n on score key n - 1 again
// (never stored), so only y's n rows are read.
MHSA_SBW_PIECE void scores(const __m512 xt[SB_], const float *y, size_t dh,
                           size_t n, size_t j0, int G, __m512 *out)
{
    const float *yp[4];
    for (int g = 0; g < G; g++) {
        out[g] = _mm512_setzero_ps();
        yp[g] = y + (j0 + (size_t)g < n ? j0 + (size_t)g : n - 1) * dh;
    }
    for (size_t c = 0; c < dh; c++)
        for (int g = 0; g < G; g++)
            out[g] = _mm512_fmadd_ps(xt[c], _mm512_set1_ps(yp[g][c]),
                                     out[g]);
}

// The kernel for a head width dh: inlined with dh a constant for the
// common widths (the loops over columns unrolled, Q's rows one load per
// two at dh 8), else with dh at run time.
MHSA_AVX512_INLINE int bwd(const mhsa_attn_small_bwd_args *g, size_t dh)
{
    const mhsa_small_bwd_args *a = g->p;
    size_t tq = a->tq, n = a->n;
    // Per lane r < tq: the row's lse and its key range [lo, hi) (small
    // integers, exact as floats for the lanes' compares); lanes past tq see
    // no key.
    __mmask16 rows = mhsa_mask16__avx512(tq);
    const __m512 vlse = _mm512_maskz_loadu_ps(rows, g->lse);
    // mhsa_attn_small_bwd_fits' last part: no row's lse infinite.
    if (_mm512_cmp_ps_mask(vlse, _mm512_set1_ps(INFINITY), _CMP_EQ_OQ) |
        _mm512_cmp_ps_mask(vlse, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ))
        return 0;
    __m512 vlo = _mm512_setzero_ps(), vhi;
    const mhsa_mask_view *mv = &g->mv;
    if (!mv->window) {
        // hi = max(0, min(e, c + r)) in the lanes at once.
        float ef, cf;
        mhsa_mask_view_hi16(mv, n, &ef, &cf);
        const __m512 iota = _mm512_set_ps(15, 14, 13, 12, 11, 10, 9, 8, 7,
                                          6, 5, 4, 3, 2, 1, 0);
        vhi = _mm512_maskz_mov_ps(
            rows, _mm512_max_ps(_mm512_setzero_ps(),
                                _mm512_min_ps(_mm512_set1_ps(ef),
                                              _mm512_add_ps(
                                                  _mm512_set1_ps(cf),
                                                  iota))));
    } else {
        float lo[SB_] = { 0 }, hi[SB_] = { 0 };
        mhsa_small_rows_range(mv, tq, n, lo, hi);
        vlo = _mm512_loadu_ps(lo);
        vhi = _mm512_loadu_ps(hi);
    }
    const __m512 ninf = _mm512_set1_ps(-INFINITY), zero = _mm512_setzero_ps();
    const __m512 vscale = _mm512_set1_ps(a->scale);
    __m512 qt[SB_], dot[SB_];
    mhsa_sbw_columns(a->q, dh, tq, dh, qt);
    mhsa_sbw_columns(a->dout, a->lddo, tq, dh, dot);
    // delta = rowsum(dO * O) per lane: mhsa__attn_deltas' products and sums
    // in the order of the columns, from +0.
    __m512 vdelta = zero;
    {
        __m512 ot[SB_];
        mhsa_sbw_columns(g->o, g->ldo, tq, dh, ot);
        for (size_t c = 0; c < dh; c++)
            vdelta = _mm512_add_ps(vdelta, _mm512_mul_ps(dot[c], ot[c]));
    }
    // p, ds and fl(scale * ds), key j's 16 rows at [j * SB_].
    // All the scores first, then the weights: the exps of all keys are
    // then independent chains in flight together (per block of 4 keys,
    // each waited on its scores, which was slower: docs/performance.md,
    // "Measurements behind the code").
    __m512 s[SB_], d[SB_];
    for (size_t j0 = 0; j0 < n; j0 += 4) {
        scores(qt, a->k, dh, n, j0, 4, s + j0);
        scores(dot, a->v, dh, n, j0, 4, d + j0);
    }
    float pt[SB_ * SB_], dst[SB_ * SB_], xst[SB_ * SB_];
    for (size_t j = 0; j < n; j++) {
        __m512 vj = _mm512_set1_ps((float)j);
        __mmask16 in = _mm512_cmp_ps_mask(vlo, vj, _CMP_LE_OQ) &
                       _mm512_cmp_ps_mask(vj, vhi, _CMP_LT_OQ);
        __m512 x = _mm512_mask_mov_ps(ninf, in, s[j]);
        __mmask16 open = _mm512_cmp_ps_mask(x, ninf, _CMP_NEQ_UQ);
        __m512 p = _mm512_maskz_mov_ps(
            open, mhsa_exp__avx512(_mm512_sub_ps(x, vlse)));
        // dP outside the row's range only meets p = +0 (masked below).
        __mmask16 nonzero = _mm512_cmp_ps_mask(p, zero, _CMP_NEQ_UQ);
        __m512 ds = _mm512_maskz_mov_ps(
            nonzero, _mm512_mul_ps(p, _mm512_sub_ps(d[j], vdelta)));
        _mm512_storeu_ps(pt + j * SB_, p);
        _mm512_storeu_ps(dst + j * SB_, ds);
        _mm512_storeu_ps(xst + j * SB_, _mm512_mul_ps(vscale, ds));
    }
    mhsa_sbw_grads(a, pt, dst, xst, dh);
    return 1;
}

MHSA_ATTN_SMALL_BWD_ENTRY(avx512)
