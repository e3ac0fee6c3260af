// softmax.c — AVX2 online softmax (forward step, backward, whole row).
//
// Same rules as the scalar reference (kernels.h, src/scalar/softmax.c),
// 8 keys per step with masked tails, and the vectorised exp of vmath.h
// (max relative error 1.62e-7, results below FLT_MIN flushed to +0).
// Blocked keys are decided before a score is used: the position rules
// (causal, window, key padding) cut row r to the keys [lo, hi) that
// mhsa_mask_view_range gives (the rest are written as 0 without being
// read), and a -INFINITY mask entry replaces the score by -INFINITY through
// a blend, so a NaN score under a blocked key never reaches max, p or sum.
// A row whose max is +INFINITY (scores that overflowed) takes a pass of
// its own; the test for it is one compare per row, so the usual path does
// the work, and gives the bits, it did before those rules existed.
// Online normaliser: Milakov & Gimelshein 2018; FlashAttention.
#include <math.h>
#include <immintrin.h>

#include "kernels/kernels.h"
#include "kernels/softmax_row.h"
#include "avx2/avx2.h"
#include "avx2/vmath.h"
#include "avx2/vtranspose.h"

// cnt (1..8) values at p; lanes >= cnt are -INFINITY, never loaded.
static inline __m256 load_ninf(const float *p, size_t cnt)
{
    if (cnt >= 8)
        return _mm256_loadu_ps(p);
    __m256i mk = mhsa_tail_mask__avx2(cnt);
    return _mm256_blendv_ps(_mm256_set1_ps(-INFINITY),
                            _mm256_maskload_ps(p, mk),
                            _mm256_castsi256_ps(mk));
}

static inline void store_n(float *p, size_t cnt, __m256 v)
{
    if (cnt >= 8)
        _mm256_storeu_ps(p, v);
    else
        _mm256_maskstore_ps(p, mhsa_tail_mask__avx2(cnt), v);
}

// Score plus mask for keys j..j+cnt-1 of one row, -INFINITY where the mask
// blocks the key (whatever the score holds) and in lanes >= cnt; NaN where
// the mask entry is +INFINITY (kernels.h: not an overflowed score).
static inline __m256 masked_scores(const float *s, const float *mrow,
                                   size_t j, size_t cnt)
{
    __m256 x = load_ninf(s + j, cnt);
    if (mrow) {
        __m256 add = load_ninf(mrow + j, cnt);
        __m256 ninf = _mm256_set1_ps(-INFINITY);
        __m256 blocked = _mm256_cmp_ps(add, ninf, _CMP_EQ_OQ);
        __m256 pinf = _mm256_cmp_ps(add, _mm256_set1_ps(INFINITY),
                                    _CMP_EQ_OQ);
        // All-ones is a NaN: or-ing the +inf lanes' compare makes them NaN
        // and leaves every other lane's bits alone.
        x = _mm256_or_ps(_mm256_add_ps(x, add), pinf);
        x = _mm256_blendv_ps(x, ninf, blocked);
    }
    return x;
}

// The weight of a score x in a row whose max is +INFINITY: w for the
// +INFINITY scores, NaN stays NaN, 0 for the rest (-INFINITY included).
static inline __m256 inf_row_weight(__m256 x, __m256 w)
{
    __m256 top = _mm256_cmp_ps(x, _mm256_set1_ps(INFINITY), _CMP_EQ_OQ);
    __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    return _mm256_or_ps(_mm256_and_ps(top, w), _mm256_and_ps(nan, x));
}

static void zero_n(float *p, size_t n)
{
    for (size_t j = 0; j < n; j += 8)
        store_n(p + j, n - j, _mm256_setzero_ps());
}

static inline size_t min8(size_t n) { return n < 8 ? n : 8; }

// Zeros p (and ds) outside the keys [lo, hi) a row may see.
static void zero_outside(float *p, size_t lo, size_t hi, size_t n)
{
    zero_n(p, lo);
    zero_n(p + hi, n - hi);
}

// o[0..dv) *= alpha.
static void scale_row(float *o, size_t dv, float alpha)
{
    __m256 va = _mm256_set1_ps(alpha);
    for (size_t d = 0; d < dv; d += 8) {
        size_t cnt = min8(dv - d);
        if (cnt == 8) {
            _mm256_storeu_ps(o + d, _mm256_mul_ps(va, _mm256_loadu_ps(o + d)));
        } else {
            __m256i mk = mhsa_tail_mask__avx2(cnt);
            _mm256_maskstore_ps(o + d, mk,
                                _mm256_mul_ps(va, _mm256_maskload_ps(o + d,
                                                                     mk)));
        }
    }
}

// The new max of a row from its vector max: never below m_old (and a NaN
// never wins, as in scalar).
static inline float row_max(__m256 vmax, float m_old)
{
    float m_new = mhsa_hmax_ps__avx2(vmax);
    return m_new > m_old ? m_new : m_old;
}

// alpha = exp(m_old - m_new) for a finite m_new. exp(-inf) = +0 on the
// first unblocked tile and exp(0) = 1 exactly, so those two (every row of
// a one-tile call) skip the vector exp: the same bits, a third of a short
// row's work.
static inline float rescale_factor(float m_old, float m_new)
{
    if (m_old == -INFINITY)
        return 0.0f;
    if (m_old == m_new)
        return 1.0f;
    return _mm256_cvtss_f32(
        mhsa_exp_nonpos_ps__avx2(_mm256_set1_ps(m_old - m_new)));
}

// A row that sees at most 16 keys (short sequences, the rows near the
// causal diagonal) with a finite new max, the usual case: the general
// path's passes with the masked scores kept in two registers instead of
// stored and loaded again, and p stored in whole vectors wherever they
// fit the row's n keys (or the caller's s_room): their lanes past hi are
// exp(-inf) = +0, the zeros the general path writes there one masked
// store at a time. The same operations in the same order, so the same
// bits. Returns 0, having written nothing, when the max is not finite.
static int short_row(const mhsa_softmax_args *a, size_t r, float *s,
                     const float *mrow, size_t lo, size_t hi)
{
    size_t c0 = min8(hi - lo), c1 = hi - lo - c0;
    __m256 ninf = _mm256_set1_ps(-INFINITY);
    __m256 x0 = masked_scores(s, mrow, lo, c0), x1 = ninf;
    __m256 vmax = _mm256_max_ps(x0, ninf);
    if (c1) {
        x1 = masked_scores(s, mrow, lo + 8, c1);
        vmax = _mm256_max_ps(x1, vmax);
    }
    float m_old = a->m[r], m_new = row_max(vmax, m_old);
    if (m_new == -INFINITY || m_new == INFINITY)
        return 0;
    __m256 vm = _mm256_set1_ps(m_new);
    __m256 p0 = mhsa_exp_nonpos_ps__avx2(_mm256_sub_ps(x0, vm));
    __m256 vsum = _mm256_add_ps(_mm256_setzero_ps(), p0);
    __m256 p1 = _mm256_setzero_ps();
    if (c1) {
        p1 = mhsa_exp_nonpos_ps__avx2(_mm256_sub_ps(x1, vm));
        vsum = _mm256_add_ps(vsum, p1);
    }
    // Whole vectors up to `room` columns; past it the general zeros.
    size_t room = a->s_room > a->n ? a->s_room : a->n;
    size_t w0 = min8(room - lo), end = lo + w0;
    store_n(s + lo, w0, p0);
    if (c1 || (end < a->n && room - end >= 8)) {
        size_t w1 = min8(room - end);
        store_n(s + end, w1, p1);
        end += w1;
    }
    zero_n(s, lo);
    if (end < a->n)
        zero_n(s + end, a->n - end);
    float alpha = rescale_factor(m_old, m_new);
    a->m[r] = m_new;
    a->l[r] = a->l[r] * alpha + mhsa_hsum_ps__avx2(vsum);
    if (alpha != 1.0f)
        scale_row(a->o + r * a->ldo, a->dv, alpha);
    return 1;
}

// Eight rows r0.. r0+7 of a tile of n <= 16 keys without a mask, each
// seeing keys [0, hi) with 1 <= hi, and a finite new max (the tiles of
// short sequences): short_row's work with the rows in the lanes, so one
// vector exp serves 8 rows and no row pays a horizontal max or sum. The
// same bits: every operation short_row does per lane is done here per
// lane, on the same operands in the same order, its horizontal max and
// sum trees included (lanes i and i + 4, then i and i + 2, then 0 and 1),
// and the second 8 keys' vector, when no row sees past key 8, is the
// all -inf / all +0 one short_row would have added. Returns 0, having
// written nothing, when the group does not qualify.
static int rows_in_lanes(const mhsa_softmax_args *a, size_t r0)
{
    const mhsa_mask_view *mv = &a->mv;
    size_t n = a->n, hi[8], hmax = 0;
    if (mv->mask || n > 16)
        return 0;
    for (size_t i = 0; i < 8; i++) {
        size_t lo;
        mhsa_mask_view_range(mv, r0 + i, n, &lo, &hi[i]);
        if (lo != 0 || hi[i] == 0)
            return 0;
        hmax = hi[i] > hmax ? hi[i] : hmax;
    }
    __m256 ninf = _mm256_set1_ps(-INFINITY);
    __m256 k[16];   // k[j] lane i: the score of row r0 + i at key j
    for (size_t i = 0; i < 8; i++) {
        const float *s = a->s + (r0 + i) * a->lds;
        k[i] = load_ninf(s, min8(hi[i]));
        k[8 + i] = hmax > 8 && hi[i] > 8 ? load_ninf(s + 8, hi[i] - 8) : ninf;
    }
    int two = hmax > 8;   // else k[8..15] are all -inf
    mhsa_transpose8__avx2(k);
    if (two)
        mhsa_transpose8__avx2(k + 8);
    // short_row's vmax lane j, then hmax's tree.
    __m256 hm = mhsa_lane_max16__avx2(k, two ? 16 : 8);
    __m256 m_old = _mm256_loadu_ps(a->m + r0);
    __m256 m_new = _mm256_blendv_ps(m_old, hm,
                                    _mm256_cmp_ps(hm, m_old, _CMP_GT_OQ));
    __m256 inf = _mm256_set1_ps(INFINITY);
    __m256 bad = _mm256_or_ps(_mm256_cmp_ps(m_new, ninf, _CMP_EQ_OQ),
                              _mm256_cmp_ps(m_new, inf, _CMP_EQ_OQ));
    if (_mm256_movemask_ps(bad))
        return 0;
    // p, and short_row's vsum lane j (0 + p0, + p1), then hsum's tree.
    __m256 zero = _mm256_setzero_ps(), sum[8];
    for (size_t j = 0; j < 8; j++) {
        k[j] = mhsa_exp_nonpos_ps__avx2(_mm256_sub_ps(k[j], m_new));
        sum[j] = _mm256_add_ps(zero, k[j]);
        if (two) {
            k[8 + j] =
                mhsa_exp_nonpos_ps__avx2(_mm256_sub_ps(k[8 + j], m_new));
            sum[j] = _mm256_add_ps(sum[j], k[8 + j]);
        } else {
            k[8 + j] = zero;
        }
    }
    for (size_t j = 0; j < 4; j++)
        sum[j] = _mm256_add_ps(sum[j], sum[j + 4]);
    for (size_t j = 0; j < 2; j++)
        sum[j] = _mm256_add_ps(sum[j], sum[j + 2]);
    float hs[8], mn[8];
    _mm256_storeu_ps(hs, _mm256_add_ps(sum[0], sum[1]));
    _mm256_storeu_ps(mn, m_new);
    // Rows back: keys [0, 8) and [8, 16), +0 past each row's hi.
    mhsa_transpose8__avx2(k);
    if (two)
        mhsa_transpose8__avx2(k + 8);
    size_t room = a->s_room > n ? a->s_room : n;
    for (size_t i = 0; i < 8; i++) {
        size_t r = r0 + i;
        float *s = a->s + r * a->lds;
        store_n(s, min8(room), k[i]);
        if (n > 8)
            store_n(s + 8, min8(room - 8), k[8 + i]);
        float alpha = rescale_factor(a->m[r], mn[i]);
        a->m[r] = mn[i];
        a->l[r] = a->l[r] * alpha + hs[i];
        if (alpha != 1.0f)
            scale_row(a->o + r * a->ldo, a->dv, alpha);
    }
    return 1;
}

void mhsa_softmax_online__avx2(const mhsa_softmax_args *a)
{
    const mhsa_mask_view *mv = &a->mv;
    for (size_t r = 0; r < a->rows; r++) {
        if (r % 8 == 0 && a->rows - r >= 8 && rows_in_lanes(a, r)) {
            r += 7;
            continue;
        }
        float *s = a->s + r * a->lds;
        const float *mrow = mv->mask ? mv->mask + r * mv->ldmask : NULL;
        size_t lo, hi;
        mhsa_mask_view_range(mv, r, a->n, &lo, &hi);
        if (hi > lo && hi - lo <= 16 && short_row(a, r, s, mrow, lo, hi))
            continue;

        // Pass 1: masked scores back into s, and their max. max_ps(x, m)
        // returns m when x is NaN, so NaN never wins (as in scalar).
        __m256 vmax = _mm256_set1_ps(-INFINITY);
        for (size_t j = lo; j < hi; j += 8) {
            size_t cnt = min8(hi - j);
            __m256 x = masked_scores(s, mrow, j, cnt);
            store_n(s + j, cnt, x);
            vmax = _mm256_max_ps(x, vmax);
        }
        zero_outside(s, lo, hi, a->n);
        float m_old = a->m[r], m_new = row_max(vmax, m_old);
        if (m_new == -INFINITY) {   // nothing unblocked and finite yet
            // Unblocked NaN scores still poison the row (NaN weights, l).
            int nan_seen = 0;
            for (size_t j = lo; j < hi; j++)
                nan_seen |= s[j] != s[j];
            if (nan_seen) {
                for (size_t j = lo; j < hi; j++)
                    s[j] = s[j] != s[j] ? s[j] : 0.0f;
                a->l[r] = NAN;
            } else {
                zero_n(s + lo, hi - lo);
            }
            continue;
        }

        __m256 vsum = _mm256_setzero_ps();
        float alpha;
        if (m_new == INFINITY) {
            // Overflowed scores: each +INFINITY key weighs 1, the rest 0;
            // l counts them. alpha = 1 while the max stays +INFINITY.
            __m256 one = _mm256_set1_ps(1.0f);
            for (size_t j = lo; j < hi; j += 8) {
                size_t cnt = min8(hi - j);
                __m256 p = inf_row_weight(load_ninf(s + j, cnt), one);
                store_n(s + j, cnt, p);
                vsum = _mm256_add_ps(vsum, p);
            }
            alpha = m_old == INFINITY ? 1.0f : 0.0f;
        } else {
            // Pass 2: p = exp(x - m_new); -INFINITY gives an exact 0.
            __m256 vm = _mm256_set1_ps(m_new);
            for (size_t j = lo; j < hi; j += 8) {
                size_t cnt = min8(hi - j);
                __m256 p = mhsa_exp_nonpos_ps__avx2(
                    _mm256_sub_ps(load_ninf(s + j, cnt), vm));
                store_n(s + j, cnt, p);
                vsum = _mm256_add_ps(vsum, p);
            }
            alpha = rescale_factor(m_old, m_new);
        }
        a->m[r] = m_new;
        a->l[r] = a->l[r] * alpha + mhsa_hsum_ps__avx2(vsum);
        if (alpha != 1.0f)
            scale_row(a->o + r * a->ldo, a->dv, alpha);
    }
}

// Lanes j of the vector at column j0 with lo <= j0 + j < hi, as a mask.
static inline __m256 lanes_in(size_t j0, size_t lo, size_t hi)
{
    __m256i j = _mm256_add_epi32(_mm256_set1_epi32((int)j0),
                                 _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256i in = _mm256_andnot_si256(
        _mm256_cmpgt_epi32(_mm256_set1_epi32((int)lo), j),
        _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), j));
    return _mm256_castsi256_ps(in);
}

// One row of a tile of n <= 16 keys without a mask, with a finite lse: the
// general loop's operations on every lane of [lo, hi), in whole vectors
// over the row's n columns, lanes outside made +0 by a compare on their
// index instead of separate zeroing passes (a short row's setup cost more
// than its arithmetic). The same operations per lane, so the same bits.
static void grad_short_row(float *s, float *dp, size_t n, size_t lo,
                           size_t hi, float lse, float delta)
{
    __m256 ninf = _mm256_set1_ps(-INFINITY), zero = _mm256_setzero_ps();
    __m256 vlse = _mm256_set1_ps(lse), vdelta = _mm256_set1_ps(delta);
    for (size_t j = 0; j < n; j += 8) {
        size_t cnt = min8(n - j);
        __m256i mk = mhsa_tail_mask__avx2(cnt);
        __m256 x = cnt == 8 ? _mm256_loadu_ps(s + j)
                            : _mm256_maskload_ps(s + j, mk);
        __m256 g = cnt == 8 ? _mm256_loadu_ps(dp + j)
                            : _mm256_maskload_ps(dp + j, mk);
        __m256 keep = _mm256_andnot_ps(_mm256_cmp_ps(x, ninf, _CMP_EQ_OQ),
                                       lanes_in(j, lo, hi));
        __m256 p = _mm256_and_ps(keep,
                                 mhsa_exp_ps__avx2(_mm256_sub_ps(x, vlse)));
        __m256 ds = _mm256_mul_ps(p, _mm256_sub_ps(g, vdelta));
        ds = _mm256_andnot_ps(_mm256_cmp_ps(p, zero, _CMP_EQ_OQ), ds);
        store_n(s + j, cnt, p);
        store_n(dp + j, cnt, ds);
    }
}

void mhsa_softmax_grad__avx2(const mhsa_softmax_grad_args *a)
{
    const mhsa_mask_view *mv = &a->mv;
    __m256 ninf = _mm256_set1_ps(-INFINITY), zero = _mm256_setzero_ps();
    for (size_t r = 0; r < a->rows; r++) {
        float *s = a->s + r * a->lds, *dp = a->dp + r * a->lddp;
        const float *mrow = mv->mask ? mv->mask + r * mv->ldmask : NULL;
        float lse = a->lse[r];
        if (!mrow && a->n <= 16 && lse != -INFINITY && lse != INFINITY) {
            size_t lo, hi;
            mhsa_mask_view_range(mv, r, a->n, &lo, &hi);
            grad_short_row(s, dp, a->n, lo, hi, lse, a->delta[r]);
            continue;
        }
        size_t lo = 0, hi = 0;   // lse == -inf: the row saw no key, p = 0
        if (lse != -INFINITY)
            mhsa_mask_view_range(mv, r, a->n, &lo, &hi);
        // lse == +inf: the forward's max was +INFINITY; each +INFINITY
        // score weighs inf_w[r], the others 0.
        int inf_row = lse == INFINITY;
        __m256 vlse = _mm256_set1_ps(lse), vdelta = _mm256_set1_ps(a->delta[r]);
        __m256 vw = _mm256_set1_ps(inf_row ? a->inf_w[r] : 0.0f);
        for (size_t j = lo; j < hi; j += 8) {
            size_t cnt = min8(hi - j);
            __m256 x = masked_scores(s, mrow, j, cnt);
            __m256 p;
            if (inf_row) {
                p = inf_row_weight(x, vw);
            } else {
                // Blocked keys are cleared explicitly: exp(-inf - lse)
                // would be NaN for a NaN lse.
                __m256 blocked = _mm256_cmp_ps(x, ninf, _CMP_EQ_OQ);
                p = _mm256_andnot_ps(
                    blocked, mhsa_exp_ps__avx2(_mm256_sub_ps(x, vlse)));
            }
            __m256 g = cnt == 8 ? _mm256_loadu_ps(dp + j)
                     : _mm256_maskload_ps(dp + j, mhsa_tail_mask__avx2(cnt));
            __m256 ds = _mm256_mul_ps(p, _mm256_sub_ps(g, vdelta));
            ds = _mm256_andnot_ps(_mm256_cmp_ps(p, zero, _CMP_EQ_OQ), ds);
            store_n(s + j, cnt, p);
            store_n(dp + j, cnt, ds);
        }
        zero_outside(s, lo, hi, a->n);
        zero_outside(dp, lo, hi, a->n);
    }
}

void mhsa_softmax_row__avx2(size_t n, const float *x, float *y)
{
    __m256 vmax = _mm256_set1_ps(-INFINITY);
    for (size_t j = 0; j < n; j += 8)
        vmax = _mm256_max_ps(load_ninf(x + j, min8(n - j)), vmax);
    float m = mhsa_hmax_ps__avx2(vmax);
    if (m == -INFINITY) {   // all blocked (zeros), or NaN: all NaN
        mhsa_softmax_row_no_max(n, x, y);
        return;
    }
    __m256 vm = _mm256_set1_ps(m), vsum = _mm256_setzero_ps();
    __m256 ninf = _mm256_set1_ps(-INFINITY), one = _mm256_set1_ps(1.0f);
    for (size_t j = 0; j < n; j += 8) {
        size_t cnt = min8(n - j);
        __m256 v = load_ninf(x + j, cnt);
        __m256 p;
        if (m == INFINITY) {   // overflowed scores share the weight
            p = inf_row_weight(v, one);
        } else {
            // -INFINITY entries give an exact 0.
            p = _mm256_andnot_ps(
                _mm256_cmp_ps(v, ninf, _CMP_EQ_OQ),
                mhsa_exp_nonpos_ps__avx2(_mm256_sub_ps(v, vm)));
        }
        store_n(y + j, cnt, p);
        vsum = _mm256_add_ps(vsum, p);
    }
    __m256 inv = _mm256_set1_ps(1.0f / mhsa_hsum_ps__avx2(vsum));
    for (size_t j = 0; j < n; j += 8) {
        size_t cnt = min8(n - j);
        store_n(y + j, cnt, _mm256_mul_ps(load_ninf(y + j, cnt), inv));
    }
}
