// attn_heads.c — the AVX-512 fused forward of up to four small views of
// head width 8 side by side (kernels.h: attn_small_heads): the heads of
// one sequence that attn_small.c would take one at a time.
//
// Why: at dh = 8 and 12 rows, attn_small.c leaves lanes idle twice over.
// Its 16 lanes hold a view's query rows, 12 of them used, and its P V
// holds a row's 8 columns in a 16-lane vector, half of it used. Here the
// lanes hold (row, head) pairs, lane 4 i + hh for row 4 g + i of group g
// and head hh, so 4 heads of 12 rows fill 3 vectors where attn_small.c
// used 4, and P V keeps the rows in the lanes too (one accumulator per
// column, each FMA serving 16 (row, head) pairs) and transposes O back to
// rows once at the end. K and V are read transposed, key j's column c of
// the 4 heads in 4 consecutive floats, so one 128-bit broadcast gives
// every lane its head's element.
//
// The bits are attn_small.c's without a mask (and so the tiled path's),
// lane by lane: each (row, head) lane runs the same operations in the
// same order as that row's lane there:
//  - S: fma(k[j][c], q[c], acc) over c in order from +0, q scaled on
//    load as fl(qscale * q);
//  - the softmax of softmax16 (attn_small.c) with nk fixed: scores of
//    keys a row does not see are -inf, the same max and sum trees over
//    the 16 key slots, p = exp(x - mu);
//  - O: fma(p[j], v[j][c], acc) over the keys in order from +0, then
//    +0 + the sum, times 1 / l. This sums all nk keys where attn_small.c
//    stops at its panel's last visible key: a key a row does not see has
//    p = +0, and adding +0 * v (v finite, else the view is declined) to a
//    sum that started at +0 never changes it (x + -0 = x, +0 + -0 = +0).
// It declines (returns 0) what attn_small.c would decline and more:
// sizes past 16 rows, 16 keys or dh != 8, a mask, a window that cuts a
// row's first keys, non-finite scores or sums.
#include <math.h>

#include "avx512/avx512.h"
#include "kernels/asan.h"
#include "avx512/vmath.h"
#include "avx512/heads.h"
#include "avx512/vtranspose.h"

enum { MAX_KEYS = 16, DH = 8, HEADS = 4 };

// One instance with the key count at run time in the builds that compile
// slowly (attn_small.c's ONE_INSTANCE says which and why).
#define ONE_INSTANCE (MHSA_AVX512_EMULATED || MHSA_ASAN)

// O's 8 column vectors of a group (t[c], lane 4 i + hh) back to rows:
// w[k] lane L = t[L & 7] lane 2 k + (L >> 3), so w[k] holds row i = k / 2
// of heads 2 (k & 1) (lanes 0-7) and 2 (k & 1) + 1 (lanes 8-15). Three
// steps of two-source shuffles, each swapping one bit of the column index
// with one bit of the lane index (bits 0, 1, 2 of c with lane bits 1, 2,
// 3): 24 shuffles, the count of mhsa_transpose16x8__avx512, which goes
// the other way.
MHSA_AVX512_INLINE void rows_of_columns(const __m512 t[DH], __m512 w[DH])
{
    __m512 a[DH], b[DH];
    for (int c = 0; c < DH; c += 2) {   // column bit 0 <-> lane bit 1
        a[c] = _mm512_unpacklo_ps(t[c], t[c + 1]);
        a[c + 1] = _mm512_unpackhi_ps(t[c], t[c + 1]);
    }
#define COLS_2(e, L)                                                      \
    ((((L) & 3) >> 1) * 16 + (((L) >> 2) & 1) * 2 + ((L) >> 3) * 8 +       \
     ((L) & 1) + 4 * (e))
#define COLS_2LO(L) COLS_2(0, L)
#define COLS_2HI(L) COLS_2(1, L)
    for (int c = 0; c < DH; c += 4)     // column bit 1 <-> lane bit 2
        for (int e = 0; e < 2; e++) {
            b[c + e] = _mm512_permutex2var_ps(a[c + e], MHSA_IDX16(COLS_2LO),
                                              a[c + 2 + e]);
            b[c + 2 + e] = _mm512_permutex2var_ps(
                a[c + e], MHSA_IDX16(COLS_2HI), a[c + 2 + e]);
        }
#undef COLS_2
#undef COLS_2LO
#undef COLS_2HI
#define ROWS_LO(L) ((((L) >> 2) & 1) * 16 + ((L) >> 3) * 4 + ((L) & 3))
#define ROWS_HI(L) (ROWS_LO(L) + 8)
    for (int c = 0; c < 4; c++) {        // column bit 2 <-> lane bit 3
        w[c] = _mm512_permutex2var_ps(b[c], MHSA_IDX16(ROWS_LO), b[c + 4]);
        w[c + 4] = _mm512_permutex2var_ps(b[c], MHSA_IDX16(ROWS_HI),
                                          b[c + 4]);
    }
#undef ROWS_LO
#undef ROWS_HI
}

// The m and l vectors of the groups (lane 4 i + hh of group g: row 4 g +
// i, head hh) as head hh's 16 rows, stored to dst + hh * ld for the rows
// < tq of the heads < nh. Lane L < 8 of a two-group pick: group L >> 2,
// row L & 3 of head hh.
#define HEAD_ROWS(hh, L) ((((L) >> 2) & 1) * 16 + 4 * ((L) & 3) + (hh))
#define HEAD_ROWS0(L) HEAD_ROWS(0, L)
#define HEAD_ROWS1(L) HEAD_ROWS(1, L)
#define HEAD_ROWS2(L) HEAD_ROWS(2, L)
#define HEAD_ROWS3(L) HEAD_ROWS(3, L)
MHSA_AVX512_INLINE void store_heads(const __m512 g[HEADS], size_t nh,
                                    __mmask16 rows, float *dst, size_t ld)
{
    const __m512i pick[HEADS] = {
        MHSA_IDX16(HEAD_ROWS0), MHSA_IDX16(HEAD_ROWS1),
        MHSA_IDX16(HEAD_ROWS2), MHSA_IDX16(HEAD_ROWS3)
    };
    for (size_t hh = 0; hh < nh; hh++) {
        __m512 lo = _mm512_permutex2var_ps(g[0], pick[hh], g[1]);
        __m512 hi = _mm512_permutex2var_ps(g[2], pick[hh], g[3]);
        _mm512_mask_storeu_ps(dst + hh * ld, rows,
                              _mm512_shuffle_f32x4(lo, hi, 0x44));
    }
}
#undef HEAD_ROWS
#undef HEAD_ROWS0
#undef HEAD_ROWS1
#undef HEAD_ROWS2
#undef HEAD_ROWS3

// The softmax of one group (attn_small.c's softmax16 without a mask, nk
// fixed): p[j] for the nk keys, m and l. hif: per lane one past the last
// key the lane's row sees (0 for padding lanes). Returns 0 when a row's
// max is +inf (not reached with finite scores; kept as softmax16 has it).
MHSA_AVX512_INLINE int group_softmax(const __m512 *st, size_t nk, __m512 hif,
                                     __m512 *p, __m512 *m_out, __m512 *l_out)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    const __m512 zero = _mm512_setzero_ps();
    __m512 x[MAX_KEYS];
    #pragma GCC unroll 16
    for (size_t j = 0; j < MAX_KEYS; j++)
        x[j] = j < nk ? _mm512_mask_mov_ps(
                            ninf,
                            _mm512_cmp_ps_mask(_mm512_set1_ps((float)j), hif,
                                               _CMP_LT_OQ),
                            st[j])
                      : ninf;
    __m512 m = mhsa_keys_max16__avx512(x);
    if (_mm512_cmp_ps_mask(m, _mm512_set1_ps(INFINITY), _CMP_EQ_OQ))
        return 0;
    __m512 mu = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(m, ninf, _CMP_NEQ_UQ),
                                    m);
    __m512 s[8];
    #pragma GCC unroll 16
    for (size_t t = 0; t < 8; t++) {
        __m512 p0 = t < nk ? mhsa_exp_nonpos__avx512(_mm512_sub_ps(x[t], mu))
                           : zero;
        __m512 p1 = t + 8 < nk
                        ? mhsa_exp_nonpos__avx512(_mm512_sub_ps(x[t + 8], mu))
                        : zero;
        if (t < nk)
            p[t] = p0;
        if (t + 8 < nk)
            p[t + 8] = p1;
        s[t] = _mm512_add_ps(_mm512_add_ps(zero, p0),
                             _mm512_add_ps(zero, p1));
    }
    *m_out = m;
    *l_out = mhsa_sum8_tree__avx512(s);
    return 1;
}

// The first half of group g (rows 4 g .. 4 g + 3 of every head) over key
// slots [0, nk): its scores and their softmax, p[j] for the nk slots
// stored at pt + j * 16, its m and l returned. kt: the keys' columns
// (mhsa_kv_columns__avx512). Returns 0 on a non-finite score.
//
// Why two halves: a group's work is one long chain of dependent steps
// (the scores' FMA chains, the max tree, exp, P V's chain over the keys,
// the transpose back). Scores and softmax of every group first, then every
// P V, puts independent work (another group's) next to each chain in the
// instruction stream. Measured on the Xeon (B8 T12 D32 H4), a small gain
// (docs/performance.md, "Measurements behind the code"); the kernel stays
// bound by its vector work more than by these chains. The same operations
// per lane.
MHSA_AVX512_INLINE int group_weights(const mhsa_attn_heads_args *a, size_t g,
                                     size_t nk, const float *kt, float *pt,
                                     __m512 *m_out, __m512 *l_out)
{
    const mhsa_mask_view *mv = &a->mv;
    size_t tq = a->tq, nh = a->nh, ldq = a->ldq ? a->ldq : nh * DH;
    const __m512 zero = _mm512_setzero_ps();
    // Lane L: row 4 g + (L >> 2), head L & 3.
    __m512 row = _mm512_add_ps(
        _mm512_set1_ps((float)(4 * g)),
        _mm512_set_ps(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0));
    __mmask16 live = _mm512_cmp_ps_mask(row, _mm512_set1_ps((float)tq),
                                        _CMP_LT_OQ);
    // hi = min(n, klen, q0 + r + 1 if causal), attn_small.c's hif.
    size_t e = mv->klen && mv->klen < a->n ? mv->klen : a->n;
    size_t c = mv->causal && mv->q0 < MAX_KEYS ? mv->q0 + 1 : MAX_KEYS + 1;
    __m512 hif = _mm512_maskz_mov_ps(
        live, _mm512_min_ps(_mm512_set1_ps((float)e),
                            _mm512_add_ps(_mm512_set1_ps((float)c), row)));

    // Q: rows two halves to a vector (heads 0-1, 2-3), transposed to the
    // (row, head) lanes, scaled as the split scales.
    __mmask16 half[2] = { nh >= 2 ? 0xffff : 0x00ff,
                          nh >= 4 ? 0xffff : nh == 3 ? 0x00ff : 0 };
    __m512 v[8], qt[DH];
    #pragma GCC unroll 16
    for (size_t k = 0; k < 8; k++) {
        size_t r = 4 * g + k / 2;
        v[k] = r < tq ? _mm512_maskz_loadu_ps(half[k & 1],
                                              a->q + r * ldq + (k & 1) * 16)
                      : zero;
    }
    mhsa_transpose16x8__avx512(v, qt);
    for (size_t cc = 0; a->qscale != 0.0f && cc < DH; cc++)
        qt[cc] = _mm512_mul_ps(_mm512_set1_ps(a->qscale), qt[cc]);

    __m512 st[MAX_KEYS], p[MAX_KEYS], chk = zero;
    #pragma GCC unroll 16
    for (size_t j = 0; j < MAX_KEYS; j++)   // (only the first nk are read)
        st[j] = p[j] = zero;
    // S: each key's scores in the (row, head) lanes, the chain over the
    // columns in order from +0.
    #pragma GCC unroll 16
    for (size_t j = 0; j < nk; j++) {
        __m512 acc = zero;
        #pragma GCC unroll 16
        for (size_t cc = 0; cc < DH; cc++)
            acc = _mm512_fmadd_ps(mhsa_head_bcast__avx512(kt + j * 32, cc),
                                  qt[cc], acc);
        st[j] = acc;
        chk = _mm512_fmadd_ps(acc, zero, chk);   // inf * 0 = NaN
    }
    if (_mm512_cmp_ps_mask(chk, chk, _CMP_UNORD_Q))
        return 0;
    if (!group_softmax(st, nk, hif, p, m_out, l_out))
        return 0;
    #pragma GCC unroll 16
    for (size_t j = 0; j < nk; j++)
        _mm512_storeu_ps(pt + j * 16, p[j]);
    return 1;
}

// The second half of group g: O = P V over key slots [0, nk) from
// group_weights' p (at pt) and l, written to o (rows < tq, heads < nh).
// vt: the values' columns. Returns 0 on a non-finite sum.
MHSA_AVX512_INLINE int group_out(const mhsa_attn_heads_args *a, size_t g,
                                 size_t nk, const float *vt, const float *pt,
                                 __m512 l)
{
    size_t tq = a->tq, nh = a->nh;
    const __m512 zero = _mm512_setzero_ps();
    __mmask16 half[2] = { nh >= 2 ? 0xffff : 0x00ff,
                          nh >= 4 ? 0xffff : nh == 3 ? 0x00ff : 0 };
    __m512 inv = _mm512_maskz_div_ps(_mm512_cmp_ps_mask(l, zero, _CMP_NEQ_UQ),
                                     _mm512_set1_ps(1.0f), l);
    __m512 acc[DH];
    #pragma GCC unroll 16
    for (size_t cc = 0; cc < DH; cc++)
        acc[cc] = zero;
    // P V: each column's chain over the keys in order from +0.
    #pragma GCC unroll 16
    for (size_t j = 0; j < nk; j++) {
        __m512 pj = _mm512_loadu_ps(pt + j * 16);
        #pragma GCC unroll 16
        for (size_t cc = 0; cc < DH; cc++)
            acc[cc] = _mm512_fmadd_ps(
                pj, mhsa_head_bcast__avx512(vt + j * 32, cc), acc[cc]);
    }
    __m512 chk = zero;
    #pragma GCC unroll 16
    for (size_t cc = 0; cc < DH; cc++) {
        __m512 s = _mm512_add_ps(zero, acc[cc]);   // beta == 1 on +0
        chk = _mm512_fmadd_ps(s, zero, chk);
        acc[cc] = _mm512_mul_ps(s, inv);
    }
    if (_mm512_cmp_ps_mask(chk, chk, _CMP_UNORD_Q))
        return 0;
    __m512 w[DH];
    rows_of_columns(acc, w);
    #pragma GCC unroll 16
    for (size_t k = 0; k < 8; k++) {
        size_t r = 4 * g + k / 2;
        if (r < tq)
            _mm512_mask_storeu_ps(a->o + r * a->ldo + (k & 1) * 16,
                                  half[k & 1], w[k]);
    }
    return 1;
}

// Either half with its key slots nk (4, 8, 12 or 16) a constant, where
// the compiler unrolls the loops over keys and keeps S and P in registers
// (half 0: group_weights, 1: group_out).
static int group_half(const mhsa_attn_heads_args *a, int half, size_t g,
                      size_t nk, const float *kvt, float *pt, __m512 *m,
                      __m512 *l)
{
#if ONE_INSTANCE
    return half ? group_out(a, g, nk, kvt, pt, *l)
                : group_weights(a, g, nk, kvt, pt, m, l);
#else
#define HALF(NK)                                                          \
    (half ? group_out(a, g, NK, kvt, pt, *l)                              \
          : group_weights(a, g, NK, kvt, pt, m, l))
    switch (nk / 4) {
    case 1:
        return HALF(4);
    case 2:
        return HALF(8);
    case 3:
        return HALF(12);
    default:
        return HALF(16);
    }
#undef HALF
#endif
}

int mhsa_attn_small_heads__avx512(const mhsa_attn_heads_args *a)
{
    const mhsa_mask_view *mv = &a->mv;
    size_t nh = a->nh, n = a->n, tq = a->tq;
    if (!mhsa_attn_heads_fit(a, DH))
        return 0;
    size_t ldkv = a->ldkv ? a->ldkv : DH, nk = (n + 3) / 4 * 4;
    const float *ks[HEADS], *vs[HEADS];
    int contiguous = nh == HEADS;
    for (size_t hh = 0; hh < HEADS; hh++) {
        ks[hh] = a->k[hh < nh ? hh : nh - 1];
        vs[hh] = a->v[hh < nh ? hh : nh - 1];
        contiguous = contiguous && ks[hh] == ks[0] + hh * DH &&
                     vs[hh] == vs[0] + hh * DH;
    }
    // Key slots past n hold key n - 1 again (no row sees them).
    float kt[MAX_KEYS * HEADS * DH], vt[MAX_KEYS * HEADS * DH];
    for (size_t j = 0; j < nk; j++) {
        size_t off = (j < n ? j : n - 1) * ldkv;
        mhsa_kv_columns__avx512(ks, off, contiguous, kt + j * HEADS * DH);
        mhsa_kv_columns__avx512(vs, off, contiguous, vt + j * HEADS * DH);
    }
    // Group g weighs only the key slots up to its last row's last visible
    // key (rounded up to 4): under the causal mask the first groups see
    // fewer keys (4, 8 and 12 of the tiny block's 12), and a key no row
    // of the group sees is -inf in all its lanes, whose p = +0 the slots
    // past nk give as well (and which add nothing to O, see above). The
    // last group takes all nk slots, as attn_small.c does, so every key is
    // still scored and checked (its last row sees all n keys anyway when n
    // is cut to the keys a row sees, as small_view.c cuts it).
    size_t e = mv->klen && mv->klen < n ? mv->klen : n;
    size_t c = mv->causal ? mv->q0 + 1 : n;
    __m512 m[HEADS], l[HEADS];
    size_t slots[HEADS] = { 0 };
    float pt[HEADS * MAX_KEYS * 16];   // each group's p (group_weights)
    for (size_t g = 0; g < HEADS; g++)
        m[g] = l[g] = _mm512_setzero_ps();
    for (size_t g = 0; 4 * g < tq; g++) {
        size_t last = 4 * g + 3 < tq ? 4 * g + 3 : tq - 1;
        size_t hi = last + 1 == tq ? n : c + last < e ? c + last : e;
        slots[g] = (hi + 3) / 4 * 4;
        if (!group_half(a, 0, g, slots[g], kt, pt + g * MAX_KEYS * 16,
                        &m[g], &l[g]))
            return 0;
    }
    for (size_t g = 0; 4 * g < tq; g++)
        if (!group_half(a, 1, g, slots[g], vt, pt + g * MAX_KEYS * 16,
                        &m[g], &l[g]))
            return 0;
    __mmask16 rows = mhsa_mask16__avx512(tq);
    store_heads(m, nh, rows, a->m, a->ldml);
    store_heads(l, nh, rows, a->l, a->ldml);
    return 1;
}
