// attn_small.c — the AVX-512 fused forward of a small attention view
// (kernels.h: attn_small): up to 16 query rows, 16 keys and 32 head
// columns, in registers and small stack buffers, with no packing.
//
// The bits are the tiled path's (attention.c on this table's kernels),
// operation for operation. The 16 lanes hold the 16 query rows (Q read
// transposed in registers), so each step of the softmax's per-row
// reduction trees over the 16 key lanes is one vertical operation here:
//  - S: each score is sgemm_12x32's chain, fma over the dh columns in
//    order from +0;
//  - the softmax of the one tile (m_old = -inf, l = 0), softmax.c's
//    steps for a row of <= 16 keys: its masked scores (key j in lane j,
//    -inf past the row's last key), vmax = max(x, -inf), then
//    mhsa_hmax__avx512's tree, max(x_t, x_t+8), max(., x_t+4),
//    max(., x_t+2), max(x_0, x_1), each with softmax.c's operand order
//    (maxps keeps its second operand on ties of +0 and -0); p = exp(x - m),
//    vsum = 0 + p and mhsa_hsum__avx512's tree over the same pairs;
//    l = 0 * 0 + sum = sum. A row's lanes start at its first visible
//    key, so views with a window cutting a row's first keys are declined;
//  - O: sgemm_12x32's chain over the keys the row's 12-row panel sees
//    (attention.c's diag_pv: under the causal mask up to the panel's
//    last row), added to the +0 the tiled path starts from (the ukr's
//    beta == 1), then times 1 / l.
// Q, K and V rows may lie ldq / ldkv apart (in place in the projection's
// rows), Q then scaled on load, fl(qscale * q), as the split scales it.
// Declined (return 0): views past the sizes above, a window cutting a
// row's first keys, a non-finite raw score (non-finite Q or K, which the
// tiled path turns into NaN scores), a NaN or +inf masked score, or a
// non-finite O sum (non-finite V, which the tiled path sums in scalar
// loops). Padding lanes (rows past tq) hold zeros and see no key.
//
// Register budget: scores 8 accumulators + Q column; P V at most 12 rows
// x 2 halves = 24 accumulators + 2 V halves + the broadcast p = 27 of 32.
#include <limits.h>
#include <math.h>

#include "avx512/avx512.h"
#include "kernels/asan.h"
#include "kernels/small_rows.h"
#include "avx512/vmath.h"
#include "avx512/vtranspose.h"

enum { MR = MHSA_AVX512_MR, MAX_ROWS = 16, MAX_KEYS = 16, MAX_DH = 32 };

// Builds that compile the unmasked kernel once with its width and key
// count at run time instead of twelve constant instances: the test-only
// SIMDe build (147 s of compile at -O3 on Zen 4 against 12 s) and the
// AddressSanitizer builds (CI's ASan and fuzz builds: clang's -O1 ASan +
// UBSan took 363 s for this file against 30 s for sgemm_12x32.c).
#define ONE_INSTANCE (MHSA_AVX512_EMULATED || MHSA_ASAN)

// fl(qscale * x) in every lane, or x when qscale is 0 (q pre-scaled):
// the split's rounding, lane by lane (padding lanes stay +0).
MHSA_AVX512_INLINE __m512 q_scaled(__m512 x, float qscale)
{
    return qscale != 0.0f ? _mm512_mul_ps(_mm512_set1_ps(qscale), x) : x;
}

// transpose_q for dh == 8 (mhsa_columns8__avx512).
MHSA_AVX512_INLINE void transpose_q8(const float *q, size_t ldq, size_t tq,
                                     float qscale, float *qt)
{
    __m512 t[8];
    mhsa_columns8__avx512(q, ldq, tq, 8, t);
    for (size_t c = 0; c < 8; c++)
        _mm512_storeu_ps(qt + c * MAX_ROWS, q_scaled(t[c], qscale));
}

// qt[c * MAX_ROWS + i] = fl(qscale * q[i * ldq + c]) (q itself when qscale
// is 0) for i < tq, c < dh; lanes of rows past tq are +0. Only the tq
// rows' dh columns are read (masked loads).
MHSA_AVX512_INLINE void transpose_q(const float *q, size_t ldq, size_t tq,
                                    size_t dh, float qscale, float *qt)
{
    if (dh == 8) {   // a constant where it matters (attn)
        transpose_q8(q, ldq, tq, qscale, qt);
        return;
    }
    for (size_t c0 = 0; c0 < dh; c0 += 16) {
        size_t w = dh - c0 < 16 ? dh - c0 : 16;
        __mmask16 cols = mhsa_mask16__avx512(w);
        __m512 t[16];
        for (size_t i = 0; i < 16; i++)
            t[i] = i < tq ? _mm512_maskz_loadu_ps(cols, q + i * ldq + c0)
                          : _mm512_setzero_ps();
        mhsa_transpose16__avx512(t);
        for (size_t c = 0; c < w; c++)
            _mm512_storeu_ps(qt + (c0 + c) * MAX_ROWS,
                             q_scaled(t[c], qscale));
    }
}

// Lane i = i * ld, the element offsets of 16 rows ld apart.
MHSA_AVX512_INLINE __m512i row_offsets(size_t ld)
{
    return _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8,
                                               7, 6, 5, 4, 3, 2, 1, 0),
                              _mm512_set1_epi32((int)ld));
}

// st[j0 + t] lane i = sgemm_12x32's score of row i and key j0 + t, t < KB:
// each broadcast K element serves the 16 rows. Keys from n on (a block
// past the view's n keys, see attn) score key n - 1 again: only K's n
// rows are read, and no row sees those keys.
MHSA_AVX512_INLINE void score_block(const float *qt, size_t dh,
                                    const float *k, size_t ldk, size_t n,
                                    int KB, __m512 *st, size_t j0)
{
    __m512 acc[8];
    const float *kp[8];
#pragma GCC unroll 8
    for (int t = 0; t < KB; t++) {
        acc[t] = _mm512_setzero_ps();
        kp[t] = k + (j0 + (size_t)t < n ? j0 + (size_t)t : n - 1) * ldk;
    }
    for (size_t c = 0; c < dh; c++) {
        __m512 qc = _mm512_loadu_ps(qt + c * MAX_ROWS);
#pragma GCC unroll 8
        for (int t = 0; t < KB; t++)
            acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(kp[t][c]), qc, acc[t]);
    }
#pragma GCC unroll 8
    for (int t = 0; t < KB; t++)
        st[j0 + t] = acc[t];
}

// The p of the 16 lanes' rows, x the masked score and mu the row's max
// (0 for rows that see nothing, whose x are all -inf).
MHSA_AVX512_INLINE __m512 weight(__m512 x, __m512 mu)
{
    return mhsa_exp_nonpos__avx512(_mm512_sub_ps(x, mu));
}

// The softmax (file comment) of the 16 rows from the scores st, into pt
// (pt[j * MAX_ROWS + i]) and m, l. hif: per lane one past the last key
// the row sees (0 for padding lanes and rows that see nothing); hmax the
// largest. Returns 0 when a masked score is NaN or a row's max is +inf.
MHSA_AVX512_INLINE int softmax16(__m512 *st, const float *mask,
                                 size_t ldmask, __mmask16 rows, size_t n,
                                 __m512 hif, size_t hmax, float *pt,
                                 float *m_out, float *l_out)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    const __m512 pinf = _mm512_set1_ps(INFINITY);
    __m512i offs = row_offsets(ldmask);
    __mmask16 nan_seen = 0;
    __m512 x[MAX_KEYS];
    for (size_t j = 0; j < MAX_KEYS; j++) {
        if (j >= hmax) {   // every lane past its row's last key
            x[j] = ninf;
            continue;
        }
        __mmask16 seen = _mm512_cmp_ps_mask(_mm512_set1_ps((float)j), hif,
                                            _CMP_LT_OQ);
        // softmax.c's masked_scores: lanes not loaded are -inf, and
        // -inf + the fill -inf stays -inf.
        __m512 v = _mm512_mask_mov_ps(ninf, seen, st[j]);
        if (mask) {
            __m512 add = _mm512_mask_i32gather_ps(ninf, seen & rows, offs,
                                                  mask + j, 4);
            __mmask16 blocked = _mm512_cmp_ps_mask(add, ninf, _CMP_EQ_OQ);
            __mmask16 pin = _mm512_cmp_ps_mask(add, pinf, _CMP_EQ_OQ);
            v = _mm512_add_ps(v, add);
            v = _mm512_mask_mov_ps(v, blocked, ninf);
            v = _mm512_mask_mov_ps(v, pin, _mm512_set1_ps(NAN));
            nan_seen |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        }
        // vmax = max(x, -inf): x itself unless x is NaN, which only a
        // mask entry can make (raw scores are finite here).
        x[j] = mask ? _mm512_max_ps(v, ninf) : v;
    }
    if (nan_seen)
        return 0;
    __m512 m = mhsa_keys_max16__avx512(x);
    if (_mm512_cmp_ps_mask(m, pinf, _CMP_EQ_OQ))
        return 0;
    // A row with no unblocked key keeps m = -inf, l = 0 and p = +0
    // (exp(-inf - 0)); the tiled path's softmax skips it the same way.
    __m512 mu = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(m, ninf, _CMP_NEQ_UQ),
                                    m);
    const __m512 zero = _mm512_setzero_ps();
    __m512 s[8];
    for (size_t t = 0; t < 8; t++) {
        // vsum = 0 + p per key lane; keys past a row's last give
        // exp(-inf) = +0, so lanes past hmax are +0 without an exp.
        __m512 p0 = t < hmax ? weight(x[t], mu) : zero;
        __m512 p1 = t + 8 < hmax ? weight(x[t + 8], mu) : zero;
        if (t < n)
            _mm512_storeu_ps(pt + t * MAX_ROWS, p0);
        if (t + 8 < n)
            _mm512_storeu_ps(pt + (t + 8) * MAX_ROWS, p1);
        s[t] = _mm512_add_ps(_mm512_add_ps(zero, p0),
                             _mm512_add_ps(zero, p1));
    }
    _mm512_storeu_ps(m_out, m);
    _mm512_storeu_ps(l_out, mhsa_sum8_tree__avx512(s));   // + l * alpha = +0
    return 1;
}

// O rows r0 .. r0 + h - 1 (h <= H <= MR; one panel) over columns [0, dh)
// in W = 1 or 2 vectors (dh <= 16 W): sgemm_12x32's chain over keys [0,
// ki) of p (pt) times V, then +0 + the sum, times inv (1 / l; +0 for
// rows that saw nothing, whose p are all +0 and so whose sum is +0 when
// it is finite: +0 * +0 gives the tiled path's +0). Rows h .. H - 1 are
// computed from their zero p and not stored. Returns NaN lanes when a
// sum is not finite.
MHSA_AVX512_INLINE __m512 pv_panel(const float *pt, const float *v,
                                   size_t ldv, size_t dh, size_t ki,
                                   size_t r0, int H,
                                   size_t h, int W, const float *inv,
                                   float *o, size_t ldo)
{
    const __m512 zero = _mm512_setzero_ps();
    __mmask16 m0 = mhsa_mask16__avx512(dh);
    __mmask16 m1 = mhsa_mask16__avx512(dh > 16 ? dh - 16 : 0);
    __m512 acc[MR][2];
#pragma GCC unroll 12
    for (int i = 0; i < H; i++)
        acc[i][0] = acc[i][1] = zero;
    for (size_t j = 0; j < ki; j++) {
        const float *vj = v + j * ldv;
        __m512 b0 = _mm512_maskz_loadu_ps(m0, vj);
        __m512 b1 = W > 1 ? _mm512_maskz_loadu_ps(m1, vj + 16) : zero;
        const float *p = pt + j * MAX_ROWS + r0;
#pragma GCC unroll 12
        for (int i = 0; i < H; i++) {
            __m512 pi = _mm512_set1_ps(p[i]);
            acc[i][0] = _mm512_fmadd_ps(pi, b0, acc[i][0]);
            if (W > 1)
                acc[i][1] = _mm512_fmadd_ps(pi, b1, acc[i][1]);
        }
    }
    __m512 chk = zero;
#pragma GCC unroll 12
    for (int i = 0; i < H; i++) {
        if ((size_t)i >= h)
            break;
        float *orow = o + (r0 + i) * ldo;
        __m512 vi = _mm512_set1_ps(inv[r0 + i]);
        for (int w = 0; w < W; w++) {
            __m512 s = _mm512_add_ps(zero, acc[i][w]);   // beta == 1 on +0
            chk = _mm512_fmadd_ps(s, zero, chk);        // inf * 0 = NaN
            s = _mm512_mul_ps(s, vi);
            _mm512_mask_storeu_ps(orow + 16 * w, w ? m1 : m0, s);
        }
    }
    return chk;
}

// pv_panel with the height rounded up to 4, 8 or 12 and the width as
// constants; a full panel (h == MR) with h constant too.
MHSA_AVX512_INLINE __m512 pv_any(const float *pt, const float *v, size_t ldv,
                                 size_t dh, size_t ki, size_t r0, size_t h,
                                 const float *inv, float *o, size_t ldo)
{
#define PV(H, W, h) pv_panel(pt, v, ldv, dh, ki, r0, H, h, W, inv, o, ldo)
    if (dh > 16)
        return h == MR ? PV(MR, 2, MR) : h > 8 ? PV(12, 2, h)
               : h > 4 ? PV(8, 2, h) : PV(4, 2, h);
    return h == MR ? PV(MR, 1, MR) : h > 8 ? PV(12, 1, h)
           : h > 4 ? PV(8, 1, h) : PV(4, 1, h);
#undef PV
}

// The kernel for a head width dh, a mask pointer (NULL when !masked) and
// nk >= n key lanes to score and weigh, keys n .. nk - 1 seen by no row:
// inlined with all three constant for the common widths without a mask
// (nk = n rounded up to 4), where the compiler unrolls the loops over
// columns and keys and drops the mask's code, else with nk = n.
MHSA_AVX512_INLINE int attn(const mhsa_attn_small_args *a, size_t dh,
                            int masked, size_t nk, int fixed)
{
    size_t tq = a->tq, n = a->n;
    const mhsa_mask_view *mv = &a->mv;
    const float *mask = masked ? mv->mask : NULL;
    __mmask16 rows = mhsa_mask16__avx512(tq);
    // hif lane r: one past the last key row r sees, as a float for the
    // lanes' compares (0 past tq); hmax the largest.
    __m512 hif;
    size_t hmax = 0;
    if (!mv->window) {
        // mhsa_mask_view_range without a window (lo = 0, k0 = 0): hi =
        // min(n, klen, q0 + r + 1 if causal), here in the lanes at once;
        // q0 + 1 is clamped to MAX_KEYS + 1 (past any n) to stay small.
        size_t e = mv->klen && mv->klen < n ? mv->klen : n;
        size_t c = mv->causal && mv->q0 < MAX_KEYS ? mv->q0 + 1
                                                   : MAX_KEYS + 1;
        // (Small integers: exact in floats.)
        __m512 iota = _mm512_set_ps(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5,
                                    4, 3, 2, 1, 0);
        __m512 h = _mm512_min_ps(_mm512_set1_ps((float)e),
                                 _mm512_add_ps(_mm512_set1_ps((float)c),
                                               iota));
        hif = _mm512_maskz_mov_ps(rows, h);
        hmax = c + tq - 1 < e ? c + tq - 1 : e;   // rows' hi ascend
    } else {
        float hi[MAX_ROWS] = { 0 };
        if (!mhsa_small_rows_hi(mv, tq, n, hi, &hmax))
            return 0;
        hif = _mm512_loadu_ps(hi);
    }
    // qt[c * MAX_ROWS + i] = q[i][c]; zero in the padding lanes. A
    // register transpose of 16 columns at a time, not 16-lane gathers: on
    // Zen 4 the gathers were a large part of this kernel's time (perf, the
    // tiny forward: docs/performance.md, "Measurements behind the code"),
    // the 64 shuffles of a transpose a fraction of that.
    float qt[MAX_DH * MAX_ROWS], pt[MAX_KEYS * MAX_ROWS];
    size_t ldq = a->ldq ? a->ldq : dh, ldkv = a->ldkv ? a->ldkv : dh;
    transpose_q(a->q, ldq, tq, dh, a->qscale, qt);
    __m512 st[MAX_KEYS];
    size_t j = 0;
    for (; j + 8 <= nk; j += 8)
        score_block(qt, dh, a->k, ldkv, n, 8, st, j);
    for (; j + 4 <= nk; j += 4)
        score_block(qt, dh, a->k, ldkv, n, 4, st, j);
    for (; j < nk; j++)
        score_block(qt, dh, a->k, ldkv, n, 1, st, j);
    __m512 zero = _mm512_setzero_ps(), chk = zero;
    for (j = 0; j < nk; j++)   // keys past n: key n - 1's scores again
        chk = _mm512_fmadd_ps(st[j], zero, chk);   // inf * 0 = NaN
    if (_mm512_cmp_ps_mask(chk, chk, _CMP_UNORD_Q))
        return 0;
    // With nk fixed, every lane below nk is weighed: keys from hmax on
    // are -inf in every lane, and exp gives them the +0 they get as
    // lanes past hmax.
    float mm[MAX_ROWS], ll[MAX_ROWS], inv[MAX_ROWS];
    if (!softmax16(st, mask, mv->ldmask, rows, nk, hif, fixed ? nk : hmax,
                   pt, mm, ll))
        return 0;
    __m512 vl = _mm512_loadu_ps(ll);
    _mm512_mask_storeu_ps(a->m, rows, _mm512_loadu_ps(mm));
    _mm512_mask_storeu_ps(a->l, rows, vl);
    _mm512_storeu_ps(inv, _mm512_maskz_div_ps(
                              _mm512_cmp_ps_mask(vl, zero, _CMP_NEQ_UQ),
                              _mm512_set1_ps(1.0f), vl));
    // O per panel of MR rows over the keys the panel sees (diag_pv).
    chk = zero;
    for (size_t i0 = 0; i0 < tq; i0 += MR) {
        size_t h = tq - i0 < MR ? tq - i0 : MR;
        size_t ki = n;
        if (mv->causal && mv->q0 + i0 + h < n)
            ki = mv->q0 + i0 + h;
        chk = _mm512_or_ps(chk, pv_any(pt, a->v, ldkv, dh, ki, i0, h, inv,
                                       a->o, a->ldo));
    }
    return !_mm512_cmp_ps_mask(chk, chk, _CMP_UNORD_Q);
}

int mhsa_attn_small__avx512(const mhsa_attn_small_args *a)
{
    size_t dh = a->dh;
    const mhsa_mask_view *mv = &a->mv;
    if (a->tq == 0 || a->tq > MAX_ROWS || a->n == 0 || a->n > MAX_KEYS ||
        dh == 0 || dh > MAX_DH || mv->k0 != 0 ||
        (mv->mask && mv->ldmask > INT_MAX / MAX_ROWS))
        return 0;
    if (mv->mask)
        return attn(a, dh, 1, a->n, 0);
#if ONE_INSTANCE
    // One instance of the fixed-count path with the width and key count at
    // run time (the same operations per lane), where the twelve constant
    // instances below cost more to compile than they are worth (see
    // ONE_INSTANCE); an optimised build runs those instances.
    return attn(a, dh, 0, (a->n + 3) / 4 * 4, 1);
#else
#define FIXED(DH)                                                         \
    switch ((a->n + 3) / 4) {                                             \
    case 1:                                                               \
        return attn(a, DH, 0, 4, 1);                                      \
    case 2:                                                               \
        return attn(a, DH, 0, 8, 1);                                      \
    case 3:                                                               \
        return attn(a, DH, 0, 12, 1);                                     \
    default:                                                              \
        return attn(a, DH, 0, 16, 1);                                     \
    }
    switch (dh) {
    case 8:
        FIXED(8)
    case 16:
        FIXED(16)
    case 32:
        FIXED(32)
    default:
        return attn(a, dh, 0, a->n, 0);
    }
#undef FIXED
#endif
}
