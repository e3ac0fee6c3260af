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
// path).
#include <math.h>

#include "avx2/avx2.h"
#include "avx2/vmath.h"
#include "avx2/vtranspose.h"

enum { SB_ = MHSA_SMALL_BWD_MAX };

// Inlined wherever called, so that the group sizes are constants there.
#define INLINE static inline __attribute__((always_inline))

// t[c][h] lane i = x[(8h + i) * ld + c] for rows < rows, c < cols (<=
// 16); 0 elsewhere (halves past the rows are not written).
INLINE void columns(const float *x, size_t ld, size_t rows,
                           size_t cols, __m256 t[SB_][2])
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

// out[g][h] lane i = sum over c < dh of xt[c][h] lane i * y[j0 + g][c],
// from +0 in the order of c, for 4 keys and NH halves; keys from n on
// score key n - 1 again (never used), so only y's n rows are read.
INLINE void scores(const __m256 xt[SB_][2], size_t nh,
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

// dst[0..dh) = dst + acc (the ukr's beta == 1: C first), W halves.
INLINE void add_to(float *dst, const __m256 *acc, int W, size_t dh)
{
    __m256i m0 = mhsa_tail_mask__avx2(dh);
    __m256i m1 = mhsa_tail_mask__avx2(dh > 8 ? dh - 8 : 0);
    _mm256_maskstore_ps(dst, m0,
                        _mm256_add_ps(_mm256_maskload_ps(dst, m0), acc[0]));
    if (W > 1)
        _mm256_maskstore_ps(dst + 8, m1, _mm256_add_ps(
                                _mm256_maskload_ps(dst + 8, m1), acc[1]));
}

// dV and dK of keys j..j+G-1, whose sums all run over rows [r0, tq), in
// W halves of 8 head columns: one chain per key, gradient and half.
INLINE void keys_grad(const mhsa_small_bwd_args *a, const float *pt,
                             const float *dst, size_t j, int G, int W,
                             size_t r0)
{
    __m256 v[4][2], k[4][2];
    for (int i = 0; i < G; i++)
        for (int w = 0; w < W; w++)
            v[i][w] = k[i][w] = _mm256_setzero_ps();
    size_t dh = a->dh;
    __m256i m0 = mhsa_tail_mask__avx2(dh);
    __m256i m1 = mhsa_tail_mask__avx2(dh > 8 ? dh - 8 : 0);
    const float *pj = pt + j * SB_, *dj = dst + j * SB_;
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
            __m256 p = _mm256_broadcast_ss(pj + i * SB_ + r);
            __m256 ds = _mm256_broadcast_ss(dj + i * SB_ + r);
            for (int w = 0; w < W; w++) {
                v[i][w] = _mm256_fmadd_ps(p, o[w], v[i][w]);
                k[i][w] = _mm256_fmadd_ps(ds, q[w], k[i][w]);
            }
        }
    }
    for (int i = 0; i < G; i++) {
        add_to(a->dv + (j + (size_t)i) * a->ldg, v[i], W, dh);
        add_to(a->dk + (j + (size_t)i) * a->ldg, k[i], W, dh);
    }
}

// dQ of rows r..r+G-1, whose sums all run over keys [0, ke); xst holds
// fl(scale * ds) transposed.
INLINE void rows_dq(const mhsa_small_bwd_args *a, const float *xst,
                           size_t r, int G, int W, size_t ke)
{
    __m256 c[8][2];
    for (int i = 0; i < G; i++)
        for (int w = 0; w < W; w++)
            c[i][w] = _mm256_setzero_ps();
    size_t dh = a->dh;
    __m256i m0 = mhsa_tail_mask__avx2(dh);
    __m256i m1 = mhsa_tail_mask__avx2(dh > 8 ? dh - 8 : 0);
    const float *xr = xst + r;
    for (size_t j = 0; j < ke; j++, xr += SB_) {
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
        add_to(a->dq + (r + (size_t)i) * a->ldg, c[i], W, dh);
}

// The gradients of the tile from the transposed p, ds and scale * ds:
// runs of keys (rows) sharing r0 (kend) in groups as large as the 16
// registers allow (4 keys / 8 rows at dh <= 8, half that past it), the
// sizes constants in each call.
static void grads(const mhsa_small_bwd_args *a, const float *pt,
                  const float *dst, const float *xst)
{
    size_t tq = a->tq, n = a->n;
    int wide = a->dh > 8;
    for (size_t j = 0; a->do_dkv && j < n;) {
        size_t run = mhsa_run_length(a->r0, j, n, SB_), r0 = a->r0[j];
        for (size_t e = j + run; j < e;) {
            size_t grp = wide ? (e - j >= 2 ? 2 : 1) : (e - j >= 4 ? 4 : 1);
            if (r0 < tq && grp == 4)
                keys_grad(a, pt, dst, j, 4, 1, r0);
            else if (r0 < tq && grp == 2)
                keys_grad(a, pt, dst, j, 2, 2, r0);
            else if (r0 < tq)
                wide ? keys_grad(a, pt, dst, j, 1, 2, r0)
                     : keys_grad(a, pt, dst, j, 1, 1, r0);
            j += grp;
        }
    }
    for (size_t r = 0; a->do_dq && r < tq;) {
        size_t run = mhsa_run_length(a->kend, r, tq, SB_), ke = a->kend[r];
        for (size_t e = r + run; r < e;) {
            size_t grp = wide ? (e - r >= 4 ? 4 : 1) : (e - r >= 8 ? 8 : 1);
            if (ke > 0 && grp == 8)
                rows_dq(a, xst, r, 8, 1, ke);
            else if (ke > 0 && grp == 4)
                rows_dq(a, xst, r, 4, 2, ke);
            else if (ke > 0)
                wide ? rows_dq(a, xst, r, 1, 2, ke)
                     : rows_dq(a, xst, r, 1, 1, ke);
            r += grp;
        }
    }
}

int mhsa_attn_small_bwd__avx2(const mhsa_attn_small_bwd_args *g)
{
    const mhsa_small_bwd_args *a = g->p;
    size_t tq = a->tq, n = a->n, dh = a->dh;
    if (!mhsa_attn_small_bwd_fits(g))
        return 0;
    size_t nh = (tq + 7) / 8;
    // Per lane of each half (rows 8h + i < tq): lse and the key range
    // [lo, hi), small integers, exact as floats for the compares; lanes
    // past tq see no key.
    float lo[SB_] = { 0 }, hi[SB_] = { 0 }, lse[SB_] = { 0 };
    for (size_t r = 0; r < tq; r++) {
        size_t l, h;
        mhsa_mask_view_range(&g->mv, r, n, &l, &h);
        lo[r] = (float)l;
        hi[r] = (float)h;
        lse[r] = g->lse[r];
    }
    __m256 qt[SB_][2], dot[SB_][2];
    columns(a->q, dh, tq, dh, qt);
    columns(a->dout, a->lddo, tq, dh, dot);
    // delta = rowsum(dO * O) per lane: mhsa__attn_deltas' products and sums
    // in the order of the columns, from +0.
    __m256 vdel[2] = { _mm256_setzero_ps(), _mm256_setzero_ps() };
    {
        __m256 ot[SB_][2];
        columns(g->o, g->ldo, tq, dh, ot);
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
        __m256 vlo = _mm256_loadu_ps(lo + 8 * h);
        __m256 vhi = _mm256_loadu_ps(hi + 8 * h);
        __m256 vlse = _mm256_loadu_ps(lse + 8 * h);
        __m256 vdelta = vdel[h];
        for (size_t j = 0; j < n; j++) {
            __m256 vj = _mm256_set1_ps((float)j);
            __m256 in = _mm256_and_ps(_mm256_cmp_ps(vlo, vj, _CMP_LE_OQ),
                                      _mm256_cmp_ps(vj, vhi, _CMP_LT_OQ));
            __m256 x = s[j][h];
            __m256 keep = _mm256_andnot_ps(_mm256_cmp_ps(x, ninf,
                                                         _CMP_EQ_OQ), in);
            __m256 p = _mm256_and_ps(
                keep, mhsa_exp_ps__avx2(_mm256_sub_ps(x, vlse)));
            __m256 ds = _mm256_mul_ps(p, _mm256_sub_ps(d[j][h], vdelta));
            ds = _mm256_andnot_ps(_mm256_cmp_ps(p, zero, _CMP_EQ_OQ), ds);
            _mm256_storeu_ps(pt + j * SB_ + 8 * h, p);
            _mm256_storeu_ps(dst + j * SB_ + 8 * h, ds);
            _mm256_storeu_ps(xst + j * SB_ + 8 * h,
                             _mm256_mul_ps(vscale, ds));
        }
    }
    grads(a, pt, dst, xst);
    return 1;
}
