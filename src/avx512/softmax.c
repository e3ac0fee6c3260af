// softmax.c — AVX-512 online softmax (forward step, backward, whole row).
//
// Same rules as the scalar reference (kernels.h, src/scalar/softmax.c),
// 16 keys per step with masked tails, and the vectorised exp of vmath.h
// (results below FLT_MIN flushed to +0). Each row reads only its keys
// [lo, hi) that mhsa_mask_view_range gives (causal, window, key padding);
// the rest are written as 0 without being read. A -INFINITY mask entry
// replaces the score by -INFINITY and a +INFINITY entry by NaN through
// masked moves, so a NaN score under a blocked key never reaches max, p or
// sum. Rows whose largest score is +INFINITY give weight 1 to their
// +INFINITY keys and 0 to the rest (kernels.h, "Scores that overflow").
// Online normaliser: Milakov & Gimelshein 2018; FlashAttention.
#include <math.h>

#include "avx512/avx512.h"
#include "avx512/vmath.h"

// Score plus mask for keys j..j+15 of one row: -INFINITY where the mask
// blocks the key (whatever the score holds) and in lanes outside mk (not
// read), NaN where the mask entry is +INFINITY.
MHSA_AVX512_INLINE __m512 masked_scores(const float *s, const float *mrow,
                                        size_t j, __mmask16 mk)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 x = _mm512_mask_loadu_ps(ninf, mk, s + j);
    if (mrow) {
        __m512 add = _mm512_mask_loadu_ps(ninf, mk, mrow + j);
        __mmask16 blocked = _mm512_cmp_ps_mask(add, ninf, _CMP_EQ_OQ);
        __mmask16 pinf = _mm512_cmp_ps_mask(
            add, _mm512_set1_ps(INFINITY), _CMP_EQ_OQ);
        x = _mm512_add_ps(x, add);
        x = _mm512_mask_mov_ps(x, blocked, ninf);
        x = _mm512_mask_mov_ps(x, pinf, _mm512_set1_ps(NAN));
    }
    return x;
}

// The weight of a score x in a row whose max is +INFINITY: 1 for
// +INFINITY, NaN stays NaN, 0 for the rest.
MHSA_AVX512_INLINE __m512 weight_at_inf(__m512 x)
{
    __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    __mmask16 inf = _mm512_cmp_ps_mask(x, _mm512_set1_ps(INFINITY),
                                       _CMP_EQ_OQ);
    return _mm512_mask_mov_ps(_mm512_maskz_mov_ps(nan, x), inf,
                              _mm512_set1_ps(1.0f));
}

// y[j] = exp(x[j] - m) for lo <= j < hi (y may be x), 16 at a time from
// lo with the tail masked; returns the per-lane sums of those weights in
// order of j. -INFINITY entries give an exact 0 (exp's underflow rule),
// and with m = +INFINITY only the +INFINITY entries weigh.
MHSA_AVX512_INLINE __m512 exp_sum(const float *x, float *y, size_t lo,
                                  size_t hi, float m)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 vm = _mm512_set1_ps(m), vsum = _mm512_setzero_ps();
    for (size_t j = lo; j < hi; j += 16) {
        __mmask16 mk = mhsa_mask16__avx512(hi - j);
        __m512 v = _mm512_mask_loadu_ps(ninf, mk, x + j);
        __m512 p = m == INFINITY
                       ? weight_at_inf(v)
                       : mhsa_exp_nonpos__avx512(_mm512_sub_ps(v, vm));
        _mm512_mask_storeu_ps(y + j, mk, p);
        vsum = _mm512_add_ps(vsum, p);
    }
    return vsum;
}

// p[from..to) = 0: whole vectors, then one masked store for the tail (a
// mask computed for every vector cost 10 instructions a store).
static void zero_range(float *p, size_t from, size_t to)
{
    size_t j = from;
    for (; j + 16 <= to; j += 16)
        _mm512_storeu_ps(p + j, _mm512_setzero_ps());
    if (j < to)
        _mm512_mask_storeu_ps(p + j, mhsa_mask16__avx512(to - j),
                              _mm512_setzero_ps());
}

// exp of one x <= 0 (a rescale factor, m_old - m_new).
static float exp1(float x)
{
    return _mm_cvtss_f32(_mm512_castps512_ps128(
        mhsa_exp_nonpos__avx512(_mm512_set1_ps(x))));
}

// o[0..dv) *= alpha.
static void scale_o(float *o, size_t dv, float alpha)
{
    __m512 va = _mm512_set1_ps(alpha);
    for (size_t d = 0; d < dv; d += 16) {
        __mmask16 mk = mhsa_mask16__avx512(dv - d);
        __m512 v = _mm512_maskz_loadu_ps(mk, o + d);
        _mm512_mask_storeu_ps(o + d, mk, _mm512_mul_ps(va, v));
    }
}

// alpha = exp(m_old - m_new) for m_new >= m_old. exp(-inf) = +0 on the
// first unblocked tile and exp(0) = 1 exactly, so those two (every row of
// a one-tile call) skip the vector exp: the same bits.
static inline float rescale_factor(float m_old, float m_new)
{
    if (m_old == -INFINITY)
        return 0.0f;
    if (m_old == m_new)
        return 1.0f;
    return exp1(m_old - m_new);
}

// The masked scores of a row's keys [lo, hi), 0 < hi - lo <= 64, in
// x[0..4) (vectors of 16 keys from lo, -INFINITY past hi), and their
// vector max: vmax = max(x[v], vmax) from -INFINITY, in order.
MHSA_AVX512_INLINE __m512 row_scores(const float *s, const float *mrow,
                                     size_t lo, size_t hi, __m512 x[4])
{
    size_t cnt = hi - lo, nv = (cnt + 15) / 16;
    __m512 vmax = _mm512_set1_ps(-INFINITY);
    for (size_t v = 0; v < nv; v++) {
        x[v] = masked_scores(s, mrow, lo + 16 * v,
                             mhsa_mask16__avx512(cnt - 16 * v));
        vmax = _mm512_max_ps(x[v], vmax);
    }
    return vmax;
}

// p = exp(x - m_new) of the row row_scores read, stored in whole vectors
// wherever they fit the row's n keys (or the caller's s_room): their
// lanes past hi are exp(-inf - m) = +0, the zeros zero_range writes
// there; the rest of [0, n) zeroed. Returns the vector sum, +0 + p[0] +
// p[1] ..., in order.
MHSA_AVX512_INLINE __m512 store_p(float *s, size_t n, size_t room,
                                  size_t lo, size_t hi, const __m512 x[4],
                                  float m_new)
{
    size_t nv = (hi - lo + 15) / 16, end = lo;
    __m512 vm = _mm512_set1_ps(m_new), vsum = _mm512_setzero_ps();
    for (size_t v = 0; v < nv; v++) {
        __m512 p = mhsa_exp_nonpos__avx512(_mm512_sub_ps(x[v], vm));
        vsum = _mm512_add_ps(vsum, p);
        if (room - end >= 16) {
            _mm512_storeu_ps(s + end, p);
            end += 16;
        } else {
            _mm512_mask_storeu_ps(s + end, mhsa_mask16__avx512(room - end),
                                  p);
            end = room;
        }
    }
    zero_range(s, 0, lo);
    if (end < n)
        zero_range(s, end, n);
    return vsum;
}

// A row that sees at most 64 keys (short sequences, causal tiles of a
// short head) with a finite new max, the usual case: the general loop's
// two passes with the masked scores kept in up to four registers instead
// of stored and loaded again (store_p says where p goes). The same
// operations per lane in the same order (max from -inf, sum from +0), so
// the same bits. Returns 0, having written nothing, when the max is not
// finite.
static int short_row(const mhsa_softmax_args *a, size_t r, float *s,
                     const float *mrow, size_t lo, size_t hi)
{
    __m512 x[4];
    __m512 vmax = row_scores(s, mrow, lo, hi, x);
    float m_old = a->m[r], m_new = mhsa_hmax__avx512(vmax);
    if (!(m_new > m_old))
        m_new = m_old;
    if (m_new == -INFINITY || m_new == INFINITY)
        return 0;
    size_t room = a->s_room > a->n ? a->s_room : a->n;
    __m512 vsum = store_p(s, a->n, room, lo, hi, x, m_new);
    float alpha = rescale_factor(m_old, m_new);
    a->m[r] = m_new;
    a->l[r] = a->l[r] * alpha + mhsa_hsum__avx512(vsum);
    if (alpha != 1.0f)
        scale_o(a->o + r * a->ldo, a->dv, alpha);
    return 1;
}

// Up to 16 rows r0 .. r0 + k - 1 that would all take short_row (each
// sees 1..64 keys) and all get a finite new max: short_row's per-key work
// row by row, and its per-row work (the horizontal max and sum trees, m,
// l and alpha) in the 16 lanes of one vector, row r0 + i in lane i:
// mhsa_tree16_lanes__avx512 gives each lane the bits of hmax and hsum on
// that row's vector, and the rest is short_row's scalar arithmetic lane
// by lane (rescale_factor's exp is exp1's, whose lanes do not mix). In a
// causal tile of 64 keys that per-row work was as much as the keys' (the
// GPT block, tools/step-count/latency-row.c gpt).
// Returns 0, having written nothing, when a row does not qualify; the
// rows then go one by one.
static int rows_in_lanes(const mhsa_softmax_args *a, size_t r0, size_t k)
{
    const mhsa_mask_view mv = a->mv;
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    size_t n = a->n, lds = a->lds, room = a->s_room > n ? a->s_room : n;
    float *s0 = a->s + r0 * lds;
    const float *mask0 = mv.mask ? mv.mask + r0 * mv.ldmask : NULL;
    size_t lo[16], hi[16];
    __m512 vmax[16], x[16][4];   // x: row_scores of each row, kept for p
    for (size_t i = 0; i < 16; i++) {
        vmax[i] = ninf;   // lanes of absent rows: ignored below
        if (i >= k)
            continue;
        mhsa_mask_view_range(&mv, r0 + i, n, &lo[i], &hi[i]);
        if (hi[i] == lo[i] || hi[i] - lo[i] > 64)
            return 0;
        vmax[i] = row_scores(s0 + i * lds, mask0 ? mask0 + i * mv.ldmask
                                                 : NULL,
                             lo[i], hi[i], x[i]);
    }
    __mmask16 in = mhsa_mask16__avx512(k);
    __m512 m_old = _mm512_maskz_loadu_ps(in, a->m + r0);
    __m512 hm = mhsa_tree16_lanes__avx512(vmax, 1);
    __m512 m_new = _mm512_mask_mov_ps(
        m_old, _mm512_cmp_ps_mask(hm, m_old, _CMP_GT_OQ), hm);
    __mmask16 inf = _mm512_cmp_ps_mask(m_new, ninf, _CMP_EQ_OQ)
                  | _mm512_cmp_ps_mask(m_new, _mm512_set1_ps(INFINITY),
                                       _CMP_EQ_OQ);
    if (inf & in)
        return 0;

    float mn[16];
    _mm512_storeu_ps(mn, m_new);
    __m512 vsum[16];
    for (size_t i = 0; i < 16; i++)
        vsum[i] = i < k ? store_p(s0 + i * lds, n, room, lo[i], hi[i], x[i],
                                  mn[i])
                        : _mm512_setzero_ps();
    // rescale_factor: 0 on a first tile, 1 while the max stays, else exp.
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 alpha = mhsa_exp_nonpos__avx512(_mm512_sub_ps(m_old, m_new));
    alpha = _mm512_mask_mov_ps(
        alpha, _mm512_cmp_ps_mask(m_old, m_new, _CMP_EQ_OQ), one);
    alpha = _mm512_mask_mov_ps(
        alpha, _mm512_cmp_ps_mask(m_old, ninf, _CMP_EQ_OQ),
        _mm512_setzero_ps());
    __m512 l = _mm512_add_ps(
        _mm512_mul_ps(_mm512_maskz_loadu_ps(in, a->l + r0), alpha),
        mhsa_tree16_lanes__avx512(vsum, 0));
    _mm512_mask_storeu_ps(a->m + r0, in, m_new);
    _mm512_mask_storeu_ps(a->l + r0, in, l);
    __mmask16 rescale = _mm512_cmp_ps_mask(alpha, one, _CMP_NEQ_UQ) & in;
    if (rescale && a->dv) {
        float al[16];
        _mm512_storeu_ps(al, alpha);
        for (size_t i = 0; i < k; i++)
            if (rescale >> i & 1)
                scale_o(a->o + (r0 + i) * a->ldo, a->dv, al[i]);
    }
    return 1;
}

// Groups of fewer rows go one by one: the two trees over 16 lanes and
// the vector bookkeeping cost the same for 4 rows as for 16. Counted
// with step-count, the lanes take fewer instructions than short_row from
// 6 rows on (docs/performance.md, "Measurements behind the code").
enum { LANES_MIN_ROWS = 6 };

void mhsa_softmax_online__avx512(const mhsa_softmax_args *a)
{
    const mhsa_mask_view *mv = &a->mv;
    for (size_t r = 0; r < a->rows; r++) {
        size_t k = a->rows - r < 16 ? a->rows - r : 16;
        if (r % 16 == 0 && k >= LANES_MIN_ROWS && rows_in_lanes(a, r, k)) {
            r += k - 1;
            continue;
        }
        float *s = a->s + r * a->lds;
        const float *mrow = mv->mask ? mv->mask + r * mv->ldmask : NULL;
        size_t lo, hi;
        mhsa_mask_view_range(mv, r, a->n, &lo, &hi);
        if (hi > lo && hi - lo <= 64 && short_row(a, r, s, mrow, lo, hi))
            continue;

        // Pass 1: masked scores back into s, and their max. max_ps(x, m)
        // returns m when x is NaN, so NaN never wins (as in scalar).
        __m512 vmax = _mm512_set1_ps(-INFINITY);
        for (size_t j = lo; j < hi; j += 16) {
            __mmask16 mk = mhsa_mask16__avx512(hi - j);
            __m512 x = masked_scores(s, mrow, j, mk);
            _mm512_mask_storeu_ps(s + j, mk, x);
            vmax = _mm512_max_ps(x, vmax);
        }
        zero_range(s, 0, lo);
        zero_range(s, hi, a->n);
        float m_old = a->m[r], m_new = mhsa_hmax__avx512(vmax);
        if (!(m_new > m_old))
            m_new = m_old;
        if (m_new == -INFINITY) {   // nothing unblocked and finite yet
            // Unblocked NaN scores still poison the row (NaN weights, l);
            // the -INFINITY ones weigh 0.
            __mmask16 nan_seen = 0;
            for (size_t j = lo; j < hi; j += 16) {
                __mmask16 mk = mhsa_mask16__avx512(hi - j);
                __m512 x = _mm512_maskz_loadu_ps(mk, s + j);
                __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
                nan_seen |= nan;
                _mm512_mask_storeu_ps(s + j, mk, _mm512_maskz_mov_ps(nan, x));
            }
            if (nan_seen)
                a->l[r] = NAN;
            continue;
        }

        // Pass 2: p = exp(x - m_new); -INFINITY gives an exact 0.
        __m512 vsum = exp_sum(s, s, lo, hi, m_new);

        // 0 on the first unblocked tile; 1 while the max stays +INFINITY.
        float alpha = rescale_factor(m_old, m_new);
        a->m[r] = m_new;
        a->l[r] = a->l[r] * alpha + mhsa_hsum__avx512(vsum);
        if (alpha != 1.0f)
            scale_o(a->o + r * a->ldo, a->dv, alpha);
    }
}

// One row of a tile of n <= 16 keys without a mask, with a finite lse:
// the general loop's operations on the lanes of [lo, hi), in one vector
// over the row's n columns (keys at their own lanes rather than from lo),
// with the lanes outside made +0 by the load mask and the maskz moves
// instead of zero_range's extra masked stores. The same operations per
// lane, so the same bits (tests/attention/test_small_bwd.c compares it
// with the general path under an all-zero mask).
MHSA_AVX512_INLINE void grad_short_row(float *s, float *dp, size_t n,
                                       size_t lo, size_t hi, float lse,
                                       float delta)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    __mmask16 in = (__mmask16)(mhsa_mask16__avx512(hi) &
                               ~mhsa_mask16__avx512(lo));
    __mmask16 mn = mhsa_mask16__avx512(n);
    __m512 x = _mm512_mask_loadu_ps(ninf, in, s);   // -INFINITY outside
    __mmask16 open = _mm512_cmp_ps_mask(x, ninf, _CMP_NEQ_UQ);
    __m512 p = _mm512_maskz_mov_ps(
        open, mhsa_exp__avx512(_mm512_sub_ps(x, _mm512_set1_ps(lse))));
    __m512 g = _mm512_maskz_loadu_ps(in, dp);
    __mmask16 nonzero = _mm512_cmp_ps_mask(p, _mm512_setzero_ps(),
                                           _CMP_NEQ_UQ);
    __m512 ds = _mm512_maskz_mov_ps(
        nonzero, _mm512_mul_ps(p, _mm512_sub_ps(g, _mm512_set1_ps(delta))));
    _mm512_mask_storeu_ps(s, mn, p);
    _mm512_mask_storeu_ps(dp, mn, ds);
}

void mhsa_softmax_grad__avx512(const mhsa_softmax_grad_args *a)
{
    const mhsa_mask_view *mv = &a->mv;
    const __m512 ninf = _mm512_set1_ps(-INFINITY), zero = _mm512_setzero_ps();
    for (size_t r = 0; r < a->rows; r++) {
        float *s = a->s + r * a->lds, *dp = a->dp + r * a->lddp;
        const float *mrow = mv->mask ? mv->mask + r * mv->ldmask : NULL;
        float lse = a->lse[r];
        size_t lo = 0, hi = 0;
        if (!mrow && a->n <= 16 && lse != -INFINITY && lse != INFINITY) {
            mhsa_mask_view_range(mv, r, a->n, &lo, &hi);
            grad_short_row(s, dp, a->n, lo, hi, lse, a->delta[r]);
            continue;
        }
        if (lse != -INFINITY)
            mhsa_mask_view_range(mv, r, a->n, &lo, &hi);
        __m512 vlse = _mm512_set1_ps(lse), vdelta = _mm512_set1_ps(a->delta[r]);
        for (size_t j = lo; j < hi; j += 16) {
            __mmask16 mk = mhsa_mask16__avx512(hi - j);
            __m512 x = masked_scores(s, mrow, j, mk);
            __m512 p;
            if (lse == INFINITY) {   // the forward's max was +INFINITY
                __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
                __mmask16 inf = _mm512_cmp_ps_mask(
                    x, _mm512_set1_ps(INFINITY), _CMP_EQ_OQ);
                p = _mm512_mask_mov_ps(_mm512_maskz_mov_ps(nan, x), inf,
                                       _mm512_set1_ps(a->inf_w[r]));
            } else {
                // Blocked keys are cleared explicitly: exp(-inf - lse)
                // would be NaN for a NaN lse.
                __mmask16 open = _mm512_cmp_ps_mask(x, ninf, _CMP_NEQ_UQ);
                p = _mm512_maskz_mov_ps(
                    open, mhsa_exp__avx512(_mm512_sub_ps(x, vlse)));
            }
            __m512 g = _mm512_maskz_loadu_ps(mk, dp + j);
            __mmask16 nonzero = _mm512_cmp_ps_mask(p, zero, _CMP_NEQ_UQ);
            __m512 ds = _mm512_maskz_mov_ps(
                nonzero, _mm512_mul_ps(p, _mm512_sub_ps(g, vdelta)));
            _mm512_mask_storeu_ps(s + j, mk, p);
            _mm512_mask_storeu_ps(dp + j, mk, ds);
        }
        zero_range(s, 0, lo);
        zero_range(dp, 0, lo);
        zero_range(s, hi, a->n);
        zero_range(dp, hi, a->n);
    }
}

void mhsa_softmax_row__avx512(size_t n, const float *x, float *y)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 vmax = ninf;
    for (size_t j = 0; j < n; j += 16)
        vmax = _mm512_max_ps(
            _mm512_mask_loadu_ps(ninf, mhsa_mask16__avx512(n - j), x + j),
            vmax);
    float m = mhsa_hmax__avx512(vmax);
    if (m == -INFINITY) {   // all blocked (zeros), or NaN: all NaN
        __mmask16 nan_seen = 0;
        for (size_t j = 0; j < n; j += 16) {
            __mmask16 mk = mhsa_mask16__avx512(n - j);
            __m512 v = _mm512_maskz_loadu_ps(mk, x + j);
            nan_seen |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        }
        __m512 fill = nan_seen ? _mm512_set1_ps(NAN) : _mm512_setzero_ps();
        for (size_t j = 0; j < n; j += 16)
            _mm512_mask_storeu_ps(y + j, mhsa_mask16__avx512(n - j), fill);
        return;
    }
    __m512 vsum = exp_sum(x, y, 0, n, m);
    __m512 inv = _mm512_set1_ps(1.0f / mhsa_hsum__avx512(vsum));
    for (size_t j = 0; j < n; j += 16) {
        __mmask16 mk = mhsa_mask16__avx512(n - j);
        _mm512_mask_storeu_ps(y + j, mk,
                              _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, y + j),
                                            inv));
    }
}
