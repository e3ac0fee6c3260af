// attn_small.c — the AVX2 fused forward of a small attention view
// (kernels.h: attn_small): up to 16 query rows, 16 keys and 32 head
// columns, in registers and small stack buffers, with no packing.
//
// The bits are the tiled path's (attention.c on this table's kernels),
// operation for operation:
//  - S: each score is sgemm_6x16's chain, fma over the dh columns in
//    order from +0. Here the 8 lanes hold 8 query rows (Q transposed in
//    8x8 blocks), so the scores come out with the rows in the lanes, as
//    softmax.c's rows_in_lanes arranges them;
//  - the softmax of the one tile (m_old = -inf, l = 0): softmax.c's
//    short_row per lane, its masked scores, its vector max over keys
//    j and j + 8 and the horizontal max tree (lanes t, t + 4; t, t + 2;
//    0, 1), p = exp(x - m), its sum 0 + p0 (+ p1) and the same sum tree;
//    l = 0 * 0 + sum = sum. Rows whose window starts past key 0 order
//    their lanes from the window's first key, so views with such rows
//    are declined;
//  - O: sgemm_6x16's chain over the keys the row's 6-row panel sees
//    (attention.c's diag_pv: under the causal mask up to the panel's
//    last row), added to the +0 the tile path starts from, then times
//    1 / l.
// Q, K and V rows may lie ldq / ldkv apart (in place in the projection's
// rows), Q then scaled on load, fl(qscale * q), as the split scales it.
// Declined (return 0): views past the sizes above, a window cutting a
// row's first keys, a non-finite raw score (non-finite Q or K, which the
// tile path turns into NaN scores), a NaN or +inf masked score, or a
// non-finite O sum (non-finite V, which the tile path sums in scalar
// loops). Padding lanes (rows past tq) hold zeros and see no key.
#include <math.h>
#include <immintrin.h>

#include "kernels/kernels.h"
#include "kernels/small_rows.h"
#include "avx2/avx2.h"
#include "avx2/vmath.h"
#include "avx2/vtranspose.h"

enum { MR = 6, MAX_ROWS = 16, MAX_KEYS = 16, MAX_DH = 32 };

// cnt (0..8) values at p; lanes >= cnt are `fill`, never loaded.
static inline __m256 load_fill(const float *p, size_t cnt, __m256 fill)
{
    if (cnt >= 8)
        return _mm256_loadu_ps(p);
    __m256i mk = mhsa_tail_mask__avx2(cnt);
    return _mm256_blendv_ps(fill, _mm256_maskload_ps(p, mk),
                            _mm256_castsi256_ps(mk));
}

static inline size_t min8(size_t n) { return n < 8 ? n : 8; }

#define INLINE static inline __attribute__((always_inline))

// r[t] lane i = p[i * ld + c0 + t] for i < rows and c0 + t < n, `fill`
// elsewhere (never loaded): the 8 x 8 block at column c0, transposed.
INLINE void load_block_t(const float *p, size_t ld, size_t c0, size_t rows,
                         size_t n, __m256 fill, __m256 r[8])
{
    for (size_t i = 0; i < 8; i++)
        r[i] = i < rows ? load_fill(p + i * ld + c0, n - c0, fill) : fill;
    mhsa_transpose8__avx2(r);
}

// qt[c * MAX_ROWS + i] = fl(qscale * q[i * ldq + c]) (q itself when
// qscale is 0: pre-scaled; the split's rounding otherwise) for the 8 rows
// at q and c < dh rounded up to 8, zero in lanes of rows past `rows` and
// in columns past dh.
static void transpose_q(const float *q, size_t ldq, size_t dh, size_t rows,
                        float qscale, float *qt)
{
    __m256 zero = _mm256_setzero_ps(), vs = _mm256_set1_ps(qscale);
    for (size_t c0 = 0; c0 < dh; c0 += 8) {
        __m256 r[8];
        load_block_t(q, ldq, c0, rows, dh, zero, r);
        for (size_t t = 0; t < 8; t++)
            _mm256_storeu_ps(qt + (c0 + t) * MAX_ROWS,
                             qscale != 0.0f ? _mm256_mul_ps(vs, r[t]) : r[t]);
    }
}

// st[g][j0 + t] lane i = sgemm_6x16's score of row 8g + i and key j0 + t
// for t < KB keys and g < G groups of 8 rows: each broadcast K element
// serves both groups.
INLINE void score_block(const float *qt, size_t dh, const float *kp,
                        size_t ldk, int G, int KB, __m256 st[2][MAX_KEYS],
                        size_t j0)
{
    __m256 acc[2][8];
#pragma GCC unroll 8
    for (int t = 0; t < KB; t++)
        for (int g = 0; g < G; g++)
            acc[g][t] = _mm256_setzero_ps();
    for (size_t c = 0; c < dh; c++) {
        __m256 q0 = _mm256_loadu_ps(qt + c * MAX_ROWS);
        __m256 q1 = G > 1 ? _mm256_loadu_ps(qt + c * MAX_ROWS + 8) : q0;
#pragma GCC unroll 8
        for (int t = 0; t < KB; t++) {
            __m256 b = _mm256_broadcast_ss(kp + (size_t)t * ldk + c);
            acc[0][t] = _mm256_fmadd_ps(q0, b, acc[0][t]);
            if (G > 1)
                acc[1][t] = _mm256_fmadd_ps(q1, b, acc[1][t]);
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < KB; t++)
        for (int g = 0; g < G; g++)
            st[g][j0 + t] = acc[g][t];
}

// All n keys' scores of G groups; returns a vector that is NaN in some
// lane when a score is not finite.
INLINE __m256 scores(const float *qt, size_t dh, const float *k,
                     size_t ldk, size_t n, int G, __m256 st[2][MAX_KEYS])
{
    size_t j = 0;
    if (G == 1)
        for (; j + 8 <= n; j += 8)
            score_block(qt, dh, k + j * ldk, ldk, 1, 8, st, j);
    for (; j + 4 <= n; j += 4)
        score_block(qt, dh, k + j * ldk, ldk, G, 4, st, j);
    for (; j < n; j++)
        score_block(qt, dh, k + j * ldk, ldk, G, 1, st, j);
    __m256 zero = _mm256_setzero_ps(), chk = zero;
    for (int g = 0; g < G; g++)
        for (size_t t = 0; t < n; t++)
            chk = _mm256_fmadd_ps(st[g][t], zero, chk);   // inf * 0 = NaN
    return chk;
}

// The mask of the 8 rows at mrow (ldmask apart; `rows` of them) for keys
// [0, n), transposed like the scores: add[j] lane i = mask[i][j], -inf in
// lanes of keys past n and rows past `rows` (never loaded).
static void transpose_mask(const float *mrow, size_t ldmask, size_t rows,
                           size_t n, __m256 add[MAX_KEYS])
{
    __m256 ninf = _mm256_set1_ps(-INFINITY);
    for (size_t j0 = 0; j0 < n; j0 += 8) {
        __m256 r[8];
        load_block_t(mrow, ldmask, j0, rows, n, ninf, r);
        for (size_t t = 0; t < 8 && j0 + t < n; t++)
            add[j0 + t] = r[t];
    }
}

// The softmax of one group of 8 rows (see the file comment), from the
// scores st, into pt (pt[j * MAX_ROWS + i], rows in the lanes) and the
// rows' m and l. hif: per lane one past the last key the row sees (0 for
// padding lanes); hmax the largest. Returns 0 when a masked score is NaN
// or a row's max is +inf.
static int group_softmax(__m256 st[MAX_KEYS], const __m256 *add, size_t n,
                         __m256 hif, size_t hmax, float *pt, __m256 *m_out,
                         __m256 *l_out)
{
    __m256 ninf = _mm256_set1_ps(-INFINITY), pinf = _mm256_set1_ps(INFINITY);
    __m256 nan_seen = _mm256_setzero_ps();
    for (size_t j = 0; j < n; j++) {
        __m256 x = st[j];
        if (add) {   // softmax.c's masked_scores
            __m256 blocked = _mm256_cmp_ps(add[j], ninf, _CMP_EQ_OQ);
            __m256 pin = _mm256_cmp_ps(add[j], pinf, _CMP_EQ_OQ);
            x = _mm256_or_ps(_mm256_add_ps(x, add[j]), pin);
            x = _mm256_blendv_ps(x, ninf, blocked);
        }
        __m256 seen = _mm256_cmp_ps(_mm256_set1_ps((float)j), hif,
                                    _CMP_LT_OQ);
        x = _mm256_blendv_ps(ninf, x, seen);
        if (add)
            nan_seen = _mm256_or_ps(nan_seen, _mm256_cmp_ps(x, x,
                                                            _CMP_UNORD_Q));
        st[j] = x;
    }
    if (_mm256_movemask_ps(nan_seen))
        return 0;
    // Keys from hmax on are -inf in every lane: max(-inf, v) = v, and
    // their p = exp(-inf) = +0 adds +0 to a sum >= +0, so they are not
    // computed.
    __m256 hm = mhsa_lane_max16__avx2(st, hmax);
    __m256 m_new = _mm256_blendv_ps(ninf, hm,
                                    _mm256_cmp_ps(hm, ninf, _CMP_GT_OQ));
    if (_mm256_movemask_ps(_mm256_cmp_ps(m_new, pinf, _CMP_EQ_OQ)))
        return 0;
    // A row that sees nothing keeps m = -inf and gets p = exp(-inf - 0)
    // = +0 and l = 0, as the tile path leaves it.
    __m256 none = _mm256_cmp_ps(m_new, ninf, _CMP_EQ_OQ);
    __m256 mu = _mm256_andnot_ps(none, m_new);
    __m256 zero = _mm256_setzero_ps(), sum[8];
    for (size_t t = 0; t < 8; t++) {
        __m256 p0 = t < hmax
                        ? mhsa_exp_nonpos_ps__avx2(_mm256_sub_ps(st[t], mu))
                        : zero;
        sum[t] = _mm256_add_ps(zero, p0);
        if (t < n)
            _mm256_storeu_ps(pt + t * MAX_ROWS, p0);
        __m256 p1 = zero;
        if (8 + t < hmax) {
            p1 = mhsa_exp_nonpos_ps__avx2(_mm256_sub_ps(st[8 + t], mu));
            sum[t] = _mm256_add_ps(sum[t], p1);
        }
        if (8 + t < n)
            _mm256_storeu_ps(pt + (8 + t) * MAX_ROWS, p1);
    }
    for (size_t t = 0; t < 4; t++)
        sum[t] = _mm256_add_ps(sum[t], sum[t + 4]);
    for (size_t t = 0; t < 2; t++)
        sum[t] = _mm256_add_ps(sum[t], sum[t + 2]);
    *m_out = m_new;
    *l_out = _mm256_add_ps(sum[0], sum[1]);   // l * alpha = 0 * 0 = +0
    return 1;
}

// O rows r0 .. r0 + H - 1 (one panel, H <= MR) and columns [c0, c0 +
// 8 W) (W = 1 or 2, w0 and w1 of them used): sgemm_6x16's chain over keys
// [0, ki) of p (pt) times V, then +0 + the sum, times inv (1 / l; rows
// that saw nothing get +0). Returns NaN lanes when a sum is not finite.
INLINE __m256 pv_panel(const float *pt, const float *v, size_t ldv,
                       size_t ki, size_t r0, int H, size_t c0, int W,
                       size_t w0, size_t w1, const float *inv,
                       const float *l, float *o, size_t ldo)
{
    __m256 zero = _mm256_setzero_ps(), acc[MR][2];
    __m256i m0 = mhsa_tail_mask__avx2(w0), m1 = mhsa_tail_mask__avx2(w1);
#pragma GCC unroll 6
    for (int i = 0; i < H; i++)
        acc[i][0] = acc[i][1] = zero;
    for (size_t j = 0; j < ki; j++) {
        const float *vj = v + j * ldv + c0;
        __m256 b0 = w0 == 8 ? _mm256_loadu_ps(vj) : _mm256_maskload_ps(vj, m0);
        __m256 b1 = zero;
        if (W > 1)
            b1 = w1 == 8 ? _mm256_loadu_ps(vj + 8)
                         : _mm256_maskload_ps(vj + 8, m1);
        const float *p = pt + j * MAX_ROWS + r0;
#pragma GCC unroll 6
        for (int i = 0; i < H; i++) {
            __m256 pi = _mm256_broadcast_ss(p + i);
            acc[i][0] = _mm256_fmadd_ps(pi, b0, acc[i][0]);
            if (W > 1)
                acc[i][1] = _mm256_fmadd_ps(pi, b1, acc[i][1]);
        }
    }
    __m256 chk = zero;
#pragma GCC unroll 6
    for (int i = 0; i < H; i++) {
        float *orow = o + (r0 + i) * ldo + c0;
        __m256 vi = _mm256_set1_ps(inv[r0 + i]);
        int none = l[r0 + i] == 0.0f;
        for (int h = 0; h < W; h++) {
            size_t w = h ? w1 : w0;
            __m256 s = _mm256_add_ps(zero, acc[i][h]);
            chk = _mm256_fmadd_ps(s, zero, chk);
            s = none ? zero : _mm256_mul_ps(s, vi);
            if (w == 8)
                _mm256_storeu_ps(orow + 8 * h, s);
            else
                _mm256_maskstore_ps(orow + 8 * h, h ? m1 : m0, s);
        }
    }
    return chk;
}

// pv_panel with the panel height and width as constants.
static __m256 pv_any(const float *pt, const float *v, size_t ldv, size_t dh,
                     size_t ki, size_t r0, size_t h, size_t c0,
                     const float *inv, const float *l, float *o, size_t ldo)
{
    size_t w0 = min8(dh - c0), w1 = dh - c0 > 8 ? min8(dh - c0 - 8) : 0;
#define PV(H, W)                                                              \
    pv_panel(pt, v, ldv, ki, r0, H, c0, W, w0, w1, inv, l, o, ldo)
    if (w1) {
        switch (h) {
        case 6: return PV(6, 2);
        case 5: return PV(5, 2);
        case 4: return PV(4, 2);
        case 3: return PV(3, 2);
        case 2: return PV(2, 2);
        default: return PV(1, 2);
        }
    }
    switch (h) {
    case 6: return PV(6, 1);
    case 5: return PV(5, 1);
    case 4: return PV(4, 1);
    case 3: return PV(3, 1);
    case 2: return PV(2, 1);
    default: return PV(1, 1);
    }
#undef PV
}

int mhsa_attn_small__avx2(const mhsa_attn_small_args *a)
{
    size_t tq = a->tq, n = a->n, dh = a->dh;
    const mhsa_mask_view *mv = &a->mv;
    if (tq == 0 || tq > MAX_ROWS || n == 0 || n > MAX_KEYS || dh == 0 ||
        dh > MAX_DH || mv->k0 != 0)
        return 0;
    float hi[MAX_ROWS] = { 0 };   // as floats for the lanes' compares
    size_t hall = 0;
    if (!mhsa_small_rows_hi(mv, tq, n, hi, &hall))
        return 0;
    float qt[MAX_DH * MAX_ROWS], pt[MAX_KEYS * MAX_ROWS];
    float inv[MAX_ROWS];
    size_t ldq = a->ldq ? a->ldq : dh, ldkv = a->ldkv ? a->ldkv : dh;
    int G = tq > 8 ? 2 : 1;
    for (int g = 0; g < G; g++) {
        size_t r0 = 8 * (size_t)g;
        transpose_q(a->q + r0 * ldq, ldq, dh, tq - r0 < 8 ? tq - r0 : 8,
                    a->qscale, qt + r0);
    }
    __m256 st[2][MAX_KEYS], add[MAX_KEYS];
    __m256 chk = G > 1 ? scores(qt, dh, a->k, ldkv, n, 2, st)
                       : scores(qt, dh, a->k, ldkv, n, 1, st);
    if (_mm256_movemask_ps(_mm256_cmp_ps(chk, chk, _CMP_UNORD_Q)))
        return 0;
    for (int g = 0; g < G; g++) {
        size_t r0 = 8 * (size_t)g, rows = tq - r0 < 8 ? tq - r0 : 8;
        if (mv->mask)
            transpose_mask(mv->mask + r0 * mv->ldmask, mv->ldmask, rows, n,
                           add);
        float hm = 0.0f;   // the group's largest hi (exact as a float)
        for (size_t i = 0; i < rows; i++)
            hm = hi[r0 + i] > hm ? hi[r0 + i] : hm;
        size_t hmax = (size_t)hm;
        __m256 m, l;
        if (!group_softmax(st[g], mv->mask ? add : NULL, n,
                           _mm256_loadu_ps(hi + r0), hmax, pt + r0, &m, &l))
            return 0;
        float mm[8], ll[8];
        _mm256_storeu_ps(mm, m);
        _mm256_storeu_ps(ll, l);
        _mm256_storeu_ps(inv + r0, _mm256_div_ps(_mm256_set1_ps(1.0f), l));
        for (size_t i = 0; i < rows; i++) {
            a->m[r0 + i] = mm[i];
            a->l[r0 + i] = ll[i];
        }
    }
    // O per panel of MR rows over the keys the panel sees (diag_pv).
    chk = _mm256_setzero_ps();
    for (size_t i0 = 0; i0 < tq; i0 += MR) {
        size_t h = tq - i0 < MR ? tq - i0 : MR;
        size_t ki = n;
        if (mv->causal && mv->q0 + i0 + h < n)
            ki = mv->q0 + i0 + h;
        for (size_t c0 = 0; c0 < dh; c0 += 16)
            chk = _mm256_or_ps(chk, pv_any(pt, a->v, ldkv, dh, ki, i0, h, c0,
                                           inv, a->l, a->o, a->ldo));
    }
    return !_mm256_movemask_ps(_mm256_cmp_ps(chk, chk, _CMP_UNORD_Q));
}
